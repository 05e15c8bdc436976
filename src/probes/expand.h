/* expand: attach points as written become concrete targets. */
#ifndef LOUPE_EXPAND_H
#define LOUPE_EXPAND_H

#include "lang/ast.h"

/* Resolves every attach point of every probe through its provider.
 * Returns 0, or -1 after reporting every problem found. */
int expand_script(Script *s, Diag *d);

/* --probe-filter: keeps only the targets whose full names the POSIX
 * extended regex finds a match in ("interval:ms:200" for ':200'); probes
 * loupe runs itself (BEGIN, END) always stay. Returns 0, or -1 after
 * saying why on stderr: a bad regex, or nothing left to run. */
int expand_filter(Script *s, const char *regex);

#endif
