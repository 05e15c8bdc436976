/* USDT argument specs (sym/stapsdt.c) as a file's notes may hold them:
 * well-formed ones read right, malformed ones are refused with a reason.
 * Symbols are looked up in this test's own executable. */
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/stapsdt.h"

#include "expect.h"

/* A symbol of this executable that specs name. */
long usdt_test_big = 1;

static Elf *self_elf;

/* Parses spec as a probe at pc's; the note (args_error NULL if it read). */
static UsdtNote parse(const char *spec, uint64_t pc) {
  UsdtNote n = {0};
  /* exactly the spec's bytes on the heap, so that ASan sees an overread */
  n.args_text = strdup(spec);
  stapsdt_parse_args(self_elf, pc, &n);
  return n;
}

static void done(UsdtNote *n) {
  free(n->args_text);
  free(n->args_error);
}

/* The symbol's link-time address: its st_value in .symtab. */
static uint64_t symbol_value(const char *name) {
  for (Elf_Scn *scn = elf_nextscn(self_elf, NULL); scn;
       scn = elf_nextscn(self_elf, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB) continue;
    Elf_Data *d = elf_getdata(scn, NULL);
    for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
      GElf_Sym s;
      const char *nm;
      if (gelf_getsym(d, (int)i, &s) &&
          (nm = elf_strptr(self_elf, sh.sh_link, s.st_name)) &&
          !strcmp(nm, name))
        return s.st_value;
    }
  }
  return 0;
}

/* A spec that ends in a bare symbol: the name ends at the spec's end
 * (it was read on past its NUL). */
static void test_symbol_at_end(void) {
  uint64_t at = symbol_value("usdt_test_big");
  EXPECT(__func__, at != 0);
  UsdtNote n = parse("-8@usdt_test_big", at + 16);
  EXPECT(__func__, n.args_error == NULL);
  EXPECT(__func__, n.nargs == 1 && n.args[0].kind == USDT_ARG_MEM &&
        n.args[0].size == 8 && n.args[0].is_signed && n.args[0].value == -16);
  done(&n);
  n = parse("4@usdt_test_big+8 -2@%ax", at);
  EXPECT(__func__, n.args_error == NULL && n.nargs == 2 && n.args[0].value == 8);
  done(&n);
  n = parse("8@usdt_test_bigger", at);
  EXPECT(__func__, n.args_error && strstr(n.args_error, "names a symbol the file lacks"));
  done(&n);
}

/* Sizes are 1, 2, 4 or 8, whatever a wider number would truncate to. */
static void test_sizes(void) {
  static const char *bad[] = {"4294967297@%rax", "-4294967297@%rax",
                              "-9223372036854775808@%rax",
                              "18446744073709551615@%rax", "3@%rax"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    UsdtNote n = parse(bad[i], 0);
    EXPECT(__func__, n.args_error && strstr(n.args_error, "has a bad size"));
    done(&n);
  }
  UsdtNote n = parse("-1@%al 2@%bx -4@%ecx 8@%rdx", 0);
  EXPECT(__func__, !n.args_error && n.nargs == 4 && n.args[0].is_signed &&
        n.args[0].size == 1 && n.args[3].size == 8 && !n.args[3].is_signed);
  done(&n);
}

/* Constants keep their 64 bits; a negative one stops at INT64_MIN. */
static void test_constants(void) {
  UsdtNote n = parse("8@$-9223372036854775808 8@$18446744073709551615 "
                     "8@$0x10",
                     0);
  EXPECT(__func__, !n.args_error && n.nargs == 3 && n.args[0].value == INT64_MIN &&
        n.args[1].value == -1 && n.args[2].value == 16);
  done(&n);
  n = parse("8@$-9223372036854775809", 0);
  EXPECT(__func__, n.args_error && strstr(n.args_error, "constant"));
  done(&n);
  n = parse("8@$-18446744073709551615", 0);
  EXPECT(__func__, n.args_error && strstr(n.args_error, "constant"));
  done(&n);
}

/* Displacements and absolute addresses wrap as addresses do. */
static void test_displacements(void) {
  UsdtNote n = parse("8@-9223372036854775808(%rbp) 8@0x10", 0x20);
  EXPECT(__func__, !n.args_error && n.nargs == 2 && n.args[0].value == INT64_MIN &&
        n.args[1].value == -0x10);
  done(&n);
  n = parse("8@-9223372036854775808", 1);
  EXPECT(__func__, !n.args_error && n.args[0].value == INT64_MAX);
  done(&n);
}

/* Arguments are apart wherever isspace() says, the size being looked for
 * in the argument alone: an argument without one, then a form feed, took
 * the next one's. */
static void test_separators(void) {
  UsdtNote n = parse("%rdi\f-4@%rax\v2@%bx", 0);
  EXPECT(__func__, !n.args_error && n.nargs == 3 && n.args[0].size == 8 &&
        n.args[1].size == 4 && n.args[1].is_signed && n.args[2].size == 2);
  done(&n);
}

int main(void) {
  elf_version(EV_CURRENT);
  int fd = open("/proc/self/exe", O_RDONLY);
  self_elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
  if (!self_elf) {
    fprintf(stderr, "cannot read /proc/self/exe as ELF\n");
    return 1;
  }
  test_symbol_at_end();
  test_sizes();
  test_constants();
  test_displacements();
  test_separators();
  elf_end(self_elf);
  close(fd);
  printf("test_stapsdt: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
