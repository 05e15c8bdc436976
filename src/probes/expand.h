/* expand: attach points as written become concrete targets. */
#ifndef LOUPE_EXPAND_H
#define LOUPE_EXPAND_H

#include "lang/ast.h"

/* Resolves every attach point of every probe through its provider.
 * Returns 0, or -1 after reporting every problem found. */
int expand_script(Script *s, Diag *d);

#endif
