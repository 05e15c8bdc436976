"""System calls whose arguments are negative values of signed types, each
passed as a whole 64-bit register (through libc's syscall()), for
probes_tracepoint_syscall_arg_sign: setpgid(-5, -6) (pid_t),
clock_gettime(-7) (clockid_t), ptrace(-9) (long), pread64(-1, 0, 1, -3)
(loff_t), lseek(-1, -3, 1) (off_t) and openat(-77, "/nonexistent",
0x1234) (int). All fail, changing nothing."""
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
libc.setpgid(L(-5), L(-6))
libc.syscall(L(228), L(-7), L(0))                      # clock_gettime
libc.syscall(L(101), L(-9), L(0), L(0), L(0))          # ptrace
libc.syscall(L(17), L(-1), L(0), L(1), L(-3))          # pread64
libc.syscall(L(8), L(-1), L(-3), L(1))                 # lseek
libc.syscall(L(257), L(-77), b"/nonexistent", L(0x1234), L(0))   # openat
