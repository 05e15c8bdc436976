#define _GNU_SOURCE   /* O_PATH */
#include "util/safe_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#ifndef PROC_SUPER_MAGIC
#define PROC_SUPER_MAGIC 0x9fa0
#endif

/* As the kernel's path walk: more symlinks than this is ELOOP. */
#define MAX_LINKS 40
/* Tries when a name keeps appearing between the look and the O_EXCL. */
#define MAX_CREATE_RACES 5

/* Where the walk of a path is: the directory reached, the text still to
 * walk, and that directory's path as walked, for messages. */
typedef struct Walk {
  int dir;
  char *rest;
  char shown[PATH_MAX];
  int links;
} Walk;

/* The walked directory's path for messages ("." for where loupe is). */
static const char *shown_dir(const Walk *w) {
  return w->shown[0] ? w->shown : ".";
}

static bool sticky_world_writable(const struct stat *dir) {
  return (dir->st_mode & S_ISVTX) && (dir->st_mode & S_IWOTH);
}

/* fs.protected_symlinks's rule. */
static bool may_follow(const struct stat *dir, const struct stat *link) {
  return !sticky_world_writable(dir) || link->st_uid == dir->st_uid ||
         link->st_uid == geteuid();
}

/* The name `name` in the walked directory, for messages. */
static void shown_name(const Walk *w, const char *name, char *out,
                       size_t len) {
  size_t n = strlen(w->shown);
  const char *sep = n == 0 || w->shown[n - 1] == '/' ? "" : "/";
  /* cut short in a message only: the walk itself holds the whole path */
  snprintf(out, len, "%.*s%s%s", (int)(len / 2), w->shown, sep, name);
}

/* fs.protected_regular's and _fifos's rule, and a hard link there; false
 * after saying why. */
static bool may_open_existing(const Walk *w, const char *name,
                              const struct stat *dir, const struct stat *st,
                              char *why, size_t whylen) {
  if (!sticky_world_writable(dir) ||
      !(S_ISREG(st->st_mode) || S_ISFIFO(st->st_mode)))
    return true;
  char full[PATH_MAX];
  shown_name(w, name, full, sizeof full);
  if (st->st_uid != dir->st_uid && st->st_uid != geteuid()) {
    snprintf(why, whylen, "refusing to write %s: it belongs to uid %u, in "
             "the sticky world-writable directory %s (as "
             "fs.protected_regular does)", full, (unsigned)st->st_uid,
             shown_dir(w));
    return false;
  }
  if (S_ISREG(st->st_mode) && st->st_nlink > 1) {
    snprintf(why, whylen, "refusing to write %s: it has %lu hard links, "
             "in the sticky world-writable directory %s", full,
             (unsigned long)st->st_nlink, shown_dir(w));
    return false;
  }
  return true;
}

/* Replaces the walk's text by the link's target, then what followed the
 * link (after a '/' unless the link was the last name); an absolute target
 * walks from / again. */
static int splice_link(Walk *w, int link_fd, const char *after, bool last) {
  char target[PATH_MAX];
  ssize_t n = readlinkat(link_fd, "", target, sizeof target - 1);
  if (n < 0) return -1;
  if (n == 0) return errno = ENOENT, -1;
  target[n] = '\0';
  size_t len = (size_t)n + strlen(after) + 2;
  if (len > 4 * PATH_MAX) return errno = ENAMETOOLONG, -1;
  char *rest = malloc(len);
  if (!rest) return -1;
  memcpy(rest, target, (size_t)n);
  rest[n] = last ? '\0' : '/';
  memcpy(rest + n + !last, after, strlen(after) + 1);
  free(w->rest);
  w->rest = rest;
  if (target[0] == '/') {
    int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return -1;
    close(w->dir);
    w->dir = root;
    snprintf(w->shown, sizeof w->shown, "/");
  }
  return 0;
}

/* fd, opened for writing, truncated if it is a regular file (fopen's
 * "w"); -1 if it is -1 or cannot be. */
static int truncated(int fd) {
  struct stat st;
  if (fd < 0) return -1;
  if (fstat(fd, &st) != 0 || (S_ISREG(st.st_mode) && ftruncate(fd, 0))) {
    int e = errno;
    close(fd);
    return errno = e, -1;
  }
  return fd;
}

/* Opens the file the (not symlink, existing) O_PATH fd is, for writing:
 * through /proc/self/fd, so that it is the file that was checked and not
 * one renamed into its place since. A regular file is truncated. */
static int reopen_for_writing(int path_fd) {
  char proc[64];
  snprintf(proc, sizeof proc, "/proc/self/fd/%d", path_fd);
  return truncated(open(proc, O_WRONLY | O_CLOEXEC));
}

/* The walk's next name, cut out of w->rest (NUL-terminated in place);
 * *after is what follows it, *last whether no '/' does (a name with a
 * '/' after it must be a directory, as in the kernel's walk). NULL when
 * nothing is left. */
static char *next_name(Walk *w, char **after, bool *last) {
  char *p = w->rest;
  while (*p == '/') p++;
  if (!*p) return NULL;
  char *end = strchr(p, '/');
  *last = !end;
  if (end) {
    *end = '\0';
    *after = end + 1;
  } else {
    *after = p + strlen(p);
  }
  return p;
}

/* One step of the walk: the name `name`, with `after` left to walk.
 * Returns the fd of the opened file when it was the last name, -2 to go
 * on, -1 on failure (why said). */
static int step(Walk *w, char *name, char *after, bool last, char *why,
                size_t whylen) {
  struct stat st, dir;
  int fd = openat(w->dir, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT && last) {
    fd = openat(w->dir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
    return -3;   /* someone made it meanwhile: look at it again */
  }
  if (fd < 0 || fstat(fd, &st) != 0 || fstat(w->dir, &dir) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  char full[PATH_MAX];
  shown_name(w, name, full, sizeof full);
  int ret = -2;
  if (S_ISLNK(st.st_mode)) {
    struct statfs fs;
    if (!may_follow(&dir, &st)) {
      snprintf(why, whylen, "refusing to follow %s: a symlink of uid %u "
               "in the sticky world-writable directory %s (as "
               "fs.protected_symlinks does)", full, (unsigned)st.st_uid,
               shown_dir(w));
      close(fd);
      return -1;
    }
    if (++w->links > MAX_LINKS) {
      close(fd);
      return errno = ELOOP, -1;
    }
    if (fstatfs(w->dir, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) {
      /* /proc/self/fd/N: the kernel knows where it leads */
      int next = openat(w->dir, name, last ? O_WRONLY | O_CLOEXEC
                                           : O_PATH | O_DIRECTORY | O_CLOEXEC);
      close(fd);
      if (next < 0 || last) return last ? truncated(next) : next;
      close(w->dir);
      w->dir = next;
      memcpy(w->shown, full, sizeof full);
      memmove(w->rest, after, strlen(after) + 1);
      return -2;
    }
    char *rest_after = strdup(after);
    if (!rest_after || splice_link(w, fd, rest_after, last) != 0) ret = -1;
    free(rest_after);
  } else if (!last) {
    if (!S_ISDIR(st.st_mode)) {
      close(fd);
      return errno = ENOTDIR, -1;
    }
    close(w->dir);
    w->dir = fd;
    memcpy(w->shown, full, sizeof full);
    memmove(w->rest, after, strlen(after) + 1);
    return -2;
  } else if (S_ISDIR(st.st_mode)) {
    ret = (errno = EISDIR, -1);
  } else if (!may_open_existing(w, name, &dir, &st, why, whylen)) {
    close(fd);
    return -1;
  } else {
    ret = reopen_for_writing(fd);
  }
  int e = errno;
  close(fd);
  errno = e;
  return ret;
}

int safe_create(const char *path, char *why, size_t whylen) {
  why[0] = '\0';
  Walk w = {.dir = -1};
  if (!*path) {
    snprintf(why, whylen, "%s", strerror(ENOENT));
    return -1;
  }
  bool absolute = path[0] == '/';
  w.dir = open(absolute ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
  w.rest = strdup(path);
  snprintf(w.shown, sizeof w.shown, "%s", absolute ? "/" : "");
  int fd = -1, races = 0;
  if (w.dir < 0 || !w.rest) goto out;
  for (;;) {
    char *after;
    bool last;
    char *name = next_name(&w, &after, &last);
    if (!name) {   /* the path ends in a directory */
      errno = EISDIR;
      break;
    }
    fd = step(&w, name, after, last, why, whylen);
    if (fd == -3 && ++races == MAX_CREATE_RACES) {
      errno = EEXIST;
      fd = -1;
      break;
    }
    if (fd == -3) continue;   /* the last name, left whole in w.rest */
    if (fd != -2) break;
  }
out:
  if (fd < 0 && !why[0]) snprintf(why, whylen, "%s", strerror(errno));
  if (fd < 0) fd = -1;
  if (w.dir >= 0) close(w.dir);
  free(w.rest);
  return fd;
}

FILE *safe_fopen_write(const char *path, char *why, size_t whylen) {
  int fd = safe_create(path, why, whylen);
  if (fd < 0) return NULL;
  FILE *f = fdopen(fd, "w");
  if (!f) {
    snprintf(why, whylen, "%s", strerror(errno));
    close(fd);
  }
  return f;
}

char *safe_read_file(const char *path, size_t max, size_t *len,
                     struct stat *st) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return NULL;
  char *text = NULL;
  size_t got = 0, cap = 0;
  int err = 0;
  if (fstat(fd, st) != 0)
    err = errno;
  else if (!S_ISREG(st->st_mode))
    err = EINVAL;
  else if ((uint64_t)st->st_size > max)
    err = EFBIG;
  else
    cap = (size_t)st->st_size + 1;
  /* the size is a hint: the file may grow or shrink while it is read, and
   * one byte more than it said tells whether it has ended */
  if (!err && !(text = malloc(cap + 1))) err = ENOMEM;
  while (!err) {
    if (got == cap) {   /* more than it said */
      if (cap > max) {
        err = EFBIG;
        break;
      }
      size_t ncap = cap * 2 > max + 1 ? max + 1 : cap * 2;
      char *t = realloc(text, ncap + 1);
      if (!t) {
        err = ENOMEM;
        break;
      }
      text = t;
      cap = ncap;
    }
    ssize_t n = read(fd, text + got, cap - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = errno;
    else if (n == 0) break;
    else got += (size_t)n;
  }
  close(fd);
  if (err) {
    free(text);
    errno = err;
    return NULL;
  }
  text[got] = '\0';
  *len = got;
  return text;
}
