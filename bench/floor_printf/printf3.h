/* SPDX-License-Identifier: GPL-2.0 */
/* The records printf3.bpf.c sends for each openat: what the script prints
 * ("%d %s %d\n", pid, comm, args->flags).
 *
 * struct printf3_event is the floor's: the fields at their own widths and
 * nothing else. The tool has one kind of record, so it carries no header:
 * the ring buffer's own 8-byte record header already gives its length.
 * 24 bytes; the ring takes round_up(8 + 24, 8) = 32 per record.
 *
 * struct printf3_wide is loupe's layout of the same record (-DWIDE): its
 * 8-byte EventHeader (kind 1 = printf, index 0 = the first printf), then
 * every integer as 8 bytes. 40 bytes, 48 in the ring. The loader tells the
 * two apart by the record's size. */
#ifndef PRINTF3_H
#define PRINTF3_H

#define TASK_COMM_LEN 16

struct printf3_event {
	int pid;			/* tgid, bpftrace's pid */
	int flags;			/* openat's flags: an int in the syscall */
	char comm[TASK_COMM_LEN];
};

struct printf3_wide {
	unsigned int kind, index;
	long long pid;
	char comm[TASK_COMM_LEN];
	long long flags;
};

#endif
