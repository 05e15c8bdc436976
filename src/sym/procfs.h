/* procfs: the one way loupe opens a file that a traced process names —
 * a path of its /proc/PID/maps, or a path to be read in its file system
 * tree. Such a process is untrusted: its paths are resolved inside its
 * own root (never loupe's), only regular files are opened, and never in
 * a way that can block. What loupe opened stays open for the whole run
 * and is handed on as /proc/self/fd/N, so that libelf, libdw and the
 * kernel (which attaches uprobes by path) all get the very file loupe
 * checked. */
#ifndef LOUPE_SYM_PROCFS_H
#define LOUPE_SYM_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Opens path for reading as process pid sees it: inside /proc/PID/root,
 * its symlinks (absolute ones, "..") resolved there; pid <= 0 means
 * loupe's own tree. Only a regular file is opened, and without blocking
 * (O_NONBLOCK). Returns the descriptor, or -1 with a message in err. */
int procfs_open(int pid, const char *path, char *err, size_t errlen);

/* Whether process pid sees the file system tree loupe sees: the same
 * mount namespace and the same root directory (not chrooted). */
bool procfs_same_tree(int pid);

/* The same walk without openat2 (kernels before 5.6): path resolved
 * inside the directory rootfd one component at a time, symlinks read and
 * followed by hand within it (at most 40). Returns an O_PATH descriptor,
 * or -1 with errno set. Public for the unit tests. */
int procfs_walk_in_root(int rootfd, const char *path);

/* Keeps fd open until loupe exits and returns the path that opens it
 * again, "/proc/self/fd/N"; one per file (a second descriptor of a file
 * kept already is closed, and the first one's path returned). name is
 * what messages call it (procfs_name). NULL with a message in err when
 * too many files are kept. */
const char *procfs_keep(int fd, const char *name, char *err, size_t errlen);

/* The name a path procfs_keep returned stands for, for messages; any
 * other path is its own name. */
const char *procfs_name(const char *path);

/* procfs_open, then procfs_keep: the kept path, or NULL with a message. */
const char *procfs_file(int pid, const char *path, char *err,
                        size_t errlen);

/* One line of /proc/PID/maps that maps a file. */
typedef struct ProcMapping {
  int pid;
  uint64_t start, end;
  unsigned dev_major, dev_minor;
  uint64_t inode;     /* as the kernel names the mapped file: the same in
                         every process that maps it */
  const char *path;   /* as the maps file names it (valid during the call) */
} ProcMapping;

/* Parses one whole line of a maps file (its newline removed) into m:
 * true for a mapping of a file by an absolute path, false for anything
 * else (anonymous memory, [stack], a malformed line, a file deleted
 * since it was mapped, a path of PATH_MAX bytes or more). */
bool procfs_parse_maps_line(char *line, ProcMapping *m);

/* Calls fn with each file process pid maps, once per file (its mappings
 * are adjacent), until fn returns true. Lines are read whole: one too
 * long for a path loupe could open is dropped to its end, never read in
 * pieces; and at most a bounded number of them. -1 if the maps cannot be
 * read. */
int procfs_each_mapped_file(int pid,
                            bool (*fn)(const ProcMapping *m, void *arg),
                            void *arg);

/* procfs_each_mapped_file's reading of maps text f (of process pid):
 * apart for the fuzzer (tests/fuzz/fuzz_maps.c), and for usyms.c, which
 * reads a process's maps once and keeps the text. */
void procfs_maps_each_file(FILE *f, int pid,
                           bool (*fn)(const ProcMapping *m, void *arg),
                           void *arg);

/* The file a mapping maps, opened and kept (procfs_keep): the mapped
 * object itself through /proc/PID/map_files/START-END, whatever its path
 * names now, or (where map_files cannot be opened) its path inside the
 * process's root. Not a regular file, or one deleted since: NULL with a
 * message in err. */
const char *procfs_mapped_file(const ProcMapping *m, char *err,
                               size_t errlen);

#endif
