/* run: the event loop between attach and detach. */
#ifndef LOUPE_RUN_H
#define LOUPE_RUN_H

#include <signal.h>
#include <stdbool.h>

#include "model/program.h"
#include "probes/provider.h"
#include "runtime/print.h"
#include "runtime/state.h"

typedef struct RunOptions {
  FILE *out;            /* stdout or -o FILE */
  const char *out_name; /* its name in messages (NULL: "stdout") */
  int timeout_ms;       /* 0: none */
  int format;           /* OUT_TEXT or OUT_JSON (print.h): -f */
  int child_pid;        /* -c: the command's pid, or <= 0 */
  int child_go_fd;      /* -c: write a byte after BEGIN to start it; -1 */
  int target_pid;       /* -p: stop when this process exits; 0: none */
  RunMode mode;         /* --mode bench: run the bench probes, not the
                           event loop, and print their times */
  bool no_warnings;     /* --no-warnings: run-time warnings too */
  struct HttpServer *http;  /* --metrics: served from the loop; NULL */
  bool maps_elsewhere;  /* the maps are not printed at exit: main writes
                           them as metrics (-f prometheus|openmetrics) */
  /* --interval: called every `every_ms` while the run waits for events
   * (the metrics file rewritten); NULL: never */
  void (*every)(void *arg);
  void *every_arg;
  int every_ms;
} RunOptions;

/* A run in parts of the program c, loaded as l says, so that BEGIN runs
 * before the other probes are attached, as bpftrace documents:
 * run_begin sets up the event buffer and the signal handling, runs the
 * BEGIN programs and prints what they sent (NULL when out of memory);
 * run_stopping tells whether BEGIN called exit() or a stop was asked for,
 * in which case the caller need not attach anything;
 * run_wait starts the -c command and consumes events until exit(),
 * SIGINT, SIGTERM, the command's exit or the -p process's exit (at once
 * when the script has only BEGIN and END probes and no command); the
 * caller then detaches the probes, since END comes after all the other
 * probes are detached, as bpftrace documents;
 * run_finish handles the events still queued, runs END, prints every
 * non-empty map, frees the run and returns the process exit status;
 * run_abandon frees a run that will not finish (attach failed). */
typedef struct Run Run;
Run *run_begin(const Compiled *c, Loaded *l, const RunOptions *opts);
bool run_stopping(const Run *r);
void run_wait(Run *r);
int run_finish(Run *r);
void run_abandon(Run *r);

/* run_begin, run_wait and run_finish, with nothing attached. */
int run_script(const Compiled *c, Loaded *l, const RunOptions *opts);

/* Set to 1 by main's SIGINT/SIGTERM handler, installed before loading, when
 * a stop is asked for before run_script starts (e.g. during attach).
 * run_script must treat it as if the signal had arrived while it ran, and
 * its own handlers may set it too. Defined in main.c. */
extern volatile sig_atomic_t loupe_stop_requested;

/* Set to 1 by run when the output is a pipe whose reader has gone (as in
 * `loupe ... | head -1`): the run stops, and main, once the probes are gone
 * and the -c command ended, dies of SIGPIPE as any writer would. */
extern volatile sig_atomic_t loupe_output_closed;

#endif
