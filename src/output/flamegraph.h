/* flamegraph: --flamegraph FILE.svg, the maps keyed by kstack or ustack
 * drawn as one self-contained interactive SVG flame graph.
 *
 * Each frame of the folded stacks (folded.h) is a rectangle as wide as
 * the samples (the entries' numbers: counts, sums) of the stacks through
 * it, the root at the bottom, children in name order from left to right.
 * With several stack-keyed maps, each map's stacks stand on a frame named
 * after the map. Hovering shows a frame's name, samples and percentage (a
 * <title> per frame, and a line at the bottom); clicking zooms into it;
 * "Search" (or Ctrl-F) highlights the frames whose names a regex matches
 * and shows how many of the samples they cover. Entries whose number is
 * 0 or negative are left out. */
#ifndef LOUPE_RUNTIME_FLAMEGRAPH_H
#define LOUPE_RUNTIME_FLAMEGRAPH_H

#include <stdio.h>

#include "model/program.h"
#include "runtime/state.h"

/* Opens path for writing before anything runs; NULL with a message on
 * stderr if it cannot be written or the script has no map keyed by a
 * stack. */
FILE *flamegraph_open(const Compiled *c, const char *path);

/* Writes the flame graph of the script's maps to f, then closes it.
 * Returns 0, or -1 with a message on stderr. */
int flamegraph_write(const Compiled *c, const Loaded *l, FILE *f,
                     const char *path);

#endif
