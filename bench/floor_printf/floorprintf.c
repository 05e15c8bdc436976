// SPDX-License-Identifier: GPL-2.0
/* floorprintf [-m poll|wake] [-B line|full] OBJ: the user-space side of the
 * printf floor. Loads OBJ (printf3.bpf.c built one of its ways) with libbpf,
 * attaches its program, and prints each record of its ring buffer as loupe
 * prints the script's printf: "%d %s %d\n" (pid, comm, flags) on stdout,
 * line-buffered as loupe's and bpftrace's output is by default (a write(2)
 * a line; -B full: flushed after each batch only). Until SIGINT or SIGTERM; then detaches, takes what is still
 * queued, prints "Lost N events" on stdout if the ring refused any (as loupe
 * and bpftrace do), and closes.
 *
 * -m poll (default): for objects that submit with BPF_RB_NO_WAKEUP. The
 *   reader is never woken; it takes the ring's records every 10 ms, as
 *   loupe's reader does while records keep coming (loupe then goes back to
 *   blocking once a poll finds none; this reader never does).
 * -m wake: for objects that submit with flags 0. The reader blocks in
 *   ring_buffer__poll (epoll) and the kernel wakes it when a record arrives
 *   while it has caught up. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "printf3.h"

#define POLL_MS 10

static volatile sig_atomic_t stop;
static void on_signal(int sig) { (void)sig; stop = 1; }

static int on_record(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size == sizeof(struct printf3_event)) {
		const struct printf3_event *e = data;

		printf("%d %s %d\n", e->pid, e->comm, e->flags);
	} else if (size == sizeof(struct printf3_wide)) {
		const struct printf3_wide *e = data;

		if (e->kind == 1 && e->index == 0)
			printf("%lld %s %lld\n", e->pid, e->comm, e->flags);
	}
	return 0;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

int main(int argc, char **argv)
{
	const struct timespec tick = {0, POLL_MS * 1000000L};
	struct ring_buffer *rb = NULL;
	struct bpf_link *link = NULL;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map, *bss = NULL;
	struct sigaction sa;
	int wake = 0, full = 0, opt, err, rc = 1;

	while ((opt = getopt(argc, argv, "m:B:")) != -1) {
		if (opt == 'm' && !strcmp(optarg, "wake"))
			wake = 1;
		else if (opt == 'm' && !strcmp(optarg, "poll"))
			wake = 0;
		else if (opt == 'B' && !strcmp(optarg, "full"))
			full = 1;
		else if (opt == 'B' && !strcmp(optarg, "line"))
			full = 0;
		else
			goto usage;
	}
	if (optind != argc - 1) {
usage:
		fprintf(stderr, "usage: %s [-m poll|wake] [-B line|full] OBJ.bpf.o\n", argv[0]);
		return 1;
	}
	setvbuf(stdout, NULL, full ? _IOFBF : _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: a signal ends the poll */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	libbpf_set_print(libbpf_quiet);

	obj = bpf_object__open_file(argv[optind], NULL);
	if (!obj) {
		fprintf(stderr, "open %s: %s\n", argv[optind], strerror(errno));
		return 1;
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "load %s: %s\n", argv[optind], strerror(-err));
		goto out;
	}
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t n = strlen(name);

		if (n >= 4 && !strcmp(name + n - 4, ".bss"))
			bss = map;
	}
	map = bpf_object__find_map_by_name(obj, "events");
	prog = bpf_object__find_program_by_name(obj, "printf3");
	if (!map || !prog || !bss) {
		fprintf(stderr, "%s: no events map, .bss or printf3 program\n", argv[optind]);
		goto out;
	}
	rb = ring_buffer__new(bpf_map__fd(map), on_record, NULL, NULL);
	if (!rb) {
		fprintf(stderr, "ring_buffer__new: %s\n", strerror(errno));
		goto out;
	}
	link = bpf_program__attach(prog);
	if (!link) {
		fprintf(stderr, "attach: %s\n", strerror(errno));
		goto out;
	}
	fprintf(stderr, "Attached 1 probe\n");

	while (!stop) {
		if (wake) {
			err = ring_buffer__poll(rb, 100);
		} else {
			nanosleep(&tick, NULL);
			err = ring_buffer__consume(rb);
		}
		if (err < 0 && err != -EINTR) {
			fprintf(stderr, "ring buffer: %s\n", strerror(-err));
			break;
		}
		if (err > 0)
			fflush(stdout);
	}
	bpf_link__destroy(link);
	link = NULL;
	ring_buffer__consume(rb);	/* what was sent before the detach */
	{
		__u32 zero = 0;
		__u64 lost = 0;

		if (bpf_map_lookup_elem(bpf_map__fd(bss), &zero, &lost) == 0 && lost)
			printf("Lost %llu events\n", (unsigned long long)lost);
	}
	fflush(stdout);
	rc = 0;
out:
	bpf_link__destroy(link);
	ring_buffer__free(rb);
	bpf_object__close(obj);
	return rc;
}
