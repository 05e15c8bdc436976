/* histogram: hist(v[, bits]) and lhist(v, min, max, step) — per-CPU
 * arrays of bucket counts (layouts in model/program.h), decoded as
 * buckets with their bounds (output/text.c draws bpftrace's histogram
 * art). */
#include <inttypes.h>
#include <string.h>

#include "builtins/builtin.h"

/* ---- checks ---------------------------------------------------------- */

/* hist(v) as bpftrace 0.17 takes it (without an argument its message is
 * "requires one argument"), hist(v, bits) as later versions do. */
static void check_hist(Checker *c, Node *n) {
  if (!check_aggregation(c, n, 1, n->args ? 2 : 1)) return;
  int64_t v;
  Node *bits = n->args->next;
  if (bits && want_const(c, bits, n->name, "bits", 0, 5, &v)) n->ival = v;
}

/* lhist(v, min, max, step): integer literals making at most 1000
 * buckets. Negative bounds, which bpftrace 0.17 refuses, are fine. */
static void check_lhist_bounds(Checker *c, Node *n) {
  static const char *const names[] = {"min", "max", "step"};
  int64_t b[3];
  Node *a = n->args->next;
  for (int i = 0; i < 3; i++, a = a->next) {
    check_expr(c, a);
    if (a->type.kind == TY_NONE) return;
    if (!const_int(a, &b[i])) {
      error_at(c, n->span, "lhist() expects a integer literal (%s provided)",
               kind_name(a->type));
      return;
    }
    if (b[i] < INT32_MIN || b[i] > INT32_MAX) {
      error_at(c, a->span, "lhist(): %s must be between %d and %d", names[i],
               INT32_MIN, INT32_MAX);
      return;
    }
  }
  int64_t lo = b[0], hi = b[1], step = b[2];
  if (step < 1)
    error_at(c, n->span, "lhist() step must be >= 1 (%lld provided)",
             (long long)step);
  else if (lo > hi)
    error_at(c, n->span, "lhist() min must be less than max (provided min "
             "%lld and max %lld)", (long long)lo, (long long)hi);
  else if (step > hi - lo)   /* no bucket between min and max */
    error_at(c, n->span, "lhist() step is too large for the given range "
             "(provided step %lld for range %lld)", (long long)step,
             (long long)(hi - lo));
  else if ((hi - lo) / step > 1000)
    error_at(c, n->span, "lhist() too many buckets, must be <= 1000 (would "
             "need %lld)", (long long)((hi - lo) / step));
}

static void check_lhist(Checker *c, Node *n) {
  if (check_aggregation(c, n, 4, 4)) check_lhist_bounds(c, n);
}

/* hist() bits and lhist() bounds belong to the map: every call that
 * feeds it must agree. */
/* Metrics' histograms have a _sum: the map keeps one after its n
 * buckets, addressed by an instruction's 16-bit offset. */
static void keep_sum(Checker *c, MapSym *m, int64_t n) {
  m->hist_sum = c->script->settings->metrics && n * 8 < INT16_MAX;
}

static void check_hist_map(Checker *c, MapSym *m, Node *call) {
  int bits = (int)call->ival;
  if (m->agg_params_set && m->hist_bits != bits)
    error_at(c, call->span, "%s is used with hist() of %d and of %d bits",
             m->name, m->hist_bits, bits);
  m->hist_bits = bits;
  m->agg_params_set = true;
  keep_sum(c, m, hist_buckets(bits));
}

static void check_lhist_map(Checker *c, MapSym *m, Node *call) {
  Node *a = call->args ? call->args->next : NULL;
  int64_t lo = 0, hi = 0, step = 0;
  if (count_args(call) != 4 || !const_int(a, &lo) ||
      !const_int(a->next, &hi) || !const_int(a->next->next, &step) ||
      step < 1 || hi < lo)
    return;   /* reported by check_lhist_bounds */
  if (m->agg_params_set && (m->lhist_min != lo || m->lhist_max != hi ||
                            m->lhist_step != step))
    error_at(c, call->span, "%s is used with lhist() of different bounds",
             m->name);
  m->lhist_min = lo;
  m->lhist_max = hi;
  m->lhist_step = step;
  m->agg_params_set = true;
  keep_sum(c, m, lhist_buckets(m));
}

/* The buckets, then the sum of the values when the run asks for it. */
static int hist_size(const MapSym *m) {
  return 8 * hist_buckets(m->hist_bits) + (m->hist_sum ? 8 : 0);
}

/* No step after an error in its bounds (or after hist() on the same map
 * set its parameters instead): the script is not run. */
static int lhist_size(const MapSym *m) {
  return m->agg_params_set && m->lhist_step > 0
             ? 8 * lhist_buckets(m) + (m->hist_sum ? 8 : 0)
             : 8;
}

/* ---- code ------------------------------------------------------------ */

/* idx = the hist() bucket of v (layout in program.h), using r1..r4; v is
 * the caller's to free, and lost unless bits is set. */
static void emit_hist_index(Gen *g, int idx, int v, int bits) {
  emit(g, I_MOV64_IMM(idx, 0));
  int done1 = emit_jump(g, I_JMP_IMM(BPF_JSLT, v, 0, 0));
  emit(g, I_MOV64_IMM(idx, 1));
  int done2 = emit_jump(g, I_JMP_IMM(BPF_JEQ, v, 0, 0));
  /* acc = floor(log2 v) by halving the search range, without a branch:
   * with a branch per step the verifier walks all 64 paths (acc differs
   * on each). While w < 2^(2 sh), w >> sh is not 0 exactly when w is
   * above 2^sh - 1, that is when (2^sh - 1) - w is negative (w is below
   * 2^63): its sign bit, shifted left by log2(sh), is the step, sh or 0,
   * that w moves down by and acc up. */
  int acc = bits ? BPF_REG_3 : idx;
  int w = v;   /* v itself when nothing reads it after */
  if (bits) {
    w = BPF_REG_1;
    emit(g, I_MOV64_REG(w, v));
  }
  for (int sh = 32, lg = 5; sh >= 8; sh /= 2, lg--) {
    if (sh == 32)   /* 2^32 - 1 is no sign-extended immediate */
      emit(g, I_ALU32_IMM(BPF_MOV, BPF_REG_2, -1));
    else
      emit(g, I_MOV64_IMM(BPF_REG_2, (1 << sh) - 1));
    emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_2, w));
    emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_2, 63));
    emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_2, lg));
    emit(g, I_ALU64_REG(BPF_RSH, w, BPF_REG_2));
    if (sh == 32)
      emit(g, I_MOV64_REG(acc, BPF_REG_2));
    else
      emit(g, I_ALU64_REG(BPF_ADD, acc, BPF_REG_2));
  }
  /* w < 256 now: the rest of the log2 is a byte of the table. The ANDs
   * show the verifier what it cannot see through the shifts: that the
   * index is in the table, and that what it reads is at most 7, so that
   * acc <= 63 and the bucket is in range without a clamp. */
  emit(g, I_ALU64_IMM(BPF_AND, w, LOG2_TABLE_SIZE - 1));
  emit_map_value(g, BPF_REG_2, find_map(g, LOG2_MAP_NAME), 0);
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_2, w));
  emit(g, I_LDX(BPF_B, w, BPF_REG_2, 0));
  emit(g, I_ALU64_IMM(BPF_AND, w, 7));
  emit(g, I_ALU64_REG(BPF_ADD, acc, w));
  if (bits) {
    /* r1 = the `bits` bits after the leading one */
    emit(g, I_MOV64_REG(BPF_REG_1, v));
    emit(g, I_MOV64_IMM(BPF_REG_4, bits));
    int below = emit_jump(g, I_JMP_REG(BPF_JGT, BPF_REG_4, BPF_REG_3, 0));
    emit(g, I_MOV64_REG(BPF_REG_4, BPF_REG_3));
    emit(g, I_ALU64_IMM(BPF_SUB, BPF_REG_4, bits));
    emit(g, I_ALU64_REG(BPF_RSH, BPF_REG_1, BPF_REG_4));
    int joined = emit_jump(g, I_JA(0));
    patch_here(g, below);
    emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_4, BPF_REG_3));
    emit(g, I_ALU64_REG(BPF_LSH, BPF_REG_1, BPF_REG_4));
    patch_here(g, joined);
    emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_1, (1 << bits) - 1));
    emit(g, I_MOV64_REG(idx, BPF_REG_3));
    emit(g, I_ALU64_IMM(BPF_LSH, idx, bits));
    emit(g, I_ALU64_REG(BPF_ADD, idx, BPF_REG_1));
  }
  emit(g, I_ALU64_IMM(BPF_ADD, idx, 2));
  patch_here(g, done1);
  patch_here(g, done2);
}

/* idx = the lhist() bucket of v. */
static void emit_lhist_index(Gen *g, int idx, int v, const MapSym *m) {
  int last = lhist_buckets(m) - 1;
  emit(g, I_MOV64_IMM(idx, 0));
  int done1 = emit_jump(g, I_JMP_IMM(BPF_JSLT, v, (int32_t)m->lhist_min, 0));
  emit(g, I_MOV64_IMM(idx, last));
  int done2 = emit_jump(g, I_JMP_IMM(BPF_JSGE, v, (int32_t)m->lhist_max, 0));
  emit(g, I_MOV64_REG(idx, v));
  emit(g, I_ALU64_IMM(BPF_SUB, idx, (int32_t)m->lhist_min));
  emit(g, I_ALU64_IMM(BPF_DIV, idx, (int32_t)m->lhist_step));
  emit(g, I_ALU64_IMM(BPF_ADD, idx, 1));
  patch_here(g, done1);
  patch_here(g, done2);
}

void agg_lookup_or_insert(Gen *g, MapSym *m, int key, Jumps *none) {
  emit_lookup(g, m, key);
  if (m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY) {
    /* its one slot is always there (the verifier still wants the test) */
    jumps_add(none, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)));
    return;
  }
  int have = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  if (emit_lookup_slot0(g, find_map(g, ZERO_MAP_NAME)))
    jumps_add(none, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)));
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_NOEXIST));
  emit_call(g, BPF_FUNC_map_update_elem);
  emit_lookup(g, m, key);
  jumps_add(none, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)));
  patch_here(g, have);
}

/* @m[k] = hist(v) / lhist(v, ...): one bucket of this CPU's slot counts
 * up; a missing entry is first inserted from the zero map. */
static void gen_histogram(Gen *g, Node *mapnode, Node *call) {
  MapSym *m = mapnode->map;
  int v = gen_int(g, call->args);
  int nb = m->value_size / 8 - (m->hist_sum ? 1 : 0);   /* buckets */
  /* the index is computed in v's register: the sum takes a copy */
  Held hv = {0};
  if (m->hist_sum) {
    int copy = reg_alloc(g);
    emit(g, I_MOV64_REG(copy, v));
    hv = hold(g, copy);
  }
  int idx = reg_alloc(g);
  if (m->value_type.agg == AGG_HIST) {
    /* at most (63 << bits) + 2^bits - 1 + 2, the last bucket */
    emit_hist_index(g, idx, v, m->hist_bits);
  } else {
    emit_lhist_index(g, idx, v, m);
    emit(g, I_JMP_IMM(BPF_JLE, idx, nb - 1, 1));
    emit(g, I_MOV64_IMM(idx, nb - 1));
  }
  reg_free(g, v);
  Held hidx = hold(g, idx);
  Jumps none = {0};
  agg_lookup_or_insert(g, m, gen_key(g, mapnode), &none);
  if (m->hist_sum) {   /* the sum after the buckets: += v */
    int rv = held_reg(g, hv, BPF_REG_2);
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, nb * 8));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, rv));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, nb * 8));
    held_free(g, hv);
  }
  int r = held_reg(g, hidx, BPF_REG_1);   /* the index: ours to shift */
  emit(g, I_ALU64_IMM(BPF_LSH, r, 3));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, r));
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
  jumps_patch_here(g, &none);
  held_free(g, hidx);
}

/* ---- user space ------------------------------------------------------ */

typedef unsigned __int128 u128;

/* One bucket of a hist or lhist: which values it counts. */
typedef struct Bucket {
  bool possible;        /* some value can land in it (see hist_bucket) */
  bool below, above;    /* (..., lo) / [lo, ...) */
  __int128 lo, hi;      /* [lo, hi) */
} Bucket;

/* Bucket i of hist(v, bits), laid out as program.h says. With bits > 0,
 * a power of two smaller than 2^bits has fewer values than slots: the
 * slots no value maps to are not possible, and are never printed. */
static Bucket hist_bucket(int bits, int i) {
  Bucket b = {.possible = true};
  if (i == 0) {
    b.below = true;
    b.hi = 0;
    return b;
  }
  if (i == 1) {
    b.lo = 0;
    b.hi = 1;
    return b;
  }
  int j = i - 2, e = j >> bits, sub = j & ((1 << bits) - 1);
  if (e < bits) {
    int step = 1 << (bits - e);
    b.possible = sub % step == 0;
    b.lo = ((u128)1 << e) + sub / step;
    b.hi = b.lo + 1;
  } else {
    b.lo = ((u128)1 << e) + ((u128)sub << (e - bits));
    b.hi = b.lo + ((u128)1 << (e - bits));
  }
  return b;
}

/* Bucket i of lhist(v, min, max, step) with n buckets. */
static Bucket lhist_bucket(const MapSym *m, int n, int i) {
  Bucket b = {.possible = true};
  if (i == 0) {
    b.below = true;
    b.hi = m->lhist_min;
  } else if (i == n - 1) {
    b.above = true;
    b.lo = m->lhist_max;
  } else {
    b.lo = m->lhist_min + (__int128)(i - 1) * m->lhist_step;
    b.hi = b.lo + m->lhist_step;
  }
  return b;
}

static Bucket bucket_at(const MapSym *m, int n, int i) {
  return m->value_type.agg == AGG_LHIST ? lhist_bucket(m, n, i)
                                : hist_bucket(m->hist_bits, i);
}

/* Bucket counts: the reduced value is the per-CPU counts added up. */
static int hist_reduced_size(const MapSym *m) { return m->value_size / 8 * 8; }

/* How many buckets (the sum, if kept, follows them). */
static int hist_nbuckets(const MapSym *m) {
  return hist_reduced_size(m) / 8 - (m->hist_sum ? 1 : 0);
}

/* Maps of histograms sort by their total count. */
static uint64_t sort_total(const MapSym *m, const uint8_t *val) {
  uint64_t total = 0;
  for (int i = 0; i < hist_nbuckets(m); i++)
    total += (uint64_t)agg_read_s64(val + i * 8);
  return total;
}

static bool signed_never(const MapSym *m) { return false; }

/* The buckets from the first non-empty one to the last, those a value can
 * land in. lhist ignores print()'s div in bpftrace; hist divides the
 * counts. */
static void decode_hist(const MapSym *m, const uint8_t *val, int64_t div,
                        const AggScope *scope, ValueArena *a, Value *out) {
  int n = hist_nbuckets(m), first = -1, last = -1;
  const uint64_t *b = (const uint64_t *)val;
  memset(out, 0, sizeof *out);
  out->kind = VAL_HIST;
  out->hist.has_sum = m->hist_sum;
  if (m->hist_sum) out->hist.sum = agg_read_s64(val + n * 8);
  out->hist.linear = m->value_type.agg == AGG_LHIST;
  out->hist.div = out->hist.linear ? 1 : (uint64_t)div;
  for (int i = 0; i < n; i++) {
    if (!b[i]) continue;
    if (first < 0) first = i;
    last = i;
    if (b[i] > out->hist.peak) out->hist.peak = b[i];
  }
  if (first < 0) return;
  out->hist.buckets = value_alloc(a, sizeof(HistBucket) * (last - first + 1));
  for (int i = first; out->hist.buckets && i <= last; i++) {
    Bucket bk = bucket_at(m, n, i);
    if (!bk.possible) continue;
    out->hist.buckets[out->hist.n++] = (HistBucket){
        .below = bk.below, .above = bk.above, .lo = bk.lo, .hi = bk.hi,
        .count = b[i]};
  }
}

static const AggOps hist_ops = {
    .kind = AGG_HIST, .check_map = check_hist_map, .value_size = hist_size,
    .emit_update = gen_histogram, .reduced_size = hist_reduced_size,
    .reduce = agg_reduce_sum, .sort_number = sort_total,
    .sorts_signed = signed_never, .value_kind = VAL_HIST,
    .decode = decode_hist};
static const AggOps lhist_ops = {
    .kind = AGG_LHIST, .check_map = check_lhist_map,
    .value_size = lhist_size, .emit_update = gen_histogram,
    .reduced_size = hist_reduced_size, .reduce = agg_reduce_sum,
    .sort_number = sort_total, .sorts_signed = signed_never,
    .value_kind = VAL_HIST, .decode = decode_hist};

const Builtin builtins_histogram[] = {
    {.name = "hist", .form = BI_CALL, .min_args = 1, .max_args = -1,
     .check = check_hist, .agg = &hist_ops},
    {.name = "lhist", .form = BI_CALL, .min_args = 4, .max_args = -1,
     .check = check_lhist, .agg = &lhist_ops},
    {0},
};
