/* libFuzzer harness: arbitrary bytes through loupe's whole compiler —
 * lex, parse, config, macros, probe expansion, checks and code generation
 * — in one process, built with ASan and UBSan (make fuzz). Nothing is
 * loaded into the kernel. Messages go to /dev/null; a crash, a sanitizer
 * report or a timeout is a finding.
 *
 * The compiler keeps what it builds until the process exits (loupe runs
 * one script), so each input leaks its AST: run with -fork or a bounded
 * -runs, as tests/fuzz/run.sh does, so that memory stays bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "lang/lex.h"
#include "lang/ctype.h"

/* Inputs this long make every stage slow without reaching new code. */
enum { MAX_INPUT = 4096 };

static FILE *devnull;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > MAX_INPUT) return 0;
  if (!devnull) devnull = fopen("/dev/null", "w");
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';

  Source src = {.name = "stdin", .text = text};
  Diag d;
  diag_init(&d, &src);
  d.out = devnull;
  static char *params[] = {"1", "hello", "0x10"};
  static Settings st;   /* the script keeps it */
  st = (Settings){.params = params, .nparams = 3, .target_pid = 0,
                  .no_file_includes = true};   /* inputs read no files */
  /* The type registry lives as long as the process; the parser reads it
   * before the checker defines the script's structs. Start each input as
   * a fresh process would, with no script types. */
  Script none = {0};
  ctype_define_script_structs(&none, &d);
  Compiled c = {0};
  Script *script = NULL;
  compile_script(&src, &st, &script, &c, &d);
  /* The AST points into text: both are left to the process's end. */
  (void)script;
  return 0;
}
