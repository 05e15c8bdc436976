/* Target of the watchpoint tests: maps a page at 0x10000000, then writes
 * the 8 bytes at its start `rounds` times (argv[1], default 3), 50 ms
 * apart, from its main thread, and, with a second argument, as many times
 * from a thread it starts after the first round. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile uint64_t *slot;
static int rounds = 3;

static void *writer(void *arg) {
  (void)arg;
  for (int i = 0; i < rounds; i++) {
    *slot = 100 + i;
    usleep(50 * 1000);
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc > 1) rounds = atoi(argv[1]);
  slot = mmap((void *)0x10000000, 4096, PROT_READ | PROT_WRITE,
              MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (slot == MAP_FAILED) return 1;
  usleep(100 * 1000);
  writer(NULL);
  if (argc > 2) {
    pthread_t t;
    pthread_create(&t, NULL, writer, NULL);
    pthread_join(t, NULL);
  }
  return 0;
}
