/* config: the settings of bpftrace's config variables, from the script's
 * `config = { ... }` block and the BPFTRACE_* environment variables. */
#ifndef LOUPE_CONFIG_H
#define LOUPE_CONFIG_H

#include <stdbool.h>

#include "lang/diag.h"
#include "settings.h"

struct Script;
struct Diag;

/* Fills the config part of *s->settings: defaults, then the config
 * block, then the environment (which bpftrace lets win). Bad keys and
 * values are located errors; keys loupe does not act on are warnings.
 * Returns the number of errors. */
int config_read(struct Script *s, struct Diag *d);

/* config() (and `config`): a record of every setting's value, as literal
 * nodes located at `at`, for the checker to type. */
struct Node *config_record(const struct Script *s, Span at);

#endif
