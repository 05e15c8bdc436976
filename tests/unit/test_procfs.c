/* procfs: paths resolved inside a root by hand (the walk for kernels
 * without openat2) never leave it, whatever symlinks and ".." say; only
 * regular files are opened; maps lines are parsed whole. Needs no root. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/procfs.h"

#include "expect.h"

static char top[64];   /* the scratch directory; root/ inside it */

static void make_file(const char *rel, const char *text) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", top, rel);
  FILE *f = fopen(path, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

static void make_link(const char *target, const char *rel) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", top, rel);
  if (symlink(target, path) != 0) perror(path);
}

static void make_dir(const char *rel) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", top, rel);
  mkdir(path, 0755);
}

/* The tree: root/lib/inside.so, and outside the root top/secret and a
 * top/lib/inside.so of its own, which a walk that escaped would find. */
static void build_tree(void) {
  snprintf(top, sizeof top, "/tmp/loupe-procfs.XXXXXX");
  if (!mkdtemp(top)) abort();
  make_dir("root");
  make_dir("root/lib");
  make_dir("root/opt");
  make_dir("lib");
  make_file("root/lib/inside.so", "inside\n");
  make_file("lib/inside.so", "outside\n");
  make_file("secret", "secret\n");
  make_link("/lib/inside.so", "root/opt/absolute");
  make_link("../../../../../secret", "root/opt/dotdot");
  make_link("/../../secret", "root/opt/rooted_dotdot");
  make_link("/lib", "root/opt/libdir");
  make_link("loop", "root/opt/loop");
  make_link("../lib/inside.so", "root/opt/relative");
  char fifo[PATH_MAX];
  snprintf(fifo, sizeof fifo, "%s/root/fifo", top);
  mkfifo(fifo, 0600);
}

/* What the file open as O_PATH descriptor fd holds ("" if none). */
static const char *contents(int fd) {
  static char buf[64];
  buf[0] = '\0';
  char self[64];
  snprintf(self, sizeof self, "/proc/self/fd/%d", fd);
  int rd = open(self, O_RDONLY | O_NONBLOCK);
  if (rd >= 0) {
    ssize_t n = read(rd, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(rd);
  }
  return buf;
}

/* The walk from root of path: the contents of what it found, or "" with
 * *err the errno. */
static const char *walk(int rootfd, const char *path, int *err) {
  int fd = procfs_walk_in_root(rootfd, path);
  *err = fd < 0 ? errno : 0;
  if (fd < 0) return "";
  const char *c = contents(fd);
  close(fd);
  return c;
}

static void test_walk(void) {
  char root[PATH_MAX];
  snprintf(root, sizeof root, "%s/root", top);
  int rootfd = open(root, O_PATH | O_DIRECTORY);
  EXPECT(__func__, rootfd >= 0);
  int err;
  EXPECT(__func__, !strcmp(walk(rootfd, "/lib/inside.so", &err), "inside\n"));
  /* an absolute symlink is read from the root, not from loupe's "/" */
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/absolute", &err), "inside\n"));
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/libdir/inside.so", &err), "inside\n"));
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/relative", &err), "inside\n"));
  EXPECT(__func__, !strcmp(walk(rootfd, "/../../lib/inside.so", &err), "inside\n"));
  /* ".." at the root stays there: the secret beside it is out of reach */
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/dotdot", &err), "") && err == ENOENT);
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/rooted_dotdot", &err), "") &&
        err == ENOENT);
  EXPECT(__func__, !strcmp(walk(rootfd, "/../secret", &err), "") && err == ENOENT);
  EXPECT(__func__, !strcmp(walk(rootfd, "/opt/loop", &err), "") && err == ELOOP);
  EXPECT(__func__, !strcmp(walk(rootfd, "/lib/inside.so/x", &err), "") &&
        err == ENOTDIR);
  close(rootfd);
}

/* A FIFO is refused at once (an open for reading would wait for a
 * writer), and so is a directory. */
static void test_only_regular_files(void) {
  char path[PATH_MAX], err[PATH_MAX + 100] = "";
  snprintf(path, sizeof path, "%s/root/fifo", top);
  EXPECT(__func__, procfs_open(0, path, err, sizeof err) < 0);
  EXPECT(__func__, strstr(err, "is not a regular file") != NULL);
  snprintf(path, sizeof path, "%s/root", top);
  EXPECT(__func__, procfs_open(0, path, err, sizeof err) < 0);
  snprintf(path, sizeof path, "%s/root/lib/inside.so", top);
  int fd = procfs_open(0, path, err, sizeof err);
  EXPECT(__func__, fd >= 0);
  /* kept once per file, its name for messages */
  const char *kept = procfs_keep(fd, "/lib/inside.so", err, sizeof err);
  EXPECT(__func__, kept && !strncmp(kept, "/proc/self/fd/", 14));
  EXPECT(__func__, kept && !strcmp(procfs_name(kept), "/lib/inside.so"));
  const char *again = procfs_file(0, path, err, sizeof err);
  EXPECT(__func__, again && kept && !strcmp(again, kept));
}

static bool parses(const char *text, const char *path) {
  char line[PATH_MAX + 200];
  snprintf(line, sizeof line, "%s", text);
  ProcMapping m = {0};
  bool ok = procfs_parse_maps_line(line, &m);
  return path ? ok && !strcmp(m.path, path) : !ok;
}

static void test_maps_lines(void) {
  EXPECT(__func__, parses("7f0000001000-7f0000002000 r-xp 00001000 08:01 1234    "
               "                  /usr/lib/libc.so.6", "/usr/lib/libc.so.6"));
  EXPECT(__func__, parses("7f0000001000-7f0000002000 r-xp 00001000 08:01 1234 "
               "/a b/with space", "/a b/with space"));
  EXPECT(__func__, parses("7f0000001000-7f0000002000 r-xp 00000000 00:00 0", NULL));
  EXPECT(__func__, parses("7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0    "
               "      [stack]", NULL));
  EXPECT(__func__, parses("7f0000001000-7f0000002000 r-xp 00001000 08:01 1234 "
               "/tmp/libgone.so (deleted)", NULL));
  EXPECT(__func__, parses("garbage /etc/shadow", NULL));
  char longline[PATH_MAX + 200];
  int n = snprintf(longline, sizeof longline,
                   "7f0000001000-7f0000002000 r-xp 0 08:01 1 /");
  memset(longline + n, 'a', PATH_MAX);
  longline[n + PATH_MAX - 1] = '\0';   /* a path of PATH_MAX bytes */
  EXPECT(__func__, parses(longline, NULL));
  ProcMapping m;
  char line[] = "1000-2000 r--p 0 08:01 1 /x";
  EXPECT(__func__, procfs_parse_maps_line(line, &m) && m.start == 0x1000 &&
        m.end == 0x2000 && m.dev_major == 8 && m.dev_minor == 1 &&
        m.inode == 1);
}

int main(void) {
  build_tree();
  test_walk();
  test_only_regular_files();
  test_maps_lines();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", top);
  if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", top);
  printf("test_procfs: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
