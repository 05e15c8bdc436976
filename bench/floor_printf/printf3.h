/* SPDX-License-Identifier: GPL-2.0 */
/* The record printf3.bpf.c sends for each openat: what the script prints
 * ("%d %s %d\n", pid, comm, args->flags) and nothing else. The tool has one
 * kind of record, so it carries no header: the ring buffer's own 8-byte
 * record header already gives its length. 24 bytes; the ring takes
 * round_up(8 + 24, 8) = 32 per record. */
#ifndef PRINTF3_H
#define PRINTF3_H

#define TASK_COMM_LEN 16

struct printf3_event {
	int pid;			/* tgid, bpftrace's pid */
	int flags;			/* openat's flags: an int in the syscall */
	char comm[TASK_COMM_LEN];
};

#endif
