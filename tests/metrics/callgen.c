/* A known number of events, as fast as one core makes them:
 *
 *   callgen [-f] N...
 *
 * for each N, waits for SIGUSR1 (send it once /proc/PID/status shows
 * the signal caught, SigCgt bit 0x200: before, it would end the
 * program), then calls getppid() N times in a tight
 * loop (with -f: the function event() instead, for a uprobe) and prints
 * "N RATE" (calls a second, by the monotonic clock). No other system
 * call happens while a loop runs. Used by tests/metrics/workload.sh and
 * bench/metrics.sh. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t go;

__attribute__((noinline)) void event(void) { __asm__ volatile(""); }
static void on_usr1(int sig) { (void)sig; go = 1; }

int main(int argc, char **argv) {
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  sigprocmask(SIG_BLOCK, &usr1, &old);
  signal(SIGUSR1, on_usr1);
  int calls = argc > 1 && !strcmp(argv[1], "-f");
  for (int i = 1 + calls; i < argc; i++) {
    long n = atol(argv[i]);
    while (!go) sigsuspend(&old);   /* no signal lost between test and wait */
    go = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (calls)
      for (long k = n; k > 0; k--) event();
    else
      for (long k = n; k > 0; k--) getppid();
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
    printf("%ld %.0f\n", n, s > 0 ? n / s : 0);
    fflush(stdout);
  }
  while (!go) sigsuspend(&old);   /* stays until killed */
  return 0;
}
