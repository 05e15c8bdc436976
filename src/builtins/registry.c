/* registry: every group of builtins, and finding a record by name. The
 * lists are short and each name is looked up once per use in the script,
 * so a linear search is all it takes. */
#include <stdbool.h>
#include <string.h>

#include "builtins/builtin.h"

static const Builtin *const groups[] = {
    builtins_context,     builtins_output, builtins_maps,
    builtins_strings,     builtins_aggregation, builtins_histogram,
    builtins_kernel,      builtins_net,         builtins_system,
    builtins_tseries,     builtins_debug,       builtins_stack,
    NULL,
};

/* Whether name is pattern, a name that ends in "N", with a number in
 * place of the N (sarg12 is sargN). */
static bool numbered_name(const char *pattern, const char *name) {
  size_t stem = strlen(pattern) - 1;
  if (pattern[stem] != 'N' || strncmp(pattern, name, stem)) return false;
  const char *digits = name + stem;
  return *digits && strspn(digits, "0123456789") == strlen(digits);
}

const Builtin *builtin_find(const char *name, BuiltinForm form) {
  for (int g = 0; groups[g]; g++)
    for (const Builtin *b = groups[g]; b->name; b++)
      if (b->form == form && strcmp(b->name, name) == 0) return b;
  /* a family of numbered words, one record for all (sargN) */
  for (int g = 0; groups[g]; g++)
    for (const Builtin *b = groups[g]; b->name; b++)
      if (b->form == form && numbered_name(b->name, name)) return b;
  return NULL;
}

const Builtin *builtin_at(int i) {
  for (int g = 0; groups[g]; g++)
    for (const Builtin *b = groups[g]; b->name; b++)
      if (i-- == 0) return b;
  return NULL;
}

/* Looked up for every record: found once per kind, then kept. */
const Builtin *builtin_for_event(uint32_t kind) {
  static const Builtin *by_kind[32];
  static bool looked[32];
  if (kind >= 32) return NULL;
  if (!looked[kind]) {
    for (int g = 0; groups[g] && !by_kind[kind]; g++)
      for (const Builtin *b = groups[g]; b->name; b++)
        if (b->on_event && b->event == kind) {
          by_kind[kind] = b;
          break;
        }
    looked[kind] = true;
  }
  return by_kind[kind];
}

/* Printing asks for a map's AggOps for every entry it sorts: the records
 * are looked up once, then kept by kind. */
const AggOps *agg_ops(AggKind kind) {
  static const AggOps *by_kind[AGG_TSERIES + 1];
  if ((unsigned)kind > AGG_TSERIES) return NULL;
  if (!by_kind[kind])
    for (int g = 0; groups[g]; g++)
      for (const Builtin *b = groups[g]; b->name; b++)
        if (b->agg && b->agg->kind == kind) by_kind[kind] = b->agg;
  return by_kind[kind];
}

int emit_first_argument(Gen *g, Node *n) { return gen_int(g, n->args); }
