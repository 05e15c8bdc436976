/* usdt: what the usdt provider (usdt.c) shares with the argN builtins
 * (usdt_args.c): a probe's locations and their argument specs. */
#ifndef LOUPE_PROBES_USDT_H
#define LOUPE_PROBES_USDT_H

#include <stdbool.h>
#include <stddef.h>

#include "lang/ast.h"
#include "sym/stapsdt.h"

/* One USDT probe (provider:name) of one file, a target's Target.data: every place the compiler
 * put it (a probe in an inlined function has several), each with its own
 * argument spec. A target's program serves all of them; the BPF cookie
 * of each location's link is its index here. */
typedef struct UsdtProbe {
  const UsdtNote **locs;   /* in the provider's note lists, kept for the
                              whole run */
  int nlocs;
} UsdtProbe;

/* check: whether argument `index` can be read in every target of probe
 * p (all usdt). If not, why goes to msg and false is returned. */
bool usdt_arg_usable(const Probe *p, int index, char *msg, size_t len);

/* codegen: argument `index` of the program's target into a register
 * (as a 64-bit value, extended from its size as its sign says). */
struct Gen;
int usdt_emit_arg(struct Gen *g, int index);

#endif
