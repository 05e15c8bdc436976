/* metrics: the script's maps as Prometheus metrics, in the text
 * exposition format 0.0.4 ("prometheus") or OpenMetrics 1.0
 * ("openmetrics"), for --metrics (scraped), --metrics-push (pushed at the
 * end) and -f prometheus|openmetrics -o FILE (node_exporter's textfile
 * collector).
 *
 * Each map is a metric family named loupe_NAME, its keys labels (named
 * after the key expression where it is a builtin or a field, else key0,
 * key1, ...):
 *
 *   count(), sum() of unsigned values   counter   loupe_NAME_total
 *   sum() of signed values, min(), max(),
 *   avg(), a map of integers            gauge     loupe_NAME
 *   hist(), lhist()                     histogram loupe_NAME_bucket{le}
 *                                                 (cumulative, +Inf),
 *                                                 _count, _sum
 *   stats()                             summary   loupe_NAME_count, _sum;
 *                                       gauge     loupe_NAME_average
 *
 * Maps keyed by a stack (profiles), of strings or other non-numbers, and
 * time series are left out (metrics_left_out says which). Every series
 * carries the labels of MetricsLabels. At most max_series series a map;
 * the ones left out are counted in loupe_metrics_series_dropped. loupe's
 * own metrics follow: loupe_up, loupe_build_info, loupe_events_lost_total,
 * loupe_map_updates_refused_total, and, while kernel.bpf_stats_enabled is
 * 1, loupe_probe_runs_total and loupe_probe_run_seconds_total. */
#ifndef LOUPE_OUTPUT_METRICS_H
#define LOUPE_OUTPUT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "model/program.h"
#include "runtime/state.h"
#include "settings.h"

#define METRICS_LABELS_MAX 32

typedef struct MetricsLabels {
  const char *script;      /* the script label's value */
  const char *const *kv;   /* constant labels, "NAME=VALUE" each */
  int nkv;
  int max_series;          /* per map; 0: METRICS_MAX_SERIES_DEFAULT */
} MetricsLabels;

/* Writes every map of c, as loaded (ld), and loupe's own metrics to out. 0, or -1 if a
 * map could not be read. */
int metrics_write(FILE *out, const Compiled *c, const Loaded *ld,
                  const MetricsLabels *l, bool openmetrics);

/* The same in a malloc'd buffer (its length in *len); NULL on failure. */
char *metrics_render(const Compiled *c, const Loaded *ld,
                     const MetricsLabels *l, bool openmetrics, size_t *len);

/* Writes the metrics to path whole: into a new file beside it (opened as
 * util/safe_file.h opens what loupe writes), then renamed over it, so that
 * a reader such as node_exporter's textfile collector never sees half a
 * file. 0, or -1 with a message in err. */
int metrics_write_file(const char *path, const Compiled *c, const Loaded *ld,
                       const MetricsLabels *l, bool openmetrics, char *err,
                       size_t errlen);

/* PUTs the metrics (text format) to the Pushgateway at url, in the group
 * job=loupe, script=SCRIPT and the constant labels (values base64url
 * encoded, so that any value fits a path). 0, or -1 with a message in
 * err. */
int metrics_push(const char *url, const Compiled *c, const Loaded *ld,
                 const MetricsLabels *l, char *err, size_t errlen);

/* Whether every map's metrics have names of their own: false, with a
 * message in err, where two maps' families (@x = count() and @x_total, a
 * gauge, are both loupe_x_total; @h = hist() writes loupe_h_count, as a
 * gauge @h_count would) or a map's and one of loupe's own metrics
 * (@up) would share a name. */
bool metrics_names_ok(const Compiled *c, char *err, size_t errlen);

/* Says on err, once, which maps metrics leave out and why. */
void metrics_left_out(const Compiled *c, FILE *err);

/* Checks a --metrics-label "NAME=VALUE": false with a message in err. */
bool metrics_label_ok(const char *kv, char *err, size_t errlen);

#endif
