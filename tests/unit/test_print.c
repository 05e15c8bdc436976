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
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "insn.h"
#include "print.h"
#include "provider.h"
#include "run.h"

/* run.c's record dispatcher, not in run.h: only this test calls it. */
int run_handle_record(Compiled *c, FILE *out, int *exit_seen,
                      const void *data, size_t size);

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

/* Creates the kernel map for a MapSym with the given keys and value. */
static MapSym *map_new(const char *name, int nkeys, const Type *keys,
                       Type value) {
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
  if (value.kind == TY_AGG) {
    bool pair = value.agg == AGG_MIN || value.agg == AGG_MAX ||
                value.agg == AGG_AVG;
    m->bpf_type = BPF_MAP_TYPE_PERCPU_HASH;
    m->value_size = pair ? 16 : 8;
  } else {
    m->bpf_type = BPF_MAP_TYPE_HASH;
    m->value_size = value.kind == TY_STR ? align8(value.size) : 8;
  }
  m->max_entries = 64;
  m->fd = bpf_map_create(m->bpf_type, "test_print", m->key_size,
                         m->value_size, m->max_entries, NULL);
  if (m->fd < 0) {
    fprintf(stderr, "bpf_map_create: %s (are you root?)\n", strerror(errno));
    exit(2);
  }
  return m;
}

static void map_free(MapSym *m) {
  close(m->fd);
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
  CHECK(bpf_map_update_elem(m->fd, k->bytes, &v, BPF_ANY) == 0);
}

static void put_str(const MapSym *m, const Key *k, const char *s) {
  char buf[256] = {0};
  strncpy(buf, s, sizeof buf - 1);
  CHECK(bpf_map_update_elem(m->fd, k->bytes, buf, BPF_ANY) == 0);
}

/* Sets a per-CPU value: slot i of `slots` (each 1 or 2 int64 words) goes to
 * CPU i; CPUs past nslots stay zero. */
static void put_percpu(const MapSym *m, const Key *k, const int64_t *slots,
                       int nslots) {
  int words = m->value_size / 8;
  int64_t *buf = calloc(ncpus, m->value_size);
  for (int c = 0; c < nslots && c < ncpus; c++)
    memcpy(buf + c * words, slots + c * words, m->value_size);
  CHECK(bpf_map_update_elem(m->fd, k->bytes, buf, BPF_ANY) == 0);
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
  CHECK(print_map(m, c.f) == 0);
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

/* bpftrace prints 8-byte integer keys signed even when unsigned, narrower
 * ones by their type.
 * bpftrace -e 'BEGIN { @b[(uint64)-1]=(uint64)-1; @c[(uint32)-1]=1;
 *                      @d[(uint8)255]=1; @e[(int16)-3]=1; exit(); }'
 *   @b[-1]: 18446744073709551615
 *   @c[4294967295]: 1
 *   @d[255]: 1
 *   @e[-3]: 1                                                        */
static void test_int_key_signedness(void) {
  Type kb[] = {ty_int(8, false)};
  MapSym *b = map_new("@b", 1, kb, ty_int(8, false));
  Key k = nokey();
  key_int(b, &k, 0, -1);
  put_int(b, &k, -1);
  EXPECT_MAP(b, "@b[-1]: 18446744073709551615\n");
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
 *   (a keyless count() lives in an array map in bpftrace)
 * bpftrace -e 'BEGIN { if (0) { @v = avg(1); } exit(); }'  ->  "\n\n"  */
static void test_empty_maps(void) {
  Type k1[] = {ty_int(8, true)};
  MapSym *e = map_new("@e", 1, k1, ty_int(8, true));
  EXPECT_MAP(e, "\n");
  map_free(e);

  MapSym *z = map_new("@z", 0, NULL, ty_agg(AGG_COUNT));
  EXPECT_MAP(z, "@z: 0\n");
  map_free(z);

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
  CHECK(map_zero(a) == 0);
  EXPECT_MAP(a, "@a[1]: 0\n@a[2]: 0\n");
  CHECK(map_clear(a) == 0);
  EXPECT_MAP(a, "\n");
  map_free(a);

  MapSym *n = map_new("@n", 0, NULL, ty_agg(AGG_MIN));
  k = nokey();
  put_agg2(n, &k, -4, 1, 0, 0);
  CHECK(map_zero(n) == 0);
  EXPECT_MAP(n, "@n: 0\n");
  map_free(n);

  MapSym *v = map_new("@v", 0, NULL, ty_agg(AGG_AVG));
  put_agg2(v, &k, 3, 1, 0, 0);
  CHECK(map_zero(v) == 0);
  EXPECT_MAP(v, "@v: 0\n\n");
  map_free(v);

  /* Clearing more keys than one get_next_key walk would survive. */
  MapSym *big = map_new("@big", 1, k1, ty_int(8, true));
  for (int i = 0; i < 50; i++) {
    key_int(big, &k, 0, i);
    put_int(big, &k, i);
  }
  CHECK(map_clear(big) == 0);
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
  Capture cap;
  capture_open(&cap);
  print_all_maps(&c, cap.f);
  EXPECT_TEXT(capture_text(&cap),
              "\n\n@[bpftrace, 2]: 1\n@av: 5\n\n@s[a]: b\n@x[1]: 1\n@y: 5\n");
  capture_free(&cap);

  /* bpftrace -e 'BEGIN { exit(); }' prints just the two empty lines. */
  Compiled none = {.nmaps = 0};
  capture_open(&cap);
  print_all_maps(&none, cap.f);
  EXPECT_TEXT(capture_text(&cap), "\n\n");
  capture_free(&cap);
  for (int i = 0; i < 6; i++) map_free(maps[i]);
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
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  n = rec_make(&r, EV_ZERO_MAP, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  n = rec_make(&r, EV_CLEAR_MAP, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  n = rec_make(&r, EV_PRINT_MAP, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  /* Bad ids and short records are ignored. */
  n = rec_make(&r, EV_PRINTF, 5, 1);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  run_handle_record(&c, cap.f, &exit_seen, &r, sizeof r.h + 4);
  run_handle_record(&c, cap.f, &exit_seen, &r, 3);
  n = rec_make(&r, EV_EXIT, 0, 0);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  CHECK(exit_seen == 1);
  /* After exit() records are dropped. */
  n = rec_make(&r, EV_PRINTF, 0, 43);
  run_handle_record(&c, cap.f, &exit_seen, &r, n);
  EXPECT_TEXT(capture_text(&cap), "v=42\n@m[1]: 7\n@m[1]: 0\n\n");
  capture_free(&cap);
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
  BpfProg progs[2] = {
      {.probe = &end_probe, .fd = load_emitter(rb, m->fd, 2, false)},
      {.probe = &begin_probe, .fd = load_emitter(rb, m->fd, 1, true)},
  };
  CHECK(progs[0].fd >= 0 && progs[1].fd >= 0);
  Compiled c = {.maps = maps, .nmaps = 1, .printfs = &pf, .nprintfs = 1,
                .progs = progs, .nprogs = 2, .ringbuf_fd = rb};

  Capture cap;
  capture_open(&cap);
  RunOptions opts = {.out = cap.f, .timeout_ms = 5000};
  CHECK(run_script(&c, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);

  /* Without exit(): the timeout (or a signal) ends the loop. */
  loupe_stop_requested = 0;
  close(progs[1].fd);
  progs[1].fd = load_emitter(rb, m->fd, 1, false);
  opts.out = capture_open(&cap);
  opts.timeout_ms = 200;
  CHECK(run_script(&c, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);

  /* A stop asked for before run_script: BEGIN, END and maps still run. */
  loupe_stop_requested = 1;
  opts.out = capture_open(&cap);
  opts.timeout_ms = 0;
  CHECK(run_script(&c, &opts) == 0);
  EXPECT_TEXT(capture_text(&cap), "v=1\nv=2\n\n\n@m: 2\n");
  capture_free(&cap);
  loupe_stop_requested = 0;

  close(progs[0].fd);
  close(progs[1].fd);
  close(rb);
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
  test_printf_literal_text();
  test_printf_parse();
  test_dispatch();
  test_run_script_begin_end();
  printf("test_print: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
