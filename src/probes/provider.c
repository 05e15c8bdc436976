/* provider: the registry of probe providers, and what they share — the set
 * of fds to close at detach, glob matching, and attaching a program to a
 * perf event. */
#include "probes/provider.h"

#include <errno.h>
#include <pthread.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

/* Defined by each provider's own file. */
extern const Provider tracepoint_provider;
extern const Provider interval_provider;
extern const Provider profile_provider;
extern const Provider software_provider;
extern const Provider hardware_provider;
extern const Provider kprobe_provider;
extern const Provider kretprobe_provider;
extern const Provider uprobe_provider;
extern const Provider uretprobe_provider;
extern const Provider rawtracepoint_provider;
extern const Provider watchpoint_provider;
extern const Provider fentry_provider;
extern const Provider fexit_provider;
extern const Provider iter_provider;
extern const Provider usdt_provider;
extern const Provider begin_provider;
extern const Provider end_provider;
extern const Provider bench_provider;
extern const Provider test_provider;
extern const Provider self_provider;

/* ---- providers loupe knows by name but does not implement yet ------- */

/* These names are real bpftrace probe types; a script using one should be
 * told plainly that loupe lacks it, not that the name is wrong. */
static int unsupported_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  diag_error(d, ap->span, "loupe does not support %s probes yet",
             ap->prov ? ap->prov->name : ap->provider);
  return -1;
}

static void list_nothing(const char *pattern, const Settings *st, FILE *out) {}

#define UNSUPPORTED(var, pname, palias)                                     \
  static const Provider var = {.name = pname,                             \
                               .aliases = (const char *const[]){palias,   \
                                                                NULL},    \
                               .expand = unsupported_expand,             \
                               .list = list_nothing}

UNSUPPORTED(asyncwatchpoint_provider, "asyncwatchpoint", "aw");

const Provider *const providers[] = {
    &begin_provider,     &end_provider,       &bench_provider,
    &test_provider,      &self_provider,
    &interval_provider,  &profile_provider,
    &software_provider,  &hardware_provider,
    &tracepoint_provider,
    &kprobe_provider,    &kretprobe_provider,
    &uprobe_provider,    &uretprobe_provider,
    &rawtracepoint_provider,
    &fentry_provider,    &fexit_provider,
    &usdt_provider,      &iter_provider,
    &watchpoint_provider,
    /* known, not implemented yet */
    &asyncwatchpoint_provider,
    NULL,
};

const Provider *provider_find(const char *name) {
  if (!name) return NULL;
  for (int i = 0; providers[i]; i++) {
    const Provider *p = providers[i];
    if (!strcmp(p->name, name)) return p;
    for (const char *const *a = p->aliases; a && *a; a++)
      if (!strcmp(*a, name)) return p;
  }
  return NULL;
}

const Provider *ap_provider(const AttachPoint *ap) {
  return ap->prov ? ap->prov : provider_find(ap->provider);
}

const AttachPoint *probe_other_ap(const Probe *p, size_t offset,
                                  size_t size, uint64_t value) {
  static const Provider none;
  for (const AttachPoint *ap = p->aps; ap; ap = ap->next) {
    const Provider *prov = ap_provider(ap);
    const char *field = (const char *)(prov ? prov : &none) + offset;
    uint64_t v;
    switch (size) {
    case 1: v = *(const uint8_t *)field; break;
    case 2: v = *(const uint16_t *)field; break;
    case 4: v = *(const uint32_t *)field; break;
    default: v = *(const uint64_t *)field; break;
    }
    if (v != value) return ap;
  }
  return NULL;
}

int probe_no_matches(AttachPoint *ap, Diag *d, const char *what) {
  diag_error(d, ap->span, "No matches for %s %s.%s", ap->prov->name, what,
             d->demote == DEMOTE_TO_WARNING ? " Skipping." : "");
  return -1;
}

/* ---- LinkSet -------------------------------------------------------- */

void links_add(LinkSet *ls, int fd) {
  if (ls->n == ls->cap) {
    int cap = ls->cap ? ls->cap * 2 : 16;
    int *fds = realloc(ls->fds, cap * sizeof(int));
    if (!fds) {
      /* Out of memory: better to drop the probe now than leak it later. */
      close(fd);
      return;
    }
    ls->fds = fds;
    ls->cap = cap;
  }
  ls->fds[ls->n++] = fd;
}

/* Closing the last perf event of a tracepoint or uprobe waits for an RCU
 * grace period in the kernel (tens of ms), one close after the other: 361
 * syscall tracepoints took 16-20 s to detach. Grace periods of closes made
 * at the same time are shared, so many probes are closed by a pool of
 * threads, each taking every Nth fd. */
enum { CLOSE_SERIAL_MAX = 16, CLOSE_THREADS_MAX = 64 };

typedef struct CloseShare {
  const int *fds;
  int n, first, stride;
} CloseShare;

static void *close_share(void *arg) {
  const CloseShare *c = arg;
  for (int i = c->first; i < c->n; i += c->stride) close(c->fds[i]);
  return NULL;
}

static void close_in_parallel(const int *fds, int n) {
  int nthreads = n / 4 < CLOSE_THREADS_MAX ? n / 4 : CLOSE_THREADS_MAX;
  pthread_t tids[CLOSE_THREADS_MAX];
  CloseShare shares[CLOSE_THREADS_MAX];
  int started = 0;
  for (int k = 0; k < nthreads; k++) {
    shares[k] = (CloseShare){fds, n, k, nthreads};
    if (pthread_create(&tids[k], NULL, close_share, &shares[k]) != 0) break;
    started++;
  }
  /* Whatever no thread took (thread creation failed) is closed here. */
  for (int k = started; k < nthreads; k++) close_share(&shares[k]);
  for (int k = 0; k < started; k++) pthread_join(tids[k], NULL);
}

void links_close_all(LinkSet *ls) {
  if (ls->n > CLOSE_SERIAL_MAX)
    close_in_parallel(ls->fds, ls->n);
  else
    for (int i = ls->n - 1; i >= 0; i--) close(ls->fds[i]);
  free(ls->fds);
  ls->fds = NULL;
  ls->n = ls->cap = 0;
}

/* ---- glob ----------------------------------------------------------- */

bool glob_match(const char *pattern, const char *s) {
  /* Iterative matcher with one backtrack point: the last '*' seen. */
  const char *star = NULL, *star_s = NULL;
  while (*s) {
    if (*pattern == '*') {
      star = pattern++;
      star_s = s;
    } else if (*pattern == '?' || *pattern == *s) {
      pattern++;
      s++;
    } else if (star) {
      pattern = star + 1;
      s = ++star_s;
    } else {
      return false;
    }
  }
  while (*pattern == '*') pattern++;
  return *pattern == '\0';
}

/* Appends t to ap's targets. A wildcard over the kernel's functions or a
 * big binary's symbols adds tens of thousands one by one: the end is
 * remembered, not walked to (walking made `kfunc:*` take a minute). */
void ap_add_target(AttachPoint *ap, Target *t) {
  Target **end = ap->targets && ap->targets_end ? ap->targets_end
                                                : &ap->targets;
  while (*end) end = &(*end)->next;
  *end = t;
  ap->targets_end = &t->next;
  ap->ntargets++;
}

bool has_wildcard(const char *s) {
  return strchr(s, '*') || strchr(s, '?');
}

/* ---- perf events ---------------------------------------------------- */

/* Reads one value from a file of the PMU's sysfs directory; false if it
 * cannot. */
static bool read_pmu_file(const char *pmu, const char *file, const char *fmt,
                          int *value) {
  char path[256];
  snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/%s", pmu,
           file);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  bool ok = fscanf(f, fmt, value) == 1;
  fclose(f);
  return ok;
}

int probe_pmu_type(const char *pmu) {
  int type;
  return read_pmu_file(pmu, "type", "%d", &type) ? type : -1;
}

int probe_pmu_attach(const char *pmu, bool retprobe, int pid, uint64_t config1,
                     uint64_t config2, uint64_t cookie, int prog_fd,
                     LinkSet *links, char *err, size_t errlen) {
  int type = probe_pmu_type(pmu);
  if (type < 0) {
    snprintf(err, errlen, "no %s PMU on this kernel", pmu);
    return -1;
  }
  struct perf_event_attr attr = {0};
  attr.type = (uint32_t)type;
  /* the bit that makes a return probe: "config:0" in format/retprobe */
  int bit = 0;
  if (retprobe && !read_pmu_file(pmu, "format/retprobe", "config:%d", &bit))
    bit = 0;
  if (retprobe) attr.config = 1ULL << bit;
  attr.config1 = config1;
  attr.config2 = config2;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  /* As with tracepoints, one event (pid -1, cpu 0) runs the program for
   * every process on every CPU; for one process, the event follows it on
   * any CPU (cpu -1). */
  return perf_event_attach_cookie(&attr, pid, pid > 0 ? -1 : 0, prog_fd,
                                  cookie, links, err, errlen);
}

int perf_event_attach(struct perf_event_attr *attr, int pid, int cpu,
                      int prog_fd, LinkSet *links, char *err, size_t errlen) {
  return perf_event_attach_cookie(attr, pid, cpu, prog_fd, 0, links, err,
                                  errlen);
}

int perf_event_open_attached(struct perf_event_attr *attr, int pid, int cpu,
                             int prog_fd, uint64_t cookie, LinkSet *links,
                             char *err, size_t errlen) {
  attr->size = sizeof(*attr);
  int pfd = syscall(SYS_perf_event_open, attr, pid, cpu, -1,
                    PERF_FLAG_FD_CLOEXEC);
  if (pfd < 0) {
    snprintf(err, errlen, "perf_event_open: %s", strerror(errno));
    return -1;
  }
  /* A BPF link detaches by itself when closed; older kernels (before
   * 5.15) only have the ioctl, which ties the program to the event fd and
   * has no cookie (usdt then needs locations that read arguments alike). */
  LIBBPF_OPTS(bpf_link_create_opts, opts, .perf_event.bpf_cookie = cookie);
  int lfd = bpf_link_create(prog_fd, pfd, BPF_PERF_EVENT, &opts);
  if (lfd >= 0) {
    links_add(links, pfd);
    links_add(links, lfd);
    return pfd;
  }
  if (ioctl(pfd, PERF_EVENT_IOC_SET_BPF, prog_fd) < 0 ||
      ioctl(pfd, PERF_EVENT_IOC_ENABLE, 0) < 0) {
    snprintf(err, errlen, "attaching the program to the perf event: %s",
             strerror(errno));
    close(pfd);
    return -1;
  }
  links_add(links, pfd);
  return pfd;
}

int perf_event_attach_cookie(struct perf_event_attr *attr, int pid, int cpu,
                             int prog_fd, uint64_t cookie, LinkSet *links,
                             char *err, size_t errlen) {
  return perf_event_open_attached(attr, pid, cpu, prog_fd, cookie, links, err,
                                  errlen) < 0 ? -1 : 0;
}
