/* plan: which of loupe's own maps a checked script needs. */
#ifndef LOUPE_PLAN_H
#define LOUPE_PLAN_H

#include "model/program.h"

/* Adds to out, after the script's maps, the maps loupe's code reads: the
 * zero map (big values are inserted and cleared from it), hist()'s log2
 * table, and the one-slot array of each builtin the script uses that
 * names one (Builtin.own_map: elapsed's base, exit()'s flag). Runs once
 * check_script has succeeded, before codegen. */
void plan_own_maps(const Script *s, Compiled *out);

#endif
