/* What the libFuzzer harnesses of tests/fuzz share: an input as a C
 * string, /dev/null for messages, and input bytes written to a file of a
 * scratch directory of the process's own (removed when it exits), for
 * the code that reads files by their path. */
#ifndef LOUPE_FUZZ_UTIL_H
#define LOUPE_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What the harnesses read is kept to the process's end by design (the
 * compiler's AST, the types of debug information): no leak reports, also
 * when an input is replayed by hand. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

static inline FILE *fuzz_devnull(void) {
  static FILE *f;
  if (!f) f = fopen("/dev/null", "w");
  if (!f) abort();
  return f;
}

/* The input's bytes and a NUL, malloc'd. */
static inline char *fuzz_text(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) abort();
  memcpy(s, data, size);
  s[size] = '\0';
  return s;
}

static char fuzz_dir[64];

static inline void fuzz_dir_remove(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fuzz_dir);
  if (system(cmd) != 0) return;
}

/* The path of file `name` in the scratch directory, made on first use:
 * in /dev/shm where it can be (a file system in memory: on ext4, writing
 * each input over the last flushed it to disk, 40% of fuzz_elf's time),
 * else in /tmp. */
static inline const char *fuzz_path(const char *name) {
  static char path[128];
  if (!fuzz_dir[0]) {
    snprintf(fuzz_dir, sizeof fuzz_dir, "/dev/shm/loupe-fuzz-XXXXXX");
    if (!mkdtemp(fuzz_dir)) {
      snprintf(fuzz_dir, sizeof fuzz_dir, "/tmp/loupe-fuzz-XXXXXX");
      if (!mkdtemp(fuzz_dir)) abort();
    }
    atexit(fuzz_dir_remove);
  }
  snprintf(path, sizeof path, "%s/%s", fuzz_dir, name);
  return path;
}

/* Writes data to file `name` of the scratch directory: its path. */
static inline const char *fuzz_write_file(const char *name, const void *data,
                                   size_t size) {
  const char *path = fuzz_path(name);
  FILE *f = fopen(path, "w");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) abort();
  return path;
}

#endif
