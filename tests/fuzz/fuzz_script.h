/* Compiling a script in a harness as a fresh loupe process would: no
 * script types left from the input before, messages to /dev/null.
 * Nothing is loaded into the kernel. The compiler keeps what it builds
 * (the AST points into text) to the process's end. */
#ifndef LOUPE_FUZZ_SCRIPT_H
#define LOUPE_FUZZ_SCRIPT_H

#include "compile.h"
#include "fuzz_util.h"
#include "lang/ctype.h"

static inline void fuzz_compile_script(const char *text, Settings *st) {
  Source *src = calloc(1, sizeof *src);
  if (!src) abort();
  src->name = "stdin";
  src->text = text;
  Diag d;
  diag_init(&d, src);
  d.out = fuzz_devnull();
  /* The type registry lives as long as the process; the parser reads it
   * before the checker defines the script's structs. */
  Script none = {0};
  ctype_define_script_structs(&none, &d);
  Compiled c = {0};
  Script *script = NULL;
  compile_script(src, st, &script, &c, &d);
}

#endif
