/* list: what `loupe -l` prints (see list.c). */
#ifndef LOUPE_LIST_H
#define LOUPE_LIST_H

#include <stdio.h>

#include "probes/provider.h"

/* Lists the probes (or struct definitions) that pattern names: a glob
 * over probe names, "struct NAME", or several of these separated by
 * commas; NULL or "" lists every probe. Returns 0, or 1 after an error
 * message. */
int list_probes(const char *pattern, const Settings *st, FILE *out);

/* -lv: a probe's arguments, "    TYPE NAME" a line. */
void list_fields(const TpFormat *fmt, FILE *out);

/* -lv of a kprobe: the parameters of kernel function `func` (of module
 * `module`, NULL for vmlinux or any) as its BTF declares them, as
 * list_fields prints them; nothing if BTF does not have it (fentry.c). */
void list_kernel_func_params(const char *module, const char *func,
                             FILE *out);

/* The C text of BTF type id ("struct sk_buff *", "const char *", "u64",
 * "char[16]"); a function pointer is "void *". */
struct btf;
void btf_type_text(const struct btf *btf, int id, char *buf, size_t len);

#endif
