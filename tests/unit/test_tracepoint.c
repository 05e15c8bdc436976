/* Tracepoint formats from this kernel's tracefs, glob matching, and the
 * expansion of attach points through the providers (needs tracefs, so run
 * as root). */
#define _GNU_SOURCE
#include <linux/bpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ctype.h"
#include "probes/expand.h"
#include "probes/provider.h"

static int passed, failed;

/* The AST and the targets expand makes are never freed, by design (the
 * process is short-lived); keep LeakSanitizer quiet about them. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

#define CHECK(cond)                                                    \
  do {                                                                 \
    if (cond) {                                                        \
      passed++;                                                        \
    } else {                                                           \
      failed++;                                                        \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                  \
  } while (0)

/* ---- glob ----------------------------------------------------------- */

static void test_glob_match(void) {
  CHECK(glob_match("*", ""));
  CHECK(glob_match("*", "anything"));
  CHECK(glob_match("sys_enter_open*", "sys_enter_openat"));
  CHECK(glob_match("sys_enter_open*", "sys_enter_open"));
  CHECK(!glob_match("sys_enter_open*", "sys_exit_openat"));
  CHECK(glob_match("sys_*_read", "sys_enter_read"));
  CHECK(!glob_match("sys_*_read", "sys_enter_readv"));
  CHECK(glob_match("sched_sw?tch", "sched_switch"));
  CHECK(!glob_match("sched_sw?tch", "sched_swtch"));
  CHECK(glob_match("*a*b*c", "xxaxxbxxc"));
  CHECK(!glob_match("*a*b*c", "xxaxxbxxcx"));
  CHECK(glob_match("tracepoint:sched:*", "tracepoint:sched:sched_switch"));
  CHECK(!glob_match("abc", "ab"));
  CHECK(!glob_match("ab", "abc"));
  CHECK(has_wildcard("a*") && has_wildcard("?") && !has_wildcard("abc"));
}

/* ---- formats -------------------------------------------------------- */

static void test_tracefs_found(void) {
  const char *dir = tracefs_dir();
  CHECK(dir != NULL);
  CHECK(dir && strstr(dir, "tracing") != NULL);
}

static int id_from_tracefs(const char *cat, const char *ev) {
  char path[512];
  snprintf(path, sizeof path, "%s/events/%s/%s/id", tracefs_dir(), cat, ev);
  FILE *f = fopen(path, "r");
  int id = -1;
  if (f) {
    if (fscanf(f, "%d", &id) != 1) id = -1;
    fclose(f);
  }
  return id;
}

static void test_format_sched_switch(void) {
  TpFormat *f = tp_format("sched", "sched_switch");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(f->id == id_from_tracefs("sched", "sched_switch"));
  CHECK(tp_field(f, "common_pid") == NULL);
  const TpField *comm = tp_field(f, "prev_comm");
  CHECK(comm && comm->is_string && comm->is_array && !comm->is_pointer);
  CHECK(comm && comm->offset == 8 && comm->size == 16);
  CHECK(comm && !strcmp(comm->type_text, "char[16]"));
  const TpField *pid = tp_field(f, "prev_pid");
  CHECK(pid && pid->size == 4 && pid->is_signed && !pid->is_string);
  CHECK(pid && !strcmp(pid->type_text, "pid_t"));
  const TpField *state = tp_field(f, "prev_state");
  CHECK(state && state->size == 8 && !strcmp(state->type_text, "long"));
  CHECK(tp_field(f, "next_prio") != NULL);
  /* The same pointer: formats are cached. */
  CHECK(tp_format("sched", "sched_switch") == f);
}

static void test_format_data_loc(void) {
  TpFormat *f = tp_format("sched", "sched_process_exec");
  CHECK(f != NULL);
  if (!f) return;
  const TpField *fn = tp_field(f, "filename");
  CHECK(fn && fn->data_loc && fn->is_string && !fn->is_array);
  CHECK(fn && fn->size == 4 && fn->offset == 8);
  CHECK(fn && !strcmp(fn->type_text, "__data_loc char[]"));
  CHECK(f->nfields == 3);
}

static void test_format_pointer(void) {
  TpFormat *f = tp_format("syscalls", "sys_enter_openat");
  CHECK(f != NULL);
  if (!f) return;
  const TpField *fn = tp_field(f, "filename");
  CHECK(fn && fn->is_pointer && !fn->is_string && fn->size == 8);
  CHECK(fn && !strcmp(fn->type_text, "const char *"));
  const TpField *nr = tp_field(f, "__syscall_nr");
  CHECK(nr && nr->offset == 8 && nr->size == 4 && nr->is_signed);
  CHECK(tp_field(f, "dfd") && tp_field(f, "mode"));
  TpFormat *e = tp_format("syscalls", "sys_enter_execve");
  const TpField *argv = e ? tp_field(e, "argv") : NULL;
  CHECK(argv && argv->is_pointer && argv->offset == 24);
}

/* A syscall argument's sign is its declared type's, which for a typedef
 * takes the kernel's BTF: it is found when the field is looked at, so
 * reading a format (opensnoop's sys_enter_openat, with its umode_t mode)
 * does not parse BTF for fields the script never reads. Runs first, while
 * nothing has loaded BTF. */
static void test_format_sign_lazy(void) {
  TpFormat *f = tp_format("syscalls", "sys_enter_lseek");
  CHECK(f != NULL);
  if (!f) return;
  CHECK(!ctype_btf_loaded());
  const TpField *off = NULL, *fd = NULL;
  for (int i = 0; i < f->nfields; i++) {
    if (!strcmp(f->fields[i].name, "offset")) off = &f->fields[i];
    if (!strcmp(f->fields[i].name, "fd")) fd = &f->fields[i];
  }
  CHECK(off && off->sign_pending && !off->is_signed);   /* off_t */
  CHECK(fd && !fd->sign_pending && !fd->is_signed);     /* unsigned int */
  CHECK(tp_field(f, "offset") == off && off && !off->sign_pending &&
        off->is_signed);
  CHECK(tp_field(f, "fd") == fd && fd && !fd->is_signed);
}

static void test_format_int_array(void) {
  TpFormat *f = tp_format("raw_syscalls", "sys_enter");
  CHECK(f != NULL);
  if (!f) return;
  const TpField *args = tp_field(f, "args");
  CHECK(args && args->is_array && !args->is_string && args->size == 48);
  CHECK(args && !strcmp(args->type_text, "unsigned long[6]"));
  const TpField *id = tp_field(f, "id");
  CHECK(id && id->offset == 8 && id->is_signed);
}

static void test_format_missing(void) {
  CHECK(tp_format("syscalls", "sys_enter_no_such_call") == NULL);
  CHECK(tp_format("no_such_category", "x") == NULL);
}

/* ---- expansion ------------------------------------------------------ */

static const Source test_src = {.name = "stdin",
                                 .text = "tracepoint:syscalls:sys_enter_open* { }"};

/* A diag writing into a memory buffer the test can inspect. */
typedef struct Capture {
  Diag d;
  char *text;
  size_t len;
} Capture;

static void capture_start(Capture *c) {
  diag_init(&c->d, &test_src);
  c->text = NULL;
  c->len = 0;
  c->d.out = open_memstream(&c->text, &c->len);
}

static void capture_end(Capture *c) {
  fclose(c->d.out);
}

static AttachPoint *make_ap(const char *provider, int nparts, ...) {
  AttachPoint *ap = calloc(1, sizeof *ap);
  ap->span = (Span){.line = 1, .col = 1, .end_col = 35};
  ap->provider = strdup(provider);
  va_list va;
  va_start(va, nparts);
  for (int i = 0; i < nparts; i++) ap->parts[i] = strdup(va_arg(va, char *));
  va_end(va);
  ap->nparts = nparts;
  ap->text = strdup(provider);
  return ap;
}

static int expand_one(AttachPoint *ap, Capture *c) {
  Probe p = {0};
  Settings st = {0};
  Script s = {.settings = &st};
  p.aps = ap;
  s.probes = &p;
  s.nprobes = 1;
  s.src = &test_src;
  capture_start(c);
  int r = expand_script(&s, &c->d);
  capture_end(c);
  return r;
}

static bool has_target(const AttachPoint *ap, const char *name) {
  for (Target *t = ap->targets; t; t = t->next)
    if (!strcmp(t->name, name)) return true;
  return false;
}

static void test_expand_wildcard(void) {
  Capture c;
  AttachPoint *ap = make_ap("tracepoint", 2, "syscalls", "sys_enter_open*");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->prov == provider_find("tracepoint"));
  CHECK(ap->ntargets >= 2);
  CHECK(has_target(ap, "tracepoint:syscalls:sys_enter_openat"));
  CHECK(!has_target(ap, "tracepoint:syscalls:sys_exit_openat"));
  int n = 0;
  for (Target *t = ap->targets; t; t = t->next, n++) {
    CHECK(t->format != NULL && !strcmp(t->category, "syscalls"));
    CHECK(!strncmp(t->event, "sys_enter_open", 14));
  }
  CHECK(n == ap->ntargets);
  CHECK(c.len == 0);
  free(c.text);
}

static void test_expand_alias_and_category_wildcard(void) {
  Capture c;
  AttachPoint *ap = make_ap("t", 2, "sch*", "sched_switch");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->ntargets == 1 && !strcmp(ap->provider, "tracepoint"));
  CHECK(has_target(ap, "tracepoint:sched:sched_switch"));
  free(c.text);
}

static void test_expand_errors(void) {
  Capture c;
  AttachPoint *ap = make_ap("tracepoint", 2, "syscalls", "sys_enter_foo");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "stdin:1:1-35: ERROR: No matches for tracepoint "
                       "syscalls:sys_enter_foo.") != NULL);
  free(c.text);

  ap = make_ap("tracepoint", 2, "sysc*", "sys_enter_foo*");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "No matches for tracepoint sysc*:sys_enter_foo*."));
  free(c.text);

  ap = make_ap("tracepoint", 1, "syscalls");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "tracepoint probe type requires 2 arguments"));
  free(c.text);

  ap = make_ap("foo", 1, "bar");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "Invalid probe type: foo"));
  free(c.text);

  /* Without a kprobe PMU (CONFIG_KPROBES off) kprobes are refused; with
   * one, vfs_read is a target. */
  ap = make_ap("kprobe", 1, "vfs_read");
  if (expand_one(ap, &c) == 0)
    CHECK(has_target(ap, "kprobe:vfs_read"));
  else
    CHECK(strstr(c.text, "kprobes are not available on this kernel"));
  free(c.text);

  ap = make_ap("kretprobe", 3, "vmlinux", "vfs_read", "x");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "kretprobe probe type requires 1 or 2 arguments"));
  free(c.text);

  /* A uprobe's binary must exist (checked after the uprobe PMU). */
  ap = make_ap("uprobe", 2, "/nonexistent/loupe_bin", "main");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "uprobe target file '/nonexistent/loupe_bin' does "
                       "not exist or is not executable") ||
        strstr(c.text, "uprobes are not available on this kernel"));
  free(c.text);

  /* /bin/sh has no usdt notes */
  ap = make_ap("usdt", 2, "/bin/sh", "probe");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "No usdt probe matches /bin/sh:probe") ||
        strstr(c.text, "usdt probes are not available on this kernel"));
  free(c.text);

  /* an iterator that does not exist; a pinned one, which loupe refuses */
  ap = make_ap("iter", 1, "loupe_no_such_iter");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "No matches for iter loupe_no_such_iter") ||
        strstr(c.text, "iter probes need the kernel's BTF"));
  free(c.text);
  ap = make_ap("iter", 2, "task", "mypin");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "loupe does not pin iterators (iter:task:mypin)"));
  free(c.text);

  ap = make_ap("BEGIN", 1, "x");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "BEGIN probe type requires 0 arguments"));
  free(c.text);
}

static void test_expand_all_errors_reported(void) {
  Capture c;
  AttachPoint *a = make_ap("foo", 0);
  AttachPoint *b = make_ap("tracepoint", 2, "x", "y");
  AttachPoint *good = make_ap("BEGIN", 0);
  a->next = good;
  good->next = b;
  CHECK(expand_one(a, &c) == -1);
  CHECK(c.d.errors == 2);
  CHECK(good->ntargets == 1 && !strcmp(good->targets->name, "BEGIN"));
  free(c.text);
}

static void test_expand_begin_end(void) {
  Capture c;
  AttachPoint *ap = make_ap("begin", 0);
  CHECK(expand_one(ap, &c) == 0);
  CHECK(!strcmp(ap->provider, "BEGIN") && ap->prov->attach == NULL);
  CHECK(ap->prov->prog_type == BPF_PROG_TYPE_RAW_TRACEPOINT);
  free(c.text);
  ap = make_ap("END", 0);
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->ntargets == 1 && !strcmp(ap->targets->name, "END"));
  free(c.text);
}

static void test_expand_interval(void) {
  Capture c;
  AttachPoint *ap = make_ap("interval", 2, "ms", "100");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->ntargets == 1 && ap->targets->period == 100000000ULL);
  CHECK(ap->targets->freq == 0);
  CHECK(!strcmp(ap->targets->name, "interval:ms:100"));
  free(c.text);

  ap = make_ap("i", 2, "hz", "99");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->freq == 99 && ap->targets->period == 0);
  free(c.text);

  ap = make_ap("interval", 1, "1s");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->period == 1000000000ULL);
  CHECK(!strcmp(ap->targets->name, "interval:1s"));
  free(c.text);

  ap = make_ap("profile", 1, "99hz");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->freq == 99 && ap->targets->period == 0);
  CHECK(!strcmp(ap->targets->name, "profile:99hz"));
  free(c.text);

  ap = make_ap("interval", 1, "1500");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->period == 1500);
  free(c.text);

  ap = make_ap("interval", 1, "5xs");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "xs is not an accepted unit of time"));
  free(c.text);

  ap = make_ap("interval", 2, "xs", "1");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "xs is not an accepted unit of time"));
  free(c.text);

  ap = make_ap("interval", 2, "s", "0");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "greater than zero"));
  free(c.text);

  ap = make_ap("interval", 2, "s", "abc");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "whole number"));
  free(c.text);

  ap = make_ap("interval", 1, "s");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "interval probe type requires 2 arguments"));
  free(c.text);
}

static void test_expand_profile_software(void) {
  Capture c;
  AttachPoint *ap = make_ap("profile", 2, "hz", "99");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->freq == 99 && !strcmp(ap->targets->name, "profile:hz:99"));
  free(c.text);

  ap = make_ap("p", 1, "hz");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "profile probe type requires 2 arguments"));
  free(c.text);

  ap = make_ap("software", 2, "faults", "10");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->period == 10);
  CHECK(!strcmp(ap->targets->event, "page-faults"));
  CHECK(!strcmp(ap->targets->name, "software:faults:10"));
  free(c.text);

  ap = make_ap("s", 1, "cs");
  CHECK(expand_one(ap, &c) == 0);
  CHECK(ap->targets->period == 1000);
  free(c.text);

  ap = make_ap("software", 2, "foo", "1");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "foo is not a software probe"));
  free(c.text);

  ap = make_ap("software", 3, "faults", "1", "2");
  CHECK(expand_one(ap, &c) == -1);
  CHECK(strstr(c.text, "software probe type requires 1 or 2 arguments"));
  free(c.text);
}

/* ---- listing -------------------------------------------------------- */

static char *list_to_string(const char *provider, const char *pattern) {
  static const Settings none;   /* no -lv */
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  provider_find(provider)->list(pattern, &none, f);
  fclose(f);
  return text;
}

static void test_list(void) {
  char *s = list_to_string("tracepoint", "tracepoint:sched:sched_sw*");
  CHECK(strstr(s, "tracepoint:sched:sched_switch\n") != NULL);
  CHECK(strstr(s, "syscalls") == NULL);
  free(s);
  s = list_to_string("tracepoint", "t:sched:sched_switch");
  CHECK(!strcmp(s, "tracepoint:sched:sched_switch\n"));
  free(s);
  s = list_to_string("interval", "interval:*");
  CHECK(strstr(s, "interval:ms:\n") && strstr(s, "interval:hz:\n"));
  free(s);
  s = list_to_string("software", "software:*faults*");
  CHECK(strstr(s, "software:page-faults:\n") &&
        !strstr(s, "software:cpu-clock:"));
  free(s);
}

static void test_provider_find(void) {
  CHECK(provider_find("t") == provider_find("tracepoint"));
  CHECK(provider_find("i") == provider_find("interval"));
  CHECK(provider_find("begin") == provider_find("BEGIN"));
  CHECK(provider_find("end") == provider_find("END"));
  CHECK(provider_find("nope") == NULL);
  int n = 0;
  while (providers[n]) n++;
  CHECK(n >= 4);
}

int main(void) {
  test_glob_match();
  test_provider_find();
  test_expand_begin_end();
  test_expand_interval();
  test_expand_profile_software();
  if (tracefs_dir()) {
    test_tracefs_found();
    test_format_sign_lazy();
    test_format_sched_switch();
    test_format_data_loc();
    test_format_pointer();
    test_format_int_array();
    test_format_missing();
    test_expand_wildcard();
    test_expand_alias_and_category_wildcard();
    test_expand_errors();
    test_expand_all_errors_reported();
    test_list();
  } else {
    printf("test_tracepoint: no tracefs (not root?): format tests skipped\n");
  }
  printf("test_tracepoint: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
