#!/usr/bin/env python3
"""Runs a command with the bpf() system call missing, as on a kernel built
without CONFIG_BPF_SYSCALL: a seccomp filter makes bpf() fail with ENOSYS.

    no_bpf_seccomp.py COMMAND [ARG...]

With ENOSYS_NR set, the system call of that number goes missing instead
(437: openat2, as on kernels before 5.6). x86-64 only (the filter names
calls by their numbers there); exits 77 on other machines. Used by
tests/faults/no_bpf.sh and tests/faults/no_openat2.sh."""
import ctypes
import errno
import os
import platform
import sys

if platform.machine() != "x86_64":
    print("needs x86-64")
    sys.exit(77)

AUDIT_ARCH_X86_64 = 0xC000003E
NR_MISSING = int(os.environ.get("ENOSYS_NR", "321"))   # bpf()
LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06
SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x00050000, 0x7FFF0000


class SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8),
                ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort),
                ("filter", ctypes.POINTER(SockFilter))]


program = [
    SockFilter(LD_W_ABS, 0, 0, 4),                   # the architecture
    SockFilter(JEQ_K, 0, 3, AUDIT_ARCH_X86_64),      # other: allow
    SockFilter(LD_W_ABS, 0, 0, 0),                   # the call's number
    SockFilter(JEQ_K, 0, 1, NR_MISSING),
    SockFilter(RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOSYS),
    SockFilter(RET_K, 0, 0, SECCOMP_RET_ALLOW),
]
filters = (SockFilter * len(program))(*program)
fprog = SockFprog(len(program), filters)
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
if (libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or
        libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER,
                   ctypes.byref(fprog), 0, 0) != 0):
    print("cannot install a seccomp filter:",
          os.strerror(ctypes.get_errno()))
    sys.exit(77)
os.execvp(sys.argv[1], sys.argv[1:])
