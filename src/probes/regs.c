/* regs: argN and retval of kprobes and uprobes (and their return probes),
 * loaded straight from the struct pt_regs their programs get as context. */
#include "probes/regs.h"

#include <linux/bpf.h>

#include "codegen/gen.h"

/* ax holds the return value */
#define PT_REGS_AX 80

int regs_arg_offset(int index) {
  static const int offsets[] = {112, 104, 96, 88, 72, 64};
  return index >= 0 && index < REGS_NARGS ? offsets[index] : 0;
}

static int load_ctx_u64(Gen *g, int offset) {
  int r = reg_alloc(g);
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, offset));
  return r;
}

int regs_emit_arg(Gen *g, int index) {
  return load_ctx_u64(g, regs_arg_offset(index));
}

int regs_emit_retval(Gen *g, Node *n) {
  return load_ctx_u64(g, PT_REGS_AX);
}
