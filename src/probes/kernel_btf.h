/* kernel_btf: the kernel's BTF, vmlinux's and each module's, and a
 * function prototype's parameters as the fields of `args` — shared by the
 * probes whose context is an array of u64 slots (rawtracepoint, fentry,
 * fexit). */
#ifndef LOUPE_KERNEL_BTF_H
#define LOUPE_KERNEL_BTF_H

#include <stdbool.h>

#include "probes/provider.h"

struct btf;

typedef struct KernelBtf {
  char *module;        /* "vmlinux", or the module's name */
  struct btf *btf;     /* a module's is split from vmlinux's */
  int first;           /* its own types start here (1 for vmlinux) */
} KernelBtf;

/* vmlinux first, then the modules of /sys/kernel/btf in name order,
 * parsed once; *n is 0 when the kernel has no BTF. */
const KernelBtf *kernel_btfs(int *n);

/* The parameters of FUNC_PROTO `proto` from the `skip`th on as fields:
 * each in a u64 slot of the context (two for a 9- to 16-byte struct),
 * named as the prototype names them (when `named`), else arg0, arg1...;
 * with_return adds a last field "retval" (is_return) for the return
 * value, which follows them. */
TpFormat *btf_proto_format(const struct btf *btf, int proto, int skip,
                           bool named, bool with_return);

/* The Target.data of a probe whose program loads for a kernel BTF type
 * (fentry, fexit, iter: the function; rawtracepoint: its
 * btf_trace_EVENT typedef, to load as tp_btf), in the BTF of module
 * Target.category ("vmlinux": the kernel's), or of the running BPF
 * program prog_id (fentry:bpf). */
typedef struct BtfTarget {
  uint32_t id;
  uint32_t prog_id;
} BtfTarget;

void *btf_target_new(uint32_t id, uint32_t prog_id);
/* The Provider's attach_btf for targets made so. */
uint32_t btf_target_attach(const Target *t, bool tracing,
                           uint32_t *prog_id);

/* A new fd for the kernel's BTF object of `module` (for a program's
 * attach_btf_obj_fd), or -1 if it cannot be had. */
int kernel_btf_obj_fd(const char *module);

#endif
