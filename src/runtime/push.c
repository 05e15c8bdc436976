/* push: see push.h. */
#include "runtime/push.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#ifdef LOUPE_STATIC

int http_push(const char *url, const char *body, size_t len, char *err,
              size_t errlen) {
  snprintf(err, errlen,
           "this static build of loupe cannot push (libcurl does not link "
           "statically on Debian 12): use the dynamic build, or write the "
           "metrics to a file for node_exporter's textfile collector "
           "(-f openmetrics -o FILE.prom)");
  return -1;
}

#else

/* calls go through pointers: no type-checking macros in their way */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "util/dlib.h"

/* libcurl, loaded when a push is made (util/dlib.h). */
#define CURL_FUNCTIONS(X)                                               \
  X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt)            \
  X(curl_easy_perform) X(curl_easy_getinfo) X(curl_easy_cleanup)       \
  X(curl_easy_strerror) X(curl_slist_append) X(curl_slist_free_all)
static struct {
#define CURL_FIELD(f) __typeof__(&f) f;
  CURL_FUNCTIONS(CURL_FIELD)
} curl;

static bool load_curl(char *err, size_t errlen) {
  static const char *const sonames[] = {"libcurl.so.4",
                                        "libcurl-gnutls.so.4", NULL};
  static const char *const names[] = {
#define CURL_NAME(f) #f,
      CURL_FUNCTIONS(CURL_NAME) NULL};
  static bool loaded;
  void *fns[sizeof names / sizeof *names];
  if (loaded) return true;
  if (!dlib_load(sonames, "libcurl4", names, fns, err, errlen)) return false;
  int i = 0;
#define CURL_SET(f) *(void **)&curl.f = fns[i++];
  CURL_FUNCTIONS(CURL_SET)
  if (curl.curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
    snprintf(err, errlen, "libcurl did not start");
    return false;
  }
  return loaded = true;
}

#define PUSH_CONNECT_TIMEOUT_S 5L
#define PUSH_TIMEOUT_S 15L
#define REPLY_KEPT 200

typedef struct Reply {
  char text[REPLY_KEPT + 1];
  size_t len;
} Reply;

/* Keeps the start of the gateway's answer, for the error message. */
static size_t keep_reply(char *data, size_t size, size_t n, void *arg) {
  Reply *r = arg;
  size_t bytes = size * n;
  for (size_t i = 0; i < bytes && r->len < REPLY_KEPT; i++) {
    unsigned char c = (unsigned char)data[i];
    r->text[r->len++] = isprint(c) ? (char)c : ' ';
  }
  r->text[r->len] = 0;
  return bytes;
}

int http_push(const char *url, const char *body, size_t len, char *err,
              size_t errlen) {
  char why[256];
  if (!load_curl(why, sizeof why)) {
    snprintf(err, errlen, "pushing to %s: %s", url, why);
    return -1;
  }
  CURL *h = curl.curl_easy_init();
  if (!h) {
    snprintf(err, errlen, "libcurl did not start");
    return -1;
  }
  Reply reply = {.len = 0};
  struct curl_slist *headers = curl.curl_slist_append(
      NULL, "Content-Type: text/plain; version=0.0.4; charset=utf-8");
  curl.curl_easy_setopt(h, CURLOPT_URL, url);
  curl.curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl.curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
  curl.curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
  curl.curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
  curl.curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  curl.curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, PUSH_CONNECT_TIMEOUT_S);
  curl.curl_easy_setopt(h, CURLOPT_TIMEOUT, PUSH_TIMEOUT_S);
  curl.curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl.curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, keep_reply);
  curl.curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply);
  CURLcode rc = curl.curl_easy_perform(h);
  long status = 0;
  curl.curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl.curl_slist_free_all(headers);
  curl.curl_easy_cleanup(h);
  if (rc != CURLE_OK) {
    snprintf(err, errlen, "pushing to %s: %s", url, curl.curl_easy_strerror(rc));
    return -1;
  }
  if (status < 200 || status > 299) {
    snprintf(err, errlen, "pushing to %s: the gateway answered %ld%s%s", url,
             status, reply.len ? ": " : "", reply.text);
    return -1;
  }
  return 0;
}

#endif
