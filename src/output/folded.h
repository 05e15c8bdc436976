/* folded: maps keyed by stacks as folded stacks (-f folded), the lines
 * flame graph tools read (FlameGraph's flamegraph.pl, speedscope, Firefox
 * Profiler): one line per key, its frames from the root to the leaf joined
 * by ';', then a space and the entry's number.
 *
 * A key's frames are its keys that are not stacks (e.g. comm), in key
 * order, as root frames, then the frames of each stack key, outermost
 * first: the user stacks' (in key order), then the kernel stacks', which
 * run on top of them, whatever the key order. Frames are bare function names; ';' and control characters
 * in a frame become '_'.
 *
 * The maps printed at exit are the stack-keyed ones as folded lines, each
 * under a root frame of its name when there are several; the other maps
 * go in text to stderr, out of the way of tools that read the folded
 * lines (print() of such a map writes its text to the output). */
#ifndef LOUPE_OUTPUT_FOLDED_H
#define LOUPE_OUTPUT_FOLDED_H

#include "output/decode.h"

/* The frames of one entry's keys, root first (see above), from a map
 * decoded with its frames: a malloc'd array of malloc'd strings in *out.
 * Returns how many. */
int folded_entry_frames(const DecodedEntry *e, char ***out);
void folded_frames_free(char **frames, int n);

#endif
