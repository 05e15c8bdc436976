/* metrics: see metrics.h. */
#include "output/metrics.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output/decode.h"
#include "output/encoder.h"
#include "output/prom.h"
#include "runtime/push.h"
#include "util/safe_file.h"

typedef enum Family {
  FAM_NONE,
  FAM_COUNTER,
  FAM_GAUGE,
  FAM_HISTOGRAM,
  FAM_SUMMARY,
} Family;

/* What m becomes; FAM_NONE with the reason in *why. */
static Family family_of(const MapSym *m, const char **why) {
  *why = NULL;
  if (map_has_stack_key(m)) {
    *why = "keyed by a stack: a profile (-f folded, --flamegraph)";
    return FAM_NONE;
  }
  const Type *t = &m->value_type;
  if (t->kind == TY_AGG) {
    switch (t->agg) {
    case AGG_COUNT: return FAM_COUNTER;
    case AGG_SUM: return FAM_COUNTER;   /* a negative sum: see put_map */
    case AGG_MIN:
    case AGG_MAX:
    case AGG_AVG: return FAM_GAUGE;
    case AGG_HIST:
    case AGG_LHIST: return FAM_HISTOGRAM;
    case AGG_STATS: return FAM_SUMMARY;
    case AGG_TSERIES: *why = "a time series"; return FAM_NONE;
    default: break;
    }
  }
  if (t->kind == TY_INT && !t->named) return FAM_GAUGE;
  *why = "its values are not numbers";
  return FAM_NONE;
}

bool metrics_label_ok(const char *kv, char *err, size_t errlen) {
  const char *eq = strchr(kv, '=');
  char name[128];
  if (!eq || (size_t)(eq - kv) >= sizeof name) {
    snprintf(err, errlen, "--metrics-label '%s': not NAME=VALUE", kv);
    return false;
  }
  snprintf(name, sizeof name, "%.*s", (int)(eq - kv), kv);
  if (!prom_label_name_ok(name) || !strcmp(name, "le") ||
      !strcmp(name, "script")) {
    snprintf(err, errlen,
             "--metrics-label '%s': '%s' is not a label name loupe can give "
             "(letters, digits and '_', not starting with a digit or '__'; "
             "'le' and 'script' are loupe's own)", kv, name);
    return false;
  }
  return true;
}

typedef struct Writer {
  FILE *out;
  const MetricsLabels *l;
  bool om;
} Writer;

/* The labels every series has; true if any was written. */
static bool put_common(Writer *w) {
  fputs("script=\"", w->out);
  prom_put_label_value(w->out, w->l->script, strlen(w->l->script));
  fputc('"', w->out);
  for (int i = 0; i < w->l->nkv; i++) {
    const char *eq = strchr(w->l->kv[i], '=');
    fprintf(w->out, ",%.*s=\"", (int)(eq - w->l->kv[i]), w->l->kv[i]);
    prom_put_label_value(w->out, eq + 1, strlen(eq + 1));
    fputc('"', w->out);
  }
  return true;
}

/* Whether name is taken by loupe's labels or by the constant ones. */
static bool label_taken(const Writer *w, const char *name) {
  if (!strcmp(name, "le") || !strcmp(name, "script") ||
      !strcmp(name, "quantile"))
    return true;
  size_t n = strlen(name);
  for (int i = 0; i < w->l->nkv; i++)
    if (!strncmp(w->l->kv[i], name, n) && w->l->kv[i][n] == '=') return true;
  return false;
}

/* A key's label name: its expression's name where the script gave it one
 * that no other label has, else keyK. */
static void key_label(const Writer *w, const MapSym *m, int k, char *buf,
                      size_t len) {
  const char *name = k < MAX_MAP_KEYS ? m->key_names[k] : NULL;
  bool ok = name && prom_label_name_ok(name) && !label_taken(w, name);
  for (int j = 0; ok && j < k; j++)
    if (m->key_names[j] && !strcmp(m->key_names[j], name)) ok = false;
  if (ok)
    snprintf(buf, len, "%s", name);
  else
    snprintf(buf, len, "key%d", k);
}

/* {labels} of an entry, and `le` when given. */
static void put_labels(Writer *w, const MapSym *m, const DecodedEntry *e,
                       const char *le) {
  fputc('{', w->out);
  put_common(w);
  for (int k = 0; e && k < e->keys.n; k++) {
    char name[64];
    key_label(w, m, k, name, sizeof name);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) continue;
    text_put_value(&e->keys.elems[k], f);
    fclose(f);
    fprintf(w->out, ",%s=\"", name);
    prom_put_label_value(w->out, text, len);
    fputc('"', w->out);
    free(text);
  }
  if (le) fprintf(w->out, ",le=\"%s\"", le);
  fputc('}', w->out);
}

static void put_int(FILE *out, uint64_t v, bool is_signed) {
  if (is_signed)
    fprintf(out, " %" PRId64 "\n", (int64_t)v);
  else
    fprintf(out, " %" PRIu64 "\n", v);
}

/* # HELP and # TYPE of a family; counters are named without _total in
 * OpenMetrics, with it in the text format. */
static void put_header(Writer *w, const char *base, const char *type,
                       const char *help) {
  const char *suffix = !w->om && !strcmp(type, "counter") ? "_total" : "";
  fprintf(w->out, "# HELP %s%s ", base, suffix);
  prom_put_help(w->out, help);
  fprintf(w->out, "\n# TYPE %s%s %s\n", base, suffix, type);
}

/* A bucket's bound: the largest integer it holds. */
static void put_le(char *buf, size_t len, __int128 top) {
  if (top < 0)
    snprintf(buf, len, "-%" PRIu64, (uint64_t)-top);
  else
    snprintf(buf, len, "%" PRIu64, (uint64_t)top);
}

/* The histogram of one entry: cumulative buckets from the one below the
 * first holding values to the last holding values, each bound the
 * largest integer it holds, then +Inf. */
static void put_histogram(Writer *w, const MapSym *m, const char *base,
                          const DecodedEntry *e) {
  const Hist *h = &e->value.hist;
  uint64_t cum = 0;
  /* the bound below the first bucket holding values, at 0: without it
   * histogram_quantile() takes that bucket to start at 0 */
  if (h->n > 0 && !h->buckets[0].below) {
    char le[48];
    put_le(le, sizeof le, h->buckets[0].lo - 1);
    fprintf(w->out, "%s_bucket", base);
    put_labels(w, m, e, le);
    put_int(w->out, 0, false);
  }
  for (int i = 0; i < h->n; i++) {
    const HistBucket *b = &h->buckets[i];
    cum += b->count;
    if (b->above) continue;
    char le[48];
    put_le(le, sizeof le, b->hi - 1);
    fprintf(w->out, "%s_bucket", base);
    put_labels(w, m, e, le);
    put_int(w->out, cum, false);
  }
  fprintf(w->out, "%s_bucket", base);
  put_labels(w, m, e, "+Inf");
  put_int(w->out, cum, false);
  fprintf(w->out, "%s_count", base);
  put_labels(w, m, e, NULL);
  put_int(w->out, cum, false);
  if (h->has_sum) {
    fprintf(w->out, "%s_sum", base);
    put_labels(w, m, e, NULL);
    put_int(w->out, (uint64_t)h->sum, true);
  }
}

/* The name of m's family (loupe_NAME); a counter's without the _total
 * its samples add. */
static void family_base(const MapSym *m, Family fam, char *base, size_t len) {
  prom_metric_name(m->name, base, len);
  size_t bl = strlen(base);
  if (fam == FAM_COUNTER && bl > 6 && !strcmp(base + bl - 6, "_total"))
    base[bl - 6] = 0;
}

/* One map, at most max_series of its entries (those print() would show
 * last: the largest). Returns how many it left out, or -1. */
static long put_map(Writer *w, const MapSym *m, const MapState *st) {
  const char *why;
  Family fam = family_of(m, &why);
  if (fam == FAM_NONE) return 0;
  DecodedMap d;
  DecodeOpts opts = {.frames = false};
  if (decode_map(m, st, 0, 1, &opts, &d)) {
    decoded_map_free(&d);
    return -1;
  }
  char base[160], help[256];
  family_base(m, fam, base, sizeof base);
  int max = w->l->max_series > 0 ? w->l->max_series
                                 : METRICS_MAX_SERIES_DEFAULT;
  int first = d.n > max ? d.n - max : 0;
  static const char *const kinds[] = {
      [AGG_COUNT] = "count()", [AGG_SUM] = "sum()", [AGG_MIN] = "min()",
      [AGG_MAX] = "max()", [AGG_AVG] = "avg()", [AGG_HIST] = "hist()",
      [AGG_LHIST] = "lhist()", [AGG_STATS] = "stats()"};
  const char *kind = m->value_type.kind == TY_AGG ? kinds[m->value_type.agg]
                                                  : "a value";
  snprintf(help, sizeof help, "%s: %s in %s", m->name, kind ? kind : "?",
           w->l->script);
  static const char *const types[] = {[FAM_COUNTER] = "counter",
                                      [FAM_GAUGE] = "gauge",
                                      [FAM_HISTOGRAM] = "histogram",
                                      [FAM_SUMMARY] = "summary"};
  put_header(w, base, types[fam], help);
  bool keyless_zero = d.n == 0 && d.zero_when_empty;
  long extra_dropped = 0;
  for (int i = first; i < d.n || keyless_zero; i++) {
    const DecodedEntry *e = keyless_zero ? NULL : &d.entries[i];
    switch (fam) {
    case FAM_COUNTER:
      /* a counter is never negative: a sum of negative values that went
       * below zero is left out (counted as dropped) */
      if (e && e->value.is_signed && (int64_t)e->value.num < 0) {
        extra_dropped++;
        break;
      }
      fprintf(w->out, "%s_total", base);
      put_labels(w, m, e, NULL);
      put_int(w->out, e ? e->value.num : 0, false);
      break;
    case FAM_GAUGE:
      fputs(base, w->out);
      put_labels(w, m, e, NULL);
      if (e && e->value.kind == VAL_STATS)
        put_int(w->out, (uint64_t)e->value.stats.average, true);
      else
        put_int(w->out, e ? e->value.num : 0, e ? e->value.is_signed : false);
      break;
    case FAM_HISTOGRAM:
      if (e) put_histogram(w, m, base, e);
      break;
    case FAM_SUMMARY:
      if (!e) break;
      fprintf(w->out, "%s_count", base);
      put_labels(w, m, e, NULL);
      put_int(w->out, (uint64_t)e->value.stats.count, true);
      fprintf(w->out, "%s_sum", base);
      put_labels(w, m, e, NULL);
      put_int(w->out, (uint64_t)e->value.stats.total, true);
      break;
    case FAM_NONE: break;
    }
    keyless_zero = false;
  }
  if (fam == FAM_SUMMARY) {
    char avg[200];
    snprintf(avg, sizeof avg, "%s_average", base);
    snprintf(help, sizeof help, "%s: stats()'s average in %s", m->name,
             w->l->script);
    put_header(w, avg, "gauge", help);
    for (int i = first; i < d.n; i++) {
      fputs(avg, w->out);
      put_labels(w, m, &d.entries[i], NULL);
      put_int(w->out, (uint64_t)d.entries[i].value.stats.average, true);
    }
  }
  long dropped = first + extra_dropped;
  decoded_map_free(&d);
  return dropped;
}

/* The bpf_prog_info run figures exist while kernel.bpf_stats_enabled is
 * 1 (another tool, or the administrator, turned them on). */
static bool bpf_stats_on(void) {
  FILE *f = fopen("/proc/sys/kernel/bpf_stats_enabled", "re");
  int on = 0;
  if (f) {
    if (fscanf(f, "%d", &on) != 1) on = 0;
    fclose(f);
  }
  return on == 1;
}

/* {common labels, map="@name"} */
static void put_map_label(Writer *w, const MapSym *m) {
  fputc('{', w->out);
  put_common(w);
  fputs(",map=\"", w->out);
  prom_put_label_value(w->out, m->name, strlen(m->name));
  fputs("\"}", w->out);
}

static void put_self(Writer *w, const Compiled *c, const Loaded *ld,
                     const long *dropped) {
  put_header(w, "loupe_up", "gauge", "1 while loupe runs its script");
  fputs("loupe_up", w->out);
  put_labels(w, NULL, NULL, NULL);
  fputs(" 1\n", w->out);

  put_header(w, "loupe_build_info", "gauge", "loupe's version");
  fputs("loupe_build_info{", w->out);
  put_common(w);
  fprintf(w->out, ",version=\"%s\"} 1\n", LOUPE_VERSION);

  uint64_t counts[c->ncounts > 0 ? c->ncounts : 1];
  uint32_t key = 0;
  bool have = ld->counts_fd >= 0 && c->ncounts > 0 &&
              !bpf_map_lookup_elem(ld->counts_fd, &key, counts);
  put_header(w, "loupe_events_lost", "counter",
             "records the ring buffer had no room for (printf and the "
             "other output of the probes)");
  fputs("loupe_events_lost_total", w->out);
  put_labels(w, NULL, NULL, NULL);
  put_int(w->out, have ? counts[COUNT_SLOT_LOST] : 0, false);

  put_header(w, "loupe_map_updates_refused", "counter",
             "updates a full map refused (max_entries reached)");
  /* every map of the script, those left out of the metrics too (a
   * stack-keyed profile fills up as any other map does) */
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    if (m->internal) continue;
    uint64_t refused =
        have && m->full_slot ? map_full_count(m, counts[m->full_slot]) : 0;
    fputs("loupe_map_updates_refused_total", w->out);
    put_map_label(w, m);
    put_int(w->out, refused, false);
  }
  /* the stack maps' (one per frame limit) together */
  uint64_t lost = 0;
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    if (have && m->internal && m->full_slot)
      lost += map_full_count(m, counts[m->full_slot]);
  }
  put_header(w, "loupe_stacks_lost", "counter",
             "stacks the stack map had no room for (max_map_keys): they "
             "are keyed as an empty stack");
  fputs("loupe_stacks_lost_total", w->out);
  put_labels(w, NULL, NULL, NULL);
  put_int(w->out, lost, false);
  put_header(w, "loupe_metrics_series_dropped", "gauge",
             "series of a map left out of these metrics: over the cap "
             "(metrics_max_series), or a sum() below zero");
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    const char *why;
    if (m->internal || family_of(m, &why) == FAM_NONE) continue;
    fputs("loupe_metrics_series_dropped", w->out);
    put_map_label(w, m);
    put_int(w->out, (uint64_t)(dropped[i] > 0 ? dropped[i] : 0), false);
  }

  if (!bpf_stats_on()) return;
  struct bpf_prog_info *infos = calloc((size_t)c->nprogs + 1, sizeof *infos);
  if (!infos) return;
  for (int i = 0; i < c->nprogs; i++) {
    uint32_t len = sizeof infos[i];
    int fd = i < ld->nprogs ? ld->prog_fds[i] : -1;
    if (fd < 0 || bpf_obj_get_info_by_fd(fd, &infos[i], &len))
      infos[i].id = 0;
  }
  for (int pass = 0; pass < 2; pass++) {
    if (pass == 0)
      put_header(w, "loupe_probe_runs", "counter",
                 "times each probe's program ran (kernel.bpf_stats_enabled)");
    else
      put_header(w, "loupe_probe_run_seconds", "counter",
                 "time each probe's program ran (kernel.bpf_stats_enabled)");
    for (int i = 0; i < c->nprogs; i++) {
      if (!infos[i].id) continue;
      const char *probe = prog_probe_name(&c->progs[i]);
      fputs(pass ? "loupe_probe_run_seconds_total{" : "loupe_probe_runs_total{",
            w->out);
      put_common(w);
      fputs(",probe=\"", w->out);
      prom_put_label_value(w->out, probe, strlen(probe));
      if (pass)
        fprintf(w->out, "\"} %llu.%09llu\n",
                (unsigned long long)(infos[i].run_time_ns / 1000000000),
                (unsigned long long)(infos[i].run_time_ns % 1000000000));
      else
        fprintf(w->out, "\"} %llu\n", (unsigned long long)infos[i].run_cnt);
    }
  }
  free(infos);
}

int metrics_write(FILE *out, const Compiled *c, const Loaded *ld,
                  const MetricsLabels *l, bool openmetrics) {
  Writer w = {.out = out, .l = l, .om = openmetrics};
  int n, err = 0;
  const MapSym **order = loaded_maps_by_name(c, ld, &n);
  long *dropped = calloc((size_t)c->nmaps + 1, sizeof *dropped);
  if (!order || !dropped) {
    free(order);
    free(dropped);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    long d = put_map(&w, order[i], &ld->maps[order[i]->id]);
    if (d < 0) err = -1;
    dropped[order[i]->id] = d;
  }
  put_self(&w, c, ld, dropped);
  if (openmetrics) fputs("# EOF\n", out);
  free(order);
  free(dropped);
  return err;
}

char *metrics_render(const Compiled *c, const Loaded *ld,
                     const MetricsLabels *l, bool openmetrics, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  if (!f) return NULL;
  int err = metrics_write(f, c, ld, l, openmetrics);
  if (fclose(f) || err) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* A name a family writes or stands for, and whose it is. */
typedef struct NameUse {
  char name[176];
  const char *owner;   /* the map's name, or NULL: loupe's own */
} NameUse;

/* Adds the names of a family of kind fam and name base to u. */
static int add_family_names(NameUse *u, int n, Family fam, const char *base,
                            const char *owner) {
  static const char *const suffixes[][5] = {
      [FAM_COUNTER] = {"", "_total"},
      [FAM_GAUGE] = {""},
      [FAM_HISTOGRAM] = {"", "_bucket", "_count", "_sum"},
      [FAM_SUMMARY] = {"", "_count", "_sum", "_average"}};
  for (int i = 0; i < 5 && suffixes[fam][i]; i++) {
    snprintf(u[n].name, sizeof u[n].name, "%s%s", base, suffixes[fam][i]);
    u[n++].owner = owner;
  }
  return n;
}

bool metrics_names_ok(const Compiled *c, char *err, size_t errlen) {
  static const struct { const char *base; Family fam; } own[] = {
      {"loupe_up", FAM_GAUGE}, {"loupe_build_info", FAM_GAUGE},
      {"loupe_events_lost", FAM_COUNTER},
      {"loupe_map_updates_refused", FAM_COUNTER},
      {"loupe_stacks_lost", FAM_COUNTER},
      {"loupe_metrics_series_dropped", FAM_GAUGE},
      {"loupe_probe_runs", FAM_COUNTER},
      {"loupe_probe_run_seconds", FAM_COUNTER}};
  size_t nown = sizeof own / sizeof own[0];
  NameUse *u = calloc(4 * ((size_t)c->nmaps + nown), sizeof *u);
  if (!u) {
    snprintf(err, errlen, "out of memory");
    return false;
  }
  int n = 0;
  for (size_t i = 0; i < nown; i++)
    n = add_family_names(u, n, own[i].fam, own[i].base, NULL);
  bool ok = true;
  for (int i = 0; i < c->nmaps && ok; i++) {
    const MapSym *m = c->maps[i];
    const char *why;
    Family fam = m->internal ? FAM_NONE : family_of(m, &why);
    if (fam == FAM_NONE) continue;
    char base[160];
    family_base(m, fam, base, sizeof base);
    int from = n;
    n = add_family_names(u, n, fam, base, m->name);
    for (int j = from; j < n && ok; j++)
      for (int k = 0; k < from && ok; k++) {
        if (strcmp(u[j].name, u[k].name)) continue;
        ok = false;
        if (u[k].owner)
          snprintf(err, errlen,
                   "the metrics of %s and %s would share the name %s, which "
                   "Prometheus refuses: rename one of the maps",
                   u[k].owner, m->name, u[j].name);
        else
          snprintf(err, errlen,
                   "the metrics of %s would be named %s, one of loupe's own: "
                   "rename the map", m->name, u[j].name);
      }
  }
  free(u);
  return ok;
}

void metrics_left_out(const Compiled *c, FILE *err) {
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    const char *why;
    if (!m->internal && family_of(m, &why) == FAM_NONE)
      fprintf(err, "loupe: metrics leave out %s: %s\n", m->name, why);
  }
}

int metrics_write_file(const char *path, const Compiled *c, const Loaded *ld,
                       const MetricsLabels *l, bool openmetrics, char *err,
                       size_t errlen) {
  char tmp[4096], why[SAFE_WHY_MAX];
  const char *slash = strrchr(path, '/');
  int dirlen = slash ? (int)(slash - path + 1) : 0;
  if (snprintf(tmp, sizeof tmp, "%.*s.%s.%d.tmp", dirlen, path,
               slash ? slash + 1 : path, (int)getpid()) >= (int)sizeof tmp) {
    snprintf(err, errlen, "'%s': the name is too long", path);
    return -1;
  }
  FILE *f = safe_fopen_write(tmp, why, sizeof why);
  if (!f) {
    snprintf(err, errlen, "cannot write '%s': %s", tmp, why);
    return -1;
  }
  int bad = metrics_write(f, c, ld, l, openmetrics);
  if (fflush(f) || fsync(fileno(f))) bad = -1;
  if (fclose(f)) bad = -1;
  if (bad || rename(tmp, path)) {
    snprintf(err, errlen, "cannot write '%s': %s", path,
             bad ? "reading the maps or writing failed" : strerror(errno));
    unlink(tmp);
    return -1;
  }
  return 0;
}

/* s in base64url ('-' and '_', '=' padded), as the Pushgateway reads a
 * grouping label's value written NAME@base64/VALUE. */
static void put_base64url(FILE *out, const char *s) {
  static const char abc[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const unsigned char *p = (const unsigned char *)s;
  size_t n = strlen(s);
  if (n == 0) fputc('=', out);   /* the Pushgateway's empty value */
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    if (i + 2 < n) v |= p[i + 2];
    fputc(abc[v >> 18 & 63], out);
    fputc(abc[v >> 12 & 63], out);
    fputc(i + 1 < n ? abc[v >> 6 & 63] : '=', out);
    fputc(i + 2 < n ? abc[v & 63] : '=', out);
  }
}

int metrics_push(const char *url, const Compiled *c, const Loaded *ld,
                 const MetricsLabels *l, char *err, size_t errlen) {
  char *target = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&target, &tlen);
  if (!f) {
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  size_t ulen = strlen(url);
  while (ulen && url[ulen - 1] == '/') ulen--;
  fprintf(f, "%.*s/metrics/job/loupe/script@base64/", (int)ulen, url);
  put_base64url(f, l->script);
  for (int i = 0; i < l->nkv; i++) {
    const char *eq = strchr(l->kv[i], '=');
    fprintf(f, "/%.*s@base64/", (int)(eq - l->kv[i]), l->kv[i]);
    put_base64url(f, eq + 1);
  }
  fclose(f);
  size_t len = 0;
  char *body = metrics_render(c, ld, l, false, &len);
  int ret = -1;
  if (!body)
    snprintf(err, errlen, "reading the maps for the metrics failed");
  else
    ret = http_push(target, body, len, err, errlen);
  free(body);
  free(target);
  return ret;
}
