/* ast: node allocation (nodes live until the process exits) and enum
 * lookups shared by the checker and the printers. */
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

const char *enum_value_name(const EnumDef *e, int64_t v) {
  for (const Enumerator *it = e ? e->items : NULL; it; it = it->next)
    if (it->value == v) return it->name;
  return NULL;
}
