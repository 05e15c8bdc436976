/* parse_top: the top level of a script — probes and their attach points,
 * the config block, and struct, enum and macro definitions. */
#include <ctype.h>
#include <limits.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "lang/parse.h"
#include "lang/parser.h"
#include "probes/provider.h"

/* A part without the double quotes that may surround it (or its start,
 * as in "echo_builtin"+8): the lexer lets them hold any character, and
 * \" or \\ for a quote or a backslash (usdt:bin:prov:"\"name\""). */
static char *unquoted_part(const char *p, const char *e) {
  char *s = dup_text(p, (int)(e - p));
  if (s[0] != '"') return s;
  char *out = malloc(strlen(s) + 1), *o = out;
  if (!out) abort();
  const char *in = s + 1;
  for (; *in && *in != '"'; in++) {
    if (in[0] == '\\' && (in[1] == '"' || in[1] == '\\')) in++;
    *o++ = *in;
  }
  if (*in != '"') {   /* no closing quote: the part as written */
    free(out);
    return s;
  }
  strcpy(o, in + 1);
  free(s);
  return out;
}

/* The end of the part that starts at p: the next ':' outside double
 * quotes (uprobe:bin:cpp:"A::b"), or end. */
static const char *part_end(const char *p, const char *end) {
  bool quoted = false;
  for (; p < end; p++) {
    if (quoted && *p == '\\' && p + 1 < end) p++;
    else if (*p == '"') quoted = !quoted;
    else if (*p == ':' && !quoted) return p;
  }
  return end;
}

/* Splits "provider:a:b:c" into its parts; a fifth and later part stays
 * joined to the fourth (C++ names with "::" in uprobes). */
static AttachPoint *new_attach_point(const Token *t) {
  AttachPoint *ap = calloc(1, sizeof *ap);
  if (!ap) abort();
  ap->span = t->span;
  ap->text = dup_text(t->text, t->len);
  const char *p = t->text, *end = t->text + t->len;
  const char *colon = memchr(p, ':', (size_t)(end - p));
  if (!colon) colon = end;
  /* an alias ("t", "begin") as its provider's canonical name */
  char *provider = dup_text(p, (int)(colon - p));
  const Provider *prov = provider_find(provider);
  ap->provider = prov ? (char *)prov->name : provider;
  if (ap->provider != provider) free(provider);
  p = colon;
  while (p < end && ap->nparts < 4) {
    p++;
    const char *e = ap->nparts == 3 ? end : part_end(p, end);
    ap->parts[ap->nparts++] = unquoted_part(p, e);
    p = e;
  }
  return ap;
}

/* The rest of a probe whose first attach point is `first`; the current
 * token is the one after that spec. */
static Probe *parse_probe(Parser *P, const Token *first) {
  Probe *pr = calloc(1, sizeof *pr);
  if (!pr) abort();
  pr->aps = new_attach_point(first);
  pr->span = first->span;
  AttachPoint *last = pr->aps;
  while (is_punct(P, ',')) {
    next_top(P);
    /* bpftrace accepts a trailing comma: "a:b, c:d, { }". */
    if (is_punct(P, '{') || is_punct(P, '/')) break;
    if (P->tok.kind != TK_ATTACH) unexpected(P, "attach point");
    last = last->next = new_attach_point(&P->tok);
    pr->span = span_join(pr->span, P->tok.span);
    next(P);
  }
  if (is_punct(P, '/')) {
    next(P);
    pr->pred = parse_expr(P);
    if (P->tok.kind != TK_ENDPRED) unexpected(P, "end predicate");
    next(P);
  }
  if (!is_punct(P, '{')) unexpected(P, "{");
  pr->body = parse_block(P, true);
  return pr;
}

/* config = { KEY = value; ... }, after "config" and '='. */
static ConfigItem *parse_config(Parser *P) {
  if (!is_punct(P, '{')) unexpected(P, "{");
  next(P);
  ConfigItem head = {0}, *cur = &head;
  while (!is_punct(P, '}')) {
    if (is_punct(P, ';')) {
      next(P);
      continue;
    }
    if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
    ConfigItem *it = calloc(1, sizeof *it);
    if (!it) abort();
    it->key = dup_text(P->tok.text, P->tok.len);
    it->span = P->tok.span;
    next(P);
    if (P->tok.kind != TK_ASSIGN || P->tok.op != '=') unexpected(P, "=");
    next(P);
    it->value = parse_expr(P);
    it->span = span_join(it->span, it->value->span);
    cur = cur->next = it;
    if (!is_punct(P, ';') && !is_punct(P, '}')) unexpected(P, "; or }");
  }
  next_top(P);
  return head.next;
}

/* One member of a struct definition: "unsigned long a;", "char b[10];",
 * "struct Bar *next;". The last word before '[' or ';' is the name; the
 * words and '*'s before it are the type. */
static StructField *parse_struct_body(Parser *P);
static void parse_declarator_rest(Parser *P, StructField *f);

static StructField *parse_struct_member(Parser *P) {
  StructField *f = calloc(1, sizeof *f);
  if (!f) abort();
  char type[256] = "";
  size_t len = 0;
  Token name = {0};
  while (P->tok.kind == TK_IDENT || is_punct(P, '*')) {
    if (name.len) {  /* the word held back was part of the type */
      if (len + (size_t)name.len + 2 >= sizeof type)
        parse_error(P, name.span, "type name too long");
      if (len) type[len++] = ' ';
      memcpy(type + len, name.text, (size_t)name.len);
      len += (size_t)name.len;
      f->type_span = len == (size_t)name.len ? name.span
                                            : span_join(f->type_span, name.span);
      name.len = 0;
    }
    if (is_punct(P, '*')) {
      if (!len) unexpected(P, "type");
      if (len + 3 >= sizeof type) parse_error(P, P->tok.span, "type name too long");
      if (type[len - 1] != '*') type[len++] = ' ';
      type[len++] = '*';
      f->type_span = span_join(f->type_span, P->tok.span);
    } else {
      name = P->tok;
    }
    next(P);
  }
  bool tagged = is_punct(P, '{') && name.len &&
                ((len == 6 && !memcmp(type, "struct", 6)) ||
                 (len == 5 && !memcmp(type, "union", 5)));
  if (is_punct(P, '{') && ((!len && name.len &&
                            (token_is_word(&name, "struct") ||
                             token_is_word(&name, "union"))) ||
                           tagged)) {
    /* struct [Tag] { ... } name: a struct defined in place, anonymous or
     * with its tag (known by it inside the member's type) */
    StructDef *def = calloc(1, sizeof *def);
    if (!def) abort();
    def->is_union = tagged ? len == 5 : token_is_word(&name, "union");
    def->name = tagged ? dup_text(name.text, name.len) : "<anonymous>";
    def->span = name.span;
    f->type_span = name.span;
    next(P);
    def->fields = parse_struct_body(P);
    next(P);
    f->inline_def = def;
    if (!tagged) {   /* the keyword is all the type text keeps */
      memcpy(type, name.text, (size_t)name.len);
      len = (size_t)name.len;
    }
    if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
    name = P->tok;
    next(P);
  }
  if (!len || !name.len) unexpected(P, len ? "identifier" : "type");
  type[len] = 0;
  f->type = dup_text(type, (int)len);
  f->name = dup_text(name.text, name.len);
  f->span = name.span;
  parse_declarator_rest(P, f);
  /* "unsigned int a:4, b:8;": more names of the same type */
  for (StructField *last = f; is_punct(P, ',');) {
    next(P);
    if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
    StructField *more = calloc(1, sizeof *more);
    if (!more) abort();
    more->type = f->type;
    more->type_span = f->type_span;
    more->name = dup_text(P->tok.text, P->tok.len);
    more->span = P->tok.span;
    next(P);
    parse_declarator_rest(P, more);
    last = last->next = more;
  }
  /* the last member's ';' may be left out */
  if (!is_punct(P, '}')) expect(P, ';', ";");
  return f;
}

/* What may follow a member's name: ":width" of a bitfield, or [N]...
 * for an array. */
static void parse_declarator_rest(Parser *P, StructField *f) {
  if (is_punct(P, ':')) {
    next(P);
    if (P->tok.kind != TK_INT) unexpected(P, "integer");
    if (P->tok.ival < 1 || P->tok.ival > 64)
      parse_error(P, P->tok.span, "a bitfield's width must be 1 to 64");
    f->bits = (int)P->tok.ival;
    next(P);
    return;
  }
  while (is_punct(P, '[')) {
    if (f->ndims == 4)
      parse_error(P, P->tok.span, "an array can have at most 4 dimensions");
    next(P);
    /* a last member's [] or [0]: a flexible array, of no size, whose
     * elements follow the struct in memory */
    if (is_punct(P, ']') && f->ndims == 0) {
      f->dims[f->ndims++] = 0;
      next(P);
      continue;
    }
    if (P->tok.kind != TK_INT) unexpected(P, "integer");
    if (P->tok.ival < (f->ndims ? 1 : 0) || P->tok.ival > (1 << 20))
      parse_error(P, P->tok.span, "array length must be %d to %d",
                  f->ndims ? 1 : 0, 1 << 20);
    f->dims[f->ndims++] = (int)P->tok.ival;
    next(P);
    expect(P, ']', "]");
  }
  f->array_len = f->ndims ? f->dims[0] : 0;
}

/* The members between '{' and '}' (the current token: '{' is behind). */
static StructField *parse_struct_body(Parser *P) {
  StructField head = {0}, *cur = &head;
  while (!is_punct(P, '}')) {
    if (is_punct(P, ';')) {
      next(P);
      continue;
    }
    if (P->tok.kind == TK_EOF) unexpected(P, "}");
    if (cur != &head && cur->ndims && cur->dims[0] == 0)
      parse_error(P, cur->span, "a flexible array member (%s[]) must be "
                  "the struct's last", cur->name);
    cur->next = parse_struct_member(P);
    while (cur->next) cur = cur->next;
  }
  return head.next;
}

/* __attribute__((a, b(args), ...)) after a struct's '}': packed makes
 * it without padding; the others (aligned, ...) change nothing here. */
static void parse_struct_attribute(Parser *P, StructDef *def) {
  next(P);
  expect(P, '(', "(");
  expect(P, '(', "(");
  while (!is_punct(P, ')')) {
    if (P->tok.kind != TK_IDENT) unexpected(P, "attribute");
    if (token_is_word(&P->tok, "packed") ||
        token_is_word(&P->tok, "__packed__"))
      def->packed = true;
    next(P);
    if (is_punct(P, '(')) {   /* its arguments */
      for (int depth = 0;;) {
        if (P->tok.kind == TK_EOF) unexpected(P, ")");
        depth += is_punct(P, '(') - is_punct(P, ')');
        next(P);
        if (!depth) break;
      }
    }
    if (!is_punct(P, ',')) break;
    next(P);
  }
  expect(P, ')', ")");
  if (!is_punct(P, ')')) unexpected(P, ")");
  next_top(P);   /* the next top-level item may follow */
}

/* struct Foo { members } or union Foo { ... } at top level; the ';' after
 * '}' is optional, as bpftrace accepts it either way. */
static StructDef *parse_struct_definition(Parser *P) {
  StructDef *def = calloc(1, sizeof *def);
  if (!def) abort();
  def->is_union = P->tok.len == 5 && !strncmp(P->tok.text, "union", 5);
  def->span = P->tok.span;
  next(P);
  if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
  def->name = dup_text(P->tok.text, P->tok.len);
  def->span = span_join(def->span, P->tok.span);
  next(P);
  if (!is_punct(P, '{')) unexpected(P, "{");
  next(P);
  def->fields = parse_struct_body(P);
  next_top(P);
  /* read as where an attach point may start: compare the text */
  while (P->tok.len == 13 && !strncmp(P->tok.text, "__attribute__", 13))
    parse_struct_attribute(P, def);
  if (is_punct(P, ';')) next_top(P);
  return def;
}

/* enum [Name] { A [= expr], B, ... [,] } at top level; the checker works
 * out the values (lang/enums.c). The ';' after '}' is optional, as for
 * structs. */
static EnumDef *parse_enum_definition(Parser *P) {
  EnumDef *def = calloc(1, sizeof *def);
  if (!def) abort();
  def->span = P->tok.span;
  next(P);
  if (P->tok.kind == TK_IDENT) {
    def->name = dup_text(P->tok.text, P->tok.len);
    def->span = span_join(def->span, P->tok.span);
    next(P);
  }
  if (!is_punct(P, '{')) unexpected(P, def->name ? "{" : "identifier or {");
  next(P);
  Enumerator head = {0}, *cur = &head;
  while (!is_punct(P, '}') || !head.next) {
    if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
    Enumerator *e = calloc(1, sizeof *e);
    if (!e) abort();
    e->name = dup_text(P->tok.text, P->tok.len);
    e->span = P->tok.span;
    next(P);
    if (P->tok.kind == TK_ASSIGN && P->tok.op == '=') {
      next(P);
      e->expr = parse_expr(P);
    }
    cur = cur->next = e;
    if (!is_punct(P, ',')) break;
    next(P);
  }
  if (!is_punct(P, '}')) unexpected(P, "} or \",\"");
  def->items = head.next;
  next_top(P);
  if (is_punct(P, ';')) next_top(P);
  return def;
}

/* A macro parameter: $x, @m or a plain name. */
static Node *parse_macro_param(Parser *P) {
  char buf[64];
  const char *what = lex_token_name(&P->tok, buf, sizeof buf);
  NodeKind kind = !strcmp(what, "variable") ? N_VAR
                  : !strcmp(what, "map")    ? N_MAP
                  : !strcmp(what, "identifier") || !strcmp(what, "builtin")
                      ? N_BUILTIN
                      : N_INT;
  if (kind == N_INT) unexpected(P, "$variable, @map or name");
  Node *n = node_new(kind, P->tok.span);
  n->name = dup_text(P->tok.text, P->tok.len);
  next(P);
  return n;
}

/* macro NAME(params) { body } or macro NAME { body }, from "macro". */
static MacroDef *parse_macro(Parser *P) {
  MacroDef *m = calloc(1, sizeof *m);
  if (!m) abort();
  next(P);
  if (P->tok.kind != TK_IDENT) unexpected(P, "identifier");
  m->name = dup_text(P->tok.text, P->tok.len);
  m->span = P->tok.span;
  next(P);
  if (is_punct(P, '(')) {
    next(P);
    Node head = {0}, *cur = &head;
    while (!is_punct(P, ')')) {
      if (m->nparams) expect(P, ',', ") or \",\"");
      cur = cur->next = parse_macro_param(P);
      m->nparams++;
    }
    next(P);
    m->params = head.next;
  }
  if (!is_punct(P, '{')) unexpected(P, "{");
  m->body = parse_block_of(P, true, true);
  return m;
}

static bool is_attach_word(const Token *t, const char *word) {
  return t->kind == TK_ATTACH && (int)strlen(word) == t->len &&
         !strncmp(t->text, word, t->len);
}

static void parse_probes(Parser *P, Script *s) {
  Probe head = {0}, *cur = &head;
  StructDef **last_struct = &s->structs;
  EnumDef **last_enum = &s->enums;
  MacroDef **last_macro = &s->macros;
  MapDecl **last_decl = &s->map_decls;
  bool first = true;
  while (P->tok.kind != TK_EOF) {
    if (P->tok.kind != TK_ATTACH) unexpected(P, "attach point");
    if (is_attach_word(&P->tok, "struct") ||
        is_attach_word(&P->tok, "union")) {
      *last_struct = parse_struct_definition(P);
      last_struct = &(*last_struct)->next;
      continue;
    }
    if (is_attach_word(&P->tok, "macro")) {
      *last_macro = parse_macro(P);
      last_macro = &(*last_macro)->next;
      continue;
    }
    if (is_attach_word(&P->tok, "let")) {
      *last_decl = parse_map_decl(P);
      last_decl = &(*last_decl)->next;
      first = false;
      continue;
    }
    if (is_attach_word(&P->tok, "enum")) {
      *last_enum = parse_enum_definition(P);
      last_enum = &(*last_enum)->next;
      continue;
    }
    Token spec = P->tok;
    next(P);
    if (first && is_attach_word(&spec, "config") &&
        P->tok.kind == TK_ASSIGN && P->tok.op == '=') {
      next(P);
      s->config = parse_config(P);
      first = false;
      continue;
    }
    first = false;
    cur = cur->next = parse_probe(P, &spec);
    cur->index = s->nprobes++;
  }
  s->probes = head.next;
}

static Script *parse_all(Parser *P, const Source *src) {
  Script *s = calloc(1, sizeof *s);
  if (!s) abort();
  s->src = src;
  next_top(P);
  parse_probes(P, s);
  if (s->nprobes == 0) {
    Span at = {.line = 1, .col = 1, .end_col = 2};
    parse_error(P, at, "no probes in the program: expected a probe such as "
                       "'BEGIN { ... }'");
  }
  return s;
}

Script *parse_script(const Source *src, const Settings *st, Diag *d) {
  static const Settings none;
  Parser *P = calloc(1, sizeof *P);
  if (!P) abort();
  P->d = d;
  lex_init(&P->lx, src, st ? st : &none, d, &P->on_error);
  Script *s = NULL;
  if (setjmp(P->on_error) == 0) s = parse_all(P, src);
  if (s) s->sysheaders = P->lx.sys;
  free(P);
  return s;
}

/* The attach point text with each $N replaced by the Nth word of the
 * command line, malloc'd; *missing is set to N if a word is not given.
 * Two passes over the text: the first measures (a word may be used any
 * number of times), the second writes into out when it is given. */
static size_t substitute_into(const char *text, char **params, int nparams,
                              int *missing, char *out) {
  size_t len = 0;
  for (const char *p = text; *p;) {
    if (*p == '$' && isdigit((unsigned char)p[1])) {
      char *end;
      long n = strtol(p + 1, &end, 10);
      if (n >= 1 && n <= nparams) {
        size_t l = strlen(params[n - 1]);
        if (out) memcpy(out + len, params[n - 1], l);
        len += l;
      } else if (!*missing) {
        *missing = n > INT_MAX ? INT_MAX : (int)n;
      }
      p = end;
    } else {
      if (out) out[len] = *p;
      len++;
      p++;
    }
  }
  if (out) out[len] = 0;
  return len;
}

static char *substitute(const char *text, char **params, int nparams,
                        int *missing) {
  char *out = malloc(substitute_into(text, params, nparams, missing, NULL) + 1);
  if (!out) abort();
  substitute_into(text, params, nparams, missing, out);
  return out;
}

int substitute_attach_params(Script *s, Diag *d) {
  int errors = 0;
  for (Probe *pr = s->probes; pr; pr = pr->next)
    for (AttachPoint *ap = pr->aps; ap; ap = ap->next) {
      if (!strchr(ap->text, '$')) continue;
      int missing = 0;
      char *text = substitute(ap->text, s->settings->params,
                              s->settings->nparams, &missing);
      if (missing) {
        diag_error(d, ap->span, "positional parameter $%d is not given "
                   "(%d given)", missing, s->settings->nparams);
        errors++;
        free(text);
        continue;
      }
      Token t = {.kind = TK_ATTACH, .text = text,
                 .len = (int)strlen(text), .span = ap->span};
      AttachPoint *fresh = new_attach_point(&t), *next = ap->next;
      *ap = *fresh;
      ap->next = next;
      free(fresh);
    }
  return errors;
}
