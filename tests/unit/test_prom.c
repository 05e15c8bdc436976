/* output/prom.c: metric names, label names and escaped label values, as
 * the exposition formats want them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/prom.h"

#include "expect.h"

static bool name_is(const char *map, const char *want) {
  char buf[64];
  prom_metric_name(map, buf, sizeof buf);
  return !strcmp(buf, want);
}

static bool escapes_to(const char *s, size_t len, const char *want) {
  char *got = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&got, &n);
  prom_put_label_value(f, s, len);
  fclose(f);
  bool ok = !strcmp(got, want);
  if (!ok) fprintf(stderr, "escaped: [%s]\n", got);
  free(got);
  return ok;
}

int main(void) {
  EXPECT("named", name_is("@bytes", "loupe_bytes"));
  EXPECT("unnamed", name_is("@", "loupe_map"));
  EXPECT("digits", name_is("@x9_y", "loupe_x9_y"));
  char small[8];
  prom_metric_name("@a_long_name", small, sizeof small);
  EXPECT("cut", !strcmp(small, "loupe_a"));

  EXPECT("plain label", prom_label_name_ok("comm"));
  EXPECT("underscore", prom_label_name_ok("_x1"));
  EXPECT("reserved", !prom_label_name_ok("__name__"));
  EXPECT("digit first", !prom_label_name_ok("0a"));
  EXPECT("dot", !prom_label_name_ok("args.x"));
  EXPECT("empty", !prom_label_name_ok(""));

  EXPECT("plain", escapes_to("bash", 4, "bash"));
  EXPECT("quote, backslash, newline",
         escapes_to("a\"b\\c\nd", 7, "a\\\"b\\\\c\\nd"));
  EXPECT("utf-8 kept", escapes_to("caf\xc3\xa9", 5, "caf\xc3\xa9"));
  EXPECT("bad byte", escapes_to("a\xff" "b", 3, "a\xef\xbf\xbd" "b"));
  EXPECT("cut sequence", escapes_to("a\xe2\x82", 3, "a\xef\xbf\xbd\xef\xbf\xbd"));
  EXPECT("overlong", escapes_to("\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd"));
  EXPECT("surrogate", escapes_to("\xed\xa0\x80", 3,
                                 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"));

  char *got = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&got, &n);
  prom_put_help(f, "a\\b\nc\"d");
  fclose(f);
  EXPECT("help", !strcmp(got, "a\\\\b\\nc\"d"));
  free(got);
  printf("test_prom: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
