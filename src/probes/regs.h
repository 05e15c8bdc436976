/* regs: the context of the probes on a function's registers (kprobe,
 * kretprobe, uprobe, uretprobe): x86-64's struct pt_regs, as the kernel
 * saved it where the probe fired. */
#ifndef LOUPE_PROBES_REGS_H
#define LOUPE_PROBES_REGS_H

#include "lang/ast.h"

/* The arguments the calling convention passes in registers. */
#define REGS_NARGS 6

/* Where argument index (0 to 5) of the calling convention is in struct
 * pt_regs: di, si, dx, cx, r8, r9. */
int regs_arg_offset(int index);

/* codegen: argument index into a register, read from the context (the
 * provider's emit_arg); the return value (emit_retval). */
struct Gen;
int regs_emit_arg(struct Gen *g, int index);
int regs_emit_retval(struct Gen *g, Node *n);

#endif
