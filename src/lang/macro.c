/* macro: expands macro calls into copies of the macros' bodies.
 *
 * A call `m(a, b)` (or a bare `m` when m has no parameters) becomes a
 * block expression: a copy of m's body whose value is its last expression.
 * In the copy
 *   - a `$x` parameter is the caller's variable passed for it (by
 *     reference: the body reads and changes it);
 *   - an `@m` parameter is the caller's map;
 *   - a plain parameter `x` is a fresh copy of the expression passed for
 *     it at every use, so its side effects happen once per use;
 *   - every other `$var` belongs to this expansion alone (Node.scope), so
 *     the caller's `$y` and the body's `$y` are different variables;
 *   - a map that is not a parameter is an error: a macro sees only what
 *     it is given.
 * Every node copied from a body carries the expansion in its span
 * (Span.exp), so an error found in it later is shown in the macro, then
 * at the call (diag.c).
 *
 * Arguments are expanded in the caller before the call itself, so nested
 * calls like `add_one(add_one(1) + 1)` work from the inside out. A macro
 * that is being expanded may not be called again (recursion is an
 * error). bpftrace's standard library defines each builtin word as a
 * macro `comm()` whose body is `__builtin_comm`; here both spellings
 * become the word, unless the script defines a macro of that name and
 * arity, which wins. */
#include "lang/macro.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"

/* More expansions than this means a script that grows without end; more
 * nested ones, one that would exhaust the C stack. */
#define MAX_EXPANSIONS 100000
#define MAX_NESTING 200

/* One call being expanded. */
typedef struct Expansion {
  const MacroDef *m;
  Node **args;        /* per parameter: the argument, expanded in the
                         caller */
  int scope;          /* Node.scope of the variables the body makes */
  int depth;          /* 1 + the caller's */
  struct Expansion *up;  /* the caller's expansion; NULL: a probe */
} Expansion;

typedef struct Expander {
  Script *s;
  Diag *d;
  int nexpansions;
} Expander;

static Node *walk(Expander *x, Expansion *e, Node *n, bool stmt);
static void walk_list(Expander *x, Expansion *e, Node **slot);

/* ---- copies ----------------------------------------------------------- */

static Node *clone_list(const Node *n, int exp);

/* A deep copy of n (not of the nodes after it); with exp, its spans are
 * marked as copied into that expansion. */
static Node *clone_node(const Node *n, int exp) {
  if (!n) return NULL;
  Node *c = node_new(n->kind, n->span);
  *c = *n;
  c->next = NULL;
  if (exp) {
    c->span.exp = exp;
    c->part_span.exp = exp;
  }
  for (int i = 0; i < AST_SLOTS; i++)
    *ast_slot(c, i) = clone_list(*ast_slot(c, i), exp);
  return c;
}

static Node *clone_list(const Node *n, int exp) {
  Node head = {0}, *cur = &head;
  for (; n; n = n->next) cur = cur->next = clone_node(n, exp);
  return head.next;
}

/* ---- lookups ---------------------------------------------------------- */

static const MacroDef *macro_find(const Script *s, const char *name) {
  for (const MacroDef *m = s->macros; m; m = m->next)
    if (!strcmp(m->name, name)) return m;
  return NULL;
}

/* The position of m's parameter of this kind and name, or -1. */
static int param_index(const MacroDef *m, NodeKind kind, const char *name) {
  int i = 0;
  for (const Node *p = m->params; p; p = p->next, i++)
    if (p->kind == kind && !strcmp(p->name, name)) return i;
  return -1;
}

static int count_list(const Node *n) {
  int k = 0;
  for (; n; n = n->next) k++;
  return k;
}

/* "1 argument", "2 arguments". */
static const char *arguments(int k) {
  static char buf[32];
  snprintf(buf, sizeof buf, "%d argument%s", k, k == 1 ? "" : "s");
  return buf;
}

/* ---- expansion -------------------------------------------------------- */

/* Whether the calls up to e already expand m; reports the chain if so
 * (its last 32 steps). */
static bool recursive(Expander *x, Expansion *e, const MacroDef *m,
                      const Node *call) {
  const Expansion *first = NULL;
  for (const Expansion *u = e; u && !first; u = u->up)
    if (u->m == m) first = u;
  if (!first) return false;
  const char *names[32];
  int k = 0;
  for (const Expansion *u = e; k < 32; u = u->up) {
    names[k++] = u->m->name;
    if (u == first) break;
  }
  char chain[512] = "";
  size_t len = 0;
  for (int i = k - 1; i >= 0 && len < sizeof chain; i--)
    len += (size_t)snprintf(chain + len, sizeof chain - len, "%s > ",
                            names[i]);
  diag_error(x->d, call->span, "macro %s calls itself: %s%s", m->name,
             chain, m->name);
  return true;
}

/* Whether each argument suits its parameter: a variable for $x, a whole
 * map for @m, anything for a plain name. */
static bool args_fit(Expander *x, const MacroDef *m, Node **args) {
  bool ok = true;
  int i = 0;
  for (const Node *p = m->params; p; p = p->next, i++) {
    const Node *a = args[i];
    const char *what = a->kind == N_MAP   ? (a->args ? "a map element"
                                                         : "a map")
                       : a->kind == N_VAR ? "a variable"
                                          : "an expression";
    if ((p->kind == N_VAR && (a->kind != N_VAR || node_is_positional(a))) ||
        (p->kind == N_MAP && (a->kind != N_MAP || a->args))) {
      diag_error(x->d, a->span, "macro %s takes %s for %s, not %s", m->name,
                 p->kind == N_VAR ? "a $variable" : "a whole map", p->name,
                 node_is_positional(a) ? "a positional parameter" : what);
      ok = false;
    }
  }
  return ok;
}

/* The copy of m's body that replaces `call`, whose arguments (args, one
 * per parameter) are expanded already. `stmt`: the call is a statement,
 * so the body need not have a value. */
static Node *expand(Expander *x, Expansion *e, Node *call,
                    const MacroDef *m, Node **args, bool stmt) {
  if (recursive(x, e, m, call) || !args_fit(x, m, args)) return call;
  if (++x->nexpansions > MAX_EXPANSIONS) {
    if (x->nexpansions == MAX_EXPANSIONS + 1)
      diag_error(x->d, call->span, "more than %d macro expansions: the "
                 "script's macros call each other too often",
                 MAX_EXPANSIONS);
    return call;
  }
  Expansion inner = {.m = m, .args = args, .scope = x->nexpansions,
                     .depth = e ? e->depth + 1 : 1, .up = e};
  if (inner.depth > MAX_NESTING) {
    diag_error(x->d, call->span, "macro calls nested more than %d deep",
               MAX_NESTING);
    return call;
  }
  Node *body = clone_node(m->body, diag_expansion(x->d, call->span));
  walk(x, &inner, body, false);
  if (!body->lhs && !stmt) {
    diag_error(x->d, call->span, "macro %s has no value to give: its body "
               "ends with a statement (a last expression without ';' "
               "after it is the value)", m->name);
    return call;
  }
  body->span = call->span;
  /* a body that is only a value is that value, so that a literal stays
   * one (a printf format, a hist() bit count); an empty body stays an
   * empty block */
  return body->body || !body->lhs ? body : body->lhs;
}

/* A word: a plain parameter, a macro without parameters, a builtin. */
static Node *walk_word(Expander *x, Expansion *e, Node *n, bool stmt) {
  int i = e ? param_index(e->m, N_BUILTIN, n->name) : -1;
  if (i >= 0) return clone_node(e->args[i], 0);
  const MacroDef *m = macro_find(x->s, n->name);
  if (m && m->nparams == 0) return expand(x, e, n, m, NULL, stmt);
  if (m && !builtin_find(n->name, BI_WORD)) {
    diag_error(x->d, n->span, "macro %s takes %s: call it as %s(...)",
               m->name, arguments(m->nparams), m->name);
    return n;
  }
  if (!strncmp(n->name, "__builtin_", 10) &&
      builtin_find(n->name + 10, BI_WORD))
    n->name += 10;
  return n;
}

/* A call of a macro, or of a builtin (a macro of the script's with the
 * same name and as many parameters overrides it). */
static Node *walk_call(Expander *x, Expansion *e, Node *n, bool stmt) {
  walk_list(x, e, &n->args);
  int k = count_list(n->args);
  const MacroDef *m = macro_find(x->s, n->name);
  bool is_builtin = builtin_find(n->name, BI_CALL) ||
                    (k == 0 && builtin_find(n->name, BI_WORD));
  if (m && m->nparams == k) {
    Node **args = calloc((size_t)k + 1, sizeof *args);
    if (!args) abort();
    int i = 0;
    for (Node *a = n->args; a; a = a->next) args[i++] = a;
    return expand(x, e, n, m, args, stmt);
  }
  if (m && !is_builtin) {
    diag_error(x->d, n->span, "macro %s takes %s, not %d", m->name,
               arguments(m->nparams), k);
    return n;
  }
  if (k == 0 && !builtin_find(n->name, BI_CALL) &&
      builtin_find(n->name, BI_WORD))
    n->kind = N_BUILTIN;   /* comm() is comm */
  return n;
}

/* $x: a $x parameter is the caller's variable; the body's own variables
 * are its expansion's. */
static Node *walk_var(Expansion *e, Node *n) {
  if (!e) return n;
  int i = param_index(e->m, N_VAR, n->name);
  if (i >= 0) return clone_node(e->args[i], 0);
  n->scope = e->scope;
  return n;
}

/* @m: in a body, only a map parameter, which names the caller's map. */
static void walk_map(Expander *x, Expansion *e, Node *n) {
  walk_list(x, e, &n->args);
  if (!e) return;
  int i = param_index(e->m, N_MAP, n->name);
  if (i >= 0)
    n->name = e->args[i]->name;
  else
    diag_error(x->d, n->span, "macro %s uses the map %s, which is not one "
               "of its parameters: a macro sees only the maps passed to it",
               e->m->name, n->name);
}

/* A type written with a plain parameter's name, as in sizeof(t), sizeof(t *),
 * (t *)x, offsetof(t, f) or let $v: t, where t was given typeof(TYPE):
 * that type. sizeof(t) and let $v: t of any other argument take the
 * argument itself (its type, or typeof(expr)'s), expanded in the caller
 * already: true then, and n is not walked further. */
static bool settle_type_name(Expander *x, Expansion *e, Node *n) {
  size_t len = strcspn(n->name, " *[");
  char word[128];
  if (len >= sizeof word) return false;
  memcpy(word, n->name, len);
  word[len] = 0;
  int i = param_index(e->m, N_BUILTIN, word);
  if (i < 0) return false;
  const Node *a = e->args[i];
  if (a->kind == N_TYPEOF && a->name) {
    size_t size = strlen(a->name) + strlen(n->name + len) + 1;
    char *text = malloc(size);
    if (!text) abort();
    snprintf(text, size, "%s%s", a->name, n->name + len);
    n->name = text;
  } else if (!n->name[len] && (n->kind == N_SIZEOF ||
                               (n->kind == N_CAST && !n->lhs))) {
    n->name = NULL;   /* sizeof(t), or a let's annotation: t's value */
    n->lhs = clone_node(a, 0);
    return true;
  } else {
    diag_error(x->d, n->span, "macro %s uses %s as a type here, so it must "
               "be given one: typeof(TYPE)", e->m->name, word);
  }
  return false;
}

/* sizeof(t[N]) with t given typeof(TYPE) is the size of TYPE[N]. */
static void settle_sizeof_array(Node *n) {
  Node *ix = n->lhs;
  if (!ix || ix->kind != N_INDEX || ix->lhs->kind != N_TYPEOF ||
      !ix->lhs->name || ix->rhs->kind != N_INT || ix->rhs->ival <= 0)
    return;
  size_t size = strlen(ix->lhs->name) + 24;
  n->name = malloc(size);
  if (!n->name) abort();
  snprintf(n->name, size, "%s[%lld]", ix->lhs->name,
           (long long)ix->rhs->ival);
  n->lhs = NULL;
}

/* An expression statement whose expression is a block (an expanded macro
 * or a block passed for a parameter) becomes that block as a statement:
 * its statements, then its value as a statement of its own. */
static Node *flatten(Node *stmt) {
  Node *blk = stmt->lhs;
  if (blk->kind != N_BLOCK) return stmt;
  if (blk->lhs) {
    Node *last = node_new(N_EXPR_STMT, blk->lhs->span);
    last->lhs = blk->lhs;
    blk->lhs = NULL;
    Node **end = &blk->body;
    while (*end) end = &(*end)->next;
    *end = flatten(last);
  }
  return blk;
}

/* Expands the macros in n; returns what replaces it. `stmt`: n is the
 * expression of an expression statement. */
static Node *walk(Expander *x, Expansion *e, Node *n, bool stmt) {
  switch (n->kind) {
  case N_VAR:
    return walk_var(e, n);
  case N_MAP:
    walk_map(x, e, n);
    return n;
  case N_BUILTIN:
    return walk_word(x, e, n, stmt);
  case N_CALL:
    return walk_call(x, e, n, stmt);
  case N_EXPR_STMT:
    n->lhs = walk(x, e, n->lhs, true);
    return flatten(n);
  case N_TYPEOF:
    /* typeof(t) of a parameter given typeof(...) is what t was given */
    if (n->lhs) n->lhs = walk(x, e, n->lhs, false);
    return n->lhs && n->lhs->kind == N_TYPEOF ? n->lhs : n;
  case N_SIZEOF:
  case N_CAST:
  case N_OFFSETOF:
    if (e && n->name && settle_type_name(x, e, n)) return n;
    break;
  default:
    break;
  }
  for (int i = 0; i < AST_SLOTS; i++) walk_list(x, e, ast_slot(n, i));
  if (n->kind == N_SIZEOF) settle_sizeof_array(n);
  return n;
}

/* Expands each node of the list at *slot, in place. */
static void walk_list(Expander *x, Expansion *e, Node **slot) {
  for (; *slot; slot = &(*slot)->next) {
    Node *next = (*slot)->next;
    *slot = walk(x, e, *slot, false);
    (*slot)->next = next;
  }
}

/* Two macros of one name, or two parameters of one macro with one name,
 * are errors. */
static void check_definitions(Expander *x) {
  for (const MacroDef *m = x->s->macros; m; m = m->next) {
    if (macro_find(x->s, m->name) != m)
      diag_error(x->d, m->span, "macro %s is defined twice", m->name);
    for (const Node *p = m->params; p; p = p->next)
      if (param_index(m, p->kind, p->name) != count_list(m->params) -
                                                  count_list(p))
        diag_error(x->d, p->span, "macro %s has two parameters named %s",
                   m->name, p->name);
  }
}

int macro_expand_script(Script *s, Diag *d) {
  Expander x = {.s = s, .d = d};
  int errors = d->errors;
  check_definitions(&x);
  if (d->errors > errors) return -1;
  for (Probe *p = s->probes; p; p = p->next) {
    if (p->pred) p->pred = walk(&x, NULL, p->pred, false);
    p->body = walk(&x, NULL, p->body, false);
  }
  return d->errors > errors ? -1 : 0;
}
