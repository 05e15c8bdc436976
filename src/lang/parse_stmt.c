/* parse_stmt: statements and blocks: if/else (and an if/else chain used
 * as a value), while, unroll, for, let, assignments, return, break and
 * continue, and `{ ... }` as a probe's body, a statement or a value. The
 * expressions inside them are parse.c's. */
#include <stdlib.h>
#include <string.h>

#include "lang/lex.h"
#include "lang/parser.h"

static Node *parse_stmt(Parser *P);

/* "(" expr ")" after if/while/unroll; returns the expression and sets
 * *close to the span of ')'. */
/* (cond), or a condition without parentheses up to the '{' (if $x {). */
static Node *parse_condition(Parser *P, Span *close) {
  if (!is_punct(P, '(')) {
    Node *e = parse_expr(P);
    *close = e->span;
    return e;
  }
  expect(P, '(', "(");
  Node *e = parse_expr(P);
  *close = expect(P, ')', ")");
  return e;
}

/* if (cond) { } [else if (cond) { }]... [else { }]. The else-if chain is
 * built in a loop so long chains cost no stack. */
static Node *parse_if(Parser *P) {
  Node *first = NULL, **slot = &first;
  for (;;) {
    Span kw = P->tok.span, close;
    next(P);
    Node *n = node_new(N_IF, kw);
    n->cond = parse_condition(P, &close);
    n->span = span_join(kw, close);
    if (!is_punct(P, '{')) unexpected(P, "{");
    n->then = parse_block(P, false);
    *slot = n;
    if (!is_word(P, "else")) return first;
    next(P);
    if (is_punct(P, '{')) {
      n->els = parse_block(P, false);
      return first;
    }
    if (!is_word(P, "if")) unexpected(P, "{ or if");
    slot = &n->els;
  }
}

/* Whether block b ends in an expression (or an if/else that has values),
 * which is then its value: `if (c) { x } else { y }` used as a value. */
static bool has_value(const Node *b) {
  if (b->lhs) return true;
  const Node *last = b->body;
  while (last && last->next) last = last->next;
  if (!last) return false;
  if (last->kind == N_EXPR_STMT || last->kind == N_INCDEC) return true;
  if (last->kind != N_IF || !last->els) return false;
  return has_value(last->then) &&
         (last->els->kind == N_IF ? has_value(&(Node){.body = last->els})
                                  : has_value(last->els));
}

static Node *if_as_ternary(Node *n);

/* Moves block b's last statement into its value (b->lhs). */
static void take_value(Node *b) {
  if (b->lhs) return;
  Node **last = &b->body;
  while ((*last)->next) last = &(*last)->next;
  Node *s = *last;
  *last = NULL;
  b->lhs = s->kind == N_EXPR_STMT ? s->lhs
           : s->kind == N_IF      ? if_as_ternary(s)
                                  : s;
}

/* An if/else chain whose branches all have values, as the ternaries it
 * stands for (has_value must hold). */
static Node *if_as_ternary(Node *n) {
  Node *t = node_new(N_TERNARY, n->span);
  t->cond = n->cond;
  take_value(n->then);
  t->then = n->then;
  if (n->els->kind == N_IF) {
    t->els = if_as_ternary(n->els);
  } else {
    take_value(n->els);
    t->els = n->els;
  }
  t->span = span_join(n->span, t->els->span);
  return t;
}

/* `if (c) { a } else { b }` where a value is expected. */
Node *parse_if_value(Parser *P) {
  Node *n = parse_if(P);
  if (!n->els || !has_value(&(Node){.body = n}))
    parse_error(P, n->span, "an if used as a value needs an else, and "
                "each branch must end with an expression");
  return if_as_ternary(n);
}

/* while (cond) { } and unroll (n) { }: a header then a block. */
static Node *parse_loop(Parser *P, NodeKind kind) {
  Span kw = P->tok.span, close;
  next(P);
  Node *n = node_new(kind, kw);
  Node *e = parse_condition(P, &close);
  if (kind == N_WHILE)
    n->cond = e;
  else
    n->lhs = e;
  n->span = span_join(kw, close);
  if (!is_punct(P, '{')) unexpected(P, "{");
  n->then = parse_block(P, false);
  return n;
}

/* for ($v : @map) { } and for ($v : start..end) { }. */
static Node *parse_for(Parser *P) {
  Span kw = P->tok.span;
  next(P);
  Node *n = node_new(N_FOR, kw);
  bool paren = is_punct(P, '(');   /* for $kv : @m { } needs none */
  if (paren) next(P);
  if (P->tok.kind != TK_VAR)
    unexpected(P, paren ? "variable" : "( or variable");
  n->lhs = parse_primary(P);
  expect(P, ':', ":");
  if (P->tok.kind == TK_MAP) {
    n->args = parse_primary(P);
  } else {
    n->args = parse_expr(P);
    expect(P, P_RANGE, "..");
    n->rhs = parse_expr(P);
  }
  n->span = span_join(kw, paren ? expect(P, ')', ")") : P->prev.span);
  if (!is_punct(P, '{')) unexpected(P, "{");
  n->then = parse_block(P, false);
  return n;
}

/* return, break, continue. */
static Node *parse_jump(Parser *P, NodeKind kind) {
  Node *n = node_new(kind, P->tok.span);
  next(P);
  if (kind == N_RETURN && !is_punct(P, ';') && !is_punct(P, '}')) {
    n->lhs = parse_expr(P);
    n->span = span_join(n->span, n->lhs->span);
  }
  return n;
}

static Node *parse_simple_stmt(Parser *P);

/* A declared type's array dimensions, "[2][3]", appended to its text. */
void parse_array_dims(Parser *P, char **text, Span *at) {
  while (is_punct(P, '[') || is_punct(P, '*')) {
    bool star = is_punct(P, '*');
    size_t len = strlen(*text) + 24;
    char *grown = malloc(len);
    if (!grown) abort();
    if (star) {
      snprintf(grown, len, "%s *", *text);
      *at = span_join(*at, P->tok.span);
      next(P);
    } else {
      next(P);
      if (P->tok.kind != TK_INT) unexpected(P, "array size");
      snprintf(grown, len, "%s[%llu]", *text, (unsigned long long)P->tok.ival);
      next(P);
      *at = span_join(*at, expect(P, ']', "]"));
    }
    free(*text);
    *text = grown;
  }
}

/* let $x [: type] [= value]: a variable of the enclosing block (the
 * checker scopes it), given its type, its value or neither. */
static Node *parse_let(Parser *P) {
  Node *n = node_new(N_LET, P->tok.span);
  next(P);
  if (P->tok.kind != TK_VAR) unexpected(P, "variable");
  n->lhs = node_new(N_VAR, P->tok.span);
  n->lhs->name = dup_text(P->tok.text, P->tok.len);
  n->span = span_join(n->span, P->tok.span);
  n->op = '=';
  next(P);
  if (is_punct(P, ':')) {
    next(P);
    Span at;
    Node *t = node_new(N_CAST, P->tok.span);
    if (is_word(P, "typeof")) {   /* a type, or the type of an expression */
      Node *of = parse_typeof(P);
      t->name = of->name;
      t->lhs = of->lhs;
      at = of->span;
    } else {
      t->name = parse_type_text(P, &at);
      parse_array_dims(P, &t->name, &at);
    }
    t->span = at;
    n->cond = t;
    n->span = span_join(n->span, at);
  }
  if (P->tok.kind == TK_ASSIGN && P->tok.op == '=') {
    n->part_span = P->tok.span;
    next(P);
    n->rhs = parse_expr(P);
    n->span = span_join(n->span, n->rhs->span);
  } else if (P->tok.kind == TK_ASSIGN) {
    unexpected(P, "=");
  }
  return n;
}

/* An expression statement, an assignment or an increment. */
static Node *parse_simple_stmt(Parser *P) {
  Node *e = parse_expr(P);
  if (e->kind == N_INCDEC) return e;
  if (P->tok.kind == TK_ASSIGN && P->tok.op == '=' &&
      e->kind == N_BUILTIN && strcmp(e->name, "_") == 0) {
    next(P);   /* _ = v: v evaluated, its value discarded on purpose */
    e = parse_expr(P);
  } else if (P->tok.kind == TK_ASSIGN) {
    if (!is_lvalue(e)) unexpected(P, "}");
    int op = P->tok.op;
    Span op_span = P->tok.span;
    next(P);
    Node *rhs = parse_expr(P);
    Node *n = node_new(N_ASSIGN, span_join(e->span, rhs->span));
    n->part_span = op_span;
    n->op = op;
    n->lhs = e;
    n->rhs = rhs;
    return n;
  }
  Node *n = node_new(N_EXPR_STMT, e->span);
  n->lhs = e;
  return n;
}

static bool ends_with_block(const Node *n) {
  return n->kind == N_IF || n->kind == N_WHILE || n->kind == N_UNROLL ||
         n->kind == N_FOR ||
         n->kind == N_BLOCK;
}

static Node *parse_stmt(Parser *P) {
  enter(P);
  Node *n;
  if (is_word(P, "if"))
    n = parse_if(P);
  else if (is_word(P, "while"))
    n = parse_loop(P, N_WHILE);
  else if (is_word(P, "unroll"))
    n = parse_loop(P, N_UNROLL);
  else if (is_word(P, "for"))
    n = parse_for(P);
  else if (is_word(P, "let"))
    n = parse_let(P);
  else if (is_word(P, "return"))
    n = parse_jump(P, N_RETURN);
  else if (is_word(P, "break"))
    n = parse_jump(P, N_BREAK);
  else if (is_word(P, "continue"))
    n = parse_jump(P, N_CONTINUE);
  else if (is_punct(P, '{'))
    n = parse_block(P, false);
  else
    n = parse_simple_stmt(P);
  leave(P);
  return n;
}

/* '{' statements '}'. Statements are separated by ';', which is optional
 * before '}' and after statements ending in a block. A probe or macro body
 * is followed by the next definition (`top`), so the token after its '}'
 * is read with next_top(). With `value` (a block expression, a macro body)
 * a last expression with no ';' after it is the block's value (lhs). */
Node *parse_block_of(Parser *P, bool top, bool value) {
  Node *blk = node_new(N_BLOCK, P->tok.span);
  next(P);
  Node head = {0}, *cur = &head, *before = &head;
  bool open = false;   /* no ';' after the last statement */
  while (!is_punct(P, '}')) {
    if (is_punct(P, ';')) {
      next(P);
      open = false;
      continue;
    }
    if (P->tok.kind == TK_EOF) unexpected(P, "}");
    before = cur;
    cur = cur->next = parse_stmt(P);
    open = !is_punct(P, ';');
    if (!open)
      next(P);
    else if (!is_punct(P, '}') && !ends_with_block(cur))
      unexpected(P, "}");
  }
  if (value && open && (cur->kind == N_EXPR_STMT || cur->kind == N_INCDEC)) {
    blk->lhs = cur->kind == N_EXPR_STMT ? cur->lhs : cur;
    before->next = NULL;
  } else if (value && cur->kind == N_IF && cur->els &&
             has_value(&(Node){.body = cur})) {
    blk->lhs = if_as_ternary(cur);   /* { ...; if (c) { a } else { b } } */
    before->next = NULL;
  }
  blk->body = head.next;
  blk->span = span_join(blk->span, P->tok.span);
  if (top)
    next_top(P);
  else
    next(P);
  return blk;
}

Node *parse_block(Parser *P, bool probe_body) {
  return parse_block_of(P, probe_body, false);
}

/* { statements; value } where an expression may be. */
Node *parse_block_expr(Parser *P) {
  Node *blk = parse_block_of(P, false, true);
  if (!blk->lhs)
    parse_error(P, blk->span, "a block used as a value must end with an "
                "expression, with no ';' after it");
  return blk;
}
