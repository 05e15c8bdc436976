/* provider: one file per kind of probe (tracepoint, interval, BEGIN/END, ...)
 * behind this interface. */
#ifndef LOUPE_PROVIDER_H
#define LOUPE_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lang/ast.h"

/* One field of a tracepoint record, from tracefs' `format` file. */
typedef struct TpField {
  char *name;
  char *type_text;    /* as written: "const char *", "char[16]", ... */
  int offset;
  int size;
  bool is_signed;
  bool is_pointer;    /* "T *" */
  bool is_string;     /* char[N] (is_array) or __data_loc char[] */
  bool is_array;      /* T name[N] with N > 0 */
  bool data_loc;      /* __data_loc: u32 = (len << 16) | offset */
  bool in_u64;        /* raw tracepoint, fentry, iterator: the value is
                         the low `size` bytes of a u64 slot of the
                         context, which is read whole and then cut to
                         `size` (the rest of the slot is not the value's) */
  bool is_return;     /* fexit: the return value ("retval"), not one of
                         the arguments of `args` */
  bool sign_pending;  /* a syscall event's argument: is_signed is its
                         declared type's, which may take the kernel's BTF
                         to know (a typedef), so it is found when the
                         field is first looked at (tp_field, tp_field_at),
                         not for the fields a script never reads */
} TpField;

typedef struct TpFormat {
  int id;
  TpField *fields;    /* common_* fields are left out */
  int nfields;
} TpFormat;

/* File descriptors to close at detach (perf events, links). */
typedef struct LinkSet {
  int *fds;
  int n;
  int cap;
} LinkSet;

void links_add(LinkSet *ls, int fd);
void links_close_all(LinkSet *ls);

/* How a probe's programs come to run (runtime/run.c, codegen). */
typedef enum ProbeRun {
  RUN_ON_EVENTS,     /* the kernel runs them at their targets' events */
  RUN_AT_BEGIN,      /* loupe runs them once before the event loop */
  RUN_AT_END,        /* loupe runs them once after it */
  RUN_AS_BENCH,      /* --mode bench: loupe runs each many times, timed */
  RUN_AS_TEST,       /* --mode test: loupe runs each once */
  RUN_ON_SIGNAL,     /* loupe runs them whenever it receives SIGUSR1 */
  RUN_AS_ITERATOR,   /* loupe reads the iterator they write into, to its
                        end, and the run ends with it */
} ProbeRun;

/* Where `args` comes from in a provider's probes (builtins/context.c). */
typedef enum ArgsFrom {
  ARGS_NONE,
  ARGS_FIELDS,       /* the fields of each target's Target.format, read
                        from the context as TpField says */
  ARGS_DEBUGINFO,    /* the probed function's parameters, from the
                        binary's debug information, read from the
                        registers (builtins/uprobe_args.c) */
} ArgsFrom;

/* Where arg0..arg5 (and sargN, reg()) come from (builtins/context.c). */
typedef enum ArgNFrom {
  ARGN_NONE,
  ARGN_REGS,         /* the probed function's registers in the context's
                        struct pt_regs; sargN and reg() too */
  ARGN_SLOTS,        /* the context's u64 slots, up to the argument
                        count its Target.format gives */
  ARGN_OWN,          /* the provider's arg_usable and emit_arg say (up
                        to arg11) */
} ArgNFrom;

/* Where `retval` comes from (builtins/context.c). */
typedef enum RetvalFrom {
  RETVAL_NONE,
  RETVAL_REGS,       /* the return register of the context's pt_regs */
  RETVAL_FIELD,      /* the Target.format field that is_return marks */
} RetvalFrom;

/* What `func` names (builtins/context.c): the probed function,
 * Target.event, in a probe whose attach points all have the same
 * FuncFrom. */
typedef enum FuncFrom {
  FUNC_NONE,
  FUNC_REGS,         /* a function probed through its registers */
  FUNC_BTF,          /* a kernel function traced through its BTF */
} FuncFrom;

struct Gen;

typedef struct Provider {
  const char *name;        /* canonical: "tracepoint", "interval", "BEGIN" */
  /* Its other names ("t", "begin", the names of older bpftrace),
   * NULL-terminated; NULL: none. */
  const char *const *aliases;
  uint32_t prog_type;      /* BPF_PROG_TYPE_* its programs load as */
  /* The hooks get the run's settings as st (-p, -c, --unsafe, --mode,
   * -lv ...). */
  /* Fills ap->targets from ap->parts; reports problems at ap->span.
   * Returns 0, or -1 after reporting. */
  int (*expand)(AttachPoint *ap, const Settings *st, Diag *d);
  /* Attaches a loaded program to one target, adding every fd it opens to
   * links. Returns 0, or -1 with a message in err. NULL for providers whose
   * programs loupe runs itself (BEGIN, END). */
  int (*attach)(const Target *t, const Settings *st, int prog_fd,
                LinkSet *links, char *err, size_t errlen);
  /* Prints the probes this provider offers that match the glob pattern
   * (NULL or "" for all), one per line, as `loupe -l` shows them. */
  void (*list)(const char *pattern, const Settings *st, FILE *out);
  /* The attach type the program of ap must be loaded for (the kernel may
   * have a better way to attach them than the one every kernel has); t is
   * the program's one target, or NULL when it serves all of ap's. NULL:
   * none. */
  uint32_t (*attach_type)(const AttachPoint *ap, const Target *t);
  /* Attaches one program to all of ap's targets at once, for a program
   * loaded for attach_type (a "multi" link): returns how many targets it
   * attached (it may leave some out, with a warning in d), 0 to have them
   * attached one by one, or -1 with a message in err. NULL: always one by
   * one. */
  int (*attach_group)(const AttachPoint *ap, const Settings *st,
                      uint32_t attach_type, int prog_fd, LinkSet *links,
                      Diag *d, char *err, size_t errlen);
  /* The kernel runs the probes of one place newest first (uprobes put
   * each new consumer first): attach_all attaches them in reverse. */
  bool fires_newest_first;
  /* The same decided by attach point, where it depends on the event
   * (software events); when set, it is asked instead of the flag. */
  bool (*newest_first)(const AttachPoint *ap);
  /* Each target needs a program of its own (fentry: the kernel ties a
   * program to its function when loading it, attach_btf). */
  bool prog_per_target;
  /* A program serving many targets reads `probe` and `func` by its BPF
   * cookie, which attach gives each target (Target.name_slot - 1), so
   * they do not need a program each. */
  bool names_by_cookie;
  /* When the kernel refuses to load a program for target t with errno
   * err: reports it in the provider's words and returns true, or returns
   * false for the usual report. NULL: always the usual report. */
  bool (*load_refused)(const AttachPoint *ap, const Target *t, int err,
                       Diag *d);
  /* The kernel BTF type the program of target t loads for (fentry,
   * fexit, iter: the function; a raw tracepoint's typedef when it loads
   * as tp_btf, `tracing`): its id, and in *prog_id the running BPF
   * program whose BTF holds it (fentry:bpf), else 0 there; 0: none.
   * NULL: none. */
  uint32_t (*attach_btf)(const Target *t, bool tracing, uint32_t *prog_id);
  /* How its programs come to run: RUN_ON_EVENTS (0) for those that
   * `attach` puts where the kernel runs them. */
  ProbeRun run;
  /* Program names (BpfProg.name) start with this ("tp_"); NULL: none. */
  const char *prog_prefix;

  /* ---- its programs' context: what the context words mean there -------
   * builtins/context.c and lang/check.c ask these instead of the
   * provider's name; a probe with attach points of several providers may
   * use a word only where all of them give it. */
  ArgsFrom args;
  ArgNFrom argn;
  RetvalFrom retval;
  FuncFrom func;
  /* argN: whether argument index can be read in every target of p
   * (whose attach points are all this provider's), else why in msg (NULL:
   * always, up to arg5); and the code that reads it from the context of
   * the program's target into a register (a 64-bit value). */
  bool (*arg_usable)(const Probe *p, int index, char *msg, size_t len);
  int (*emit_arg)(struct Gen *g, int index);
  /* retval (n) into a register. */
  int (*emit_retval)(struct Gen *g, Node *n);
  /* Its probes run in user code: a pointer among argN, retval and sargN
   * is a user address. */
  bool user_space;
  /* Whether the pointers among target t's `args` are user addresses (a
   * system call's arguments, the caller's). NULL: they are not. */
  bool (*args_user_space)(const Target *t);
  /* Its programs load as tracing programs, which the kernel gives
   * helpers (bpf_d_path, bpf_get_socket_cookie, ...) that others lack;
   * a probe may call those where all its attach points have this, or
   * where its first one has ctx_is_args (an iterator's). */
  bool tracing_helpers;
  /* Its programs may load as tracing programs (tp_btf) when the probe
   * wants those helpers (Probe.wants_tracing). */
  bool tracing_on_demand;
  /* `ctx` is its targets' arguments record, read as `args` is (its
   * programs' context is made of u64 slots). */
  bool ctx_is_args;
  /* override() may make the probed function return at once
   * (bpf_override_return). */
  bool can_override;
  /* In user-space probes: the instruction pointer is the return address,
   * not the function's. */
  bool ip_after_return;
  /* Its programs run on behalf of loupe, a user process: `usermode` is 1
   * in them (where the context has no registers to say). */
  bool in_user_mode;
  /* `probetype`'s value; NULL: the name. */
  const char *probetype;
} Provider;

/* The provider of ap: its prov once expand has set it, else the one its
 * name says (NULL if none). */
const Provider *ap_provider(const AttachPoint *ap);
/* The first attach point of p whose provider's `field` is not `value`
 * (a field of Provider, compared as an integer; an attach point whose
 * name is no provider's has every field 0), or NULL if there is none. */
#define PROBE_OTHER(p, field, value)                                      \
  probe_other_ap((p), offsetof(Provider, field),                          \
                 sizeof(((const Provider *)0)->field), (uint64_t)(value))
/* Whether the provider of every attach point of p has that value. */
#define PROBE_ALL(p, field, value) (PROBE_OTHER(p, field, value) == NULL)
const AttachPoint *probe_other_ap(const Probe *p, size_t offset,
                                  size_t size, uint64_t value);

/* Looks a provider up by name or alias; NULL if there is none. */
const Provider *provider_find(const char *name);
/* All providers, NULL-terminated, in listing order. */
extern const Provider *const providers[];

/* Tracepoint helpers shared with the checker. */
/* Directory of tracefs, mounting it on /sys/kernel/tracing if no tracefs
 * is mounted. NULL (with errno set) if it cannot be had. */
const char *tracefs_dir(void);
/* Parsed format of category:event, cached; NULL if it does not exist. */
TpFormat *tp_format(const char *category, const char *event);
/* Field `name`, or the i-th field, of f, its sign known. */
const TpField *tp_field(const TpFormat *f, const char *name);
const TpField *tp_field_at(const TpFormat *f, int i);
/* The fields and id of a format file's text (tracefs'
 * events/CATEGORY/EVENT/format), and the cache tp_format reads first:
 * apart for the fuzzer (tests/fuzz/fuzz_tp_format.c). */
TpFormat *tp_format_parse(FILE *f);
void tp_format_remember(const char *category, const char *event,
                        TpFormat *fmt);

/* Glob match with '*' and '?' as bpftrace's wildcards. */
bool glob_match(const char *pattern, const char *s);
void ap_add_target(AttachPoint *ap, Target *t);
/* Whether s contains a wildcard glob_match understands. */
bool has_wildcard(const char *s);

/* Reports that attach point ap matched nothing, in bpftrace's words:
 * "No matches for PROVIDER WHAT." (and " Skipping." when missing_probes
 * turns the error into a warning). Returns -1. */
int probe_no_matches(AttachPoint *ap, Diag *d, const char *what);

/* Shared by uprobe and usdt (uprobe.c). The file a probe's BINARY names:
 * found gets the path to show, real (PATH_MAX bytes) the path to open;
 * with a pid (-p; 0: none), a bare name is first looked up among the
 * files the process maps, and an absolute path is resolved inside the
 * process's root (sym/procfs.h). False if there is no such file, with a
 * message naming it a `kind` ("uprobe", "usdt") target file in err. */
bool uprobe_find_binary(const char *kind, int pid, const char *binary,
                        char *found, char *real, char *err, size_t errlen);

/* Whether name is a kernel function that can be traced (in tracefs'
 * available_filter_functions or st's --traceable-functions, else in
 * /proc/kallsyms); true when neither can be read (kprobe.c). */
bool kernel_function_known(const char *name, const Settings *st);

/* Whether the kernel has fprobe (kallsyms names register_fprobe), which
 * kprobe_multi links are made of: without it the kernel loads programs
 * for them but refuses the links (kprobe.c). */
bool kernel_has_fprobe(void);

/* ---- uprobe_multi links (Linux 6.6), uprobe.c ----------------------------
 * One link puts a program at many places of one file, and the kernel
 * takes them all down after one grace period when it closes, where one
 * perf event per place costs a grace period each to close (about 0.1 s;
 * a minute for a JVM's 500 hotspot probes). */
#define ATTACH_UPROBE_MULTI 48   /* BPF_TRACE_UPROBE_MULTI */

/* ATTACH_UPROBE_MULTI if the kernel loads programs for it, else 0. */
uint32_t uprobe_multi_attach_type(void);

/* Puts the program prog_fd (loaded for ATTACH_UPROBE_MULTI) at the n file
 * offsets of path, entries or (retprobe) returns, in every process or
 * only in process pid (> 0), with their reference counters (usdt
 * semaphores) and cookies (either may be NULL). Returns 0, or -1 with a
 * message in err. */
int uprobe_multi_link(const char *path, int n, const uint64_t *offsets,
                      const uint64_t *ref_ctrs, const uint64_t *cookies,
                      bool retprobe, int pid, int prog_fd, LinkSet *links,
                      char *err, size_t errlen);

/* Shared by the providers built on perf events (tracepoint, interval,
 * profile, software): opens the event described by attr (its size is
 * filled in) for process `pid` on any CPU, or (pid -1) for every process
 * on `cpu`, runs prog_fd on it through a BPF
 * link (or the older ioctl), and adds the fds to links. Returns 0, or -1
 * with a message in err. */
struct perf_event_attr;
int perf_event_attach(struct perf_event_attr *attr, int pid, int cpu,
                      int prog_fd,
                      LinkSet *links, char *err, size_t errlen);
/* The same, with a BPF cookie the program reads (bpf_get_attach_cookie). */
int perf_event_attach_cookie(struct perf_event_attr *attr, int pid, int cpu,
                             int prog_fd, uint64_t cookie, LinkSet *links,
                             char *err, size_t errlen);
/* The same again, returning the perf event's fd (>= 0: it is in links,
 * and closed with them), for a provider that disables it later. */
int perf_event_open_attached(struct perf_event_attr *attr, int pid, int cpu,
                             int prog_fd, uint64_t cookie, LinkSet *links,
                             char *err, size_t errlen);
/* unwatch(addr): disables the watchpoints attached on addr (their events
 * stay open until the run ends); returns how many (watchpoint.c). */
int watchpoint_unwatch(uint64_t addr);
/* The online CPUs ("0-3,6" in sysfs) into cpus; returns how many. */
int probe_online_cpus(int *cpus, int max);

/* The dynamic probe PMUs, "kprobe" and "uprobe", of
 * /sys/bus/event_source/devices: the PMU's event type, or -1 if the
 * kernel has none. */
int probe_pmu_type(const char *pmu);
/* Opens a probe on the PMU — config1 names the function (kprobe) or the
 * file (uprobe), config2 is the offset — as a return probe if asked, and
 * runs prog_fd on it with the BPF cookie given, as perf_event_attach does:
 * in process pid alone, or (pid -1) in every process. */
int probe_pmu_attach(const char *pmu, bool retprobe, int pid, uint64_t config1,
                     uint64_t config2, uint64_t cookie, int prog_fd,
                     LinkSet *links, char *err, size_t errlen);

/* The BPF cookie of target t: its entry of the names map (Target.name_slot)
 * when a program serving many targets reads its `probe` or `func`, else
 * 0. */
static inline uint64_t target_cookie(const Target *t) {
  return t->name_slot ? t->name_slot - 1 : 0;
}

#endif
