/* prom: the names and escapes of Prometheus's exposition formats (text
 * 0.0.4 and OpenMetrics 1.0 agree on all of these), for the metrics
 * encoder. */
#ifndef LOUPE_OUTPUT_PROM_H
#define LOUPE_OUTPUT_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A metric name for a map: "loupe_" and the map's name without its '@'
 * ("@" alone: "loupe_map"), every character outside [a-zA-Z0-9_] made
 * '_'. */
void prom_metric_name(const char *map, char *out, size_t len);

/* Whether s is a label name of the formats ([a-zA-Z_][a-zA-Z0-9_]*, not
 * starting with "__", which Prometheus keeps for itself). */
bool prom_label_name_ok(const char *s);

/* Writes s (len bytes) as a label value between its quotes: backslash,
 * double quote and newline escaped; bytes that are not UTF-8 become
 * U+FFFD, as the formats want UTF-8. */
void prom_put_label_value(FILE *out, const char *s, size_t len);

/* Writes s as # HELP text: backslash and newline escaped. */
void prom_put_help(FILE *out, const char *s);

#endif
