/* The program the uprobe tests trace: `./prog N` calls loupe_target(i,
 * "hello") and loupe_other(i) for i = 0 .. N-1, then exits; `./prog N MS`
 * waits MS milliseconds after each pair of calls (for -p tests, which
 * need it running while loupe attaches). */
#include <stdlib.h>
#include <unistd.h>

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
  int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
  for (int i = 0; i < n; i++) {
    sum += loupe_target(i, greeting) + loupe_other(i);
    if (pause_ms > 0) usleep(pause_ms * 1000);
  }
  return sum == -1;
}
