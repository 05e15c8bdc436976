/* map_read: a script map read out of the kernel (values reduced over
 * CPUs, entries sorted as bpftrace sorts them), and cleared or zeroed. */
#include "runtime/map_read.h"
#include "runtime/print.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- maps: reading and reducing ----------------------------------------- */

/* Bytes one CPU's value takes in a lookup buffer. */
static int slot_size(const MapSym *m) { return (m->value_size + 7) & ~7; }

/* Bytes of the buffer bpf_map_lookup_elem fills. */
static size_t value_buf_size(const MapSym *m) {
  if (!map_is_percpu(m)) return m->value_size;
  int ncpus = libbpf_num_possible_cpus();
  if (ncpus < 1) ncpus = 1;
  return (size_t)ncpus * slot_size(m);
}

static int value_slots(const MapSym *m) {
  return map_is_percpu(m) ? (int)(value_buf_size(m) / slot_size(m)) : 1;
}

/* The aggregation of the map's values, or NULL for plain values. */
const AggOps *agg_of(const MapSym *m) {
  return m->value_type.kind == TY_AGG ? agg_ops(m->value_type.agg) : NULL;
}

int64_t read_s64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* An integer of `size` bytes, widened as `sign` says. */
uint64_t read_int(const uint8_t *p, int size, bool sign) {
  switch (size) {
  case 1: return sign ? (uint64_t)(int64_t)(int8_t)p[0] : p[0];
  case 2: {
    uint16_t v;
    memcpy(&v, p, 2);
    return sign ? (uint64_t)(int64_t)(int16_t)v : v;
  }
  case 4: {
    uint32_t v;
    memcpy(&v, p, 4);
    return sign ? (uint64_t)(int64_t)(int32_t)v : v;
  }
  default: return (uint64_t)read_s64(p);
  }
}

/* Bytes of an entry's value once reduced over CPUs: the stored value, or
 * what its aggregation reduces to. */
static int reduced_size(const MapSym *m) {
  const AggOps *a = agg_of(m);
  return a ? a->reduced_size(m) : m->value_size;
}

/* Reduces a looked-up value into `out` (reduced_size bytes). */
static void reduce_value(const MapSym *m, const uint8_t *buf, uint8_t *out) {
  const AggOps *a = agg_of(m);
  if (a)
    a->reduce(m, buf, value_slots(m), slot_size(m), out);
  else
    memcpy(out, buf, m->value_size);
}

/* Whether the numbers the map prints and sorts by are signed. */
bool value_is_signed(const MapSym *m) {
  const AggOps *a = agg_of(m);
  return a ? a->sorts_signed(m) : m->value_type.is_signed;
}

/* bpftrace sorts integer and aggregation values by value (hist and lhist
 * by their total count, avg and stats by their average), everything else
 * (strings, tuples, buffers) by key. */
static bool sorts_by_value(const MapSym *m) {
  return m->value_type.kind == TY_INT || m->value_type.kind == TY_AGG;
}

static uint64_t sort_number(const MapSym *m, const uint8_t *val) {
  const AggOps *a = agg_of(m);
  if (a) return a->sort_number(m, val);
  if (m->value_type.kind != TY_INT) return 0;
  return read_int(val, m->value_size, m->value_type.is_signed);
}

/* Grows the dump's arrays to hold at least one more entry. */
static int map_dump_grow(MapDump *d, int *cap) {
  const MapSym *m = d->map;
  if (d->n < *cap) return 0;
  *cap = *cap ? *cap * 2 : 64;
  uint8_t *nk = realloc(d->keys, (size_t)*cap * m->key_size);
  if (nk) d->keys = nk;
  Entry *ne = realloc(d->entries, (size_t)*cap * sizeof(Entry));
  if (ne) d->entries = ne;
  uint8_t *nv = realloc(d->vals, (size_t)*cap * ((reduced_size(m) + 8) & ~7));
  if (nv) d->vals = nv;
  return nk && ne && nv ? 0 : -ENOMEM;
}

/* A keyless aggregation in a per-CPU array (lang/check.c, keyless_array)
 * always has its slot: all zero, on every CPU, it holds no value yet
 * (bpftrace 0.17 then prints nothing), unless zero() made it so. */
static bool empty_array_slot(const MapSym *m, const MapState *st,
                             const uint8_t *value) {
  if (m->bpf_type != BPF_MAP_TYPE_PERCPU_ARRAY || st->zeroed) return false;
  size_t n = value_buf_size(m);
  for (size_t i = 0; i < n; i++)
    if (value[i]) return false;
  return true;
}

/* Reads every entry of the map. Returns 0 or a negative errno. */
int map_dump(const MapSym *m, const MapState *st, MapDump *d) {
  memset(d, 0, sizeof *d);
  d->map = m;
  /* Room for a NUL after a string value; 8-aligned for the buckets. */
  int cap = 0, err = 0, vsize = (reduced_size(m) + 8) & ~7;
  uint8_t *value = calloc(1, value_buf_size(m));
  uint8_t *key = calloc(1, m->key_size);
  uint8_t *prev = calloc(1, m->key_size);
  bool first = true;
  if (!value || !key || !prev) err = -ENOMEM;
  while (!err && bpf_map_get_next_key(st->fd, first ? NULL : prev, key) == 0) {
    first = false;
    memcpy(prev, key, m->key_size);
    /* A key deleted since get_next_key is simply skipped. */
    if (bpf_map_lookup_elem(st->fd, key, value) != 0) continue;
    if (empty_array_slot(m, st, value)) continue;
    if (m->direct && !read_s64(value + 8)) continue;   /* never set */
    if ((err = map_dump_grow(d, &cap))) break;
    memcpy(d->keys + (size_t)d->n * m->key_size, key, m->key_size);
    uint8_t *val = d->vals + (size_t)d->n * vsize;
    reduce_value(m, value, val);
    val[vsize - 1] = '\0';  /* a full string value still ends */
    d->entries[d->n].order = sort_number(m, val);
    d->n++;
  }
  for (int i = 0; i < d->n; i++) {
    d->entries[i].key = d->keys + (size_t)i * m->key_size;
    d->entries[i].val = d->vals + (size_t)i * vsize;
  }
  free(value);
  free(key);
  free(prev);
  return err;
}

void map_dump_free(MapDump *d) {
  free(d->keys);
  free(d->vals);
  free(d->entries);
}

/* ---- maps: sorting ------------------------------------------------------ */

/* Key order: key by key, integers as unsigned 64-bit numbers (so -1 sorts
 * after every positive key, as in bpftrace), strings byte-wise, anything
 * else by its bytes. */
static int compare_keys(const MapSym *m, const uint8_t *a, const uint8_t *b) {
  for (int i = 0; i < m->nkeys; i++) {
    const uint8_t *ka = a + m->key_off[i], *kb = b + m->key_off[i];
    const Type *t = &m->key_types[i];
    int r;
    if (t->kind == TY_STR) {
      r = strncmp((const char *)ka, (const char *)kb, t->size);
    } else if (t->kind == TY_INT) {
      uint64_t va = (uint64_t)read_s64(ka), vb = (uint64_t)read_s64(kb);
      r = va < vb ? -1 : va > vb;
    } else {
      int end = i + 1 < m->nkeys ? m->key_off[i + 1] : m->key_size;
      r = memcmp(ka, kb, end - m->key_off[i]);
    }
    if (r) return r;
  }
  return 0;
}

/* qsort has no context argument; the map being sorted is held here only for
 * the duration of one sort. */
static const MapSym *sorting_map;

/* By value, ties by key (bpftrace leaves ties in hash order, which is
 * arbitrary; a fixed order makes output reproducible). */
static int compare_by_value(const void *pa, const void *pb) {
  const Entry *a = pa, *b = pb;
  if (a->order != b->order) {
    if (value_is_signed(sorting_map))
      return (int64_t)a->order < (int64_t)b->order ? -1 : 1;
    return a->order < b->order ? -1 : 1;
  }
  return compare_keys(sorting_map, a->key, b->key);
}

static int compare_by_key(const void *pa, const void *pb) {
  const Entry *a = pa, *b = pb;
  return compare_keys(sorting_map, a->key, b->key);
}

void sort_entries(MapDump *d) {
  if (d->n == 0) return;
  sorting_map = d->map;
  qsort(d->entries, d->n, sizeof(Entry),
        sorts_by_value(d->map) ? compare_by_value : compare_by_key);
  sorting_map = NULL;
}

/* ---- clear and zero ---------------------------------------------------- */

/* Every key of the map, read before any is changed (deleting while walking
 * with get_next_key would restart the walk). Returns the count, or a
 * negative errno. */
static int map_keys(const MapSym *m, int fd, uint8_t **keys_out) {
  int n = 0, cap = 0;
  uint8_t *keys = NULL, *prev = NULL;
  uint8_t *key = malloc(m->key_size);
  if (!key) return -ENOMEM;
  while (bpf_map_get_next_key(fd, prev, key) == 0) {
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      uint8_t *nk = realloc(keys, (size_t)cap * m->key_size);
      if (!nk) {
        free(keys);
        free(key);
        return -ENOMEM;
      }
      keys = nk;
    }
    prev = keys + (size_t)n * m->key_size;
    memcpy(prev, key, m->key_size);
    n++;
  }
  free(key);
  *keys_out = keys;
  return n;
}

/* MapState.zeroed and .cleared: which of zero() and clear() came last. */
static void set_zeroed(MapState *st, bool zeroed) {
  st->zeroed = zeroed;
  st->cleared = !zeroed;
}

int map_clear(const MapSym *m, MapState *st) {
  if (m->direct) {   /* value and set flag 0: as if never set */
    uint32_t key = 0;
    uint64_t none[2] = {0, 0};
    return bpf_map_update_elem(st->fd, &key, none, BPF_ANY) ? -errno : 0;
  }
  if (m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY) {
    /* an array's slot cannot go: zeroed, it holds no value again */
    int err = map_zero(m, st);
    set_zeroed(st, false);
    return err;
  }
  uint8_t *keys = NULL;
  int n = map_keys(m, st->fd, &keys);
  if (n < 0) return n;
  for (int i = 0; i < n; i++)
    bpf_map_delete_elem(st->fd, keys + (size_t)i * m->key_size);
  free(keys);
  return 0;
}

int map_zero(const MapSym *m, MapState *st) {
  if (m->direct) {   /* 0, if it was set */
    uint32_t key = 0;
    uint64_t slot[2];
    if (bpf_map_lookup_elem(st->fd, &key, slot) || !slot[1]) return 0;
    slot[0] = 0;
    return bpf_map_update_elem(st->fd, &key, slot, BPF_ANY) ? -errno : 0;
  }
  uint8_t *keys = NULL;
  int n = map_keys(m, st->fd, &keys);
  if (n < 0) return n;
  uint8_t *zero = calloc(1, value_buf_size(m));
  if (!zero) {
    free(keys);
    return -ENOMEM;
  }
  int err = 0;
  for (int i = 0; i < n; i++) {
    /* BPF_EXIST: a key deleted meanwhile stays deleted. */
    if (bpf_map_update_elem(st->fd, keys + (size_t)i * m->key_size, zero,
                            BPF_EXIST) != 0 && errno != ENOENT)
      err = -errno;
  }
  free(zero);
  free(keys);
  set_zeroed(st, true);
  return err;
}
