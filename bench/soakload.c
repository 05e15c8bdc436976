/* The soak's workload (bench/soak.sh builds it with gcc).
 *
 *   soakload spawn RATE     starts RATE short-lived processes a second,
 *                           until killed: each is this program again as
 *                           `soakload work N`, named w<N mod 200> (its
 *                           comm), which calls work("job-N", N) once and
 *                           exits 0.2 s later. On SIGTERM it waits for
 *                           those still running and prints how many it
 *                           started.
 *   soakload work N         the short-lived process
 *
 * The 0.2 s are for loupe to read the process's maps while it runs, as
 * it does for every process a ustack meets: caught or missed depending
 * on how busy the machine is, the maps loupe keeps (and its RSS) would
 * vary with the load rather than with loupe.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* what the soak's uprobe is on: a string and a number */
__attribute__((noinline)) long work(const char *name, long n) {
  __asm__ volatile("" : : "r"(name) : "memory");
  return n;
}

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "work")) {
    long n = atol(argv[2]);
    char comm[16], name[32];
    snprintf(comm, sizeof comm, "w%ld", n % 200);
    prctl(PR_SET_NAME, comm);
    snprintf(name, sizeof name, "job-%ld", n);
    long got = work(name, n);
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    return got == n ? 0 : 1;
  }
  if (argc != 3 || strcmp(argv[1], "spawn")) {
    fprintf(stderr, "usage: soakload spawn RATE | soakload work N\n");
    return 2;
  }
  double rate = atof(argv[2]);
  if (rate <= 0) return 2;
  signal(SIGTERM, on_term);
  signal(SIGINT, on_term);
  long started = 0;
  struct timespec t0, now;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (!stop) {
    char n[24];
    snprintf(n, sizeof n, "%ld", started);
    pid_t pid = fork();
    if (pid == 0) {
      execl("/proc/self/exe", "soakload", "work", n, (char *)NULL);
      _exit(127);
    }
    if (pid > 0) started++;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    /* keep to RATE a second on average, without catching up in bursts
     * after a stall of more than a second */
    clock_gettime(CLOCK_MONOTONIC, &now);
    double elapsed = (now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) / 1e9;
    double ahead = started / rate - elapsed;
    if (ahead < -1) {
      t0.tv_sec += (time_t)(-ahead - 1);
      ahead = -1;
    }
    if (ahead > 0) {
      struct timespec d = {(time_t)ahead, (long)((ahead - (time_t)ahead) * 1e9)};
      nanosleep(&d, NULL);
    }
  }
  while (wait(NULL) > 0) {
  }
  printf("%ld\n", started);
  return 0;
}
