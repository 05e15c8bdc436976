/* ast: node allocation (nodes live until the process exits), the one
 * walk over a node's children that the passes share, and enum lookups
 * shared by the checker and the printers. */
#include "lang/ast.h"

#include <stdio.h>
#include <stdlib.h>

Node *node_new(NodeKind kind, Span span) {
  Node *n = calloc(1, sizeof *n);
  if (!n) {
    fputs("loupe: out of memory\n", stderr);
    abort();
  }
  n->kind = kind;
  n->span = span;
  return n;
}

bool node_is_positional(const Node *n) {
  if ((n->kind != N_VAR && n->kind != N_INT && n->kind != N_STR) ||
      !n->name || n->name[0] != '$')
    return false;
  char c = n->name[1];
  return (c >= '0' && c <= '9') || c == '#';
}

Node **ast_slot(Node *n, int i) {
  switch (i) {
  case 0: return &n->lhs;
  case 1: return &n->rhs;
  case 2: return &n->cond;
  case 3: return &n->then;
  case 4: return &n->els;
  case 5: return &n->args;
  default: return &n->body;
  }
}

bool ast_walk(Node *n, AstVisit visit, void *ctx) {
  for (; n; n = n->next) {
    AstStep step = visit(n, ctx);
    if (step == AST_STOP ||
        (step == AST_ENTER && ast_walk_children(n, visit, ctx)))
      return true;
  }
  return false;
}

bool ast_walk_children(Node *n, AstVisit visit, void *ctx) {
  for (int i = 0; i < AST_SLOTS; i++)
    if (ast_walk(*ast_slot(n, i), visit, ctx)) return true;
  return false;
}

const char *enum_value_name(const EnumDef *e, int64_t v) {
  for (const Enumerator *it = e ? e->items : NULL; it; it = it->next)
    if (it->value == v) return it->name;
  return NULL;
}
