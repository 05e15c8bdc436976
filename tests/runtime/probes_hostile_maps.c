/* A traced process that lies with its /proc/PID/maps, for the tests of
 * how loupe opens the files a process names (src/sym/procfs.c).
 *
 *   ./hostile map FILE...
 *       maps each FILE (read-only), writes "ready" to stdout, and sleeps
 *       until killed; what happens to the files afterwards is the test's.
 *   ./hostile long SRC SPLIT INJECT
 *       copies SRC to a file so deep below the current directory that
 *       its maps line is longer than SPLIT + 73 bytes (73: where a maps
 *       line's path starts on x86-64), its path holding at index SPLIT
 *       the middle of one long directory name, followed by the
 *       directories of the relative path INJECT: a reader that splits
 *       the line there reads "/INJECT" as a path of its own. Then maps
 *       that file as `map` does. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *what) {
  perror(what);
  exit(1);
}

static void map_file(const char *path) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) die(path);
  if (mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0) ==
      MAP_FAILED)
    die("mmap");
  close(fd);
}

/* Makes directory name in the current one and goes into it. */
static void enter(const char *name) {
  if ((mkdir(name, 0755) < 0 && access(name, F_OK) < 0) || chdir(name) < 0)
    die(name);
}

static void enter_run(char c, size_t len) {
  char name[256];
  memset(name, c, len);
  name[len] = '\0';
  enter(name);
}

static void make_long(const char *src, size_t split, char *inject) {
  int in = open(src, O_RDONLY);
  if (in < 0) die(src);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) die("getcwd");
  size_t len = strlen(cwd);
  /* directories of 250 bytes, then one that ends 100 bytes before the
   * split, then a name of 200 bytes that holds the split */
  while (len + 251 + 101 < split) {
    enter_run('a', 250);
    len += 251;
  }
  size_t filler = split - 100 - len - 1;
  if (filler > 0) enter_run('f', filler);
  enter_run('b', 200);
  char *last = strrchr(inject, '/');
  *last = '\0';
  for (char *c = strtok(inject, "/"); c; c = strtok(NULL, "/")) enter(c);
  int out = open(last + 1, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0) die(last + 1);
  char buf[65536];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, (size_t)n) != n) die("write");
  close(out);
  close(in);
  map_file(last + 1);
}

int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "map")) {
    for (int i = 2; i < argc; i++) map_file(argv[i]);
  } else if (argc == 5 && !strcmp(argv[1], "long")) {
    make_long(argv[2], strtoul(argv[3], NULL, 10), argv[4]);
  } else {
    fprintf(stderr, "usage: %s map FILE... | long SRC SPLIT INJECT\n",
            argv[0]);
    return 2;
  }
  printf("ready\n");
  fflush(stdout);
  for (;;) pause();
}
