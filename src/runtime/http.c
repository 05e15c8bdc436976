/* http: the /metrics endpoint (see http.h). */
#include "runtime/http.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

bool http_parse_listen(const char *spec, void *addr, unsigned *len,
                       char *err, size_t errlen) {
  const char *port = spec, *host = "127.0.0.1";
  char hostbuf[64];
  const char *colon = strrchr(spec, ':');
  if (colon) {
    size_t n = (size_t)(colon - spec);
    if (spec[0] == '[') {   /* [v6]:port */
      if (n < 2 || spec[n - 1] != ']') goto malformed;
      spec++;
      n -= 2;
    } else if (memchr(spec, ':', n)) {
      snprintf(err, errlen, "'%s': an IPv6 address goes in brackets "
               "([::1]:PORT)", spec);
      return false;
    }
    if (n == 0 || n >= sizeof hostbuf) goto malformed;
    memcpy(hostbuf, spec, n);
    hostbuf[n] = 0;
    host = hostbuf;
    port = colon + 1;
  }
  char *end;
  errno = 0;
  long p = strtol(port, &end, 10);
  if (!isdigit((unsigned char)*port) || *end || errno || p < 1 || p > 65535) {
    snprintf(err, errlen, "'%s': the port must be a number from 1 to 65535",
             port);
    return false;
  }
  struct sockaddr_storage *ss = addr;
  memset(ss, 0, sizeof *ss);
  struct sockaddr_in *v4 = addr;
  struct sockaddr_in6 *v6 = addr;
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)p);
    *len = sizeof *v4;
    return true;
  }
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)p);
    *len = sizeof *v6;
    return true;
  }
  snprintf(err, errlen,
           "'%s' is not an IPv4 address or an IPv6 one in brackets "
           "(names are not looked up)", host);
  return false;
malformed:
  snprintf(err, errlen, "'%s' is not [ADDRESS:]PORT", spec);
  return false;
}

/* One media range of an Accept header: its type, and q and version. */
static void media_range(const char *s, size_t n, char *type, size_t typelen,
                        double *q, char *version, size_t versionlen) {
  *q = 1;
  version[0] = 0;
  const char *semi = memchr(s, ';', n);
  size_t tn = semi ? (size_t)(semi - s) : n;
  while (tn && isspace((unsigned char)s[tn - 1])) tn--;
  snprintf(type, typelen, "%.*s", (int)tn, s);
  while (semi) {
    const char *p = semi + 1, *stop = s + n;
    semi = memchr(p, ';', (size_t)(stop - p));
    const char *pe = semi ? semi : stop;
    while (p < pe && isspace((unsigned char)*p)) p++;
    if (pe - p > 2 && !strncasecmp(p, "q=", 2)) {
      char num[16];
      snprintf(num, sizeof num, "%.*s", (int)(pe - p - 2), p + 2);
      char *end;
      double v = strtod(num, &end);
      *q = end != num && v >= 0 && v <= 1 ? v : 0;
    } else if (pe - p > 8 && !strncasecmp(p, "version=", 8)) {
      snprintf(version, versionlen, "%.*s", (int)(pe - p - 8), p + 8);
      size_t vl = strlen(version);
      while (vl && isspace((unsigned char)version[vl - 1])) version[--vl] = 0;
    }
  }
}

bool http_wants_openmetrics(const char *accept) {
  if (!accept) return false;
  double om = 0, text = 0;
  int om_at = INT_MAX, text_at = INT_MAX;
  const char *s = accept;
  for (int i = 0; *s; i++) {
    while (*s == ',' || isspace((unsigned char)*s)) s++;
    if (!*s) break;
    const char *comma = strchr(s, ',');
    size_t n = comma ? (size_t)(comma - s) : strlen(s);
    char type[64], version[16];
    double q;
    media_range(s, n, type, sizeof type, &q, version, sizeof version);
    s += n;
    bool is_om = !strcasecmp(type, "application/openmetrics-text") &&
                 (!version[0] || !strcmp(version, "1.0.0"));
    bool is_text = (!strcasecmp(type, "text/plain") &&
                    (!version[0] || !strcmp(version, "0.0.4"))) ||
                   !strcasecmp(type, "text/*") || !strcmp(type, "*/*");
    if (is_om && q > om) om = q, om_at = i;
    if (is_text && q > text) text = q, text_at = i;
  }
  return om > 0 && (om > text || (om == text && om_at < text_at));
}

#ifdef LOUPE_STATIC

/* libmicrohttpd's static library needs GnuTLS's, whose dependencies
 * Debian ships no static libraries of. */
HttpServer *http_serve(const char *spec, HttpRender render, void *arg,
                       char *err, size_t errlen) {
  snprintf(err, errlen,
           "this static build of loupe has no HTTP server (libmicrohttpd "
           "does not link statically on Debian 12): use the dynamic build, "
           "or write the metrics to a file for node_exporter's textfile "
           "collector (-f openmetrics -o FILE.prom)");
  return NULL;
}
int http_fd(const HttpServer *s) { return -1; }
void http_run(HttpServer *s) {}
void http_stop(HttpServer *s) {}

#else

#include <microhttpd.h>

#include "util/dlib.h"

/* libmicrohttpd, loaded when --metrics is given (util/dlib.h). */
#define MHD_FUNCTIONS(X)                                                   \
  X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_run) X(MHD_get_daemon_info) \
  X(MHD_create_response_from_buffer) X(MHD_add_response_header)          \
  X(MHD_queue_response) X(MHD_destroy_response)                          \
  X(MHD_lookup_connection_value)
static struct {
#define MHD_FIELD(f) __typeof__(&f) f;
  MHD_FUNCTIONS(MHD_FIELD)
} mhd;

static bool load_mhd(char *err, size_t errlen) {
  static const char *const sonames[] = {"libmicrohttpd.so.12", NULL};
  static const char *const names[] = {
#define MHD_NAME(f) #f,
      MHD_FUNCTIONS(MHD_NAME) NULL};
  static bool loaded;
  void *fns[sizeof names / sizeof *names];
  if (loaded) return true;
  if (!dlib_load(sonames, "libmicrohttpd12", names, fns, err, errlen))
    return false;
  int i = 0;
#define MHD_SET(f) *(void **)&mhd.f = fns[i++];
  MHD_FUNCTIONS(MHD_SET)
  return loaded = true;
}

/* A scraper, a browser and a few stragglers: no more at once. */
#define HTTP_CONNECTIONS_MAX 16
#define HTTP_TIMEOUT_S 10
#define HTTP_CONNECTION_MEMORY (32 * 1024)

struct HttpServer {
  struct MHD_Daemon *daemon;
  int listen_fd;
  HttpRender render;
  void *arg;
};

static const char INDEX_PAGE[] =
    "<html><head><title>loupe</title></head><body>"
    "<h1>loupe</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

static enum MHD_Result answer(struct MHD_Connection *conn, unsigned status,
                              const char *type, char *body, size_t len,
                              enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = mhd.MHD_create_response_from_buffer(len, body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(body);
    return MHD_NO;
  }
  mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
    mhd.MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ret = mhd.MHD_queue_response(conn, status, r);
  mhd.MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
                                  const char *url, const char *method,
                                  const char *version, const char *upload,
                                  size_t *upload_size, void **req) {
  HttpServer *s = cls;
  static const char plain[] = "text/plain; charset=utf-8";
  if (strcmp(method, MHD_HTTP_METHOD_GET) &&
      strcmp(method, MHD_HTTP_METHOD_HEAD)) {
    static char msg[] = "only GET and HEAD\n";
    return answer(conn, MHD_HTTP_METHOD_NOT_ALLOWED, plain, msg,
                  sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
  }
  if (!strcmp(url, "/"))
    return answer(conn, MHD_HTTP_OK, "text/html; charset=utf-8",
                  (char *)INDEX_PAGE, sizeof INDEX_PAGE - 1,
                  MHD_RESPMEM_PERSISTENT);
  if (strcmp(url, "/metrics")) {
    static char msg[] = "not found: loupe serves /metrics\n";
    return answer(conn, MHD_HTTP_NOT_FOUND, plain, msg, sizeof msg - 1,
                  MHD_RESPMEM_PERSISTENT);
  }
  bool om = http_wants_openmetrics(
      mhd.MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Accept"));
  size_t len = 0;
  char *body = s->render(s->arg, om, &len);
  if (!body) {
    static char msg[] = "loupe could not read its maps\n";
    return answer(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, plain, msg,
                  sizeof msg - 1, MHD_RESPMEM_PERSISTENT);
  }
  return answer(conn, MHD_HTTP_OK,
                om ? "application/openmetrics-text; version=1.0.0; "
                     "charset=utf-8"
                   : "text/plain; version=0.0.4; charset=utf-8",
                body, len, MHD_RESPMEM_MUST_FREE);
}

/* libmicrohttpd's complaints (a client that misbehaved) are no concern
 * of the user's: loupe stays quiet about them. */
static void quiet(void *cls, const char *fmt, va_list ap) {}

HttpServer *http_serve(const char *spec, HttpRender render, void *arg,
                       char *err, size_t errlen) {
  struct sockaddr_storage addr;
  unsigned alen;
  char why[256];
  if (!http_parse_listen(spec, &addr, &alen, why, sizeof why)) {
    snprintf(err, errlen, "--metrics %s", why);
    return NULL;
  }
  if (!load_mhd(why, sizeof why)) {
    snprintf(err, errlen, "--metrics: %s", why);
    return NULL;
  }
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                  0);
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
      bind(fd, (struct sockaddr *)&addr, alen) || listen(fd, 16)) {
    snprintf(err, errlen, "--metrics %s: cannot listen there: %s", spec,
             strerror(errno));
    if (fd >= 0) close(fd);
    return NULL;
  }
  HttpServer *s = calloc(1, sizeof *s);
  if (!s) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  *s = (HttpServer){.listen_fd = fd, .render = render, .arg = arg};
  unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  s->daemon = mhd.MHD_start_daemon(
      flags, 0, NULL, NULL, on_request, s,
      MHD_OPTION_LISTEN_SOCKET, fd,
      MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTIONS_MAX,
      MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_TIMEOUT_S,
      MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_CONNECTION_MEMORY,
      MHD_OPTION_EXTERNAL_LOGGER, quiet, NULL, MHD_OPTION_END);
  if (!s->daemon) {
    snprintf(err, errlen, "--metrics %s: the HTTP server did not start",
             spec);
    close(fd);
    free(s);
    return NULL;
  }
  return s;
}

int http_fd(const HttpServer *s) {
  const union MHD_DaemonInfo *i =
      mhd.MHD_get_daemon_info(s->daemon, MHD_DAEMON_INFO_EPOLL_FD);
  return i ? i->epoll_fd : -1;
}

void http_run(HttpServer *s) { mhd.MHD_run(s->daemon); }

void http_stop(HttpServer *s) {
  if (!s) return;
  mhd.MHD_stop_daemon(s->daemon);
  close(s->listen_fd);
  free(s);
}

#endif
