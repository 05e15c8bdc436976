/* http: loupe's /metrics endpoint, served by libmicrohttpd from loupe's
 * own event loop (no thread: a scrape reads the maps between two batches
 * of records, so nothing in loupe is shared between threads).
 *
 * The server answers GET and HEAD of /metrics with what `render` makes
 * at that moment, in the format the scraper's Accept header prefers
 * (OpenMetrics 1.0 or Prometheus's text format 0.0.4), a short page at
 * /, 404 elsewhere and 405 to other methods. It holds at most a few
 * connections, each for a few seconds, and never reads a request body,
 * so that a client on the port cannot make loupe wait or grow. */
#ifndef LOUPE_RUNTIME_HTTP_H
#define LOUPE_RUNTIME_HTTP_H

#include <stdbool.h>
#include <stddef.h>

typedef struct HttpServer HttpServer;

/* The body of /metrics, malloc'd, its length in *len; NULL on failure
 * (the scrape gets 500). */
typedef char *(*HttpRender)(void *arg, bool openmetrics, size_t *len);

/* Listens on spec, "[ADDR:]PORT" (ADDR an IPv4 address, or an IPv6 one
 * in brackets; 127.0.0.1 if none is given). NULL with a message in err:
 * a malformed spec, an address in use, or a build without HTTP. */
HttpServer *http_serve(const char *spec, HttpRender render, void *arg,
                       char *err, size_t errlen);

/* A file descriptor that is readable when the server has work: for the
 * event loop's poll. */
int http_fd(const HttpServer *s);

/* Does what is ready (accepts, reads requests, answers); never blocks. */
void http_run(HttpServer *s);

/* Closes every connection and the socket. NULL is allowed. */
void http_stop(HttpServer *s);

/* Whether an Accept header asks for OpenMetrics before the text format
 * (by q values; a tie goes to the one listed first). NULL: no header. */
bool http_wants_openmetrics(const char *accept);

/* Parses "[ADDR:]PORT" into a socket address (struct sockaddr_storage,
 * its length in *len). False with a message in err. */
bool http_parse_listen(const char *spec, void *addr, unsigned *len,
                       char *err, size_t errlen);

#endif
