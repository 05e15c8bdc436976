/* run: the event loop between attach and detach. */
#ifndef LOUPE_RUN_H
#define LOUPE_RUN_H

#include <signal.h>

#include "runtime/print.h"
#include "codegen/program.h"

typedef struct RunOptions {
  FILE *out;            /* stdout or -o FILE */
  int timeout_ms;       /* 0: none */
  int format;           /* OUT_TEXT or OUT_JSON (print.h): -f */
  int child_pid;        /* -c: the command's pid, or <= 0 */
  int child_go_fd;      /* -c: write a byte after BEGIN to start it; -1 */
} RunOptions;

/* Runs BEGIN programs (then starts the -c command), then consumes events
 * until exit(), SIGINT, SIGTERM or the command's exit (at once when the
 * script has only BEGIN and END probes and no command), then runs END
 * programs, drains the remaining events and prints every non-empty map.
 * Returns the process exit status. */
int run_script(Compiled *c, const RunOptions *opts);

/* Set to 1 by main's SIGINT/SIGTERM handler, installed before loading, when
 * a stop is asked for before run_script starts (e.g. during attach).
 * run_script must treat it as if the signal had arrived while it ran, and
 * its own handlers may set it too. Defined in main.c. */
extern volatile sig_atomic_t loupe_stop_requested;

#endif
