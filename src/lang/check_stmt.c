/* check_stmt: statements: assignments (=, op=, ++, --) to variables and
 * maps, if, while, unroll, for over a range or a map (its body in a frame
 * of its own), return, break, continue, and blocks with the variables
 * they scope. */
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/checker.h"

/* The value x op= v combines with: what the variable or map holds. */
static Type compound_target_type(Checker *c, Node *lhs) {
  Type t = ty_int(8, true);
  if (lhs->kind == N_VAR) {
    VarSym *v = var_find(c, lhs);
    if (v && v->type.kind != TY_NONE) t = v->type;
  } else if (lhs->kind == N_MAP) {
    MapSym *m = map_find(c->out, lhs->name);
    if (m && m->value_type.kind != TY_NONE && m->value_type.kind != TY_AGG)
      t = m->value_type;
  }
  return t;
}

void check_assign(Checker *c, Node *n) {
  const char *outer_map = c->assign_map;
  c->in_assign_rhs = n->op == '=' && n->lhs->kind == N_MAP;
  c->assign_map = n->lhs->kind == N_MAP ? n->lhs->name : NULL;
  check_expr(c, n->rhs);
  c->in_assign_rhs = false;
  c->assign_map = outer_map;
  check_assigned(c, n);
}

/* $x = v where v failed to check (reported): $x exists, of no type, so
 * that its uses do not add "undeclared" errors after the real one. */
static void var_broken(Checker *c, Node *lhs) {
  if (lhs->kind != N_VAR || c->d->errors == 0) return;
  VarSym *v = var_find(c, lhs);
  if (!v) v = var_new(c, lhs);
  if (v->type.kind == TY_NONE) v->broken = true;
}

void check_assigned(Checker *c, Node *n) {
  Node *lhs = n->lhs;
  Type t = n->rhs->type;
  if (t.kind == TY_VOID || t.kind == TY_NONE) var_broken(c, lhs);
  if (t.kind == TY_VOID) {
    const Node *call = n->rhs;
    while (call->kind == N_BLOCK && call->lhs) call = call->lhs;
    error_at(c, n->rhs->span, "%s() has no value to assign",
             call->name ? call->name : "this");
    return;
  }
  if (n->op != '=' && t.kind != TY_INT && t.kind != TY_NONE) {
    /* x op= v is x = x op v, and fails as that binary operation does */
    error_at(c, n->span, "Type mismatch for '%s': comparing '%s' with '%s'",
             op_text(n->op), TYPE_NAME(compound_target_type(c, lhs)),
             TYPE_NAME(t));
    return;
  }
  if (lhs->kind == N_VAR) {
    VarSym *v = var_find(c, lhs);
    if (n->op != '=' && v && v->let && v->type.kind == TY_NONE &&
        t.kind == TY_INT) {
      v->type = ty_int(8, true);   /* let $n; $n += k: from 0 */
    } else if (n->op != '=') {
      if (!v || v->type.kind == TY_NONE) {
        error_at(c, lhs->span, "Undefined or undeclared variable: %s",
                 lhs->name);
        return;
      }
    } else if (!v) {
      v = var_new(c, lhs);
    }
    lhs->var = v;
    if (t.kind == TY_NONE) return;
    if (t.kind == TY_ARGS) {
      error_at(c, n->rhs->span, "a variable can not hold %s; keep a pointer "
               "to it instead", TYPE_NAME(t));
      return;
    }
    Type held = n->op == '=' ? int_operand_type(c, n->rhs) : ty_void();
    t = ty_stored(t);
    /* bpftrace points at the '=' of a plain assignment */
    Span at = n->op == '=' ? n->part_span : n->span;
    if (v->type.kind == TY_NONE) {
      v->type = t;
    } else if (v->type.kind == TY_TUPLE && t.kind == TY_TUPLE &&
               !same_layout(v->type, t)) {
      if (!tuple_union(v->type, t, &v->type)) {
        error_at(c, at, "Tuple type mismatch: %s != %s.",
                 TYPE_NAME(v->type), TYPE_NAME(t));
        return;
      }
    } else if (v->type.kind != t.kind || !same_stack(v->type, t) ||
               ((t.kind == TY_BUF || t.kind == TY_CVAL) &&
                !same_layout(v->type, t))) {
      error_at(c, at, "Type mismatch for %s: trying to assign value of "
               "type '%s' when variable already contains a value of type "
               "'%s'", lhs->name, TYPE_NAME(t), TYPE_NAME(v->type));
      return;
    } else if (t.kind == TY_STR && t.size > v->type.size) {
      v->type.size = t.size;
    }
    var_holds(v, held);
    /* the variable a loop body's one stands for holds the same */
    for (VarSym *o = v->outer; o; o = o->outer)
      if (o->type.kind == TY_NONE ||
          (o->type.kind == TY_STR && o->type.size < v->type.size))
        o->type = v->type;
      else if (o->type.kind == TY_TUPLE && v->type.kind == TY_TUPLE &&
               !same_layout(o->type, v->type))
        tuple_union(o->type, v->type, &o->type);
    lhs->type = v->type;
    if (n->op == '+' || n->op == '-') n->field_offset = pointer_step(v->type);
    return;
  }
  if (lhs->kind != N_MAP) {
    error_at(c, lhs->span, "can only assign to a $variable or a @map");
    return;
  }
  check_map_keys(c, lhs);
  if (n->op != '=') {
    /* @m[k] op= v: the map holds plain integers (or already sums). */
    MapSym *m = lhs->map;
    if (m->value_type.kind == TY_AGG) {
      error_at(c, n->span, "%s holds %s() values; it can not be changed "
               "with '%s='", m->name, agg_name(m->value_type.agg),
               op_text(n->op));
      return;
    }
    map_set_value(c, m, ty_int(8, true), lhs->span, n->span);
  } else {
    map_set_value(c, lhs->map, t, lhs->span, n->part_span);
    if (t.kind == TY_AGG && n->rhs->kind == N_CALL && c->pass == 2 &&
        agg_ops(t.agg)->check_map)
      agg_ops(t.agg)->check_map(c, lhs->map, n->rhs);
  }
  lhs->type = lhs->map->value_type;
  /* p += k moves a pointer by whole elements */
  if (n->op == '+' || n->op == '-') n->field_offset = pointer_step(lhs->type);
}

void check_incdec(Checker *c, Node *n) {
  Node *lhs = n->lhs;
  if (lhs->kind == N_VAR) {
    check_expr(c, lhs);
    if (lhs->type.kind != TY_INT && lhs->type.kind != TY_NONE)
      error_at(c, n->span, "The %s operator can not be used on expressions "
               "of type '%s'", op_text(n->op), TYPE_NAME(lhs->type));
    n->field_offset = pointer_step(lhs->type);   /* $p++ moves by elements */
    if (lhs->var) var_holds(lhs->var, ty_void());
    return;
  }
  if (lhs->kind != N_MAP) {
    error_at(c, lhs->span, "%s needs a $variable or a @map",
             op_text(n->op));
    return;
  }
  check_map_keys(c, lhs);
  MapSym *m = lhs->map;
  Type v = m->value_type;
  if (v.kind != TY_INT && v.kind != TY_NONE) {
    error_at(c, n->span, "The %s operator can not be used on expressions "
             "of type '%s'", op_text(n->op),
             v.kind == TY_AGG ? agg_name(v.agg) : TYPE_NAME(v));
    return;
  }
  map_set_value(c, m, ty_int(8, true), lhs->span, n->span);
  lhs->type = m->value_type;
  n->field_offset = pointer_step(lhs->type);
}

/* The loop variable of a for: declared by it, an error if it exists. */
static VarSym *for_variable(Checker *c, Node *var, Type t) {
  VarSym *v = var_find(c, var);
  if (v && v->type.kind != TY_NONE && !same_layout(v->type, t)) {
    error_at(c, var->span, "Type mismatch for %s: the loop gives it type "
             "'%s' but it already holds '%s'", var->name, TYPE_NAME(t),
             TYPE_NAME(v->type));
    return NULL;
  }
  if (!v) v = var_new(c, var);
  /* $kv widened by the body ($kv = (1, "longer")) keeps the widest layout
   * var_new learnt, which every read sees; the node keeps the map's, and
   * each entry is converted from it */
  Type wide;
  if (v->type.kind != TY_TUPLE || !tuple_union(t, v->type, &wide) ||
      !same_layout(wide, v->type))
    v->type = t;
  var_holds(v, ty_void());
  var->var = v;
  var->type = t;
  return v;
}

/* The body of loop n gets a frame of its own (Node.ival), inside the
 * one being checked. */
static void enter_frame(Checker *c, Node *n) {
  int outer = c->frame;
  c->frame = ++c->nframes;
  if (c->frame < (int)(sizeof c->frame_parent / sizeof c->frame_parent[0]))
    c->frame_parent[c->frame] = outer;
  n->ival = c->frame;
}

/* for ($i : a..b) counts from a up to b - 1; for ($kv : @m) visits each
 * entry with $kv = (key, value). */
static void check_for(Checker *c, Node *n) {
  Node *src = n->args;
  if (n->lhs->kind != N_VAR || n->lhs->name[1] == '#' ||
      (n->lhs->name[1] >= '0' && n->lhs->name[1] <= '9')) {
    error_at(c, n->lhs->span, "a for loop needs a $variable");
    return;
  }
  if (n->rhs) {
    check_expr(c, src);
    check_expr(c, n->rhs);
    for (Node *e = src; e; e = e == src ? n->rhs : NULL)
      if (e->type.kind != TY_INT && e->type.kind != TY_NONE) {
        error_at(c, e->span, "a range's bounds must be integers, not %s",
                 TYPE_NAME(e->type));
        return;
      }
    int64_t lo, hi;
    if (const_int(src, &lo) && const_int(n->rhs, &hi)) {
      for_variable(c, n->lhs, ty_int(8, true));
      c->loop_depth++;
      check_block(c, n->then);
      c->loop_depth--;
      return;
    }
    /* bounds known only when it runs: the body is a bpf_loop callback,
     * in a frame of its own as a for-over-map body is */
    int outer = c->frame, outer_depth = c->loop_depth;
    enter_frame(c, n);
    for_variable(c, n->lhs, ty_int(8, true));
    c->loop_depth = 1;
    check_block(c, n->then);
    c->loop_depth = outer_depth;
    c->frame = outer;
    return;
  }
  MapSym *m = map_get(c, src);
  src->map = m;
  if (m->value_type.kind == TY_NONE) {
    error_at(c, src->span, "Undefined map: %s", m->name);
    return;
  }
  int agg = m->value_type.kind == TY_AGG ? (int)m->value_type.agg : -1;
  bool readable = agg == -1 || agg == AGG_COUNT || agg == AGG_SUM ||
                  agg == AGG_MIN || agg == AGG_MAX || agg == AGG_AVG;
  if (!readable || m->nkeys <= 0) {
    error_at(c, src->span, "loupe can loop over maps of keys and plain "
             "values, counts, sums, mins, maxes and averages only; %s "
             "holds %s", m->name,
             m->nkeys <= 0 ? "no keys" : TYPE_NAME(m->value_type));
    return;
  }
  /* the body runs in its own frame: $kv and what it declares */
  int outer = c->frame, outer_depth = c->loop_depth;
  enter_frame(c, n);
  TupleType *kv = calloc(1, sizeof(*kv));
  kv->n = 2;
  kv->elems = calloc(2, sizeof(Type));
  kv->offs = calloc(2, sizeof(int));
  if (m->nkeys == 1) {
    kv->elems[0] = m->key_types[0];
  } else {
    TupleType *keys = calloc(1, sizeof(*keys));
    keys->n = m->nkeys;
    keys->elems = calloc(m->nkeys, sizeof(Type));
    keys->offs = calloc(m->nkeys, sizeof(int));
    for (int i = 0; i < m->nkeys; i++) {
      keys->elems[i] = m->key_types[i];
      keys->offs[i] = keys->size;
      keys->size += value_cap(m->key_types[i]);
    }
    kv->elems[0].kind = TY_TUPLE;
    kv->elems[0].tuple = keys;
    kv->elems[0].size = keys->size;
  }
  /* an aggregation's value as a read gives it */
  kv->elems[1] = agg == -1 ? m->value_type : agg_read_type(agg);
  kv->offs[1] = value_cap(kv->elems[0]);
  kv->size = kv->offs[1] + value_cap(kv->elems[1]);
  Type t = {.kind = TY_TUPLE, .tuple = kv, .size = kv->size};
  for_variable(c, n->lhs, t);
  c->loop_depth = 1;
  check_block(c, n->then);
  c->loop_depth = outer_depth;
  c->frame = outer;
}

static void check_stmt(Checker *c, Node *n) {
  switch (n->kind) {
  case N_EXPR_STMT:
    /* `args;` reads nothing */
    c->args_not_whole = n->lhs->kind == N_BUILTIN && n->lhs->name &&
                        !strcmp(n->lhs->name, "args");
    check_expr(c, n->lhs);
    c->args_not_whole = false;
    break;
  case N_ASSIGN:
    check_assign(c, n);
    break;
  case N_INCDEC:
    check_incdec(c, n);
    break;
  case N_IF:
    check_expr(c, n->cond);
    if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE)
      error_at(c, n->cond->span, "an if condition must be an integer, not %s",
               TYPE_NAME(n->cond->type));
    check_block(c, n->then);
    if (n->els) check_stmt(c, n->els);
    break;
  case N_BLOCK:
    check_block(c, n);
    break;
  case N_WHILE:
    check_expr(c, n->cond);
    if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE)
      error_at(c, n->cond->span, "a while condition must be an integer, "
               "not %s", TYPE_NAME(n->cond->type));
    c->loop_depth++;
    check_block(c, n->then);
    c->loop_depth--;
    break;
  case N_UNROLL: {
    int64_t v = 0;
    check_expr(c, n->lhs);   /* unroll($1): the parameter's value */
    if (!const_int(n->lhs, &v)) {
      error_at(c, n->lhs->span, "unroll needs an integer literal count");
    } else if (v > 100) {
      error_at(c, n->span, "unroll maximum value is 100");
    } else if (v < 1) {
      error_at(c, n->span, "unroll minimum value is 1");
    }
    n->ival = v;
    check_block(c, n->then);
    break;
  }
  case N_BREAK:
  case N_CONTINUE:
    if (c->loop_depth == 0)
      error_at(c, n->span, "%s used outside of a loop",
               n->kind == N_BREAK ? "break" : "continue");
    break;
  case N_RETURN:
    /* return v: the program's return value */
    if (n->lhs) {
      check_expr(c, n->lhs);
      if (n->lhs->type.kind != TY_INT && n->lhs->type.kind != TY_NONE)
        error_at(c, n->lhs->span, "a probe can only return an integer, not "
                 "%s", TYPE_NAME(n->lhs->type));
    }
    break;
  case N_FOR:
    check_for(c, n);
    break;
  case N_LET:
    check_let(c, n);
    break;
  default:
    error_at(c, n->span, "loupe does not support this statement yet");
    break;
  }
}

/* Whether control never goes on after statement s: return, break,
 * continue, exit(). */
static bool stmt_ends(const Node *s) {
  return s->kind == N_RETURN || s->kind == N_BREAK || s->kind == N_CONTINUE ||
         (s->kind == N_EXPR_STMT && s->lhs->kind == N_CALL &&
          s->lhs->builtin && s->lhs->builtin->event == EV_EXIT);
}

void check_block(Checker *c, Node *n) {
  bool scoped = c->nopen < (int)(sizeof c->open / sizeof c->open[0]);
  if (scoped) c->open[c->nopen++] = ++c->nblocks;
  for (Node *s = n->body; s; s = s->next) {
    check_stmt(c, s);
    if (c->pass == 2 && s->next && stmt_ends(s))
      diag_warning(c->d, s->next->span, "Unreachable statement: it comes "
                   "after %s, which never goes on", s->kind == N_RETURN ? "return"
                   : s->kind == N_BREAK ? "break" : s->kind == N_CONTINUE
                   ? "continue" : "exit()");
  }
  if (n->lhs) check_expr(c, n->lhs);  /* a block expression's value */
  if (scoped) c->nopen--;
}
