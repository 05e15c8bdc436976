/* plan: loupe's own maps, decided from the checked script and its maps'
 * layouts, so that check only checks and codegen finds every map it
 * addresses already there. */
#include "lang/plan.h"

#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"

/* A one-slot array map of loupe's own (never printed). */
static MapSym *add_internal_array(Compiled *out, const char *name,
                                  int value_size) {
  MapSym *m = calloc(1, sizeof(*m));
  m->name = strdup(name);
  m->id = out->nmaps;
  m->nkeys = 0;
  m->key_size = 4;
  m->value_type = ty_int(8, false);
  m->value_size = value_size;
  m->bpf_type = BPF_MAP_TYPE_ARRAY;
  m->max_entries = 1;
  m->internal = true;
  out->maps = realloc(out->maps, sizeof(MapSym *) * (out->nmaps + 1));
  out->maps[out->nmaps++] = m;
  return m;
}

/* Histogram slots are too large to build on the stack: a new entry is
 * inserted from this never-written array slot of zeroes; so are strings
 * cleared that are longer than BIG_BUFFER. */
static void add_zero_map(Compiled *out) {
  bool big_values = false;
  for (int i = 0; i < out->nmaps; i++)
    big_values |= out->maps[i]->value_type.kind == TY_AGG &&
                  out->maps[i]->bpf_type != BPF_MAP_TYPE_PERCPU_ARRAY &&
                  out->maps[i]->value_size > 16;
  int strlen = out->max_strlen;
  if (!big_values && strlen <= BIG_BUFFER) return;
  int size = strlen > BIG_BUFFER ? ((strlen + 8) & ~7) + 8 : 0;
  for (int i = 0; i < out->nmaps; i++) {
    MapSym *m = out->maps[i];
    if (m->value_type.kind == TY_AGG && m->value_size > size)
      size = m->value_size;
  }
  add_internal_array(out, ZERO_MAP_NAME, size);
}

/* hist()'s table of floor(log2 i) for i below LOG2_TABLE_SIZE. */
static void add_log2_map(Compiled *out) {
  for (int i = 0; i < out->nmaps; i++)
    if (out->maps[i]->value_type.agg == AGG_HIST) {
      MapSym *m = add_internal_array(out, LOG2_MAP_NAME, LOG2_TABLE_SIZE);
      m->init_values = calloc(1, LOG2_TABLE_SIZE);
      for (int v = 2; v < LOG2_TABLE_SIZE; v++)
        m->init_values[v] = (char)(m->init_values[v / 2] + 1);
      return;
    }
}

static AstStep is_use_of(Node *n, void *ctx) {
  const Builtin *const *b = ctx;
  bool use = (n->kind == N_BUILTIN || n->kind == N_CALL) && n->builtin == *b;
  return use ? AST_STOP : AST_ENTER;
}

/* Whether an expression of the list n, or one inside it, is a use of the
 * builtin b (check stored its record in Node.builtin). */
static bool uses(Node *n, const Builtin *b) {
  return ast_walk(n, is_use_of, &b);
}

/* The one-slot array of each builtin with an own_map that a probe uses,
 * in the order of the builtins' records. */
static void add_builtin_maps(const Script *s, Compiled *out) {
  const Builtin *b;
  for (int i = 0; (b = builtin_at(i)); i++) {
    if (!b->own_map) continue;
    for (Probe *p = s->probes; p; p = p->next)
      if (uses(p->pred, b) || uses(p->body, b)) {
        add_internal_array(out, b->own_map, 8);
        break;
      }
  }
}

void plan_own_maps(const Script *s, Compiled *out) {
  add_zero_map(out);
  add_log2_map(out);
  add_builtin_maps(s, out);
}
