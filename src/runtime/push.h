/* push: a run's final metrics sent to a Prometheus Pushgateway, over HTTP
 * with libcurl (left out of the static build, which says so). */
#ifndef LOUPE_RUNTIME_PUSH_H
#define LOUPE_RUNTIME_PUSH_H

#include <stddef.h>

/* PUTs body (Prometheus's text format) to url, replacing every metric of
 * the group the URL names (/metrics/job/JOB{/LABEL/VALUE}). 0, or -1 with
 * a message in err: no connection within a few seconds, or an answer
 * that is not 2xx (its status and the start of its text). */
int http_push(const char *url, const char *body, size_t len, char *err,
              size_t errlen);

#endif
