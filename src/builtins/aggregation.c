/* aggregation: count(), sum(), min(), max(), avg() and stats() — values
 * of per-CPU maps (layouts in model/program.h), updated in place on the
 * CPU that fires and combined over CPUs when printed. */
#include <inttypes.h>
#include <string.h>

#include "builtins/builtin.h"

/* ---- checks ---------------------------------------------------------- */

bool check_aggregation(Checker *c, Node *n, int min, int max) {
  if (!c->in_assign_rhs) {
    error_at(c, n->span, "%s() should be directly assigned to a map",
             n->name);
    return false;
  }
  n->type = ty_agg(n->builtin->agg->kind);
  if (!want_args(c, n, min, max)) return false;
  if (min == 0) return true;
  check_expr(c, n->args);
  return want_int(c, n, n->args);
}

static void check_count(Checker *c, Node *n) { check_aggregation(c, n, 0, 0); }
static void check_value(Checker *c, Node *n) { check_aggregation(c, n, 1, 1); }

static int size_one(const MapSym *m) { return 8; }
static int size_two(const MapSym *m) { return 16; }   /* {value, seen} etc. */

/* ---- code ------------------------------------------------------------ */

/* @m[k] = count() / sum(v) / min(v) / max(v) / avg(v) / stats(v) on a
 * per-CPU map: update this CPU's slot in place, or insert it. */
static void gen_aggregate(Gen *g, Node *mapnode, Node *call) {
  MapSym *m = mapnode->map;
  AggKind agg = m->value_type.agg;
  Held v = {-1, 0};
  if (agg != AGG_COUNT) v = hold(g, gen_int(g, call->args));
  int key = gen_key(g, mapnode);
  int val = agg == AGG_COUNT ? UPDATE_VALUE_ONE
                             : scratch_alloc(g, m->value_size);
  emit_lookup(g, m, key);
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  /* a keyless array's slot is always there: nothing to insert */
  bool in_array = m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY;
  int vr = agg == AGG_COUNT ? -1 : held_reg(g, v, BPF_REG_2);
  int skip = -1;
  switch (agg) {
  case AGG_COUNT:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    break;
  case AGG_SUM:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, vr));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    break;
  case AGG_AVG:
  case AGG_STATS:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, vr));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 8));
    break;
  case AGG_MIN:
  case AGG_MAX: {
    /* store when this CPU has no value yet or v beats it */
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    int store = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    skip = emit_jump(g, I_JMP_REG(agg == AGG_MIN ? BPF_JSGE : BPF_JSLE, vr,
                                  BPF_REG_1, 0));
    patch_here(g, store);
    emit(g, I_STX(BPF_DW, BPF_REG_0, vr, 0));
    emit(g, I_ST(BPF_DW, BPF_REG_0, 8, 1));
    break;
  }
  default:
    break;
  }
  if (skip >= 0) patch_here(g, skip);
  if (in_array) {
    patch_here(g, miss);
    held_free(g, v);
    return;
  }
  int done = emit_jump(g, I_JA(0));
  patch_here(g, miss);
  /* first value on this CPU (a count's is 1, see emit_update) */
  if (agg != AGG_COUNT) {
    vr = held_reg(g, v, BPF_REG_2);
    emit(g, I_STX(BPF_DW, SCRATCH, vr, val));
    if (m->value_size > 8) emit(g, I_ST(BPF_DW, SCRATCH, val + 8, 1));
  }
  emit_update(g, m, key, val);
  patch_here(g, done);
  held_free(g, v);
}

/* ---- user space ------------------------------------------------------ */

int64_t agg_read_s64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static int reduced_one(const MapSym *m) { return 8; }
static int reduced_two(const MapSym *m) { return 16; }

void agg_reduce_sum(const MapSym *m, const uint8_t *buf, int slots,
                    int slot_size, uint8_t *out) {
  int words = agg_ops(m->value_type.agg)->reduced_size(m) / 8;
  for (int w = 0; w < words; w++) {
    uint64_t sum = 0;
    for (int c = 0; c < slots; c++)
      sum += (uint64_t)agg_read_s64(buf + (size_t)c * slot_size + w * 8);
    memcpy(out + w * 8, &sum, 8);
  }
}

/* min() and max() keep { value, seen } per CPU; CPUs that never stored a
 * value do not count. Nothing seen anywhere reads as 0 (as after zero()). */
static void reduce_minmax(const MapSym *m, const uint8_t *buf, int slots,
                          int slot_size, uint8_t *out) {
  bool is_min = m->value_type.agg == AGG_MIN;
  bool sign = m->value_type.is_signed;
  bool any = false;
  uint64_t best = 0;
  for (int c = 0; c < slots; c++) {
    const uint8_t *s = buf + (size_t)c * slot_size;
    if (!agg_read_s64(s + 8)) continue;
    uint64_t v = (uint64_t)agg_read_s64(s);
    bool less = sign ? (int64_t)v < (int64_t)best : v < best;
    bool greater = v != best && !less;
    if (!any || (is_min ? less : greater)) best = v;
    any = true;
  }
  memcpy(out, &best, 8);
}

static int64_t average(const uint8_t *val) {
  int64_t total = agg_read_s64(val), count = agg_read_s64(val + 8);
  return count ? total / count : 0;
}

static uint64_t sort_plain(const MapSym *m, const uint8_t *val) {
  return (uint64_t)agg_read_s64(val);
}

static uint64_t sort_average(const MapSym *m, const uint8_t *val) {
  return (uint64_t)average(val);
}

static bool signed_never(const MapSym *m) { return false; }
static bool signed_always(const MapSym *m) { return true; }
static bool signed_as_value(const MapSym *m) {
  return m->value_type.is_signed;
}

static void decode_count(const MapSym *m, const uint8_t *v, int64_t div,
                         const AggScope *scope, ValueArena *a, Value *out) {
  value_int(out, (uint64_t)agg_read_s64(v) / (uint64_t)div, false);
}

/* sum(), min() and max() are numbers of their type. */
static void decode_number(const MapSym *m, const uint8_t *v, int64_t div,
                          const AggScope *scope, ValueArena *a, Value *out) {
  if (m->value_type.is_signed)
    value_int(out, (uint64_t)(agg_read_s64(v) / div), true);
  else
    value_int(out, (uint64_t)agg_read_s64(v) / (uint64_t)div, false);
}

/* avg() and stats() keep { total, count }; print()'s div divides an
 * average, and does not apply to stats. */
static void decode_stats(const MapSym *m, const uint8_t *v, int64_t div,
                         const AggScope *scope, ValueArena *a, Value *out) {
  bool avg = m->value_type.agg == AGG_AVG;
  memset(out, 0, sizeof *out);
  out->kind = VAL_STATS;
  out->stats = (Stats){.count = agg_read_s64(v + 8), .total = agg_read_s64(v),
                       .average = avg ? average(v) / div : average(v),
                       .average_only = avg};
}

/* bpftrace keeps a keyless count() in an array, which always has its slot:
 * empty, it still prints 0. */
static const AggOps count_ops = {
    .kind = AGG_COUNT, .value_size = size_one, .emit_update = gen_aggregate,
    .reduced_size = reduced_one, .reduce = agg_reduce_sum,
    .sort_number = sort_plain, .sorts_signed = signed_never,
    .value_kind = VAL_INT, .decode = decode_count, .zero_when_empty = true};
static const AggOps sum_ops = {
    .kind = AGG_SUM, .value_size = size_one, .emit_update = gen_aggregate,
    .reduced_size = reduced_one, .reduce = agg_reduce_sum,
    .sort_number = sort_plain, .sorts_signed = signed_as_value,
    .value_kind = VAL_INT, .decode = decode_number};
static const AggOps min_ops = {
    .kind = AGG_MIN, .value_size = size_two, .emit_update = gen_aggregate,
    .reduced_size = reduced_one, .reduce = reduce_minmax,
    .sort_number = sort_plain, .sorts_signed = signed_as_value,
    .value_kind = VAL_INT, .decode = decode_number};
static const AggOps max_ops = {
    .kind = AGG_MAX, .value_size = size_two, .emit_update = gen_aggregate,
    .reduced_size = reduced_one, .reduce = reduce_minmax,
    .sort_number = sort_plain, .sorts_signed = signed_as_value,
    .value_kind = VAL_INT, .decode = decode_number};
static const AggOps avg_ops = {
    .kind = AGG_AVG, .value_size = size_two, .emit_update = gen_aggregate,
    .reduced_size = reduced_two, .reduce = agg_reduce_sum,
    .sort_number = sort_average, .sorts_signed = signed_always,
    .value_kind = VAL_STATS, .decode = decode_stats};
static const AggOps stats_ops = {
    .kind = AGG_STATS, .value_size = size_two, .emit_update = gen_aggregate,
    .reduced_size = reduced_two, .reduce = agg_reduce_sum,
    .sort_number = sort_average, .sorts_signed = signed_always,
    .value_kind = VAL_STATS, .decode = decode_stats, .ignores_top = true};

#define AGG(name_, min, check_, ops)                                     \
  {.name = name_, .form = BI_CALL, .min_args = min, .max_args = -1,       \
   .check = check_, .agg = &ops}

const Builtin builtins_aggregation[] = {
    AGG("count", 0, check_count, count_ops),
    AGG("sum", 1, check_value, sum_ops),
    AGG("min", 1, check_value, min_ops),
    AGG("max", 1, check_value, max_ops),
    AGG("avg", 1, check_value, avg_ops),
    AGG("stats", 1, check_value, stats_ops),
    {0},
};
