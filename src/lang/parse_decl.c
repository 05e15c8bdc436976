/* parse_decl: declarations that begin with `let` at the top level of a
 * script — map declarations `let @name = KIND(N);`. Which kinds and sizes
 * are valid is the checker's business (lang/check_decl.c), so that its
 * errors point at the culprit. */
#include <stdlib.h>

#include "lang/parser.h"

/* At the `let` attach word; leaves the next top-level token current. */
MapDecl *parse_map_decl(Parser *P) {
  MapDecl *m = calloc(1, sizeof *m);
  if (!m) abort();
  Span start = P->tok.span;
  next(P);
  if (P->tok.kind != TK_MAP) unexpected(P, "map");
  m->name = dup_text(P->tok.text, P->tok.len);
  m->name_span = P->tok.span;
  next(P);
  if (P->tok.kind != TK_ASSIGN || P->tok.op != '=') unexpected(P, "=");
  next(P);
  if (P->tok.kind != TK_IDENT) unexpected(P, "map type");
  m->kind = dup_text(P->tok.text, P->tok.len);
  m->kind_span = P->tok.span;
  next(P);
  expect(P, '(', "(");
  if (P->tok.kind != TK_INT) unexpected(P, "integer");
  m->max_entries = P->tok.ival;
  next(P);
  Span close = P->tok.span;
  if (!is_punct(P, ')')) unexpected(P, ")");
  m->span = span_join(start, close);
  next(P);
  if (!is_punct(P, ';')) unexpected(P, ";");
  next_top(P);
  return m;
}
