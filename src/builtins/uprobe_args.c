/* uprobe_args: `args` in uprobes — the probed function's parameters by
 * name (args.n, args->n) and as one value (print(args), @m = args, map
 * keys, tuples), typed from the binary's debug information (sym/dwarf.c).
 *
 * The value is a struct whose members sit where their registers are in
 * the calling convention (one 8-byte slot per register, see
 * dwinfo_args_record); the program copies the registers from its pt_regs
 * context into it, each member's unused high bytes cleared, so equal
 * arguments compare and hash equal. */
#include <string.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"
#include "probes/regs.h"
#include "sym/dwarf.h"


void check_uprobe_args(Checker *c, Node *n) {
  const CType *record = NULL;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next) {
    const Provider *prov = ap_provider(ap);
    if (!prov || prov->args != ARGS_DEBUGINFO) {
      error_at(c, n->span, "The args builtin can not be used with '%s' "
               "probes (only the entry of a function has its arguments)",
               ap->provider);
      return;
    }
    if (strchr(ap->parts[0], '@')) {
      error_at(c, n->span, "args can not be used at a source location (%s): "
               "the arguments are only where they were at a function's "
               "entry", ap->text);
      return;
    }
    for (Target *t = ap->targets; t; t = t->next) {
      char err[600];
      const CType *r = dwinfo_args_record(t->binary, t->event, err,
                                          sizeof err);
      if (!r) {
        error_at(c, n->span, "args of %s: %s", t->name, err);
        return;
      }
      if (!record) {
        record = r;
      } else if (!ctype_same_members(record, r)) {
        error_at(c, n->span, "args differ between the functions this probe "
                 "attaches to (%s is one); use arg0..arg5 instead", t->name);
        return;
      }
    }
  }
  if (!record) return;
  c->probe->uses_ctx = true;
  n->type = (Type){.kind = TY_CVAL, .size = record->size, .ctype = record,
                   .as = AS_USER};
}

bool check_uprobe_args_field(Checker *c, Node *n) {
  CField f;
  if (ctype_field(n->lhs->type.ctype, n->name, &f)) return false;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
    for (Target *t = ap->targets; t; t = t->next) {
      if (dwinfo_param_not_in_registers(t->binary, t->event, n->name)) {
        error_at(c, n->span, "loupe cannot read parameter '%s' of %s: it "
                 "is not passed in a general-purpose register (floating "
                 "point, a struct over 16 bytes, or after the sixth "
                 "register)", n->name, t->event);
        return true;
      }
      error_at(c, n->span, "function %s has no parameter named '%s'",
               t->event, n->name);
      return true;
    }
  return false;
}

/* Copies `size` bytes of argument registers, from register `first` on,
 * to the record at dst + offset: whole registers as they are, the last
 * one's bytes past `size` cleared. */
static void copy_registers(Gen *g, int first, int size, int dst) {
  for (int done = 0; done < size; done += 8) {
    int reg = first + done / 8;
    if (reg >= REGS_NARGS) return;
    emit_ctx(g, BPF_REG_1);
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_1, regs_arg_offset(reg)));
    int bytes = size - done < 8 ? size - done : 8;
    if (bytes < 8) {
      emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_0, 64 - bytes * 8));
      emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 64 - bytes * 8));
    }
    emit(g, I_STX(BPF_DW, SCRATCH, BPF_REG_0, dst + done));
  }
}

void emit_uprobe_args(Gen *g, Node *n, int dst, int cap) {
  const CType *record = n->type.ctype;
  if (n->type.kind != TY_CVAL || !record) {
    fail(g, n->span, "%s", "args of a tracepoint is read through its "
         "fields (args.name)");
    return;
  }
  emit_zero(g, dst, cap);
  const CField *fs;
  int k = ctype_fields(record, &fs);
  for (int i = 0; i < k; i++)
    copy_registers(g, fs[i].offset / 8, fs[i].type->size,
                   dst + fs[i].offset);
}
