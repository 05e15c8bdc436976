/* The program the uprobe tests trace: `./prog N` calls loupe_target(i,
 * "hello") and loupe_other(i) for i = 0 .. N-1, then exits. */
#include <stdlib.h>

static const char greeting[] = "hello";

__attribute__((noinline)) int loupe_target(int x, const char *s) {
  __asm__ volatile("" ::: "memory");   /* keep the call and its body */
  return x * 2 + (s[0] == 'h');
}

__attribute__((noinline)) int loupe_other(int x) {
  __asm__ volatile("" ::: "memory");
  return x + 1;
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  /* A probe cannot fault pages in: touch the string's page first, or the
   * first str(arg1) may read nothing. */
  const char *volatile where = greeting;
  volatile char first = where[0];
  int sum = first;
  for (int i = 0; i < n; i++) sum += loupe_target(i, greeting) + loupe_other(i);
  return sum == -1;
}
