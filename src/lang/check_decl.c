/* check_decl: map declarations (`let @m = KIND(N);`) give a map its BPF
 * map type and size once the checker knows what the map holds; `let`
 * declares variables, and the width of what variables hold is noted. */
#include <linux/bpf.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/ctype.h"

static const struct {
  const char *name;
  uint32_t bpf_type;
  bool percpu;
} map_kinds[] = {
    {"hash", BPF_MAP_TYPE_HASH, false},
    {"lruhash", BPF_MAP_TYPE_LRU_HASH, false},
    {"percpuhash", BPF_MAP_TYPE_PERCPU_HASH, true},
    {"percpulruhash", BPF_MAP_TYPE_LRU_PERCPU_HASH, true},
};
#define NKINDS (int)(sizeof map_kinds / sizeof map_kinds[0])

static int kind_index(const char *name) {
  for (int i = 0; i < NKINDS; i++)
    if (!strcmp(map_kinds[i].name, name)) return i;
  return -1;
}

/* Kind, size and uniqueness: what can be judged before the probes are. */
int check_map_decls(Script *s, Diag *d) {
  int errors = d->errors;
  for (MapDecl *m = s->map_decls; m; m = m->next) {
    if (s->settings->forbid_map_decl)
      diag_error(d, m->span, "map declarations are an unstable feature, "
                 "which the config forbids (unstable_map_decl = error)");
    if (kind_index(m->kind) < 0)
      diag_error(d, m->kind_span, "unknown map type %s: expected hash, "
                 "lruhash, percpuhash or percpulruhash", m->kind);
    else if (m->max_entries < 1 || m->max_entries > (1u << 24))
      diag_error(d, m->span, "%s: the number of entries must be between 1 "
                 "and %u", m->name, 1u << 24);
    for (MapDecl *o = s->map_decls; o != m; o = o->next)
      if (!strcmp(o->name, m->name)) {
        diag_error(d, m->name_span, "%s is declared twice (first at line "
                   "%d, column %d)", m->name, o->name_span.line,
                   o->name_span.col);
        break;
      }
  }
  return d->errors - errors;
}

/* After map_layout: the declared type replaces the one picked from the
 * value, if the value suits it (aggregations are kept per CPU, anything
 * else in one value shared by all CPUs). */
void apply_map_decls(Script *s, Compiled *out, Diag *d) {
  for (MapDecl *m = s->map_decls; m; m = m->next) {
    MapSym *sym = map_find(out, m->name);
    if (!sym) {
      diag_warning(d, m->name_span, "Unused map: %s", m->name);
      continue;
    }
    int k = kind_index(m->kind);
    bool agg = sym->value_type.kind == TY_AGG;
    if (agg && !map_kinds[k].percpu) {
      diag_error(d, m->kind_span, "%s holds an aggregation (%s()), which "
                 "needs a per-CPU map: percpuhash or percpulruhash, not %s",
                 m->name, agg_name(sym->value_type.agg), m->kind);
      continue;
    }
    if (!agg && map_kinds[k].percpu) {
      diag_error(d, m->kind_span, "%s is a %s, which can only hold "
                 "aggregations such as count() or sum(); use hash or lruhash",
                 m->name, m->kind);
      continue;
    }
    sym->bpf_type = map_kinds[k].bpf_type;
    sym->max_entries = (uint32_t)m->max_entries;
    if (sym->direct) {   /* a hash after all, as declared */
      sym->direct = false;
      sym->key_size = 8;
      sym->value_size = value_cap(sym->value_type);
    }
  }
}

/* let $x [: type] [= value]: a new variable in the innermost block. With
 * an integer type it keeps that width: what it is given wraps. */
void check_let(Checker *c, Node *n) {
  Node *var = n->lhs;
  VarSym *old = var_find(c, var);
  if (old) {
    error_at(c, var->span, "%s is already declared in this scope; a variable "
             "is declared once per scope", var->name);
    return;
  }
  VarSym *v = var_new(c, var);
  v->let = n;
  var->var = v;
  Type t;
  if (n->cond) {
    if (!type_given(c, n->cond->name, n->cond->lhs, n->cond->span, &t))
      return;
    v->type = ty_stored(t);
    if (t.kind == TY_INT && !t.is_pointer) v->decl = t;
  } else {
    v->type = n->type;  /* from the first pass, or none yet */
  }
  var->type = v->type;
  if (!n->rhs) return;
  check_expr(c, n->rhs);
  if (n->cond) {
    Type r = n->rhs->type;
    TypeKind rk = r.kind == TY_RECORD ? TY_CVAL : r.kind;  /* copied */
    if (r.kind != TY_NONE &&
        (rk != t.kind || r.is_pointer != t.is_pointer)) {
      char want[64], got[64];
      error_at(c, n->rhs->span, "%s is declared %s; it can not hold %s",
               var->name, type_name(t, want, sizeof want),
               type_name(r, got, sizeof got));
      return;
    }
  }
  check_assigned(c, n);
}

void var_holds(VarSym *v, Type t) {
  int width = 8;
  if (t.kind == TY_INT && !t.is_pointer && t.is_signed == v->type.is_signed &&
      (t.size == 1 || t.size == 2 || t.size == 4))
    width = t.size;
  if (width > v->int_width) v->int_width = width;
}

/* The width v's reads have: its declared one, else what every value
 * stored in it fits. The second pass knows every store from the first
 * (a variable of a loop body and the one it stands for, or two of one
 * name in different blocks, count as one: narrower never than true). */
static int var_width(Checker *c, const VarSym *v) {
  if (v->decl.kind == TY_INT) return v->decl.size;
  if (c->pass != 2) return v->int_width ? v->int_width : 8;
  int width = 0;
  for (const VarSym *l = c->learnt_vars; l; l = l->next)
    if (!strcmp(l->name, v->name) && l->scope == v->scope)
      width = l->int_width > width ? l->int_width : width;
  return width ? width : 8;
}

Type int_operand_type(Checker *c, const Node *n) {
  Type t = n->type;
  if (n->kind != N_VAR || !n->var || t.kind != TY_INT || t.is_pointer)
    return t;
  int width = var_width(c, n->var);
  if (width < t.size) t.size = width;
  return t;
}
