/* check: names, types and sizes; all user errors are found here. */
#ifndef LOUPE_CHECK_H
#define LOUPE_CHECK_H

#include "model/program.h"

/* Types every expression, creates the map symbols and printf definitions in
 * out. Returns 0, or -1 after reporting. */
int check_script(Script *s, Compiled *out, Diag *d);

#endif
