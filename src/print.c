/* print: bpftrace 0.17's text output for printf records and maps.
 *
 * printf follows bpftrace's way of formatting: every conversion (with the
 * literal text before it) is formatted on its own with the argument widened
 * to 64 bits, so the C length modifier decides how many low bits are shown
 * ("%d" of 0x123456789 prints 591751049, "%lu" of (int32)-1 prints
 * 18446744073709551615). Text after the last conversion, or the whole
 * format when there is none, is written as is ("%%" stays "%%").
 *
 * Maps print as "@name[k1, k2]: value" lines sorted as bpftrace sorts:
 * by value for integer and aggregation values, by key for string values.
 * An empty map prints one empty line; an avg() map is followed by an empty
 * line; at exit two empty lines come before the maps, which follow in name
 * order.
 */
#include "print.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* ---- printf ---------------------------------------------------------- */

/* One conversion of a format string, e.g. "%-08.3lx". */
typedef struct Conv {
  int start, end;      /* [start, end) in the format */
  char flags[8];       /* '-', '+', ' ', '0' as written */
  int width;           /* -1: none */
  int prec;            /* -1: none */
  int bits;            /* value bits the length modifier keeps: 8..64 */
  char letter;         /* d i u x X o c s p */
} Conv;

#define MAX_FIELD_WIDTH 65535

static int parse_number(const char *s, int *i) {
  long v = 0;
  while (s[*i] >= '0' && s[*i] <= '9') {
    if (v <= MAX_FIELD_WIDTH) v = v * 10 + (s[*i] - '0');
    (*i)++;
  }
  return v > MAX_FIELD_WIDTH ? MAX_FIELD_WIDTH + 1 : (int)v;
}

/* The length modifier at s[*i]: how many bits of the widened value the C
 * conversion would read. No modifier means int (32 bits). */
static int parse_length(const char *s, int *i) {
  if (s[*i] == 'h' && s[*i + 1] == 'h') return *i += 2, 8;
  if (s[*i] == 'h') return *i += 1, 16;
  if (s[*i] == 'l' && s[*i + 1] == 'l') return *i += 2, 64;
  if (strchr("lzjt", s[*i]) && s[*i]) return *i += 1, 64;
  return 32;
}

/* Parses the conversion starting at fmt[at] == '%'. Returns false when the
 * text is not one (bpftrace then prints it as literal text). Precision needs
 * digits ("%.d" is text); %c and %s take no length modifier. */
static bool parse_conv(const char *fmt, int at, Conv *cv) {
  int i = at + 1, nflags = 0;
  memset(cv, 0, sizeof *cv);
  while (fmt[i] && strchr("-+ 0", fmt[i])) {
    if (nflags < (int)sizeof cv->flags - 1) cv->flags[nflags++] = fmt[i];
    i++;
  }
  cv->width = -1;
  cv->prec = -1;
  if (fmt[i] >= '1' && fmt[i] <= '9') cv->width = parse_number(fmt, &i);
  if (fmt[i] == '.') {
    i++;
    if (fmt[i] < '0' || fmt[i] > '9') return false;
    cv->prec = parse_number(fmt, &i);
  }
  int len_at = i;
  cv->bits = parse_length(fmt, &i);
  char c = fmt[i];
  if (!c || !strchr("diuxXocsp", c)) return false;
  if ((c == 'c' || c == 's') && i != len_at) return false;
  cv->letter = c;
  cv->start = at;
  cv->end = i + 1;
  return true;
}

/* Finds the next conversion at or after fmt[*pos]; "%%" is skipped as
 * literal text. Returns false at the end of the format. */
static bool next_conv(const char *fmt, int *pos, Conv *cv) {
  for (int i = *pos; fmt[i]; i++) {
    if (fmt[i] != '%') continue;
    if (fmt[i + 1] == '%') {
      i++;
      continue;
    }
    if (parse_conv(fmt, i, cv)) {
      *pos = cv->end;
      return true;
    }
  }
  return false;
}

int printf_parse(const char *fmt, char *conv_out, int max, char *err,
                 size_t errlen) {
  Conv cv;
  int n = 0, pos = 0;
  while (next_conv(fmt, &pos, &cv)) {
    if (cv.width > MAX_FIELD_WIDTH || cv.prec > MAX_FIELD_WIDTH) {
      snprintf(err, errlen, "printf: field width or precision of '%.*s' is "
               "too large (at most %d)", cv.end - cv.start, fmt + cv.start,
               MAX_FIELD_WIDTH);
      return -1;
    }
    if (n == max) {
      snprintf(err, errlen, "printf: too many format specifiers (at most %d "
               "are supported)", max);
      return -1;
    }
    if (conv_out) conv_out[n] = cv.letter;
    n++;
  }
  if (conv_out) conv_out[n] = '\0';
  return n;
}

/* Literal text between conversions goes through C's printf in bpftrace, so
 * "%%" becomes "%"; anything else is copied. */
static void put_literal(const char *s, int len, FILE *out) {
  for (int i = 0; i < len; i++) {
    fputc(s[i], out);
    if (s[i] == '%' && i + 1 < len && s[i + 1] == '%') i++;
  }
}

/* The C conversion spec for cv: its flags, width and precision, then
 * `length` and `letter`. */
static void c_spec(const Conv *cv, const char *length, char letter, char *buf,
                   size_t len) {
  int n = snprintf(buf, len, "%%%s", cv->flags);
  if (cv->width >= 0) n += snprintf(buf + n, len - n, "%d", cv->width);
  if (cv->prec >= 0) n += snprintf(buf + n, len - n, ".%d", cv->prec);
  snprintf(buf + n, len - n, "%s%c", length, letter);
}

/* Keeps the low `bits` bits of v, sign-extending them when `sign`. */
static uint64_t narrow(uint64_t v, int bits, bool sign) {
  switch (bits) {
  case 8: return sign ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
  case 16: return sign ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
  case 32: return sign ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
  default: return v;
  }
}

/* Writes the formatted conversion. Output stops at a NUL byte (from "%c"
 * of 0) because bpftrace handles each piece as a C string. */
static void put_conv(const Conv *cv, const FmtArg *arg, const uint8_t *payload,
                     FILE *out) {
  char spec[48];
  char small[256];
  char *buf = small;
  size_t need = (size_t)(cv->width > 0 ? cv->width : 0) +
                (size_t)(cv->prec > 0 ? cv->prec : 0) + 64;
  if (arg->type.kind == TY_STR) need += arg->type.size;
  if (need > sizeof small) buf = malloc(need);
  if (!buf) return;

  if (arg->type.kind == TY_STR) {
    int size = arg->type.size;
    char *s = malloc(size + 1);
    if (s) {
      memcpy(s, payload + arg->offset, size);
      s[size] = '\0';
      c_spec(cv, "", 's', spec, sizeof spec);
      if (cv->letter != 's') snprintf(spec, sizeof spec, "%%s");
      snprintf(buf, need, spec, s);
      free(s);
    } else {
      buf[0] = '\0';
    }
  } else {
    uint64_t v;
    memcpy(&v, payload + arg->offset, 8);
    switch (cv->letter) {
    case 'd':
    case 'i':
      c_spec(cv, "ll", 'd', spec, sizeof spec);
      snprintf(buf, need, spec, (long long)narrow(v, cv->bits, true));
      break;
    case 'u':
    case 'x':
    case 'X':
    case 'o':
      c_spec(cv, "ll", cv->letter, spec, sizeof spec);
      snprintf(buf, need, spec,
               (unsigned long long)narrow(v, cv->bits, false));
      break;
    case 'c':
      c_spec(cv, "", 'c', spec, sizeof spec);
      snprintf(buf, need, spec, (int)(unsigned char)v);
      break;
    case 'p':
      c_spec(cv, "", 'p', spec, sizeof spec);
      snprintf(buf, need, spec, (void *)(uintptr_t)v);
      break;
    default: /* %s given an integer: the checker forbids it */
      snprintf(buf, need, "%" PRId64, (int64_t)v);
      break;
    }
  }
  fputs(buf, out);
  if (buf != small) free(buf);
}

void print_printf(const PrintfDef *p, const void *payload, FILE *out) {
  const char *fmt = p->fmt;
  int pos = 0, done = 0;
  Conv cv;
  for (int i = 0; i < p->nargs && next_conv(fmt, &pos, &cv); i++) {
    put_literal(fmt + done, cv.start - done, out);
    put_conv(&cv, &p->args[i], payload, out);
    done = cv.end;
  }
  fputs(fmt + done, out);
}

/* ---- maps ------------------------------------------------------------- */

/* One map entry, its value reduced over CPUs. */
typedef struct Entry {
  const uint8_t *key;    /* into MapDump.keys */
  uint64_t num;          /* integer and aggregation values */
  const char *str;       /* TY_STR values, NUL-terminated */
} Entry;

typedef struct MapDump {
  const MapSym *map;
  uint8_t *keys;         /* n * key_size bytes */
  char *strs;            /* n * (value_size + 1) bytes for TY_STR values */
  Entry *entries;
  int n;
} MapDump;

static bool map_is_percpu(const MapSym *m) {
  return m->bpf_type == BPF_MAP_TYPE_PERCPU_HASH ||
         m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY ||
         m->bpf_type == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

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

static bool value_is_signed(const MapSym *m) {
  const Type *t = &m->value_type;
  if (t->kind == TY_AGG) {
    if (t->agg == AGG_COUNT) return false;
    if (t->agg == AGG_AVG) return true;
  }
  return t->is_signed;
}

static int64_t read_s64(const uint8_t *p) {
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* An integer value of `size` bytes, widened as `sign` says. */
static uint64_t read_int(const uint8_t *p, int size, bool sign) {
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

/* min() and max() keep { value, seen } per CPU; CPUs that never stored a
 * value do not count. Nothing seen anywhere reads as 0 (as after zero()). */
static uint64_t reduce_minmax(const MapSym *m, const uint8_t *buf, int slots) {
  bool is_min = m->value_type.agg == AGG_MIN;
  bool sign = m->value_type.is_signed;
  bool any = false;
  uint64_t best = 0;
  for (int c = 0; c < slots; c++) {
    const uint8_t *s = buf + (size_t)c * slot_size(m);
    if (!read_s64(s + 8)) continue;
    uint64_t v = (uint64_t)read_s64(s);
    bool less = sign ? (int64_t)v < (int64_t)best : v < best;
    bool greater = v != best && !less;
    if (!any || (is_min ? less : greater)) best = v;
    any = true;
  }
  return best;
}

/* The value bpftrace prints for an aggregation, from the per-CPU slots. */
static uint64_t reduce_agg(const MapSym *m, const uint8_t *buf, int slots) {
  int64_t total = 0, count = 0;
  switch (m->value_type.agg) {
  case AGG_MIN:
  case AGG_MAX:
    return reduce_minmax(m, buf, slots);
  case AGG_AVG:
    for (int c = 0; c < slots; c++) {
      const uint8_t *s = buf + (size_t)c * slot_size(m);
      total += read_s64(s);
      count += read_s64(s + 8);
    }
    return count ? (uint64_t)(total / count) : 0;
  default: /* count, sum */
    for (int c = 0; c < slots; c++)
      total += read_s64(buf + (size_t)c * slot_size(m));
    return (uint64_t)total;
  }
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
  char *ns = realloc(d->strs, (size_t)*cap * (m->value_size + 1));
  if (ns) d->strs = ns;
  return nk && ne && ns ? 0 : -ENOMEM;
}

/* Reduces the looked-up value of entry e. */
static void entry_set_value(MapDump *d, Entry *e, const uint8_t *value) {
  const MapSym *m = d->map;
  e->num = 0;
  e->str = NULL;
  if (m->value_type.kind == TY_STR) {
    char *s = d->strs + (size_t)(e - d->entries) * (m->value_size + 1);
    memcpy(s, value, m->value_size);
    s[m->value_size] = '\0';
    e->str = s;
  } else if (m->value_type.kind == TY_AGG) {
    e->num = reduce_agg(m, value, value_slots(m));
  } else {
    e->num = read_int(value, m->value_size, m->value_type.is_signed);
  }
}

/* Reads every entry of the map. Returns 0 or a negative errno. */
static int map_dump(const MapSym *m, MapDump *d) {
  memset(d, 0, sizeof *d);
  d->map = m;
  int cap = 0, err = 0;
  uint8_t *value = calloc(1, value_buf_size(m));
  uint8_t *key = calloc(1, m->key_size);
  uint8_t *prev = calloc(1, m->key_size);
  bool first = true;
  if (!value || !key || !prev) err = -ENOMEM;
  while (!err && bpf_map_get_next_key(m->fd, first ? NULL : prev, key) == 0) {
    first = false;
    memcpy(prev, key, m->key_size);
    /* A key deleted since get_next_key is simply skipped. */
    if (bpf_map_lookup_elem(m->fd, key, value) != 0) continue;
    if ((err = map_dump_grow(d, &cap))) break;
    memcpy(d->keys + (size_t)d->n * m->key_size, key, m->key_size);
    entry_set_value(d, &d->entries[d->n], value);
    d->n++;
  }
  for (int i = 0; i < d->n; i++)
    d->entries[i].key = d->keys + (size_t)i * m->key_size;
  free(value);
  free(key);
  free(prev);
  return err;
}

static void map_dump_free(MapDump *d) {
  free(d->keys);
  free(d->strs);
  free(d->entries);
}

/* Key order: key by key, integers as unsigned 64-bit numbers (so -1 sorts
 * after every positive key, as in bpftrace), strings byte-wise. */
static int compare_keys(const MapSym *m, const uint8_t *a, const uint8_t *b) {
  for (int i = 0; i < m->nkeys; i++) {
    const uint8_t *ka = a + m->key_off[i], *kb = b + m->key_off[i];
    int r;
    if (m->key_types[i].kind == TY_STR) {
      r = strncmp((const char *)ka, (const char *)kb, m->key_types[i].size);
    } else {
      uint64_t va = (uint64_t)read_s64(ka), vb = (uint64_t)read_s64(kb);
      r = va < vb ? -1 : va > vb;
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
  if (a->num != b->num) {
    if (value_is_signed(sorting_map))
      return (int64_t)a->num < (int64_t)b->num ? -1 : 1;
    return a->num < b->num ? -1 : 1;
  }
  return compare_keys(sorting_map, a->key, b->key);
}

static int compare_by_key(const void *pa, const void *pb) {
  const Entry *a = pa, *b = pb;
  return compare_keys(sorting_map, a->key, b->key);
}

static void sort_entries(MapDump *d) {
  if (d->n == 0) return;
  sorting_map = d->map;
  bool by_key = d->map->value_type.kind == TY_STR;
  qsort(d->entries, d->n, sizeof(Entry),
        by_key ? compare_by_key : compare_by_value);
  sorting_map = NULL;
}

/* bpftrace prints 8-byte integer keys as signed whatever their type, and
 * narrower ones by their signedness (keys are stored widened to 8 bytes). */
static void print_key(const MapSym *m, int i, const uint8_t *key, FILE *out) {
  const uint8_t *k = key + m->key_off[i];
  const Type *t = &m->key_types[i];
  if (t->kind == TY_STR) {
    fprintf(out, "%.*s", t->size, (const char *)k);
  } else if (t->is_signed || t->size >= 8) {
    fprintf(out, "%" PRId64, read_s64(k));
  } else {
    fprintf(out, "%" PRIu64, (uint64_t)read_s64(k));
  }
}

static void print_entry(const MapSym *m, const Entry *e, FILE *out) {
  fputs(m->name, out);
  if (m->nkeys > 0) {
    fputc('[', out);
    for (int i = 0; i < m->nkeys; i++) {
      if (i) fputs(", ", out);
      print_key(m, i, e->key, out);
    }
    fputc(']', out);
  }
  fputs(": ", out);
  if (e->str)
    fputs(e->str, out);
  else if (value_is_signed(m))
    fprintf(out, "%" PRId64, (int64_t)e->num);
  else
    fprintf(out, "%" PRIu64, e->num);
  fputc('\n', out);
}

static bool is_agg(const MapSym *m, AggKind agg) {
  return m->value_type.kind == TY_AGG && m->value_type.agg == agg;
}

int print_map(const MapSym *m, FILE *out) {
  MapDump d;
  int err = map_dump(m, &d);
  if (err) {
    map_dump_free(&d);
    return err;
  }
  sort_entries(&d);
  for (int i = 0; i < d.n; i++) print_entry(m, &d.entries[i], out);
  if (d.n == 0) {
    /* bpftrace keeps a keyless count() in an array, which always has its
     * slot: it prints 0 where other empty maps print an empty line. */
    if (m->nkeys == 0 && is_agg(m, AGG_COUNT))
      fprintf(out, "%s: 0\n", m->name);
    else
      fputc('\n', out);
  }
  if (is_agg(m, AGG_AVG)) fputc('\n', out);
  map_dump_free(&d);
  return 0;
}

static int compare_map_names(const void *pa, const void *pb) {
  const MapSym *a = *(const MapSym *const *)pa;
  const MapSym *b = *(const MapSym *const *)pb;
  return strcmp(a->name, b->name);
}

void print_all_maps(const Compiled *c, FILE *out) {
  const MapSym **order = malloc(sizeof(MapSym *) * (c->nmaps + 1));
  int n = 0;
  for (int i = 0; i < c->nmaps; i++)
    if (!c->maps[i]->internal && c->maps[i]->fd >= 0) order[n++] = c->maps[i];
  if (n > 0) qsort(order, n, sizeof *order, compare_map_names);
  fputs("\n\n", out);
  for (int i = 0; i < n; i++) print_map(order[i], out);
  free(order);
}

/* Every key of the map, read before any is changed (deleting while walking
 * with get_next_key would restart the walk). Returns the count, or a
 * negative errno. */
static int map_keys(const MapSym *m, uint8_t **keys_out) {
  int n = 0, cap = 0;
  uint8_t *keys = NULL, *prev = NULL;
  uint8_t *key = malloc(m->key_size);
  if (!key) return -ENOMEM;
  while (bpf_map_get_next_key(m->fd, prev, key) == 0) {
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

int map_clear(const MapSym *m) {
  uint8_t *keys = NULL;
  int n = map_keys(m, &keys);
  if (n < 0) return n;
  for (int i = 0; i < n; i++)
    bpf_map_delete_elem(m->fd, keys + (size_t)i * m->key_size);
  free(keys);
  return 0;
}

int map_zero(const MapSym *m) {
  uint8_t *keys = NULL;
  int n = map_keys(m, &keys);
  if (n < 0) return n;
  uint8_t *zero = calloc(1, value_buf_size(m));
  if (!zero) {
    free(keys);
    return -ENOMEM;
  }
  int err = 0;
  for (int i = 0; i < n; i++) {
    /* BPF_EXIST: a key deleted meanwhile stays deleted. */
    if (bpf_map_update_elem(m->fd, keys + (size_t)i * m->key_size, zero,
                            BPF_EXIST) != 0 && errno != ENOENT)
      err = -errno;
  }
  free(zero);
  free(keys);
  return err;
}
