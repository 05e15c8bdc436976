/* compile: the whole front end and code generator in one call — parse,
 * config block, attach-point parameters, macros, probe expansion, checks,
 * loupe's own maps (plan), code generation. Shared by main and the fuzzing
 * harness (tests/fuzz). */
#ifndef LOUPE_COMPILE_H
#define LOUPE_COMPILE_H

#include <stdbool.h>

#include "lang/ast.h"
#include "lang/diag.h"
#include "model/program.h"
#include "settings.h"

/* The front half: parse, config block, attach-point parameters, macros and
 * probe expansion, as compile_script does them (for -l of a script). st
 * holds the command line's settings; the config block's are added to it,
 * and the script keeps it (Script.settings). Returns 0, or -1 once a stage
 * has reported errors through d. */
int compile_front(const Source *src, Settings *st, Script **script,
                  Diag *d);

/* Compiles src into c. *script receives the AST (also on failure, when
 * parsing got that far); it points into src->text and is never freed.
 * Returns 0, or -1 once a stage has reported errors through d. */
int compile_script(const Source *src, Settings *st, Script **script,
                   Compiled *c, Diag *d);

#endif
