/* print_named: values that the kernel side keeps as numbers or bytes and
 * that user space prints as text (Type.named): an errno's message, a
 * signal's description, an IP or MAC address. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "runtime/print.h"

const char *named_int_text(const Type *t, uint64_t v, char *buf,
                           size_t len) {
  switch (t->named) {
  case NAMED_ERRNO:
    snprintf(buf, len, "%s", strerror((int)v));
    return buf;
  case NAMED_SIGNAL:
    /* as strsignal() words it, for the numbers signals have */
    if ((int64_t)v >= 0 && (int64_t)v < NSIG)
      snprintf(buf, len, "%s", strsignal((int)v));
    else
      snprintf(buf, len, "N/A");
    return buf;
  default:
    return NULL;
  }
}

const char *named_buf_text(const Type *t, const uint8_t *p, char *buf,
                           size_t len) {
  uint64_t head;
  memcpy(&head, p, 8);
  const uint8_t *data = p + 8;
  switch (t->named) {
  case NAMED_INET:
    if ((head == AF_INET || head == AF_INET6) &&
        inet_ntop((int)head, data, buf, (socklen_t)len))
      return buf;
    if (len) buf[0] = '\0';   /* not an address family */
    return buf;
  case NAMED_MAC:
    snprintf(buf, len, "%02X:%02X:%02X:%02X:%02X:%02X", data[0], data[1],
             data[2], data[3], data[4], data[5]);
    return buf;
  default:
    return NULL;
  }
}
