/* print_named: values that the kernel side keeps as numbers or bytes and
 * that user space prints as text (Type.named): an errno's message, a
 * signal's description, an IP or MAC address. */
#define _GNU_SOURCE   /* nftw's FTW_ACTIONRETVAL */
#include <arpa/inet.h>
#include <fnmatch.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <mntent.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "probes/syscalls.h"
#include "runtime/print.h"

/* ---- cgroup_path ------------------------------------------------------ */

/* A cgroup's id is the inode number of its directory in cgroupfs. The
 * last directories found are kept, and used again while they still have
 * that inode. */
enum { CGROUP_CACHE = 32 };
static struct { uint64_t id; char *path; } cgroup_cache[CGROUP_CACHE];
static int cgroup_cache_next;

static uint64_t nftw_want;        /* nftw's callback has no argument */
static char nftw_found[PATH_MAX];

static int match_inode(const char *path, const struct stat *st, int kind,
                       struct FTW *ftw) {
  if (kind != FTW_D || (uint64_t)st->st_ino != nftw_want) return FTW_CONTINUE;
  snprintf(nftw_found, sizeof nftw_found, "%s", path);
  return FTW_STOP;
}

/* The directory under mount point dir whose inode is id, or NULL. */
static const char *cgroup_dir(const char *dir, uint64_t id) {
  size_t dlen = strlen(dir);
  struct stat st;
  for (int i = 0; i < CGROUP_CACHE; i++) {
    const char *p = cgroup_cache[i].path;
    if (p && cgroup_cache[i].id == id && !strncmp(p, dir, dlen) &&
        (p[dlen] == '/' || !p[dlen]) && stat(p, &st) == 0 &&
        (uint64_t)st.st_ino == id)
      return p;
  }
  nftw_want = id;
  if (nftw(dir, match_inode, 16, FTW_PHYS | FTW_MOUNT | FTW_ACTIONRETVAL) !=
      FTW_STOP)
    return NULL;
  int slot = cgroup_cache_next++ % CGROUP_CACHE;
  free(cgroup_cache[slot].path);
  cgroup_cache[slot].id = id;
  cgroup_cache[slot].path = strdup(nftw_found);
  return cgroup_cache[slot].path;
}

/* "unified:/user.slice/...": for each cgroup hierarchy mounted whose name
 * ("unified" for cgroup2, the mount point's last part for v1) matches the
 * filter, the path of the cgroup with this id in it; joined by ','. */
static void cgroup_path_text(uint64_t id, const char *filter, char *buf,
                             size_t len) {
  buf[0] = '\0';
  FILE *f = setmntent("/proc/self/mounts", "r");
  if (!f) return;
  size_t used = 0;
  struct mntent *m;
  while ((m = getmntent(f))) {
    bool v2 = !strcmp(m->mnt_type, "cgroup2");
    if (!v2 && strcmp(m->mnt_type, "cgroup")) continue;
    const char *slash = strrchr(m->mnt_dir, '/');
    const char *name = v2 ? "unified" : slash ? slash + 1 : m->mnt_dir;
    if (filter && fnmatch(filter, name, 0)) continue;
    const char *dir = cgroup_dir(m->mnt_dir, id);
    if (!dir) continue;
    const char *rel = dir + strlen(m->mnt_dir);
    int n = snprintf(buf + used, len - used, "%s%s:%s", used ? "," : "",
                     name, *rel ? rel : "/");
    if (n < 0 || (size_t)n >= len - used) break;
    used += (size_t)n;
  }
  endmntent(f);
}

/* ---- the texts --------------------------------------------------------- */

const char *named_int_text(const Type *t, uint64_t v, char *buf,
                           size_t len) {
  switch (t->named) {
  case NAMED_USER: {
    struct passwd *pw = getpwuid((uid_t)v);
    if (pw)
      snprintf(buf, len, "%s", pw->pw_name);
    else
      snprintf(buf, len, "%" PRIu64, v);
    return buf;
  }
  case NAMED_CGROUP:
    cgroup_path_text(v, t->name_filter, buf, len);
    return buf;
  case NAMED_ERRNO:
    snprintf(buf, len, "%s", strerror((int)v));
    return buf;
  case NAMED_SYSCALL: {
    const char *name = (int64_t)v >= 0 && v < 1u << 16
                           ? syscall_name_of((int)v) : NULL;
    if (name)
      snprintf(buf, len, "%s", name);
    else
      snprintf(buf, len, "%" PRId64, (int64_t)v);
    return buf;
  }
  case NAMED_SIGNAL:
    /* as strsignal() words it, for the numbers signals have */
    if ((int64_t)v >= 0 && (int64_t)v < NSIG)
      snprintf(buf, len, "%s", strsignal((int)v));
    else
      snprintf(buf, len, "N/A");
    return buf;
  default:
    return NULL;
  }
}

const char *named_buf_text(const Type *t, const uint8_t *p, char *buf,
                           size_t len) {
  uint64_t head;
  memcpy(&head, p, 8);
  const uint8_t *data = p + 8;
  switch (t->named) {
  case NAMED_INET:
    if ((head == AF_INET || head == AF_INET6) &&
        inet_ntop((int)head, data, buf, (socklen_t)len))
      return buf;
    if (len) buf[0] = '\0';   /* not an address family */
    return buf;
  case NAMED_MAC:
    snprintf(buf, len, "%02X:%02X:%02X:%02X:%02X:%02X", data[0], data[1],
             data[2], data[3], data[4], data[5]);
    return buf;
  default:
    return NULL;
  }
}
