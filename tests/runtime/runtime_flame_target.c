/* Target of the folded-stack and flame graph tests: known call chains,
 * with frame pointers. main calls path_a 3 times (main -> path_a ->
 * flame_leaf) and path_b 2 times (main -> path_b -> flame_work ->
 * flame_leaf), then sleeps argv[1] ms so its maps can be read at exit. */
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) int flame_leaf(int i) {
  __asm__ volatile("" ::: "memory");
  return i + 1;
}

__attribute__((noinline)) int flame_work(int i) {
  int r = flame_leaf(i);
  __asm__ volatile("" ::: "memory");
  return r + 1;
}

__attribute__((noinline)) int path_a(int i) {
  int r = flame_leaf(i);
  __asm__ volatile("" ::: "memory");
  return r + 2;
}

__attribute__((noinline)) int path_b(int i) {
  int r = flame_work(i);
  __asm__ volatile("" ::: "memory");
  return r + 3;
}

int main(int argc, char **argv) {
  int sum = 0;
  for (int i = 0; i < 3; i++) sum += path_a(i);
  for (int i = 0; i < 2; i++) sum += path_b(i);
  if (argc > 1) usleep(atoi(argv[1]) * 1000);
  return sum == -1;
}
