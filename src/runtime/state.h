/* state: what the runtime keeps of a program it loaded — the fds load
 * opened for its maps and programs, and what changes while it runs. The
 * program (model/program.h) stays as check and codegen made it: its maps'
 * layouts are read, never written, from load on. */
#ifndef LOUPE_RUNTIME_STATE_H
#define LOUPE_RUNTIME_STATE_H

#include <stdbool.h>

#include "model/program.h"

/* A script map in the kernel: Loaded.maps[MapSym.id]. */
typedef struct MapState {
  int fd;           /* -1 until load creates it */
  bool zeroed;      /* a keyless per-CPU array: zero() ran since the last
                       clear(), so its all-zero slot still prints */
  bool cleared;     /* a keyless per-CPU array: clear() ran since the last
                       zero(), so an all-zero count() prints nothing (else
                       it prints 0) */
} MapState;

/* A Compiled program as load_all loaded it (runtime/load.h). */
typedef struct Loaded {
  MapState *maps;          /* by MapSym.id */
  int nmaps;
  int *prog_fds;           /* by index in Compiled.progs; -1: not loaded */
  int nprogs;
  int ringbuf_fd;          /* loupe's own maps (MAP_ID_*); -1: none */
  int wake_fd;             /* loupe_wake: the flags records are sent with
                              (MAP_ID_WAKE), with the ring buffer */
  int scratch_fd;
  int big_scratch_fd;
  int counts_fd;           /* loupe_counts (MAP_ID_COUNTS) */
  int skb_output_fd;       /* skboutput()'s perf event array
                              (MAP_ID_SKB_OUTPUT) */
  unsigned long long *warn_repeats;  /* run: how often each once-only
                                        warning came, by printf id */
  struct PrintfPlan **printf_plans;  /* run: each printf id's format,
                                        parsed once (runtime/print.h) */
  struct TextBuf *printf_text;       /* run: the text of the record being
                                        formatted, its room kept */
} Loaded;

/* The script's own maps that load created (internal ones left out), in
 * the order of their names, as every listing of all maps shows them:
 * an array the caller frees, *n entries; NULL when out of memory. */
const MapSym **loaded_maps_by_name(const Compiled *c, const Loaded *l,
                                   int *n);

struct Output;

/* What the handler of a record works with (Builtin.on_event; runtime/run.c
 * fills it in). */
typedef struct EventCtx {
  const Compiled *c;
  Loaded *l;         /* the maps' fds and state, the warnings' counts */
  /* the format's encoder and its stream: what a record shows goes there
   * as a Value (output_event, output_message, output_map) */
  struct Output *output;
  bool no_warnings;  /* --no-warnings */
  int *exit_seen;    /* set to stop handling records: 1 + exit()'s code */
} EventCtx;

#endif
