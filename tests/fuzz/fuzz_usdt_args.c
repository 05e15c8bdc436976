/* libFuzzer harness: USDT argument specs (the third string of a
 * .note.stapsdt note, which the traced program's file controls) through
 * stapsdt_parse_args, symbols looked up in build/fuzz/usdt_syms.o (from
 * tests/fuzz/usdt_syms.c, found beside the harness). A spec that
 * parses must describe an argument loupe can read: the invariants below
 * abort otherwise. Findings: tests/fuzz/regressions/usdt_args/. */
#include <fcntl.h>
#include <libelf.h>

#include "fuzz_util.h"
#include "sym/stapsdt.h"

static bool valid_reg(int reg) {
  return reg >= 0 && reg <= 152 && reg % 8 == 0;
}

/* The SIZE an argument's text starts with ("-8@..."), or 8 if it has
 * none; *text moves to the next argument. */
static long long written_size(const char **text) {
  const char *p = *text + strspn(*text, " \t\n\v\f\r");
  const char *end = p + strcspn(p, " \t\n\v\f\r");
  const char *at = memchr(p, '@', (size_t)(end - p));
  *text = end;
  return at ? strtoll(p, NULL, 0) : 8;
}

static void check(const UsdtNote *n) {
  if (n->nargs < 0 || n->nargs > USDT_MAX_ARGS) abort();
  const char *text = n->args_text;
  for (int i = 0; i < n->nargs; i++) {
    const UsdtArg *a = &n->args[i];
    /* the size read is the size written */
    if (written_size(&text) != (a->is_signed ? -a->size : a->size)) abort();
    if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
      abort();
    if (a->kind == USDT_ARG_REG && (!valid_reg(a->reg) || a->reg == 128))
      abort();
    if (a->kind == USDT_ARG_MEM &&
        ((a->reg != -1 && !valid_reg(a->reg) && a->reg != 128) ||
         (a->index_reg != -1 && !valid_reg(a->index_reg)) ||
         (a->scale != 1 && a->scale != 2 && a->scale != 4 && a->scale != 8)))
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static Elf *syms;
  if (!syms) {
    elf_version(EV_CURRENT);
    char path[4096];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
    if (n <= 0) abort();
    path[n] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash) abort();
    strcpy(slash + 1, "usdt_syms.o");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    syms = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    if (!syms) {
      fprintf(stderr, "fuzz_usdt_args: cannot read %s (make builds it)\n",
              path);
      abort();
    }
  }
  if (size > 4096) return 0;
  UsdtNote n = {0};
  /* exactly the input's bytes and a NUL: ASan sees any read past it */
  n.args_text = fuzz_text(data, size);
  stapsdt_parse_args(syms, 0x401000, &n);
  check(&n);
  free(n.args_text);
  free(n.args_error);
  return 0;
}
