/* Known system calls with known arguments, for the tests that compare
 * raw_syscalls:sys_enter/sys_exit through the raw tracepoints with their
 * perf events: after a byte on stdin (when an argument says so, so that a
 * tracer can attach to it first),
 *   - 5 x getuid(11, -22, 0x3333333333, 44, 55, -1): 64-bit, extra
 *     arguments ignored by the kernel but in the registers all the same;
 *   - 3 x close(-1, 2, 3, 4, 5, 6): fails with EBADF;
 *   - 2 x a 32-bit getuid (int $0x80, number 24) with 101..106 in
 *     ebx, ecx, edx, esi, edi, ebp: TS_COMPAT, the arguments in other
 *     registers; skipped when the kernel has no 32-bit system calls.
 * Built with -mno-red-zone: the int $0x80 sequence pushes rbp. */
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static long compat_getuid(void) {
  long ret;
  long bp = 106;
  __asm__ volatile("push %%rbp\n\t"
                   "mov %[bp], %%rbp\n\t"
                   "int $0x80\n\t"
                   "pop %%rbp"
                   : "=a"(ret)
                   : "a"(24L), "b"(101L), "c"(102L), "d"(103L), "S"(104L),
                     "D"(105L), [bp] "r"(bp)
                   : "memory", "cc", "r8", "r9", "r10", "r11");
  return ret;
}

int main(int argc, char **argv) {
  (void)argv;
  char c;
  if (argc > 1 && read(0, &c, 1) != 1) return 1;
  for (int i = 0; i < 5; i++)
    syscall(SYS_getuid, 11L, -22L, 0x3333333333L, 44L, 55L, -1L);
  for (int i = 0; i < 3; i++) syscall(SYS_close, -1L, 2L, 3L, 4L, 5L, 6L);
  for (int i = 0; i < 2; i++) compat_getuid();
  return 0;
}
