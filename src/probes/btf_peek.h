/* btf_peek: a few named types of the kernel's BTF, and direct members'
 * offsets, read from /sys/kernel/btf/vmlinux without parsing all of it.
 *
 * Parsing the whole file (libbpf's btf__new: a copy, an index and a check
 * of every one of its ~130,000 types) takes several milliseconds, more
 * than all the rest of loupe's start-up; a script that needs only where
 * thread_info.status is does not have to pay it. The types are walked in
 * id order, as libbpf's btf__find_by_name_kind finds the first of a name
 * and kind, and the walk stops once every one asked for is found (the
 * core kernel structs come early). */
#ifndef LOUPE_BTF_PEEK_H
#define LOUPE_BTF_PEEK_H

#include <stdbool.h>

typedef struct BtfPeek {
  const char *name;     /* a struct's or a typedef's name */
  int kind;             /* BTF_KIND_STRUCT or BTF_KIND_TYPEDEF */
  const char *member;   /* a struct's member, named in the struct itself
                           (not inside an anonymous one), or NULL */
  int found;            /* out: the member's byte offset; 0 for a type
                           without `member`; -1 if BTF has no such type */
} BtfPeek;

/* Answers every query of q[0..n). False when it cannot say for certain
 * (the file cannot be mapped, is not BTF as loupe reads it, or a struct
 * has no direct member of that name, which may be inside an anonymous
 * one): the caller then asks the parsed BTF (ctype_kernel_btf). */
bool btf_peek_kernel(BtfPeek *q, int n);

#endif
