/* macro: expands the script's macro calls, between parse and check. */
#ifndef LOUPE_MACRO_H
#define LOUPE_MACRO_H

#include "lang/ast.h"

/* Replaces every call of a macro defined in the script with a copy of its
 * body, and the words of builtins called as functions (`comm()`,
 * `__builtin_comm`) with the words themselves. Returns 0, or -1 after
 * reporting through d. */
int macro_expand_script(Script *s, Diag *d);

#endif
