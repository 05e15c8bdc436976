/* Unit tests for safe_file: the walk of safe_create (new, existing and
 * linked files, the path's own errors) and its rules in a sticky
 * world-writable directory, every combination of the owners of the link,
 * the file and the directory (root chowns them, so no other user need run
 * anything); and safe_read_file's bounds and file types. Runs in a
 * directory of its own under /tmp. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safe_file.h"
#include "expect.h"

#define OTHER_UID 65534   /* nobody's, on Debian */

static char dir[64];

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputs(text, f);
  fclose(f);
}

static char *text_of(const char *path) {
  static char buf[256];
  FILE *f = fopen(path, "r");
  if (!f) return strcpy(buf, "(missing)");
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

/* safe_create(path) and a write of "new" through it; its reason. */
static bool create_and_write(const char *path, char *why, size_t len) {
  int fd = safe_create(path, why, len);
  if (fd < 0) return false;
  bool ok = write(fd, "new", 3) == 3;
  close(fd);
  return ok;
}

static void test_walk(void) {
  char why[SAFE_WHY_MAX];
  EXPECT("new file", create_and_write("plain", why, sizeof why) &&
                         !strcmp(text_of("plain"), "new"));
  put("plain", "old and longer");
  EXPECT("existing file truncated",
         create_and_write("plain", why, sizeof why) &&
             !strcmp(text_of("plain"), "new"));
  struct stat st;
  EXPECT("created with 0666 less the umask",
         stat("plain", &st) == 0 && (st.st_mode & 07777) == (0666 & ~022));
  mkdir("sub", 0755);
  symlink("sub/../plain", "rel");
  symlink("rel", "chain");
  put("plain", "old");
  EXPECT("relative links, .. inside",
         create_and_write("chain", why, sizeof why) &&
             !strcmp(text_of("plain"), "new"));
  char abs[128];
  snprintf(abs, sizeof abs, "%s/sub/made", dir);
  symlink(abs, "dangling");
  EXPECT("a dangling link creates its target",
         create_and_write("dangling", why, sizeof why) &&
             !strcmp(text_of("sub/made"), "new"));
  EXPECT("through a directory", create_and_write("./sub//x", why, sizeof why)
                                    && !strcmp(text_of("sub/x"), "new"));
  EXPECT("/dev/null", create_and_write("/dev/null", why, sizeof why));
  EXPECT("a directory", !create_and_write("sub", why, sizeof why) &&
                            !strcmp(why, strerror(EISDIR)));
  EXPECT("a trailing /", !create_and_write("plain/", why, sizeof why) &&
                             !strcmp(why, strerror(ENOTDIR)));
  EXPECT("a missing directory",
         !create_and_write("nodir/x", why, sizeof why) &&
             !strcmp(why, strerror(ENOENT)));
  EXPECT("empty", !create_and_write("", why, sizeof why) &&
                      !strcmp(why, strerror(ENOENT)));
  symlink("loop2", "loop1");
  symlink("loop1", "loop2");
  EXPECT("a loop", !create_and_write("loop1", why, sizeof why) &&
                       !strcmp(why, strerror(ELOOP)));
}

/* In a sticky world-writable directory owned by dir_uid: a link owned by
 * link_uid to a file of root's elsewhere; true if loupe writes through
 * it. */
static bool through_link(uid_t dir_uid, uid_t link_uid, char *why,
                         size_t len) {
  mkdir("sticky", 0);
  chmod("sticky", 01777);
  if (chown("sticky", dir_uid, 0) || symlink("../target", "sticky/l") ||
      lchown("sticky/l", link_uid, 0))
    abort();
  put("target", "old");
  bool wrote = create_and_write("sticky/l", why, len);
  unlink("sticky/l");
  rmdir("sticky");
  return wrote && !strcmp(text_of("target"), "new");
}

/* The same for a file owned by file_uid, with nlink links. */
static bool to_file(uid_t dir_uid, uid_t file_uid, bool hardlinked,
                    char *why, size_t len) {
  mkdir("sticky", 0);
  chmod("sticky", 01777);
  if (chown("sticky", dir_uid, 0)) abort();
  put("sticky/f", "old");
  if (chown("sticky/f", file_uid, 0)) abort();
  if (hardlinked && link("sticky/f", "second")) abort();
  bool wrote = create_and_write("sticky/f", why, len) &&
               !strcmp(text_of("sticky/f"), "new");
  unlink("sticky/f");
  unlink("second");
  rmdir("sticky");
  return wrote;
}

static void test_sticky(void) {
  char why[SAFE_WHY_MAX];
  EXPECT("another's link in root's sticky dir",
         !through_link(0, OTHER_UID, why, sizeof why) &&
             strstr(why, "refusing to follow sticky/l: a symlink of uid "
                         "65534 in the sticky world-writable directory "
                         "sticky (as fs.protected_symlinks does)"));
  EXPECT("root's link in root's sticky dir",
         through_link(0, 0, why, sizeof why));
  EXPECT("the dir owner's link", through_link(OTHER_UID, OTHER_UID, why,
                                              sizeof why));
  EXPECT("loupe's user's link in another's sticky dir",
         through_link(OTHER_UID, 0, why, sizeof why));
  mkdir("open", 0777);
  chmod("open", 0777);
  symlink("../target", "open/l");
  lchown("open/l", OTHER_UID, 0);
  EXPECT("another's link where there is no sticky bit (the kernel's rule too)",
         create_and_write("open/l", why, sizeof why));
  EXPECT("another's file",
         !to_file(0, OTHER_UID, false, why, sizeof why) &&
             strstr(why, "refusing to write sticky/f: it belongs to uid "
                         "65534, in the sticky world-writable directory "
                         "sticky (as fs.protected_regular does)"));
  EXPECT("the dir owner's file", to_file(OTHER_UID, OTHER_UID, false, why,
                                         sizeof why));
  EXPECT("root's file", to_file(0, 0, false, why, sizeof why));
  EXPECT("a file with a second hard link",
         !to_file(0, 0, true, why, sizeof why) &&
             strstr(why, "it has 2 hard links"));
  mkdir("sticky", 0);
  chmod("sticky", 01777);
  mkfifo("sticky/p", 0666);
  chown("sticky/p", OTHER_UID, 0);
  EXPECT("another's FIFO (no open that blocks)",
         !create_and_write("sticky/p", why, sizeof why) &&
             strstr(why, "it belongs to uid 65534"));
  unlink("sticky/p");
  rmdir("sticky");
}

static void test_read(void) {
  size_t len = 0;
  struct stat st;
  put("four", "abcd");
  char *t = safe_read_file("four", 4, &len, &st);
  EXPECT("exactly max bytes", t && len == 4 && !strcmp(t, "abcd"));
  free(t);
  errno = 0;
  EXPECT("one byte over max", !safe_read_file("four", 3, &len, &st) &&
                                  errno == EFBIG);
  mkfifo("fifo", 0600);
  errno = 0;
  EXPECT("a FIFO, at once", !safe_read_file("fifo", 100, &len, &st) &&
                                errno == EINVAL);
  errno = 0;
  EXPECT("a directory", !safe_read_file("sub", 100, &len, &st) &&
                            errno == EINVAL);
  errno = 0;
  EXPECT("missing", !safe_read_file("nothing", 100, &len, &st) &&
                        errno == ENOENT);
  /* a file whose size says 0 but that has text: read to its end */
  t = safe_read_file("/proc/self/status", 1 << 16, &len, &st);
  EXPECT("a /proc file", t && len > 0 && strlen(t) == len &&
                             !strncmp(t, "Name:", 5));
  free(t);
  errno = 0;
  EXPECT("a /proc file past max",
         !safe_read_file("/proc/self/status", 10, &len, &st) &&
             errno == EFBIG);
}

int main(void) {
  if (geteuid() != 0) {
    puts("test_safe_file: skipped (needs root to chown)");
    return 0;
  }
  umask(022);
  snprintf(dir, sizeof dir, "/tmp/loupe-safe-file.XXXXXX");
  if (!mkdtemp(dir) || chdir(dir)) abort();
  test_walk();
  test_sticky();
  test_read();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (chdir("/") || system(cmd)) failed++;
  printf("test_safe_file: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
