/* iter: BPF iterator probes (iter.c). */
#ifndef LOUPE_ITER_H
#define LOUPE_ITER_H

/* A new fd that runs the iterator prog_fd was linked to as it is read
 * (bpf(BPF_ITER_CREATE)), or -1 with errno set. Each read returns what
 * the program wrote for as many objects as fit; 0 at the end. */
int iter_open(int prog_fd);

/* The BTF id of vmlinux's bpf_iter_NAME when NAME is an iterator loupe
 * can run, else 0. */
int iter_btf_id(const char *name);

#endif
