/* json: bpftrace's JSON output (-f json), one record per line.
 *
 * A map is {"type": "map"|"hist"|"stats"|"tseries", "data": {"@name":
 * value}}, a keyed map's value an object with a member per entry, named
 * by the keys as text shows them (an enum's by its number) joined with
 * ','; an empty map prints nothing (a keyless count() 0). A record a
 * builtin sent is {"type": TYPE, "data": value}.
 *
 * Values: strings quoted, tuples and C arrays [1,"a"], records and
 * structs {"a": 1}, bools true/false, pointers and enums as numbers,
 * integers that read as names (times, symbols, stacks) as those names,
 * buf() bytes as the string text shows; a histogram is [{"min": 4,
 * "max": 7, "count": 1}, ...] (the bucket below has no min, the one above
 * no max), stats() {"count": c, "average": a, "total": t}, a time series
 * [{"interval_start": "1970-01-01 00:00:00.500000000", "value": v}, ...],
 * the intervals holding a value. */
#include "output/encoder.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void json_put_string(const char *s, size_t len, FILE *out) {
  fputc('"', out);
  for (size_t i = 0; i < len; i++) {
    signed char c = (signed char)s[i];
    switch (c) {
    case '"': fputs("\\\"", out); break;
    case '\\': fputs("\\\\", out); break;
    case '\n': fputs("\\n", out); break;
    case '\r': fputs("\\r", out); break;
    case '\t': fputs("\\t", out); break;
    default:
      /* bpftrace tests the byte as a signed char: bytes of 0x80 and above
       * come out as \uffffffNN, like control characters. */
      if (c <= 0x1f)
        fprintf(out, "\\u%04x", (unsigned)(int)c);
      else
        fputc(c, out);
    }
  }
  fputc('"', out);
}

/* Text written to a memory stream, then put as a JSON string. */
typedef struct MemText {
  FILE *f;
  char *buf;
  size_t len;
} MemText;

static FILE *memtext_open(MemText *t) {
  t->buf = NULL;
  t->len = 0;
  t->f = open_memstream(&t->buf, &t->len);
  return t->f;
}

static void memtext_put_json(MemText *t, FILE *out) {
  if (t->f) fclose(t->f);
  json_put_string(t->buf ? t->buf : "", t->buf ? t->len : 0, out);
  free(t->buf);
}

static void put_i128(__int128 v, FILE *out) {
  if (v < 0)
    fprintf(out, "-%" PRIu64, (uint64_t)-v);
  else
    fprintf(out, "%" PRIu64, (uint64_t)v);
}

static void put_hist(const Hist *h, FILE *out) {
  fputc('[', out);
  for (int i = 0; i < h->n; i++) {
    const HistBucket *b = &h->buckets[i];
    fputs(i ? ", {" : "{", out);
    if (!b->below) {
      fputs("\"min\": ", out);
      put_i128(b->lo, out);
      fputs(", ", out);
    }
    if (!b->above) {
      fputs("\"max\": ", out);
      put_i128(b->hi - 1, out);
      fputs(", ", out);
    }
    fprintf(out, "\"count\": %" PRIu64 "}", b->count / h->div);
  }
  fputc(']', out);
}

static void put_tseries(const TsPoint *pts, int np, FILE *out) {
  bool sep = false;
  fputc('[', out);
  for (int i = 0; i < np; i++) {
    if (!pts[i].present) continue;
    fputs(sep ? ", {\"interval_start\": \"" : "{\"interval_start\": \"", out);
    sep = true;
    /* "1970-01-01 00:00:00.500000000" */
    output_put_time(pts[i].start_ns, "%Y-%m-%d %H:%M:%S", 9, out);
    fprintf(out, "\", \"value\": %" PRId64 "}", pts[i].value);
  }
  fputc(']', out);
}

static void put_number(const Value *v, FILE *out) {
  if (v->is_signed)
    fprintf(out, "%" PRId64, (int64_t)v->num);
  else
    fprintf(out, "%" PRIu64, v->num);
}

static void put_value(const Value *v, FILE *out) {
  switch (v->kind) {
  case VAL_NONE:
    fputs("null", out);
    break;
  case VAL_INT:
    if (v->hint == INT_BOOL)
      fputs(v->num ? "true" : "false", out);
    else if (v->text && v->hint == INT_NAMED)
      json_put_string(v->text, strlen(v->text), out);
    else
      put_number(v, out);
    break;
  case VAL_STR:
    json_put_string(v->bytes, v->len, out);
    break;
  case VAL_BUF:
  case VAL_STACK: {
    MemText mt;
    if (memtext_open(&mt)) text_put_value(v, mt.f);
    memtext_put_json(&mt, out);
    break;
  }
  case VAL_TUPLE:
  case VAL_ARRAY:
  case VAL_RECORD: {
    bool rec = v->kind == VAL_RECORD;
    fputc(rec ? '{' : '[', out);
    for (int i = 0; i < v->n; i++) {
      if (i) fputs(rec ? ", " : ",", out);
      if (rec) {
        json_put_string(v->names[i], strlen(v->names[i]), out);
        fputs(": ", out);
      }
      put_value(&v->elems[i], out);
    }
    fputc(rec ? '}' : ']', out);
    break;
  }
  case VAL_HIST:
    put_hist(&v->hist, out);
    break;
  case VAL_STATS:
    if (v->stats.average_only)
      fprintf(out, "%" PRId64, v->stats.average);
    else
      fprintf(out, "{\"count\": %" PRId64 ", \"average\": %" PRId64
              ", \"total\": %" PRId64 "}", v->stats.count,
              v->stats.average, v->stats.total);
    break;
  case VAL_TSERIES:
    put_tseries(v->points, v->n, out);
    break;
  }
}

/* A map's member name: its keys as text shows them, joined by ','. */
static void put_keys(const Value *keys, FILE *out) {
  for (int i = 0; i < keys->n; i++) {
    const Value *k = &keys->elems[i];
    if (i) fputc(',', out);
    if (k->kind == VAL_INT && k->hint == INT_ENUM)
      put_number(k, out);
    else
      text_put_value(k, out);
  }
}

static const char *record_type(ValueKind agg) {
  switch (agg) {
  case VAL_HIST: return "hist";
  case VAL_STATS: return "stats";
  case VAL_TSERIES: return "tseries";
  default: return "map";
  }
}

static void json_map(Output *o, const DecodedMap *d) {
  FILE *out = o->out;
  if (d->n == 0 && !d->zero_when_empty) return;
  fprintf(out, "{\"type\": \"%s\", \"data\": {", record_type(d->agg));
  json_put_string(d->name, strlen(d->name), out);
  fputs(": ", out);
  if (d->n == 0) fputc('0', out);
  if (d->nkeys > 0) fputc('{', out);
  for (int i = 0; i < d->n; i++) {
    const DecodedEntry *e = &d->entries[i];
    if (i) fputs(", ", out);
    if (d->nkeys > 0) {
      MemText mt;
      if (memtext_open(&mt)) put_keys(&e->keys, mt.f);
      memtext_put_json(&mt, out);
      fputs(": ", out);
    }
    put_value(&e->value, out);
  }
  if (d->nkeys > 0) fputc('}', out);
  fputs("}}\n", out);
}

static void json_maps_begin(Output *o, const MapSym *const *maps, int n,
                            bool at_exit) {
  /* bpftrace writes exit's two empty lines in JSON too */
  if (at_exit) fputs("\n\n", o->out);
}

static void json_event(Output *o, const char *type, const Value *v,
                       bool line) {
  fprintf(o->out, "{\"type\": \"%s\", \"data\": ", type);
  put_value(v, o->out);
  fputs("}\n", o->out);
}

const Encoder json_encoder = {
    .name = "json",
    .maps_begin = json_maps_begin,
    .map = json_map,
    .event = json_event,
};
