/* folded: stack-keyed maps as folded stacks (see folded.h). */
#include "output/folded.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/encoder.h"

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

/* The text of a key that is not a stack, as text output shows it. */
static char *key_text(const Value *k) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  text_put_value(k, f);
  fclose(f);
  return buf;
}

int folded_entry_frames(const DecodedEntry *e, char ***out) {
  const Value *keys = e->keys.elems;
  char **frames = NULL;
  int n = 0;
  for (int i = 0; i < e->keys.n; i++)
    if (keys[i].kind != VAL_STACK)
      frames_push(&frames, &n, key_text(&keys[i]));
  /* User stacks first: the kernel runs on top of them. */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < e->keys.n; i++) {
      const Value *k = &keys[i];
      if (k->kind != VAL_STACK || k->user != (pass == 0)) continue;
      for (int j = k->nframes - 1; j >= 0; j--)
        frames_push(&frames, &n, strdup(k->frames[j]));
    }
  *out = frames;
  return n;
}

void folded_frames_free(char **frames, int n) {
  for (int i = 0; i < n; i++) free(frames[i]);
  free(frames);
}

static void folded_maps_begin(Output *o, const MapSym *const *maps, int n,
                              bool at_exit) {
  o->in_map_set = true;
  o->set_stack_maps = output_count_stack_maps(maps, n);
}

/* The last `top` lines when print() asked for them, numbers divided by
 * div; under a frame of the map's name when several maps print. */
static void folded_map(Output *o, const DecodedMap *d) {
  if (!d->has_stack_key) {
    Output text = {.enc = &text_encoder,
                   .out = o->in_map_set ? stderr : o->out};
    text_encoder.map(&text, d);
    return;
  }
  const char *root = o->in_map_set && o->set_stack_maps > 1 ? d->name : NULL;
  FILE *out = o->out;
  for (int i = 0; i < d->n; i++) {
    if (d->top > 0 && i < d->n - d->top) continue;
    const DecodedEntry *e = &d->entries[i];
    char **frames;
    int k = folded_entry_frames(e, &frames);
    if (root) fputs(root, out);
    for (int j = 0; j < k; j++) {
      if (j || root) fputc(';', out);
      fputs(frames[j], out);
    }
    /* A key with no frames (no stack, e.g. no user stack in a kernel
     * task) still counts, under a frame of its own. */
    if (k == 0 && !root) fputs("[no stack]", out);
    if (d->weight_signed)
      fprintf(out, " %" PRId64 "\n", (int64_t)e->weight / d->div);
    else
      fprintf(out, " %" PRIu64 "\n", e->weight / (uint64_t)d->div);
    folded_frames_free(frames, k);
  }
}

/* Records the builtins send print as text. */
static void folded_event(Output *o, const char *type, const Value *v,
                         bool line) {
  text_encoder.event(o, type, v, line);
}

const Encoder folded_encoder = {
    .name = "folded",
    .decode = {.frames = true},
    .maps_begin = folded_maps_begin,
    .map = folded_map,
    .event = folded_event,
};
