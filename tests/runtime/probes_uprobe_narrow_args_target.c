/* probes_uprobe_narrow_args_target: calls narrow() with its six integer
 * arguments of 1, 2 and 4 bytes in the low bytes of registers whose upper
 * bytes are set (the calling convention leaves them undefined), so that a
 * reader that takes more than an argument's own width sees them. */
__attribute__((noinline, used)) int narrow(signed char a, unsigned char b,
                                           short c, unsigned short d, int e,
                                           unsigned int f) {
  return a + b + c + d + e + (int)f;
}

int main(void) {
  long sum;
  /* the stack aligned for the call, as the convention wants */
  __asm__ volatile(
      "mov %%rsp, %%rbx\n\t"
      "and $-16, %%rsp\n\t"
      "movabs $0x123456789abcdeff, %%rdi\n\t" /* a = -1 */
      "movabs $0x123456789abcde80, %%rsi\n\t" /* b = 128 */
      "movabs $0x123456789abc8000, %%rdx\n\t" /* c = -32768 */
      "movabs $0x123456789abcfffe, %%rcx\n\t" /* d = 65534 */
      "movabs $0x12345678fffffff6, %%r8\n\t"  /* e = -10 */
      "movabs $0x12345678fffffff5, %%r9\n\t"  /* f = 4294967285 */
      "call narrow\n\t"
      "mov %%rbx, %%rsp\n\t"
      : "=a"(sum)
      :
      : "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11",
        "memory", "cc");
  return sum == 32872 ? 0 : 1;
}
