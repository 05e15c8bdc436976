/* print and run against real kernel maps (needs root).
 *
 * Each map test creates a map laid out as check lays it out (see MapSym in
 * program.h), fills it from user space, prints it and compares with what
 * bpftrace 0.17 prints for the script in the comment next to it. printf
 * tests compare with bpftrace's output for the same format and values.
 * The run tests feed records to the dispatcher and run hand-written BEGIN
 * and END programs through run_script. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "codegen/insn.h"
#include "output/encoder.h"
#include "runtime/print.h"
#include "probes/provider.h"
#include "runtime/run.h"
#include "runtime/state.h"

/* run.c's record dispatcher, not in run.h: only this test calls it. */
int run_handle_record(const EventCtx *e, const void *data, size_t size);

static int passed, failed;

static void expect_text(const char *got, const char *want, const char *what,
                        int line) {
  if (got && !strcmp(got, want)) {
    passed++;
    return;
  }
  failed++;
  fprintf(stderr, "test_print.c:%d: FAILED: %s\n  want: \"", line, what);
  for (const char *p = want; *p; p++)
    fputs(*p == '\n' ? "\\n" : (char[2]){*p, 0}, stderr);
  fputs("\"\n  got:  \"", stderr);
  for (const char *p = got ? got : "(null)"; *p; p++)
    fputs(*p == '\n' ? "\\n" : (char[2]){*p, 0}, stderr);
  fputs("\"\n", stderr);
}

#define EXPECT_TEXT(got, want) expect_text(got, want, #got, __LINE__)
#define CHECK(cond)                                                      \
  do {                                                                   \
    if (cond) {                                                          \
      passed++;                                                          \
    } else {                                                             \
      failed++;                                                          \
      fprintf(stderr, "test_print.c:%d: FAILED: %s\n", __LINE__, #cond); \
    }                                                                    \
  } while (0)

/* ---- output capture ---------------------------------------------------- */

typedef struct Capture {
  FILE *f;
  char *buf;
  size_t len;
} Capture;

static FILE *capture_open(Capture *c) {
  c->buf = NULL;
  c->len = 0;
  c->f = open_memstream(&c->buf, &c->len);
  return c->f;
}

/* Closes the stream; the text stays in c->buf until capture_free. */
static const char *capture_text(Capture *c) {
  fclose(c->f);
  return c->buf;
}

static void capture_free(Capture *c) { free(c->buf); }

/* ---- maps as check lays them out --------------------------------------- */

static Type ty_int(int size, bool is_signed) {
  Type t = {.kind = TY_INT, .size = size, .is_signed = is_signed};
  return t;
}

static Type ty_str(int size) {
  Type t = {.kind = TY_STR, .size = size};
  return t;
}

static Type ty_agg(AggKind agg) {
  Type t = {.kind = TY_AGG, .size = 8, .is_signed = agg != AGG_COUNT,
            .agg = agg};
  return t;
}

static int ncpus;

static int align8(int n) { return (n + 7) & ~7; }

static MapSym *map_new_sized(const char *name, int nkeys, const Type *keys,
                             Type value, int value_size);

/* Creates the kernel map for a MapSym with the given keys and value. */
static MapSym *map_new(const char *name, int nkeys, const Type *keys,
                       Type value) {
  int size = 8;
  if (value.kind == TY_AGG) {
    if (value.agg == AGG_MIN || value.agg == AGG_MAX ||
        value.agg == AGG_AVG || value.agg == AGG_STATS)
      size = 16;
  } else if (value.kind == TY_STR) {
    size = align8(value.size);
  } else if (value.kind == TY_TUPLE) {
    size = value.tuple->size;
  } else if (value.kind == TY_BUF) {
    size = 8 + align8(value.size);
  }
  return map_new_sized(name, nkeys, keys, value, size);
}

/* The state (fd, zeroed, cleared) of each map the test made. */
#define MAX_TEST_MAPS 64
static struct {
  const MapSym *map;
  MapState state;
} made[MAX_TEST_MAPS];

static MapState *state_of(const MapSym *m) {
  for (int i = 0; i < MAX_TEST_MAPS; i++)
    if (made[i].map == m) return &made[i].state;
  for (int i = 0; i < MAX_TEST_MAPS; i++)
    if (!made[i].map) {
      made[i].map = m;
      made[i].state = (MapState){.fd = -1};
      return &made[i].state;
    }
  fprintf(stderr, "test_print: more than %d maps\n", MAX_TEST_MAPS);
  exit(2);
}

/* The maps of c as the runtime holds them: ids are their places in
 * c->maps, each state the test's own (copied back by loaded_done). */
static Loaded loaded_of(Compiled *c) {
  Loaded l = {.nmaps = c->nmaps, .ringbuf_fd = -1, .wake_fd = -1,
              .scratch_fd = -1, .big_scratch_fd = -1, .counts_fd = -1,
              .skb_output_fd = -1};
  l.maps = calloc((size_t)c->nmaps + 1, sizeof *l.maps);
  for (int i = 0; i < c->nmaps; i++) {
    c->maps[i]->id = i;
    l.maps[i] = *state_of(c->maps[i]);
  }
  return l;
}

static void loaded_done(Loaded *l, const Compiled *c) {
  for (int i = 0; i < c->nmaps; i++) *state_of(c->maps[i]) = l->maps[i];
  free(l->maps);
  free(l->warn_repeats);
}

/* Hands one record to the dispatcher, as the run does. */
static void handle_record(Compiled *c, FILE *out, int format, int *exit_seen,
                          const void *data, size_t size) {
  Loaded l = loaded_of(c);
  Output o = output_for(format, out);
  EventCtx e = {.c = c, .l = &l, .output = &o, .exit_seen = exit_seen};
  run_handle_record(&e, data, size);
  loaded_done(&l, c);
}

/* The kernel map m describes, into its state's fd; exits if there can be
 * none. */
static void create_map(MapSym *m) {
  MapState *st = state_of(m);
  st->fd = bpf_map_create(m->bpf_type, "test_print", m->key_size,
                         m->value_size, m->max_entries, NULL);
  if (st->fd < 0) {
    fprintf(stderr, "bpf_map_create: %s (are you root?)\n", strerror(errno));
    exit(2);
  }
}

/* The same with the value size given (histograms). */
static MapSym *map_new_sized(const char *name, int nkeys, const Type *keys,
                             Type value, int value_size) {
  MapSym *m = calloc(1, sizeof *m);
  m->name = strdup(name);
  m->nkeys = nkeys;
  int off = 0;
  for (int i = 0; i < nkeys; i++) {
    m->key_types[i] = keys[i];
    m->key_off[i] = off;
    off += keys[i].kind == TY_STR ? align8(keys[i].size) : 8;
  }
  m->key_size = nkeys ? off : 8;
  m->value_type = value;
  m->bpf_type = value.kind == TY_AGG ? BPF_MAP_TYPE_PERCPU_HASH
                                     : BPF_MAP_TYPE_HASH;
  m->value_size = value_size;
  m->max_entries = 64;
  create_map(m);
  return m;
}

/* A keyless aggregation in a one-slot per-CPU array, as the checker lays
 * one out unless delete() or has_key() may find it missing. */
static MapSym *keyless_array_new(const char *name, Type value) {
  MapSym *m = map_new(name, 0, NULL, value);
  close(state_of(m)->fd);
  m->bpf_type = BPF_MAP_TYPE_PERCPU_ARRAY;
  m->key_size = 4;
  m->max_entries = 1;
  create_map(m);
  return m;
}

static void map_free(MapSym *m) {
  MapState *st = state_of(m);
  close(st->fd);
  for (int i = 0; i < MAX_TEST_MAPS; i++)
    if (made[i].map == m) made[i].map = NULL;
  free(m->name);
  free(m);
}

/* A key being built: integer and string parts at the map's offsets. */
typedef struct Key {
  uint8_t bytes[128];
} Key;

static void key_int(const MapSym *m, Key *k, int i, int64_t v) {
  memcpy(k->bytes + m->key_off[i], &v, 8);
}

static void key_str(const MapSym *m, Key *k, int i, const char *s) {
  strncpy((char *)k->bytes + m->key_off[i], s, m->key_types[i].size);
}

/* Sets a plain (not per-CPU) value: an integer or a string. */
static void put_int(const MapSym *m, const Key *k, int64_t v) {
  CHECK(bpf_map_update_elem(state_of(m)->fd, k->bytes, &v, BPF_ANY) == 0);
}

static void put_str(const MapSym *m, const Key *k, const char *s) {
  char buf[256] = {0};
  strncpy(buf, s, sizeof buf - 1);
  CHECK(bpf_map_update_elem(state_of(m)->fd, k->bytes, buf, BPF_ANY) == 0);
}

/* Sets a per-CPU value: slot i of `slots` (each 1 or 2 int64 words) goes to
 * CPU i; CPUs past nslots stay zero. */
static void put_percpu(const MapSym *m, const Key *k, const int64_t *slots,
                       int nslots) {
  int words = m->value_size / 8;
  int64_t *buf = calloc(ncpus, m->value_size);
  for (int c = 0; c < nslots && c < ncpus; c++)
    memcpy(buf + c * words, slots + c * words, m->value_size);
  CHECK(bpf_map_update_elem(state_of(m)->fd, k->bytes, buf, BPF_ANY) == 0);
  free(buf);
}

static void put_agg1(const MapSym *m, const Key *k, int64_t v) {
  put_percpu(m, k, &v, 1);
}

/* Two CPUs' slots of a min/max/avg value: {value, seen} or {total, count}. */
static void put_agg2(const MapSym *m, const Key *k, int64_t a0, int64_t b0,
                     int64_t a1, int64_t b1) {
  int64_t slots[4] = {a0, b0, a1, b1};
  put_percpu(m, k, slots, 2);
}

/* The text print_map writes for m. */
static char *printed(const MapSym *m) {
  Capture c;
  capture_open(&c);
  CHECK(print_map(m, state_of(m), c.f) == 0);
  capture_text(&c);
  return c.buf;
}

static Key nokey(void) {
  Key k;
  memset(&k, 0, sizeof k);
  return k;
}

#define EXPECT_MAP(m, want)          \
  do {                               \
    char *got_ = printed(m);         \
    expect_text(got_, want, #m, __LINE__); \
    free(got_);                      \
  } while (0)

/* ---- map tests ----------------------------------------------------------- */

/* bpftrace -e 'BEGIN { @b[1]=2; @b[3]=1; print(@b); exit(); }'
 *   @b[3]: 1
 *   @b[1]: 2                                                        */
static void test_int_values_sort_by_value(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *m = map_new("@b", 1, k1, ty_int(8, true));
  Key k = nokey();
  key_int(m, &k, 0, 1);
  put_int(m, &k, 2);
  key_int(m, &k, 0, 3);
  put_int(m, &k, 1);
  EXPECT_MAP(m, "@b[3]: 1\n@b[1]: 2\n");
  map_free(m);
}

/* bpftrace -e 'BEGIN { @a=1; print(@a); exit(); }'  ->  "@a: 1"      */
static void test_keyless_int(void) {
  MapSym *m = map_new("@a", 0, NULL, ty_int(8, true));
  Key k = nokey();
  put_int(m, &k, 1);
  EXPECT_MAP(m, "@a: 1\n");
  map_free(m);
}

/* Negative values sort first and print signed; the unsigned value prints
 * unsigned.
 * bpftrace -e 'BEGIN { @a[-5]=-3; @a[3]=-10; @a[2]=7; exit(); }'
 *   @a[3]: -10
 *   @a[-5]: -3
 *   @a[2]: 7
 * bpftrace -e 'BEGIN { @h=(uint64)-1; exit(); }' -> @h: 18446744073709551615 */
static void test_negative_and_unsigned_values(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *m = map_new("@a", 1, k1, ty_int(8, true));
  Key k = nokey();
  key_int(m, &k, 0, -5);
  put_int(m, &k, -3);
  key_int(m, &k, 0, 3);
  put_int(m, &k, -10);
  key_int(m, &k, 0, 2);
  put_int(m, &k, 7);
  EXPECT_MAP(m, "@a[3]: -10\n@a[-5]: -3\n@a[2]: 7\n");
  map_free(m);

  MapSym *h = map_new("@h", 0, NULL, ty_int(8, false));
  k = nokey();
  put_int(h, &k, -1);
  EXPECT_MAP(h, "@h: 18446744073709551615\n");
  map_free(h);
}

/* Integer keys print by their type. bpftrace 0.17 printed 8-byte keys
 * signed even when unsigned (@b[-1] below), which current bpftrace and
 * loupe do not (tests/differential/KNOWN.md, corner_map_key_uint64).
 * bpftrace -e 'BEGIN { @b[(uint64)-1]=(uint64)-1; @c[(uint32)-1]=1;
 *                      @d[(uint8)255]=1; @e[(int16)-3]=1; exit(); }'
 *   @b[18446744073709551615]: 18446744073709551615
 *   @c[4294967295]: 1
 *   @d[255]: 1
 *   @e[-3]: 1                                                        */
static void test_int_key_signedness(void) {
  Type kb[] = {ty_int(8, false)};
  MapSym *b = map_new("@b", 1, kb, ty_int(8, false));
  Key k = nokey();
  key_int(b, &k, 0, -1);
  put_int(b, &k, -1);
  EXPECT_MAP(b, "@b[18446744073709551615]: 18446744073709551615\n");
  map_free(b);

  Type kc[] = {ty_int(4, false)};
  MapSym *c = map_new("@c", 1, kc, ty_int(8, true));
  k = nokey();
  key_int(c, &k, 0, 0xffffffffLL);
  put_int(c, &k, 1);
  EXPECT_MAP(c, "@c[4294967295]: 1\n");
  map_free(c);

  Type kd[] = {ty_int(1, false)};
  MapSym *d = map_new("@d", 1, kd, ty_int(8, true));
  k = nokey();
  key_int(d, &k, 0, 255);
  put_int(d, &k, 1);
  EXPECT_MAP(d, "@d[255]: 1\n");
  map_free(d);

  Type ke[] = {ty_int(2, true)};
  MapSym *e = map_new("@e", 1, ke, ty_int(8, true));
  k = nokey();
  key_int(e, &k, 0, -3);
  put_int(e, &k, 1);
  EXPECT_MAP(e, "@e[-3]: 1\n");
  map_free(e);
}

/* bpftrace -e 'BEGIN { @g[(int8)-1, "x", 3]=(int8)-2; @[comm,2]=count();
 *                      exit(); }'
 *   @[bpftrace, 2]: 1
 *   @g[-1, x, 3]: -2                                                 */
static void test_multi_keys(void) {
  Type kg[] = {ty_int(1, true), ty_str(2), ty_int(8, true)};
  MapSym *g = map_new("@g", 3, kg, ty_int(8, true));
  Key k = nokey();
  key_int(g, &k, 0, -1);
  key_str(g, &k, 1, "x");
  key_int(g, &k, 2, 3);
  put_int(g, &k, -2);
  EXPECT_MAP(g, "@g[-1, x, 3]: -2\n");
  map_free(g);

  Type kc[] = {ty_str(COMM_SIZE), ty_int(8, true)};
  MapSym *c = map_new("@", 2, kc, ty_agg(AGG_COUNT));
  k = nokey();
  key_str(c, &k, 0, "bpftrace");
  key_int(c, &k, 1, 2);
  put_agg1(c, &k, 1);
  EXPECT_MAP(c, "@[bpftrace, 2]: 1\n");
  map_free(c);
}

/* String values sort by key: integers as unsigned (so -1 comes last),
 * strings byte-wise, key by key.
 * bpftrace -e 'BEGIN { @t[2]="x"; @t[-1]="y"; @t[10]="z"; exit(); }'
 *   @t[2]: x
 *   @t[10]: z
 *   @t[-1]: y
 * bpftrace -e 'BEGIN { @s["b",1]="x"; @s["a",2]="x"; @s["a",1]="x";
 *                      @u["x"]="q"; @u["b"]="z"; @u["aa"]="m"; exit(); }'
 *   @s[a, 1]: x
 *   @s[a, 2]: x
 *   @s[b, 1]: x
 *   @u[aa]: m
 *   @u[b]: z
 *   @u[x]: q                                                         */
static void test_string_values_sort_by_key(void) {
  Type kt[] = {ty_int(8, true)};
  MapSym *t = map_new("@t", 1, kt, ty_str(2));
  Key k = nokey();
  key_int(t, &k, 0, 2);
  put_str(t, &k, "x");
  key_int(t, &k, 0, -1);
  put_str(t, &k, "y");
  key_int(t, &k, 0, 10);
  put_str(t, &k, "z");
  EXPECT_MAP(t, "@t[2]: x\n@t[10]: z\n@t[-1]: y\n");
  map_free(t);

  Type ks[] = {ty_str(2), ty_int(8, true)};
  MapSym *s = map_new("@s", 2, ks, ty_str(2));
  const char *names[] = {"b", "a", "a"};
  int nums[] = {1, 2, 1};
  for (int i = 0; i < 3; i++) {
    k = nokey();
    key_str(s, &k, 0, names[i]);
    key_int(s, &k, 1, nums[i]);
    put_str(s, &k, "x");
  }
  EXPECT_MAP(s, "@s[a, 1]: x\n@s[a, 2]: x\n@s[b, 1]: x\n");
  map_free(s);

  Type ku[] = {ty_str(3)};
  MapSym *u = map_new("@u", 1, ku, ty_str(2));
  const char *keys[] = {"x", "b", "aa"}, *vals[] = {"q", "z", "m"};
  for (int i = 0; i < 3; i++) {
    k = nokey();
    key_str(u, &k, 0, keys[i]);
    put_str(u, &k, vals[i]);
  }
  EXPECT_MAP(u, "@u[aa]: m\n@u[b]: z\n@u[x]: q\n");
  map_free(u);
}

/* Ties in value keep key order (bpftrace: hash order, i.e. arbitrary). */
static void test_value_ties_by_key(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *m = map_new("@a", 1, k1, ty_int(8, true));
  int keys[] = {5, 3, 9, 4};
  for (int i = 0; i < 4; i++) {
    Key k = nokey();
    key_int(m, &k, 0, keys[i]);
    put_int(m, &k, keys[i] == 4 ? 0 : 1);
  }
  EXPECT_MAP(m, "@a[4]: 0\n@a[3]: 1\n@a[5]: 1\n@a[9]: 1\n");
  map_free(m);
}

/* count() and sum() add the CPUs' slots.
 * bpftrace -e 'BEGIN { @x[1]=count(); @x[2]=count(); @x[2]=count();
 *                      @e=sum(-5); exit(); }'
 *   @e: -5
 *   @x[1]: 1
 *   @x[2]: 2                                                         */
static void test_count_sum_over_cpus(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *x = map_new("@x", 1, k1, ty_agg(AGG_COUNT));
  Key k = nokey();
  key_int(x, &k, 0, 2);
  int64_t two_cpus[2] = {1, 1};
  put_percpu(x, &k, two_cpus, 2);
  key_int(x, &k, 0, 1);
  put_agg1(x, &k, 1);
  EXPECT_MAP(x, ncpus > 1 ? "@x[1]: 1\n@x[2]: 2\n" : "@x[2]: 1\n@x[1]: 1\n");
  map_free(x);

  MapSym *e = map_new("@e", 0, NULL, ty_agg(AGG_SUM));
  k = nokey();
  int64_t parts[2] = {-7, 2};
  put_percpu(e, &k, parts, 2);
  EXPECT_MAP(e, ncpus > 1 ? "@e: -5\n" : "@e: -7\n");
  map_free(e);
}

/* min() and max() skip CPUs that never stored a value.
 * bpftrace -e 'BEGIN { @b[1]=min(5); @b[2]=min(1); @b[3]=min(3);
 *                      @f=min(-7); exit(); }'
 *   @b[2]: 1
 *   @b[3]: 3
 *   @b[1]: 5
 *   @f: -7                                                           */
static void test_min_max(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *b = map_new("@b", 1, k1, ty_agg(AGG_MIN));
  Key k = nokey();
  key_int(b, &k, 0, 1);
  put_agg2(b, &k, 0, 0, 5, 1);  /* CPU 0 unseen: 0 must not win */
  key_int(b, &k, 0, 2);
  put_agg2(b, &k, 1, 1, 4, 1);
  key_int(b, &k, 0, 3);
  put_agg2(b, &k, 3, 1, 0, 0);
  if (ncpus > 1) EXPECT_MAP(b, "@b[2]: 1\n@b[3]: 3\n@b[1]: 5\n");
  map_free(b);

  MapSym *f = map_new("@f", 0, NULL, ty_agg(AGG_MIN));
  k = nokey();
  put_agg2(f, &k, -7, 1, -3, 1);
  EXPECT_MAP(f, "@f: -7\n");
  map_free(f);

  MapSym *g = map_new("@g", 0, NULL, ty_agg(AGG_MAX));
  k = nokey();
  put_agg2(g, &k, -7, 1, -3, 1);
  EXPECT_MAP(g, ncpus > 1 ? "@g: -3\n" : "@g: -7\n");
  map_free(g);

  /* Only negative values seen: the unseen CPU's 0 must not be the max. */
  MapSym *n = map_new("@n", 0, NULL, ty_agg(AGG_MAX));
  k = nokey();
  put_agg2(n, &k, 0, 0, -4, 1);
  if (ncpus > 1) EXPECT_MAP(n, "@n: -4\n");
  map_free(n);
}

/* avg() is total / count over CPUs (signed, truncated), and an empty line
 * follows the map.
 * bpftrace -e 'BEGIN { @h=avg(-7); @h=avg(-2); exit(); }'  ->  "@h: -4\n\n"
 * bpftrace -e 'BEGIN { @a[1]=avg(10); @a[1]=avg(0); @a[2]=avg(6);
 *                      @a[3]=avg(-1); exit(); }'
 *   @a[3]: -1
 *   @a[1]: 5
 *   @a[2]: 6
 *   (empty line)                                                     */
static void test_avg(void) {
  MapSym *h = map_new("@h", 0, NULL, ty_agg(AGG_AVG));
  Key k = nokey();
  put_agg2(h, &k, -7, 1, -2, 1);
  EXPECT_MAP(h, ncpus > 1 ? "@h: -4\n\n" : "@h: -7\n\n");
  map_free(h);

  Type k1[] = {ty_int(8, true)};
  MapSym *a = map_new("@a", 1, k1, ty_agg(AGG_AVG));
  key_int(a, &k, 0, 1);
  put_agg2(a, &k, 10, 2, 0, 0);
  key_int(a, &k, 0, 2);
  put_agg2(a, &k, 6, 1, 0, 0);
  key_int(a, &k, 0, 3);
  put_agg2(a, &k, -1, 1, 0, 0);
  EXPECT_MAP(a, "@a[3]: -1\n@a[1]: 5\n@a[2]: 6\n\n");
  map_free(a);
}

/* bpftrace -e 'BEGIN { @e[1]=1; delete(@e[1]); print(@e); exit(); }'
 *   -> "\n"
 * bpftrace -e 'BEGIN { if (0) { @z = count(); } exit(); }'  ->  "@z: 0"
 *   (a keyless count() lives in an array map in bpftrace); once clear()
 *   emptied it, nothing (bpftrace's reference and its current suite;
 *   0.17 printed 0); nor when delete(@z) makes it a hash, whose entry
 *   then is gone
 * bpftrace -e 'BEGIN { if (0) { @v = avg(1); } exit(); }'  ->  "\n\n"  */
static void test_empty_maps(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *e = map_new("@e", 1, k1, ty_int(8, true));
  EXPECT_MAP(e, "\n");
  map_free(e);

  MapSym *z = keyless_array_new("@z", ty_agg(AGG_COUNT));
  EXPECT_MAP(z, "@z: 0\n");
  state_of(z)->cleared = true;
  EXPECT_MAP(z, "\n");
  map_free(z);
  MapSym *zh = map_new("@zh", 0, NULL, ty_agg(AGG_COUNT));
  EXPECT_MAP(zh, "\n");
  map_free(zh);

  MapSym *v = map_new("@v", 0, NULL, ty_agg(AGG_AVG));
  EXPECT_MAP(v, "\n\n");
  map_free(v);

  MapSym *s = map_new("@s", 0, NULL, ty_agg(AGG_SUM));
  EXPECT_MAP(s, "\n");
  map_free(s);
}

/* bpftrace -e 'BEGIN { @a[1]=count(); @a[2]=count(); zero(@a); print(@a);
 *                      @n=min(-4); zero(@n); @v=avg(3); zero(@v);
 *                      @c[1]=count(); clear(@c); print(@c); exit(); }'
 *   @a[1]: 0
 *   @a[2]: 0
 *   (empty line: the cleared @c)
 *   ...
 *   @n: 0
 *   @v: 0
 *   (empty line)                                                     */
static void test_zero_and_clear(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *a = map_new("@a", 1, k1, ty_agg(AGG_COUNT));
  Key k = nokey();
  key_int(a, &k, 0, 1);
  put_agg1(a, &k, 1);
  key_int(a, &k, 0, 2);
  put_agg1(a, &k, 1);
  CHECK(map_zero(a, state_of(a)) == 0);
  EXPECT_MAP(a, "@a[1]: 0\n@a[2]: 0\n");
  CHECK(map_clear(a, state_of(a)) == 0);
  EXPECT_MAP(a, "\n");
  map_free(a);

  MapSym *n = map_new("@n", 0, NULL, ty_agg(AGG_MIN));
  k = nokey();
  put_agg2(n, &k, -4, 1, 0, 0);
  CHECK(map_zero(n, state_of(n)) == 0);
  EXPECT_MAP(n, "@n: 0\n");
  map_free(n);

  MapSym *v = map_new("@v", 0, NULL, ty_agg(AGG_AVG));
  put_agg2(v, &k, 3, 1, 0, 0);
  CHECK(map_zero(v, state_of(v)) == 0);
  EXPECT_MAP(v, "@v: 0\n\n");
  map_free(v);

  /* Clearing more keys than one get_next_key walk would survive. */
  MapSym *big = map_new("@big", 1, k1, ty_int(8, true));
  for (int i = 0; i < 50; i++) {
    key_int(big, &k, 0, i);
    put_int(big, &k, i);
  }
  CHECK(map_clear(big, state_of(big)) == 0);
  EXPECT_MAP(big, "\n");
  map_free(big);
}

/* At exit: two empty lines, then every map by name (byte order), internal
 * maps left out.
 * bpftrace -e 'BEGIN { @x[1]=count(); @y=sum(5); @[comm,2]=count();
 *                      @s["a"]="b"; @av=avg(7); @av=avg(4); exit(); }'
 *   (empty line)
 *   (empty line)
 *   @[bpftrace, 2]: 1
 *   @av: 5
 *   (empty line)
 *   @s[a]: b
 *   @x[1]: 1
 *   @y: 5                                                            */
static void test_print_all_maps(void) {
  Type kint[] = {ty_int(8, true)};
  Type kcomm[] = {ty_str(COMM_SIZE), ty_int(8, true)};
  Type kstr[] = {ty_str(2)};
  MapSym *maps[6];
  maps[0] = map_new("@x", 1, kint, ty_agg(AGG_COUNT));
  maps[1] = map_new("@y", 0, NULL, ty_agg(AGG_SUM));
  maps[2] = map_new("@", 2, kcomm, ty_agg(AGG_COUNT));
  maps[3] = map_new("@s", 1, kstr, ty_str(2));
  maps[4] = map_new("@av", 0, NULL, ty_agg(AGG_AVG));
  maps[5] = map_new(ELAPSED_MAP_NAME, 0, NULL, ty_int(8, false));
  maps[5]->internal = true;
  Key k = nokey();
  key_int(maps[0], &k, 0, 1);
  put_agg1(maps[0], &k, 1);
  k = nokey();
  put_agg1(maps[1], &k, 5);
  key_str(maps[2], &k, 0, "bpftrace");
  key_int(maps[2], &k, 1, 2);
  put_agg1(maps[2], &k, 1);
  k = nokey();
  key_str(maps[3], &k, 0, "a");
  put_str(maps[3], &k, "b");
  k = nokey();
  put_agg2(maps[4], &k, 11, 2, 0, 0);
  put_int(maps[5], &k, 12345);

  Compiled c = {.maps = maps, .nmaps = 6};
  Loaded l = loaded_of(&c);
  Capture cap;
  capture_open(&cap);
  print_all_maps(&c, &l, cap.f);
  EXPECT_TEXT(capture_text(&cap),
              "\n\n@[bpftrace, 2]: 1\n@av: 5\n\n@s[a]: b\n@x[1]: 1\n@y: 5\n");
  capture_free(&cap);

  /* bpftrace -e 'BEGIN { exit(); }' prints just the two empty lines. */
  loaded_done(&l, &c);
  Compiled none = {.nmaps = 0};
  Loaded nothing = loaded_of(&none);
  capture_open(&cap);
  print_all_maps(&none, &nothing, cap.f);
  loaded_done(&nothing, &none);
  EXPECT_TEXT(capture_text(&cap), "\n\n");
  capture_free(&cap);
  for (int i = 0; i < 6; i++) map_free(maps[i]);
}

/* ---- histograms, stats, tuples, print(@m, top, div) ------------------------ */

/* A hist(v[, bits]) or lhist map as check lays it out. */
static MapSym *hist_new(const char *name, int nkeys, const Type *keys,
                        int bits) {
  MapSym *m = map_new_sized(name, nkeys, keys, ty_agg(AGG_HIST),
                            hist_buckets(bits) * 8);
  m->hist_bits = bits;
  return m;
}

static MapSym *lhist_new(const char *name, int nkeys, const Type *keys,
                         int64_t min, int64_t max, int64_t step) {
  MapSym tmp = {.lhist_min = min, .lhist_max = max, .lhist_step = step};
  MapSym *m = map_new_sized(name, nkeys, keys, ty_agg(AGG_LHIST),
                            lhist_buckets(&tmp) * 8);
  m->lhist_min = min;
  m->lhist_max = max;
  m->lhist_step = step;
  return m;
}

/* Sets bucket counts: buckets[idx[i]] = cnt[i], split over two CPUs when
 * there are two (so the sum over CPUs is what prints). */
static void put_buckets(const MapSym *m, const Key *k, const int *idx,
                        const int64_t *cnt, int n) {
  int words = m->value_size / 8;
  int64_t *slots = calloc(2 * words, 8);
  for (int i = 0; i < n; i++) {
    int64_t half = ncpus > 1 ? cnt[i] / 2 : 0;
    slots[idx[i]] += cnt[i] - half;
    slots[words + idx[i]] += half;
  }
  put_percpu(m, k, slots, 2);
  free(slots);
}

/* The hist bucket of a value, as program.h lays them out. */
static int hist_index(int64_t v, int bits) {
  if (v < 0) return 0;
  if (v == 0) return 1;
  int e = 63 - __builtin_clzll((uint64_t)v);
  int mask = (1 << bits) - 1;
  int sub = e >= bits ? (int)((v >> (e - bits)) & mask)
                      : (int)((v << (bits - e)) & mask);
  return 2 + (e << bits) + sub;
}

/* Adds one of each value to the hist map's entry at k. */
static void put_hist_values(const MapSym *m, const Key *k, const int64_t *v,
                            int n) {
  int idx[64];
  int64_t cnt[64];
  for (int i = 0; i < n; i++) {
    idx[i] = hist_index(v[i], m->hist_bits);
    cnt[i] = 1;
  }
  put_buckets(m, k, idx, cnt, n);
}

static char *printed_as(const MapSym *m, int64_t top, int64_t div,
                        OutFormat fmt) {
  Capture c;
  capture_open(&c);
  CHECK(print_map_as(m, state_of(m), top, div, fmt, c.f) == 0);
  capture_text(&c);
  return c.buf;
}

#define EXPECT_MAP_AS(m, top, div, fmt, want)                 \
  do {                                                        \
    char *got_ = printed_as(m, top, div, fmt);                \
    expect_text(got_, want, #m " " #top " " #div, __LINE__);  \
    free(got_);                                               \
  } while (0)

#define BAR52 "@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@"
#define NOBAR "                                                    "

/* bpftrace -e 'BEGIN { @h = hist(5); @h = hist(100); exit(); }'       */
static void test_hist_basic(void) {
  MapSym *h = hist_new("@h", 0, NULL, 0);
  Key k = nokey();
  int64_t v[] = {5, 100};
  put_hist_values(h, &k, v, 2);
  EXPECT_MAP(h,
      "@h:\n"
      "[4, 8)                 1 |" BAR52 "|\n"
      "[8, 16)                0 |" NOBAR "|\n"
      "[16, 32)               0 |" NOBAR "|\n"
      "[32, 64)               0 |" NOBAR "|\n"
      "[64, 128)              1 |" BAR52 "|\n"
      "\n");
  map_free(h);

  /* An empty hist map prints an empty line. */
  h = hist_new("@e", 0, NULL, 0);
  EXPECT_MAP(h, "\n");
  map_free(h);
}

/* bpftrace -e 'BEGIN { @h = hist(0); @h=hist(-1); @h=hist(1); @h=hist(2);
 *   @h=hist(3); @h=hist(1024); @h=hist(1500); @h=hist(1<<20);
 *   @h=hist(1<<30); $x = (uint64)1; @h=hist($x << 31); @h=hist($x<<31);
 *   @h=hist(($x<<32)-1); @h=hist(($x<<32)-1); exit(); }'
 * (bpftrace 0.17 puts every value >= 2^32 in [2G, 4G) too; loupe's
 * buckets go on to [8E, 16E), labelled with T, P and E.)              */
static void test_hist_labels(void) {
  MapSym *h = hist_new("@h", 0, NULL, 0);
  Key k = nokey();
  int64_t v[] = {0, -1, 1, 2, 3, 1024, 1500, 1 << 20, 1 << 30,
                 1LL << 31, 1LL << 31, (1LL << 32) - 1, (1LL << 32) - 1};
  put_hist_values(h, &k, v, 13);
  EXPECT_MAP(h,
      "@h:\n"
      "(..., 0)               1 |@@@@@@@@@@@@@                                       |\n"
      "[0]                    1 |@@@@@@@@@@@@@                                       |\n"
      "[1]                    1 |@@@@@@@@@@@@@                                       |\n"
      "[2, 4)                 2 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
      "[4, 8)                 0 |                                                    |\n"
      "[8, 16)                0 |                                                    |\n"
      "[16, 32)               0 |                                                    |\n"
      "[32, 64)               0 |                                                    |\n"
      "[64, 128)              0 |                                                    |\n"
      "[128, 256)             0 |                                                    |\n"
      "[256, 512)             0 |                                                    |\n"
      "[512, 1K)              0 |                                                    |\n"
      "[1K, 2K)               2 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
      "[2K, 4K)               0 |                                                    |\n"
      "[4K, 8K)               0 |                                                    |\n"
      "[8K, 16K)              0 |                                                    |\n"
      "[16K, 32K)             0 |                                                    |\n"
      "[32K, 64K)             0 |                                                    |\n"
      "[64K, 128K)            0 |                                                    |\n"
      "[128K, 256K)           0 |                                                    |\n"
      "[256K, 512K)           0 |                                                    |\n"
      "[512K, 1M)             0 |                                                    |\n"
      "[1M, 2M)               1 |@@@@@@@@@@@@@                                       |\n"
      "[2M, 4M)               0 |                                                    |\n"
      "[4M, 8M)               0 |                                                    |\n"
      "[8M, 16M)              0 |                                                    |\n"
      "[16M, 32M)             0 |                                                    |\n"
      "[32M, 64M)             0 |                                                    |\n"
      "[64M, 128M)            0 |                                                    |\n"
      "[128M, 256M)           0 |                                                    |\n"
      "[256M, 512M)           0 |                                                    |\n"
      "[512M, 1G)             0 |                                                    |\n"
      "[1G, 2G)               1 |@@@@@@@@@@@@@                                       |\n"
      "[2G, 4G)               4 |@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@|\n"
      "\n");
  map_free(h);

  /* Beyond bpftrace 0.17's reach: the top buckets. */
  h = hist_new("@big", 0, NULL, 0);
  int64_t big[] = {1LL << 40, INT64_MAX};
  put_hist_values(h, &k, big, 1);
  EXPECT_MAP(h, "@big:\n[1T, 2T)               1 |" BAR52 "|\n\n");
  map_free(h);
  h = hist_new("@big", 0, NULL, 0);
  put_hist_values(h, &k, big + 1, 1);
  EXPECT_MAP(h, "@big:\n[4E, 8E)               1 |" BAR52 "|\n\n");
  map_free(h);
}

/* hist(v, 2): each power of two split in 4 (bpftrace 0.17 has no second
 * argument; labels follow later bpftrace: single values as "[v]").     */
static void test_hist_bits(void) {
  MapSym *h = hist_new("@h", 0, NULL, 2);
  Key k = nokey();
  int64_t v[] = {1, 3, 5, 7, 9, 1300};
  put_hist_values(h, &k, v, 6);
  char *got = printed(h);
  CHECK(!strncmp(got,
      "@h:\n"
      "[1]                    1 |" BAR52 "|\n"
      "[2]                    0 |" NOBAR "|\n"
      "[3]                    1 |" BAR52 "|\n"
      "[4]                    0 |" NOBAR "|\n"
      "[5]                    1 |" BAR52 "|\n"
      "[6]                    0 |" NOBAR "|\n"
      "[7]                    1 |" BAR52 "|\n"
      "[8, 10)                1 |" BAR52 "|\n"
      "[10, 12)               0 |" NOBAR "|\n", 4 + 9 * 80));
  CHECK(strstr(got, "[1K, 1280)             0 |") != NULL);
  CHECK(strstr(got, "[1280, 1536)           1 |" BAR52 "|\n\n") != NULL);
  free(got);
  map_free(h);
}

/* Keyed histograms sort by their total count.
 * bpftrace -e 'BEGIN { @h[1] = hist(10); @h[2]=hist(1); @h[2]=hist(1);
 *   @h[2]=hist(1); @h[3]=hist(5); @h[3]=hist(5); exit(); }'
 * and print(@h, 1, 2); print(@h, 0, 3) for
 *   @h[1]=hist(4) x3; @h[1]=hist(40); @h[2]=hist(7)                   */
static void test_hist_keyed_top_div(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *h = hist_new("@h", 1, k1, 0);
  Key k = nokey();
  int64_t one[] = {10}, three[] = {1, 1, 1}, two[] = {5, 5};
  key_int(h, &k, 0, 1);
  put_hist_values(h, &k, one, 1);
  key_int(h, &k, 0, 2);
  put_hist_values(h, &k, three, 3);
  key_int(h, &k, 0, 3);
  put_hist_values(h, &k, two, 2);
  EXPECT_MAP(h,
      "@h[1]:\n"
      "[8, 16)                1 |" BAR52 "|\n"
      "\n"
      "@h[3]:\n"
      "[4, 8)                 2 |" BAR52 "|\n"
      "\n"
      "@h[2]:\n"
      "[1]                    3 |" BAR52 "|\n"
      "\n");
  map_free(h);

  h = hist_new("@h", 1, k1, 0);
  int64_t a[] = {4, 4, 4, 40}, b[] = {7};
  key_int(h, &k, 0, 1);
  put_hist_values(h, &k, a, 4);
  key_int(h, &k, 0, 2);
  put_hist_values(h, &k, b, 1);
  EXPECT_MAP_AS(h, 1, 2, OUT_TEXT,
      "@h[1]:\n"
      "[4, 8)                 1 |" BAR52 "|\n"
      "[8, 16)                0 |" NOBAR "|\n"
      "[16, 32)               0 |" NOBAR "|\n"
      "[32, 64)               0 |@@@@@@@@@@@@@@@@@                                   |\n"
      "\n");
  EXPECT_MAP_AS(h, 0, 3, OUT_TEXT,
      "@h[2]:\n"
      "[4, 8)                 0 |" BAR52 "|\n"
      "\n"
      "@h[1]:\n"
      "[4, 8)                 1 |" BAR52 "|\n"
      "[8, 16)                0 |" NOBAR "|\n"
      "[16, 32)               0 |" NOBAR "|\n"
      "[32, 64)               0 |@@@@@@@@@@@@@@@@@                                   |\n"
      "\n");
  map_free(h);
}

/* bpftrace -e 'BEGIN { @l[1] = lhist(-5, 0, 100, 10);
 *   @l[1]=lhist(100,0,100,10); @l[1]=lhist(150,0,100,10);
 *   @l[2]=lhist(55,0,100,10); @m = lhist(2048, 1024, 4096, 1024);
 *   @n = lhist(1048576, 0, 2097152, 1048576); exit(); }'
 * and print(@l, 0, 2) of 7 x 15, 2 x 55, 3 x 75 (div is ignored).    */
static void test_lhist(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *l = lhist_new("@l", 1, k1, 0, 100, 10);
  Key k = nokey();
  key_int(l, &k, 0, 1);
  int idx1[] = {0, 11};
  int64_t cnt1[] = {1, 2};
  put_buckets(l, &k, idx1, cnt1, 2);
  key_int(l, &k, 0, 2);
  int idx2[] = {6};
  int64_t cnt2[] = {1};
  put_buckets(l, &k, idx2, cnt2, 1);
  EXPECT_MAP(l,
      "@l[2]:\n"
      "[50, 60)               1 |" BAR52 "|\n"
      "\n"
      "@l[1]:\n"
      "(..., 0)               1 |@@@@@@@@@@@@@@@@@@@@@@@@@@                          |\n"
      "[0, 10)                0 |" NOBAR "|\n"
      "[10, 20)               0 |" NOBAR "|\n"
      "[20, 30)               0 |" NOBAR "|\n"
      "[30, 40)               0 |" NOBAR "|\n"
      "[40, 50)               0 |" NOBAR "|\n"
      "[50, 60)               0 |" NOBAR "|\n"
      "[60, 70)               0 |" NOBAR "|\n"
      "[70, 80)               0 |" NOBAR "|\n"
      "[80, 90)               0 |" NOBAR "|\n"
      "[90, 100)              0 |" NOBAR "|\n"
      "[100, ...)             2 |" BAR52 "|\n"
      "\n");
  map_free(l);

  MapSym *m = lhist_new("@m", 0, NULL, 1024, 4096, 1024);
  k = nokey();
  int idx3[] = {2};
  put_buckets(m, &k, idx3, cnt2, 1);
  EXPECT_MAP(m, "@m:\n[2K, 3K)               1 |" BAR52 "|\n\n");
  map_free(m);

  MapSym *n = lhist_new("@n", 0, NULL, 0, 2097152, 1048576);
  put_buckets(n, &k, idx3, cnt2, 1);
  EXPECT_MAP(n, "@n:\n[1M, 2M)               1 |" BAR52 "|\n\n");
  map_free(n);

  MapSym *d = lhist_new("@l", 0, NULL, 0, 100, 10);
  int idx4[] = {2, 6, 8};
  int64_t cnt4[] = {7, 2, 3};
  put_buckets(d, &k, idx4, cnt4, 3);
  EXPECT_MAP_AS(d, 0, 2, OUT_TEXT,
      "@l:\n"
      "[10, 20)               7 |" BAR52 "|\n"
      "[20, 30)               0 |" NOBAR "|\n"
      "[30, 40)               0 |" NOBAR "|\n"
      "[40, 50)               0 |" NOBAR "|\n"
      "[50, 60)               2 |@@@@@@@@@@@@@@                                      |\n"
      "[60, 70)               0 |" NOBAR "|\n"
      "[70, 80)               3 |@@@@@@@@@@@@@@@@@@@@@@                              |\n"
      "\n");
  map_free(d);
}

/* stats() sorts by average; print()'s top and div do not apply.
 * bpftrace -e 'BEGIN { @s[1] = stats(100); @s[2]=stats(1); @s[2]=stats(1);
 *   @s[2]=stats(1); @s[3]=stats(50); @s[3]=stats(50); @s[4] = stats(-3);
 *   exit(); }'                                                        */
static void test_stats(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *s = map_new("@s", 1, k1, ty_agg(AGG_STATS));
  Key k = nokey();
  key_int(s, &k, 0, 1);
  put_agg2(s, &k, 100, 1, 0, 0);
  key_int(s, &k, 0, 2);
  put_agg2(s, &k, 2, 2, 1, 1);
  key_int(s, &k, 0, 3);
  put_agg2(s, &k, 100, 2, 0, 0);
  key_int(s, &k, 0, 4);
  put_agg2(s, &k, -3, 1, 0, 0);
  const char *want = ncpus > 1 ? "@s[4]: count 1, average -3, total -3\n"
                                 "@s[2]: count 3, average 1, total 3\n"
                                 "@s[3]: count 2, average 50, total 100\n"
                                 "@s[1]: count 1, average 100, total 100\n"
                                 "\n"
                               : "@s[4]: count 1, average -3, total -3\n"
                                 "@s[2]: count 2, average 1, total 2\n"
                                 "@s[3]: count 2, average 50, total 100\n"
                                 "@s[1]: count 1, average 100, total 100\n"
                                 "\n";
  EXPECT_MAP(s, want);
  EXPECT_MAP_AS(s, 1, 10, OUT_TEXT, want);
  map_free(s);

  /* bpftrace -e 'BEGIN { @s = stats(7); exit(); }'; empty: two lines. */
  s = map_new("@s", 0, NULL, ty_agg(AGG_STATS));
  EXPECT_MAP(s, "\n\n");
  k = nokey();
  put_agg2(s, &k, 7, 1, 0, 0);
  EXPECT_MAP(s, "@s: count 1, average 7, total 7\n\n");
  map_free(s);
}

/* A tuple type: integers take 8 bytes, strings their size rounded to 8. */
static Type ty_tuple(int n, const Type *elems) {
  TupleType *tt = calloc(1, sizeof *tt);
  tt->n = n;
  tt->elems = calloc(n, sizeof(Type));
  tt->offs = calloc(n, sizeof(int));
  for (int i = 0; i < n; i++) {
    tt->elems[i] = elems[i];
    tt->offs[i] = tt->size;
    tt->size += elems[i].kind == TY_STR ? align8(elems[i].size)
                : elems[i].kind == TY_TUPLE ? elems[i].tuple->size
                : 8;
  }
  Type t = {.kind = TY_TUPLE, .size = tt->size, .tuple = tt};
  return t;
}

static void tuple_free(Type t) {
  free(t.tuple->elems);
  free(t.tuple->offs);
  free(t.tuple);
}

static void put_bytes(const MapSym *m, const Key *k, const void *bytes) {
  CHECK(bpf_map_update_elem(state_of(m)->fd, k->bytes, bytes, BPF_ANY) == 0);
}

/* Tuple values sort by key.
 * bpftrace -e 'BEGIN { @t = (1, "ab", -3); @tt[1, "x"] = ((int8)-1, "q");
 *   @tt[2, "x"] = ((int8)-1, "a"); @tt[0, "x"] = ((int8)5, "a");
 *   @n = ((1, 2), "z"); exit(); }'
 *   @n: ((1, 2), z)
 *   @t: (1, ab, -3)
 *   @tt[0, x]: (5, a)
 *   @tt[1, x]: (-1, q)
 *   @tt[2, x]: (-1, a)
 * and with -f json: {"type": "map", "data": {"@t": [1,"a"]}},
 *   {"type": "map", "data": {"@tk": {"1,x": [2,3]}}}                  */
static void test_tuples(void) {
  Type e3[] = {ty_int(8, true), ty_str(3), ty_int(8, true)};
  Type t3 = ty_tuple(3, e3);
  MapSym *t = map_new("@t", 0, NULL, t3);
  Key k = nokey();
  uint8_t v[64] = {0};
  int64_t one = 1, m3 = -3;
  memcpy(v, &one, 8);
  memcpy(v + 8, "ab", 3);
  memcpy(v + 16, &m3, 8);
  put_bytes(t, &k, v);
  EXPECT_MAP(t, "@t: (1, ab, -3)\n");
  EXPECT_MAP_AS(t, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@t\": [1,\"ab\",-3]}}\n");
  map_free(t);
  tuple_free(t3);

  Type e2[] = {ty_int(1, true), ty_str(2)};
  Type t2 = ty_tuple(2, e2);
  Type kk[] = {ty_int(8, true), ty_str(2)};
  MapSym *tt = map_new("@tt", 2, kk, t2);
  int64_t keys[] = {1, 2, 0}, vals[] = {-1, -1, 5};
  const char *strs[] = {"q", "a", "a"};
  for (int i = 0; i < 3; i++) {
    k = nokey();
    key_int(tt, &k, 0, keys[i]);
    key_str(tt, &k, 1, "x");
    memset(v, 0, sizeof v);
    memcpy(v, &vals[i], 8);
    strcpy((char *)v + 8, strs[i]);
    put_bytes(tt, &k, v);
  }
  EXPECT_MAP(tt, "@tt[0, x]: (5, a)\n@tt[1, x]: (-1, q)\n@tt[2, x]: (-1, a)\n");
  EXPECT_MAP_AS(tt, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@tt\": {\"0,x\": [5,\"a\"], "
                "\"1,x\": [-1,\"q\"], \"2,x\": [-1,\"a\"]}}}\n");
  map_free(tt);
  tuple_free(t2);

  Type inner_e[] = {ty_int(8, true), ty_int(8, true)};
  Type inner = ty_tuple(2, inner_e);
  Type outer_e[] = {inner, ty_str(2)};
  Type outer = ty_tuple(2, outer_e);
  MapSym *n = map_new("@n", 0, NULL, outer);
  k = nokey();
  memset(v, 0, sizeof v);
  int64_t two = 2;
  memcpy(v, &one, 8);
  memcpy(v + 8, &two, 8);
  strcpy((char *)v + 16, "z");
  put_bytes(n, &k, v);
  EXPECT_MAP(n, "@n: ((1, 2), z)\n");
  EXPECT_MAP_AS(n, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@n\": [[1,2],\"z\"]}}\n");
  map_free(n);
  tuple_free(outer);
  tuple_free(inner);
}

/* print(@c, top, div): the top entries in sort order, values divided.
 * bpftrace -e 'BEGIN { @c[1]=10; @c[2]=25; @c[3]=37; @c[4]=-9;
 *   print(@c, 2); print(@c, 0, 10); print(@c, 2, 10); print(@c, 10);
 *   @mn = min(-5); print(@mn, 0, 2); @u = (uint32)7; print(@u, 0, 2);
 *   @a[1]=avg(10); @a[2]=avg(20); print(@a, 1, 10); ... }'            */
static void test_print_top_div(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *c = map_new("@c", 1, k1, ty_int(8, true));
  int64_t keys[] = {1, 2, 3, 4}, vals[] = {10, 25, 37, -9};
  Key k = nokey();
  for (int i = 0; i < 4; i++) {
    key_int(c, &k, 0, keys[i]);
    put_int(c, &k, vals[i]);
  }
  EXPECT_MAP_AS(c, 2, 0, OUT_TEXT, "@c[2]: 25\n@c[3]: 37\n");
  EXPECT_MAP_AS(c, 0, 10, OUT_TEXT, "@c[4]: 0\n@c[1]: 1\n@c[2]: 2\n@c[3]: 3\n");
  EXPECT_MAP_AS(c, 2, 10, OUT_TEXT, "@c[2]: 2\n@c[3]: 3\n");
  EXPECT_MAP_AS(c, 10, 0, OUT_TEXT,
                "@c[4]: -9\n@c[1]: 10\n@c[2]: 25\n@c[3]: 37\n");
  /* -f json print(@c, 1, 2): {"type": "map", "data": {"@c": {"3": 18}}} */
  EXPECT_MAP_AS(c, 1, 2, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@c\": {\"3\": 18}}}\n");
  map_free(c);

  MapSym *mn = map_new("@mn", 0, NULL, ty_agg(AGG_MIN));
  k = nokey();
  put_agg2(mn, &k, -5, 1, 0, 0);
  EXPECT_MAP_AS(mn, 0, 2, OUT_TEXT, "@mn: -2\n");
  map_free(mn);

  MapSym *u = map_new("@u", 0, NULL, ty_int(4, false));
  put_int(u, &k, 7);
  EXPECT_MAP_AS(u, 0, 2, OUT_TEXT, "@u: 3\n");
  map_free(u);

  MapSym *a = map_new("@a", 1, k1, ty_agg(AGG_AVG));
  key_int(a, &k, 0, 1);
  put_agg2(a, &k, 10, 1, 0, 0);
  key_int(a, &k, 0, 2);
  put_agg2(a, &k, 20, 1, 0, 0);
  EXPECT_MAP_AS(a, 1, 10, OUT_TEXT, "@a[2]: 2\n\n");
  map_free(a);
}

/* bpftrace -f json -e 'BEGIN { @c[1]=10; @c[2]=25; @x = 3; @s="str";
 *   @h = hist(5); @h=hist(0); @h = hist(-1); @hk[1,"a"] = hist(10);
 *   @l = lhist(5, 0, 100, 10); @l = lhist(-5, 0, 100, 10);
 *   @l = lhist(500, 0, 100, 10); @st = stats(7); @st2["a"] = stats(3);
 *   @av = avg(3); @mn = min(4); print(@h, 0, 2); exit(); }'            */
static void test_json_maps(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *c = map_new("@c", 1, k1, ty_int(8, true));
  Key k = nokey();
  key_int(c, &k, 0, 1);
  put_int(c, &k, 10);
  key_int(c, &k, 0, 2);
  put_int(c, &k, 25);
  EXPECT_MAP_AS(c, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@c\": {\"1\": 10, \"2\": 25}}}\n");
  map_free(c);

  MapSym *x = map_new("@x", 0, NULL, ty_int(8, true));
  k = nokey();
  put_int(x, &k, 3);
  EXPECT_MAP_AS(x, 0, 0, OUT_JSON, "{\"type\": \"map\", \"data\": {\"@x\": 3}}\n");
  map_free(x);

  MapSym *s = map_new("@s", 0, NULL, ty_str(4));
  put_str(s, &k, "str");
  EXPECT_MAP_AS(s, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@s\": \"str\"}}\n");
  map_free(s);

  MapSym *h = hist_new("@h", 0, NULL, 0);
  int64_t hv[] = {5, 0, -1};
  put_hist_values(h, &k, hv, 3);
  EXPECT_MAP_AS(h, 0, 0, OUT_JSON,
      "{\"type\": \"hist\", \"data\": {\"@h\": [{\"max\": -1, \"count\": 1}, "
      "{\"min\": 0, \"max\": 0, \"count\": 1}, {\"min\": 1, \"max\": 1, "
      "\"count\": 0}, {\"min\": 2, \"max\": 3, \"count\": 0}, {\"min\": 4, "
      "\"max\": 7, \"count\": 1}]}}\n");
  EXPECT_MAP_AS(h, 0, 2, OUT_JSON,
      "{\"type\": \"hist\", \"data\": {\"@h\": [{\"max\": -1, \"count\": 0}, "
      "{\"min\": 0, \"max\": 0, \"count\": 0}, {\"min\": 1, \"max\": 1, "
      "\"count\": 0}, {\"min\": 2, \"max\": 3, \"count\": 0}, {\"min\": 4, "
      "\"max\": 7, \"count\": 0}]}}\n");
  map_free(h);

  Type kia[] = {ty_int(8, true), ty_str(2)};
  MapSym *hk = hist_new("@hk", 2, kia, 0);
  key_int(hk, &k, 0, 1);
  key_str(hk, &k, 1, "a");
  int64_t ten[] = {10};
  put_hist_values(hk, &k, ten, 1);
  EXPECT_MAP_AS(hk, 0, 0, OUT_JSON,
      "{\"type\": \"hist\", \"data\": {\"@hk\": {\"1,a\": [{\"min\": 8, "
      "\"max\": 15, \"count\": 1}]}}}\n");
  map_free(hk);

  MapSym *l = lhist_new("@l", 0, NULL, 0, 100, 10);
  k = nokey();
  int idx[] = {0, 1, 11};
  int64_t cnt[] = {1, 1, 1};
  put_buckets(l, &k, idx, cnt, 3);
  EXPECT_MAP_AS(l, 0, 0, OUT_JSON,
      "{\"type\": \"hist\", \"data\": {\"@l\": [{\"max\": -1, \"count\": 1}, "
      "{\"min\": 0, \"max\": 9, \"count\": 1}, {\"min\": 10, \"max\": 19, "
      "\"count\": 0}, {\"min\": 20, \"max\": 29, \"count\": 0}, {\"min\": 30, "
      "\"max\": 39, \"count\": 0}, {\"min\": 40, \"max\": 49, \"count\": 0}, "
      "{\"min\": 50, \"max\": 59, \"count\": 0}, {\"min\": 60, \"max\": 69, "
      "\"count\": 0}, {\"min\": 70, \"max\": 79, \"count\": 0}, {\"min\": 80, "
      "\"max\": 89, \"count\": 0}, {\"min\": 90, \"max\": 99, \"count\": 0}, "
      "{\"min\": 100, \"count\": 1}]}}\n");
  map_free(l);

  MapSym *st = map_new("@st", 0, NULL, ty_agg(AGG_STATS));
  put_agg2(st, &k, 7, 1, 0, 0);
  EXPECT_MAP_AS(st, 0, 0, OUT_JSON,
      "{\"type\": \"stats\", \"data\": {\"@st\": {\"count\": 1, "
      "\"average\": 7, \"total\": 7}}}\n");
  map_free(st);

  Type ks[] = {ty_str(2)};
  MapSym *st2 = map_new("@st2", 1, ks, ty_agg(AGG_STATS));
  key_str(st2, &k, 0, "a");
  put_agg2(st2, &k, 3, 1, 0, 0);
  EXPECT_MAP_AS(st2, 0, 0, OUT_JSON,
      "{\"type\": \"stats\", \"data\": {\"@st2\": {\"a\": {\"count\": 1, "
      "\"average\": 3, \"total\": 3}}}}\n");
  map_free(st2);

  MapSym *av = map_new("@av", 0, NULL, ty_agg(AGG_AVG));
  k = nokey();
  put_agg2(av, &k, 3, 1, 0, 0);
  EXPECT_MAP_AS(av, 0, 0, OUT_JSON,
                "{\"type\": \"stats\", \"data\": {\"@av\": 3}}\n");
  map_free(av);

  MapSym *mn = map_new("@mn", 0, NULL, ty_agg(AGG_MIN));
  put_agg2(mn, &k, 4, 1, 0, 0);
  EXPECT_MAP_AS(mn, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@mn\": 4}}\n");
  map_free(mn);

  /* Empty maps print nothing, but a keyless count() prints 0; strings are
   * escaped as bpftrace escapes them.
   * bpftrace -f json -e 'BEGIN { @s["a\"b"] = "x\ty\xc3\xa9\x01";
   *   @e[1] = 1; delete(@e[1]); @z = count(); clear(@z); exit(); }'   */
  MapSym *e = map_new("@e", 1, k1, ty_int(8, true));
  EXPECT_MAP_AS(e, 0, 0, OUT_JSON, "");
  map_free(e);
  MapSym *z = keyless_array_new("@z", ty_agg(AGG_COUNT));
  EXPECT_MAP_AS(z, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@z\": 0}}\n");
  map_free(z);
  Type k4[] = {ty_str(4)};
  MapSym *q = map_new("@s", 1, k4, ty_str(8));
  key_str(q, &k, 0, "a\"b");
  put_str(q, &k, "x\ty\xc3\xa9\x01");
  EXPECT_MAP_AS(q, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@s\": {\"a\\\"b\": "
                "\"x\\ty\\uffffffc3\\uffffffa9\\u0001\"}}}\n");
  map_free(q);
}

/* buf() values in maps print like %r.
 * bpftrace -e 'BEGIN { @b = buf("q\n", 3); @c[1] = buf("xyz", 2); exit(); }'
 *   @b: q\x0a\x00
 *   @c[1]: xy
 * and -f json: {"type": "map", "data": {"@b": "q\\x0a\\x00"}}         */
static void test_buf_values(void) {
  Type tb = {.kind = TY_BUF, .size = 3};
  MapSym *b = map_new("@b", 0, NULL, tb);
  Key k = nokey();
  uint8_t v[16] = {3, 0, 0, 0, 0, 0, 0, 0, 'q', '\n', 0};
  put_bytes(b, &k, v);
  EXPECT_MAP(b, "@b: q\\x0a\\x00\n");
  EXPECT_MAP_AS(b, 0, 0, OUT_JSON,
                "{\"type\": \"map\", \"data\": {\"@b\": \"q\\\\x0a\\\\x00\"}}\n");
  map_free(b);
}

/* ---- printf ------------------------------------------------------------ */

/* A printf record being built: 8-byte integers, or strings of their
 * buffer size, at 8-byte aligned offsets (as check lays them out). */
typedef struct Record {
  PrintfDef def;
  uint8_t payload[1024];
} Record;

static void rec_init(Record *r, const char *fmt) {
  memset(r, 0, sizeof *r);
  r->def.fmt = (char *)fmt;
}

static void rec_int(Record *r, int64_t v, bool is_signed) {
  FmtArg *a = &r->def.args[r->def.nargs++];
  a->type = ty_int(8, is_signed);
  a->offset = r->def.size;
  memcpy(r->payload + a->offset, &v, 8);
  r->def.size += 8;
}

static void rec_str(Record *r, const char *s, int size) {
  FmtArg *a = &r->def.args[r->def.nargs++];
  a->type = ty_str(size);
  a->offset = r->def.size;
  strncpy((char *)r->payload + a->offset, s, size);
  r->def.size += align8(size);
}

static char *formatted(const Record *r) {
  Capture c;
  capture_open(&c);
  print_printf(&r->def, r->payload, c.f);
  capture_text(&c);
  return c.buf;
}

#define EXPECT_PRINTF(r, want)                     \
  do {                                             \
    char *got_ = formatted(r);                     \
    expect_text(got_, want, (r)->def.fmt, __LINE__); \
    free(got_);                                    \
  } while (0)

/* Integers are stored widened to 64 bits by their type; the conversion's
 * length modifier decides how many low bits show.
 * bpftrace -e 'BEGIN { printf("[%d] [%u] [%x] [%d]\n", (uint32)-1,
 *                      (int32)-1, (int32)-1, (uint8)255); exit(); }'
 *   [-1] [4294967295] [ffffffff] [255]                               */
static void test_printf_int_widths(void) {
  Record r;
  rec_init(&r, "[%d] [%u] [%x] [%d]\n");
  rec_int(&r, 0xffffffffLL, false);
  rec_int(&r, -1, true);
  rec_int(&r, -1, true);
  rec_int(&r, 255, false);
  EXPECT_PRINTF(&r, "[-1] [4294967295] [ffffffff] [255]\n");

  /* printf("[%lu] [%ld] [%llu] [%lld] [%lx] [%llx] [%hd] [%hhx] [%zd]\n",
   *        -1, ... 9 times)                                          */
  rec_init(&r, "[%lu] [%ld] [%llu] [%lld] [%lx] [%llx] [%hd] [%hhx] [%zd]\n");
  for (int i = 0; i < 9; i++) rec_int(&r, -1, true);
  EXPECT_PRINTF(&r, "[18446744073709551615] [-1] [18446744073709551615] [-1]"
                    " [ffffffffffffffff] [ffffffffffffffff] [-1] [ff] [-1]\n");

  /* printf("[%d] [%d] [%d]\n", 0x123456789, -0x123456789, (uint64)1<<63)
   *   [591751049] [-591751049] [0]   (and %u: [591751049] [3703216247] [0],
   *                                    %x: [23456789] [dcba9877] [0]) */
  const char *fmts[] = {"[%d] [%d] [%d]", "[%u] [%u] [%u]", "[%x] [%x] [%x]"};
  const char *wants[] = {"[591751049] [-591751049] [0]",
                         "[591751049] [3703216247] [0]",
                         "[23456789] [dcba9877] [0]"};
  for (int i = 0; i < 3; i++) {
    rec_init(&r, fmts[i]);
    rec_int(&r, 0x123456789LL, true);
    rec_int(&r, -0x123456789LL, true);
    rec_int(&r, (int64_t)(1ULL << 63), false);
    EXPECT_PRINTF(&r, wants[i]);
  }

  /* printf("%lu %ld\n", (int32)-1, (uint32)-1)
   *   18446744073709551615 4294967295                                */
  rec_init(&r, "%lu %ld\n");
  rec_int(&r, -1, true);
  rec_int(&r, 0xffffffffLL, false);
  EXPECT_PRINTF(&r, "18446744073709551615 4294967295\n");
}

/* printf("[%05d] [%.3d] [%8.3d] [%-5d] [%X] [%o] [%-05d] [%12.5d]\n",
 *        10, ...)
 *   [00010] [010] [     010] [10   ] [A] [12] [10   ] [       00010]
 * '+' and ' ' are loupe additions (bpftrace leaves "%+d" as text).   */
static void test_printf_flags(void) {
  Record r;
  rec_init(&r, "[%05d] [%.3d] [%8.3d] [%-5d] [%X] [%o] [%-05d] [%12.5d]\n");
  for (int i = 0; i < 8; i++) rec_int(&r, 10, true);
  EXPECT_PRINTF(&r, "[00010] [010] [     010] [10   ] [A] [12] [10   ] "
                    "[       00010]\n");

  rec_init(&r, "[%+d] [% d] [%i] [%+i]");
  rec_int(&r, 5, true);
  rec_int(&r, 5, true);
  rec_int(&r, -3, true);
  rec_int(&r, -3, true);
  EXPECT_PRINTF(&r, "[+5] [ 5] [-3] [-3]");
}

/* enum Foo { A = 1, B = 2 }: %s of an enum value prints the enumerator's
 * name with the conversion's flags and width, or the number when none
 * has it; %d prints the number.
 *   printf("[%s] [%-5s] [%5s] [%s] [%d] [%-4s]", A, A, B, (enum Foo)7, B,
 *          (enum Foo)7)  ->  [A] [A    ] [    B] [7] [2] [7   ]        */
static void test_printf_enums(void) {
  Enumerator b = {.name = "B", .value = 2};
  Enumerator a = {.next = &b, .name = "A", .value = 1};
  EnumDef foo = {.name = "Foo", .items = &a};
  Record r;
  rec_init(&r, "[%s] [%-5s] [%5s] [%s] [%d] [%-4s]");
  int64_t vals[] = {1, 1, 2, 7, 2, 7};
  for (int i = 0; i < 6; i++) {
    rec_int(&r, vals[i], true);
    r.def.args[i].type.enum_def = &foo;
  }
  EXPECT_PRINTF(&r, "[A] [A    ] [    B] [7] [2] [7   ]");
}

/* printf("[%s] [%10s] [%-10s] [%.2s] [%5.1s] [%c] [%c] [%%] [%p]\n",
 *        "abc", "abc", "abc", "abc", "abc", 65, 0x141, 4096)
 *   [abc] [       abc] [abc       ] [ab] [    a] [A] [A] [%] [0x1000] */
static void test_printf_strings_chars(void) {
  Record r;
  rec_init(&r, "[%s] [%10s] [%-10s] [%.2s] [%5.1s] [%c] [%c] [%%] [%p]\n");
  for (int i = 0; i < 5; i++) rec_str(&r, "abc", 4);
  rec_int(&r, 65, true);
  rec_int(&r, 0x141, true);
  rec_int(&r, 4096, true);
  EXPECT_PRINTF(&r, "[abc] [       abc] [abc       ] [ab] [    a] [A] [A] "
                    "[%] [0x1000]\n");

  /* A string filling its whole buffer has no NUL in the record. */
  rec_init(&r, "<%s>|<%s>");
  rec_str(&r, "abcdefgh", 8);
  rec_str(&r, "x", 8);
  EXPECT_PRINTF(&r, "<abcdefgh>|<x>");

  /* printf("%5c|%c|%c|\n", 66, 0, 300)  ->  "    B||,|"  (a NUL char
   * prints nothing) */
  rec_init(&r, "%5c|%c|%c|\n");
  rec_int(&r, 66, true);
  rec_int(&r, 0, true);
  rec_int(&r, 300, true);
  EXPECT_PRINTF(&r, "    B||,|\n");

  /* printf("[%p][%p][%20p][%-20p]\n", 0, -1, 10, 10)
   *   [(nil)][0xffffffffffffffff][                 0xa][0xa                 ] */
  rec_init(&r, "[%p][%p][%20p][%-20p]\n");
  rec_int(&r, 0, true);
  rec_int(&r, -1, true);
  rec_int(&r, 10, true);
  rec_int(&r, 10, true);
  EXPECT_PRINTF(&r, "[(nil)][0xffffffffffffffff][                 0xa]"
                    "[0xa                 ]\n");
}

/* Text before a conversion goes through C's printf ("%%" -> "%"); text
 * after the last one, or a format without any, is printed as is.
 *   printf("%% %d\n", 5)         ->  "% 5"
 *   printf("%d %%\n", 5)         ->  "5 %%"
 *   printf("%d %% %d|\n", 5, 6)  ->  "5 % 6|"
 *   printf("a %i b %% c\n")      ->  "a %i b %% c"
 *   printf("a\tb\\c\n")          ->  tab and backslash as they are  */
static void test_printf_literal_text(void) {
  Record r;
  rec_init(&r, "%% %d\n");
  rec_int(&r, 5, true);
  EXPECT_PRINTF(&r, "% 5\n");
  rec_init(&r, "%d %%\n");
  rec_int(&r, 5, true);
  EXPECT_PRINTF(&r, "5 %%\n");
  rec_init(&r, "%d %% %d|\n");
  rec_int(&r, 5, true);
  rec_int(&r, 6, true);
  EXPECT_PRINTF(&r, "5 % 6|\n");
  rec_init(&r, "a %q b %% c\n");
  EXPECT_PRINTF(&r, "a %q b %% c\n");
  rec_init(&r, "a\tb\\c\n");
  EXPECT_PRINTF(&r, "a\tb\\c\n");
  rec_init(&r, "%s|%q|%d");
  rec_str(&r, "s", 2);
  rec_int(&r, 7, true);
  EXPECT_PRINTF(&r, "s|%q|7");
}

static void rec_buf(Record *r, const void *data, uint64_t len, int size) {
  FmtArg *a = &r->def.args[r->def.nargs++];
  a->type.kind = TY_BUF;
  a->type.size = size;
  a->offset = r->def.size;
  memcpy(r->payload + a->offset, &len, 8);
  memcpy(r->payload + a->offset + 8, data, size);
  r->def.size += 8 + align8(size);
}

/* bpftrace -e 'BEGIN { $s = "ab\x01\xff\"\\z~ \x7f";
 *   printf("[%r]\n", buf($s, 12)); printf("[%rx]\n", buf($s, 8));
 *   printf("[%10r]\n", buf("ab",2)); printf("[%-10r|%d]\n", buf("ab",2), 5);
 *   exit(); }'
 *   [ab\x01\xff"\z~ \x7f\x00\x00]
 *   [\x61\x62\x01\xff\x22\x5c\x7a\x7e]
 *   [%10r]
 *   [%-10r|5]                                                         */
static void test_printf_buf(void) {
  Record r;
  const char s[12] = "ab\x01\xff\"\\z~ \x7f";
  rec_init(&r, "[%r]\n");
  rec_buf(&r, s, 12, 12);
  EXPECT_PRINTF(&r, "[ab\\x01\\xff\"\\z~ \\x7f\\x00\\x00]\n");
  rec_init(&r, "[%rx]\n");
  rec_buf(&r, s, 8, 8);
  EXPECT_PRINTF(&r, "[\\x61\\x62\\x01\\xff\\x22\\x5c\\x7a\\x7e]\n");
  rec_init(&r, "[%10r]\n");
  rec_buf(&r, "ab", 2, 2);
  EXPECT_PRINTF(&r, "[%10r]\n");
  rec_init(&r, "[%-10r|%d]\n");
  rec_buf(&r, "ab", 2, 2);
  rec_int(&r, 5, true);
  EXPECT_PRINTF(&r, "[%-10r|5]\n");
  /* The length says how many bytes count (never more than the size). */
  rec_init(&r, "<%r><%r>");
  rec_buf(&r, "abcd", 2, 4);
  rec_buf(&r, "abcd", 99, 4);
  EXPECT_PRINTF(&r, "<ab><abcd>");
}

static void test_printf_parse(void) {
  char conv[MAX_PRINTF_ARGS + 1];
  char err[200];
  CHECK(printf_parse("no conversions %%d", conv, MAX_PRINTF_ARGS, err,
                     sizeof err) == 0);
  CHECK(printf_parse("%d %s %%d %5.2lu %-3c %q %p %hhx %", conv,
                     MAX_PRINTF_ARGS, err, sizeof err) == 6);
  CHECK(!strcmp(conv, "dsucpx"));
  /* Not conversions, as in bpftrace: "%.d", "%lc", "%ls", "%Lf", "%5". */
  CHECK(printf_parse("%.d %lc %ls %Lf %5", conv, MAX_PRINTF_ARGS, err,
                     sizeof err) == 0);
  CHECK(printf_parse("%d%d%d", conv, 2, err, sizeof err) == -1);
  CHECK(strstr(err, "too many") != NULL);
  CHECK(printf_parse("%999999d", conv, 2, err, sizeof err) == -1);
  CHECK(printf_parse("%d%i%u%x%X%o%c%s%p", NULL, 16, err, sizeof err) == 9);
  /* %r and %rx take a buf(): 'r' and 'R'; "%ry" is %r then 'y'. */
  CHECK(printf_parse("%r %rx %ry %10r %lr", conv, MAX_PRINTF_ARGS, err,
                     sizeof err) == 4);
  CHECK(!strcmp(conv, "rRrr"));
}

/* ---- run: record dispatch and run_script ---------------------------- */

typedef struct Rec {
  EventHeader h;
  uint8_t payload[64];
} Rec;

static size_t rec_make(Rec *r, uint32_t kind, uint32_t index, int64_t v) {
  memset(r, 0, sizeof *r);
  r->h.kind = kind;
  r->h.index = index;
  memcpy(r->payload, &v, 8);
  return sizeof r->h + 8;
}

static void test_dispatch(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *m = map_new("@m", 1, k1, ty_int(8, true));
  MapSym *maps[] = {m};
  Key k = nokey();
  key_int(m, &k, 0, 1);
  put_int(m, &k, 7);
  PrintfDef pf = {.fmt = "v=%d\n", .nargs = 1, .size = 8};
  pf.args[0].type = ty_int(8, true);
  Compiled c = {.maps = maps, .nmaps = 1, .printfs = &pf, .nprintfs = 1};

  Capture cap;
  capture_open(&cap);
  int exit_seen = 0;
  Rec r;
  size_t n = rec_make(&r, EV_PRINTF, 0, 42);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  n = rec_make(&r, EV_ZERO_MAP, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  n = rec_make(&r, EV_CLEAR_MAP, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  /* Bad ids and short records are ignored. */
  n = rec_make(&r, EV_PRINTF, 5, 1);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, sizeof r.h + 4);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, 3);
  n = rec_make(&r, EV_EXIT, 0, 0);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  CHECK(exit_seen == 1);
  /* After exit() records are dropped. */
  n = rec_make(&r, EV_PRINTF, 0, 43);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  EXPECT_TEXT(capture_text(&cap), "v=42\n@m[1]: 7\n@m[1]: 0\n\n");
  capture_free(&cap);
  map_free(m);
}

/* A record naming a definition of another kind than its own (a printf
 * record naming print()'s definition, which has no format; a print(value)
 * record naming printf's) is ignored: it read a NULL format or a value
 * bigger than the payload. */
static void test_dispatch_mismatched_kinds(void) {
  PrintfDef defs[2] = {{.nargs = 1, .size = 8},
                       {.fmt = "a=%s b=%d\n", .nargs = 2, .size = 16}};
  defs[0].args[0].type = ty_int(8, true);
  defs[1].args[0].type = ty_str(64);
  defs[1].args[1].type = ty_int(8, true);
  Compiled c = {.printfs = defs, .nprintfs = 2};
  Capture cap;
  capture_open(&cap);
  int exit_seen = 0;
  Rec r;
  static const uint32_t formatted[] = {EV_PRINTF, EV_ERRORF, EV_WARNF};
  for (size_t i = 0; i < sizeof formatted / sizeof formatted[0]; i++) {
    size_t n = rec_make(&r, formatted[i], 0, 1);
    handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n + 8);
  }
  size_t n = rec_make(&r, EV_PRINT_VALUE, 1, 2);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n + 8);
  n = rec_make(&r, EV_PRINT_VALUE, 0, 3);
  handle_record(&c, cap.f, OUT_TEXT, &exit_seen, &r, n);
  EXPECT_TEXT(capture_text(&cap), "3\n");
  capture_free(&cap);
}

/* time(), join(), cat(), system() and JSON printf records.
 *   bpftrace --unsafe -e 'BEGIN { time("%Y|"); cat("/tmp/f");
 *     system("echo hi %d", 5); exit(); }'  ->  "2026|" "line1\nline2" "hi 5\n"
 *   join(args->argv) of /bin/echo a "b c" "" d  ->  "/bin/echo a b c\n"
 *   -f json: {"type": "time", "data": "2026|"},
 *            {"type": "cat", "data": "line1\nline2"},
 *            {"type": "syscall", "data": "hi 5\n"},
 *            {"type": "join", "data": "/bin/echo\"-a\"-b c"},
 *            {"type": "printf", "data": "hello \"q\"\n\t5\n"}          */
typedef struct BigRec {
  EventHeader h;
  uint8_t payload[JOIN_MAX_ARGS * JOIN_ARG_SIZE];
} BigRec;

static char *dispatched(Compiled *c, int format, const BigRec *r,
                        size_t size) {
  Capture cap;
  capture_open(&cap);
  int exit_seen = 0;
  handle_record(c, cap.f, format, &exit_seen, r, size);
  capture_text(&cap);
  return cap.buf;
}

#define EXPECT_DISPATCH(c, format, r, size, want)           \
  do {                                                      \
    char *got_ = dispatched(c, format, r, size);            \
    expect_text(got_, want, #format " " #r, __LINE__);      \
    free(got_);                                             \
  } while (0)

static void test_dispatch_builtins(void) {
  char path[] = "/tmp/loupe_test_cat_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  CHECK(write(fd, "line1\nline2", 11) == 11);
  close(fd);

  PrintfDef defs[6] = {
      {.fmt = "%Y|"},
      {.fmt = (char *)"%s", .nargs = 1, .size = 32},
      {.fmt = "echo hi %d", .nargs = 1, .size = 8},
      {.fmt = " "},
      {.fmt = "\"-"},
      {.fmt = "hello \"q\"\n\t%d\n", .nargs = 1, .size = 8},
  };
  defs[1].args[0].type = ty_str(32);
  defs[2].args[0].type = ty_int(8, true);
  defs[5].args[0].type = ty_int(8, true);
  Compiled c = {.printfs = defs, .nprintfs = 6};

  BigRec r;
  memset(&r, 0, sizeof r);
  r.h.kind = EV_TIME;
  r.h.index = 0;
  char year[16];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(year, sizeof year, "%Y|", &tm);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h, year);
  char json[128];
  snprintf(json, sizeof json, "{\"type\": \"time\", \"data\": \"%s\"}\n", year);
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h, json);

  r.h.kind = EV_CAT;
  r.h.index = 1;
  strcpy((char *)r.payload, path);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h + 32, "line1\nline2");
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h + 32,
                  "{\"type\": \"cat\", \"data\": \"line1\\nline2\"}\n");
  unlink(path);
  /* A missing file: an error on stderr; an empty record in JSON. */
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h + 32, "");
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h + 32,
                  "{\"type\": \"cat\", \"data\": \"\"}\n");

  r.h.kind = EV_SYSTEM;
  r.h.index = 2;
  int64_t five = 5;
  memcpy(r.payload, &five, 8);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h + 8, "hi 5\n");
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h + 8,
                  "{\"type\": \"syscall\", \"data\": \"hi 5\\n\"}\n");

  r.h.kind = EV_JOIN;
  r.h.index = 3;
  memset(r.payload, 0, sizeof r.payload);
  const char *argv[] = {"/bin/echo", "a", "b c", "", "d"};
  for (int i = 0; i < 5; i++)
    strcpy((char *)r.payload + i * JOIN_ARG_SIZE, argv[i]);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r, "/bin/echo a b c\n");
  r.h.index = 4;
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r,
                  "{\"type\": \"join\", \"data\": \"/bin/echo\\\"-a\\\"-b c\"}\n");
  /* All slots full: sixteen arguments. */
  for (int i = 0; i < JOIN_MAX_ARGS; i++)
    strcpy((char *)r.payload + i * JOIN_ARG_SIZE, "x");
  r.h.index = 3;
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r,
                  "x x x x x x x x x x x x x x x x\n");

  r.h.kind = EV_PRINTF;
  r.h.index = 5;
  memcpy(r.payload, &five, 8);
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h + 8,
                  "{\"type\": \"printf\", \"data\": \"hello \\\"q\\\"\\n\\t5\\n\"}\n");
}

/* The print record's {top, div} payload reaches print_map_as. */
static void test_dispatch_print_top_div(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *m = map_new("@c", 1, k1, ty_int(8, true));
  Key k = nokey();
  for (int i = 1; i <= 3; i++) {
    key_int(m, &k, 0, i);
    put_int(m, &k, i * 10);
  }
  MapSym *maps[] = {m};
  Compiled c = {.maps = maps, .nmaps = 1};
  BigRec r;
  memset(&r, 0, sizeof r);
  r.h.kind = EV_PRINT_MAP;
  int64_t top_div[2] = {2, 10};
  memcpy(r.payload, top_div, 16);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h + 16, "@c[2]: 2\n@c[3]: 3\n");
  EXPECT_DISPATCH(&c, OUT_JSON, &r, sizeof r.h + 16,
                  "{\"type\": \"map\", \"data\": {\"@c\": {\"2\": 2, \"3\": 3}}}\n");
  memset(r.payload, 0, 16);
  EXPECT_DISPATCH(&c, OUT_TEXT, &r, sizeof r.h + 16,
                  "@c[1]: 10\n@c[2]: 20\n@c[3]: 30\n");
  map_free(m);
}

/* A raw tracepoint program that sends two records through the ring buffer:
 * a printf record with `value` (printf id 0), then EV_EXIT if `then_exit`;
 * and adds `value` to @m (a keyless map, id 0). */
static int load_emitter(int ringbuf_fd, int map_fd, int64_t value,
                        bool then_exit) {
  struct bpf_insn insns[64];
  int n = 0;
  /* stack: header at -16, value at -8 */
  insns[n++] = I_ST(BPF_W, BPF_REG_10, -16, EV_PRINTF);
  insns[n++] = I_ST(BPF_W, BPF_REG_10, -12, 0);
  insns[n++] = I_ST(BPF_DW, BPF_REG_10, -8, (int32_t)value);
  insns[n++] = I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, ringbuf_fd);
  insns[n++] = I_LD_IMM64_HI(0);
  insns[n++] = I_MOV64_REG(BPF_REG_2, BPF_REG_10);
  insns[n++] = I_ALU64_IMM(BPF_ADD, BPF_REG_2, -16);
  insns[n++] = I_MOV64_IMM(BPF_REG_3, 16);
  insns[n++] = I_MOV64_IMM(BPF_REG_4, 0);
  insns[n++] = I_CALL(BPF_FUNC_ringbuf_output);
  /* @m = value: key 0 at -24, value at -8 */
  insns[n++] = I_ST(BPF_DW, BPF_REG_10, -24, 0);
  insns[n++] = I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, map_fd);
  insns[n++] = I_LD_IMM64_HI(0);
  insns[n++] = I_MOV64_REG(BPF_REG_2, BPF_REG_10);
  insns[n++] = I_ALU64_IMM(BPF_ADD, BPF_REG_2, -24);
  insns[n++] = I_MOV64_REG(BPF_REG_3, BPF_REG_10);
  insns[n++] = I_ALU64_IMM(BPF_ADD, BPF_REG_3, -8);
  insns[n++] = I_MOV64_IMM(BPF_REG_4, 0);
  insns[n++] = I_CALL(BPF_FUNC_map_update_elem);
  if (then_exit) {
    insns[n++] = I_ST(BPF_W, BPF_REG_10, -16, EV_EXIT);
    insns[n++] = I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, ringbuf_fd);
    insns[n++] = I_LD_IMM64_HI(0);
    insns[n++] = I_MOV64_REG(BPF_REG_2, BPF_REG_10);
    insns[n++] = I_ALU64_IMM(BPF_ADD, BPF_REG_2, -16);
    insns[n++] = I_MOV64_IMM(BPF_REG_3, 8);
    insns[n++] = I_MOV64_IMM(BPF_REG_4, 0);
    insns[n++] = I_CALL(BPF_FUNC_ringbuf_output);
  }
  insns[n++] = I_MOV64_IMM(BPF_REG_0, 0);
  insns[n++] = I_EXIT();
  int fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "test_print", "GPL",
                         insns, n, NULL);
  if (fd < 0) fprintf(stderr, "bpf_prog_load: %s\n", strerror(errno));
  return fd;
}

/* BEGIN { printf("v=%d\n", 1); @m = 1; exit(); } END { printf(...2); @m = 2; }
 * bpftrace prints:  v=1 / v=2 / (empty) / (empty) / @m: 2           */
static void test_run_script_begin_end(void) {
  int rb = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "test_rb", 0, 0, 4096, NULL);
  CHECK(rb >= 0);
  MapSym *m = map_new("@m", 0, NULL, ty_int(8, true));
  MapSym *maps[] = {m};
  PrintfDef pf = {.fmt = "v=%d\n", .nargs = 1, .size = 8};
  pf.args[0].type = ty_int(8, true);

  AttachPoint begin_ap = {.provider = "BEGIN"};
  AttachPoint end_ap = {.provider = "END"};
  Probe begin_probe = {.aps = &begin_ap};
  Probe end_probe = {.aps = &end_ap, .index = 1};
  BpfProg progs[2] = {{.probe = &end_probe}, {.probe = &begin_probe}};
  int map_fd = state_of(m)->fd;
  int fds[2] = {load_emitter(rb, map_fd, 2, false),
                load_emitter(rb, map_fd, 1, true)};
  CHECK(fds[0] >= 0 && fds[1] >= 0);
  Compiled c = {.maps = maps, .nmaps = 1, .printfs = &pf, .nprintfs = 1,
                .progs = progs, .nprogs = 2};
  Loaded l = loaded_of(&c);
  l.ringbuf_fd = rb;
  l.prog_fds = fds;
  l.nprogs = 2;

  Capture cap;
  capture_open(&cap);
  RunOptions opts = {.out = cap.f, .timeout_ms = 5000};
  CHECK(run_script(&c, &l, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);

  /* Without exit(): the timeout (or a signal) ends the loop. */
  loupe_stop_requested = 0;
  close(fds[1]);
  fds[1] = load_emitter(rb, map_fd, 1, false);
  opts.out = capture_open(&cap);
  opts.timeout_ms = 200;
  CHECK(run_script(&c, &l, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);

  /* A stop asked for before run_script: BEGIN, END and maps still run. */
  loupe_stop_requested = 1;
  opts.out = capture_open(&cap);
  opts.timeout_ms = 0;
  CHECK(run_script(&c, &l, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);
  loupe_stop_requested = 0;

  close(fds[0]);
  close(fds[1]);
  close(rb);
  loaded_done(&l, &c);
  map_free(m);
}

int main(void) {
  ncpus = libbpf_num_possible_cpus();
  if (ncpus < 1) ncpus = 1;
  test_int_values_sort_by_value();
  test_keyless_int();
  test_negative_and_unsigned_values();
  test_int_key_signedness();
  test_multi_keys();
  test_string_values_sort_by_key();
  test_value_ties_by_key();
  test_count_sum_over_cpus();
  test_min_max();
  test_avg();
  test_empty_maps();
  test_zero_and_clear();
  test_print_all_maps();
  test_printf_int_widths();
  test_printf_flags();
  test_printf_strings_chars();
  test_printf_enums();
  test_printf_literal_text();
  test_printf_parse();
  test_printf_buf();
  test_hist_basic();
  test_hist_labels();
  test_hist_bits();
  test_hist_keyed_top_div();
  test_lhist();
  test_stats();
  test_tuples();
  test_print_top_div();
  test_json_maps();
  test_buf_values();
  test_dispatch_builtins();
  test_dispatch_print_top_div();
  test_dispatch();
  test_dispatch_mismatched_kinds();
  test_run_script_begin_end();
  printf("test_print: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
