/* map: the layout of a script map, fixed once check (and plan) made it —
 * what the kernel stores for each entry and how its bytes read. It is all
 * a reader needs besides the map's fd: print (runtime/map_read.c is
 * loupe's reader) and whatever exports or decodes the maps elsewhere. */
#ifndef LOUPE_MODEL_MAP_H
#define LOUPE_MODEL_MAP_H

#include <errno.h>
#include <linux/bpf.h>
#include <stdbool.h>
#include <stdint.h>

#include "lang/ast.h"

#define MAX_MAP_KEYS 8
#define DEFAULT_MAP_KEYS 4096  /* BPFTRACE_MAP_KEYS_MAX default */

/* A map as the script names it ("@x", or "@" for the unnamed one), with the
 * layout the kernel stores it in.
 *
 * Keys are packed in order, each at key_off[i]: an integer key takes 8
 * bytes (sign- or zero-extended), a string key its buffer size, any other
 * value_cap() of its type (lang/ast.h). A map used without keys has one
 * 8-byte key, always 0; a keyless aggregation but sum() is a one-slot
 * per-CPU array (lang/check.c, keyless_array), whose key is 4 bytes (0).
 *
 * Values: TY_INT is an 8-byte integer, TY_STR a buffer of value_size bytes,
 * other types value_cap() bytes. A direct map (a keyless map of integers)
 * holds 16 bytes: the value, then 1 once it was set. Aggregations live in
 * per-CPU maps, where a lookup gives each possible CPU's slot, (value_size
 * + 7) & ~7 bytes apart; each CPU's slot is:
 *   AGG_COUNT, AGG_SUM: one 8-byte integer (u64 / s64), summed over CPUs;
 *   AGG_MIN, AGG_MAX:   { int64 value; uint64 seen } (seen != 0 once the CPU
 *                       stored a value), combined over CPUs that have seen;
 *   AGG_AVG:            { int64 total; uint64 count }, summed over CPUs, and
 *                       printed as total / count.
 *   AGG_STATS:          { int64 total; uint64 count }, like avg, printed as
 *                       "count C, average A, total T".
 *   AGG_HIST:           uint64 buckets[hist_buckets(hist_bits)], summed:
 *                       [0] counts values < 0, [1] the value 0, and for
 *                       v >= 1 with e = floor(log2 v):
 *                       [2 + (e << bits) + ((v >> (e - bits)) & mask)]
 *                       (for e < bits the low bits are shifted left
 *                       instead), mask = (1 << bits) - 1; bits is 0 by
 *                       default, so [2 + e] counts [2^e, 2^(e+1)).
 *   AGG_LHIST:          uint64 buckets[(max - min) / step + 2], summed:
 *                       [0] counts v < min, [1 + (v - min) / step] the
 *                       values in [min, max), the last one v >= max.
 *   AGG_TSERIES:        tseries_intervals slots of { uint64 epoch; int64
 *                       value; uint64 count }, epoch = time / interval, in
 *                       slot epoch % tseries_intervals; count 0: empty.
 * A keyless per-CPU array always has its slot: all zero, it holds no value
 * yet, unless zero() made it so (the run's MapState.zeroed says which).
 *
 * The fields from `internal` on say how loupe's programs use the map; a
 * reader needs none of them. */
typedef struct MapSym {
  char *name;
  int id;                          /* index in Compiled.maps */
  Span first_use;
  int nkeys;                       /* 0 for a keyless map */
  Type key_types[MAX_MAP_KEYS];
  const char *key_names[MAX_MAP_KEYS];  /* each key's expression where it is
                                           a builtin or a field ("comm",
                                           "filename"), the same wherever
                                           the map is used; else NULL or
                                           "" (named differently) */
  int key_off[MAX_MAP_KEYS];
  int key_size;
  Type value_type;                 /* TY_AGG: value_type.agg is the kind */
  int value_size;                  /* per CPU for per-CPU maps */
  uint32_t bpf_type;               /* BPF_MAP_TYPE_HASH, _PERCPU_HASH,
                                      _PERCPU_ARRAY, _ARRAY (direct) */
  uint32_t max_entries;
  bool direct;                     /* a keyless map of integers in a
                                      one-slot array, addressed directly
                                      (no lookup): the value, then 1 once
                                      it is set (lang/check.c) */
  bool agg_params_set;             /* hist_bits / lhist_* are known */
  int hist_bits;                   /* AGG_HIST */
  bool hist_sum;                   /* AGG_HIST, AGG_LHIST: one more int64
                                      after the buckets, the sum of the
                                      values counted (metrics' _sum) */
  int64_t lhist_min, lhist_max, lhist_step;  /* AGG_LHIST */
  int64_t tseries_interval;        /* AGG_TSERIES: ns per interval, */
  int tseries_intervals;           /* how many are kept, */
  int tseries_agg;                 /* how values in one combine */

  bool internal;                   /* loupe's own (e.g. the elapsed base):
                                      never printed */
  bool may_miss;                   /* the script calls delete() or
                                      has_key() on it: its entries can be
                                      missing, so it stays a hash */
  char *init_values;               /* an internal array's contents
                                      (value_size bytes per entry),
                                      written after creation; or NULL */
  int full_slot;                   /* the counter of updates a full map
                                      refused (loupe_counts), -E2BIG each;
                                      of a stack map, the stacks it had
                                      no room for, -EEXIST each; 0: none */
} MapSym;

/* How many times its full_slot counted, from the slot's sum (or the
 * difference of two sums): the programs add the helper's own error each
 * time, so that no register need hold a 1. */
static inline uint64_t map_full_count(const MapSym *m, uint64_t sum) {
  int err = m->bpf_type == BPF_MAP_TYPE_STACK_TRACE ? EEXIST : E2BIG;
  return (uint64_t)-(int64_t)sum / (uint64_t)err;
}

/* Whether each CPU has its own copy of m's values. */
static inline bool map_is_percpu(const MapSym *m) {
  return m->bpf_type == BPF_MAP_TYPE_PERCPU_HASH ||
         m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         m->bpf_type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

static inline int hist_buckets(int bits) { return 2 + (64 << bits); }
static inline int lhist_buckets(const MapSym *m) {
  return (int)((m->lhist_max - m->lhist_min) / m->lhist_step) + 2;
}

#endif
