/* syscalls: which syscall tracepoints one raw tracepoint program can
 * serve, and what it needs to know of the kernel (see syscalls.h). */
#include "probes/syscalls.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#if defined(__x86_64__)
#include <asm/ptrace.h>
#endif

#include "lang/ctype.h"
#include "probes/btf_peek.h"

/* ---- numbers -------------------------------------------------------- */

typedef struct SyscallNr {
  const char *name;
  int nr;
} SyscallNr;

/* x86-64's numbers, by name: every __NR_ of <asm/unistd_64.h>, written
 * by the Makefile (build/gen/syscall_nr.h) in strcmp order. Numbers are
 * stable ABI; a kernel newer than the header has more, whose events keep
 * their perf events. */
static const SyscallNr syscall_numbers[] = {
#if defined(__x86_64__)
#include "syscall_nr.h"
#endif
    {NULL, 0},
};

/* The names the kernel gives some events (its SYSCALL_DEFINE name) differ
 * from the __NR_ name of their number: the x86-64 table's entry points
 * (arch/x86/entry/syscalls/syscall_64.tbl) that are not sys_NAME. The
 * __NR_ names on the left are then not event names at all. */
static const struct {
  const char *event, *nr_name;
} renamed[] = {
    {"newstat", "stat"},       {"newfstat", "fstat"},
    {"newlstat", "lstat"},     {"newuname", "uname"},
    {"umount", "umount2"},     {"sendfile64", "sendfile"},
};

static int compare_nr(const void *key, const void *elem) {
  return strcmp(key, ((const SyscallNr *)elem)->name);
}

static int number_of(const char *nr_name) {
  size_t n = sizeof syscall_numbers / sizeof syscall_numbers[0] - 1;
  const SyscallNr *s = n ? bsearch(nr_name, syscall_numbers, n,
                                   sizeof *syscall_numbers, compare_nr)
                         : NULL;
  return s ? s->nr : -1;
}

int syscall_number(const char *name) { return number_of(name); }

const char *syscall_name_of(int nr) {
  for (size_t i = 0; syscall_numbers[i].name; i++)
    if (syscall_numbers[i].nr == nr) return syscall_numbers[i].name;
  return NULL;
}

/* The number of the system call whose events are sys_enter_EVENT and
 * sys_exit_EVENT, or -1 when it is not known for certain. */
static int event_number(const char *event) {
  for (size_t i = 0; i < sizeof renamed / sizeof renamed[0]; i++) {
    if (!strcmp(event, renamed[i].event)) return number_of(renamed[i].nr_name);
    if (!strcmp(event, renamed[i].nr_name)) return -1;
  }
  return number_of(event);
}

/* ---- the kernel's layout -------------------------------------------- */

/* The byte offset of member `name` of struct `sname`, looking through
 * anonymous members; -1 if there is none. */
static int member_offset(const struct btf *btf, int struct_id,
                         const char *name) {
  const struct btf_type *t = btf__type_by_id(btf, (__u32)struct_id);
  if (!t || !btf_is_composite(t)) return -1;
  const struct btf_member *m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++, m++) {
    const char *mname = btf__name_by_offset(btf, m->name_off);
    int off = (int)(btf_member_bit_offset(t, (__u32)i) / 8);
    if (mname && *mname) {
      if (!strcmp(mname, name)) return off;
      continue;
    }
    int inner = member_offset(btf, btf__resolve_type(btf, m->type), name);
    if (inner >= 0) return off + inner;
  }
  return -1;
}

static int struct_member(const struct btf *btf, const char *sname,
                         const char *name) {
  int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
  return id > 0 ? member_offset(btf, id, name) : -1;
}

/* The kernel's own part: the raw tracepoints' BTF typedefs (that the
 * kernel has them) and where thread_info.status is, found without
 * parsing all of BTF when it can be, else from the parsed BTF. */
static bool read_task_status(int *task_status) {
  BtfPeek q[] = {
      {"btf_trace_sys_enter", BTF_KIND_TYPEDEF, NULL, 0},
      {"btf_trace_sys_exit", BTF_KIND_TYPEDEF, NULL, 0},
      {"task_struct", BTF_KIND_STRUCT, "thread_info", 0},
      {"thread_info", BTF_KIND_STRUCT, "status", 0},
  };
  if (btf_peek_kernel(q, (int)(sizeof q / sizeof q[0]))) {
    *task_status = q[2].found + q[3].found;
    return q[0].found >= 0 && q[1].found >= 0 && q[2].found >= 0 &&
           q[3].found >= 0;
  }
  struct btf *btf = ctype_kernel_btf();
  if (!btf) return false;
  if (btf__find_by_name_kind(btf, "btf_trace_sys_enter",
                             BTF_KIND_TYPEDEF) <= 0 ||
      btf__find_by_name_kind(btf, "btf_trace_sys_exit",
                             BTF_KIND_TYPEDEF) <= 0)
    return false;
  int info = struct_member(btf, "task_struct", "thread_info");
  int status = struct_member(btf, "thread_info", "status");
  *task_status = info + status;
  return info >= 0 && status >= 0;
}

#if defined(__x86_64__)
/* struct pt_regs is user ABI on x86-64 (<asm/ptrace.h>, what ptrace's
 * PTRACE_GETREGS and kprobe programs' context see): its registers, as
 * the kernel's syscall_get_arguments takes them. */
static bool read_layout(SyscallLayout *l) {
  if (!syscall_numbers[0].name) return false;
  static const int arg_regs[6] = {
      offsetof(struct pt_regs, rdi), offsetof(struct pt_regs, rsi),
      offsetof(struct pt_regs, rdx), offsetof(struct pt_regs, r10),
      offsetof(struct pt_regs, r8),  offsetof(struct pt_regs, r9)};
  static const int compat_regs[6] = {
      offsetof(struct pt_regs, rbx), offsetof(struct pt_regs, rcx),
      offsetof(struct pt_regs, rdx), offsetof(struct pt_regs, rsi),
      offsetof(struct pt_regs, rdi), offsetof(struct pt_regs, rbp)};
  l->orig_ax = offsetof(struct pt_regs, orig_rax);
  for (int i = 0; i < 6; i++) {
    l->args[i] = arg_regs[i];
    l->compat_args[i] = compat_regs[i];
  }
  return read_task_status(&l->task_status);
}
#endif

const SyscallLayout *syscall_layout(void) {
#if defined(__x86_64__)
  static SyscallLayout layout;
  static int known;   /* 0: not looked yet, 1: usable, -1: not */
  if (!known) known = read_layout(&layout) ? 1 : -1;
  return known > 0 ? &layout : NULL;
#else
  return NULL;
#endif
}

/* ---- targets -------------------------------------------------------- */

int syscall_group_of(const Target *t, int *nr) {
  if (!t->category || !t->event) return 0;
  if (!strcmp(t->category, "raw_syscalls")) {
    if (nr) *nr = -1;
    return !strcmp(t->event, "sys_enter")  ? SYSCALL_EVERY_ENTER
           : !strcmp(t->event, "sys_exit") ? SYSCALL_EVERY_EXIT
                                           : 0;
  }
  if (strcmp(t->category, "syscalls")) return 0;
  int group;
  const char *name;
  if (!strncmp(t->event, "sys_enter_", 10)) {
    group = SYSCALL_ENTER;
    name = t->event + 10;
  } else if (!strncmp(t->event, "sys_exit_", 9)) {
    group = SYSCALL_EXIT;
    name = t->event + 9;
  } else {
    return 0;
  }
  int number = event_number(name);
  if (number < 0 || number >= SYSCALL_NR_WORDS * 64) return 0;
  if (nr) *nr = number;
  return group;
}

extern const Provider tracepoint_provider;

bool syscall_tracepoints(const AttachPoint *ap) {
  return ap->prov == &tracepoint_provider;
}

int syscall_nr_limit(void) {
  int limit = 0;
  for (const SyscallNr *s = syscall_numbers; s->name; s++)
    if (s->nr >= limit) limit = s->nr + 1;
  return limit;
}

bool syscall_raw_serves(const AttachPoint *ap, const Target *t) {
  return ap->raw_syscalls &&
         ((unsigned)syscall_group_of(t, NULL) & ap->raw_syscalls);
}

int syscall_group_count(const Probe *probe, int group) {
  int count = 0;
  for (const AttachPoint *ap = probe->aps; ap; ap = ap->next)
    for (const Target *t = ap->targets; t; t = t->next)
      if (syscall_raw_serves(ap, t) && syscall_group_of(t, NULL) == group)
        count++;
  return count;
}

const char *syscall_group_tracepoint(int group) {
  return group & SYSCALL_ENTERS ? "sys_enter" : "sys_exit";
}

int syscall_group_attach(int group, int prog_fd, LinkSet *links, char *err,
                         size_t errlen) {
  const char *tp = syscall_group_tracepoint(group);
  int fd = bpf_raw_tracepoint_open(tp, prog_fd);
  if (fd < 0) {
    snprintf(err, errlen, "bpf_raw_tracepoint_open(%s): %s", tp,
             strerror(errno));
    return -1;
  }
  links_add(links, fd);
  return 0;
}
