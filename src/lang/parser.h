/* parser: the parser's state and the helpers its files share — parse.c
 * (expressions), parse_stmt.c (statements and blocks), parse_top.c
 * (probes, config, struct, enum and macro definitions) and parse_decl.c
 * (map declarations). Others see parse.h. */
#ifndef LOUPE_LANG_PARSER_H
#define LOUPE_LANG_PARSER_H

#include <setjmp.h>
#include <stdbool.h>

#include "lang/ast.h"
#include "lang/lex.h"

/* Deeper nesting than this is surely not a real script; the limit keeps
 * garbage input from exhausting the C stack. */
#define MAX_DEPTH 200

typedef struct Parser {
  Lexer lx;
  Diag *d;
  Token tok;    /* the current token */
  Token prev;   /* the one before it, for "unexpected end of file" spans */
  int depth;
  jmp_buf on_error;
} Parser;

char *dup_text(const char *s, int len);
/* Reports at `at` and ends the parse (longjmp to parse_script). */
void parse_error(Parser *P, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
/* "syntax error, unexpected X, expecting E" at the current token. */
void unexpected(Parser *P, const char *expecting) __attribute__((noreturn));
void next(Parser *P);
/* next() where a new top-level item may start (an attach point). */
void next_top(Parser *P);
bool is_punct(Parser *P, int op);
bool token_is_word(const Token *t, const char *word);
bool is_word(Parser *P, const char *word);
Span expect(Parser *P, int op, const char *expecting);
/* One level deeper, or an error past MAX_DEPTH; leave() goes back up. */
void enter(Parser *P);
void leave(Parser *P);

/* parse.c */
Node *parse_expr(Parser *P);
Node *parse_primary(Parser *P);
bool is_lvalue(const Node *n);
char *parse_type_text(Parser *P, Span *at);
Node *parse_typeof(Parser *P);

/* parse_stmt.c */
Node *parse_block(Parser *P, bool probe_body);
/* { statements } as a probe's body (top) or a value's (value). */
Node *parse_block_of(Parser *P, bool top, bool value);
Node *parse_block_expr(Parser *P);
Node *parse_if_value(Parser *P);
void parse_array_dims(Parser *P, char **text, Span *at);
/* let @name = KIND(N); (parse_decl.c) */
MapDecl *parse_map_decl(Parser *P);

#endif
