/* libFuzzer harness: an ELF file as a traced program may make it — its
 * USDT notes, its symbols and its DWARF — read the ways loupe reads a
 * probed binary: stapsdt_read, elf_read_functions, the parameters,
 * argument records and type texts of its functions (dwinfo_*), values of
 * those types printed as `print(args)` and `@s = *args.s` would, the
 * named types a script may cast to, source lines, and addresses turned
 * back into symbols and lines (usyms). Each input is written to a file
 * of the process's scratch directory, read, then forgotten.
 * Findings: tests/fuzz/regressions/elf/. */
#include <stdbool.h>

#include "fuzz_util.h"
#include "lang/ctype.h"
#include "output/encoder.h"
#include "sym/dwarf.h"
#include "sym/elf.h"
#include "sym/stapsdt.h"
#include "sym/usyms.h"

/* Bigger files only make each input slower. */
enum { MAX_INPUT = 64 << 10, MAX_FUNCS = 16, MAX_VALUE = 1 << 16 };

static void read_notes(const char *path) {
  UsdtNotes notes = {0};
  char err[256];
  if (stapsdt_read(path, &notes, err, sizeof err) == 0)
    for (int i = 0; i < notes.n; i++)
      fprintf(fuzz_devnull(), "%s:%s %s %d\n", notes.notes[i].provider,
              notes.notes[i].name, notes.notes[i].args_text,
              notes.notes[i].nargs);
  stapsdt_free(&notes);
}

/* A value of type t, all zero bytes then all 0xff bytes, printed: what
 * reads a member reads inside the value, or ASan tells. */
static void print_values(const CType *t) {
  if (!t || t->size <= 0 || t->size > MAX_VALUE) return;
  uint8_t *v = malloc((size_t)t->size);
  if (!v) abort();
  for (int fill = 0; fill <= 0xff; fill += 0xff) {
    memset(v, fill, (size_t)t->size);
    ValueArena a = {0};
    Value val;
    decode_cvalue(&a, t, v, &val);
    Output text = {.enc = &text_encoder, .out = fuzz_devnull()};
    Output json = {.enc = &json_encoder, .out = fuzz_devnull()};
    output_event(&text, "value", &val, true);
    output_event(&json, "value", &val, true);
    value_arena_free(&a);
  }
  free(v);
}

/* "struct item*" names "struct item": look it up as a cast would. */
static void lookup_named(const char *type_text) {
  char name[256], err[256];
  snprintf(name, sizeof name, "%.*s", (int)strcspn(type_text, "*["),
           type_text);
  if (!strncmp(name, "struct ", 7) || !strncmp(name, "union ", 6) ||
      !strncmp(name, "enum ", 5))
    print_values(ctype_parse(name, err, sizeof err));
}

static void read_function(const char *path, const Func *fn) {
  const DwParam *params;
  char err[512];
  int n = dwinfo_func_params(path, fn->name, &params, err, sizeof err);
  for (int i = 0; i < n; i++) {
    const CType *t = params[i].type;
    print_values(t);
    if (t && t->kind == C_PTR) print_values(t->target);
    lookup_named(params[i].type_text);
  }
  print_values(dwinfo_args_record(path, fn->name, err, sizeof err));
  if (n > 0 && params[0].name)
    dwinfo_param_not_in_registers(path, fn->name, params[0].name);
  USym sym;
  if (usyms_lookup(0, fn->vaddr, true, &sym) && sym.name)
    fprintf(fuzz_devnull(), "%s %s:%d\n", sym.name,
            sym.src_file ? sym.src_file : "?", sym.src_line);
  uint64_t addr, size, vaddr;
  bool relocatable;
  usyms_symbol_address(path, fn->name, &addr, &size, &relocatable, err,
                       sizeof err);
  usyms_offset_to_vaddr(path, fn->offset, &vaddr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_INPUT) return 0;
  const char *path = fuzz_write_file("bin", data, size);
  read_notes(path);
  FuncList fl = {0};
  char err[512];
  elf_read_functions(path, &fl, err, sizeof err);
  dwinfo_note_binary(path);
  usyms_add_binary(path);
  if (dwinfo_available(path)) {
    for (int i = 0; i < fl.n && i < MAX_FUNCS; i++)
      read_function(path, &fl.funcs[i]);
    uint64_t offset;
    const char *func;
    for (int line = 1; line < 40; line += 7)
      dwinfo_line_offset(path, "t.c", line, &offset, &func, err, sizeof err);
  }
  elf_funcs_free(&fl);
  dwinfo_forget_binaries();
  usyms_forget_binaries();
  return 0;
}
