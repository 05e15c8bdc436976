/* tseries: tseries(v, interval, n[, agg]) — a time series of the last n
 * intervals of `interval` ns, each holding the last value recorded in it
 * (or their avg, max, min or sum). Per-CPU rings of slots (layout in
 * model/program.h), combined over CPUs and decoded as the intervals
 * of a window (output/text.c draws bpftrace's time-series plot). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "builtins/builtin.h"

/* How the values recorded in one interval combine. */
enum { TS_LAST, TS_AVG, TS_MAX, TS_MIN, TS_SUM };
static const char *const agg_words[] = {"avg", "max", "min", "sum"};

#define TS_MAX_INTERVALS 1000
#define SLOT_BYTES 24   /* { epoch, value, count } */

/* With BPFTRACE_DUMMY_TS_MAP=@m the time of every update is read from the
 * keyless map @m instead of the clock (for reproducible tests). */
static const char *clock_map_name(void) {
  const char *name = getenv("BPFTRACE_DUMMY_TS_MAP");
  return name && *name ? name : NULL;
}

/* ---- checks ---------------------------------------------------------- */

static void check_clock_map(Checker *c, Node *n) {
  const char *name = clock_map_name();
  if (!name || c->pass != 2) return;
  MapSym *m = map_find(c->out, name);
  if (!m)
    error_at(c, n->span, "BPFTRACE_DUMMY_TS_MAP names %s, which the script "
             "does not use", name);
  else if (m->nkeys != 0 || m->value_type.kind != TY_INT)
    error_at(c, n->span, "BPFTRACE_DUMMY_TS_MAP names %s, which must be a "
             "map without keys holding integers", name);
}

/* tseries(v, interval, n[, "avg"|"max"|"min"|"sum"]): the interval and
 * the number of intervals are integer literals (durations such as 100ms
 * included), the aggregation a string literal. */
static void check_tseries(Checker *c, Node *n) {
  if (c->script->settings->forbid_tseries) {
    error_at(c, n->span, "tseries() is an unstable feature, which the "
             "config forbids (unstable_tseries = error)");
    n->type.kind = TY_NONE;   /* one error is enough */
    return;
  }
  if (!check_aggregation(c, n, 3, 4)) return;
  Node *interval = n->args->next, *count = interval->next;
  int64_t v;
  check_expr(c, interval);
  check_expr(c, count);
  if (!want_const(c, interval, "tseries", "interval", 1, INT64_MAX, &v) ||
      !want_const(c, count, "tseries", "the number of intervals", 1,
                  TS_MAX_INTERVALS, &v))
    return;
  Node *agg = count->next;
  n->ival = TS_LAST;
  if (agg) {
    bool known = false;
    for (int i = 0; agg->kind == N_STR && i < 4; i++)
      if (!strcmp(agg->sval, agg_words[i])) {
        n->ival = TS_AVG + i;
        known = true;
      }
    if (!known) {
      error_at(c, agg->span, "tseries(): the aggregation must be \"avg\", "
               "\"max\", \"min\" or \"sum\" (a string literal)");
      return;
    }
  }
  check_clock_map(c, n);
}

/* The interval, their number and the aggregation belong to the map: every
 * call that feeds it must agree. */
static void check_tseries_map(Checker *c, MapSym *m, Node *call) {
  Node *a = call->args ? call->args->next : NULL;
  int64_t interval, count;
  if (!a || !a->next || !const_int(a, &interval) ||
      !const_int(a->next, &count) || interval < 1 || count < 1 ||
      count > TS_MAX_INTERVALS)
    return;   /* reported by check_tseries */
  if (m->agg_params_set &&
      (m->tseries_interval != interval || m->tseries_intervals != count ||
       m->tseries_agg != (int)call->ival))
    error_at(c, call->span, "%s is used with tseries() of different "
             "intervals or aggregations", m->name);
  m->tseries_interval = interval;
  m->tseries_intervals = (int)count;
  m->tseries_agg = (int)call->ival;
  m->agg_params_set = true;
}

static int tseries_size(const MapSym *m) {
  return SLOT_BYTES * (m->agg_params_set ? m->tseries_intervals : 1);
}

/* ---- code ------------------------------------------------------------ */

/* A new register holding the time of the update in ns since the Unix
 * epoch: boot time plus the offset to the wall clock read now, or the
 * value of BPFTRACE_DUMMY_TS_MAP's map (0 while it has none). */
static int emit_now(Gen *g) {
  int r = reg_alloc(g);
  int id = clock_map_name() ? find_map(g, clock_map_name()) : -1;
  if (id >= 0) {
    emit_lookup_slot0(g, id);
    emit(g, I_MOV64_IMM(r, 0));
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
    emit(g, I_LDX(BPF_DW, r, BPF_REG_0, 0));
    return r;
  }
  struct timespec real, boot;
  clock_gettime(CLOCK_REALTIME, &real);
  clock_gettime(CLOCK_BOOTTIME, &boot);
  int64_t off = (real.tv_sec - boot.tv_sec) * 1000000000LL +
                (real.tv_nsec - boot.tv_nsec);
  emit_call(g, BPF_FUNC_ktime_get_boot_ns);
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  emit_imm64(g, BPF_REG_1, off);
  emit(g, I_ALU64_REG(BPF_ADD, r, BPF_REG_1));
  return r;
}

/* Folds v (r5) into the value of the slot at r0, which already holds
 * values of this interval. */
static void emit_combine(Gen *g, int agg) {
  int skip = -1;
  switch (agg) {
  case TS_AVG:
  case TS_SUM:
    emit(g, I_LDX(BPF_DW, BPF_REG_4, BPF_REG_0, 8));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_5, BPF_REG_4));
    break;
  case TS_MIN:
  case TS_MAX:
    emit(g, I_LDX(BPF_DW, BPF_REG_4, BPF_REG_0, 8));
    skip = emit_jump(g, I_JMP_REG(agg == TS_MIN ? BPF_JSGE : BPF_JSLE,
                                  BPF_REG_5, BPF_REG_4, 0));
    break;
  default:
    break;
  }
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_5, 8));
  if (skip >= 0) patch_here(g, skip);
}

/* @m[k] = tseries(v, ...): the slot of the current interval on this CPU
 * takes v, after being reset if it still holds an older interval. */
static void gen_tseries(Gen *g, Node *mapnode, Node *call) {
  MapSym *m = mapnode->map;
  int n = m->tseries_intervals;
  Held v = hold(g, gen_int(g, call->args));
  int now = emit_now(g);
  emit_imm64(g, BPF_REG_1, m->tseries_interval);
  emit(g, I_ALU64_REG(BPF_DIV, now, BPF_REG_1));
  Held epoch = hold(g, now);
  Jumps none = {0};
  agg_lookup_or_insert(g, m, gen_key(g, mapnode), &none);
  /* r0 = the slot: epoch % n, bounded for the verifier */
  int e = held_reg(g, epoch, BPF_REG_1);
  if (e != BPF_REG_1) emit(g, I_MOV64_REG(BPF_REG_1, e));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_1));
  emit(g, I_ALU64_IMM(BPF_MOD, BPF_REG_2, n));
  emit(g, I_JMP_IMM(BPF_JLE, BPF_REG_2, n - 1, 1));
  emit(g, I_MOV64_IMM(BPF_REG_2, n - 1));
  emit(g, I_ALU64_IMM(BPF_MUL, BPF_REG_2, SLOT_BYTES));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_2));
  int vr = held_reg(g, v, BPF_REG_5);
  if (vr != BPF_REG_5) emit(g, I_MOV64_REG(BPF_REG_5, vr));
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_0, 16));
  int fresh1 = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0));
  emit(g, I_LDX(BPF_DW, BPF_REG_4, BPF_REG_0, 0));
  int fresh2 = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_4, BPF_REG_1, 0));
  emit_combine(g, m->tseries_agg);
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_3, 16));
  int done = emit_jump(g, I_JA(0));
  patch_here(g, fresh1);
  patch_here(g, fresh2);
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_5, 8));
  emit(g, I_ST(BPF_DW, BPF_REG_0, 16, 1));
  patch_here(g, done);
  jumps_patch_here(g, &none);
  held_free(g, epoch);
  held_free(g, v);
}

/* ---- user space: combining CPUs -------------------------------------- */

typedef struct Slot {
  uint64_t epoch;
  int64_t value;
  uint64_t count;
} Slot;

static Slot slot_at(const uint8_t *p) {
  Slot s;
  memcpy(&s, p, sizeof s);
  return s;
}

static int reduced_size(const MapSym *m) { return tseries_size(m); }

/* Slot by slot: the newest interval any CPU holds there, its values
 * combined over the CPUs that hold it. For the last value, the CPU
 * numbered highest among those whose slot is at that interval gives it,
 * as in bpftrace (a CPU's never-written slot is at interval 0). */
static void reduce_tseries(const MapSym *m, const uint8_t *buf, int slots,
                           int slot_size, uint8_t *out) {
  int agg = m->tseries_agg;
  for (int i = 0; i < reduced_size(m) / SLOT_BYTES; i++) {
    const uint8_t *first = buf + i * SLOT_BYTES;
    Slot r = {0, 0, 0};
    for (int c = 0; c < slots; c++) {
      Slot s = slot_at(first + (size_t)c * slot_size);
      if (s.count && s.epoch > r.epoch) r.epoch = s.epoch;
    }
    for (int c = 0; c < slots; c++) {
      Slot s = slot_at(first + (size_t)c * slot_size);
      if (s.epoch != r.epoch) continue;
      if (agg == TS_LAST) r.value = s.value;
      if (!s.count) continue;
      if (agg == TS_AVG || agg == TS_SUM)
        r.value += s.value;
      else if ((agg == TS_MIN && (!r.count || s.value < r.value)) ||
               (agg == TS_MAX && (!r.count || s.value > r.value)))
        r.value = s.value;
      r.count += s.count;
    }
    memcpy(out + i * SLOT_BYTES, &r, sizeof r);
  }
}

static uint64_t sort_none(const MapSym *m, const uint8_t *val) { return 0; }
static bool signed_never(const MapSym *m) { return false; }

/* ---- user space: decoding -------------------------------------------- */

/* The latest interval holding a value in any entry shown: every entry's
 * window ends there. */
static void find_latest(const MapSym *m, const uint8_t *const *vals, int n,
                        AggScope *scope) {
  scope->any = false;
  scope->latest = 0;
  for (int e = 0; e < n; e++)
    for (int i = 0; i < m->tseries_intervals; i++) {
      Slot s = slot_at(vals[e] + i * SLOT_BYTES);
      if (s.count && (!scope->any || s.epoch > scope->latest)) {
        scope->any = true;
        scope->latest = s.epoch;
      }
    }
}

/* a / b for any 64 bits a map holds: no trap on INT64_MIN / -1, and a
 * divisor of 0 divides by 1 */
static int64_t quotient(int64_t a, int64_t b) {
  if (b == 0 || b == 1) return a;
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  return a / b;
}

static int64_t quotient_by_count(int64_t a, uint64_t count) {
  return count > INT64_MAX ? 0 : quotient(a, (int64_t)count);
}

/* The intervals of the window that one entry shows: from its first
 * interval holding a value to the latest of the map (at most
 * tseries_intervals of them); none when no entry holds a value. */
static void decode_tseries(const MapSym *m, const uint8_t *val, int64_t div,
                           const AggScope *scope, ValueArena *a,
                           Value *out) {
  memset(out, 0, sizeof *out);
  out->kind = VAL_TSERIES;
  int n = m->tseries_intervals;
  if (!scope->any || !(out->points = value_alloc(a, sizeof(TsPoint) * n)))
    return;
  uint64_t start = scope->latest >= (uint64_t)n - 1
                       ? scope->latest - (n - 1) : 0;
  /* counted, not up to the latest epoch: that may be UINT64_MAX */
  for (int k = 0; k < n && start + (uint64_t)k <= scope->latest; k++) {
    uint64_t e = start + (uint64_t)k;
    Slot s = slot_at(val + (e % n) * SLOT_BYTES);
    bool present = s.count && s.epoch == e;
    if (!present && out->n == 0) continue;
    int64_t v = s.value;
    if (present && m->tseries_agg == TS_AVG)
      v = quotient_by_count(v, s.count);
    out->points[out->n++] = (TsPoint){
        .start_ns = e * (uint64_t)m->tseries_interval, .present = present,
        .value = quotient(v, div)};
  }
}

static const AggOps tseries_ops = {
    .kind = AGG_TSERIES, .check_map = check_tseries_map,
    .value_size = tseries_size, .emit_update = gen_tseries,
    .reduced_size = reduced_size, .reduce = reduce_tseries,
    .sort_number = sort_none, .sorts_signed = signed_never,
    .value_kind = VAL_TSERIES, .decode = decode_tseries,
    .decode_begin = find_latest};

const Builtin builtins_tseries[] = {
    {.name = "tseries", .form = BI_CALL, .min_args = 3, .max_args = -1,
     .check = check_tseries, .agg = &tseries_ops},
    {0},
};
