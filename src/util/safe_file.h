/* safe_file: opening files whose path other users may have a hand in.
 *
 * loupe runs as root. A file it writes (-o, --flamegraph, skboutput()'s
 * pcap files) is often in /tmp, where any user can plant a symlink or a
 * file of their own under the name a root user is about to write; a file
 * it reads for the script (#include, import) may be a FIFO that never
 * ends or a file nobody meant to show. The kernel guards against the
 * first with the fs.protected_* sysctls, which may be off (they are in
 * many containers), so loupe applies their rules itself.
 */
#ifndef LOUPE_SAFE_FILE_H
#define LOUPE_SAFE_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* Room for safe_create's reason: a refusal names a path. */
#define SAFE_WHY_MAX 4608

/* Opens `path` for writing as fopen(path, "w") would (created with mode
 * 0666 less the umask, a regular file truncated), walking it one name at
 * a time, and refuses, as fs.protected_symlinks and fs.protected_regular
 * (and _fifos) do whatever they are set to, in a sticky world-writable
 * directory:
 *   - to follow a symlink unless its owner is the directory's owner or
 *     loupe's effective user;
 *   - to open an existing file or FIFO that belongs to someone else than
 *     those two, or a file with more than one hard link (a link to a file
 *     elsewhere that the sysctl fs.protected_hardlinks would have kept the
 *     planter from making).
 * A name that appears between the check and the creation is not taken
 * over (O_EXCL; the walk starts over). Symlinks in /proc (/dev/stdout's
 * /proc/self/fd/1) are followed by the kernel: their text is no path.
 * Returns the fd, or -1 with the reason in why (a refusal in words, or
 * strerror). */
int safe_create(const char *path, char *why, size_t whylen);

/* safe_create as a stdio stream ("w"). */
FILE *safe_fopen_write(const char *path, char *why, size_t whylen);

/* Reads all of `path`, a file someone else may control: opened with
 * O_NONBLOCK (a FIFO does not block the open), checked with fstat before
 * any read (a regular file only: EINVAL otherwise), at most `max` bytes
 * (EFBIG beyond). Returns the text, NUL-terminated, its length in *len
 * and the file's status in *st; or NULL with errno set. */
char *safe_read_file(const char *path, size_t max, size_t *len,
                     struct stat *st);

#endif
