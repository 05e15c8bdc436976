/* maps: keys, lookups and updates of the script's maps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "codegen/gen.h"

/* Builds the key of @m[...] in a scratch buffer; returns its offset. */
int gen_key(Gen *g, Node *mapnode) {
  MapSym *m = mapnode->map;
  int key = scratch_alloc(g, m->key_size);
  if (m->nkeys == 0) {
    if (!m->direct) emit(g, I_ST(BPF_DW, SCRATCH, key, 0));
    return key;
  }
  if (mapnode->ival) {
    /* @m[$t]: one tuple holds the keys of @m[a, b], laid out alike */
    TupleType keys = {.n = m->nkeys, .elems = m->key_types,
                      .offs = m->key_off, .size = m->key_size};
    Type want = {.kind = TY_TUPLE, .size = m->key_size, .tuple = &keys};
    gen_buf_as(g, mapnode->args, key, want);
    return key;
  }
  int i = 0;
  for (Node *k = mapnode->args; k; k = k->next, i++) {
    if (is_buffer(k->type)) {
      gen_buf_as(g, k, key + m->key_off[i], m->key_types[i]);
    } else {
      gen_store_int(g, k, SCRATCH, key + m->key_off[i]);
    }
  }
  return key;
}

/* Direct map m = reg (not r1), and set: its set flag is 8 bytes on. */
void emit_direct_store(Gen *g, const MapSym *m, int reg) {
  emit_map_value(g, BPF_REG_1, m->id, 0);
  emit(g, I_STX(BPF_DW, BPF_REG_1, reg, 0));
  emit(g, I_ST(BPF_DW, BPF_REG_1, 8, 1));
}

/* Direct map m = the constant v, and set. */
void emit_direct_store_const(Gen *g, const MapSym *m, int64_t v) {
  /* r2: a constant past 32 bits goes through r1 */
  emit_map_value(g, BPF_REG_2, m->id, 0);
  emit_store_const(g, BPF_REG_2, 0, v);
  emit(g, I_ST(BPF_DW, BPF_REG_2, 8, 1));
}

/* r0 = bpf_map_lookup_elem(m, scratch + key); for a direct map its
 * value's address, never NULL. */
void emit_lookup(Gen *g, MapSym *m, int key) {
  if (m->direct) {
    emit_map_value(g, BPF_REG_0, m->id, 0);
    return;
  }
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit_call(g, BPF_FUNC_map_lookup_elem);
}

/* bpf_map_update_elem(m, scratch + key, scratch + val, BPF_ANY); with val
 * UPDATE_VALUE_ONE, the value is the 8-byte 1 that loupe_counts holds.
 * Not for a direct map, which its writers store in place
 * (emit_direct_store). */
void emit_update(Gen *g, MapSym *m, int key, int val) {
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  if (val == UPDATE_VALUE_ONE) {
    emit_map_value(g, BPF_REG_3, MAP_ID_COUNTS,
                   COUNT_SLOT_ONE * (int)sizeof(uint64_t));
  } else {
    emit_scratch(g, BPF_REG_3, val);
  }
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
  emit_call(g, BPF_FUNC_map_update_elem);
  if (!m->full_slot) return;
  g->full_sites[m->id]++;
  if (g->full_global[m->id]) {
    /* many updates of m: its global subprogram counts, so the verifier
     * does not follow two paths from each (codegen.c decides) */
    emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_0));
    emit_subcall(g, SUB_FULL + m->id);
    return;
  }
  /* the full map's counter adds the update's own result, -E2BIG, so no
   * register need hold a 1: user space divides (report_counts) */
  int stored = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, -E2BIG, 0));
  emit_count_slot(g, m->full_slot, BPF_REG_0);
  patch_here(g, stored);
}

/* reg = the integer n, a constant straight into reg; reg is r1-r5, which
 * nothing generated after this may need until the call it is for. */
static void gen_int_into(Gen *g, Node *n, int reg) {
  int64_t v;
  if (fold(g, n, &v)) {
    emit_imm64(g, reg, v);
    return;
  }
  int r = gen_int(g, n);
  emit(g, I_MOV64_REG(reg, r));
  reg_free(g, r);
}

/* @m[k] = v through m's global writer, when the program writes m at many
 * places (codegen.c decides); false when m has none. */
bool gen_map_write(Gen *g, Node *mapnode, Node *value) {
  MapSym *m = mapnode->map;
  if (!map_is_int_to_int(g, m) || mapnode->ival) return false;
  g->write_sites[m->id]++;
  if (!g->write_global[m->id]) return false;
  /* value, then key, as the inline update evaluates them; both into
   * r1 and r2 only once neither needs a helper call any more */
  int64_t kv, vv;
  bool key_const = fold(g, mapnode->args, &kv);
  bool value_const = fold(g, value, &vv);
  Held vh = {-1, 0}, kh = {-1, 0};
  if (!value_const) vh = hold(g, gen_int(g, value));
  if (!key_const) kh = hold(g, gen_int(g, mapnode->args));
  if (value_const) {
    emit_imm64(g, BPF_REG_2, vv);
  } else {
    int vr = held_reg(g, vh, BPF_REG_2);
    if (vr != BPF_REG_2) emit(g, I_MOV64_REG(BPF_REG_2, vr));
  }
  if (key_const) {
    emit_imm64(g, BPF_REG_1, kv);
  } else {
    int kr = held_reg(g, kh, BPF_REG_1);
    if (kr != BPF_REG_1) emit(g, I_MOV64_REG(BPF_REG_1, kr));
    held_free(g, kh);
  }
  if (!value_const) held_free(g, vh);
  emit_subcall(g, sub_write(g, m->id));
  return true;
}

/* r = (signed) r / r1, rounding toward 0 as bpftrace's avg does: the
 * magnitude divided (BPF divides unsigned before cpu v4), the sign put
 * back. */
static void emit_signed_div(Gen *g, int r) {
  int positive = emit_jump(g, I_JMP_IMM(BPF_JSGE, r, 0, 0));
  emit(g, I_NEG64(r));
  emit(g, I_ALU64_REG(BPF_DIV, r, BPF_REG_1));
  emit(g, I_NEG64(r));
  int done = emit_jump(g, I_JA(0));
  patch_here(g, positive);
  emit(g, I_ALU64_REG(BPF_DIV, r, BPF_REG_1));
  patch_here(g, done);
}

/* The value of an aggregation @m[k] (at scratch + key) over every CPU,
 * as it is printed: a per-CPU map's lookup sees only this CPU's slot, so
 * each possible CPU's is looked up (bpf_map_lookup_percpu_elem, Linux
 * 5.19) and combined: counts and sums added, min and max over the CPUs
 * that have seen a value, avg as the sum of totals over the sum of
 * counts. 0 when no CPU has the entry. The loop's count and the two
 * partial results live in stack slots, so that nothing but r0-r5 is
 * taken while it runs. */
int gen_agg_read(Gen *g, MapSym *m, int key) {
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus < 1) ncpus = 1;
  int agg = m->value_type.agg;
  bool extreme = agg == AGG_MIN || agg == AGG_MAX;
  int cpu = stack_alloc(g, 8), a = stack_alloc(g, 8), b = stack_alloc(g, 8);
  emit(g, I_ST(BPF_DW, BPF_REG_10, cpu, 0));
  emit(g, I_ST(BPF_DW, BPF_REG_10, a, 0));
  emit(g, I_ST(BPF_DW, BPF_REG_10, b, 0));
  int top = g->p->ninsns;
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, cpu));
  emit_call(g, BPF_FUNC_map_lookup_percpu_elem);
  Jumps next = {0};
  jumps_add(&next, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)));
  if (extreme) {
    /* b: whether some CPU had a value; a: the least or greatest */
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    jumps_add(&next, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 0)));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, b));
    int first = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_2, 0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, a));
    jumps_add(&next, emit_jump(g, I_JMP_REG(agg == AGG_MIN ? BPF_JSGE
                                                           : BPF_JSLE,
                                            BPF_REG_1, BPF_REG_2, 0)));
    patch_here(g, first);
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, a));
    emit(g, I_ST(BPF_DW, BPF_REG_10, b, 1));
  } else {
    /* a: the sum of the first words (count, sum, total); b: of the
     * second (avg's count) */
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, a));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_2, BPF_REG_1));
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_2, a));
    if (agg == AGG_AVG) {
      emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
      emit(g, I_LDX(BPF_DW, BPF_REG_2, BPF_REG_10, b));
      emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_2, BPF_REG_1));
      emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_2, b));
    }
  }
  jumps_patch_here(g, &next);
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, cpu));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, cpu));
  int out = emit_jump(g, I_JMP_IMM(BPF_JGE, BPF_REG_1, ncpus, 0));
  emit_jump_back(g, top);
  patch_here(g, out);
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, a));
  if (agg == AGG_AVG) {
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, b));
    int none = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 0));
    emit_signed_div(g, r);
    patch_here(g, none);
  }
  return r;
}

/* An integer read of @m[k]: 0 when the entry is missing. An aggregation
 * in a per-CPU map reads as all CPUs' (gen_agg_read). */
int gen_map_int(Gen *g, Node *n) {
  MapSym *m = n->map;
  /* a plain map with one integer key and integer values, read at many
   * places in the program: its global reader (codegen.c decides) */
  bool readable = map_is_int_to_int(g, m) && !n->ival;
  if (readable) g->read_sites[m->id]++;
  if (readable && g->read_global[m->id]) {
    gen_int_into(g, n->args, BPF_REG_1);
    emit_subcall(g, sub_read(g, m->id));
    int r = reg_alloc(g);
    emit(g, I_MOV64_REG(r, BPF_REG_0));
    return r;
  }
  int key = gen_key(g, n);
  if (m->value_type.kind == TY_AGG && map_is_percpu(m))
    return gen_agg_read(g, m, key);
  emit_lookup(g, m, key);
  if (m->direct) {
    int r = reg_alloc(g);
    emit(g, I_LDX(BPF_DW, r, BPF_REG_0, 0));
    return r;
  }
  if (g->st->helper_errors) {
    /* -k: reading an entry that does not exist is reported (code 0) */
    int found = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
    emit_helper_error(g, BPF_FUNC_map_lookup_elem);
    emit(g, I_MOV64_IMM(BPF_REG_0, 0));
    patch_here(g, found);
  }
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 0));
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit(g, I_LDX(BPF_DW, r, BPF_REG_0, 0));
  if (m->value_type.kind == TY_AGG && m->value_type.agg == AGG_AVG) {
    /* sum / count, signed: the sum's magnitude divided (BPF divides
     * unsigned before cpu v4), the sign put back */
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    emit_signed_div(g, r);
  }
  patch_here(g, miss);
  return r;
}

void gen_map_str(Gen *g, Node *n, int dst, int cap) {
  MapSym *m = n->map;
  int key = gen_key(g, n);
  emit_lookup(g, m, key);
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit_copy_from(g, BPF_REG_0, 0, dst, m->value_size, cap);
  int done = emit_jump(g, I_JA(0));
  patch_here(g, miss);
  emit_zero(g, dst, cap);
  patch_here(g, done);
}

/* @m[k] op= v, @m[k]++ ...: read (0 if missing), compute, write back.
 * Without rhs, delta is what is added; with it, the step rhs is
 * multiplied by (a pointer's element size, else 1). Returns a register with the value before (post) or after the change
 * when want_value, else -1. */
int gen_map_update_int(Gen *g, Node *mapnode, int op, Node *rhs,
                              int64_t delta, bool want_old) {
  MapSym *m = mapnode->map;
  Held v = {-1, 0};
  if (rhs) v = hold(g, gen_int(g, rhs));
  int key = gen_key(g, mapnode);
  int val = scratch_alloc(g, 8);
  emit_lookup(g, m, key);
  int cur = reg_alloc(g);
  if (m->direct) {
    emit(g, I_LDX(BPF_DW, cur, BPF_REG_0, 0));
  } else {
    emit(g, I_MOV64_IMM(cur, 0));
    int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
    emit(g, I_LDX(BPF_DW, cur, BPF_REG_0, 0));
    patch_here(g, miss);
  }
  Held old = {-1, 0};
  int result = cur;
  if (want_old) {
    int o = reg_alloc(g);
    emit(g, I_MOV64_REG(o, cur));
    old = hold(g, o);
  }
  if (rhs) {
    int r = held_reg(g, v, BPF_REG_1);
    if (delta > 1) emit(g, I_ALU64_IMM(BPF_MUL, r, (int32_t)delta));
    emit_op(g, op, cur, r, 0, m->value_type.is_signed);
    held_free(g, v);
  } else {
    emit(g, I_ALU64_IMM(BPF_ADD, cur, (int32_t)delta));
  }
  if (m->direct) {
    emit_direct_store(g, m, cur);
  } else {
    emit(g, I_STX(BPF_DW, SCRATCH, cur, val));
    emit_update(g, m, key, val);
  }
  if (want_old) {
    reg_free(g, cur);
    result = held_reg(g, old, BPF_REG_0);
    if (result == BPF_REG_0) {
      result = reg_alloc(g);
      emit(g, I_MOV64_REG(result, BPF_REG_0));
    }
  }
  return result;
}
