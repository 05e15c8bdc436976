/* libFuzzer harness: the text of /proc/PID/maps, whose paths the traced
 * process chooses (a file it maps may have any name, newlines included),
 * through the function that reads it for -p and USDT/uprobe targets.
 * Each path reported must be a whole, non-empty path of the text, and a
 * file is reported once however many mappings it has.
 * Findings: tests/fuzz/regressions/maps/.
 *
 * To point the harness at another parser, change parse_maps. */
#define _GNU_SOURCE
#include "fuzz_util.h"
#include "sym/procfs.h"

typedef struct Seen {
  const char *text;
  size_t size;
  char last[8192];
  int n;
} Seen;

static bool on_path(const ProcMapping *m, void *arg) {
  Seen *s = arg;
  const char *path = m->path;
  size_t len = strlen(path);
  /* a path starts with '/', is part of the text, and differs from the
   * one before it (a file's mappings are adjacent) */
  if (path[0] != '/' || !memmem(s->text, s->size, path, len) ||
      !strcmp(path, s->last))
    abort();
  snprintf(s->last, sizeof s->last, "%s", path);
  s->n++;
  return false;
}

static void parse_maps(FILE *f, Seen *s) {
  procfs_maps_each_file(f, 1, on_path, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 16) return 0;
  Seen s = {.text = (const char *)data, .size = size};
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) return 0;   /* an empty input */
  parse_maps(f, &s);
  fclose(f);
  return 0;
}
