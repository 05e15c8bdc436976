/* syscalls: the syscalls:sys_enter_* and sys_exit_* tracepoints served by
 * one raw tracepoint program (sys_enter, sys_exit) instead of one perf
 * event each.
 *
 * Why: when the last perf user of a tracepoint goes, the kernel waits for
 * an RCU grace period under one mutex, tracepoint after tracepoint, so
 * `tracepoint:syscalls:sys_enter_*` (360 events) took 9 s to detach. All
 * those events are fed by the raw tracepoints sys_enter(regs, id) and
 * sys_exit(regs, ret); a program there that keeps the same syscalls, skips
 * what the syscall events skip and reads their fields from the registers
 * sees the same events, and detaches at once.
 *
 * The raw_syscalls:sys_enter and sys_exit tracepoints ARE those raw
 * tracepoints' events, for every system call (32-bit ones too): a program
 * on the raw tracepoint sees the same events without the cost of a perf
 * event (about 30 ns each), so a probe on one of them whose body reads
 * only what the raw tracepoint gives takes it, whatever it counts.
 *
 * x86-64 only (numbers from <asm/unistd_64.h> and registers from
 * <asm/ptrace.h> at build time, thread_info.status from the kernel's BTF);
 * elsewhere every target keeps its perf event. */
#ifndef LOUPE_SYSCALLS_H
#define LOUPE_SYSCALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "probes/provider.h"

/* The groups, as bits of AttachPoint.raw_syscalls: the syscalls:sys_enter_*
 * and sys_exit_* tracepoints, and raw_syscalls:sys_enter and sys_exit,
 * which fire for every system call. */
enum {
  SYSCALL_ENTER = 1,
  SYSCALL_EXIT = 2,
  SYSCALL_EVERY_ENTER = 4,
  SYSCALL_EVERY_EXIT = 8,
};
#define SYSCALL_GROUP_LAST SYSCALL_EVERY_EXIT
#define SYSCALL_NUMBERED (SYSCALL_ENTER | SYSCALL_EXIT)
#define SYSCALL_EVERY (SYSCALL_EVERY_ENTER | SYSCALL_EVERY_EXIT)
#define SYSCALL_ENTERS (SYSCALL_ENTER | SYSCALL_EVERY_ENTER)

/* A group of syscalls:* tracepoints goes through the raw tracepoint when
 * the probe has at least this many: below it, the perf events cost less,
 * and 8 of them detach in about 0.2 s.
 *
 * Measured (bench/hook.sh's dd of 1,000,000 bytes, 2,000,000 system
 * calls, CPU time, medians of 5, 6.18 on 2 shared vCPUs, with loupe built
 * with this at 1 for the raw path): once a syscall tracepoint is on,
 * every system call pays for it, and the raw program, which runs for each
 * and filters by number, costs about 90 ns more per call it does not
 * want than the perf events' own filter (a bitmap in the kernel):
 * sys_enter_openat, none of dd's, +10 ns a call on perf events, +100 on
 * the raw path; sys_exit_openat +15, +105. A call it wants is about 50 ns
 * cheaper: sys_enter_read and sys_enter_write, all of them, +225 and
 * +175; sys_enter_write, half of them, +95 and +140. The raw path wins
 * only when about two calls in three are traced, which one or a few
 * tracepoints seldom are; many are chosen for their detach time. */
#define SYSCALL_RAW_MIN_TARGETS 9

/* Bit 1 of thread_info.status on x86-64 (TS_COMPAT): a 32-bit system
 * call is running. The syscall events ignore those (the kernel's
 * trace_get_syscall_nr), and so does the raw program. */
#define SYSCALL_TS_COMPAT 0x0002

/* Where the raw program reads what the syscall events record: byte
 * offsets in struct pt_regs, and of thread_info.status in task_struct. */
typedef struct SyscallLayout {
  int orig_ax;          /* the system call's number */
  int args[6];          /* di, si, dx, r10, r8, r9: its arguments */
  int compat_args[6];   /* bx, cx, dx, si, di, bp: a 32-bit call's */
  int task_status;      /* task_struct.thread_info.status */
} SyscallLayout;

/* The layout, or NULL when this machine cannot take the raw path (not
 * x86-64, no kernel BTF, no sys_enter/sys_exit raw tracepoints). */
const SyscallLayout *syscall_layout(void);

/* The group of tracepoint target t that the raw path can serve:
 * SYSCALL_ENTER or SYSCALL_EXIT with its system call number in *nr,
 * SYSCALL_EVERY_ENTER or SYSCALL_EVERY_EXIT (raw_syscalls) with -1 there;
 * 0 for any other target (other categories, or a system call whose number
 * loupe does not know for certain: those keep their perf events). */
int syscall_group_of(const Target *t, int *nr);

/* Whether ap's targets are tracepoints, which syscall_group_of may find
 * the raw path can serve. */
bool syscall_tracepoints(const AttachPoint *ap);

/* The x86-64 number of system call `name` ("nanosleep", as __NR_nanosleep
 * names it), or -1 if loupe does not know it. */
int syscall_number(const char *name);

/* The name of x86-64 system call nr ("read"), or NULL if loupe does not
 * know it. */
const char *syscall_name_of(int nr);

/* Numbers loupe may know are below SYSCALL_NR_WORDS * 64. */
#define SYSCALL_NR_WORDS 16

/* One more than the highest system call number loupe knows. */
int syscall_nr_limit(void);

/* Whether t is one of the targets that ap's raw programs serve (codegen
 * chose them in ap->raw_syscalls): they get no perf event. */
bool syscall_raw_serves(const AttachPoint *ap, const Target *t);

/* How many of the probe's targets the raw program of `group` serves. */
int syscall_group_count(const Probe *probe, int group);

/* Iterates over the groups, one bit after the other. */
#define FOR_EACH_SYSCALL_GROUP(group) \
  for (int group = SYSCALL_ENTER; group <= SYSCALL_GROUP_LAST; group <<= 1)

/* "sys_enter" or "sys_exit": the raw tracepoint of a group. */
const char *syscall_group_tracepoint(int group);

/* Attaches the program of a group to its raw tracepoint, adding the link
 * to links. Returns 0, or -1 with a message in err. */
int syscall_group_attach(int group, int prog_fd, LinkSet *links, char *err,
                         size_t errlen);

#endif
