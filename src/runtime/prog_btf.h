/* prog_btf: the BTF (functions and script lines) programs load with. */
#ifndef LOUPE_RUNTIME_PROG_BTF_H
#define LOUPE_RUNTIME_PROG_BTF_H

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <stdbool.h>

#include "lang/diag.h"
#include "model/program.h"

typedef struct ProgBtf {
  struct bpf_func_info *funcs;   /* where each function starts */
  int nfuncs;
  struct bpf_line_info *lines;   /* the script line of each stretch */
  int nlines;
} ProgBtf;

typedef struct ScriptBtf {
  struct btf *btf;
  bool loaded;          /* the kernel has it: programs may refer to it */
  int proto;            /* int (void *ctx) */
  int *func_types;      /* loupe_main, loupe_fn1, ... */
  int nfunc_types;
  int global_proto[3];  /* [n]: long (long x[, long y]), of the global
                           subprograms taking n arguments */
  int *global_types[3]; /* [n]: loupe_gfn1, ... */
  int nglobal_types[3];
  ProgBtf *progs;       /* by index in Compiled.progs */
} ScriptBtf;

/* p's probe as a C identifier (tracepoint:sched:sched_switch becomes
 * tracepoint_sched_sched_switch), cut to size - 1 bytes: the name of its
 * BTF function and, cut to 15, of the program. bpftool shows a program
 * whose name has the full 15 bytes by its BTF function's name, so
 * `bpftool prog show` says which probe each program serves. */
void prog_identifier(const BpfProg *p, char *name, size_t size);

/* Describes every program of c, with the lines of src when it has text,
 * and loads the BTF into the kernel: 0, or -1 with errno if the kernel
 * refused it (sb stays usable for script_btf_free). */
int script_btf_build(ScriptBtf *sb, const Compiled *c, const Source *src);
/* Points program `prog`'s load options at its functions and lines, once
 * the BTF is loaded. */
void script_btf_opts(const ScriptBtf *sb, int prog,
                     struct bpf_prog_load_opts *o);
void script_btf_free(ScriptBtf *sb, int nprogs);

#endif
