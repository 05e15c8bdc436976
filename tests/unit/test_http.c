/* runtime/http.c: the listen address and Accept parsing, and a real
 * server on 127.0.0.1 answering requests, garbage and other methods,
 * driven by http_run as loupe's loop drives it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/http.h"

#include "expect.h"

static bool listen_ok(const char *spec, int family, int port) {
  struct sockaddr_storage ss;
  unsigned len;
  char err[256];
  if (!http_parse_listen(spec, &ss, &len, err, sizeof err)) return false;
  if (ss.ss_family != family) return false;
  if (family == AF_INET)
    return ntohs(((struct sockaddr_in *)&ss)->sin_port) == port;
  return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) == port;
}

static bool listen_bad(const char *spec, const char *says) {
  struct sockaddr_storage ss;
  unsigned len;
  char err[256] = "";
  return !http_parse_listen(spec, &ss, &len, err, sizeof err) &&
         strstr(err, says);
}

static void test_listen(void) {
  EXPECT("port alone", listen_ok("9435", AF_INET, 9435));
  EXPECT("v4", listen_ok("0.0.0.0:80", AF_INET, 80));
  EXPECT("v6", listen_ok("[::1]:9435", AF_INET6, 9435));
  EXPECT("port 0", listen_bad("0", "from 1 to 65535"));
  EXPECT("port too big", listen_bad("127.0.0.1:65536", "from 1 to 65535"));
  EXPECT("port not a number", listen_bad("12ab", "from 1 to 65535"));
  EXPECT("empty port", listen_bad("127.0.0.1:", "from 1 to 65535"));
  EXPECT("name", listen_bad("localhost:9435", "not looked up"));
  EXPECT("v6 without brackets", listen_bad("::1:9435", "in brackets"));
  EXPECT("empty address", listen_bad(":9435", "is not [ADDRESS:]PORT"));
  EXPECT("unclosed bracket", listen_bad("[::1:9435", "is not [ADDRESS:]PORT"));
}

static void test_accept(void) {
  /* what Prometheus 2.42 sends */
  EXPECT("prometheus",
         http_wants_openmetrics(
             "application/openmetrics-text;version=1.0.0,application/"
             "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;"
             "q=0.5,*/*;q=0.1"));
  EXPECT("none", !http_wants_openmetrics(NULL));
  EXPECT("curl", !http_wants_openmetrics("*/*"));
  EXPECT("text first", !http_wants_openmetrics(
                           "text/plain, application/openmetrics-text"));
  EXPECT("om first", http_wants_openmetrics(
                         "application/openmetrics-text, text/plain"));
  EXPECT("q decides", http_wants_openmetrics(
                          "text/plain;q=0.2, application/openmetrics-text"));
  EXPECT("q 0 refuses", !http_wants_openmetrics(
                            "application/openmetrics-text;q=0"));
  EXPECT("other version", !http_wants_openmetrics(
                              "application/openmetrics-text;version=2.0.0"));
  EXPECT("spaces", http_wants_openmetrics(
                       " application/openmetrics-text ; version=1.0.0 ; "
                       "q=0.9 , text/plain ; q=0.5"));
  EXPECT("garbage", !http_wants_openmetrics(";;;,,,q=,version="));
}

static int renders;
static char *render(void *arg, bool om, size_t *len) {
  renders++;
  char *s = strdup(om ? "# EOF\n" : "loupe_up 1\n");
  *len = strlen(s);
  return s;
}

/* A free port on 127.0.0.1, as the kernel hands them out. */
static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) ||
      getsockname(fd, (struct sockaddr *)&a, &len))
    return -1;
  close(fd);
  return ntohs(a.sin_port);
}

/* Sends req to the server and returns what came back before the server
 * closed the connection (or 2 s passed), driving the server meanwhile. */
static char *exchange(HttpServer *s, int port, const char *req, size_t n) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  static char buf[4096];
  size_t got = 0;
  buf[0] = 0;
  if (connect(fd, (struct sockaddr *)&a, sizeof a)) return buf;
  if (write(fd, req, n) != (ssize_t)n) return buf;
  shutdown(fd, SHUT_WR);
  for (int i = 0; i < 200; i++) {
    http_run(s);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 10) == 1) {
      ssize_t r = read(fd, buf + got, sizeof buf - 1 - got);
      if (r <= 0) break;
      got += (size_t)r;
      buf[got] = 0;
    }
  }
  close(fd);
  return buf;
}

static void test_server(void) {
  char err[256];
  char spec[32];
  HttpServer *s = NULL;
  for (int tries = 0; !s && tries < 5; tries++) {
    snprintf(spec, sizeof spec, "127.0.0.1:%d", free_port());
    s = http_serve(spec, render, NULL, err, sizeof err);
  }
  EXPECT("serve", s != NULL);
  if (!s) return;
  int port = atoi(strchr(spec, ':') + 1);
  EXPECT("fd", http_fd(s) >= 0);

  char again[256];
  EXPECT("in use", !http_serve(spec, render, NULL, again, sizeof again) &&
                       strstr(again, "Address already in use"));

  const char *get = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  char *r = exchange(s, port, get, strlen(get));
  EXPECT("text 200", !strncmp(r, "HTTP/1.1 200", 12));
  EXPECT("text type", strstr(r, "text/plain; version=0.0.4; charset=utf-8"));
  EXPECT("text body", strstr(r, "\r\n\r\nloupe_up 1\n"));

  const char *om =
      "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
      "Accept: application/openmetrics-text;version=1.0.0,text/plain;q=0.5\r\n\r\n";
  r = exchange(s, port, om, strlen(om));
  EXPECT("om type", strstr(r, "application/openmetrics-text; version=1.0.0"));
  EXPECT("om body", strstr(r, "\r\n\r\n# EOF\n"));

  const char *head = "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  r = exchange(s, port, head, strlen(head));
  EXPECT("head 200", !strncmp(r, "HTTP/1.1 200", 12) && !strstr(r, "loupe_up"));

  const char *post = "POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                     "Content-Length: 3\r\n\r\nabc";
  int before = renders;
  r = exchange(s, port, post, strlen(post));
  EXPECT("post 405", !strncmp(r, "HTTP/1.1 405", 12) && renders == before);

  const char *other = "GET /etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  r = exchange(s, port, other, strlen(other));
  EXPECT("404", !strncmp(r, "HTTP/1.1 404", 12));

  static const char garbage[] = "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
                                "\0\0\r\n\r\n\xff\xfe";
  before = renders;
  r = exchange(s, port, garbage, sizeof garbage - 1);
  EXPECT("garbage not served", renders == before && !strstr(r, "200 OK"));

  r = exchange(s, port, get, strlen(get));
  EXPECT("still serves", strstr(r, "loupe_up 1") != NULL);
  http_stop(s);
}

int main(void) {
  test_listen();
  test_accept();
  test_server();
  printf("test_http: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
