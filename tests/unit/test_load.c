/* load / attach / unload with hand-built programs, against the running
 * kernel (needs root). Each test builds a tiny Compiled, loads it, checks
 * the kernel's view, and leaves nothing behind. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "codegen/insn.h"
#include "runtime/load.h"

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

static const Source test_src = {
    .name = "stdin",
    .text = "tracepoint:raw_syscalls:sys_enter {\n    @ = count();\n}\n"};

/* The run's settings: none given (no -p, no -c). */
static const Settings no_settings;

/* ---- building programs ---------------------------------------------- */

static void emit(BpfProg *p, struct bpf_insn in, Span at) {
  if (p->ninsns == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 32;
    p->insns = realloc(p->insns, p->cap * sizeof *p->insns);
    p->insn_span = realloc(p->insn_span, p->cap * sizeof *p->insn_span);
  }
  p->insn_span[p->ninsns] = at;
  p->insns[p->ninsns++] = in;
}

static void emit_map_load(BpfProg *p, int reg, int map_id, Span at) {
  emit(p, I_LD_IMM64_LO(reg, BPF_PSEUDO_MAP_FD, map_id), at);
  emit(p, I_LD_IMM64_HI(0), at);
}

/* @[0] += 1 in an 8-byte array slot: the smallest useful program. */
static void emit_count(BpfProg *p, int map_id) {
  Span line2 = {.line = 2, .col = 5, .end_col = 16};
  emit(p, I_ST(BPF_W, BPF_REG_10, -4, 0), line2);
  emit(p, I_MOV64_REG(BPF_REG_2, BPF_REG_10), line2);
  emit(p, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -4), line2);
  emit_map_load(p, BPF_REG_1, map_id, line2);
  emit(p, I_CALL(BPF_FUNC_map_lookup_elem), line2);
  emit(p, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2), line2);
  emit(p, I_MOV64_IMM(BPF_REG_1, 1), line2);
  emit(p, insn_make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_0, BPF_REG_1, 0,
                    BPF_ADD), line2);
  emit(p, I_MOV64_IMM(BPF_REG_0, 0), line2);
  emit(p, I_EXIT(), line2);
}

static MapSym *make_counter_map(void) {
  MapSym *m = calloc(1, sizeof *m);
  m->name = "@";
  m->key_size = 4;
  m->value_size = 8;
  m->bpf_type = BPF_MAP_TYPE_ARRAY;
  m->max_entries = 1;
  return m;
}

static AttachPoint *make_ap(const char *provider, int nparts, char *p0,
                            char *p1) {
  AttachPoint *ap = calloc(1, sizeof *ap);
  ap->span = (Span){.line = 1, .col = 1, .end_col = 34};
  ap->provider = (char *)provider;
  /* programs are named after their probe: "ltest_" marks this test's */
  char text[64];
  snprintf(text, sizeof text, "ltest_%s", provider);
  ap->text = strdup(text);
  ap->parts[0] = p0;
  ap->parts[1] = p1;
  ap->nparts = nparts;
  ap->prov = provider_find(provider);
  Diag d;
  diag_init(&d, &test_src);
  if (ap->prov->expand(ap, &no_settings, &d) < 0) exit(2);
  return ap;
}

static BpfProg make_prog(Probe *probe, const char *name) {
  BpfProg p = {0};
  p.probe = probe;
  p.prog_type = probe->aps->prov->prog_type;
  snprintf(p.name, sizeof p.name, "%s", name);
  return p;
}

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

/* ---- the kernel's view ---------------------------------------------- */

/* How many loaded programs have a name starting with prefix. */
static int kernel_progs_named(const char *prefix) {
  __u32 id = 0;
  int n = 0;
  while (bpf_prog_get_next_id(id, &id) == 0) {
    int fd = bpf_prog_get_fd_by_id(id);
    if (fd < 0) continue;
    struct bpf_prog_info info = {0};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
        !strncmp(info.name, prefix, strlen(prefix)))
      n++;
    close(fd);
  }
  return n;
}

/* Programs are freed after an RCU grace period; give them a moment. */
static int kernel_progs_named_settled(const char *prefix) {
  int n = 0;
  for (int i = 0; i < 100 && (n = kernel_progs_named(prefix)) > 0; i++)
    usleep(10000);
  return n;
}

static uint64_t counter_value(int fd) {
  uint32_t key = 0;
  uint64_t value = 0;
  bpf_map_lookup_elem(fd, &key, &value);
  return value;
}

/* ---- tests ---------------------------------------------------------- */

static void test_tracepoint_counts_events(void) {
  MapSym *m = make_counter_map();
  MapSym *maps[] = {m};
  Probe probe = {0};
  probe.aps = make_ap("tracepoint", 2, "raw_syscalls", "sys_enter");
  Probe begin = {0};
  begin.aps = make_ap("BEGIN", 0, NULL, NULL);
  BpfProg progs[2] = {make_prog(&probe, "ltest_count"),
                      make_prog(&begin, "ltest_begin")};
  emit_count(&progs[0], 0);
  emit(&progs[1], I_MOV64_IMM(BPF_REG_0, 0), (Span){0});
  emit(&progs[1], I_EXIT(), (Span){0});
  Compiled c = {.maps = maps, .nmaps = 1, .progs = progs, .nprogs = 2};
  Loaded l;
  Capture cap;
  capture_start(&cap);

  CHECK(load_all(&c, &l, false, &cap.d) == 0);
  /* nothing sends records: no ring buffer */
  CHECK(l.ringbuf_fd == -1 && l.scratch_fd == -1 && l.maps[0].fd >= 0);
  CHECK(l.prog_fds[0] >= 0 && l.prog_fds[1] >= 0);
  /* The program as generated keeps the map id, not the fd. */
  CHECK(progs[0].insns[3].imm == 0);
  CHECK(kernel_progs_named("ltest_tracepoin") == 1);   /* 15 bytes */

  LinkSet links = {0};
  CHECK(attach_all(&c, &l, &no_settings, &links, &cap.d) == 2);
  CHECK(links.n >= 1);
  for (int i = 0; i < 100; i++) getppid();
  CHECK(counter_value(l.maps[0].fd) >= 100);

  links_close_all(&links);
  uint64_t after_detach = counter_value(l.maps[0].fd);
  for (int i = 0; i < 100; i++) getppid();
  CHECK(counter_value(l.maps[0].fd) == after_detach);
  unload_all(&l);
  CHECK(l.maps[0].fd == -1 && l.prog_fds[0] == -1 && l.ringbuf_fd == -1);
  CHECK(kernel_progs_named_settled("ltest_") == 0);
  fclose(cap.d.out);
  CHECK(cap.len == 0);
  free(cap.text);
}

static void test_interval_fires(void) {
  MapSym *m = make_counter_map();
  MapSym *maps[] = {m};
  Probe probe = {0};
  probe.aps = make_ap("interval", 2, "ms", "5");
  BpfProg prog = make_prog(&probe, "ltest_interval");
  emit_count(&prog, 0);
  Compiled c = {.maps = maps, .nmaps = 1, .progs = &prog, .nprogs = 1,
                .scratch_size = 64};
  Loaded l;
  Capture cap;
  capture_start(&cap);
  CHECK(load_all(&c, &l, false, &cap.d) == 0);
  CHECK(l.scratch_fd >= 0);
  LinkSet links = {0};
  CHECK(attach_all(&c, &l, &no_settings, &links, &cap.d) == 1);
  /* cpu-clock counts CPU time on CPU 0, so keep CPU 0 busy for a while. */
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  CPU_SET(0, &cpus);
  cpu_set_t saved;
  sched_getaffinity(0, sizeof saved, &saved);
  sched_setaffinity(0, sizeof cpus, &cpus);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000000L +
             (now.tv_nsec - start.tv_nsec) < 60000000L);
  sched_setaffinity(0, sizeof saved, &saved);
  CHECK(counter_value(l.maps[0].fd) >= 3);
  links_close_all(&links);
  unload_all(&l);
  fclose(cap.d.out);
  free(cap.text);
  CHECK(kernel_progs_named_settled("ltest_") == 0);
}

/* profile fires on every CPU and software events count what happens;
 * both should have counted something after a busy moment. */
static void test_profile_and_software_fire(void) {
  MapSym *m1 = make_counter_map(), *m2 = make_counter_map();
  MapSym *maps[] = {m1, m2};
  Probe profile = {0}, faults = {0};
  profile.aps = make_ap("profile", 2, "hz", "997");
  faults.aps = make_ap("software", 2, "page-faults", "1");
  BpfProg progs[2] = {make_prog(&profile, "ltest_profile"),
                      make_prog(&faults, "ltest_faults")};
  emit_count(&progs[0], 0);
  emit_count(&progs[1], 1);
  Compiled c = {.maps = maps, .nmaps = 2, .progs = progs, .nprogs = 2};
  Loaded l;
  Capture cap;
  capture_start(&cap);
  CHECK(load_all(&c, &l, false, &cap.d) == 0);
  LinkSet links = {0};
  CHECK(attach_all(&c, &l, &no_settings, &links, &cap.d) == 2);
  long ncpus = sysconf(_SC_NPROCESSORS_ONLN);
  CHECK(links.n >= 2 * ncpus);
  /* Touch fresh pages (faults) and burn CPU time (profile). */
  for (int i = 0; i < 20; i++) {
    char *p = malloc(1 << 20);
    for (int j = 0; j < (1 << 20); j += 4096) p[j] = (char)j;
    free(p);
  }
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000000L +
             (now.tv_nsec - start.tv_nsec) < 30000000L);
  CHECK(counter_value(l.maps[0].fd) >= 5);
  CHECK(counter_value(l.maps[1].fd) >= 10);
  links_close_all(&links);
  unload_all(&l);
  fclose(cap.d.out);
  free(cap.text);
  CHECK(kernel_progs_named_settled("ltest_") == 0);
}

/* BEGIN and END are raw tracepoint programs run with BPF_PROG_TEST_RUN,
 * never attached: prove this kernel allows it. */
static void test_raw_tracepoint_test_run(void) {
  struct bpf_insn insns[] = {I_MOV64_IMM(BPF_REG_0, 7), I_EXIT()};
  int fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "ltest_rawtp", "GPL",
                         insns, 2, NULL);
  CHECK(fd >= 0);
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  CHECK(bpf_prog_test_run_opts(fd, &opts) == 0);
  CHECK(opts.retval == 7);
  close(fd);
}

static int got_pid;
static int on_record(void *ctx, void *data, size_t size) {
  if (size == 8) got_pid = (int)(*(uint64_t *)data >> 32);
  return 0;
}

/* A BEGIN-like program using helpers and the ring buffer, loaded through
 * load_all so the internal map ids get patched. */
static void test_begin_ringbuf_output(void) {
  Probe begin = {0};
  begin.aps = make_ap("BEGIN", 0, NULL, NULL);
  BpfProg p = make_prog(&begin, "ltest_ringbuf");
  Span none = {0};
  emit(&p, I_CALL(BPF_FUNC_get_current_pid_tgid), none);
  emit(&p, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, -8), none);
  emit_map_load(&p, BPF_REG_1, MAP_ID_RINGBUF, none);
  emit(&p, I_MOV64_REG(BPF_REG_2, BPF_REG_10), none);
  emit(&p, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -8), none);
  emit(&p, I_MOV64_IMM(BPF_REG_3, 8), none);
  emit(&p, I_MOV64_IMM(BPF_REG_4, 0), none);
  emit(&p, I_CALL(BPF_FUNC_ringbuf_output), none);
  emit(&p, I_MOV64_IMM(BPF_REG_0, 0), none);
  emit(&p, I_EXIT(), none);
  Compiled c = {.progs = &p, .nprogs = 1, .ringbuf_size = 5000};
  Loaded l;
  Capture cap;
  capture_start(&cap);
  CHECK(load_all(&c, &l, false, &cap.d) == 0);
  LinkSet links = {0};
  CHECK(attach_all(&c, &l, &no_settings, &links, &cap.d) == 1);
  CHECK(links.n == 0);
  LIBBPF_OPTS(bpf_test_run_opts, opts);
  CHECK(bpf_prog_test_run_opts(l.prog_fds[0], &opts) == 0);
  struct ring_buffer *rb = ring_buffer__new(l.ringbuf_fd, on_record, NULL,
                                            NULL);
  CHECK(rb != NULL);
  got_pid = 0;
  if (rb) {
    CHECK(ring_buffer__consume(rb) == 1);
    ring_buffer__free(rb);
  }
  CHECK(got_pid == getpid());
  unload_all(&l);
  fclose(cap.d.out);
  free(cap.text);
}

static void test_verifier_rejection_is_located(void) {
  Probe probe = {0};
  probe.aps = make_ap("tracepoint", 2, "raw_syscalls", "sys_enter");
  BpfProg p = make_prog(&probe, "ltest_bad");
  p.ap = probe.aps;
  p.target = probe.aps->targets;
  emit(&p, I_MOV64_IMM(BPF_REG_0, 0), (Span){.line = 1, .col = 1, .end_col = 34});
  /* r0 = r2: r2 was never written. */
  emit(&p, I_MOV64_REG(BPF_REG_0, BPF_REG_2), (Span){.line = 2, .col = 5, .end_col = 16});
  emit(&p, I_EXIT(), (Span){.line = 3, .col = 1, .end_col = 2});
  MapSym *m = make_counter_map();
  MapSym *maps[] = {m};
  Compiled c = {.maps = maps, .nmaps = 1, .progs = &p, .nprogs = 1};
  Loaded l;
  Capture cap;
  capture_start(&cap);
  CHECK(load_all(&c, &l, false, &cap.d) == -1);
  fclose(cap.d.out);
  CHECK(strstr(cap.text, "stdin:2:5-16: ERROR: the kernel's verifier "
                         "rejected the program for probe "
                         "tracepoint:raw_syscalls:sys_enter: R2 !read_ok"));
  CHECK(strstr(cap.text, "    @ = count();\n    ^^^^^^^^^^^\n"));
  CHECK(strstr(cap.text, "1: (bf) r0 = r2"));
  /* Everything created before the failure is closed again. */
  CHECK(l.maps[0].fd == -1 && l.ringbuf_fd == -1 && l.prog_fds[0] == -1);
  if (failed || getenv("LOUPE_TEST_VERBOSE")) fputs(cap.text, stderr);
  free(cap.text);
}

static void test_attach_failure_closes_links(void) {
  Probe probe = {0};
  probe.aps = make_ap("tracepoint", 2, "raw_syscalls", "sys_enter");
  AttachPoint *bogus = make_ap("tracepoint", 2, "raw_syscalls", "sys_exit");
  /* A copy of the format with an id no tracepoint has. */
  TpFormat *fmt = malloc(sizeof *fmt);
  *fmt = *bogus->targets->format;
  fmt->id = 0x7ffffff0;
  bogus->targets->format = fmt;
  probe.aps->next = bogus;
  MapSym *m = make_counter_map();
  MapSym *maps[] = {m};
  BpfProg p = make_prog(&probe, "ltest_fail");
  emit_count(&p, 0);
  Compiled c = {.maps = maps, .nmaps = 1, .progs = &p, .nprogs = 1};
  Loaded l;
  Capture cap;
  capture_start(&cap);
  CHECK(load_all(&c, &l, false, &cap.d) == 0);
  LinkSet links = {0};
  CHECK(attach_all(&c, &l, &no_settings, &links, &cap.d) == -1);
  CHECK(links.n == 0 && links.fds == NULL);
  unload_all(&l);
  fclose(cap.d.out);
  CHECK(strstr(cap.text, "Unable to attach probe: "
                         "tracepoint:raw_syscalls:sys_exit"));
  free(cap.text);
  free(fmt);
  CHECK(kernel_progs_named_settled("ltest_") == 0);
}

int main(void) {
  if (geteuid() != 0) {
    printf("test_load: skipped (needs root)\n");
    return 0;
  }
  test_raw_tracepoint_test_run();
  test_tracepoint_counts_events();
  test_interval_fires();
  test_profile_and_software_fire();
  test_begin_ringbuf_output();
  test_verifier_rejection_is_located();
  test_attach_failure_closes_links();
  printf("test_load: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
