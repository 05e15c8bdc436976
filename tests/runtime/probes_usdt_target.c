/* The program the usdt tests trace: `./prog N [MS]` runs N rounds, then
 * exits; with MS it waits MS milliseconds after each round (for -p tests,
 * which need it running while loupe attaches). Each round i fires:
 *   loupe:tick(i, "hello")           a register and a string pointer
 *   loupe:twice(i) and loupe:twice(7), the same probe inlined at
 *                                    two places, its argument elsewhere
 *   loupe:gated(i)                   only while its semaphore is set
 *   loupe:many(12 arguments)         every size and sign, constants,
 *                                    registers and memory (a global)
 *   other:tick(i)                    the name tick under a second provider
 * and prints nothing, unless the semaphore was ever seen set: then it
 * prints "gated N" at exit, N the rounds it was set in. */
#define _SDT_HAS_SEMAPHORES 1
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sdt.h>
#include <unistd.h>

/* with semaphores on, every probe has one; only gated's is looked at */
#define SEMAPHORE(name) \
  unsigned short name##_semaphore __attribute__((unused, section(".probes")))
SEMAPHORE(loupe_gated);
SEMAPHORE(loupe_tick);
SEMAPHORE(loupe_twice);
SEMAPHORE(loupe_many);
SEMAPHORE(other_tick);

static const char greeting[] = "hello";
volatile int64_t global_count = -77;   /* read through sym(%rip) */

static inline __attribute__((always_inline)) void twice(long v) {
  DTRACE_PROBE1(loupe, twice, v);
}

__attribute__((noinline)) void round_of(int i) {
  DTRACE_PROBE2(loupe, tick, i, greeting);
  twice(i);
  twice(7);
  if (loupe_gated_semaphore) DTRACE_PROBE1(loupe, gated, i);
  int8_t a = -1;
  uint8_t b = 200;
  int16_t c = -300;
  uint16_t d = 60000;
  int32_t e = -70000;
  uint32_t f = 4000000000u;
  int64_t g = -5000000000;
  uint64_t h = 0xfedcba9876543210ull;
  STAP_PROBE12(loupe, many, a, b, c, d, e, f, g, h, (int8_t)-5, i,
               global_count, 42);
  DTRACE_PROBE1(other, tick, i);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 3;
  int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
  int gated = 0;
  /* a probe cannot fault pages in: touch the string's page first */
  const char *volatile where = greeting;
  volatile char first = where[0];
  (void)first;
  for (int i = 0; i < n; i++) {
    round_of(i);
    if (loupe_gated_semaphore) gated++;
    if (pause_ms > 0) usleep(pause_ms * 1000);
  }
  if (gated) printf("gated %d\n", gated);
  return 0;
}
