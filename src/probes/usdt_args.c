/* usdt_args: arg0..arg11 in usdt probes. Each argument is where the
 * probe's note says it is at that location: a constant, a register of the
 * context's struct pt_regs, or user memory at a register plus an offset
 * (read with bpf_probe_read_user); then cut to its size and extended as
 * its sign says. A probe whose locations put an argument in different
 * places picks the location's spec by the BPF cookie its link carries
 * (the location's index, usdt.c). */
#define _GNU_SOURCE   /* qsort_r */
#include "probes/usdt.h"

#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"

/* ---- check ------------------------------------------------------------- */

bool usdt_arg_usable(const Probe *p, int index, char *msg, size_t len) {
  for (const AttachPoint *ap = p->aps; ap; ap = ap->next)
    for (const Target *t = ap->targets; t; t = t->next) {
      const UsdtProbe *up = t->data;
      if (!up) continue;
      for (int i = 0; i < up->nlocs; i++) {
        const UsdtNote *n = up->locs[i];
        if (n->args_error) {
          snprintf(msg, len, "cannot read the arguments of %s: %s", t->name,
                   n->args_error);
          return false;
        }
        if (index >= n->nargs) {
          snprintf(msg, len, "%s has %d argument%s: there is no arg%d",
                   t->name, n->nargs, n->nargs == 1 ? "" : "s", index);
          return false;
        }
      }
    }
  return true;
}

/* ---- code --------------------------------------------------------------- */

/* v cut to size bytes and extended back to 64 bits. */
static int64_t extend_const(int64_t v, int size, bool is_signed) {
  if (size >= 8) return v;
  int bits = size * 8;
  uint64_t mask = (1ULL << bits) - 1, u = (uint64_t)v & mask;
  if (is_signed && (u >> (bits - 1))) u |= ~mask;
  return (int64_t)u;
}

/* The register r cut to size bytes and extended back to 64 bits. */
static void emit_extend(Gen *g, int r, int size, bool is_signed) {
  if (size >= 8) return;
  emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - size * 8));
  emit(g, I_ALU64_IMM(is_signed ? BPF_ARSH : BPF_RSH, r, 64 - size * 8));
}

static int log2_scale(int scale) {
  return scale == 8 ? 3 : scale == 4 ? 2 : scale == 2 ? 1 : 0;
}

/* disp(%base,%index,scale): the address into r3 (r holds the context),
 * then size bytes from there into r. */
static void emit_mem_arg(Gen *g, int r, const UsdtArg *a) {
  emit_ctx(g, r);
  if (a->reg >= 0)
    emit(g, I_LDX(BPF_DW, BPF_REG_3, r, a->reg));
  else
    emit(g, I_MOV64_IMM(BPF_REG_3, 0));
  if (a->index_reg >= 0) {
    emit(g, I_LDX(BPF_DW, BPF_REG_4, r, a->index_reg));
    if (a->scale > 1)
      emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_4, log2_scale(a->scale)));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_4));
  }
  if (fits32(a->value)) {
    if (a->value) emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, (int32_t)a->value));
  } else {
    emit_imm64(g, BPF_REG_4, a->value);
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_4));
  }
  int slot = stack_alloc(g, 8);
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
  emit(g, I_MOV64_IMM(BPF_REG_2, a->size));
  emit_call(g, BPF_FUNC_probe_read_user);
  emit(g, I_LDX(insn_size_code(a->size), r, BPF_REG_10, slot));
}

/* One spec's value into r. */
static void emit_arg_spec(Gen *g, int r, const UsdtArg *a) {
  switch (a->kind) {
  case USDT_ARG_CONST:
    emit_imm64(g, r, extend_const(a->value, a->size, a->is_signed));
    return;
  case USDT_ARG_REG:
    emit_ctx(g, r);
    emit(g, I_LDX(BPF_DW, r, r, a->reg));
    if (a->reg_shift) emit(g, I_ALU64_IMM(BPF_RSH, r, a->reg_shift));
    break;
  case USDT_ARG_MEM:
    emit_mem_arg(g, r, a);
    break;
  }
  emit_extend(g, r, a->size, a->is_signed);
}

/* The locations of a probe grouped by their spec of one argument. */
typedef struct SpecGroups {
  int *locs;      /* location indices, those of a spec together, ascending */
  int *starts;    /* each group's start in locs, in the order of the
                     groups' first locations */
  int ngroups;
} SpecGroups;

typedef struct SpecOrder {
  const UsdtProbe *up;
  int index;
} SpecOrder;

static int loc_spec_cmp(const void *a, const void *b, void *arg) {
  const SpecOrder *o = arg;
  int i = *(const int *)a, k = *(const int *)b;
  int c = usdt_arg_cmp(&o->up->locs[i]->args[o->index],
                       &o->up->locs[k]->args[o->index]);
  return c ? c : (i > k) - (i < k);
}

static int group_first_cmp(const void *a, const void *b, void *arg) {
  const int *locs = arg;
  int i = locs[*(const int *)a], k = locs[*(const int *)b];
  return (i > k) - (i < k);
}

/* Sorted once: a probe may have thousands of locations, and comparing
 * each with the ones before it took minutes. */
static SpecGroups spec_groups(const UsdtProbe *up, int index) {
  int n = up->nlocs;
  SpecGroups sg = {malloc(n * sizeof(int)), malloc(n * sizeof(int)), 0};
  if (!sg.locs || !sg.starts) abort();
  for (int i = 0; i < n; i++) sg.locs[i] = i;
  SpecOrder o = {up, index};
  qsort_r(sg.locs, n, sizeof(int), loc_spec_cmp, &o);
  for (int i = 0; i < n; i++)
    if (i == 0 || !usdt_arg_same(&up->locs[sg.locs[i]]->args[index],
                                 &up->locs[sg.locs[i - 1]]->args[index]))
      sg.starts[sg.ngroups++] = i;
  qsort_r(sg.starts, sg.ngroups, sizeof(int), group_first_cmp, sg.locs);
  return sg;
}

int usdt_emit_arg(Gen *g, int index) {
  const UsdtProbe *up = g->target->data;
  int r = reg_alloc(g);
  bool alike = true;
  for (int i = 1; i < up->nlocs && alike; i++)
    alike = usdt_arg_same(&up->locs[0]->args[index], &up->locs[i]->args[index]);
  if (alike) {
    emit_arg_spec(g, r, &up->locs[0]->args[index]);
    return r;
  }
  /* r = the location's index, from the cookie of its link; then one
   * branch per different spec, the locations that share it jumping to it */
  emit_ctx(g, BPF_REG_1);
  emit_call(g, BPF_FUNC_get_attach_cookie);
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  Jumps done = {0};
  SpecGroups sg = spec_groups(up, index);
  for (int gi = 0; gi < sg.ngroups; gi++) {
    int start = sg.starts[gi], end = start + 1;
    const UsdtArg *a = &up->locs[sg.locs[start]]->args[index];
    while (end < up->nlocs &&
           usdt_arg_same(&up->locs[sg.locs[end]]->args[index], a))
      end++;
    Jumps here = {0};
    for (int k = start; k < end; k++)
      jumps_add(&here, emit_jump(g, I_JMP_IMM(BPF_JEQ, r, sg.locs[k], 0)));
    int skip = emit_jump(g, I_JA(0));
    jumps_patch_here(g, &here);
    emit_arg_spec(g, r, a);
    jumps_add(&done, emit_jump(g, I_JA(0)));
    patch_here(g, skip);
  }
  free(sg.locs);
  free(sg.starts);
  emit(g, I_MOV64_IMM(r, 0));   /* no such location: cannot happen */
  jumps_patch_here(g, &done);
  return r;
}
