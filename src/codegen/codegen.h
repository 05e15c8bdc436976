/* codegen: typed AST to eBPF instructions. */
#ifndef LOUPE_CODEGEN_H
#define LOUPE_CODEGEN_H

#include "model/program.h"

/* Generates out->progs for every probe. Returns 0, or -1 after reporting. */
int codegen_script(Script *s, Compiled *out, Diag *d);

/* Prints a program as readable assembly, each run of instructions under the
 * script line it came from (for -d). */
void disasm_print(const BpfProg *p, const Compiled *c, const Source *src,
                  FILE *out);
/* A helper's name by its id ("bpf_d_path"), or NULL if unknown. */
const char *helper_name(int32_t id);

#endif
