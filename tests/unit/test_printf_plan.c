/* printf formats parsed once (runtime/print.c's plans): the text a run
 * makes of each record with its format's plan, in the buffer it reuses
 * record after record, is what print_printf makes of the record alone
 * (which test_print.c holds to bpftrace's output). No kernel needed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/checker.h"
#include "runtime/print.h"

static int passed, failed;

/* A printf id's definition and one record of it: integers take 8 bytes,
 * strings their size rounded up to 8, as check lays them out. */
typedef struct Rec {
  uint8_t payload[256];
} Rec;

static void add_int(PrintfDef *d, Rec *r, int64_t v) {
  FmtArg *a = &d->args[d->nargs++];
  a->type = ty_int(8, true);
  a->offset = d->size;
  memcpy(r->payload + a->offset, &v, 8);
  d->size += 8;
}

static void add_str(PrintfDef *d, Rec *r, const char *s, int size) {
  FmtArg *a = &d->args[d->nargs++];
  a->type = ty_str(size);
  a->offset = d->size;
  strncpy((char *)r->payload + a->offset, s, (size_t)size);
  d->size += (size + 7) & ~7;
}

/* print_printf's bytes for the record alone. */
static char *alone(const PrintfDef *d, const Rec *r, size_t *len) {
  char *buf = NULL;
  FILE *f = open_memstream(&buf, len);
  print_printf(d, r->payload, f);
  fclose(f);
  return buf;
}

static void same(Compiled *c, Loaded *l, uint32_t id, const Rec *r,
                 int line) {
  size_t want_len;
  char *want = alone(&c->printfs[id], r, &want_len);
  const TextBuf *got = printf_text(c, l, id, r->payload);
  if (got && got->len == want_len && !memcmp(got->s, want, want_len) &&
      got->s[got->len] == '\0') {
    passed++;
  } else {
    failed++;
    fprintf(stderr, "test_printf_plan.c:%d: FAILED: printf id %u: %zu "
            "bytes, print_printf %zu\n", line, id, got ? got->len : 0,
            want_len);
  }
  free(want);
}

int main(void) {
  enum { N = 5 };
  PrintfDef defs[N];
  Rec recs[N];
  memset(defs, 0, sizeof defs);
  memset(recs, 0, sizeof recs);
  /* conversions with flags and widths, "%%" before and after them */
  defs[0].fmt = "%d%% of %-6s|%5x|%%\n";
  add_int(&defs[0], &recs[0], -42);
  add_str(&defs[0], &recs[0], "comm", 16);
  add_int(&defs[0], &recs[0], 255);
  /* a format with NULs: stretches formatted one at a time */
  static const char nul_fmt[] = "a %d\0b %s\0c\n";
  defs[1].fmt = (char *)nul_fmt;
  defs[1].fmt_len = (int)sizeof nul_fmt - 1;
  add_int(&defs[1], &recs[1], 7);
  add_str(&defs[1], &recs[1], "xy", 8);
  /* %c of 0 ends its piece; a long string through a width */
  defs[2].fmt = "[%c]%-40s.\n";
  add_int(&defs[2], &recs[2], 0);
  add_str(&defs[2], &recs[2], "a string longer than the one before", 64);
  /* no arguments: written as is, "%%" too */
  defs[3].fmt = "100%% done\n";
  /* print(value)'s definitions have no format and no plan */
  defs[4].fmt = NULL;
  Compiled c = {.printfs = defs, .nprintfs = N};
  Loaded l = {0};
  printf_plans_make(&c, &l);
  /* each twice, a long record between, in the buffer they share */
  for (int round = 0; round < 2; round++)
    for (uint32_t id = 0; id < 4; id++) same(&c, &l, id, &recs[id], __LINE__);
  if (printf_text(&c, &l, 4, recs[4].payload)) {
    failed++;
    fprintf(stderr, "test_printf_plan.c: FAILED: a text without a format\n");
  } else {
    passed++;
  }
  printf_plans_free(&c, &l);
  printf("test_printf_plan: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
