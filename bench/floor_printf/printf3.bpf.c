// SPDX-License-Identifier: GPL-2.0
// Hand-written floor for bench/lib.sh's printf3:
//   tracepoint:syscalls:sys_enter_openat { printf("%d %s %d\n", pid, comm, args->flags); }
// libbpf-tools style: reserve a record in the ring buffer, fill it in
// place, submit it.
//
// bench/floor_printf.sh builds it five ways:
//   (default)        the floor: reserve, fill, submit with BPF_RB_NO_WAKEUP;
//                    the reader polls (floorprintf -m poll), as loupe's does
//                    while records keep coming
//   -DUSE_OUTPUT     the record on the stack, sent with bpf_ringbuf_output
//                    (one helper call that copies it; loupe's way)
//   -DWIDE           reserve, fill, submit of loupe's 40-byte layout
//                    (printf3.h: an 8-byte header, 8-byte integers)
//   -DUSE_OUTPUT -DWIDE -DWAKE_GLOBAL
//                    what loupe does per record, written in C: the wide
//                    record on the stack, bpf_ringbuf_output, its flags read
//                    from a global variable (loupe's loupe_wake map value)
//   -DWAKE_FLAGS=0   submit with flags 0: the kernel wakes the reader when
//                    it has caught up (floorprintf -m wake, blocking in epoll)
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "printf3.h"

#ifndef WAKE_FLAGS
#define WAKE_FLAGS BPF_RB_NO_WAKEUP
#endif

#ifdef WIDE
typedef struct printf3_wide event_t;
#else
typedef struct printf3_event event_t;
#endif

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);	/* loupe's default: 1 MB */
} events SEC(".maps");

/* records the ring refused (full); read by the loader at exit */
__u64 lost = 0;

#ifdef WAKE_GLOBAL
/* as loupe's loupe_wake: user space could switch it; nobody does here */
__u64 wake_flags = WAKE_FLAGS;
#define SEND_FLAGS wake_flags
#else
#define SEND_FLAGS WAKE_FLAGS
#endif

static __always_inline void fill(event_t *e, struct trace_event_raw_sys_enter *ctx)
{
#ifdef WIDE
	e->kind = 1;
	e->index = 0;
#endif
	e->pid = bpf_get_current_pid_tgid() >> 32;
#ifdef WIDE
	e->flags = ctx->args[2];	/* the whole slot, as loupe stores it */
#else
	e->flags = (int)ctx->args[2];
#endif
	/* the helper writes all 16 bytes (strscpy_pad): no zeroing first */
	bpf_get_current_comm(e->comm, sizeof(e->comm));
}

SEC("tracepoint/syscalls/sys_enter_openat")
int printf3(struct trace_event_raw_sys_enter *ctx)
{
#ifdef USE_OUTPUT
	event_t e;

	fill(&e, ctx);
	if (bpf_ringbuf_output(&events, &e, sizeof(e), SEND_FLAGS))
		__sync_fetch_and_add(&lost, 1);
#else
	event_t *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&lost, 1);
		return 0;
	}
	fill(e, ctx);
	bpf_ringbuf_submit(e, SEND_FLAGS);
#endif
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
