/* map_read: reading a script map out of the kernel for printing — each
 * entry's value reduced over CPUs, sorted as bpftrace sorts — and emptying
 * or zeroing it (clear, zero). output/decode.c reads maps through it for
 * every format. */
#ifndef LOUPE_MAP_READ_H
#define LOUPE_MAP_READ_H

#include <stdbool.h>
#include <stdint.h>

#include "builtins/builtin.h"
#include "model/program.h"
#include "runtime/state.h"

/* One map entry, its value reduced over CPUs. */
typedef struct Entry {
  const uint8_t *key;    /* into MapDump.keys */
  const uint8_t *val;    /* into MapDump.vals, reduced_size bytes */
  uint64_t order;        /* what the entry sorts by when sorted by value */
} Entry;

typedef struct MapDump {
  const MapSym *map;
  uint8_t *keys;         /* n * key_size bytes */
  uint8_t *vals;         /* n * reduced_size bytes */
  Entry *entries;
  int n;
} MapDump;

/* The aggregation of the map's values, or NULL for plain values. */
const AggOps *agg_of(const MapSym *m);
int64_t read_s64(const uint8_t *p);
/* An integer of `size` bytes, widened as `sign` says. */
uint64_t read_int(const uint8_t *p, int size, bool sign);
/* Whether the numbers the map prints and sorts by are signed. */
bool value_is_signed(const MapSym *m);
/* Reads every entry of m (in the kernel as st says) into d, values
 * reduced; 0 or a negative errno. */
int map_dump(const MapSym *m, const MapState *st, MapDump *d);
void map_dump_free(MapDump *d);
/* Sorts d's entries as bpftrace prints them. */
void sort_entries(MapDump *d);

#endif
