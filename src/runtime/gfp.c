/* gfp: printf's %gr, GFP (get free pages) flags by name, as the kernel's
 * own %pGg prints them: "GFP_KERNEL", "GFP_ATOMIC|__GFP_HIGHMEM".
 *
 * The names and their bit values are the running kernel's: its kmem
 * tracepoints print gfp_flags with __print_flags(), whose table (composite
 * names first, then single bits) is written out in each one's `print fmt`
 * as C constant expressions, e.g.
 *   {( unsigned long)((( gfp_t)((((1UL))) << (10))) | ...), "GFP_KERNEL"}
 * These are read once and evaluated here: numbers, casts, ( ), ~, <<, &
 * and |. Bits no name covers print as a hex number after the names; with
 * no table (no tracefs) the value prints as hex. */
#include "runtime/gfp.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes/provider.h"

typedef struct GfpName {
  uint64_t mask;
  char name[48];
} GfpName;

static GfpName *names;
static int nnames;

/* ---- a C constant expression ----------------------------------------- */

static const char *skip_blanks(const char *p) {
  while (*p == ' ' || *p == '\t') p++;
  return p;
}

static uint64_t or_expr(const char **pp, bool *ok);

/* "( gfp_t)", "( unsigned long)": a cast, which changes nothing here. */
static bool is_cast(const char *p) {
  p = skip_blanks(p + 1);
  if (!isalpha((unsigned char)*p) && *p != '_') return false;
  while (isalnum((unsigned char)*p) || *p == '_' || *p == ' ') p++;
  return *p == ')';
}

static uint64_t unary(const char **pp, bool *ok) {
  const char *p = skip_blanks(*pp);
  uint64_t v = 0;
  if (*p == '~') {
    *pp = p + 1;
    return ~unary(pp, ok);
  }
  if (*p == '(' && is_cast(p)) {
    *pp = strchr(p, ')') + 1;
    return unary(pp, ok);
  }
  if (*p == '(') {
    *pp = p + 1;
    v = or_expr(pp, ok);
    p = skip_blanks(*pp);
    if (*p != ')') *ok = false;
    *pp = p + (*p == ')');
    return v;
  }
  char *end;
  v = strtoull(p, &end, 0);
  if (end == p) *ok = false;
  while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
  *pp = end;
  return v;
}

static uint64_t shift_expr(const char **pp, bool *ok) {
  uint64_t v = unary(pp, ok);
  for (;;) {
    const char *p = skip_blanks(*pp);
    if (p[0] != '<' || p[1] != '<') return v;
    *pp = p + 2;
    uint64_t by = unary(pp, ok);
    v = by < 64 ? v << by : 0;
  }
}

static uint64_t and_expr(const char **pp, bool *ok) {
  uint64_t v = shift_expr(pp, ok);
  for (;;) {
    const char *p = skip_blanks(*pp);
    if (*p != '&' || p[1] == '&') return v;
    *pp = p + 1;
    v &= shift_expr(pp, ok);
  }
}

static uint64_t or_expr(const char **pp, bool *ok) {
  uint64_t v = and_expr(pp, ok);
  for (;;) {
    const char *p = skip_blanks(*pp);
    if (*p != '|' || p[1] == '|') return v;
    *pp = p + 1;
    v |= and_expr(pp, ok);
  }
}

/* ---- the table --------------------------------------------------------- */

/* The {expression, "NAME"} pairs of the first __print_flags() of text. */
static void read_table(const char *text) {
  const char *p = strstr(text, "__print_flags(");
  if (!p) return;
  while ((p = strchr(p, '{')) != NULL) {
    const char *q = p + 1;
    bool ok = true;
    uint64_t mask = or_expr(&q, &ok);
    q = skip_blanks(q);
    if (!ok || *q != ',') break;
    q = skip_blanks(q + 1);
    const char *close = *q == '"' ? strchr(q + 1, '"') : NULL;
    if (!close || close - q - 1 >= (int)sizeof names[0].name) break;
    names = realloc(names, sizeof *names * (nnames + 1));
    if (!names) abort();
    names[nnames].mask = mask;
    snprintf(names[nnames].name, sizeof names[0].name, "%.*s",
             (int)(close - q - 1), q + 1);
    nnames++;
    p = close;
  }
}

static void load_table(void) {
  static bool loaded;
  if (loaded) return;
  loaded = true;
  const char *dir = tracefs_dir();
  if (!dir) return;
  static const char *const events[] = {"kmem/kmalloc", "kmem/mm_page_alloc",
                                       "kmem/kmem_cache_alloc"};
  for (size_t i = 0; i < sizeof events / sizeof events[0] && !nnames; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/events/%s/format", dir, events[i]);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    char *text = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&text, &cap, f)) > 0)
      if (!strncmp(text, "print fmt:", 10)) {
        read_table(text);
        break;
      }
    free(text);
    fclose(f);
  }
}

void gfp_flags_text(uint64_t flags, char *buf, size_t len) {
  load_table();
  size_t o = 0;
  buf[0] = '\0';
  if (!nnames) {
    snprintf(buf, len, "%#" PRIx64, flags);
    return;
  }
  for (int i = 0; i < nnames && flags; i++) {
    uint64_t m = names[i].mask;
    if (!m || (flags & m) != m) continue;
    flags &= ~m;
    o += (size_t)snprintf(buf + o, o < len ? len - o : 0, "%s%s",
                          o ? "|" : "", names[i].name);
  }
  if (flags || o == 0)
    snprintf(buf + (o < len ? o : len - 1), o < len ? len - o : 1,
             "%s%#" PRIx64, o ? "|" : "", flags);
}
