/* Unit tests of the output encoders (src/output/): text, JSON and folded
 * stacks written from values made by hand, no map or kernel involved —
 * how a new format is tested. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/encoder.h"

#include "expect.h"

/* What an encoder wrote: the hook runs on an Output over a memory
 * stream. */
typedef struct Written {
  Output o;
  char *buf;
  size_t len;
} Written;

static Output *written_open(Written *w, const Encoder *enc) {
  w->buf = NULL;
  w->len = 0;
  w->o = (Output){.enc = enc, .out = open_memstream(&w->buf, &w->len)};
  return &w->o;
}

/* Closes the stream and compares; frees the text. */
static bool written_is(Written *w, const char *want) {
  fclose(w->o.out);
  bool same = w->buf && !strcmp(w->buf, want);
  if (!same) fprintf(stderr, "  wrote \"%s\"\n  want  \"%s\"\n", w->buf, want);
  free(w->buf);
  return same;
}

static Value int_value(int64_t n, bool is_signed) {
  Value v;
  value_int(&v, (uint64_t)n, is_signed);
  return v;
}

static Value str_value(const char *s) {
  return (Value){.kind = VAL_STR, .bytes = s, .len = strlen(s)};
}

static void test_events(void) {
  Written w;
  output_message(written_open(&w, &text_encoder), "printf", "hi \"x\"\n", 7,
                 false);
  EXPECT("printf text", written_is(&w, "hi \"x\"\n"));
  output_message(written_open(&w, &json_encoder), "printf", "hi \"x\"\n", 7,
                 false);
  EXPECT("printf json",
         written_is(&w, "{\"type\": \"printf\", \"data\": \"hi \\\"x\\\"\\n\"}\n"));
  output_message(written_open(&w, &text_encoder), "join", "a b", 3, true);
  EXPECT("join text ends its line", written_is(&w, "a b\n"));

  /* print((1, "a", true)) */
  Value elems[3] = {int_value(1, true), str_value("a"), int_value(1, false)};
  elems[2].hint = INT_BOOL;
  Value tuple = {.kind = VAL_TUPLE, .n = 3, .elems = elems};
  output_event(written_open(&w, &text_encoder), "value", &tuple, true);
  EXPECT("tuple text", written_is(&w, "(1, a, true)\n"));
  output_event(written_open(&w, &json_encoder), "value", &tuple, true);
  EXPECT("tuple json",
         written_is(&w, "{\"type\": \"value\", \"data\": [1,\"a\",true]}\n"));

  /* a record with a pointer: hex in text, its number in JSON */
  Value fields[2] = {int_value(-2, true), int_value(16, false)};
  fields[1].hint = INT_POINTER;
  fields[1].text = "0x10";
  const char *names[] = {"a", "p"};
  Value rec = {.kind = VAL_RECORD, .n = 2, .elems = fields, .names = names};
  output_event(written_open(&w, &text_encoder), "value", &rec, true);
  EXPECT("record text", written_is(&w, "{ .a = -2, .p = 0x10 }\n"));
  output_event(written_open(&w, &json_encoder), "value", &rec, true);
  EXPECT("record json", written_is(&w, "{\"type\": \"value\", \"data\": "
                                       "{\"a\": -2, \"p\": 16}}\n"));
}

/* @c[ONE, x] = count() of 5, the enum key by name in text and by number
 * in JSON's member name. */
static void test_map_keys(void) {
  Value keys[2] = {int_value(1, false), str_value("x")};
  keys[0].hint = INT_ENUM;
  keys[0].text = "ONE";
  DecodedEntry e = {.keys = {.kind = VAL_TUPLE, .n = 2, .elems = keys},
                    .value = int_value(5, false), .weight = 5};
  DecodedMap d = {.name = "@c", .nkeys = 2, .agg = VAL_INT, .div = 1,
                  .entries = &e, .n = 1};
  Written w;
  text_encoder.map(written_open(&w, &text_encoder), &d);
  EXPECT("map text", written_is(&w, "@c[ONE, x]: 5\n"));
  json_encoder.map(written_open(&w, &json_encoder), &d);
  EXPECT("map json", written_is(&w, "{\"type\": \"map\", \"data\": "
                                    "{\"@c\": {\"1,x\": 5}}}\n"));
  d.n = 0;
  json_encoder.map(written_open(&w, &json_encoder), &d);
  EXPECT("empty map json", written_is(&w, ""));
  text_encoder.map(written_open(&w, &text_encoder), &d);
  EXPECT("empty map text", written_is(&w, "\n"));
}

static void test_stats_and_hist(void) {
  DecodedEntry e = {.value = {.kind = VAL_STATS,
                              .stats = {.count = 2, .total = 6,
                                        .average = 3}}};
  DecodedMap d = {.name = "@s", .agg = VAL_STATS, .div = 1, .entries = &e,
                  .n = 1};
  Written w;
  text_encoder.map(written_open(&w, &text_encoder), &d);
  EXPECT("stats text",
         written_is(&w, "@s: count 2, average 3, total 6\n\n"));
  json_encoder.map(written_open(&w, &json_encoder), &d);
  EXPECT("stats json", written_is(&w, "{\"type\": \"stats\", \"data\": "
                                      "{\"@s\": {\"count\": 2, \"average\": "
                                      "3, \"total\": 6}}}\n"));

  HistBucket b[2] = {{.lo = 4, .hi = 8, .count = 2},
                     {.lo = 8, .hi = 16, .count = 1}};
  e.value = (Value){.kind = VAL_HIST,
                    .hist = {.buckets = b, .n = 2, .peak = 2, .div = 1}};
  d = (DecodedMap){.name = "@h", .agg = VAL_HIST, .div = 1, .entries = &e,
                   .n = 1};
#define AT26 "@@@@@@@@@@@@@@@@@@@@@@@@@@"
#define SP26 "                          "
  text_encoder.map(written_open(&w, &text_encoder), &d);
  EXPECT("hist text",
         written_is(&w, "@h:\n"
                        "[4, 8)                 2 |" AT26 AT26 "|\n"
                        "[8, 16)                1 |" AT26 SP26 "|\n\n"));
  json_encoder.map(written_open(&w, &json_encoder), &d);
  EXPECT("hist json", written_is(&w, "{\"type\": \"hist\", \"data\": {\"@h\": "
                                     "[{\"min\": 4, \"max\": 7, \"count\": "
                                     "2}, {\"min\": 8, \"max\": 15, "
                                     "\"count\": 1}]}}\n"));
}

/* @[comm, kstack] = count(): the comm, then the stack from its root. */
static void test_folded(void) {
  char *frames[] = {"leaf", "mid;dle", "root"};
  Value keys[2] = {str_value("bash"),
                   {.kind = VAL_STACK, .text = "", .frames = frames,
                    .nframes = 3}};
  DecodedEntry e = {.keys = {.kind = VAL_TUPLE, .n = 2, .elems = keys},
                    .value = int_value(3, false), .weight = 3};
  DecodedMap d = {.name = "@", .nkeys = 2, .agg = VAL_INT, .div = 1,
                  .has_stack_key = true, .entries = &e, .n = 1};
  Written w;
  folded_encoder.map(written_open(&w, &folded_encoder), &d);
  EXPECT("folded", written_is(&w, "bash;root;mid_dle;leaf 3\n"));
}

int main(void) {
  test_events();
  test_map_keys();
  test_stats_and_hist();
  test_folded();
  printf("test_output: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
