/* text: bpftrace's text output.
 *
 * Maps print as "@name[k1, k2]: value" lines in print()'s order; a map
 * with one tuple key shows its elements as keys ("@m[1, a]"). An empty
 * map prints one empty line (a keyless count() "@name: 0"); a stats() or
 * avg() map is followed by an empty line, and so is each histogram and
 * time series, whose rows follow its "@name[k]:" line. At exit two empty
 * lines come before the maps.
 *
 * Values: strings bare, tuples "(1, a)", records and structs
 * "{ .a = 1, .b = x }", C arrays "[1,2,3]", bools true/false, pointers in
 * hex, integers that read as names by their names, buf() bytes as
 * printable ASCII and \xNN.
 *
 * Histograms are bpftrace's art: one row per bucket from the first
 * non-empty one to the last: the label left-aligned in 16 columns
 * ("(..., 0)", "[0]", "[1]", "[4, 8)", "[1K, 2K)"; lhist: "(..., 0)",
 * "[0, 10)", "[100, ...)"), the count in 8, then " |", a bar of '@' 52
 * columns wide for the largest bucket, and "|". A time series is a plot:
 * a row per interval, its time, a '*' at its value on a scale from the
 * smallest value to the largest, and the value. */
#include "output/encoder.h"

#include <inttypes.h>
#include <string.h>

#include "runtime/print.h"

/* ---- histograms -------------------------------------------------------- */

typedef unsigned __int128 u128;

/* A hist bound: the number, with K, M, G, T, P, E for whole multiples of
 * powers of 1024 ([1K, 2K), [1M, 2M), ...). */
static void hist_number(u128 n, char *buf, size_t len) {
  static const char suffix[] = " KMGTPE";
  int s = 0;
  while (n >= 1024 && n % 1024 == 0 && s < 6) {
    n /= 1024;
    s++;
  }
  snprintf(buf, len, "%" PRIu64 "%.*s", (uint64_t)n, s ? 1 : 0, suffix + s);
}

/* An lhist bound as bpftrace writes it: whole multiples of 1M and 1K get
 * the suffix (but not 0), anything else is the plain number. */
static void lhist_number(int64_t n, char *buf, size_t len) {
  if (n != 0 && n % (1024 * 1024) == 0)
    snprintf(buf, len, "%" PRId64 "M", n / (1024 * 1024));
  else if (n != 0 && n % 1024 == 0)
    snprintf(buf, len, "%" PRId64 "K", n / 1024);
  else
    snprintf(buf, len, "%" PRId64, n);
}

static void bucket_label(const HistBucket *b, bool linear, char *buf,
                         size_t len) {
  char lo[48], hi[48];
  if (linear) {
    lhist_number((int64_t)b->lo, lo, sizeof lo);
    lhist_number((int64_t)b->hi, hi, sizeof hi);
  } else {
    hist_number((u128)b->lo, lo, sizeof lo);
    hist_number((u128)b->hi, hi, sizeof hi);
  }
  if (b->below)
    snprintf(buf, len, "(..., %s)", hi);
  else if (b->above)
    snprintf(buf, len, "[%s, ...)", lo);
  else if (!linear && b->hi - b->lo == 1)   /* lhist keeps "[2, 3)" */
    snprintf(buf, len, "[%s]", lo);
  else
    snprintf(buf, len, "[%s, %s)", lo, hi);
}

#define HIST_BAR_WIDTH 52

/* The count divided by div, the bar not. */
static void put_hist(const Hist *h, FILE *out) {
  for (int i = 0; i < h->n; i++) {
    const HistBucket *b = &h->buckets[i];
    char label[128], bar[HIST_BAR_WIDTH + 1];
    bucket_label(b, h->linear, label, sizeof label);
    /* In single precision, as bpftrace computes it. */
    int width = (int)((float)b->count / (float)h->peak * HIST_BAR_WIDTH);
    if (width > HIST_BAR_WIDTH) width = HIST_BAR_WIDTH;
    memset(bar, '@', width);
    bar[width] = '\0';
    fprintf(out, "%-16s%8" PRIu64 " |%-*s|\n", label, b->count / h->div,
            HIST_BAR_WIDTH, bar);
  }
}

/* ---- time series ------------------------------------------------------- */

#define PLOT_WIDTH 53    /* columns from the left border to the right one */
#define LABEL_WIDTH 13   /* "hh:mm:ss.ms  " */

/* The column of v on a scale from lo to hi (lo < hi). */
static int column(int64_t v, int64_t lo, int64_t hi) {
  return (int)(((__int128)v - lo) * (PLOT_WIDTH - 1) / ((__int128)hi - lo));
}

/* "             lo          hi" over and under the plot. */
static void put_scale(int64_t lo, int64_t hi, FILE *out) {
  char left[24];
  int len = snprintf(left, sizeof left, "%" PRId64, lo);
  fprintf(out, "%*s%s%*" PRId64 "\n", LABEL_WIDTH, "", left,
          PLOT_WIDTH - len, hi);
}

/* One row: the interval's start, the plot line with '*' at the value
 * ('.' marks zero when the scale spans it), and the value or "-". */
static void put_row(const TsPoint *p, int64_t lo, int64_t hi, FILE *out) {
  char line[PLOT_WIDTH + 1];
  memset(line, ' ', PLOT_WIDTH);
  line[PLOT_WIDTH] = '\0';
  if (lo < 0 && hi > 0) line[column(0, lo, hi)] = '.';
  line[0] = line[PLOT_WIDTH - 1] = '|';
  if (p->present) line[column(p->value, lo, hi)] = '*';
  /* "10:41:46.700" */
  output_put_time(p->start_ns, "%H:%M:%S", 3, out);
  fprintf(out, " %s ", line);
  if (p->present)
    fprintf(out, "%" PRId64 "\n", p->value);
  else
    fputs("-\n", out);
}

/* The scale: the smallest and largest values; a single value v gets
 * v - 1 .. v + 1 (not below 0 when v is not negative). */
static void scale(const TsPoint *pts, int np, int64_t *lo, int64_t *hi) {
  bool any = false;
  for (int i = 0; i < np; i++) {
    if (!pts[i].present) continue;
    if (!any || pts[i].value < *lo) *lo = pts[i].value;
    if (!any || pts[i].value > *hi) *hi = pts[i].value;
    any = true;
  }
  if (*lo == *hi) {
    if (*lo != 0 && *lo != INT64_MIN) (*lo)--;
    if (*hi != INT64_MAX) (*hi)++;
  }
}

static void put_tseries(const TsPoint *pts, int np, FILE *out) {
  if (np == 0) return;
  int64_t lo = 0, hi = 0;
  scale(pts, np, &lo, &hi);
  char rule[PLOT_WIDTH - 1];
  memset(rule, '_', sizeof rule - 1);
  rule[sizeof rule - 1] = '\0';
  put_scale(lo, hi, out);
  fprintf(out, "%-*s|%s|\n", LABEL_WIDTH, "hh:mm:ss.ms", rule);
  for (int i = 0; i < np; i++) put_row(&pts[i], lo, hi, out);
  fprintf(out, "%*sv%sv\n", LABEL_WIDTH, "", rule);
  put_scale(lo, hi, out);
}

/* ---- values ------------------------------------------------------------ */

static void put_elems(const Value *v, const char *open, const char *sep,
                      const char *close, FILE *out) {
  fputs(open, out);
  for (int i = 0; i < v->n; i++) {
    if (i) fputs(sep, out);
    if (v->kind == VAL_RECORD) fprintf(out, ".%s = ", v->names[i]);
    text_put_value(&v->elems[i], out);
  }
  fputs(close, out);
}

void text_put_value(const Value *v, FILE *out) {
  switch (v->kind) {
  case VAL_NONE:
    break;
  case VAL_INT:
    if (v->text)
      fputs(v->text, out);
    else if (v->hint == INT_BOOL)
      fputs(v->num ? "true" : "false", out);
    else if (v->is_signed)
      fprintf(out, "%" PRId64, (int64_t)v->num);
    else
      fprintf(out, "%" PRIu64, v->num);
    break;
  case VAL_STR:
    fwrite(v->bytes, 1, v->len, out);
    break;
  case VAL_BUF:
    if (v->text)
      fputs(v->text, out);
    else
      print_buf_escaped((const uint8_t *)v->bytes, v->len, out);
    break;
  case VAL_TUPLE:
    put_elems(v, "(", ", ", ")", out);
    break;
  case VAL_RECORD:
    put_elems(v, "{ ", ", ", " }", out);
    break;
  case VAL_ARRAY:
    put_elems(v, "[", ",", "]", out);
    break;
  case VAL_STACK:
    fputs(v->text, out);
    break;
  case VAL_HIST:
    put_hist(&v->hist, out);
    break;
  case VAL_STATS:
    if (v->stats.average_only)
      fprintf(out, "%" PRId64, v->stats.average);
    else
      fprintf(out, "count %" PRId64 ", average %" PRId64 ", total %" PRId64,
              v->stats.count, v->stats.average, v->stats.total);
    break;
  case VAL_TSERIES:
    put_tseries(v->points, v->n, out);
    break;
  }
}

/* ---- the encoder ------------------------------------------------------- */

static void text_maps_begin(Output *o, const MapSym *const *maps, int n,
                            bool at_exit) {
  if (at_exit) fputs("\n\n", o->out);
}

/* The keys: @[$t] with a tuple $t is @[a, b], shown as those keys. */
static void put_keys(const Value *keys, FILE *out) {
  const Value *k = keys->elems;
  if (keys->n == 1 && k->kind == VAL_TUPLE) keys = k;
  for (int i = 0; i < keys->n; i++) {
    if (i) fputs(", ", out);
    text_put_value(&keys->elems[i], out);
  }
}

static void text_map(Output *o, const DecodedMap *d) {
  FILE *out = o->out;
  /* a histogram's or a time series' rows follow its "@name[k]:" line,
   * with no space after the colon, as bpftrace's reference prints it
   * (0.17 had one) */
  bool multiline = d->agg == VAL_HIST || d->agg == VAL_TSERIES;
  for (int i = 0; i < d->n; i++) {
    const DecodedEntry *e = &d->entries[i];
    if (multiline && i > 0) fputc('\n', out);
    fputs(d->name, out);
    if (d->nkeys > 0) {
      fputc('[', out);
      put_keys(&e->keys, out);
      fputc(']', out);
    }
    fputs(multiline ? ":\n" : ": ", out);
    text_put_value(&e->value, out);
    if (!multiline) fputc('\n', out);
  }
  if (d->n == 0 && d->zero_when_empty) fprintf(out, "%s: 0\n", d->name);
  else if (d->n == 0 || multiline) fputc('\n', out);
  if (d->agg == VAL_STATS) fputc('\n', out);
}

static void text_event(Output *o, const char *type, const Value *v,
                       bool line) {
  text_put_value(v, o->out);
  if (line) fputc('\n', o->out);
}

const Encoder text_encoder = {
    .name = "text",
    .maps_begin = text_maps_begin,
    .map = text_map,
    .event = text_event,
};
