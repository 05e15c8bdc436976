/* The program builtins_usym_hostile_maps.test traces: it loads the
 * library LIB (dlopen), says "ready", waits until the file GO exists
 * (the test has deleted LIB and planted a symlink to another ELF file
 * under its name meanwhile), then calls report() with the address of
 * the library's loupe_victim_func every 50 ms until killed. */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>

__attribute__((noinline)) void report(void *fn) {
  __asm__ volatile("" : : "r"(fn) : "memory");
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  void *lib = dlopen(argv[1], RTLD_NOW);
  void *fn = lib ? dlsym(lib, "loupe_victim_func") : NULL;
  if (!fn) return 1;
  printf("ready\n");
  fflush(stdout);
  while (access(argv[2], F_OK) != 0) usleep(20000);
  for (;;) {
    report(fn);
    usleep(50000);
  }
}
