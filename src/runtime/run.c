/* run: the event loop between attach and detach.
 *
 * BEGIN programs run first (user space runs them with BPF_PROG_TEST_RUN),
 * then ring buffer records are handled until exit(), SIGINT, SIGTERM, the
 * end of the -c command or of the -p process, or the timeout; then END programs run, their
 * records are handled, and every map is printed. END's printf output
 * therefore comes before the maps. A script with no probe but BEGIN and
 * END skips the waiting (unless a -c command runs), as bpftrace does.
 *
 * After exit() the records still queued are dropped, as bpftrace stops
 * handling events once exit() is seen; records END produces are handled.
 *
 * Records that print go to RunOptions.out as text, or with -f json as
 * bpftrace's JSON records: printf, time, cat, join and "syscall" (the
 * output of system(), which loupe reads from the command and writes out
 * itself so that it stays in order with everything else).
 *
 * Records the ring had no room for, and updates a full map refused, are
 * counted by the programs (the loupe_counts map) and reported after each
 * poll and at exit. When
 * the output's reader goes away the run stops as after Ctrl-C.
 */
#include "runtime/run.h"
#include "runtime/skb_output.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "builtins/builtin.h"
#include "codegen/codegen.h"
#include "output/encoder.h"
#include "probes/iter.h"
#include "probes/provider.h"
#include "runtime/http.h"
#include "runtime/print.h"
#include "runtime/print_stack.h"

/* main.c defines the flag; this weak definition only stands in when run.o
 * is linked without main (unit tests). */
__attribute__((weak)) volatile sig_atomic_t loupe_stop_requested;
__attribute__((weak)) volatile sig_atomic_t loupe_output_closed;

/* bpftrace polls its buffers every 100 ms; a signal that arrives just
 * before the poll starts is noticed at the latest this much later. */
#define POLL_SLICE_MS 100
/* While records keep coming, the loop takes them this often instead of
 * being woken for each (take_records). */
#define BUSY_POLL_MS 10

/* A raw tracepoint test run takes a context of up to 12 u64 arguments. */
#define RAW_TP_MAX_ARGS 12

typedef struct RunState {
  const Compiled *c;
  Loaded *l;         /* its fds, and what changes as it runs */
  bool no_warnings;  /* --no-warnings */
  FILE *out;
  const char *out_name;   /* for messages: the -o file, or "stdout" */
  int write_error;   /* the errno of a failed write to out, once said */
  int format;        /* OutFormat */
  int exit_seen;     /* exit() was called: drop records until END runs;
                        1 + the exit code it gave */
  int handled;       /* records handled since the last flush */
  long budget;       /* records this poll or drain may still handle */
  int child_pid;     /* the -c command while it runs, else <= 0 */
  int target_pid;    /* -p: the traced process, else 0 */
  int target_fd;     /* its pidfd (readable once it exits), else -1 */
  RunMode mode;      /* --mode */
  uint64_t *seen;    /* each loupe_counts slot as last reported */
  long long *warned_at;   /* per slot: when its warning was last given (ms) */
  long long drain_until;  /* after Ctrl-C: queued records are handled
                             until this time (ms), then dropped */
  unsigned long long dropped;  /* records dropped once drain_until passed */
  bool has_self;     /* the script has self:signal:SIGUSR1 probes */
  bool ending;       /* END runs: its records are all handled, whatever
                        the stop was */
  SkbWriter *skb;    /* skboutput()'s packets to their files, or NULL */
  HttpServer *http;  /* --metrics: answered between batches, or NULL */
  bool maps_elsewhere;  /* RunOptions.maps_elsewhere */
  void (*every)(void *arg);   /* RunOptions.every, every_ms */
  void *every_arg;
  int every_ms;
  long long every_next;       /* when it is next due (ms) */
  int errors;        /* --mode test: errorf() records of the test */
  int tests_failed;  /* --mode test: test probes that failed */
} RunState;

/* Handles one ring buffer record: an EventHeader and its payload. Drops
 * records once *exit_seen is set. Not static so tests/unit/test_print.c
 * can feed it records; not part of run.h. */
int run_handle_record(const EventCtx *e, const void *data, size_t size);

/* -k: a helper failed where site says (as bpftrace reports it: a warning
 * on stderr with the place in the script, or a helper_error record). */
static void on_helper_error(const EventCtx *e, uint32_t index,
                            const uint8_t *payload, size_t size) {
  const Compiled *c = e->c;
  FILE *out = e->output->out;
  int64_t ret;
  if (index >= (uint32_t)c->nhelper_sites || size < sizeof ret) return;
  memcpy(&ret, payload, sizeof ret);
  const HelperSite *site = &c->helper_sites[index];
  const char *name = helper_name(site->helper);
  if (name && !strncmp(name, "bpf_", 4)) name += 4;
  bool missing = site->helper == BPF_FUNC_map_lookup_elem;
  const char *msg = missing ? "Can't lookup map element because it does "
                              "not exist."
                            : strerror((int)-ret);
  if (e->output->enc == &json_encoder) {
    fprintf(out, "{\"type\": \"helper_error\", \"msg\": ");
    json_put_string(msg, strlen(msg), out);
    fprintf(out, ", \"helper\": \"%s\", \"retcode\": %lld, "
            "\"filename\": ", name ? name : "?", (long long)ret);
    json_put_string(site->file, strlen(site->file), out);
    fprintf(out, ", \"line\": %d, \"col\": %d}\n", site->span.line,
            site->span.col);
    return;
  }
  if (e->no_warnings) return;
  fflush(out);
  if (missing)
    fprintf(stderr, "%s%s\n%s", site->prefix, msg, site->context);
  else
    fprintf(stderr, "%sFailed to %s: %s (%lld)\n%s", site->prefix,
            name ? name : "?", msg, (long long)ret, site->context);
}

int run_handle_record(const EventCtx *e, const void *data, size_t size) {
  EventHeader h;
  if (size < sizeof h || *e->exit_seen) return 0;
  memcpy(&h, data, sizeof h);
  if (h.kind == EV_HELPER_ERROR) {
    on_helper_error(e, h.index, (const uint8_t *)data + sizeof h,
                    size - sizeof h);
    return 0;
  }
  /* The builtin that sent the record knows what it means. */
  const Builtin *b = builtin_for_event(h.kind);
  if (!b) return 0;
  b->on_event(e, h.index, (const uint8_t *)data + sizeof h, size - sizeof h);
  return 0;
}

/* The output is a pipe whose reader has gone: stop, as after Ctrl-C. */
static void output_closed(void) {
  loupe_output_closed = 1;
  loupe_stop_requested = 1;
}

/* Whether out is a pipe whose reader has gone, so that a run that prints
 * rarely still ends as soon as its reader does (poll reports POLLERR on
 * such a pipe; never on a terminal or a file). */
static bool reader_gone(FILE *out) {
  struct pollfd p = {.fd = fileno(out), .events = 0};
  return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* A write to the output failed for another reason than a reader that
 * went away (a full file system, an I/O error): said once, precisely, and
 * the run stops as after Ctrl-C; its exit status is then 1. What is
 * printed after that (END's records, the maps) cannot reach the output
 * either. */
static void output_failed(RunState *st, int err) {
  if (st->write_error) return;
  st->write_error = err ? err : EIO;
  fprintf(stderr, "loupe: write to %s: %s\n", st->out_name,
          strerror(st->write_error));
  loupe_stop_requested = 1;
}

/* Whether the output took everything written to it so far; if not, the
 * run stops (output_closed or output_failed). stdio keeps only an error
 * flag, so the cause is asked again of a flush (the data a failed write
 * left in the buffer fails again), else taken from the failed call. */
static bool output_ok(RunState *st) {
  if (!ferror(st->out)) return true;
  int err = errno;
  clearerr(st->out);
  if (fflush(st->out) == EOF) err = errno;
  if (err == EPIPE || reader_gone(st->out))
    output_closed();
  else
    output_failed(st, err);
  return false;
}

/* Flushes the output, and stops the run if it failed. */
static void flush_output(RunState *st) {
  fflush(st->out);
  output_ok(st);
}

static long long now_ms(void);

static int on_record(void *ctx, void *data, size_t size) {
  RunState *st = ctx;
  EventHeader h;
  if (st->mode == MODE_TEST && size >= sizeof h && !st->exit_seen) {
    memcpy(&h, data, sizeof h);   /* a test's verdict counts its errors */
    if (h.kind == EV_ERRORF) st->errors++;
  }
  /* nobody reads what it prints, or it cannot be written: the probes'
   * records are left, END's are still handled for what they do besides
   * printing (system(), a signal) */
  if ((loupe_output_closed || st->write_error) && !st->ending) return -EPIPE;
  if (st->drain_until && now_ms() >= st->drain_until) {
    st->dropped++;
    return --st->budget > 0 ? 0 : -EAGAIN;
  }
  st->handled++;
  Output o = output_for(st->format, st->out);
  EventCtx e = {.c = st->c, .l = st->l, .output = &o,
                .no_warnings = st->no_warnings, .exit_seen = &st->exit_seen};
  run_handle_record(&e, data, size);
  if (!output_ok(st) && !st->ending) return -EPIPE;
  /* A negative return makes libbpf stop consuming and return it; libbpf
   * has moved past this record by then, so it is handled first. A stop
   * (Ctrl-C) ends the poll at once, however slow the records are to
   * handle (system() for each): the run ends promptly. */
  if (loupe_stop_requested && !st->drain_until && !st->ending)
    return -EAGAIN;
  return --st->budget > 0 ? 0 : -EAGAIN;
}

/* libbpf keeps consuming as long as records keep coming, so with a flood
 * (or loupe's own writes firing a syscall probe) one poll would never
 * return. Each poll or drain handles at most as many records as the ring
 * can hold; then the loop gets to check for signals, exit and timeout. */
static void set_budget(RunState *st) {
  uint32_t size = st->c->ringbuf_size ? st->c->ringbuf_size : 1u << 20;
  st->budget = size / sizeof(EventHeader);
}

/* Handles the records queued now (at most a ring's worth: a probe still
 * attached may keep sending). */
static void drain(RunState *st, struct ring_buffer *rb) {
  if (!rb) return;
  set_budget(st);
  ring_buffer__consume(rb);
}

/* A full map's warning comes again at most this often while its
 * refusals go on; what it did not say meanwhile is summed into the next
 * one, and the last is said when the run ends. */
#define FULL_WARN_EVERY_MS 10000

/* Reports what the programs counted since the last report: the records
 * the ring buffer refused, as bpftrace does ("Lost N events" in the
 * output, or a lost_events record with -f json), and the updates each
 * full map refused, as a warning (at once the first time, then at most
 * every FULL_WARN_EVERY_MS, and whatever is left when the run ends:
 * `final`). */
static void report_counts(RunState *st, bool final) {
  const Compiled *c = st->c;
  uint64_t now[count_slots(c)];
  uint32_t key = 0;
  if (st->l->counts_fd < 0 || !st->seen || !st->warned_at ||
      bpf_map_lookup_elem(st->l->counts_fd, &key, now) < 0)
    return;
  uint64_t n = now[COUNT_SLOT_LOST] - st->seen[COUNT_SLOT_LOST];
  if (n) {
    if (st->format == OUT_JSON)
      fprintf(st->out, "{\"type\": \"lost_events\", \"data\": "
              "{\"events\": %llu}}\n", (unsigned long long)n);
    else
      fprintf(st->out, "Lost %llu events\n", (unsigned long long)n);
    st->handled++;
  }
  st->seen[COUNT_SLOT_LOST] = now[COUNT_SLOT_LOST];
  long long ms = now_ms();
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    int slot = m->full_slot;
    if (!slot) continue;
    n = map_full_count(m, now[slot] - st->seen[slot]);
    if (!n) continue;
    if (!final && st->warned_at[slot] &&
        ms - st->warned_at[slot] < FULL_WARN_EVERY_MS)
      continue;   /* said at the next turn, with what comes meanwhile */
    st->seen[slot] = now[slot];
    st->warned_at[slot] = ms;
    if (st->no_warnings) continue;
    fflush(st->out);
    if (m->bpf_type == BPF_MAP_TYPE_STACK_TRACE)
      fprintf(stderr, "WARNING: %llu stack%s lost: the stack map had no "
              "room for %s (max_map_keys %u); %s empty\n",
              (unsigned long long)n, n == 1 ? "" : "s", n == 1 ? "it" : "them",
              m->max_entries, n == 1 ? "it prints" : "they print");
    else
      fprintf(stderr, "WARNING: Map full; can't update element: %s refused "
              "%llu update%s (max_entries %u)\n", m->name,
              (unsigned long long)n, n == 1 ? "" : "s", m->max_entries);
  }
}

/* How often each warning said only once came again (PrintfDef.once). */
static void report_warn_repeats(const Compiled *c, const Loaded *l) {
  for (int i = 0; l->warn_repeats && i < c->nprintfs; i++) {
    unsigned long long more = l->warn_repeats[i];
    if (more-- < 2) continue;
    const PrintfDef *p = &c->printfs[i];
    size_t len = strcspn(p->fmt, "\n");
    fprintf(stderr, "%s%.*s (%llu more time%s, not shown one by one; -k "
            "shows each)\n", p->prefix ? p->prefix : "", (int)len, p->fmt,
            more, more == 1 ? "" : "s");
  }
}

/* ---- signals ---------------------------------------------------------- */

static void on_stop_signal(int sig) { loupe_stop_requested = 1; }

typedef struct SavedSignals {
  struct sigaction old_int, old_term, old_hup, old_usr1;
} SavedSignals;

/* SIGUSR1 arrived: the self:signal:SIGUSR1 probes are due, or, in a
 * script without them, the maps are printed, as bpftrace 0.17 did. */
static volatile sig_atomic_t usr1_pending;

static void on_usr1(int sig) { usr1_pending = 1; }

/* Without SA_RESTART, so a signal interrupts the poll at once. A second
 * Ctrl-C while END runs or maps print only sets the flag again. SIGUSR1
 * never ends the run. */
static void catch_signals(SavedSignals *saved) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &saved->old_int);
  sigaction(SIGTERM, &sa, &saved->old_term);
  sigaction(SIGHUP, &sa, &saved->old_hup);
  sa.sa_handler = on_usr1;
  sigaction(SIGUSR1, &sa, &saved->old_usr1);
}

static void restore_signals(const SavedSignals *saved) {
  sigaction(SIGINT, &saved->old_int, NULL);
  sigaction(SIGTERM, &saved->old_term, NULL);
  sigaction(SIGHUP, &saved->old_hup, NULL);
  sigaction(SIGUSR1, &saved->old_usr1, NULL);
}

/* ---- BEGIN and END ---------------------------------------------------- */

/* The provider of ap if its programs come to run as `run` says, else
 * NULL. */
static const Provider *ap_runs(const AttachPoint *ap, ProbeRun run) {
  const Provider *prov = ap_provider(ap);
  return prov && prov->run == run ? prov : NULL;
}

/* The same for program p (BEGIN's, END's, ...). A program made for the
 * whole probe (ap NULL) comes to run so if any attach point's does. */
static const Provider *prog_runs(const BpfProg *p, ProbeRun run) {
  if (p->ap) return ap_runs(p->ap, run);
  if (!p->probe) return NULL;
  for (const AttachPoint *ap = p->probe->aps; ap; ap = ap->next)
    if (ap_runs(ap, run)) return ap_runs(ap, run);
  return NULL;
}

static bool ap_is_special(const AttachPoint *ap) {
  return ap_runs(ap, RUN_AT_BEGIN) || ap_runs(ap, RUN_AT_END);
}

/* Whether the script has only BEGIN and END probes: then no event can
 * come after BEGIN, and the run ends once BEGIN is done, as in bpftrace. */
static bool only_begin_end(const Compiled *c) {
  for (int i = 0; i < c->nprogs; i++) {
    const BpfProg *p = &c->progs[i];
    if (p->ap) {
      if (!ap_is_special(p->ap)) return false;
      continue;
    }
    for (const AttachPoint *ap = p->probe ? p->probe->aps : NULL; ap;
         ap = ap->next)
      if (!ap_is_special(ap)) return false;
  }
  return true;
}

static void run_prog_once(int fd, const char *provider) {
  uint64_t args[RAW_TP_MAX_ARGS] = {0};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args,
              .ctx_size_in = sizeof args);
  if (fd < 0) return;
  if (bpf_prog_test_run_opts(fd, &opts) != 0)
    fprintf(stderr, "loupe: could not run the %s probe: %s\n", provider,
            strerror(errno));
}

/* Runs every program of the given special probe, in script order, and
 * handles the records they produced. */
static void run_special(RunState *st, struct ring_buffer *rb,
                        ProbeRun run) {
  for (int i = 0; i < st->c->nprogs; i++) {
    const Provider *prov = prog_runs(&st->c->progs[i], run);
    if (prov) run_prog_once(st->l->prog_fds[i], prov->name);
  }
  drain(st, rb);
  flush_output(st);
}

/* ---- bench probes ------------------------------------------------------ */

/* Each bench probe runs until BENCH_NS have passed or BENCH_MAX_RUNS
 * runs, whichever comes first. The kernel cannot repeat a raw tracepoint
 * program itself, so each run is one BPF_PROG_TEST_RUN: the times include
 * that system call. */
#define BENCH_NS 200000000LL
#define BENCH_MAX_RUNS 1000000
#define BENCH_DRAIN_EVERY 256

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

typedef struct BenchResult {
  const char *name;
  long long ns_per_run;
  long runs;
} BenchResult;

/* NAME of the bench:NAME or test:NAME probe (run) program p is for. */
static const char *mode_probe_name(const BpfProg *p, ProbeRun run) {
  const AttachPoint *ap = p->ap ? p->ap : p->probe ? p->probe->aps : NULL;
  for (; ap; ap = ap->next)
    if (ap->targets && ap->prov && ap->prov->run == run)
      return ap->targets->event;
  return "?";
}

/* Runs one bench program again and again, handling what it sends as it
 * goes (so the ring buffer never fills). */
static BenchResult bench_one(RunState *st, struct ring_buffer *rb,
                             const BpfProg *p, int fd) {
  uint64_t args[RAW_TP_MAX_ARGS] = {0};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args,
              .ctx_size_in = sizeof args);
  BenchResult r = {mode_probe_name(p, RUN_AS_BENCH), 0, 0};
  long long start = now_ns(), spent = 0;
  while (r.runs < BENCH_MAX_RUNS && spent < BENCH_NS && !st->exit_seen &&
         !loupe_stop_requested) {
    if (bpf_prog_test_run_opts(fd, &opts) != 0) {
      fprintf(stderr, "loupe: could not run bench:%s: %s\n", r.name,
              strerror(errno));
      break;
    }
    r.runs++;
    if (r.runs % BENCH_DRAIN_EVERY == 0) {
      spent = now_ns() - start;
      drain(st, rb);
      start = now_ns() - spent;   /* not counting the draining */
    }
  }
  spent = now_ns() - start;
  drain(st, rb);
  r.ns_per_run = r.runs ? spent / r.runs : 0;
  return r;
}

/* Runs the bench probes in script order, then prints their table. */
static void run_benches(RunState *st, struct ring_buffer *rb) {
  BenchResult *results = calloc(st->c->nprogs + 1, sizeof *results);
  int n = 0;
  for (int i = 0; results && i < st->c->nprogs && !st->exit_seen; i++)
    if (prog_runs(&st->c->progs[i], RUN_AS_BENCH) && st->l->prog_fds[i] >= 0)
      results[n++] = bench_one(st, rb, &st->c->progs[i], st->l->prog_fds[i]);
  if (st->format == OUT_JSON) {   /* a record per bench, as bpftrace */
    for (int i = 0; i < n; i++) {
      fprintf(st->out, "{\"type\": \"benchmark_result\", \"data\": {");
      json_put_string(results[i].name, strlen(results[i].name), st->out);
      fprintf(st->out, ": {\"average\": %lld, \"iters\": %ld}}}\n",
              results[i].ns_per_run, results[i].runs);
    }
    flush_output(st);
    free(results);
    return;
  }
  fprintf(st->out, "%-41s%-15s%s\n", "Benchmark", "Time(ns)", "Iterations");
  fprintf(st->out, "%.66s\n", "----------------------------------------"
          "------------------------------------------");
  for (int i = 0; i < n; i++)
    fprintf(st->out, "%-41s%-15lld%ld\n", results[i].name,
            results[i].ns_per_run, results[i].runs);
  flush_output(st);
  free(results);
}

/* ---- test probes ------------------------------------------------------- */

/* After a test called exit(): the other probes, and the next test, run
 * again (the programs check the script's exit flag first). */
static void clear_exit_flag(const Compiled *c, const Loaded *l) {
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    if (m && l->maps[i].fd >= 0 && !strcmp(m->name, EXITED_MAP_NAME)) {
      uint32_t key = 0;
      uint64_t zero = 0;
      bpf_map_update_elem(l->maps[i].fd, &key, &zero, BPF_ANY);
    }
  }
}

/* Runs test program p once, with what it prints (on the output and on
 * stderr) held in a temporary file; says whether it passed: it returned
 * 0, reported no error (errorf(), a failed assert()) and did not call
 * exit() with a code other than 0. A failed test's output follows its
 * FAIL line; a passing test's is dropped. */
static bool test_one(RunState *st, struct ring_buffer *rb, const BpfProg *p,
                     int fd) {
  const char *name = mode_probe_name(p, RUN_AS_TEST);
  FILE *held = tmpfile(), *out = st->out;
  int saved_err = -1;
  fflush(out);
  fflush(stderr);
  if (held) {
    saved_err = dup(STDERR_FILENO);
    if (saved_err >= 0) dup2(fileno(held), STDERR_FILENO);
    st->out = held;
  }
  uint64_t args[RAW_TP_MAX_ARGS] = {0};
  LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = args,
              .ctx_size_in = sizeof args);
  st->errors = 0;
  bool ran = bpf_prog_test_run_opts(fd, &opts) == 0;
  int err = errno;
  drain(st, rb);
  int exit_code = st->exit_seen ? st->exit_seen - 1 : 0;
  bool exited = st->exit_seen != 0;
  st->exit_seen = 0;
  if (exited) clear_exit_flag(st->c, st->l);
  if (held) {
    fflush(held);
    if (saved_err >= 0) {
      dup2(saved_err, STDERR_FILENO);
      close(saved_err);
    }
    st->out = out;
  }
  bool passed = ran && opts.retval == 0 && st->errors == 0 && exit_code == 0;
  if (st->format == OUT_JSON) {
    fprintf(out, "{\"type\": \"test_result\", \"data\": {");
    json_put_string(name, strlen(name), out);
    fprintf(out, ": {\"passed\": %s, \"retval\": %lld, \"errors\": %d",
            passed ? "true" : "false", ran ? (long long)(int32_t)opts.retval : 0LL,
            st->errors);
    if (exited) fprintf(out, ", \"exit\": %d", exit_code);
    fprintf(out, "}}}\n");
  } else if (passed) {
    fprintf(out, "PASS test:%s\n", name);
  } else {
    /* why, each reason after ": " or ", " */
    char why[256] = ", failed";
    int n = 0;
    if (!ran)
      n += snprintf(why + n, sizeof why - n, ", could not run it: %s",
                    strerror(err));
    else if (opts.retval != 0)
      n += snprintf(why + n, sizeof why - n, ", returned %d",
                    (int32_t)opts.retval);
    if (st->errors)
      n += snprintf(why + n, sizeof why - n, ", %d error%s", st->errors,
                    st->errors == 1 ? "" : "s");
    if (exit_code) snprintf(why + n, sizeof why - n, ", exit(%d)", exit_code);
    fprintf(out, "FAIL test:%s: %s\n", name, why + 2);
  }
  if (held && !passed) {
    rewind(held);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, held)) > 0) fwrite(buf, 1, n, out);
  }
  if (held) fclose(held);
  flush_output(st);
  return passed;
}

/* Runs the test probes once each, in script order, and says how many
 * passed; a failure makes the exit status 1. None runs when BEGIN called
 * exit(). */
static void run_tests(RunState *st, struct ring_buffer *rb) {
  int passed = 0, failed = 0;
  if (st->exit_seen) return;   /* BEGIN called exit() */
  for (int i = 0; i < st->c->nprogs && !loupe_stop_requested; i++) {
    const BpfProg *p = &st->c->progs[i];
    int fd = st->l->prog_fds[i];
    if (!prog_runs(p, RUN_AS_TEST) || fd < 0) continue;
    if (test_one(st, rb, p, fd))
      passed++;
    else
      failed++;
  }
  st->tests_failed = failed;
  if (st->format != OUT_JSON)
    fprintf(st->out, "%d passed, %d failed\n", passed, failed);
  flush_output(st);
}

/* ---- iterators ---------------------------------------------------------- */

/* Reads iterator program p's records to the end (or to exit(), Ctrl-C or
 * a closed output): each is its size (4 bytes) and then the record, as
 * the program's output subprograms wrote them; a read may end inside
 * one, so what is left over waits for the next. */
#define ITER_READ 4096

static void run_iter(RunState *st, struct ring_buffer *rb, const BpfProg *p,
                     int prog_fd) {
  int fd = iter_open(prog_fd);
  if (fd < 0) {
    fprintf(stderr, "loupe: cannot read the iterator of %s: %s\n",
            prog_probe_name(p), strerror(errno));
    loupe_stop_requested = 1;
    return;
  }
  size_t cap = 1 << 16, have = 0;
  uint8_t *buf = malloc(cap);
  while (buf && !st->exit_seen && !loupe_stop_requested &&
         !loupe_output_closed && !st->write_error) {
    if (have == cap) {   /* one record larger than the buffer */
      uint8_t *grown = realloc(buf, cap * 2);
      if (!grown) break;
      buf = grown;
      cap *= 2;
    }
    /* Small reads: the kernel stops running the program once a read's
     * worth is in its 32 KiB buffer, so an object's records always find
     * room. One that did not would be run again in full, its map
     * updates counted twice. */
    size_t want = cap - have < ITER_READ ? cap - have : ITER_READ;
    ssize_t got = read(fd, buf + have, want);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      fprintf(stderr, "loupe: reading the iterator of %s failed: %s%s\n",
              prog_probe_name(p), strerror(errno),
              errno == E2BIG ? " (what the probe sends for one object is "
                               "more than the kernel's 32 KiB buffer)" : "");
      break;
    }
    if (got == 0) break;
    have += (size_t)got;
    size_t at = 0;
    while (have - at >= 4) {
      uint32_t size;
      memcpy(&size, buf + at, 4);
      if (have - at - 4 < size) break;
      on_record(st, buf + at + 4, size);
      at += 4 + size;
    }
    memmove(buf, buf + at, have - at);
    have -= at;
    flush_output(st);
    drain(st, rb);   /* BEGIN's, or a helper's in the kernel */
  }
  free(buf);
  close(fd);
}

/* Runs each iterator of the script in turn (there is one: iter probes
 * take no others but BEGIN and END). */
static void run_iters(RunState *st, struct ring_buffer *rb) {
  for (int i = 0; i < st->c->nprogs && !st->exit_seen; i++)
    if (prog_runs(&st->c->progs[i], RUN_AS_ITERATOR))
      run_iter(st, rb, &st->c->progs[i], st->l->prog_fds[i]);
}

static bool has_iter(const Compiled *c) {
  for (int i = 0; i < c->nprogs; i++)
    if (prog_runs(&c->progs[i], RUN_AS_ITERATOR)) return true;
  return false;
}

/* ---- the loop --------------------------------------------------------- */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Whether the -p process has exited: its pidfd turns readable then (even
 * while it waits, a zombie, for its parent); without pidfds (before Linux
 * 5.3), whether the pid is gone. */
static bool target_exited(const RunState *st) {
  if (st->target_fd >= 0) {
    struct pollfd pfd = {.fd = st->target_fd, .events = POLLIN};
    return poll(&pfd, 1, 0) > 0;
  }
  return kill(st->target_pid, 0) < 0 && errno == ESRCH;
}

static bool should_stop(const RunState *st, long long deadline) {
  if (st->exit_seen || loupe_stop_requested) return true;
  if (st->child_pid > 0 && waitpid(st->child_pid, NULL, WNOHANG) != 0)
    return true;   /* the -c command ended (and is reaped) */
  if (st->target_pid > 0 && target_exited(st)) return true;
  return deadline && now_ms() >= deadline;
}

/* Whether the programs wake the loop for the records they send (the
 * flags in loupe_wake). Records sent while it changes are taken by the
 * consume that follows, or at the latest a slice later. */
static void set_wakeups(const RunState *st, bool on) {
  uint32_t key = 0;
  uint64_t flags = on ? 0 : BPF_RB_NO_WAKEUP;
  bpf_map_update_elem(st->l->wake_fd, &key, &flags, BPF_ANY);
}

/* ring_buffer__poll for a run that also serves --metrics: waits for
 * records or a scrape, a slice at most, answers the scrape and takes the
 * records. */
static int wait_with_http(RunState *st, struct ring_buffer *rb, int slice) {
  struct pollfd p[2] = {{.fd = ring_buffer__epoll_fd(rb), .events = POLLIN},
                        {.fd = http_fd(st->http), .events = POLLIN}};
  if (poll(p, 2, slice) < 0) return -errno;
  if (p[1].revents) http_run(st->http);
  return ring_buffer__consume(rb);
}

/* Takes the records in the ring, waiting for them a slice at most; <= 0
 * when there were none (or an error). Waking the reader costs the program
 * that sends a record most of its time: 20 of a printf's 22 µs here, the
 * wakeup and the reader's turn on the CPU, paid by the traced task. So
 * once records come, the loop polls every BUSY_POLL_MS and the programs
 * send without waking it, until a poll finds none: then it asks for
 * wakeups again and waits. *polling says which of the two it does. */
static int take_records(RunState *st, struct ring_buffer *rb, int slice,
                        bool *polling, bool *more) {
  set_budget(st);
  if (!*polling) {
    int n = st->http ? wait_with_http(st, rb, slice) : ring_buffer__poll(rb, slice);
    if (n > 0 || n == -EAGAIN) {
      set_wakeups(st, false);
      *polling = true;
    }
    *more = n == -EAGAIN;
    return n;
  }
  /* a flood fills the ring faster than a poll a slice: no sleep while
   * the last consume stopped at its budget */
  if (!*more) {
    int ms = slice < BUSY_POLL_MS ? slice : BUSY_POLL_MS;
    nanosleep(&(struct timespec){0, ms * 1000000L}, NULL);
  }
  int n = ring_buffer__consume(rb);
  *more = n == -EAGAIN;
  if (n == 0) {
    set_wakeups(st, true);
    *polling = false;
    set_budget(st);
    n = ring_buffer__consume(rb);   /* sent before the flag changed */
    *more = n == -EAGAIN;
  }
  return n;
}

/* Waits for records and handles them, flushing after each batch so printf
 * lines appear as they happen even when the output is a pipe or a file. */
static void event_loop(RunState *st, struct ring_buffer *rb, int timeout_ms) {
  long long deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
  bool polling = false, more = false;
  while (!should_stop(st, deadline)) {
    int slice = POLL_SLICE_MS;
    if (deadline && deadline - now_ms() < slice)
      slice = (int)(deadline - now_ms());
    if (slice < 0) slice = 0;
    if (rb) {
      int err = take_records(st, rb, slice, &polling, &more);
      if (err < 0 && err != -EINTR && err != -EAGAIN &&
          err != -EPIPE) {
        fprintf(stderr, "loupe: reading events failed: %s\n", strerror(-err));
        break;
      }
    } else if (st->http) {
      struct pollfd p = {.fd = http_fd(st->http), .events = POLLIN};
      poll(&p, 1, slice);
    } else {
      usleep(slice * 1000);
    }
    if (st->http) http_run(st->http);
    if (st->every && st->every_ms > 0) {
      long long now = now_ms();
      if (!st->every_next) st->every_next = now + st->every_ms;
      if (now >= st->every_next) {
        st->every(st->every_arg);
        st->every_next = now + st->every_ms;
      }
    }
    report_counts(st, false);
    skb_writer_poll(st->skb);
    if (usr1_pending) {
      usr1_pending = 0;
      if (st->has_self) {
        run_special(st, rb, RUN_ON_SIGNAL);
      } else {
        print_all_maps_now(st->c, st->l, st->format, st->out);
        st->handled++;
      }
    }
    if (st->handled) {
      flush_output(st);
      st->handled = 0;
    }
    if (reader_gone(st->out)) output_closed();
  }
}

struct Run {
  RunState st;
  SavedSignals saved;
  struct ring_buffer *rb;
  int timeout_ms;
  int child_go_fd;
  FILE *out;           /* where output goes */
  char *begin_text;    /* what BEGIN printed, held until run_finish */
  size_t begin_len;
};

Run *run_begin(const Compiled *c, Loaded *l, const RunOptions *opts) {
  Run *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->st = (RunState){.c = c, .l = l, .no_warnings = opts->no_warnings,
                     .out = opts->out ? opts->out : stdout,
                     .out_name = opts->out_name ? opts->out_name : "stdout",
                     .format = opts->format, .child_pid = opts->child_pid,
                     .target_pid = opts->target_pid, .target_fd = -1,
                     .mode = opts->mode, .http = opts->http,
                     .maps_elsewhere = opts->maps_elsewhere,
                     .every = opts->every, .every_arg = opts->every_arg,
                     .every_ms = opts->every_ms};
  r->st.seen = calloc((size_t)count_slots(c), sizeof(uint64_t));
  r->st.warned_at = calloc((size_t)count_slots(c), sizeof(long long));
  if (c->nprintfs > 0) {
    l->warn_repeats = calloc((size_t)c->nprintfs, sizeof *l->warn_repeats);
    printf_plans_make(c, l);
  }
  stack_maps_use(c, l);
#ifdef SYS_pidfd_open
  if (opts->target_pid > 0)
    r->st.target_fd = (int)syscall(SYS_pidfd_open, opts->target_pid, 0);
#endif
  r->timeout_ms = opts->timeout_ms;
  r->child_go_fd = opts->child_go_fd;
  r->out = r->st.out;
  for (int i = 0; i < c->nprogs; i++)
    if (prog_runs(&c->progs[i], RUN_ON_SIGNAL)) r->st.has_self = true;
  catch_signals(&r->saved);
  if (c->nskb_outputs > 0 &&
      !(r->st.skb = skb_writer_open(c, l->skb_output_fd))) {
    run_abandon(r);
    return NULL;
  }
  if (l->ringbuf_fd >= 0) {
    r->rb = ring_buffer__new(l->ringbuf_fd, on_record, &r->st, NULL);
    if (!r->rb)
      fprintf(stderr, "loupe: cannot read the event ring buffer: %s\n",
              strerror(errno));
  }
  /* BEGIN's output is held back until the probes are attached and said
   * so (bpftrace prints it after its "attached" notice too), but its
   * records are read now, to know whether it called exit(). */
  FILE *held = open_memstream(&r->begin_text, &r->begin_len);
  if (held) r->st.out = held;
  run_special(&r->st, r->rb, RUN_AT_BEGIN);
  if (held) {
    fclose(held);
    r->st.out = r->out;
  }
  return r;
}

bool run_stopping(const Run *r) {
  return r->st.exit_seen || loupe_stop_requested;
}

void run_wait(Run *r) {
  RunState *st = &r->st;
  if (r->begin_len) fwrite(r->begin_text, 1, r->begin_len, st->out);
  flush_output(st);
  if (r->child_go_fd >= 0) {
    /* everything is attached and BEGIN has run: the command may start */
    fflush(st->out);
    /* A command that died before it was released (killed while loupe
     * attached) refuses the byte; it is still waited for, so the loop
     * reaps it and the run ends at once instead of lasting forever. */
    if (write(r->child_go_fd, "g", 1) != 1 && errno != EPIPE)
      fprintf(stderr, "loupe: cannot start the command: %s\n", strerror(errno));
    close(r->child_go_fd);
    r->child_go_fd = -1;
  }
  /* With only BEGIN and END there is nothing to wait for, unless a -c
   * command runs: then the script lasts as long as the command. */
  if (st->mode == MODE_BENCH)
    run_benches(st, r->rb);
  else if (st->mode == MODE_TEST)
    run_tests(st, r->rb);
  else if (has_iter(st->c))
    run_iters(st, r->rb);
  else if (st->child_pid > 0 || st->target_pid > 0 || !only_begin_end(st->c))
    event_loop(st, r->rb, r->timeout_ms);
}

int run_finish(Run *r) {
  RunState *st = &r->st;
  /* Records queued before the stop are still handled (or dropped if the
   * stop was exit()); END's own records always are. After Ctrl-C, for a
   * second at most: what is still queued then is dropped, and said. */
  if (loupe_stop_requested) st->drain_until = now_ms() + 1000;
  drain(st, r->rb);
  if (st->dropped)
    fprintf(stderr, "loupe: %llu event%s queued when loupe was stopped "
            "were not handled (handling them took more than a second)\n",
            st->dropped, st->dropped == 1 ? "" : "s");
  st->drain_until = 0;
  report_counts(st, true);
  int status = st->exit_seen ? st->exit_seen - 1 : 0;
  st->exit_seen = 0;
  /* END runs whole however the run stopped: each of its printf, print()
   * and clear() records is handled in order (a stop ends the draining of
   * the probes' records, never END's). */
  st->ending = true;
  run_special(st, r->rb, RUN_AT_END);
  report_counts(st, true);
  fflush(st->out);
  report_warn_repeats(st->c, st->l);

  if (!st->c->no_exit_print && !st->maps_elsewhere)
    print_all_maps_as(st->c, st->l, st->format, st->out);
  flush_output(st);
  if (st->write_error || st->tests_failed) status = 1;
  run_abandon(r);
  return status;
}

void run_abandon(Run *r) {
  skb_writer_close(r->st.skb);   /* the packets still to write */
  if (r->child_go_fd >= 0) close(r->child_go_fd);
  r->child_go_fd = -1;
  if (r->st.target_fd >= 0) close(r->st.target_fd);
  ring_buffer__free(r->rb);
  restore_signals(&r->saved);
  free(r->begin_text);
  free(r->st.seen);
  free(r->st.warned_at);
  printf_plans_free(r->st.c, r->st.l);
  free(r);
}

int run_script(const Compiled *c, Loaded *l, const RunOptions *opts) {
  Run *r = run_begin(c, l, opts);
  if (!r) return 1;
  run_wait(r);
  return run_finish(r);
}
