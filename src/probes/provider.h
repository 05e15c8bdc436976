/* provider: one file per kind of probe (tracepoint, interval, BEGIN/END, ...)
 * behind this interface. */
#ifndef LOUPE_PROVIDER_H
#define LOUPE_PROVIDER_H

#include <stdbool.h>
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

typedef struct Provider {
  const char *name;        /* canonical: "tracepoint", "interval", "BEGIN" */
  const char *alias;       /* "t", "i", "begin", or NULL */
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
   * program to its function when loading it, Target.btf_id). */
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
} Provider;

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
const TpField *tp_field(const TpFormat *f, const char *name);
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
