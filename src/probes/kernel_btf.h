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

/* A new fd for the kernel's BTF object of `module` (for a program's
 * attach_btf_obj_fd), or -1 if it cannot be had. */
int kernel_btf_obj_fd(const char *module);

#endif
