/* debuginfo: a binary's separate debug file, looked for in the debug
 * directories only (see debuginfo.h for the order). The names come from
 * the binary, which a traced process controls: a debug link is one file
 * name, and every candidate is opened only if it is a regular file, and
 * kept only if it matches the binary. */
#define _GNU_SOURCE   /* asprintf */
#include "sym/debuginfo.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define DEBUG_DIR "/usr/lib/debug"

/* path opened for reading if it is a regular file; -1 if not. The path
 * is looked at first (O_PATH opens nothing) and the file reopened from
 * that look, so a FIFO or a device is never opened, even by a race. */
static int open_regular(const char *path) {
  int at = open(path, O_PATH | O_CLOEXEC);
  if (at < 0) return -1;
  struct stat st;
  int fd = -1;
  if (fstat(at, &st) == 0 && S_ISREG(st.st_mode)) {
    char self[32];
    snprintf(self, sizeof self, "/proc/self/fd/%d", at);
    fd = open(self, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  }
  close(at);
  return fd;
}

/* Whether the ELF file open at fd has the build id id[0..len). */
static bool build_id_is(int fd, const unsigned char *id, int len) {
  Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  const void *own = NULL;
  ssize_t own_len = e ? dwelf_elf_gnu_build_id(e, &own) : -1;
  bool same = own_len == len && !memcmp(own, id, (size_t)len);
  if (e) elf_end(e);
  return same;
}

/* Whether the file open at fd has the CRC a debug link gave. */
static bool crc_is(int fd, GElf_Word want) {
  unsigned char buf[65536];
  uLong crc = crc32(0, Z_NULL, 0);
  ssize_t n;
  off_t off = 0;
  while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
    crc = crc32(crc, buf, (uInt)n);
    off += n;
  }
  return n == 0 && (GElf_Word)crc == want;
}

/* Opens path if it is a regular file that is mod's debug file: the same
 * build id as mod, or for a binary without one, the debug link's CRC. On
 * success its name goes to *name. */
static int try_candidate(Dwfl_Module *mod, const char *path, GElf_Word crc,
                         char **name) {
  int fd = open_regular(path);
  if (fd < 0) return -1;
  const unsigned char *id = NULL;
  GElf_Addr id_vaddr;
  int len = dwfl_module_build_id(mod, &id, &id_vaddr);
  bool ok = len > 0 ? build_id_is(fd, id, len) : crc_is(fd, crc);
  if (ok && (*name = strdup(path))) return fd;
  close(fd);
  return -1;
}

/* DEBUG_DIR/.build-id/xx/yyyy.debug for the build id id[0..len), if it
 * has that build id. */
static int by_build_id(const unsigned char *id, int len, char **name) {
  char path[sizeof DEBUG_DIR "/.build-id/" + 2 * 64 + 8];
  if (len < 2 || len > 64) return -1;
  int at = snprintf(path, sizeof path, DEBUG_DIR "/.build-id/%02x/", id[0]);
  for (int i = 1; i < len; i++)
    at += snprintf(path + at, sizeof path - at, "%02x", id[i]);
  snprintf(path + at, sizeof path - at, ".debug");
  int fd = open_regular(path);
  if (fd >= 0 && build_id_is(fd, id, len) && (*name = strdup(path)))
    return fd;
  if (fd >= 0) close(fd);
  return -1;
}

/* A debug link is the name of a file, nothing else. */
static bool plain_file_name(const char *s) {
  return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static int by_debug_link(Dwfl_Module *mod, const char *file_name,
                         const char *link, GElf_Word crc, char **name) {
  if (!link || !plain_file_name(link) || !file_name) return -1;
  const char *slash = strrchr(file_name, '/');
  char *dir = slash ? strndup(file_name, (size_t)(slash - file_name))
                    : strdup(".");
  if (!dir) return -1;
  const char *formats[] = {"%s/%s", "%s/.debug/%s", DEBUG_DIR "%s/%s"};
  int fd = -1;
  /* DEBUG_DIR/DIR only for an absolute DIR ("" for the root) */
  int tries = dir[0] == '/' || !*dir ? 3 : 2;
  for (int i = 0; i < tries && fd < 0; i++) {
    char *path;
    if (asprintf(&path, formats[i], dir, link) < 0) break;
    fd = try_candidate(mod, path, crc, name);
    free(path);
  }
  free(dir);
  return fd;
}

/* Whether s is an absolute path under the debug directory, with no "."
 * or ".." in it to climb out. */
static bool under_debug_dir(const char *s) {
  if (strncmp(s, DEBUG_DIR "/", sizeof DEBUG_DIR)) return false;
  for (const char *p = s; (p = strchr(p, '/')); ) {
    p++;
    size_t len = strcspn(p, "/");
    if ((len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)))
      return false;
  }
  return true;
}

/* The file a debug file shares with others (dwz), which its
 * .gnu_debugaltlink names by path and build id: by that build id, or at
 * that path if it is under the debug directory. libdwfl has the debug
 * file's Dwarf when it asks for this one, and gives it back. */
static int by_alt_link(Dwfl_Module *mod, const char *link, char **name) {
  Dwarf_Addr bias;
  Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
  const char *alt_name;
  const void *id = NULL;
  ssize_t len = dw ? dwelf_dwarf_gnu_debugaltlink(dw, &alt_name, &id) : -1;
  int fd = len > 0 ? by_build_id(id, (int)len, name) : -1;
  if (fd < 0 && len > 0 && under_debug_dir(link)) {
    fd = open_regular(link);
    bool ok = fd >= 0 && build_id_is(fd, id, (int)len);
    if (ok && (*name = strdup(link))) return fd;
    if (fd >= 0) close(fd);
    fd = -1;
  }
  /* Left without one, libdw would look itself on first use (dwarf_getalt)
   * and open the link's path as it is, blocking; (Dwarf *)-1 is its mark
   * for "looked for, found none", which dwarf_end does not free. */
  if (fd < 0 && dw) dwarf_setalt(dw, (Dwarf *)-1);
  return fd;
}

int debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname,
                   Dwarf_Addr base, const char *file_name,
                   const char *debuglink_file, GElf_Word debuglink_crc,
                   char **debuginfo_file_name) {
  (void)userdata;
  (void)modname;
  (void)base;
  /* libdwfl asks with the binary's own debug link, and again with the
   * debug file's alt link once it has the debug file */
  GElf_Addr bias;
  Elf *main_elf = dwfl_module_getelf(mod, &bias);
  GElf_Word own_crc;
  const char *own = main_elf ? dwelf_elf_gnu_debuglink(main_elf, &own_crc)
                             : NULL;
  if (debuglink_file && (!own || strcmp(own, debuglink_file)))
    return by_alt_link(mod, debuglink_file, debuginfo_file_name);
  const unsigned char *id = NULL;
  GElf_Addr id_vaddr;
  int len = dwfl_module_build_id(mod, &id, &id_vaddr);
  int fd = len > 0 ? by_build_id(id, len, debuginfo_file_name) : -1;
  if (fd < 0)
    fd = by_debug_link(mod, file_name, debuglink_file, debuglink_crc,
                       debuginfo_file_name);
  return fd;
}
