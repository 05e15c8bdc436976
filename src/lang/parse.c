/* parse: recursive descent over the tokens of lex.c, with precedence
 * climbing for binary operators. The first error is reported in bpftrace's
 * words ("syntax error, unexpected map, expecting }") and ends the parse:
 * every error path longjmps back to parse_script, which returns NULL. */
#include "lang/parse.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lex.h"
#include "lang/parser.h"


char *dup_text(const char *s, int len) {
  char *p = malloc((size_t)len + 1);
  if (!p) abort();
  memcpy(p, s, (size_t)len);
  p[len] = 0;
  return p;
}


void parse_error(Parser *P, Span at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(P->d, at, fmt, ap);
  va_end(ap);
  longjmp(P->on_error, 1);
}

/* "syntax error, unexpected X[, expecting Y]" at the current token. At the
 * end of the file the last real token is underlined instead, as there is
 * nothing to point at. */

void unexpected(Parser *P, const char *expecting) {
  char buf[64];
  const char *name = lex_token_name(&P->tok, buf, sizeof buf);
  Span at = P->tok.span;
  if (P->tok.kind == TK_EOF && P->prev.span.line) at = P->prev.span;
  if (expecting)
    parse_error(P, at, "syntax error, unexpected %s, expecting %s", name,
                expecting);
  parse_error(P, at, "syntax error, unexpected %s", name);
}

void next(Parser *P) {
  P->prev = P->tok;
  lex_next(&P->lx, &P->tok);
}

/* Advances where a probe may start (after a probe body, after ','). */
void next_top(Parser *P) {
  P->prev = P->tok;
  lex_top(&P->lx, &P->tok);
}

/* The token after the current one, without consuming anything. */
static Token peek(Parser *P) {
  Lexer saved = P->lx;
  Token t;
  lex_next(&P->lx, &t);
  P->lx = saved;
  return t;
}

bool is_punct(Parser *P, int op) {
  return P->tok.kind == TK_PUNCT && P->tok.op == op;
}

bool token_is_word(const Token *t, const char *word) {
  return t->kind == TK_IDENT && (int)strlen(word) == t->len &&
         !strncmp(t->text, word, t->len);
}

bool is_word(Parser *P, const char *word) {
  return token_is_word(&P->tok, word);
}

/* Consumes the punctuator `op` or reports what was expected instead. */
Span expect(Parser *P, int op, const char *expecting) {
  if (!is_punct(P, op)) unexpected(P, expecting);
  Span s = P->tok.span;
  next(P);
  return s;
}

void enter(Parser *P) {
  if (++P->depth > MAX_DEPTH)
    parse_error(P, P->tok.span, "nesting too deep (more than %d levels)",
                MAX_DEPTH);
}

void leave(Parser *P) { P->depth--; }

/* ---- expressions ---------------------------------------------------- */

static Node *parse_unary(Parser *P);

bool is_lvalue(const Node *n) {
  return n->kind == N_VAR || n->kind == N_MAP;
}

static Node *new_incdec(Parser *P, Node *target, int op, bool prefix,
                        Span whole, Span op_span) {
  if (!is_lvalue(target))
    parse_error(P, op_span, "'%s' needs a $variable or @map to change",
                op == OP_INC ? "++" : "--");
  Node *n = node_new(N_INCDEC, whole);
  n->op = op;
  n->lhs = target;
  n->ival = prefix;
  return n;
}

/* A comma-separated list up to `close` (')' or ']'), which is consumed;
 * *end receives its span. */
static Node *parse_list(Parser *P, int close, const char *expecting,
                        Span *end) {
  Node head = {0}, *cur = &head;
  if (!is_punct(P, close)) {
    for (;;) {
      cur = cur->next = parse_expr(P);
      if (!is_punct(P, ',')) break;
      next(P);
    }
  }
  *end = expect(P, close, expecting);
  return head.next;
}

/* Words that can open a cast: "(uint8)x", "(struct sock *)arg0". */
static bool is_type_word(const Token *t) {
  static const char *const words[] = {
      "int8",  "int16",  "int32",  "int64", "uint8", "uint16",   "uint32",
      "uint64", "int",   "char",   "short", "long",  "unsigned", "signed",
      "bool",  "void",   "struct", "union", "enum",  "const",    NULL,
  };
  for (int i = 0; words[i]; i++)
    if (token_is_word(t, words[i])) return true;
  return false;
}

/* The type words and '*'s from the current token on, normalised: words
 * joined by single spaces, a space before the first '*' and none between
 * '*'s ("struct task_struct *", "char **"). *at receives their span. */
char *parse_type_text(Parser *P, Span *at) {
  char type[256] = "";
  size_t len = 0;
  *at = P->tok.span;
  while (P->tok.kind == TK_IDENT || is_punct(P, '*')) {
    bool star = is_punct(P, '*');
    int n = P->tok.len;
    if (len + (size_t)n + 2 >= sizeof type)
      parse_error(P, P->tok.span, "type name too long");
    if (len && !(star && type[len - 1] == '*')) type[len++] = ' ';
    memcpy(type + len, P->tok.text, (size_t)n);
    len += (size_t)n;
    type[len] = 0;
    *at = span_join(*at, P->tok.span);
    next(P);
  }
  if (!len) unexpected(P, "type");
  return dup_text(type, (int)len);
}

/* The ')' closing a cast's type (its text, or a typeof node), then the
 * operand. */
static Node *cast_operand(Parser *P, Span open, char *type, Node *of) {
  Span close = expect(P, ')', ")");
  Node *operand = parse_unary(P);
  Node *n = node_new(N_CAST, span_join(open, operand->span));
  n->part_span = span_join(open, close);
  n->name = type;
  n->rhs = of;
  n->lhs = operand;
  return n;
}

/* After '(' with a type word next: the type up to ')', then the operand.
 * An array type, "(int8[8])x" or "(uint8[])x", keeps its brackets, and
 * the postfix modifiers after them ("(int32[4] *)p") their order. */
static Node *parse_cast(Parser *P, Span open) {
  Span type_span;
  char *type = parse_type_text(P, &type_span);
  if (is_punct(P, '[') && peek(P).kind == TK_PUNCT && peek(P).op == ']') {
    next(P);
    next(P);
    char *whole = malloc(strlen(type) + 3);
    if (!whole) abort();
    strcpy(whole, type);
    strcat(whole, "[]");
    free(type);
    type = whole;
  }
  parse_array_dims(P, &type, &type_span);
  return cast_operand(P, open, type, NULL);
}

/* True at string[N], the string type of N bytes. */
static bool starts_string_type(Parser *P) {
  Token after = peek(P);
  return is_word(P, "string") && after.kind == TK_PUNCT && after.op == '[';
}

/* True if a type, not an expression, starts here: a type word, a plain
 * identifier (a typedef such as pid_t) followed by ')' or '*', or
 * string[N]. */
static bool starts_type(Parser *P) {
  if (is_type_word(&P->tok)) return true;
  if (P->tok.kind != TK_IDENT) return false;
  char buf[64];
  if (strcmp(lex_token_name(&P->tok, buf, sizeof buf), "identifier"))
    return false;
  Token after = peek(P);
  return after.kind == TK_PUNCT &&
         (after.op == ')' || after.op == '*' || starts_string_type(P));
}

/* sizeof(TYPE), sizeof(TYPE[N]) or sizeof(expr), after the keyword. */
static Node *parse_sizeof(Parser *P) {
  Node *n = node_new(N_SIZEOF, P->tok.span);
  next(P);
  expect(P, '(', "(");
  Span type_span;
  if (starts_type(P)) {
    n->name = parse_type_text(P, &type_span);
    parse_array_dims(P, &n->name, &type_span);
  } else {
    n->lhs = parse_expr(P);
  }
  n->span = span_join(n->span, expect(P, ')', ")"));
  return n;
}

/* typeof(TYPE) or typeof(expr), after the keyword: a type to give to a
 * macro, sizeof() or a let. A lone word (typeof(size_t), or a macro's
 * parameter) is read as an expression; the macro expander and the
 * checker see which it is. */
Node *parse_typeof(Parser *P) {
  Node *n = node_new(N_TYPEOF, P->tok.span);
  next(P);
  expect(P, '(', "(");
  Token after = peek(P);
  if (is_type_word(&P->tok) ||
      (starts_type(P) && !(after.kind == TK_PUNCT && after.op == ')'))) {
    Span type_span;
    n->name = parse_type_text(P, &type_span);
    parse_array_dims(P, &n->name, &type_span);
  } else {
    n->lhs = parse_expr(P);
  }
  n->span = span_join(n->span, expect(P, ')', ")"));
  return n;
}

/* offsetof(TYPE, member[.member...]), after the keyword. */
/* A member path "a" or "a.b.c" into n->sval. */
static void parse_member_path(Parser *P, Node *n) {
  char path[256] = "";
  size_t len = 0;
  for (;;) {
    if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
    if (len + (size_t)P->tok.len + 2 >= sizeof path)
      parse_error(P, P->tok.span, "member name too long");
    if (len) path[len++] = '.';
    memcpy(path + len, P->tok.text, (size_t)P->tok.len);
    len += (size_t)P->tok.len;
    next(P);
    if (!is_punct(P, '.')) break;
    next(P);
  }
  n->sval = dup_text(path, (int)len);
  n->slen = (int)len;
}

static Node *parse_offsetof(Parser *P) {
  Node *n = node_new(N_OFFSETOF, P->tok.span);
  next(P);
  expect(P, '(', "(");
  Span type_span;
  n->name = parse_type_text(P, &type_span);
  expect(P, ',', "\",\"");
  parse_member_path(P, n);
  n->span = span_join(n->span, expect(P, ')', ")"));
  return n;
}

/* container_of(ptr, TYPE, member[.member]), TYPE also as typeof(TYPE):
 * the TYPE that holds at `member` what ptr points to, written as
 * (TYPE *)((uint64)ptr - offsetof(TYPE, member)). */
static Node *parse_container_of(Parser *P) {
  Span at = P->tok.span;
  next(P);
  expect(P, '(', "(");
  Node *ptr = parse_expr(P);
  expect(P, ',', "\",\"");
  Span type_span;
  bool of = is_word(P, "typeof");
  if (of) {
    next(P);
    expect(P, '(', "(");
  }
  char *type = parse_type_text(P, &type_span);
  if (of) type_span = span_join(type_span, expect(P, ')', ")"));
  expect(P, ',', "\",\"");
  Node *off = node_new(N_OFFSETOF, type_span);
  off->name = type;
  parse_member_path(P, off);
  Span close = expect(P, ')', ")");
  Node *addr = node_new(N_CAST, ptr->span);
  addr->name = "uint64";
  addr->part_span = ptr->span;
  addr->lhs = ptr;
  Node *sub = node_new(N_BINOP, span_join(at, close));
  sub->op = '-';
  sub->lhs = addr;
  sub->rhs = off;
  Node *n = node_new(N_CAST, span_join(at, close));
  size_t len = strlen(type) + 3;
  char *ptype = malloc(len);
  if (!ptype) abort();
  snprintf(ptype, len, "%s *", type);
  n->name = ptype;
  n->part_span = type_span;
  n->lhs = sub;
  return n;
}

/* Whether a token can begin an operand: what may follow a cast. */
static bool starts_operand(const Token *t) {
  switch (t->kind) {
  case TK_INT: case TK_STR: case TK_VAR: case TK_MAP: case TK_IDENT:
    return true;
  case TK_PUNCT:
    return t->op == '(' || t->op == '-' || t->op == '!' || t->op == '~' ||
           t->op == '*';
  default:
    return false;
  }
}

/* After '(': a plain identifier (no builtin) that reads as a type name,
 * as in bpftrace: "(name)" followed by an operand, or "(name *". Such a
 * cast names a typedef, or a type the checker reports as unknown. */
static bool starts_named_cast(Parser *P) {
  char buf[64];
  if (P->tok.kind != TK_IDENT ||
      strcmp(lex_token_name(&P->tok, buf, sizeof buf), "identifier"))
    return false;
  Lexer saved = P->lx;
  Token a, b;
  lex_next(&P->lx, &a);
  lex_next(&P->lx, &b);
  P->lx = saved;
  if (a.kind != TK_PUNCT) return false;
  if (a.op == ')') return starts_operand(&b);
  return a.op == '*' && b.kind == TK_PUNCT && (b.op == ')' || b.op == '*');
}

/* After '(', at `name =`: a record (a=1, b="x"). */
static Node *parse_record(Parser *P, Span open) {
  Node *t = node_new(N_TUPLE, open);
  Node head = {0}, *cur = &head;
  int n = 0;
  for (;;) {
    if (P->tok.kind != TK_IDENT) unexpected(P, "field name");
    t->fields = realloc(t->fields, sizeof(char *) * (n + 2));
    if (!t->fields) abort();
    t->fields[n++] = dup_text(P->tok.text, P->tok.len);
    t->fields[n] = NULL;
    next(P);
    if (P->tok.kind != TK_ASSIGN || P->tok.op != '=') unexpected(P, "=");
    next(P);
    cur = cur->next = parse_expr(P);
    if (!is_punct(P, ',')) break;
    next(P);
  }
  t->args = head.next;
  t->span = span_join(open, expect(P, ')', ") or \",\""));
  return t;
}

/* '(' expr ')', a tuple '(' a, b ')', a record '(' x=a, y=b ')' or a
 * cast. */
static Node *parse_paren(Parser *P) {
  Span open = P->tok.span;
  next(P);
  if (is_type_word(&P->tok) || starts_named_cast(P) || starts_string_type(P))
    return parse_cast(P, open);
  if (is_word(P, "typeof") && peek(P).kind == TK_PUNCT && peek(P).op == '(') {
    /* (typeof(TYPE or expr))x: a cast to that type, kept in rhs */
    return cast_operand(P, open, NULL, parse_typeof(P));
  }
  if (P->tok.kind == TK_IDENT) {
    Token after = peek(P);
    if (after.kind == TK_ASSIGN && after.op == '=')
      return parse_record(P, open);
  }
  Node *e = parse_expr(P);
  if (!is_punct(P, ',')) {
    expect(P, ')', ") or \",\"");
    return e;
  }
  Node *t = node_new(N_TUPLE, open);
  t->args = e;
  Node *cur = e;
  while (is_punct(P, ',')) {
    next(P);
    cur = cur->next = parse_expr(P);
  }
  Span close = expect(P, ')', ") or \",\"");
  t->span = span_join(open, close);
  return t;
}

/* A call of `name` with args, at `at`, for the calls find() and assert()
 * are written with; as a statement when `stmt`. */
static Node *call_node(const char *name, Node *args, Span at, bool stmt) {
  Node *call = node_new(N_CALL, at);
  call->name = (char *)name;
  call->args = args;
  if (!stmt) return call;
  Node *s = node_new(N_EXPR_STMT, at);
  s->lhs = call;
  return s;
}

/* find(@m, k, $v): true, with $v given @m[k], if @m has key k; else
 * false, $v untouched. Written as has_key(@m, k) ? { $v = @m[k]; true }
 * : false, so the checker's rules for each part apply (k is evaluated
 * for each). Other argument lists stay a call, which the checker
 * reports. */
static Node *find_call(Node *n) {
  Node *m = n->args, *k = m ? m->next : NULL, *v = k ? k->next : NULL;
  if (!v || v->next || m->kind != N_MAP || m->args || v->kind != N_VAR)
    return n;
  k->next = NULL;
  Node *hm = node_new(N_MAP, m->span);
  hm->name = m->name;
  hm->next = k;
  Node *has = call_node("has_key", hm, n->span, false);
  Node *entry = node_new(N_MAP, span_join(m->span, k->span));
  entry->name = m->name;
  entry->args = k->kind == N_TUPLE ? k->args : k;
  Node *assign = node_new(N_ASSIGN, n->span);
  assign->op = '=';
  assign->part_span = v->span;
  assign->lhs = v;
  assign->rhs = entry;
  Node *yes = node_new(N_BLOCK, n->span);
  yes->body = assign;
  yes->lhs = node_new(N_BUILTIN, n->span);
  yes->lhs->name = "true";
  Node *t = node_new(N_TERNARY, n->span);
  t->cond = has;
  t->then = yes;
  t->els = node_new(N_BUILTIN, n->span);
  t->els->name = "false";
  return t;
}

/* assert(cond, msg): if cond does not hold, the error "assert failed:
 * msg" at the call and the run ends with exit code 1. Written as
 * if (!(cond)) { errorf("assert failed: %s", msg); exit(1); } as a
 * block whose value is nothing, so it stands as a statement. */
static Node *assert_call(Node *n) {
  Node *cond = n->args, *msg = cond ? cond->next : NULL;
  if (!msg || msg->next) return n;
  cond->next = NULL;
  Node *fmt = node_new(N_STR, n->span);
  fmt->sval = "assert failed: %s";
  fmt->slen = (int)strlen(fmt->sval);
  fmt->next = msg;
  Node *err_stmt = call_node("errorf", fmt, n->span, true);
  Node *code = node_new(N_INT, n->span);
  code->ival = 1;
  err_stmt->next = call_node("exit", code, n->span, true);
  Node *then = node_new(N_BLOCK, n->span);
  then->body = err_stmt;
  Node *not = node_new(N_UNOP, cond->span);
  not->op = '!';
  not->lhs = cond;
  Node *iff = node_new(N_IF, n->span);
  iff->cond = not;
  iff->then = then;
  Node *block = node_new(N_BLOCK, n->span);
  block->body = iff;
  return block;
}

static Node *parse_identifier(Parser *P) {
  static const char *const reserved[] = {
      "if", "else", "while", "unroll", "for", "return", "break", "continue",
      "let", NULL,
  };
  if (is_word(P, "if")) return parse_if_value(P);
  for (int i = 0; reserved[i]; i++)
    if (is_word(P, reserved[i])) unexpected(P, NULL);
  if (is_word(P, "sizeof")) return parse_sizeof(P);
  if (is_word(P, "offsetof")) return parse_offsetof(P);
  if (is_word(P, "typeof") && peek(P).kind == TK_PUNCT && peek(P).op == '(')
    return parse_typeof(P);
  if (is_word(P, "container_of") && peek(P).kind == TK_PUNCT &&
      peek(P).op == '(')
    return parse_container_of(P);
  Token id = P->tok;
  next(P);
  /* name!(args): a macro's call, written as bpftrace's docs write it */
  if (is_punct(P, '!') && peek(P).kind == TK_PUNCT && peek(P).op == '(')
    next(P);
  if (!is_punct(P, '(')) {
    Node *n = node_new(N_BUILTIN, id.span);
    n->name = dup_text(id.text, id.len);
    return n;
  }
  next(P);
  Node *n = node_new(N_CALL, id.span);
  n->name = dup_text(id.text, id.len);
  Span close;
  n->args = parse_list(P, ')', ") or \",\"", &close);
  n->span = span_join(id.span, close);
  if (!strcmp(n->name, "find")) return find_call(n);
  if (!strcmp(n->name, "assert")) return assert_call(n);
  return n;
}

static Node *parse_map(Parser *P) {
  Node *n = node_new(N_MAP, P->tok.span);
  n->name = dup_text(P->tok.text, P->tok.len);
  next(P);
  if (is_punct(P, '[')) {
    next(P);
    if (is_punct(P, ']')) unexpected(P, NULL);
    Span close;
    n->args = parse_list(P, ']', "] or \",\"", &close);
    n->span = span_join(n->span, close);
  }
  return n;
}

Node *parse_primary(Parser *P) {
  Token t = P->tok;
  Node *n;
  switch (t.kind) {
  case TK_INT:
    n = node_new(N_INT, t.span);
    n->ival = (int64_t)t.ival;
    /* a literal past INT64_MAX is a uint64, as in bpftrace */
    if (t.ival > (uint64_t)INT64_MAX) {
      n->type.kind = TY_INT;
      n->type.size = 8;
    }
    next(P);
    return n;
  case TK_STR:
    n = node_new(N_STR, t.span);
    n->sval = t.sval;
    n->slen = t.slen;
    next(P);
    return n;
  case TK_VAR:
    n = node_new(N_VAR, t.span);
    n->name = dup_text(t.text, t.len);
    next(P);
    return n;
  case TK_MAP:
    return parse_map(P);
  case TK_IDENT:
    return parse_identifier(P);
  default:
    if (is_punct(P, '(')) return parse_paren(P);
    if (is_punct(P, '{')) return parse_block_expr(P);
    unexpected(P, NULL);
  }
}

/* Field access, indexing and postfix ++/-- after a primary. */
static Node *parse_postfix(Parser *P) {
  /* a field access spans its operand as written, parentheses included */
  Span from = P->tok.span;
  Node *e = parse_primary(P);
  for (;;) {
    if (is_punct(P, P_ARROW) || is_punct(P, '.')) {
      next(P);
      if (P->tok.kind != TK_IDENT && P->tok.kind != TK_INT)
        unexpected(P, "identifier");
      Node *f = node_new(N_FIELD, span_join(from, P->tok.span));
      f->name = dup_text(P->tok.text, P->tok.len);
      f->lhs = e;
      next(P);
      e = f;
    } else if (is_punct(P, '[')) {
      next(P);
      Node *ix = node_new(N_INDEX, e->span);
      ix->lhs = e;
      ix->rhs = parse_expr(P);
      ix->span = span_join(e->span, expect(P, ']', "]"));
      e = ix;
    } else if (is_punct(P, OP_INC) || is_punct(P, OP_DEC)) {
      Span op = P->tok.span;
      e = new_incdec(P, e, P->tok.op, false, span_join(e->span, op), op);
      next(P);
    } else {
      return e;
    }
  }
}

static Node *parse_unary(Parser *P) {
  enter(P);
  Node *n;
  Token t = P->tok;
  if (t.kind == TK_PUNCT && (t.op == '-' || t.op == '!' || t.op == '~' ||
                             t.op == '*' || t.op == '&')) {
    next(P);
    Node *operand = parse_unary(P);
    /* -9223372036854775808 is INT64_MIN: its literal, past INT64_MAX
     * alone, is signed once negated (and negating INT64_MIN wraps) */
    if (t.op == '-' && operand->kind == N_INT &&
        (uint64_t)operand->ival == (uint64_t)INT64_MAX + 1)
      operand->type = (Type){0};
    n = node_new(N_UNOP, span_join(t.span, operand->span));
    n->op = t.op;
    n->lhs = operand;
  } else if (t.kind == TK_PUNCT && (t.op == OP_INC || t.op == OP_DEC)) {
    next(P);
    Node *target = parse_unary(P);
    n = new_incdec(P, target, t.op, true, span_join(t.span, target->span),
                   t.span);
  } else {
    n = parse_postfix(P);
  }
  leave(P);
  return n;
}

/* Binding strength of a binary operator token, 0 if it is none. */
static int binary_precedence(const Token *t) {
  if (t->kind != TK_PUNCT) return 0;
  switch (t->op) {
  case OP_OR: return 1;
  case OP_AND: return 2;
  case '|': return 3;
  case '^': return 4;
  case '&': return 5;
  case OP_EQ: case OP_NE: return 6;
  case '<': case '>': case OP_LE: case OP_GE: return 7;
  case OP_SHL: case OP_SHR: return 8;
  case '+': case '-': return 9;
  case '*': case '/': case '%': return 10;
  default: return 0;
  }
}

/* Precedence climbing: operators of at least min_prec, left-associative. */
static Node *parse_binary(Parser *P, int min_prec) {
  Node *lhs = parse_unary(P);
  for (;;) {
    int prec = binary_precedence(&P->tok);
    if (prec == 0 || prec < min_prec) return lhs;
    int op = P->tok.op;
    Span op_span = P->tok.span;
    next(P);
    Node *rhs = parse_binary(P, prec + 1);
    Node *n = node_new(N_BINOP, span_join(lhs->span, rhs->span));
    n->op = op;
    n->part_span = op_span;
    n->lhs = lhs;
    n->rhs = rhs;
    lhs = n;
  }
}

static Node *parse_ternary(Parser *P) {
  enter(P);
  Node *cond = parse_binary(P, 1);
  if (is_punct(P, '?')) {
    next(P);
    Node *n = node_new(N_TERNARY, cond->span);
    n->cond = cond;
    /* a ?: b is a when it is not zero, else b; a is evaluated once */
    if (is_punct(P, ':'))
      n->then = NULL;
    else
      n->then = parse_expr(P);
    expect(P, ':', ":");
    n->els = parse_ternary(P);
    n->span = span_join(cond->span, n->els->span);
    cond = n;
  }
  leave(P);
  return cond;
}

Node *parse_expr(Parser *P) { return parse_ternary(P); }
