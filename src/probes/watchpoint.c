/* watchpoint: hardware breakpoints, through the CPU's debug registers
 * (perf events of type PERF_TYPE_BREAKPOINT).
 *
 *   watchpoint:ADDRESS:LENGTH:MODE   (alias w:)
 *
 * fires when the LENGTH bytes (1, 2, 4 or 8) at ADDRESS are written (w),
 * read or written (rw; x86 cannot watch reads alone, and the kernel says
 * so), or executed (x, LENGTH as the CPU wants it: 8 on x86-64). A kernel
 * address is watched on every CPU; a user address in the process -p or -c
 * names, in each of its threads and the threads they start (the events
 * are inherited). unwatch(ADDRESS) disables the watchpoints on an address
 * (builtins/kernel.c sends it to user space). */
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "probes/provider.h"

/* x86-64 user addresses end at the canonical hole's start */
#define USER_ADDRESS_END 0x0000800000000000ULL
#define MAX_CPUS 4096

/* A watchpoint target's Target.data: the bytes watched, and
 * HW_BREAKPOINT_R, _W, _RW or _X. */
typedef struct Breakpoint {
  uint8_t len;
  uint8_t type;
} Breakpoint;

/* The breakpoints attached, by address, for unwatch(). Their fds are in
 * the run's LinkSet, which closes them. */
static struct Watched {
  uint64_t addr;
  int fd;
} *watched;
static int nwatched;

static int mode_bits(const char *mode) {
  if (!strcmp(mode, "w")) return HW_BREAKPOINT_W;
  if (!strcmp(mode, "r")) return HW_BREAKPOINT_R;
  if (!strcmp(mode, "rw") || !strcmp(mode, "wr")) return HW_BREAKPOINT_RW;
  if (!strcmp(mode, "x")) return HW_BREAKPOINT_X;
  return -1;
}

static int watchpoint_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts != 3) {
    diag_error(d, ap->span, "watchpoint probe type requires 3 arguments: "
               "watchpoint:ADDRESS:LENGTH:MODE");
    return -1;
  }
  char *end;
  errno = 0;
  unsigned long long addr = strtoull(ap->parts[0], &end, 0);
  if (!*ap->parts[0] || *end || errno || addr == 0) {
    diag_error(d, ap->span, "watchpoint: '%s' is not an address",
               ap->parts[0]);
    return -1;
  }
  unsigned long len = strtoul(ap->parts[1], &end, 0);
  if (*end || (len != 1 && len != 2 && len != 4 && len != 8)) {
    diag_error(d, ap->span, "watchpoint: the length must be 1, 2, 4 or 8, "
               "not '%s'", ap->parts[1]);
    return -1;
  }
  int bits = mode_bits(ap->parts[2]);
  if (bits < 0) {
    diag_error(d, ap->span, "watchpoint: the mode must be r, w, rw or x, "
               "not '%s'", ap->parts[2]);
    return -1;
  }
  if (addr < USER_ADDRESS_END && st->target_pid <= 0 && st->cpid <= 0) {
    diag_error(d, ap->span, "watchpoint on a user address needs the "
               "process it is in: -p PID or -c COMMAND");
    return -1;
  }
  Target *t = calloc(1, sizeof *t);
  if (!t) abort();
  t->name = strdup(ap->text);
  t->offset = addr;
  Breakpoint *bp = calloc(1, sizeof *bp);
  if (!bp) abort();
  bp->len = (uint8_t)len;
  bp->type = (uint8_t)bits;
  t->data = bp;
  ap_add_target(ap, t);
  return 0;
}

static int attach_one(struct perf_event_attr *attr, int pid, int cpu,
                      uint64_t addr, int prog_fd, LinkSet *links, char *err,
                      size_t errlen) {
  int fd = perf_event_open_attached(attr, pid, cpu, prog_fd, 0, links, err,
                                    errlen);
  if (fd < 0 && errno == EINVAL) {   /* the kernel's most common reasons */
    size_t len = strlen(err);
    if (attr->bp_type == HW_BREAKPOINT_R)
      snprintf(err + len, errlen - len, " (x86 cannot watch reads alone: "
               "use rw)");
    else if (attr->bp_type == HW_BREAKPOINT_X && addr >= USER_ADDRESS_END)
      snprintf(err + len, errlen - len, " (the kernel allows breakpoints "
               "on its code only where kprobes may probe, and only when it "
               "has kprobes)");
  }
  if (fd < 0) return -1;
  struct Watched *w = realloc(watched, sizeof *w * (size_t)(nwatched + 1));
  if (!w) abort();
  watched = w;
  watched[nwatched++] = (struct Watched){addr, fd};
  return 0;
}

static int watchpoint_attach(const Target *t, const Settings *st, int prog_fd,
                             LinkSet *links, char *err, size_t errlen) {
  struct perf_event_attr attr = {0};
  attr.type = PERF_TYPE_BREAKPOINT;
  attr.bp_addr = t->offset;
  const Breakpoint *bp = t->data;
  attr.bp_len = bp->len;
  attr.bp_type = bp->type;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  if (t->offset >= USER_ADDRESS_END) {   /* the kernel's: every CPU */
    static int cpus[MAX_CPUS];
    int n = probe_online_cpus(cpus, MAX_CPUS);
    for (int i = 0; i < n; i++)
      if (attach_one(&attr, -1, cpus[i], t->offset, prog_fd, links, err,
                     errlen) < 0)
        return -1;
    return 0;
  }
  /* each thread of the process, and (inherit) the threads they start */
  attr.inherit = 1;
  int pid = st->target_pid > 0 ? st->target_pid : st->cpid;
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", pid);
  DIR *tasks = opendir(dir);
  if (!tasks)
    return attach_one(&attr, pid, -1, t->offset, prog_fd, links, err,
                      errlen);
  int rc = 0;
  for (struct dirent *e; rc == 0 && (e = readdir(tasks));) {
    int tid = atoi(e->d_name);
    if (tid > 0)
      rc = attach_one(&attr, tid, -1, t->offset, prog_fd, links, err,
                      errlen);
  }
  closedir(tasks);
  return rc;
}

int watchpoint_unwatch(uint64_t addr) {
  int n = 0;
  for (int i = 0; i < nwatched; i++)
    if (watched[i].addr == addr &&
        ioctl(watched[i].fd, PERF_EVENT_IOC_DISABLE, 0) == 0)
      n++;
  return n;
}

static void watchpoint_list(const char *pattern, const Settings *st,
                            FILE *out) {
  (void)pattern;
  (void)out;   /* any address: nothing to list */
}

const Provider watchpoint_provider = {
    .name = "watchpoint",
    .aliases = (const char *const[]){"w", NULL},
    .prog_type = BPF_PROG_TYPE_PERF_EVENT,
    .expand = watchpoint_expand,
    .attach = watchpoint_attach,
    .list = watchpoint_list,
};
