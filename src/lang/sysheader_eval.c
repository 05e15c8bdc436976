/* sysheader_eval: C constant expressions of system headers, as cpp and
 * the compiler would compute them: the conditions of #if (where
 * "defined X" is asked and undefined names are 0) and the bodies of
 * object-like macros the script uses as constants (with casts, int and
 * long widths, unsigned arithmetic, enumerators). Macros in a text are
 * replaced by their bodies token by token, a macro's own name not again
 * inside its body (as cpp does: "#define DT_REG DT_REG" leaves the
 * enumerator DT_REG). */
#include "lang/sysheader_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Macros inside macros, at most: a cycle stops before this anyway. */
#define EVAL_MAX_NESTING 64

enum { T_END, T_NUM, T_IDENT, T_OP };
/* two-character operators */
enum { OP_SHL = 256, OP_SHR, OP_LE, OP_GE, OP_EQ, OP_NE, OP_AND, OP_OR };

typedef struct Tok {
  int kind;
  CVal num;
  const char *name;   /* T_IDENT: not a macro */
  int len;
  bool called;        /* T_IDENT followed by '(' */
  int op;
} Tok;

typedef struct Ev {
  const SysHeaders *h;
  bool in_if;
  struct {
    const char *pos;
    const HEntry *macro;   /* whose body this is; NULL: the text asked */
  } frames[EVAL_MAX_NESTING];
  int depth;
  Tok cur;
  EvalStatus status;
  int skipping;   /* inside the operand && or || does not evaluate */
  char *why;
  size_t whylen;
  const HEntry *from;
} Ev;

static void fail(Ev *ev, EvalStatus st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(Ev *ev, EvalStatus st, const char *fmt, ...) {
  if (ev->status != EVAL_OK) return;
  ev->status = st;
  ev->cur.kind = T_END;
  if (!ev->why) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ev->why, ev->whylen, fmt, ap);
  va_end(ap);
}

static CVal normalize(CVal c) {
  if (c.bits == 32)
    c.v = c.uns ? (uint32_t)c.v : (uint64_t)(int64_t)(int32_t)(uint32_t)c.v;
  return c;
}

static CVal int_of(int64_t v) {
  return normalize((CVal){.v = (uint64_t)v, .bits = 32});
}

/* Where a macro is defined, for messages: "/usr/include/x.h:12". */
static const char *where(const HEntry *e, char *buf, size_t size) {
  snprintf(buf, size, "%s:%d", e->file, e->line);
  return buf;
}

/* An integer literal at *p with its suffixes, typed as C types it. */
static CVal number(Ev *ev, const char **pp) {
  const char *p = *pp;
  int base = 10;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) base = 16, p += 2;
  else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) base = 2, p += 2;
  else if (p[0] == '0') base = 8;
  char *end;
  errno = 0;
  uint64_t v = strtoull(p, &end, base);
  bool too_big = errno == ERANGE || end == p;
  bool u = false, l = false;
  for (; *end == 'u' || *end == 'U' || *end == 'l' || *end == 'L'; end++)
    if (*end == 'u' || *end == 'U') u = true; else l = true;
  *pp = end;
  if (too_big || isalnum((unsigned char)*end) || *end == '.' || *end == '_') {
    fail(ev, EVAL_ERROR, "it is not an integer constant");
    return int_of(0);
  }
  CVal c = {.v = v, .uns = u, .bits = 64};
  if (ev->in_if) {   /* cpp computes in intmax_t */
    c.uns = u || v > INT64_MAX;
    return c;
  }
  if (!l && (u ? v <= UINT32_MAX : v <= INT32_MAX)) c.bits = 32;
  else if (!l && !u && base != 10 && v <= UINT32_MAX) c.bits = 32, c.uns = true;
  else if (v > INT64_MAX) c.uns = true;
  return c;
}

/* 'a', '\n', '\0', '\x41' */
static CVal char_literal(Ev *ev, const char **pp) {
  const char *p = *pp + 1;
  int64_t v;
  if (*p == '\\') {
    p++;
    const char *esc = "n\nt\tr\ra\ab\bf\fv\v\\\\''\"\"??";
    const char *hit = *p ? strchr(esc, *p) : NULL;
    if (*p == 'x') v = strtol(p + 1, (char **)&p, 16);
    else if (*p >= '0' && *p <= '7') v = strtol(p, (char **)&p, 8);
    else if (hit && (hit - esc) % 2 == 0) v = (unsigned char)hit[1], p++;
    else v = -1;
  } else {
    v = (unsigned char)*p;
    if (*p) p++;
  }
  if (v < 0 || *p != '\'') {
    fail(ev, EVAL_ERROR, "it is not an integer constant");
    return int_of(0);
  }
  *pp = p + 1;
  return int_of((int8_t)v);
}

static bool expanding(const Ev *ev, const HEntry *m) {
  for (int i = 0; i < ev->depth; i++)
    if (ev->frames[i].macro == m) return true;
  return false;
}

/* "defined X" or "defined(X)" at p: 1 or 0. */
static CVal defined_operator(Ev *ev, const char **pp) {
  const char *p = *pp;
  while (*p == ' ' || *p == '\t') p++;
  bool paren = *p == '(';
  if (paren) p++;
  while (*p == ' ' || *p == '\t') p++;
  const char *name = p;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  int len = (int)(p - name);
  while (*p == ' ' || *p == '\t') p++;
  if (!len || (paren && *p != ')')) {
    fail(ev, EVAL_UNKNOWN, "defined without a name");
    return int_of(0);
  }
  if (paren) p++;
  *pp = p;
  if (htable_find(&ev->h->uncertain, name, len))
    fail(ev, EVAL_UNKNOWN, "uncertain");
  const HEntry *m = htable_find(&ev->h->macros, name, len);
  CVal c = {.v = m != NULL, .bits = 64};
  return c;
}

static int operator_at(const char *p, int *len) {
  static const struct { char s[3]; int op; } two[] = {
      {"<<", OP_SHL}, {">>", OP_SHR}, {"<=", OP_LE}, {">=", OP_GE},
      {"==", OP_EQ}, {"!=", OP_NE}, {"&&", OP_AND}, {"||", OP_OR}};
  for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
    if (p[0] == two[i].s[0] && p[1] == two[i].s[1]) {
      *len = 2;
      return two[i].op;
    }
  *len = 1;
  return strchr("()!~-+*/%<>&^|?:,", *p) ? *p : 0;
}

/* An identifier at p (len bytes): a macro's body is read in its place;
 * false if it is a token of its own. */
static bool expand(Ev *ev, const char *p, int len) {
  const HEntry *m = htable_find(&ev->h->macros, p, len);
  const HEntry *u = htable_find(&ev->h->uncertain, p, len);
  char at[4200];
  if (u && !(m && expanding(ev, m))) {
    fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR, "it uses '%s', which "
         "is defined under a condition loupe cannot evaluate (%s)", u->name,
         where(u, at, sizeof at));
    return true;
  }
  if (!m || expanding(ev, m)) return false;
  if (m->function_like) {
    fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR,
         "it uses the function-like macro '%s' (%s), and loupe reads only "
         "constants from system headers", m->name, where(m, at, sizeof at));
    return true;
  }
  if (ev->depth == EVAL_MAX_NESTING) {
    fail(ev, EVAL_ERROR, "its macros nest more than %d deep",
         EVAL_MAX_NESTING);
    return true;
  }
  ev->frames[ev->depth].pos = m->body;
  ev->frames[ev->depth].macro = m;
  ev->depth++;
  return true;
}

static void next(Ev *ev) {
  Tok *t = &ev->cur;
  memset(t, 0, sizeof *t);
  while (ev->status == EVAL_OK) {
    const char **pp = &ev->frames[ev->depth - 1].pos;
    while (isspace((unsigned char)**pp)) (*pp)++;
    const char *p = *pp;
    if (!*p) {
      if (ev->depth == 1) return;   /* T_END */
      ev->depth--;
      continue;
    }
    if (isdigit((unsigned char)*p)) {
      t->kind = T_NUM;
      t->num = number(ev, pp);
      return;
    }
    if (*p == '\'') {
      t->kind = T_NUM;
      t->num = char_literal(ev, pp);
      return;
    }
    if (isalpha((unsigned char)*p) || *p == '_') {
      const char *e = p;
      while (isalnum((unsigned char)*e) || *e == '_') e++;
      *pp = e;
      if (ev->in_if && e - p == 7 && !strncmp(p, "defined", 7)) {
        t->kind = T_NUM;
        t->num = defined_operator(ev, pp);
        return;
      }
      if (expand(ev, p, (int)(e - p))) continue;
      while (*e == ' ' || *e == '\t') e++;
      *t = (Tok){.kind = T_IDENT, .name = p, .len = (int)(*pp - p),
                 .called = *e == '('};
      return;
    }
    int len, op = operator_at(p, &len);
    if (!op) {
      fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR, *p == '"'
           ? "it is a string" : "it is not an integer constant");
      return;
    }
    *pp = p + len;
    t->kind = T_OP;
    t->op = op;
    return;
  }
}

static bool is_op(const Ev *ev, int op) {
  return ev->cur.kind == T_OP && ev->cur.op == op;
}

static void expect(Ev *ev, int op) {
  if (is_op(ev, op)) next(ev);
  else fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR,
            "it is not an integer constant");
}

static CVal conditional(Ev *ev);

/* The usual arithmetic conversions of a and b: the wider type, or the
 * unsigned one of the same width. */
static CVal common_type(CVal a, CVal b) {
  CVal c = {.bits = a.bits > b.bits ? a.bits : b.bits};
  c.uns = a.bits == b.bits ? a.uns || b.uns : a.bits > b.bits ? a.uns : b.uns;
  return c;
}

static CVal binary(Ev *ev, int op, CVal a, CVal b) {
  CVal c = common_type(a, b);
  if (op == OP_SHL || op == OP_SHR) c = a;
  bool s = !c.uns;
  int64_t x = (int64_t)a.v, y = (int64_t)b.v;
  if ((op == '/' || op == '%') && b.v == 0) {
    if (!ev->skipping) fail(ev, EVAL_ERROR, "it divides by zero");
    return int_of(0);
  }
  switch (op) {
  case '*': c.v = a.v * b.v; break;
  case '/': c.v = s ? (y == -1 ? (uint64_t)0 - a.v : (uint64_t)(x / y))
                    : (c.bits == 32 ? (uint32_t)a.v / (uint32_t)b.v
                                    : a.v / b.v); break;
  case '%': c.v = s ? (y == -1 ? 0 : (uint64_t)(x % y))
                    : (c.bits == 32 ? (uint32_t)a.v % (uint32_t)b.v
                                    : a.v % b.v); break;
  case '+': c.v = a.v + b.v; break;
  case '-': c.v = a.v - b.v; break;
  case OP_SHL: c.v = b.v < 64 ? a.v << b.v : 0; break;
  case OP_SHR:
    c.v = b.v >= 64 ? (s && x < 0 ? UINT64_MAX : 0)
          : s ? (uint64_t)(x >> b.v)
              : (c.bits == 32 ? (uint32_t)a.v : a.v) >> b.v;
    break;
  case '&': c.v = a.v & b.v; break;
  case '^': c.v = a.v ^ b.v; break;
  case '|': c.v = a.v | b.v; break;
  default: {   /* comparisons: an int */
    bool lt = s ? x < y : a.v < b.v, eq = a.v == b.v;
    bool r = op == '<' ? lt : op == '>' ? !lt && !eq : op == OP_LE ? lt || eq
             : op == OP_GE ? !lt : op == OP_EQ ? eq : !eq;
    return ev->in_if ? (CVal){.v = r, .bits = 64} : int_of(r);
  }
  }
  return normalize(c);
}

/* Type words of a cast: "(__u32)", "(unsigned long)", "(int *)". */
static bool type_word(const Tok *t) {
  static const char *const words[] = {
      "unsigned", "signed", "int", "long", "short", "char", "_Bool",
      "const", "volatile", "__signed__", "__force", "size_t", "ssize_t",
      NULL};
  if (t->kind != T_IDENT) return false;
  for (int i = 0; words[i]; i++)
    if ((int)strlen(words[i]) == t->len && !strncmp(t->name, words[i], t->len))
      return true;
  if (t->len > 2 && !strncmp(t->name + t->len - 2, "_t", 2)) return true;
  return !strncmp(t->name, "__u", 3) || !strncmp(t->name, "__s", 3) ||
         !strncmp(t->name, "__be", 4) || !strncmp(t->name, "__le", 4) ||
         !strncmp(t->name, "__kernel_", 9);
}

/* The width and signedness a cast's words give. */
static void cast_type(CVal *c, const char *w, int len, bool *seen_int) {
  char word[64];
  snprintf(word, sizeof word, "%.*s", len, w);
  const char *digits = word + strcspn(word, "0123456789");
  int n = atoi(digits);
  if (!strcmp(word, "unsigned")) c->uns = true;
  else if (!strcmp(word, "signed") || !strcmp(word, "__signed__")) c->uns = false;
  else if (!strcmp(word, "long")) c->bits = 64;
  else if (!strcmp(word, "int") && !*seen_int) c->bits = c->bits == 64 ? 64 : 32;
  else if (!strcmp(word, "char")) c->bits = 8;
  else if (!strcmp(word, "short")) c->bits = 16;
  else if (!strcmp(word, "size_t")) c->bits = 64, c->uns = true;
  else if (n == 8 || n == 16 || n == 32 || n == 64) {
    c->bits = n;
    c->uns = word[0] == 'u' || !strncmp(word, "__u", 3) ||
             !strncmp(word, "__be", 4) || !strncmp(word, "__le", 4);
  }
  if (!strcmp(word, "int")) *seen_int = true;
}

static CVal unary(Ev *ev);

/* After "(" of a cast: its words, ")", its operand. */
static CVal cast(Ev *ev) {
  CVal to = {.bits = 0, .uns = false};
  bool seen_int = false, pointer = false;
  while (ev->cur.kind == T_IDENT || is_op(ev, '*')) {
    if (ev->cur.kind == T_IDENT)
      cast_type(&to, ev->cur.name, ev->cur.len, &seen_int);
    else
      pointer = true;
    next(ev);
  }
  expect(ev, ')');
  CVal v = unary(ev);
  if (pointer || to.bits == 0) to.bits = 64, to.uns = to.uns || pointer;
  if (to.bits < 32) {   /* narrowed, then an int again */
    uint64_t mask = (1ull << to.bits) - 1;
    int64_t x = (int64_t)(v.v & mask);
    if (!to.uns && (x >> (to.bits - 1))) x -= (int64_t)1 << to.bits;
    return int_of(x);
  }
  v.bits = to.bits;
  v.uns = to.uns;
  return normalize(v);
}

static CVal identifier(Ev *ev) {
  Tok t = ev->cur;
  next(ev);
  if (ev->in_if) {   /* cpp: an undefined name is 0; a call is not known */
    if (t.called) fail(ev, EVAL_UNKNOWN, "a call");
    return (CVal){.v = 0, .bits = 64};
  }
  const HEntry *e = htable_find(&ev->h->enums, t.name, t.len);
  if (e) {
    CVal c = {.v = (uint64_t)e->value, .bits = 64};
    return e->value == (int32_t)e->value ? int_of(e->value) : c;
  }
  if (t.len == 6 && !strncmp(t.name, "sizeof", 6))
    fail(ev, EVAL_ERROR, "it uses sizeof, which needs the C types");
  else if (htable_find(&ev->h->macros, t.name, t.len))   /* being expanded */
    fail(ev, EVAL_ERROR, "it expands back to '%.*s', which is no constant",
         t.len, t.name);
  else
    fail(ev, EVAL_ERROR, "it uses '%.*s', which no header read defines",
         t.len, t.name);
  return int_of(0);
}

static CVal unary(Ev *ev) {
  if (ev->status != EVAL_OK) return int_of(0);
  if (ev->cur.kind == T_NUM) {
    CVal c = ev->cur.num;
    next(ev);
    return c;
  }
  if (ev->cur.kind == T_IDENT) return identifier(ev);
  if (ev->cur.kind != T_OP) {
    fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR, "it is empty");
    return int_of(0);
  }
  int op = ev->cur.op;
  next(ev);
  if (op == '(') {
    if (!ev->in_if && type_word(&ev->cur)) return cast(ev);
    CVal c = conditional(ev);
    expect(ev, ')');
    return c;
  }
  CVal c = unary(ev);
  if (c.bits < 32) c.bits = 32;
  switch (op) {
  case '-': c.v = 0 - c.v; return normalize(c);
  case '+': return c;
  case '~': c.v = ~c.v; return normalize(c);
  case '!': return ev->in_if ? (CVal){.v = !c.v, .bits = 64} : int_of(!c.v);
  }
  fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR,
       "it is not an integer constant");
  return int_of(0);
}

static int precedence(int op) {
  switch (op) {
  case '*': case '/': case '%': return 10;
  case '+': case '-': return 9;
  case OP_SHL: case OP_SHR: return 8;
  case '<': case '>': case OP_LE: case OP_GE: return 7;
  case OP_EQ: case OP_NE: return 6;
  case '&': return 5;
  case '^': return 4;
  case '|': return 3;
  case OP_AND: return 2;
  case OP_OR: return 1;
  }
  return 0;
}

static CVal binary_chain(Ev *ev, int min_prec) {
  CVal lhs = unary(ev);
  while (ev->status == EVAL_OK && ev->cur.kind == T_OP) {
    int op = ev->cur.op, prec = precedence(op);
    if (!prec || prec < min_prec) break;
    next(ev);
    if (op == OP_AND || op == OP_OR) {
      bool decided = op == OP_AND ? !lhs.v : lhs.v != 0;
      ev->skipping += decided;
      CVal rhs = binary_chain(ev, prec + 1);
      ev->skipping -= decided;
      bool r = decided ? op == OP_OR : rhs.v != 0;
      lhs = ev->in_if ? (CVal){.v = r, .bits = 64} : int_of(r);
    } else {
      lhs = binary(ev, op, lhs, binary_chain(ev, prec + 1));
    }
  }
  return lhs;
}

static CVal conditional(Ev *ev) {
  CVal c = binary_chain(ev, 1);
  if (!is_op(ev, '?')) return c;
  next(ev);
  ev->skipping += !c.v;
  CVal a = conditional(ev);
  ev->skipping -= !c.v;
  expect(ev, ':');
  ev->skipping += c.v != 0;
  CVal b = conditional(ev);
  ev->skipping -= c.v != 0;
  CVal t = common_type(a, b);
  t.v = c.v ? a.v : b.v;
  return normalize(t);
}

static EvalStatus evaluate(Ev *ev, const char *text, CVal *out) {
  ev->frames[0].pos = text;
  ev->frames[0].macro = ev->from;
  ev->depth = 1;
  next(ev);
  *out = conditional(ev);
  if (ev->status == EVAL_OK && ev->cur.kind != T_END)
    fail(ev, ev->in_if ? EVAL_UNKNOWN : EVAL_ERROR,
         "it is not an integer constant");
  return ev->status;
}

EvalStatus sh_eval_if(const SysHeaders *h, const char *text, bool *truth) {
  Ev ev = {.h = h, .in_if = true};
  CVal c;
  EvalStatus st = evaluate(&ev, text, &c);
  *truth = st == EVAL_OK && c.v != 0;
  return st == EVAL_OK ? EVAL_OK : EVAL_UNKNOWN;
}

EvalStatus sh_eval_const(const SysHeaders *h, const char *text,
                         const HEntry *from, CVal *out, char *why,
                         size_t whylen) {
  Ev ev = {.h = h, .why = why, .whylen = whylen, .from = from};
  return evaluate(&ev, text, out);
}
