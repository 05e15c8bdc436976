/* prom: see prom.h. */
#include "output/prom.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

void prom_metric_name(const char *map, char *out, size_t len) {
  if (!len) return;
  const char *name = map[0] == '@' ? map + 1 : map;
  if (!*name) name = "map";
  size_t n = (size_t)snprintf(out, len, "loupe_%s", name);
  if (n >= len) n = len - 1;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)out[i]) && out[i] != '_') out[i] = '_';
}

bool prom_label_name_ok(const char *s) {
  if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  if (s[0] == '_' && s[1] == '_') return false;
  for (const char *p = s; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_') return false;
  return true;
}

/* The length of the UTF-8 sequence at s (n bytes left), 0 if it is not
 * one: overlong forms, surrogates and code points past U+10FFFF are not. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  if (s[0] < 0x80) return 1;
  size_t len;
  uint32_t cp, min;
  if ((s[0] & 0xe0) == 0xc0) len = 2, cp = s[0] & 0x1f, min = 0x80;
  else if ((s[0] & 0xf0) == 0xe0) len = 3, cp = s[0] & 0x0f, min = 0x800;
  else if ((s[0] & 0xf8) == 0xf0) len = 4, cp = s[0] & 0x07, min = 0x10000;
  else return 0;
  if (len > n) return 0;
  for (size_t i = 1; i < len; i++) {
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return len;
}

void prom_put_label_value(FILE *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  for (size_t i = 0; i < len;) {
    size_t n = utf8_len(p + i, len - i);
    if (!n) {
      fputs("\xef\xbf\xbd", out);   /* U+FFFD */
      i++;
      continue;
    }
    if (p[i] == '\\') fputs("\\\\", out);
    else if (p[i] == '"') fputs("\\\"", out);
    else if (p[i] == '\n') fputs("\\n", out);
    else fwrite(p + i, 1, n, out);
    i += n;
  }
}

void prom_put_help(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '\\') fputs("\\\\", out);
    else if (*s == '\n') fputs("\\n", out);
    else fputc(*s, out);
  }
}
