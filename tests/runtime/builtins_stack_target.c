/* Target of the stack tests: main -> stack_middle -> stack_leaf, with
 * frame pointers, called N times (argv[1]); stack_leaf gets the address
 * of stack_middle, for usym(). It then sleeps argv[2] ms, so that its
 * maps can still be read when loupe prints what it saw. */
#include <stdlib.h>
#include <unistd.h>

unsigned int stack_global = 0x1234abcd;

__attribute__((noinline)) int stack_leaf(void *caller, int i) {
  __asm__ volatile("" ::: "memory");
  return i + (caller != 0);
}

__attribute__((noinline)) int stack_middle(int i) {
  int r = stack_leaf((void *)stack_middle, i);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1, sum = 0;
  for (int i = 0; i < n; i++) sum += stack_middle(i);
  if (argc > 2) usleep(atoi(argv[2]) * 1000);
  return sum == -1;
}
