/* decode: maps and stored values as Values (value.h).
 *
 * A map is read with map_read.c's map_dump (reduced over CPUs, sorted as
 * bpftrace sorts), and each entry print() shows is decoded: its keys as a
 * tuple, its value as its type says or, for an aggregation, as its AggOps
 * decodes it. */
#ifndef LOUPE_OUTPUT_DECODE_H
#define LOUPE_OUTPUT_DECODE_H

#include <stdbool.h>
#include <stdint.h>

#include "model/program.h"
#include "runtime/state.h"
#include "output/value.h"

/* One entry: keys (VAL_TUPLE, one element per key) and value. */
typedef struct DecodedEntry {
  Value keys;
  Value value;
  uint64_t weight;       /* the number it sorts by (a count, a sum, a
                            histogram's total count, an average), before
                            print()'s div */
} DecodedEntry;

typedef struct DecodedMap {
  const char *name;      /* "@name" */
  int nkeys;
  ValueKind agg;         /* what the aggregation's values decode to
                            (VAL_INT, VAL_STATS, VAL_HIST, VAL_TSERIES);
                            VAL_NONE for a map of plain values */
  bool zero_when_empty;  /* empty, it shows 0 (a keyless count()) */
  bool has_stack_key;    /* a key is a kstack or a ustack */
  bool weight_signed;
  int64_t top, div;      /* as print() asked (top 0: all; div >= 1) */
  DecodedEntry *entries; /* what print() shows, in its order: the last
                            `top` unless the aggregation ignores top */
  int n;
  ValueArena arena;
} DecodedMap;

typedef struct DecodeOpts {
  bool frames;           /* stacks with their frames' names too */
} DecodeOpts;

/* Decodes map m (in the kernel as st says) as print(@m, top, div) shows
 * it. Returns 0 or a negative errno. Free with decoded_map_free, whatever
 * it returns. */
int decode_map(const MapSym *m, const MapState *st, int64_t top,
               int64_t div, const DecodeOpts *o, DecodedMap *out);
void decoded_map_free(DecodedMap *d);

/* Whether one of the map's keys is a kstack or a ustack. */
bool map_has_stack_key(const MapSym *m);

/* A value of type t stored in `stored` bytes at p (print(value), a map
 * value), numbers divided by div. */
void decode_value(ValueArena *a, const Type *t, const uint8_t *p, int stored,
                  int64_t div, Value *out);

/* A copy of a C struct, union, array or integer of type ct at mem: its
 * members by name, a char array as a string. */
struct CType;
void decode_cvalue(ValueArena *a, const struct CType *ct, const void *mem,
                   Value *out);

#endif
