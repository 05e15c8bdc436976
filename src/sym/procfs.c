/* procfs: opening the files traced processes name, inside their own
 * roots. A path is first opened O_PATH (which neither blocks on a FIFO
 * nor runs a device's open), checked to be a regular file, and only then
 * opened for reading through /proc/self/fd. */
#define _GNU_SOURCE   /* O_PATH */
#include "sym/procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Symlinks followed in one path, as the kernel's own limit (MAXSYMLINKS). */
#define MAX_LINKS 40
/* Files kept open at once: every one a traced process made loupe read. */
#define MAX_KEPT 4096
/* Lines of a maps file read at the most: each is a mapping, and the
 * kernel's default vm.max_map_count is 65530. */
#define MAX_MAPS_LINES (1 << 20)

/* ---- resolving a path inside a root ------------------------------------ */

/* Directory fd of the components of resolved ("a/b", relative to rootfd),
 * each opened without following a symlink: they were directories when
 * the walk went through them, and must still be. */
static int open_resolved(int rootfd, const char *resolved) {
  int cur = dup(rootfd);
  char copy[PATH_MAX], *save = NULL;
  snprintf(copy, sizeof copy, "%s", resolved);
  for (char *c = strtok_r(copy, "/", &save); c && cur >= 0;
       c = strtok_r(NULL, "/", &save)) {
    int next = openat(cur, c, O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
    close(cur);
    cur = next;
  }
  return cur;
}

/* Puts link target `target` in front of what is left to walk (rest, of
 * PATH_MAX bytes). False if that is too long. */
static bool prepend_target(char *rest, const char *target) {
  char joined[PATH_MAX];
  if (snprintf(joined, sizeof joined, "%s/%s", target, rest) >=
      (int)sizeof joined)
    return false;
  memcpy(rest, joined, sizeof joined);
  return true;
}

/* One step of the walk: component c from directory *cur (whose path from
 * the root is resolved). Returns 1 to go on, 0 when c is a file that ends
 * the walk (its fd in *cur), -1 on error. */
static int walk_step(int rootfd, int *cur, char *resolved, char *rest,
                     const char *c, int *links) {
  if (!strcmp(c, ".")) return 1;
  if (!strcmp(c, "..")) {   /* the root's parent is the root */
    char *slash = strrchr(resolved, '/');
    *(slash ? slash : resolved) = '\0';
    int up = open_resolved(rootfd, resolved);
    if (up < 0) return -1;
    close(*cur);
    *cur = up;
    return 1;
  }
  int fd = openat(*cur, c, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  if (S_ISLNK(st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlinkat(fd, "", target, sizeof target - 1);
    close(fd);
    if (n <= 0 || ++*links > MAX_LINKS) {
      errno = n <= 0 ? EINVAL : ELOOP;
      return -1;
    }
    target[n] = '\0';
    if (!prepend_target(rest, target)) {
      errno = ENAMETOOLONG;
      return -1;
    }
    if (target[0] == '/') {   /* absolute: from the process's root */
      resolved[0] = '\0';
      close(*cur);
      *cur = dup(rootfd);
    }
    return *cur < 0 ? -1 : 1;
  }
  close(*cur);
  *cur = fd;
  if (!S_ISDIR(st.st_mode)) return 0;
  size_t len = strlen(resolved);
  snprintf(resolved + len, PATH_MAX - len, "%s%s", len ? "/" : "", c);
  return 1;
}

int procfs_walk_in_root(int rootfd, const char *path) {
  char rest[PATH_MAX], resolved[PATH_MAX] = "";
  if (snprintf(rest, sizeof rest, "%s", path) >= (int)sizeof rest) {
    errno = ENAMETOOLONG;
    return -1;
  }
  int cur = dup(rootfd), links = 0;
  while (cur >= 0) {
    char *p = rest + strspn(rest, "/");
    if (!*p) return cur;
    size_t len = strcspn(p, "/");
    char c[NAME_MAX + 1];
    if (len > NAME_MAX) {
      errno = ENAMETOOLONG;
      break;
    }
    snprintf(c, sizeof c, "%.*s", (int)len, p);
    memmove(rest, p + len, strlen(p + len) + 1);
    int r = walk_step(rootfd, &cur, resolved, rest, c, &links);
    if (r < 0) break;
    if (r == 0) {   /* a file: the path must end here */
      if (!rest[strspn(rest, "/")]) return cur;
      errno = ENOTDIR;
      break;
    }
  }
  int saved = errno;
  if (cur >= 0) close(cur);
  errno = saved;
  return -1;
}

/* path inside rootfd as an O_PATH descriptor: openat2 confines every
 * step (absolute symlinks and ".." included) to the root, and refuses
 * /proc's magic links, which would lead out of it. */
static int open_in_root(int rootfd, const char *path) {
  struct open_how how = {
      .flags = O_PATH | O_CLOEXEC,
      .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
  };
  for (int tries = 0; tries < 8; tries++) {
    int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof how);
    if (fd >= 0) return fd;
    if (errno == ENOSYS) return procfs_walk_in_root(rootfd, path);
    if (errno != EAGAIN) return -1;   /* EAGAIN: a rename raced with ".." */
  }
  return -1;
}

/* ---- opening a regular file --------------------------------------------- */

/* " in the root of process PID", or nothing for loupe's own tree. */
static const char *where(int pid, char *buf, size_t len) {
  if (pid <= 0) return "";
  snprintf(buf, len, " in the root of process %d", pid);
  return buf;
}

/* The O_PATH descriptor pathfd (closed) opened for reading, if it is a
 * regular file; else -1 with a message about path in err. */
static int reopen_regular(int pathfd, const char *path, int pid, char *err,
                          size_t errlen) {
  struct stat st;
  char self[64], in[64];
  int fd = -1;
  if (fstat(pathfd, &st) < 0) {
    snprintf(err, errlen, "cannot open %s%s: %s", path,
             where(pid, in, sizeof in), strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(err, errlen, "%s%s is not a regular file", path,
             where(pid, in, sizeof in));
  } else {
    snprintf(self, sizeof self, "/proc/self/fd/%d", pathfd);
    fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      snprintf(err, errlen, "cannot open %s%s: %s", path,
               where(pid, in, sizeof in), strerror(errno));
  }
  close(pathfd);
  return fd;
}

int procfs_open(int pid, const char *path, char *err, size_t errlen) {
  char in[64];
  int pathfd;
  if (pid <= 0) {
    pathfd = open(path, O_PATH | O_CLOEXEC);
  } else {
    char root[64];
    snprintf(root, sizeof root, "/proc/%d/root", pid);
    int rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0) {   /* ENOENT: the process has gone */
      snprintf(err, errlen, "cannot open the root of process %d: %s", pid,
               strerror(errno == ENOENT ? ESRCH : errno));
      return -1;
    }
    pathfd = open_in_root(rootfd, path);
    int saved = errno;
    close(rootfd);
    errno = saved;
  }
  if (pathfd < 0) {
    snprintf(err, errlen, "cannot open %s%s: %s", path,
             where(pid, in, sizeof in), strerror(errno));
    return -1;
  }
  return reopen_regular(pathfd, path, pid, err, errlen);
}

bool procfs_same_tree(int pid) {
  char ns[64], root[64];
  struct stat my_ns, their_ns, my_root, their_root;
  snprintf(ns, sizeof ns, "/proc/%d/ns/mnt", pid);
  snprintf(root, sizeof root, "/proc/%d/root", pid);
  return stat("/proc/self/ns/mnt", &my_ns) == 0 && stat(ns, &their_ns) == 0 &&
         my_ns.st_ino == their_ns.st_ino && stat("/", &my_root) == 0 &&
         stat(root, &their_root) == 0 && my_root.st_dev == their_root.st_dev &&
         my_root.st_ino == their_root.st_ino;
}

/* ---- the files kept open ------------------------------------------------ */

typedef struct Kept {
  dev_t dev;
  ino_t ino;
  ProcMapping as_mapped;   /* its maps identity (inode 0: none known) */
  char *name;
  char path[32];   /* /proc/self/fd/N */
} Kept;

static Kept **kept;
static int nkept;

/* Every kept file holds a descriptor while the script is expanded, before
 * load_all raises the limit for the probes' own: `usdt:*` reads the
 * files of every process, past the usual soft limit of 1024. */
static void raise_file_limit(void) {
  struct rlimit files;
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
  }
}

const char *procfs_keep(int fd, const char *name, char *err, size_t errlen) {
  struct stat st;
  if (fstat(fd, &st) < 0) {
    snprintf(err, errlen, "cannot read %s: %s", name, strerror(errno));
    close(fd);
    return NULL;
  }
  for (int i = 0; i < nkept; i++)
    if (kept[i]->dev == st.st_dev && kept[i]->ino == st.st_ino) {
      close(fd);
      return kept[i]->path;
    }
  Kept *k = nkept < MAX_KEPT ? calloc(1, sizeof *k) : NULL;
  Kept **grown = k ? realloc(kept, (nkept + 1) * sizeof *kept) : NULL;
  if (!grown) {
    snprintf(err, errlen, "cannot read %s: more than %d files to read",
             name, MAX_KEPT);
    free(k);
    close(fd);
    return NULL;
  }
  if (!kept) raise_file_limit();
  kept = grown;
  k->dev = st.st_dev;
  k->ino = st.st_ino;
  k->name = strdup(name);
  snprintf(k->path, sizeof k->path, "/proc/self/fd/%d", fd);
  kept[nkept++] = k;
  return k->path;
}

const char *procfs_name(const char *path) {
  for (int i = 0; i < nkept; i++)
    if (!strcmp(kept[i]->path, path)) return kept[i]->name;
  return path;
}

const char *procfs_file(int pid, const char *path, char *err,
                        size_t errlen) {
  int fd = procfs_open(pid, path, err, errlen);
  return fd < 0 ? NULL : procfs_keep(fd, path, err, errlen);
}

/* ---- the maps ----------------------------------------------------------- */

bool procfs_parse_maps_line(char *line, ProcMapping *m) {
  /* start-end perms offset dev inode   path */
  unsigned long long start, end, inode;
  unsigned major, minor;
  int at = 0;
  if (sscanf(line, "%llx-%llx %*s %*s %x:%x %llu %n", &start, &end, &major,
             &minor, &inode, &at) != 5 ||
      at == 0)
    return false;
  const char *path = line + at;
  size_t len = strlen(path);
  static const char deleted[] = " (deleted)";
  size_t dlen = sizeof deleted - 1;
  if (path[0] != '/' || len >= PATH_MAX ||
      (len > dlen && !strcmp(path + len - dlen, deleted)))
    return false;
  m->start = start;
  m->end = end;
  m->dev_major = major;
  m->dev_minor = minor;
  m->inode = inode;
  m->path = path;
  return true;
}

/* Reads one whole line of f into buf (size bytes), its newline removed:
 * 1, or 0 for a line too long for buf (read to its end and dropped: its
 * tail is never taken for a line of its own), -1 at the end. */
static int read_whole_line(FILE *f, char *buf, size_t size) {
  if (!fgets(buf, (int)size, f)) return -1;
  size_t len = strlen(buf);
  if (len > 0 && buf[len - 1] == '\n') {
    buf[len - 1] = '\0';
    return 1;
  }
  if (len + 1 < size) return 1;   /* the last line, without a newline */
  int c;
  while ((c = getc(f)) != EOF && c != '\n') {}
  return 0;
}

int procfs_each_mapped_file(int pid,
                            bool (*fn)(const ProcMapping *m, void *arg),
                            void *arg) {
  char maps[64];
  snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
  FILE *f = fopen(maps, "re");
  if (!f) return -1;
  procfs_maps_each_file(f, pid, fn, arg);
  fclose(f);
  return 0;
}

void procfs_maps_each_file(FILE *f, int pid,
                           bool (*fn)(const ProcMapping *m, void *arg),
                           void *arg) {
  /* a path of PATH_MAX bytes or more is refused anyway: its line is read
   * to its end, never in pieces */
  char line[PATH_MAX + 256], last[PATH_MAX] = "";
  int r;
  for (int lines = 0;
       lines < MAX_MAPS_LINES &&
       (r = read_whole_line(f, line, sizeof line)) >= 0;
       lines++) {
    ProcMapping m = {.pid = pid};
    /* a file's mappings are adjacent: report each file once */
    if (r == 0 || !procfs_parse_maps_line(line, &m) || !strcmp(last, m.path))
      continue;
    snprintf(last, sizeof last, "%s", m.path);
    if (fn(&m, arg)) break;
  }
}

/* A file kept already that a maps line names: the kernel shows one
 * mapped file with the same device and inode in every process. Spares
 * `usdt:*` opening each library once per process. */
static const char *kept_as_mapped(const ProcMapping *m) {
  for (int i = 0; m->inode && i < nkept; i++) {
    const ProcMapping *k = &kept[i]->as_mapped;
    if (k->inode == m->inode && k->dev_major == m->dev_major &&
        k->dev_minor == m->dev_minor)
      return kept[i]->path;
  }
  return NULL;
}

const char *procfs_mapped_file(const ProcMapping *m, char *err,
                               size_t errlen) {
  const char *known = kept_as_mapped(m);
  if (known) return known;
  char link[96];
  snprintf(link, sizeof link, "/proc/%d/map_files/%llx-%llx", m->pid,
           (unsigned long long)m->start, (unsigned long long)m->end);
  int pathfd = open(link, O_PATH | O_CLOEXEC);
  int fd = pathfd >= 0
               ? reopen_regular(pathfd, m->path, m->pid, err, errlen)
               : procfs_open(m->pid, m->path, err, errlen);
  struct stat st;
  if (fd >= 0 && fstat(fd, &st) == 0 && st.st_nlink == 0) {
    snprintf(err, errlen, "%s of process %d has been deleted", m->path,
             m->pid);
    close(fd);
    return NULL;
  }
  const char *path = fd < 0 ? NULL : procfs_keep(fd, m->path, err, errlen);
  for (int i = 0; path && i < nkept; i++)
    if (kept[i]->path == path && !kept[i]->as_mapped.inode) {
      kept[i]->as_mapped = *m;
      kept[i]->as_mapped.path = NULL;
    }
  return path;
}
