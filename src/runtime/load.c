/* load: maps and programs into the kernel; attach: programs onto their
 * targets; unload: everything closed again.
 *
 * Programs come from codegen with map ids, not fds, in their LD_IMM64 map
 * loads; the fds are patched into a copy at load time so the program as
 * generated (and its disassembly) stays independent of the kernel. */
#include "runtime/load.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "codegen/codegen.h"
#include "codegen/insn.h"
#include "probes/kernel_btf.h"
#include "probes/syscalls.h"
#include "runtime/prog_btf.h"

#define DEFAULT_RINGBUF_SIZE (1u << 20)
#define VERIFIER_LOG_START (4u << 20)
#define VERIFIER_LOG_MAX (64u << 20)
#define VERIFIER_TAIL_LINES 10

static const Span no_span;

/* Newer kernels copy comm with strscpy_pad; older ones (6.1) with strscpy,
 * which leaves the bytes after the name's NUL word as they were. A program
 * run once through BPF_PROG_TEST_RUN fills a 16-byte buffer with 0xff,
 * lets the helper write the name and returns bytes 8..11: with a name
 * shorter than 8 bytes strscpy never writes the second word, so zeros
 * there mean padding. A longer name of loupe's own is swapped for "loupe"
 * while the program runs. A kernel that refuses the run gives false, and
 * codegen zeroes the buffer itself. */
static bool comm_padding_probe(void) {
  const struct bpf_insn insns[] = {
      I_ST(BPF_DW, BPF_REG_10, -16, -1),
      I_ST(BPF_DW, BPF_REG_10, -8, -1),
      I_MOV64_REG(BPF_REG_1, BPF_REG_10),
      I_ALU64_IMM(BPF_ADD, BPF_REG_1, -16),
      I_MOV64_IMM(BPF_REG_2, 16),
      I_CALL(BPF_FUNC_get_current_comm),
      I_LDX(BPF_W, BPF_REG_0, BPF_REG_10, -8),
      I_EXIT(),
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "loupe_comm", "GPL",
                         insns, sizeof(insns) / sizeof(insns[0]), NULL);
  if (fd < 0) return false;
  char name[17] = "";
  bool renamed = prctl(PR_GET_NAME, name) == 0 && strlen(name) >= 8 &&
                 prctl(PR_SET_NAME, "loupe") == 0;
  LIBBPF_OPTS(bpf_test_run_opts, run);
  bool pads = bpf_prog_test_run_opts(fd, &run) == 0 && run.retval == 0;
  if (renamed) prctl(PR_SET_NAME, name);
  close(fd);
  return pads;
}

bool kernel_pads_comm(void) {
  static int known = -1;
  if (known < 0) known = comm_padding_probe();
  return known;
}

/* The kernel accepts [A-Za-z0-9_.] in object names, at most 15 bytes;
 * "@" becomes "AT_" so "@bytes" shows as "AT_bytes" in bpftool. */
static void object_name(const char *from, char *to, size_t len) {
  size_t n = 0;
  for (const char *s = from; *s && n + 1 < len; s++) {
    if (*s == '@') {
      for (const char *at = "AT_"; *at && n + 1 < len; at++) to[n++] = *at;
    } else {
      to[n++] = (isalnum((unsigned char)*s) || *s == '_') ? *s : '_';
    }
  }
  to[n] = '\0';
}

/* The ring buffer's size must be a power of two and a multiple of the
 * page size. */
static uint32_t ringbuf_bytes(uint32_t wanted) {
  uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
  uint32_t size = page;
  if (!wanted) wanted = DEFAULT_RINGBUF_SIZE;
  while (size < wanted && size < (1u << 30)) size <<= 1;
  return size;
}

/* Reports a failed bpf() call whose cause is not the script's fault. */
static void report_bpf_failure(Diag *d, Span at, int err, const char *what,
                               const char *name) {
  if ((err == EPERM || err == EACCES) && geteuid() != 0)
    diag_error(d, no_span,
               "loupe needs root (CAP_BPF and CAP_PERFMON) to load programs");
  else if (err == EPERM || err == EACCES)   /* root, but not allowed */
    diag_error(d, no_span, "the kernel refused BPF to loupe (%s): loading "
               "programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) "
               "in the initial user namespace, which this process lacks",
               strerror(err));
  else if (err == ENOSYS)
    diag_error(d, no_span, "this kernel does not support BPF (bpf() is "
                           "missing; it needs CONFIG_BPF_SYSCALL)");
  else
    diag_error(d, at, "could not create %s %s: %s", what, name, strerror(err));
}

/* ---- maps ----------------------------------------------------------- */

static bool is_map_load(const struct bpf_insn *in) {
  return in->code == (BPF_LD | BPF_DW | BPF_IMM) &&
         (in->src_reg == BPF_PSEUDO_MAP_FD ||
          in->src_reg == BPF_PSEUDO_MAP_VALUE);
}

/* Whether a program sends records to user space. A script that only
 * updates maps needs no ring buffer, whose mapping (its data twice, all
 * of it resident) would be most of loupe's memory. */
static bool sends_records(const Compiled *c) {
  for (int i = 0; i < c->nprogs; i++) {
    const BpfProg *p = &c->progs[i];
    for (int k = 0; k < p->ninsns; k++)
      if (is_map_load(&p->insns[k]) && p->insns[k].imm == MAP_ID_RINGBUF)
        return true;
  }
  return false;
}

static int create_internal_maps(const Compiled *c, Loaded *l, Diag *d) {
  if (sends_records(c)) {
    l->ringbuf_fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "loupe_events", 0,
                                   0, ringbuf_bytes(c->ringbuf_size), NULL);
    if (l->ringbuf_fd < 0) {
      report_bpf_failure(d, no_span, errno, "the ring buffer",
                         "loupe_events");
      return -1;
    }
    l->wake_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "loupe_wake",
                                sizeof(uint32_t), sizeof(uint64_t), 1, NULL);
    if (l->wake_fd < 0) {
      report_bpf_failure(d, no_span, errno, "the wakeup flag", "loupe_wake");
      return -1;
    }
  }
  if (c->nskb_outputs > 0) {   /* skboutput(): a slot per CPU */
    int ncpus = libbpf_num_possible_cpus();
    l->skb_output_fd = bpf_map_create(BPF_MAP_TYPE_PERF_EVENT_ARRAY,
                                      "loupe_skb", sizeof(uint32_t),
                                      sizeof(uint32_t),
                                      ncpus > 0 ? ncpus : 1, NULL);
    if (l->skb_output_fd < 0) {
      report_bpf_failure(d, no_span, errno, "the packet output",
                         "loupe_skb");
      return -1;
    }
  }
  if (c->big_scratch_size) {
    int ncpus = libbpf_num_possible_cpus();
    l->big_scratch_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "loupe_scratch2",
                                       sizeof(uint32_t), c->big_scratch_size,
                                       ncpus > 0 ? ncpus : 1, NULL);
    if (l->big_scratch_fd < 0) {
      report_bpf_failure(d, no_span, errno, "the scratch map",
                         "loupe_scratch2");
      return -1;
    }
  }
  /* Counters for all CPUs in one value, which programs address directly
   * and add to atomically, only on a failure path: no per-CPU copies for
   * user space to size, which a container's
   * /sys/devices/system/cpu/possible may misstate. */
  int ncounts = count_slots(c);
  l->counts_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "loupe_counts",
                                sizeof(uint32_t),
                                (uint32_t)(ncounts * sizeof(uint64_t)), 1,
                                NULL);
  uint64_t counts[ncounts];
  memset(counts, 0, sizeof counts);
  counts[COUNT_SLOT_ONE] = 1;
  uint32_t zero = 0;
  if (l->counts_fd < 0 ||
      bpf_map_update_elem(l->counts_fd, &zero, counts, BPF_ANY) < 0) {
    report_bpf_failure(d, no_span, errno, "the failure counters",
                       "loupe_counts");
    return -1;
  }
  if (c->scratch_size == 0) return 0;
  l->scratch_fd = bpf_map_create(BPF_MAP_TYPE_PERCPU_ARRAY, "loupe_scratch",
                                 sizeof(uint32_t), c->scratch_size, 1, NULL);
  if (l->scratch_fd < 0) {
    report_bpf_failure(d, no_span, errno, "the scratch map", "loupe_scratch");
    return -1;
  }
  return 0;
}

static int create_script_map(const MapSym *m, MapState *st, Diag *d) {
  char name[BPF_OBJ_NAME_LEN];
  object_name(m->name, name, sizeof name);
  st->fd = bpf_map_create(m->bpf_type, name, m->key_size, m->value_size,
                          m->max_entries, NULL);
  if (st->fd < 0) {
    report_bpf_failure(d, m->first_use, errno, "map", m->name);
    return -1;
  }
  for (uint32_t i = 0; m->init_values && i < m->max_entries; i++) {
    const char *value = m->init_values + (size_t)i * (size_t)m->value_size;
    int nonzero = 0;
    for (int b = 0; b < m->value_size && !nonzero; b++) nonzero = value[b];
    if (!nonzero) continue;   /* arrays start zeroed */
    if (bpf_map_update_elem(st->fd, &i, value, BPF_ANY) < 0) {
      report_bpf_failure(d, m->first_use, errno, "map", m->name);
      return -1;
    }
  }
  if (m->internal && strcmp(m->name, ELAPSED_MAP_NAME) == 0) {
    /* `elapsed` counts from here, on the clock bpf_ktime_get_ns reads */
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    uint64_t ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    uint32_t zero = 0;
    if (bpf_map_update_elem(st->fd, &zero, &ns, BPF_ANY) < 0) {
      report_bpf_failure(d, m->first_use, errno, "map", m->name);
      return -1;
    }
  }
  return 0;
}

/* ---- programs ------------------------------------------------------- */

static int map_fd_for_id(const Loaded *l, int id) {
  if (id == MAP_ID_RINGBUF) return l->ringbuf_fd;
  if (id == MAP_ID_SCRATCH) return l->scratch_fd;
  if (id == MAP_ID_BIG_SCRATCH) return l->big_scratch_fd;
  if (id == MAP_ID_COUNTS) return l->counts_fd;
  if (id == MAP_ID_WAKE) return l->wake_fd;
  if (id == MAP_ID_SKB_OUTPUT) return l->skb_output_fd;
  if (id >= 0 && id < l->nmaps) return l->maps[id].fd;
  return -1;
}

/* A copy of p's instructions with map ids replaced by fds; NULL (after
 * reporting) if an id names no map. */
static struct bpf_insn *patched_insns(const Loaded *l, const BpfProg *p,
                                      Diag *d) {
  struct bpf_insn *insns = malloc(p->ninsns * sizeof *insns);
  memcpy(insns, p->insns, p->ninsns * sizeof *insns);
  for (int i = 0; i < p->ninsns; i++) {
    if (!is_map_load(&insns[i])) continue;
    int fd = map_fd_for_id(l, insns[i].imm);
    if (fd < 0) {
      diag_error(d, no_span, "internal error: program %s loads map id %d, "
                 "which was not created", p->name, insns[i].imm);
      free(insns);
      return NULL;
    }
    insns[i].imm = fd;
    i++;  /* the second half of the 16-byte load */
  }
  return insns;
}

/* -v: what the verifier reported for p: the instructions it processed,
 * the states it kept, its time and the stack depth. */
static void print_verifier_stats(const BpfProg *p, const char *log) {
  fprintf(stderr, "verifier: %s:\n", prog_probe_name(p));
  for (const char *s = log; *s;) {
    size_t len = strcspn(s, "\n");
    if (len) fprintf(stderr, "  %.*s\n", (int)len, s);
    s += len + (s[len] == '\n');
  }
}

static bool is_stats_line(const char *line) {
  return !strncmp(line, "processed ", 10) ||
         !strncmp(line, "verification time", 17) ||
         !strncmp(line, "stack depth", 11) || !*line;
}

/* Splits the log into lines in place; returns how many. */
static int split_lines(char *log, char ***lines_out) {
  int n = 0, cap = 64;
  char **lines = malloc(cap * sizeof *lines);
  for (char *s = log; *s;) {
    char *nl = strchr(s, '\n');
    if (nl) *nl = '\0';
    if (n == cap) lines = realloc(lines, (cap *= 2) * sizeof *lines);
    lines[n++] = s;
    if (!nl) break;
    s = nl + 1;
  }
  *lines_out = lines;
  return n;
}

/* Instruction lines read "12: (85) call ..."; returns 12, or -1. */
static int insn_index_of_line(const char *line) {
  if (!isdigit((unsigned char)*line)) return -1;
  char *end;
  long idx = strtol(line, &end, 10);
  return !strncmp(end, ": (", 3) ? (int)idx : -1;
}

/* Lines that describe state rather than say what went wrong. */
static bool is_state_line(const char *line) {
  return !strncmp(line, "cur state:", 10) || !strncmp(line, "old state:", 10) ||
         insn_index_of_line(line) >= 0 || line[0] == ';';
}

/* The verifier's most common complaints, in words a script writer can act
 * on. NULL when there is nothing to add to the verifier's own line. */
static const char *explain_reason(const char *reason) {
  static const struct { const char *says; const char *means; } known[] = {
      {"infinite loop detected",
       "a loop in this probe never ends: its condition cannot change"},
      {"BPF program is too large",
       "the verifier could not prove this probe ends: a loop runs too long "
       "(or has no bound it can see); lower the bound or use unroll"},
      {"jumps is too complex",
       "the verifier could not prove this probe ends: a loop runs too long "
       "(or has no bound it can see); lower the bound or use unroll"},
      {"back-edge", "this kernel does not accept loops; use unroll"},
      {"unreachable insn", "the probe has code that can never run"},
      {"combined stack size", "the probe uses too much stack"},
      {"invalid mem access", "a read through a pointer the verifier does "
       "not trust"},
      /* override(): the helper exists with CONFIG_BPF_KPROBE_OVERRIDE */
      {"func bpf_override_return", "this kernel cannot make a function "
       "return early (override() needs CONFIG_BPF_KPROBE_OVERRIDE, which "
       "it was built without)"},
      {"helper bpf_override_return", "this kernel cannot make a function "
       "return early (override() needs CONFIG_BPF_KPROBE_OVERRIDE, which "
       "it was built without)"},
      /* kfuncs (comm(pid)): each kind of program has its own list */
      {"calling kernel function", "this kernel does not let this kind of "
       "probe call kernel functions (kfuncs), which comm(pid) needs; a "
       "tracepoint, rawtracepoint, profile, interval or iter probe may"},
      /* the kernel withholds it when locked down (lockdown=integrity) */
      {"cannot use helper bpf_probe_write_user", "this kernel does not "
       "let BPF programs write user memory (write_user()): it is locked "
       "down, or built without it"},
  };
  for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
    if (strstr(reason, known[i].says)) return known[i].means;
  return NULL;
}

/* Whether the verifier's log says more than its statistics. */
static bool log_has_reason(const char *log) {
  char *copy = strdup(log), **lines;
  if (!copy) abort();
  int n = split_lines(copy, &lines);
  bool found = false;
  for (int i = 0; i < n && !found; i++)
    found = *lines[i] && !is_stats_line(lines[i]) && !is_state_line(lines[i]);
  free(lines);
  free(copy);
  return found;
}

/* Explains a verifier rejection: where in the script, why, and the
 * verifier's own last words. */
static void report_rejection(const BpfProg *p, char *log, Diag *d) {
  char **lines;
  int n = split_lines(log, &lines);
  int last_insn = -1;
  const char *reason = NULL;
  /* The subprograms after nmain are shared by many call sites: a problem
   * found in one is placed at the last probe instruction that ran. */
  int last_main = -1;
  for (int i = 0; i < n; i++) {
    int idx = insn_index_of_line(lines[i]);
    if (idx >= 0) last_insn = idx;
    if (idx >= 0 && (p->nmain == 0 || idx < p->nmain)) last_main = idx;
    if (!is_stats_line(lines[i]) && !is_state_line(lines[i]))
      reason = lines[i];
  }
  /* "infinite loop detected at insn 26": the loop itself is the place */
  const char *at_insn = reason ? strstr(reason, "at insn ") : NULL;
  if (at_insn) last_insn = atoi(at_insn + 8);
  if (p->nmain > 0 && last_insn >= p->nmain && last_main >= 0)
    last_insn = last_main;
  const char *means = reason ? explain_reason(reason) : NULL;
  Span at = no_span;
  if (last_insn >= 0 && last_insn < p->ninsns && p->insn_span)
    at = p->insn_span[last_insn];
  if (at.line == 0 && p->ap) at = p->ap->span;
  if (at.line == 0 && p->probe) at = p->probe->span;
  const struct bpf_insn *in =
      last_insn >= 0 && last_insn < p->ninsns ? &p->insns[last_insn] : NULL;
  if (reason && strstr(reason, "helper call is not allowed in probe") && in &&
      in->code == (BPF_JMP | BPF_CALL) && in->src_reg == 0 &&
      helper_name(in->imm))
    /* bpftrace's words: path() in a function bpf_d_path may not read */
    diag_error(d, at, "helper %s not allowed in probe", helper_name(in->imm));
  else if (means)
    diag_error(d, at, "the kernel's verifier rejected the program for probe "
               "%s: %s (%s)", prog_probe_name(p), means, reason);
  else
    diag_error(d, at, "the kernel's verifier rejected the program for probe "
               "%s: %s", prog_probe_name(p), reason ? reason : "(no log)");
  int first = n > VERIFIER_TAIL_LINES ? n - VERIFIER_TAIL_LINES : 0;
  if (last_insn >= 0)
    fprintf(d->out, "The verifier's last lines (it stopped at instruction "
            "%d):\n", last_insn);
  else
    fprintf(d->out, "The verifier's last lines:\n");
  for (int i = first; i < n; i++)
    if (*lines[i]) fprintf(d->out, "  %s\n", lines[i]);
  free(lines);
}

/* The fd that says where attach_btf_id is (btf_obj_fd below): a module's
 * BTF object, or for fentry:bpf the BPF program whose function it is. */
#define TARGET_BTF_FD(p, fd) ((p)->attach_prog_id || (fd) <= 0 ? 0 : (fd))
#define TARGET_PROG_FD(p, fd) ((p)->attach_prog_id && (fd) > 0 ? (fd) : 0)

/* Loads once more with the verifier's log on, growing the buffer while the
 * kernel says it was too small (kernels before 6.4 keep the head of the log,
 * and the failure is at its tail). */
static int load_with_log(const BpfProg *p, const char *name,
                         const char *license,
                         const struct bpf_insn *insns, const ScriptBtf *sb,
                         int idx, int btf_obj_fd, char **log_out) {
  size_t size = VERIFIER_LOG_START;
  for (;;) {
    char *log = calloc(1, size);
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_level = 1, .log_size = size,
                .log_buf = log,
                .expected_attach_type = p->expected_attach_type,
                .attach_btf_id = p->attach_btf_id,
                .attach_btf_obj_fd = TARGET_BTF_FD(p, btf_obj_fd),
                .attach_prog_fd = TARGET_PROG_FD(p, btf_obj_fd));
    script_btf_opts(sb, idx, &opts);
    int fd = bpf_prog_load(p->prog_type, name, license, insns, p->ninsns,
                           &opts);
    if (fd >= 0 || errno != ENOSPC || size >= VERIFIER_LOG_MAX) {
      *log_out = log;
      return fd;
    }
    free(log);
    size *= 4;
  }
}

/* The first try, with no log (or only -v's statistics). */
static int load_quietly(const BpfProg *p, bool verifier_stats,
                        const char *name, const char *license,
                        const struct bpf_insn *insns, const ScriptBtf *sb,
                        int idx, int btf_obj_fd) {
  /* -v: the kernel's statistics (BPF_LOG_STATS); the log of a refusal
   * comes from load_with_log. The kernel writes a few lines but wants
   * room in proportion to the program once it has global subprograms
   * (a 64 KiB buffer was refused, ENOSPC, for 23,000 instructions); the
   * pages it does not write are never touched. */
  enum { STATS_LOG_SIZE = 16 << 20 };
  char *stats = verifier_stats ? malloc(STATS_LOG_SIZE) : NULL;
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = p->expected_attach_type,
              .attach_btf_id = p->attach_btf_id,
              .attach_btf_obj_fd = TARGET_BTF_FD(p, btf_obj_fd),
              .attach_prog_fd = TARGET_PROG_FD(p, btf_obj_fd));
  if (stats) {
    stats[0] = '\0';
    opts.log_level = 4;
    opts.log_buf = stats;
    opts.log_size = STATS_LOG_SIZE;
  }
  script_btf_opts(sb, idx, &opts);
  int fd = bpf_prog_load(p->prog_type, name, license, insns, p->ninsns,
                         &opts);
  if (fd >= 0 && stats) print_verifier_stats(p, stats);
  free(stats);
  return fd;
}

static int load_prog(const Compiled *c, Loaded *l, int idx,
                     const ScriptBtf *sb, bool verifier_stats, Diag *d) {
  const BpfProg *p = &c->progs[idx];
  int *fd = &l->prog_fds[idx];
  struct bpf_insn *insns = patched_insns(l, p, d);
  if (!insns) return -1;
  char name[BPF_OBJ_NAME_LEN];
  prog_identifier(p, name, sizeof name);
  const char *license = c->license ? c->license : "GPL";
  /* fentry on a module's function: the program names the function in
   * that module's BTF, which the kernel knows by an fd */
  int btf_obj_fd = p->attach_btf_module
                       ? kernel_btf_obj_fd(p->attach_btf_module) : -1;
  /* fentry:bpf: the function is in the running program's BTF */
  if (p->attach_prog_id) {
    btf_obj_fd = bpf_prog_get_fd_by_id(p->attach_prog_id);
    if (btf_obj_fd < 0) {
      diag_error(d, p->ap ? p->ap->span : no_span, "the BPF program %u "
                 "that %s traces is gone: %s", p->attach_prog_id,
                 prog_probe_name(p), strerror(errno));
      free(insns);
      return -1;
    }
  }
  *fd = load_quietly(p, verifier_stats, name, license, insns, sb, idx,
                     btf_obj_fd);
  int err = errno;
  const Provider *prov = p->ap ? p->ap->prov : NULL;
  char *log = NULL;
  if (*fd >= 0) {
    /* loaded */
  } else if (prov && prov->load_refused &&
             prov->load_refused(p->ap, p->target, err, d)) {
    /* reported in the provider's words */
  } else if (err == EPERM || err == ENOSYS) {
    report_bpf_failure(d, no_span, err, "program", name);
  } else {
    *fd = load_with_log(p, name, license, insns, sb, idx, btf_obj_fd, &log);
    int log_err = errno;
    if (*fd >= 0) {
      /* loaded */
    } else if (log && *log && log_has_reason(log)) {
      report_rejection(p, log, d);
    } else {
      /* no log, or the verifier passed it and the kernel refused for
       * another reason (no file descriptors left, no memory) */
      diag_error(d, p->ap ? p->ap->span : no_span,
                 "could not load the program for probe %s: %s",
                 prog_probe_name(p), strerror(log && *log ? log_err : err));
    }
  }
  free(log);
  free(insns);
  if (btf_obj_fd >= 0) close(btf_obj_fd);
  return *fd >= 0 ? 0 : -1;
}

/* ---- the public face ------------------------------------------------ */

/* A state for each of c's maps and programs, nothing created yet, so that
 * unload_all closes only what this run opened. */
static void loaded_init(Loaded *l, const Compiled *c) {
  *l = (Loaded){.nmaps = c->nmaps, .nprogs = c->nprogs};
  l->ringbuf_fd = l->scratch_fd = l->big_scratch_fd = l->counts_fd = -1;
  l->wake_fd = l->skb_output_fd = -1;
  l->maps = calloc((size_t)c->nmaps + 1, sizeof *l->maps);
  l->prog_fds = calloc((size_t)c->nprogs + 1, sizeof *l->prog_fds);
  if (!l->maps || !l->prog_fds) abort();
  for (int i = 0; i < c->nmaps; i++) l->maps[i].fd = -1;
  for (int i = 0; i < c->nprogs; i++) l->prog_fds[i] = -1;
}

int load_all(const Compiled *c, Loaded *l, bool verifier_stats, Diag *d) {
  /* Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK; newer ones
   * ignore it, and a container may refuse the change: either is fine. */
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  setrlimit(RLIMIT_MEMLOCK, &unlimited);
  /* Each probe a perf event holds one or two file descriptors: thousands
   * of them for a wide wildcard, past the usual soft limit of 1024. */
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }

  ScriptBtf sb = {0};
  loaded_init(l, c);
  if (create_internal_maps(c, l, d) < 0) goto fail;
  for (int i = 0; i < c->nmaps; i++)
    if (create_script_map(c->maps[i], &l->maps[i], d) < 0) goto fail;
  /* Without the BTF, programs of one function still load (without their
   * script lines); the others cannot. */
  if (script_btf_build(&sb, c, d->src) < 0) {
    int err = errno;
    for (int i = 0; i < c->nprogs; i++) {
      if (sb.progs && sb.progs[i].nfuncs > 1) {
        report_bpf_failure(d, no_span, err, "the BTF of program",
                           c->progs[i].name);
        goto fail;
      }
    }
  }
  for (int i = 0; i < c->nprogs; i++)
    if (load_prog(c, l, i, &sb, verifier_stats, d) < 0) goto fail;
  script_btf_free(&sb, c->nprogs);
  return 0;
fail:
  script_btf_free(&sb, c->nprogs);
  unload_all(l);
  return -1;
}

/* A raw tracepoint program serving many syscall tracepoints of its probe:
 * one link, counted as the tracepoints it stands for, as bpftrace counts
 * them. */
static int attach_syscall_group(const BpfProg *p, int fd, AttachPoint *ap,
                                LinkSet *links, Diag *d) {
  int count = syscall_group_count(p->probe, p->syscall_group);
  char err[256] = "";
  if (links && syscall_group_attach(p->syscall_group, fd, links, err,
                                    sizeof err) < 0) {
    diag_error(d, ap->span, "Unable to attach probe: %s: %s", ap->text, err);
    return -1;
  }
  return count;
}

/* Whether p is a program of prov's kind: of its program type, or a raw
 * tracepoint's loaded as a tracing program (tp_btf). */
static bool prog_of(const Provider *prov, const BpfProg *p) {
  return prov->prog_type == p->prog_type ||
         (p->expected_attach_type == BPF_TRACE_RAW_TP &&
          prov->prog_type == BPF_PROG_TYPE_RAW_TRACEPOINT);
}

/* Attaches p to every target of ap. Returns how many, or -1 after
 * reporting. Providers without attach (BEGIN, END) count as attached:
 * bpftrace's "Attaching N probes" counts them too. */
static int attach_ap(const BpfProg *p, int fd, AttachPoint *ap,
                     const Target *only, const Settings *st, LinkSet *links,
                     Diag *d) {
  const Provider *prov = ap->prov;
  if (p->syscall_group) return attach_syscall_group(p, fd, ap, links, d);
  if (!prov || !prog_of(prov, p)) return 0;
  if (!only && links && prov->attach_group && p->expected_attach_type) {
    char err[256] = "";
    int n = prov->attach_group(ap, st, p->expected_attach_type, fd, links,
                               d, err, sizeof err);
    if (n < 0) {
      diag_error(d, ap->span, "Unable to attach probe: %s: %s", ap->text, err);
      return -1;
    }
    if (n > 0) return n;
  }
  int count = 0;
  for (Target *t = ap->targets; t; t = t->next) {
    if (only && t != only) continue;
    if (syscall_raw_serves(ap, t)) continue;   /* its raw program's */
    if (prov->attach && links) {
      char err[256] = "";
      if (prov->attach(t, st, fd, links, err, sizeof err) < 0) {
        diag_error(d, ap->span, "Unable to attach probe: %s: %s", t->name, err);
        return -1;
      }
    }
    count++;
  }
  return count;
}

static int attach_prog(const BpfProg *p, int fd, const Settings *st,
                       LinkSet *links, Diag *d) {
  if (p->ap) return attach_ap(p, fd, p->ap, p->target, st, links, d);
  int count = 0;
  for (AttachPoint *ap = p->probe ? p->probe->aps : NULL; ap; ap = ap->next) {
    int n = attach_ap(p, fd, ap, p->target, st, links, d);
    if (n < 0) return -1;
    count += n;
  }
  return count;
}

/* Whether p's probes are of a kind the kernel runs newest first. */
static bool newest_first(const BpfProg *p) {
  const AttachPoint *ap = p->ap ? p->ap : p->probe ? p->probe->aps : NULL;
  if (!ap || !ap->prov) return false;
  if (ap->prov->newest_first) return ap->prov->newest_first(ap);
  return ap->prov->fires_newest_first;
}

/* Programs attach in script order, so that probes of one event run in
 * that order, except those the kernel runs newest first, which attach
 * last to first for the same effect. */
int attach_all(const Compiled *c, const Loaded *l, const Settings *st,
               LinkSet *links, Diag *d) {
  int count = 0;
  for (int k = 0; k < 2 * c->nprogs; k++) {
    bool second = k >= c->nprogs;
    int i = second ? 2 * c->nprogs - 1 - k : k;
    const BpfProg *p = &c->progs[i];
    if (newest_first(p) != second) continue;
    int n = attach_prog(p, l ? l->prog_fds[i] : -1, st, links, d);
    if (n < 0) {
      links_close_all(links);
      return -1;
    }
    count += n;
  }
  return count;
}

int special_probe_count(const Compiled *c) {
  int count = 0;
  for (int i = 0; i < c->nprogs; i++) {
    const AttachPoint *ap = c->progs[i].ap;
    if (ap && ap->prov && !ap->prov->attach) count += ap->ntargets;
  }
  return count;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void unload_all(Loaded *l) {
  for (int i = 0; i < l->nprogs; i++) close_fd(&l->prog_fds[i]);
  for (int i = 0; i < l->nmaps; i++) close_fd(&l->maps[i].fd);
  close_fd(&l->ringbuf_fd);
  close_fd(&l->wake_fd);
  close_fd(&l->skb_output_fd);
  close_fd(&l->counts_fd);
  close_fd(&l->scratch_fd);
  close_fd(&l->big_scratch_fd);
}
