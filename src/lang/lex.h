/* lex: script text to tokens, pulled one at a time by the parser.
 *
 * Attach points ("tracepoint:syscalls:sys_enter_*", "uprobe:/bin/bash:f")
 * do not follow the token rules of the probe bodies, so the parser asks for
 * them explicitly with lex_top() wherever a probe may start. */
#ifndef LOUPE_LEX_H
#define LOUPE_LEX_H

#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

#include "lang/diag.h"
#include "settings.h"

typedef enum TokenKind {
  TK_EOF,
  TK_INT,        /* ival */
  TK_STR,        /* sval/slen: escapes decoded */
  TK_IDENT,      /* identifiers, keywords and builtins alike */
  TK_VAR,        /* "$x", "$1", "$#" */
  TK_MAP,        /* "@x" or "@" */
  TK_PUNCT,      /* op: a character or an OP_* code from ast.h, or P_ARROW */
  TK_ASSIGN,     /* op: '=' or the binary op of a compound assignment */
  TK_ENDPRED,    /* the '/' closing a predicate (a '/' followed by '{') */
  TK_ATTACH,     /* an attach point spec, only from lex_top() */
  TK_DIRECTIVE,  /* a "#..." preprocessor line */
} TokenKind;

enum { P_ARROW = 400, P_RANGE };  /* "->", ".." */

typedef struct Token {
  TokenKind kind;
  int op;
  Span span;
  const char *text;   /* points into the source */
  int len;
  uint64_t ival;
  char *sval;
  int slen;
} Token;

/* The #define NAME TEXT lines read so far (object-like macros). */
typedef struct Define {
  char *name;
  char *text;
} Define;

typedef struct Defines {
  Define *v;
  int n;
} Defines;

#define LEX_MAX_EXPANSION 8
#define LEX_MAX_INCLUDE 16

typedef struct Lexer {
  const Source *src;
  const Settings *st;   /* --include, -I (settings.h) */
  Diag *d;
  const char *pos;
  int line;
  const char *line_start;
  /* The number literal being read and its length, for its errors: a
   * #define's text is not on the line its use's span names. */
  const char *literal;
  int literal_len;
  jmp_buf *on_error;   /* longjmp'd to after a lexical error is reported */
  Defines *defines;
  /* Lexing the text of #defines used in the script, one inside another:
   * where each use was (its tokens all get the outermost use's span) and
   * where the text around it goes on. */
  int depth;
  struct {
    const Define *def;
    const char *resume, *line_start;
    Span at;
  } expanding[LEX_MAX_EXPANSION];
  /* #include "file": the files being read, one inside another, and where
   * the text that included each goes on. `dir` is where the file being
   * read now is, for the names it includes in turn. */
  const char *dir;
  int ninclude;
  struct {
    const char *resume, *line_start, *dir;
    int line;
  } including[LEX_MAX_INCLUDE];
  /* The constants of the #include <headers> read so far; NULL until the
   * script includes one. */
  struct SysHeaders *sys;
} Lexer;

/* on_error is where the lexer jumps (with value 1) after reporting. st
 * says which files --include reads first, where -I looks for headers. */
void lex_init(Lexer *lx, const Source *src, const Settings *st, Diag *d,
              jmp_buf *on_error);
/* The next token of a probe body or predicate. */
void lex_next(Lexer *lx, Token *t);
/* The next token where a probe (or config block) may start: an attach
 * point spec if one begins here, else an ordinary token. Preprocessor
 * lines are skipped. */
void lex_top(Lexer *lx, Token *t);
/* How error messages call a token: "map", "integer", "}", ... */
const char *lex_token_name(const Token *t, char *buf, int bufsize);

#endif
