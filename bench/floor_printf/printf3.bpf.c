// SPDX-License-Identifier: GPL-2.0
// Hand-written floor for bench/lib.sh's printf3:
//   tracepoint:syscalls:sys_enter_openat { printf("%d %s %d\n", pid, comm, args->flags); }
// libbpf-tools style: reserve a record in the ring buffer, fill it in
// place, submit it.
//
// Built three ways by bench/floor_printf.sh:
//   (default)        reserve, fill, submit with BPF_RB_NO_WAKEUP: the reader
//                    polls (floorprintf -m poll), as loupe's does while records
//                    keep coming
//   -DWAKE_FLAGS=0   submit with flags 0: the kernel wakes the reader when it
//                    has caught up (floorprintf -m wake, blocking in epoll)
//   -DUSE_OUTPUT     the record on the stack, sent with bpf_ringbuf_output
//                    (one helper call that copies it; loupe's way)
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "printf3.h"

#ifndef WAKE_FLAGS
#define WAKE_FLAGS BPF_RB_NO_WAKEUP
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);	/* loupe's default: 1 MB */
} events SEC(".maps");

/* records the ring refused (full); read by the loader at exit */
__u64 lost = 0;

SEC("tracepoint/syscalls/sys_enter_openat")
int printf3(struct trace_event_raw_sys_enter *ctx)
{
#ifdef USE_OUTPUT
	struct printf3_event e;

	e.pid = bpf_get_current_pid_tgid() >> 32;
	e.flags = (int)ctx->args[2];
	bpf_get_current_comm(e.comm, sizeof(e.comm));
	if (bpf_ringbuf_output(&events, &e, sizeof(e), WAKE_FLAGS))
		__sync_fetch_and_add(&lost, 1);
#else
	struct printf3_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	e->pid = bpf_get_current_pid_tgid() >> 32;
	e->flags = (int)ctx->args[2];
	/* the helper writes all 16 bytes (strscpy_pad): no zeroing first */
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, WAKE_FLAGS);
#endif
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
