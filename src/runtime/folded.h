/* folded: maps keyed by stacks as folded stacks (-f folded), the lines
 * flame graph tools read (FlameGraph's flamegraph.pl, speedscope, Firefox
 * Profiler): one line per key, its frames from the root to the leaf joined
 * by ';', then a space and the entry's number.
 *
 * A key's frames are its keys that are not stacks (e.g. comm), in key
 * order, as root frames, then the frames of each stack key, outermost
 * first: the user stacks' (in key order), then the kernel stacks', which
 * run on top of them, whatever the key order. Frames are bare function names; ';' and control characters
 * in a frame become '_'. */
#ifndef LOUPE_RUNTIME_FOLDED_H
#define LOUPE_RUNTIME_FOLDED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/program.h"
#include "runtime/state.h"

/* Whether one of the map's keys is a kstack or a ustack. */
bool map_has_stack_key(const MapSym *m);

/* The frames of one entry's key, root first (see above): a malloc'd array
 * of malloc'd strings in *out. Returns how many. */
int folded_key_frames(const MapSym *m, const uint8_t *key, char ***out);
void folded_frames_free(char **frames, int n);

/* Prints a stack-keyed map as folded lines, in print()'s order, only the
 * last `top` when top > 0, numbers divided by div when div > 1, each line
 * under a root frame `root` when not NULL. Returns 0 or a negative errno. */
int folded_map(const MapSym *m, const MapState *st, int64_t top, int64_t div,
               const char *root, FILE *out);

/* The exit output of -f folded, for maps in name order: the stack-keyed
 * maps as folded lines, each under a root frame of its name when there
 * are several; the other maps in text on stderr, out of the way of tools
 * that read the folded lines. */
void folded_print_maps(const MapSym **maps, int n, const Loaded *l,
                       FILE *out);

#endif
