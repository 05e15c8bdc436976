/* folded: stack-keyed maps as folded stacks (see folded.h). */
#include "runtime/folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/print.h"
#include "runtime/print_stack.h"

static bool is_stack(const Type *t) {
  return t->named == NAMED_KSTACK || t->named == NAMED_USTACK;
}

bool map_has_stack_key(const MapSym *m) {
  for (int i = 0; i < m->nkeys; i++)
    if (is_stack(&m->key_types[i])) return true;
  return false;
}

/* A frame's text made safe for a folded line: ';' separates frames and
 * a line ends at a newline. */
static char *frame_clean(char *s) {
  for (char *p = s; p && *p; p++)
    if (*p == ';' || (unsigned char)*p < 0x20 || *p == 0x7f) *p = '_';
  return s;
}

/* Appends a frame (taking ownership of s) to a growing array. */
static void frames_push(char ***frames, int *n, char *s) {
  char **grown = realloc(*frames, sizeof(char *) * (size_t)(*n + 1));
  if (!grown) {
    free(s);
    return;
  }
  *frames = grown;
  (*frames)[(*n)++] = frame_clean(s ? s : strdup("?"));
}

/* The text of a key that is not a stack, as print() shows a value. */
static char *key_text(const MapSym *m, int i, const uint8_t *key) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  int end = i + 1 < m->nkeys ? m->key_off[i + 1] : m->key_size;
  print_value(&m->key_types[i], key + m->key_off[i], end - m->key_off[i],
              false, f);
  fclose(f);
  return buf;
}

int folded_key_frames(const MapSym *m, const uint8_t *key, char ***out) {
  char **frames = NULL;
  int n = 0;
  for (int i = 0; i < m->nkeys; i++)
    if (!is_stack(&m->key_types[i]))
      frames_push(&frames, &n, key_text(m, i, key));
  /* User stacks first: the kernel runs on top of them. */
  for (int pass = 0; pass < 2; pass++) {
    int want = pass == 0 ? NAMED_USTACK : NAMED_KSTACK;
    for (int i = 0; i < m->nkeys; i++) {
      if (m->key_types[i].named != want) continue;
      uint64_t v;
      memcpy(&v, key + m->key_off[i], 8);
      char **names;
      int k = stack_frame_names(&m->key_types[i], v, &names);
      for (int j = k - 1; j >= 0; j--) frames_push(&frames, &n, names[j]);
      free(names);
    }
  }
  *out = frames;
  return n;
}

void folded_frames_free(char **frames, int n) {
  for (int i = 0; i < n; i++) free(frames[i]);
  free(frames);
}

typedef struct FoldedCtx {
  int64_t top, div;
  const char *root;
  FILE *out;
} FoldedCtx;

static void folded_line(const MapSym *m, const uint8_t *key, uint64_t number,
                        bool sign, int i, int n, void *ctx) {
  const FoldedCtx *fc = ctx;
  if (fc->top > 0 && i < n - fc->top) return;
  char **frames;
  int k = folded_key_frames(m, key, &frames);
  if (fc->root) fputs(fc->root, fc->out);
  for (int j = 0; j < k; j++) {
    if (j || fc->root) fputc(';', fc->out);
    fputs(frames[j], fc->out);
  }
  /* A key with no frames (no stack, e.g. no user stack in a kernel task)
   * still counts, under a frame of its own. */
  if (k == 0 && !fc->root) fputs("[no stack]", fc->out);
  if (sign)
    fprintf(fc->out, " %" PRId64 "\n", (int64_t)number / fc->div);
  else
    fprintf(fc->out, " %" PRIu64 "\n", number / (uint64_t)fc->div);
  folded_frames_free(frames, k);
}

int folded_map(const MapSym *m, const MapState *st, int64_t top, int64_t div,
               const char *root, FILE *out) {
  FoldedCtx fc = {.top = top, .div = div > 1 ? div : 1, .root = root,
                  .out = out};
  return map_entries(m, st, folded_line, &fc);
}

void folded_print_maps(const MapSym **maps, int n, const Loaded *l,
                       FILE *out) {
  int nstack = 0;
  for (int i = 0; i < n; i++) nstack += map_has_stack_key(maps[i]);
  for (int i = 0; i < n; i++) {
    const MapState *st = &l->maps[maps[i]->id];
    if (map_has_stack_key(maps[i]))
      folded_map(maps[i], st, 0, 1, nstack > 1 ? maps[i]->name : NULL, out);
    else
      print_map_as(maps[i], st, 0, 1, OUT_TEXT, stderr);
  }
}
