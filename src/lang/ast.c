/* ast: node allocation. Nodes live until the process exits. */
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
