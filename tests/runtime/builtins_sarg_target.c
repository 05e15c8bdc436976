/* The program builtins_sarg.test traces: many() takes nine arguments, so
 * on x86-64 the last three are passed on the stack. */
__attribute__((noinline)) long many(long a, long b, long c, long d, long e,
                                    long f, long g, long h, long i) {
  __asm__ volatile("" ::: "memory");
  return a + b + c + d + e + f + g + h + i;
}
int main(void) {
  return many(1, 2, 3, 4, 5, 6, -7, 8000000000, 99) == 0;
}
