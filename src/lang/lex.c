/* lex: a hand-written scanner over the script text. It tracks line and
 * column itself so every token carries an exact span; lexical errors are
 * reported through diag and end the parse with a longjmp. */
#include "lang/lex.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lang/ast.h"
#include "lang/sysheader.h"
#include "util/safe_file.h"

static bool is_ident_start(int c) { return isalpha(c) || c == '_'; }
static bool is_ident_char(int c) { return isalnum(c) || c == '_'; }

static int column_of(Lexer *lx, const char *p) {
  return (int)(p - lx->line_start) + 1;
}

static Span span_from(Lexer *lx, const char *start, const char *end) {
  if (lx->depth > 0) return lx->expanding[0].at;   /* inside a #define */
  Span s = {.line = lx->line, .col = column_of(lx, start),
            .end_col = column_of(lx, end)};
  return s;
}

/* A span from `start` to the end of its line, for things that run off it
 * (unterminated strings and comments). */
static Span span_to_eol(int line, const char *line_start,
                        const char *start) {
  const char *e = start;
  while (*e && *e != '\n') e++;
  Span s = {.line = line, .col = (int)(start - line_start) + 1,
            .end_col = (int)(e - line_start) + 1};
  if (s.end_col <= s.col) s.end_col = s.col + 1;
  return s;
}

static void lex_error(Lexer *lx, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void lex_error(Lexer *lx, Span at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(lx->d, at, fmt, ap);
  va_end(ap);
  longjmp(*lx->on_error, 1);
}

static bool push_file(Lexer *lx, const char *path, Span at);
static bool find_header(const Lexer *lx, const char *name, int nlen,
                        bool quoted, char *path, size_t size);
static bool system_header(Lexer *lx, const char *name, int nlen, Span at);

void lex_init(Lexer *lx, const Source *src, const Settings *st, Diag *d,
              jmp_buf *on_error) {
  lx->src = src;
  lx->st = st;
  lx->d = d;
  lx->pos = src->text ? src->text : "";
  lx->line = 1;
  lx->line_start = lx->pos;
  lx->on_error = on_error;
  lx->defines = calloc(1, sizeof *lx->defines);
  if (!lx->defines) abort();
  lx->depth = 0;
  lx->ninclude = 0;
  /* a script file's #include "x" is looked for beside it; -e's in the
   * current directory */
  const char *slash = src->name ? strrchr(src->name, '/') : NULL;
  lx->dir = slash ? strndup(src->name, (size_t)(slash - src->name)) : ".";
  if (!lx->dir) abort();
  lx->sys = NULL;
  /* --include FILE: a file here is read as #include "FILE" would, before
   * the script's first line; another as #include <FILE> */
  Span none = {0};
  for (int i = 0; i < st->npre_includes; i++) {
    const char *name = st->pre_includes[i];
    if (access(name, F_OK) != 0)
      system_header(lx, name, (int)strlen(name), none);
  }
  for (int i = st->npre_includes - 1; i >= 0; i--)
    if (access(st->pre_includes[i], F_OK) == 0)
      push_file(lx, st->pre_includes[i], none);
}

static void newline_at(Lexer *lx, const char *nl) {
  lx->line++;
  lx->line_start = nl + 1;
}

/* ---- preprocessor conditionals ----------------------------------------- */

/* bpftrace defines BPFTRACE_HAVE_BTF when the kernel has BTF, and scripts
 * (runqlen.bt, dcsnoop.bt) guard their own copies of kernel structs with
 * "#ifndef BPFTRACE_HAVE_BTF": those copies must not shadow the real
 * layouts. No other macro is defined. */
static const Define *find_define(const Lexer *lx, const char *name,
                                 int len) {
  for (int i = 0; i < lx->defines->n; i++) {
    const Define *d = &lx->defines->v[i];
    if ((int)strlen(d->name) == len && !strncmp(d->name, name, len))
      return d;
  }
  return NULL;
}

static bool macro_defined(const Lexer *lx, const char *name, int len) {
  if (find_define(lx, name, len)) return true;
  if (lx->sys && sysheaders_defined(lx->sys, name, len)) return true;
  return len == 17 && !strncmp(name, "BPFTRACE_HAVE_BTF", 17) &&
         access("/sys/kernel/btf/vmlinux", R_OK) == 0;
}

/* The directive word after '#' at p ("ifdef", "endif"), its length in
 * *len; *after points past it. */
static const char *directive_word(const char *p, int *len, const char **after) {
  p++;
  while (*p == ' ' || *p == '\t') p++;
  const char *w = p;
  while (is_ident_char((unsigned char)*p)) p++;
  *len = (int)(p - w);
  *after = p;
  return w;
}

static bool word_is(const char *w, int len, const char *word) {
  return (int)strlen(word) == len && !strncmp(w, word, len);
}

static const char *end_of_line(const char *p) {
  while (*p && *p != '\n') p++;
  return p;
}

/* Skips the lines of a branch not taken, from `p` (the start of the line
 * after its directive), to past the #endif that closes it or, if
 * stop_at_else, past an #else at the same depth. */
static void skip_branch(Lexer *lx, const char *p, bool stop_at_else) {
  int depth = 0;
  while (*p) {
    const char *q = p;
    while (*q == ' ' || *q == '\t') q++;
    if (*q == '#') {
      int len;
      const char *after, *w = directive_word(q, &len, &after);
      if (word_is(w, len, "if") || word_is(w, len, "ifdef") ||
          word_is(w, len, "ifndef")) {
        depth++;
      } else if (word_is(w, len, "endif")) {
        if (depth-- == 0) {
          lx->pos = end_of_line(q);
          return;
        }
      } else if (depth == 0 && stop_at_else &&
                 (word_is(w, len, "else") || word_is(w, len, "elif"))) {
        lx->pos = end_of_line(q);
        return;
      }
    }
    p = end_of_line(p);
    if (*p) {
      newline_at(lx, p);
      p++;
    }
  }
  lx->pos = p;
}

/* #define NAME TEXT (TEXT replaces each later NAME of a probe's body, as
 * a C preprocessor would) or #undef NAME, from the '#' at `line` to eol. */
static void define_or_undef(Lexer *lx, bool define, const char *line,
                            const char *after, const char *eol) {
  const char *name = after;
  while (*name == ' ' || *name == '\t') name++;
  const char *e = name;
  while (is_ident_char((unsigned char)*e)) e++;
  if (e == name || !is_ident_start((unsigned char)*name))
    lex_error(lx, span_from(lx, line, eol), "#%s needs a name",
              define ? "define" : "undef");
  if (define && *e == '(')
    lex_error(lx, span_from(lx, line, eol), "loupe does not support "
              "#define with parameters; write a macro instead");
  Defines *ds = lx->defines;
  const Define *old = find_define(lx, name, (int)(e - name));
  int at = old ? (int)(old - ds->v) : ds->n;
  if (!define) {
    if (old) ds->v[at] = ds->v[--ds->n];
    return;
  }
  const char *text = e, *end = eol;
  while (*text == ' ' || *text == '\t') text++;
  while (end > text && isspace((unsigned char)end[-1])) end--;
  if (!old) {
    ds->v = realloc(ds->v, sizeof(Define) * (ds->n + 1));
    if (!ds->v) abort();
    ds->n++;
    ds->v[at].name = strndup(name, (size_t)(e - name));
  }
  ds->v[at].text = strndup(text, (size_t)(end - text));
}

/* The largest file #include reads: definitions, not data. */
#define INCLUDE_MAX_BYTES (1 << 20)

/* #include "file": lexing goes on in the file (found beside the file
 * that includes it), then after the directive (skip_space). The file's
 * lines get the line numbers diag knows it by (DIAG_INCLUDE_LINES), so
 * messages about it name it. #include <file> names a system header:
 * loupe takes its types from BTF and its constants from a scan of its
 * directives (system_header). */
/* Goes on lexing in file `path` (until skip_space reaches its end);
 * false after reporting at `at` if it cannot be read. */
static bool push_file(Lexer *lx, const char *path, Span at) {
  if (lx->ninclude == LEX_MAX_INCLUDE) {
    diag_error(lx->d, at, "#include nests more than %d files deep",
               LEX_MAX_INCLUDE);
    return false;
  }
  /* the file may be anyone's: a FIFO must not hang the open, and its
   * type is known before anything is read */
  struct stat st;
  size_t len;
  char *text = safe_read_file(path, INCLUDE_MAX_BYTES, &len, &st);
  if (!text) {
    diag_error(lx->d, at, "#include \"%s\": %s", path,
               errno == EINVAL ? "not a regular file" : strerror(errno));
    return false;
  }
  Source *src = calloc(1, sizeof *src);
  if (!src) abort();
  src->name = strdup(path);
  src->text = text;
  src->hide_text = !(st.st_mode & S_IROTH);   /* see Source.hide_text */
  int k = diag_include(lx->d, src);
  if (!k) {
    diag_error(lx->d, at, "#include: more than %d files", DIAG_MAX_INCLUDES);
    return false;
  }
  lx->including[lx->ninclude].resume = lx->pos;
  lx->including[lx->ninclude].line_start = lx->line_start;
  lx->including[lx->ninclude].line = lx->line;
  lx->including[lx->ninclude].dir = lx->dir;
  lx->ninclude++;
  const char *slash = strrchr(path, '/');
  lx->dir = slash ? strndup(path, (size_t)(slash - path)) : ".";
  if (!lx->dir) abort();
  lx->pos = lx->line_start = text;
  lx->line = k * DIAG_INCLUDE_LINES + 1;
  return true;
}

/* Where the header `name` (nlen bytes) is (path, size bytes): beside the
 * file that includes it when `quoted` (#include "name"), else, or if it
 * is not there, in the -I directories in order. False if none has it
 * (path then holds the first place looked at). */
static bool find_header(const Lexer *lx, const char *name, int nlen,
                        bool quoted, char *path, size_t size) {
  if (name[0] == '/') {
    snprintf(path, size, "%.*s", nlen, name);
    return access(path, F_OK) == 0;
  }
  if (quoted) {
    if (!strcmp(lx->dir, "."))
      snprintf(path, size, "%.*s", nlen, name);
    else
      snprintf(path, size, "%s/%.*s", lx->dir, nlen, name);
    if (access(path, F_OK) == 0) return true;
  }
  char tried[4096];
  for (int i = 0; i < lx->st->ninclude_dirs; i++) {
    snprintf(tried, sizeof tried, "%s/%.*s", lx->st->include_dirs[i], nlen,
             name);
    if (access(tried, F_OK) == 0) {
      snprintf(path, size, "%s", tried);
      return true;
    }
  }
  return false;
}

/* #include <name>: its constants (lang/sysheader.h), looked for in the
 * -I directories and the system include path; the headers are read once
 * a script includes one, never otherwise. A header found nowhere is
 * passed over (bpftrace's tools include kernel headers seldom installed,
 * for types that BTF has); a name it would have defined is an unknown
 * identifier that names it. False after reporting at `at`. */
static bool system_header(Lexer *lx, const char *name, int nlen, Span at) {
  if (lx->st->no_file_includes) return true;
  if (!lx->sys)
    lx->sys = sysheaders_new(lx->st->include_dirs, lx->st->ninclude_dirs);
  char why[4600];
  if (sysheaders_include(lx->sys, name, nlen, why, sizeof why) >= 0)
    return true;
  diag_error(lx->d, at, "#include <%.*s>: %s", nlen, name, why);
  return false;
}

/* Whether path lies in a directory of system or kernel headers, which
 * are scanned for their constants rather than read as script text. */
static bool in_system_dir(const char *path) {
  static const char *const dirs[] = {"/usr/include/", "/usr/local/include/",
                                     "/usr/src/", "/lib/modules/", NULL};
  char real[PATH_MAX];
  if (!realpath(path, real)) return true;
  for (int i = 0; dirs[i]; i++)
    if (!strncmp(real, dirs[i], strlen(dirs[i]))) return true;
  return false;
}

/* #include "file": a file of the user's own, found by find_header;
 * #include <file>: the same when a -I directory of the user's holds it,
 * else a system header (system_header). */
static void include_file(Lexer *lx, const char *directive, const char *p,
                         const char *eol) {
  while (*p == ' ' || *p == '\t') p++;
  if (*p != '"' && *p != '<') return;
  bool quoted = *p == '"';
  Span at = span_from(lx, directive, eol);
  const char *close = memchr(p + 1, quoted ? '"' : '>', (size_t)(eol - p - 1));
  if (!close || close == p + 1) {
    if (!quoted) return;
    lex_error(lx, at, "#include expects a file name in quotes");
  }
  int nlen = (int)(close - p - 1);
  char path[4096];
  /* <name> in a -I directory of the user's own (not a system one, as
   * -I /usr/include is) is theirs: its structs are read as before */
  if (!quoted && !(find_header(lx, p + 1, nlen, false, path, sizeof path) &&
                   !in_system_dir(path))) {
    if (!system_header(lx, p + 1, nlen, at)) longjmp(*lx->on_error, 1);
    return;
  }
  if (quoted) find_header(lx, p + 1, nlen, quoted, path, sizeof path);
  if (lx->st->no_file_includes)
    lex_error(lx, at, "#include of a file is not allowed here");
  if (!push_file(lx, path, at)) longjmp(*lx->on_error, 1);
}

/* A '#' line at top level: #define and #undef; #ifdef/#ifndef/#if 0 skip
 * the branch not taken; #include "file" reads the file (include_file);
 * other directives are for bpftrace's clang front end and are ignored
 * (loupe takes types from BTF). */
static void skip_directive(Lexer *lx) {
  const char *p = lx->pos;
  int len;
  const char *after, *w = directive_word(p, &len, &after);
  const char *eol = end_of_line(p);
  lx->pos = eol;
  if (word_is(w, len, "include")) {
    include_file(lx, p, after, eol);
    return;
  }
  bool taken = true;
  if (word_is(w, len, "ifdef") || word_is(w, len, "ifndef")) {
    const char *name = after;
    while (*name == ' ' || *name == '\t') name++;
    const char *e = name;
    while (is_ident_char((unsigned char)*e)) e++;
    taken = macro_defined(lx, name, (int)(e - name)) ==
            word_is(w, len, "ifdef");
  } else if (word_is(w, len, "if")) {
    const char *x = after;
    while (*x == ' ' || *x == '\t') x++;
    taken = !(x[0] == '0' && !is_ident_char((unsigned char)x[1]));
  } else if (word_is(w, len, "define") || word_is(w, len, "undef")) {
    define_or_undef(lx, word_is(w, len, "define"), p, after, eol);
    return;
  } else if (word_is(w, len, "else") || word_is(w, len, "elif")) {
    /* Reached while lexing: the branch before it was taken. */
    if (*eol) newline_at(lx, eol);
    skip_branch(lx, *eol ? eol + 1 : eol, false);
    return;
  } else {
    return;
  }
  if (taken) return;
  if (*eol) newline_at(lx, eol);
  skip_branch(lx, *eol ? eol + 1 : eol, true);
}

/* Skips blanks and comments; at top level also "#..." lines, which are
 * preprocessor directives (see skip_directive). */
static void skip_space(Lexer *lx, bool skip_directives) {
  for (;;) {
    const char *p = lx->pos;
    if (*p == 0 && lx->depth > 0) {   /* the end of a #define's text */
      lx->depth--;
      lx->pos = lx->expanding[lx->depth].resume;
      lx->line_start = lx->expanding[lx->depth].line_start;
    } else if (*p == 0 && lx->ninclude > 0) {   /* an #include'd file's */
      lx->ninclude--;
      lx->pos = lx->including[lx->ninclude].resume;
      lx->line_start = lx->including[lx->ninclude].line_start;
      lx->line = lx->including[lx->ninclude].line;
      lx->dir = lx->including[lx->ninclude].dir;
    } else if (*p == '\n') {
      newline_at(lx, p);
      lx->pos = p + 1;
    } else if (isspace((unsigned char)*p)) {
      lx->pos = p + 1;
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
      lx->pos = p;
    } else if (p[0] == '/' && p[1] == '*') {
      int line = lx->line;
      const char *ls = lx->line_start;
      for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
        if (*p == '\n') newline_at(lx, p);
      if (!*p)
        lex_error(lx, span_to_eol(line, ls, lx->pos),
                  "end of file during comment");
      lx->pos = p + 2;
    } else if (*p == '#' && skip_directives) {
      skip_directive(lx);
    } else {
      return;
    }
  }
}

/* True if the '/' at p closes a predicate: only blanks and comments stand
 * between it and the '{' of the probe body. Reports nothing. */
static bool closes_predicate(const char *p) {
  p++;
  for (;;) {
    if (isspace((unsigned char)*p)) {
      p++;
    } else if (p[0] == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (p[0] == '/' && p[1] == '*') {
      const char *e = strstr(p + 2, "*/");
      if (!e) return false;
      p = e + 2;
    } else {
      return *p == '{';
    }
  }
}

static int digit_value(int c) {
  if (isdigit(c)) return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

/* Errors about the literal under `at` on the current line. */
static __attribute__((noreturn)) void too_large(Lexer *lx, Span at) {
  lex_error(lx, at,
            "integer literal '%.*s' is too large (the largest is "
            "18446744073709551615)",
            lx->literal_len, lx->literal);
}

static __attribute__((noreturn)) void bad_literal(Lexer *lx, Span at) {
  lex_error(lx, at, "invalid integer literal '%.*s'", lx->literal_len,
            lx->literal);
}

/* The "e6" of "1e6": v times ten to the decimal exponent in [d, end). */
static uint64_t scale_by_exponent(Lexer *lx, Span at, uint64_t v,
                                  const char *d, const char *end) {
  int exp = 0, ndigits = 0;
  for (; d < end; d++) {
    if (*d == '_') continue;
    if (!isdigit((unsigned char)*d)) bad_literal(lx, at);
    if (exp < 1000) exp = exp * 10 + (*d - '0');
    ndigits++;
  }
  if (ndigits == 0) bad_literal(lx, at);
  for (; exp > 0 && v; exp--) {
    if (v > UINT64_MAX / 10) too_large(lx, at);
    v *= 10;
  }
  return v;
}

/* Duration suffixes: "100ms" is that many nanoseconds. */
static const struct {
  const char *suffix;
  uint64_t ns;
} durations[] = {
    {"ns", 1ULL},          {"us", 1000ULL},         {"ms", 1000000ULL},
    {"s", 1000000000ULL},  {"m", 60000000000ULL},   {"h", 3600000000000ULL},
    {"d", 86400000000000ULL},
};

/* Strips the suffix of the literal [start, *end): a duration unit ("ms",
 * whose factor goes to *scale) or C's integer suffixes ("UL", "ull"),
 * which change nothing. A suffix must follow a digit; hex literals take
 * no duration unit, as 'd' is one of their digits. */
static void strip_suffix(const char *start, const char **end,
                         uint64_t *scale) {
  const char *p = *end;
  bool hex = p - start > 1 && start[0] == '0' && (start[1] | 0x20) == 'x';
  *scale = 1;
  for (size_t i = 0; !hex && i < sizeof durations / sizeof durations[0];
       i++) {
    size_t n = strlen(durations[i].suffix);
    if ((size_t)(p - start) > n && !strncmp(p - n, durations[i].suffix, n) &&
        isdigit((unsigned char)p[-(long)n - 1])) {
      *scale = durations[i].ns;
      *end = p - n;
      return;
    }
  }
  const char *q = p;
  while (q - start > 1 && p - q < 3 && strchr("uUlL", q[-1])) q--;
  if (q < p && isxdigit((unsigned char)q[-1])) *end = q;
}

/* Integer literals: decimal, 0x hex, 0b binary, 0 octal, with '_' allowed
 * between digits (1_000_000), decimal exponents (1e6), duration units
 * (100ms) and C's suffixes (10UL). */
static void lex_number(Lexer *lx, Token *t) {
  const char *start = lx->pos, *p = start;
  while (is_ident_char((unsigned char)*p)) p++;
  Span at = span_from(lx, start, p);
  const char *after = p;
  lx->literal = start;
  lx->literal_len = (int)(p - start);
  uint64_t scale;
  strip_suffix(start, &p, &scale);
  int len = (int)(p - start);
  const char *d = start;
  int base = 10;
  if (len > 1 && start[0] == '0' && (start[1] == 'x' || start[1] == 'X')) {
    base = 16, d += 2;
  } else if (len > 1 && start[0] == '0' && (start[1] == 'b' || start[1] == 'B')) {
    base = 2, d += 2;
  } else if (len > 1 && start[0] == '0') {
    base = 8, d += 1;
  }
  uint64_t v = 0;
  int ndigits = 0;
  for (; d < p; d++) {
    if (*d == '_') continue;
    if (base == 10 && ndigits && (*d == 'e' || *d == 'E')) {
      v = scale_by_exponent(lx, at, v, d + 1, p);
      break;
    }
    int dv = digit_value((unsigned char)*d);
    if (dv >= base) bad_literal(lx, at);
    if (v > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base) too_large(lx, at);
    v = v * (uint64_t)base + (uint64_t)dv;
    ndigits++;
  }
  if (ndigits == 0 && base != 8) bad_literal(lx, at);
  if (v > UINT64_MAX / scale)
    lex_error(lx, at, "duration '%.*s' is too large (the largest is "
              "18446744073709551615 ns)", lx->literal_len, lx->literal);
  t->kind = TK_INT;
  t->ival = v * scale;
  t->span = at;
  lx->pos = after;
}

static int hex_value(int c) {
  return isxdigit(c) ? digit_value(c) : -1;
}

/* Decodes one escape sequence starting at the backslash at *pp into *out;
 * advances *pp past it. */
static void decode_escape(Lexer *lx, const char **pp, char *out) {
  const char *p = *pp + 1;
  int c = (unsigned char)*p;
  switch (c) {
  case 'n': *out = '\n'; break;
  case 't': *out = '\t'; break;
  case 'r': *out = '\r'; break;
  case 'a': *out = '\a'; break;
  case 'b': *out = '\b'; break;
  case 'f': *out = '\f'; break;
  case 'v': *out = '\v'; break;
  case 'e': *out = 033; break;
  case '\\': case '"': case '\'': case '?': *out = (char)c; break;
  case 'x': {
    int v = 0, n = 0;
    while (n < 2 && hex_value((unsigned char)p[1]) >= 0)
      v = v * 16 + hex_value((unsigned char)*++p), n++;
    if (n == 0)
      lex_error(lx, span_from(lx, *pp, p + 1),
                "invalid escape character '\\x'");
    *out = (char)v;
    break;
  }
  default:
    if (c >= '0' && c <= '7') {
      int v = c - '0', n = 1;
      while (n < 3 && p[1] >= '0' && p[1] <= '7') v = v * 8 + (*++p - '0'), n++;
      *out = (char)(v & 0xff);
      break;
    }
    if (c == '\n' || c == 0)
      lex_error(lx, span_to_eol(lx->line, lx->line_start, lx->pos),
                "unterminated string");
    lex_error(lx, span_from(lx, *pp, p + 1), "invalid escape character '\\%c'",
              isprint(c) ? c : '?');
  }
  *pp = p + 1;
}

static void lex_string(Lexer *lx, Token *t) {
  const char *start = lx->pos, *p = start + 1;
  /* Decoding only shrinks the text, so the raw length bounds the buffer. */
  const char *e = p;
  while (*e && *e != '"' && *e != '\n') e += (e[0] == '\\' && e[1]) ? 2 : 1;
  char *buf = malloc((size_t)(e - p) + 1);
  if (!buf) abort();
  int n = 0;
  while (*p != '"') {
    if (*p == 0 || *p == '\n')
      lex_error(lx, span_to_eol(lx->line, lx->line_start, start),
                "unterminated string");
    if (*p == '\\')
      decode_escape(lx, &p, &buf[n++]);
    else
      buf[n++] = *p++;
  }
  buf[n] = 0;
  p++;
  t->kind = TK_STR;
  t->sval = buf;
  t->slen = n;
  t->span = span_from(lx, start, p);
  lx->pos = p;
}

/* Operators, longest first so "<<=" wins over "<<" and "<". */
static const struct {
  const char *text;
  TokenKind kind;
  int op;
} operators[] = {
    {"<<=", TK_ASSIGN, OP_SHL}, {">>=", TK_ASSIGN, OP_SHR},
    {"<<", TK_PUNCT, OP_SHL},   {">>", TK_PUNCT, OP_SHR},
    {"<=", TK_PUNCT, OP_LE},    {">=", TK_PUNCT, OP_GE},
    {"==", TK_PUNCT, OP_EQ},    {"!=", TK_PUNCT, OP_NE},
    {"&&", TK_PUNCT, OP_AND},   {"||", TK_PUNCT, OP_OR},
    {"++", TK_PUNCT, OP_INC},   {"--", TK_PUNCT, OP_DEC},
    {"->", TK_PUNCT, P_ARROW},  {"..", TK_PUNCT, P_RANGE},
    {"+=", TK_ASSIGN, '+'},
    {"-=", TK_ASSIGN, '-'},     {"*=", TK_ASSIGN, '*'},
    {"/=", TK_ASSIGN, '/'},     {"%=", TK_ASSIGN, '%'},
    {"&=", TK_ASSIGN, '&'},     {"|=", TK_ASSIGN, '|'},
    {"^=", TK_ASSIGN, '^'},     {"=", TK_ASSIGN, '='},
};

static bool lex_operator(Lexer *lx, Token *t) {
  const char *p = lx->pos;
  for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++) {
    size_t n = strlen(operators[i].text);
    if (strncmp(p, operators[i].text, n) == 0) {
      t->kind = operators[i].kind;
      t->op = operators[i].op;
      t->span = span_from(lx, p, p + n);
      lx->pos = p + n;
      return true;
    }
  }
  if (*p && strchr("+-*/%&|^!~<>()[]{},;:?.", *p)) {
    t->kind = TK_PUNCT;
    t->op = *p;
    t->span = span_from(lx, p, p + 1);
    lx->pos = p + 1;
    return true;
  }
  return false;
}

/* "$x", "$1" (positional parameter), "$#" (their count). */
static void lex_variable(Lexer *lx, Token *t) {
  const char *p = lx->pos + 1;
  if (*p == '#')
    p++;
  else
    while (is_ident_char((unsigned char)*p)) p++;
  if (p == lx->pos + 1)
    lex_error(lx, span_from(lx, lx->pos, p), "invalid character '$'");
  t->kind = TK_VAR;
  t->span = span_from(lx, lx->pos, p);
  lx->pos = p;
}

/* If the name from lx->pos to end is a #define not already being
 * expanded, goes on lexing its text (until skip_space reaches its end). */
static bool expand_define(Lexer *lx, const char *end) {
  const Define *def = find_define(lx, lx->pos, (int)(end - lx->pos));
  if (!def) return false;
  for (int i = 0; i < lx->depth; i++)
    if (lx->expanding[i].def == def) return false;
  if (lx->depth == LEX_MAX_EXPANSION)
    lex_error(lx, span_from(lx, lx->pos, end), "#define %s expands too "
              "deeply", def->name);
  Span at = span_from(lx, lx->pos, end);
  lx->expanding[lx->depth].def = def;
  lx->expanding[lx->depth].resume = end;
  lx->expanding[lx->depth].line_start = lx->line_start;
  lx->expanding[lx->depth].at = at;
  lx->depth++;
  lx->pos = lx->line_start = def->text;
  return true;
}

void lex_next(Lexer *lx, Token *t);

static void lex_token(Lexer *lx, Token *t) {
  const char *p = lx->pos;
  int c = (unsigned char)*p;
  t->text = p;
  if (c == 0) {
    t->kind = TK_EOF;
    t->span = span_from(lx, p, p + 1);
  } else if (isdigit(c)) {
    lex_number(lx, t);
  } else if (is_ident_start(c)) {
    while (is_ident_char((unsigned char)*p)) p++;
    if (expand_define(lx, p)) {
      lex_next(lx, t);   /* the define's first token */
      return;
    }
    t->kind = TK_IDENT;
    t->span = span_from(lx, lx->pos, p);
    lx->pos = p;
  } else if (c == '$') {
    lex_variable(lx, t);
  } else if (c == '@') {
    for (p++; is_ident_char((unsigned char)*p); p++) {}
    t->kind = TK_MAP;
    t->span = span_from(lx, lx->pos, p);
    lx->pos = p;
  } else if (c == '"') {
    lex_string(lx, t);
  } else if (c == '#') {
    while (*p && *p != '\n') p++;
    t->kind = TK_DIRECTIVE;
    t->span = span_from(lx, lx->pos, p);
    lx->pos = p;
  } else if (c == '/' && closes_predicate(p)) {
    t->kind = TK_ENDPRED;
    t->span = span_from(lx, p, p + 1);
    lx->pos = p + 1;
  } else if (!lex_operator(lx, t)) {
    Span at = span_from(lx, p, p + 1);
    if (isprint(c))
      lex_error(lx, at, "invalid character '%c'", c);
    lex_error(lx, at, "invalid character '\\x%02x'", c);
  }
  t->len = (int)(lx->pos - t->text);
}

void lex_next(Lexer *lx, Token *t) {
  memset(t, 0, sizeof *t);
  skip_space(lx, false);
  lex_token(lx, t);
}

/* Whether the '/' at p is inside a relative path ("testprogs/a.out:f"):
 * more of the spec, with another ':' part, follows it. */
static bool slash_in_path(const char *p) {
  for (p++; *p && !isspace((unsigned char)*p) && !strchr(",{}();=\"#", *p);
       p++)
    if (*p == ':') return true;
  return false;
}

/* Where an attach point spec ends (a part may be in double quotes, which
 * parse_top removes). A '/' belongs to the spec when it
 * starts a part ("uprobe:/bin/bash"), the part is a path ("./a.out/x") or
 * a ':' part follows ("uprobe:lib/x.so:f"); otherwise it opens a
 * predicate ("BEGIN/pid == 1/"). */
static const char *attach_point_end(const char *p) {
  const char *part = p;
  for (; *p; p++) {
    int c = (unsigned char)*p;
    /* a part may be quoted: uprobe:/bin/bash:"echo_builtin"+0 */
    if (c == '"' && p == part && p[-1] == ':') {
      const char *q = p + 1;   /* to the closing quote; \" inside */
      while (*q && *q != '"' && *q != '\n') q += (q[0] == '\\' && q[1]) ? 2 : 1;
      if (*q == '"') {
        p = q;
        continue;
      }
    }
    if (isspace(c) || strchr(",{}();=\"#", c)) break;
    if (c == '/' && !(p == part || *part == '/' || *part == '.') &&
        !slash_in_path(p))
      break;
    if (c == ':') part = p + 1;
  }
  return p;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && !strcmp(s + n - m, suffix);
}

/* import "file.bt"; or "file.h" or "dir": the files' text is read in
 * place, as #include "file" reads it (probes, macros and map declarations
 * of a .bt file join the script; a header's definitions too); a
 * directory's .bt and .h files are read in name order. As bpftrace does,
 * nothing is imported from a world-writable directory. True if an import
 * statement was here (lexing goes on in what it read). */
static bool import_statement(Lexer *lx) {
  const char *p = lx->pos;
  if (strncmp(p, "import", 6) || !isspace((unsigned char)p[6])) return false;
  const char *q = p + 6;
  while (*q == ' ' || *q == '\t') q++;
  if (*q != '"') return false;
  const char *close = strchr(q + 1, '"');
  const char *eol = end_of_line(p);
  Span at = span_from(lx, p, close && close < eol ? close + 1 : eol);
  if (!close || close > eol || close == q + 1)
    lex_error(lx, at, "import expects a file name in quotes");
  if (lx->st->no_file_includes)
    lex_error(lx, at, "import of a file is not allowed here");
  const char *after = close + 1;
  while (*after == ' ' || *after == '\t') after++;
  if (*after == ';') after++;
  char path[4096];
  int nlen = (int)(close - q - 1);
  if (q[1] == '/' || !strcmp(lx->dir, "."))
    snprintf(path, sizeof path, "%.*s", nlen, q + 1);
  else
    snprintf(path, sizeof path, "%s/%.*s", lx->dir, nlen, q + 1);
  struct stat st;
  if (stat(path, &st) != 0)
    lex_error(lx, at, "import \"%s\": %s", path, strerror(errno));
  /* the files: the one named, or a directory's */
  char **files = NULL;
  int nfiles = 0;
  char dir[4096];
  if (S_ISDIR(st.st_mode)) {
    snprintf(dir, sizeof dir, "%s", path);
    DIR *d = opendir(path);
    if (!d) lex_error(lx, at, "import \"%s\": %s", path, strerror(errno));
    for (struct dirent *e; (e = readdir(d));) {
      if (has_suffix(e->d_name, ".bpf.c")) {
        closedir(d);
        lex_error(lx, at, "import \"%s\": loupe cannot import BPF C "
                  "sources (%s)", path, e->d_name);
      }
      if (!has_suffix(e->d_name, ".bt") && !has_suffix(e->d_name, ".h"))
        continue;
      files = realloc(files, sizeof(char *) * (size_t)(nfiles + 1));
      if (!files) abort();
      size_t len = strlen(path) + strlen(e->d_name) + 2;
      files[nfiles] = malloc(len);
      if (!files[nfiles]) abort();
      snprintf(files[nfiles++], len, "%s/%s", path, e->d_name);
    }
    closedir(d);
    if (nfiles) qsort(files, (size_t)nfiles, sizeof *files, compare_names);
  } else {
    if (has_suffix(path, ".bpf.c"))
      lex_error(lx, at, "import \"%s\": loupe cannot import BPF C sources",
                path);
    if (!has_suffix(path, ".bt") && !has_suffix(path, ".h"))
      lex_error(lx, at, "import \"%s\": only .bt scripts, .h headers and "
                "directories of them can be imported", path);
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    files = malloc(sizeof(char *));
    if (!files) abort();
    files[nfiles++] = strdup(path);
  }
  struct stat dst;
  if (stat(dir, &dst) == 0 && (dst.st_mode & S_IWOTH))
    lex_error(lx, at, "import \"%s\": %s is world-writable; loupe does "
              "not import from it", path, dir);
  lx->pos = after;
  /* read last first: the files are a stack, the first read first */
  for (int i = nfiles - 1; i >= 0; i--)
    if (!push_file(lx, files[i], at)) longjmp(*lx->on_error, 1);
  return true;
}

void lex_top(Lexer *lx, Token *t) {
  memset(t, 0, sizeof *t);
  skip_space(lx, true);
  while (import_statement(lx)) skip_space(lx, true);
  int c = (unsigned char)*lx->pos;
  /* '$': a positional parameter ("$1 { }"), replaced after parsing */
  if (!(isalnum(c) || c == '_' || c == '*' || c == '.' || c == '$')) {
    lex_token(lx, t);
    return;
  }
  const char *end = attach_point_end(lx->pos);
  t->kind = TK_ATTACH;
  t->text = lx->pos;
  t->len = (int)(end - lx->pos);
  t->span = span_from(lx, lx->pos, end);
  lx->pos = end;
}

static const char *const keywords[] = {
    "if",     "else",  "while",  "unroll", "return", "break",
    "continue", "for", "config", "struct", "union", "enum", "sizeof",
    "offsetof", "macro", "let",
    NULL,
};

static const char *const builtins[] = {
    "pid",    "tid",   "uid",   "gid",     "nsecs",    "elapsed",
    "numaid", "cpu",   "comm",  "kstack",  "ustack",   "stack",
    "func",   "probe", "curtask", "rand",  "cgroup",   "cpid",
    "ctx",    "args",  "username", "retval", "jiffies", NULL,
};

static bool text_in(const Token *t, const char *const *list) {
  for (int i = 0; list[i]; i++)
    if ((int)strlen(list[i]) == t->len && !strncmp(list[i], t->text, t->len))
      return true;
  return false;
}

/* arg0..argN and sarg0..sargN are builtins too. */
static bool is_numbered_arg(const Token *t) {
  const char *p = t->text, *e = t->text + t->len;
  if (p < e && *p == 's') p++;
  if (e - p < 4 || strncmp(p, "arg", 3)) return false;
  for (p += 3; p < e; p++)
    if (!isdigit((unsigned char)*p)) return false;
  return true;
}

const char *lex_token_name(const Token *t, char *buf, int bufsize) {
  switch (t->kind) {
  case TK_EOF: return "end of file";
  case TK_INT: return "integer";
  case TK_STR: return "string";
  case TK_MAP: return "map";
  case TK_ENDPRED: return "end predicate";
  case TK_ATTACH: return "attach point";
  case TK_DIRECTIVE: return "preprocessor directive";
  case TK_VAR:
    return isdigit((unsigned char)t->text[1]) || t->text[1] == '#'
               ? "positional parameter"
               : "variable";
  case TK_IDENT:
    if (text_in(t, keywords)) break;
    if (text_in(t, builtins) || is_numbered_arg(t) ||
        (t->len > 10 && !strncmp(t->text, "__builtin_", 10)))
      return "builtin";
    return "identifier";
  case TK_PUNCT:
  case TK_ASSIGN:
    if (t->op == ',') return "\",\"";
    break;
  }
  snprintf(buf, bufsize, "%.*s", t->len, t->text);
  return buf;
}
