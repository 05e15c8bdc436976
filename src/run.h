/* run: the event loop between attach and detach. */
#ifndef LOUPE_RUN_H
#define LOUPE_RUN_H

#include "program.h"

typedef struct RunOptions {
  FILE *out;            /* stdout or -o FILE */
  int timeout_ms;       /* 0: none */
} RunOptions;

/* Runs BEGIN programs, then consumes events until exit(), SIGINT or
 * SIGTERM, then runs END programs, drains the remaining events and prints
 * every non-empty map. Returns the process exit status. */
int run_script(Compiled *c, const RunOptions *opts);

#endif
