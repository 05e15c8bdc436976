#include "lang/diag.h"

#include <stdlib.h>
#include <string.h>

void diag_init(Diag *d, const Source *src) {
  /* every field: demote was left as the stack had it, so a hint shown
   * only to undemoted errors came and went with the build */
  *d = (Diag){.src = src, .out = stderr, .demote = DEMOTE_NONE};
}

int diag_include(Diag *d, const Source *src) {
  if (d->nincluded == DIAG_MAX_INCLUDES) return 0;
  d->included[d->nincluded++] = src;
  return d->nincluded;
}

/* The source a span is in (the script, or an included file) and its line
 * there; NULL when there is none. */
static const Source *source_of(const Diag *d, Span at, int *line) {
  int k = at.line / DIAG_INCLUDE_LINES;
  *line = at.line % DIAG_INCLUDE_LINES;
  if (k == 0) return d->src;
  return k <= d->nincluded ? d->included[k - 1] : NULL;
}

int diag_expansion(Diag *d, Span call) {
  Span *calls = realloc(d->calls, sizeof(Span) * (size_t)(d->ncalls + 1));
  if (!calls) abort();
  d->calls = calls;
  d->calls[d->ncalls++] = call;
  return d->ncalls;
}

/* Prints line `line` of the source and marks columns [col, end_col). Tabs
 * in the source line are echoed in the marker line so carets stay aligned. */
static void show_source_line(Diag *d, Span at) {
  int line;
  const Source *src = source_of(d, at, &line);
  const char *p = src ? src->text : NULL;
  for (int l = 1; l < line && p; l++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p || src->hide_text) return;
  const char *end = strchr(p, '\n');
  int len = end ? (int)(end - p) : (int)strlen(p);
  fprintf(d->out, "%.*s\n", len, p);
  int last = at.end_col > at.col ? at.end_col : at.col + 1;
  for (int c = 1; c < last && c <= len + 1; c++) {
    char ch = (c - 1 < len && p[c - 1] == '\t') ? '\t' : ' ';
    fputc(c >= at.col ? '^' : ch, d->out);
  }
  fputc('\n', d->out);
}

/* "stdin:1:5-9: ERROR: " or, without a location, "ERROR: ". */
static void print_location(Diag *d, const char *kind, Span at) {
  int line;
  const Source *src = source_of(d, at, &line);
  if (at.line > 0 && src) {
    int end = at.end_col > at.col ? at.end_col : at.col + 1;
    fprintf(d->out, "%s:%d:%d-%d: %s: ", src->name, line, at.col, end,
            kind);
  } else {
    fprintf(d->out, "%s: ", kind);
  }
}

/* Text copied from a macro's body: where each expansion was called, out
 * to the script's own text (a call site comes from an older expansion,
 * so the chain ends). */
static void show_expansions(Diag *d, const char *kind, Span at) {
  for (int e = at.exp; e > 0 && e <= d->ncalls;) {
    Span call = d->calls[e - 1];
    print_location(d, kind, call);
    fputs("expanded from\n", d->out);
    if (call.line > 0) show_source_line(d, call);
    e = call.exp < e ? call.exp : 0;
  }
}

static void report(Diag *d, const char *kind, Span at, const char *fmt,
                   va_list ap) {
  int line;
  const Source *src = at.line > 0 ? source_of(d, at, &line) : NULL;
  print_location(d, kind, at);
  if (src && src->hide_text)   /* see Source.hide_text in diag.h */
    fprintf(d->out, "%s (loupe shows no text of %s: not every user may "
            "read it)", strcmp(kind, "ERROR") ? "a warning about the text "
            "here" : "the text here is not valid", src->name);
  else
    vfprintf(d->out, fmt, ap);
  fputc('\n', d->out);
  if (at.line > 0) show_source_line(d, at);
  show_expansions(d, kind, at);
}

char *diag_expansions(Diag *d, Span at, const char *kind) {
  if (at.exp <= 0) return NULL;
  char *s = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&s, &len), *out = d->out;
  if (!f) return NULL;
  d->out = f;
  show_expansions(d, kind, at);
  d->out = out;
  fclose(f);
  return s;
}

char *diag_prefix(const Diag *d, Span at, const char *kind) {
  char *s = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&s, &len);
  if (!f) return NULL;
  int line;
  const Source *src = source_of(d, at, &line);
  if (at.line > 0 && src) {
    int end = at.end_col > at.col ? at.end_col : at.col + 1;
    fprintf(f, "%s:%d:%d-%d: ", src->name, line, at.col, end);
  }
  fprintf(f, "%s: ", kind);
  fclose(f);
  return s;
}

void diag_verror(Diag *d, Span at, const char *fmt, va_list ap) {
  if (d->demote == DEMOTE_TO_NOTHING) return;
  if (d->demote == DEMOTE_TO_WARNING) {
    d->warnings++;
    if (!d->no_warnings) report(d, "WARNING", at, fmt, ap);
    return;
  }
  d->errors++;
  report(d, "ERROR", at, fmt, ap);
}

void diag_error(Diag *d, Span at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, at, fmt, ap);
  va_end(ap);
}

void diag_warning(Diag *d, Span at, const char *fmt, ...) {
  va_list ap;
  d->warnings++;
  if (d->no_warnings) return;
  va_start(ap, fmt);
  report(d, "WARNING", at, fmt, ap);
  va_end(ap);
}

void diag_hint(Diag *d, const char *fmt, ...) {
  va_list ap;
  fputs("HINT: ", d->out);
  va_start(ap, fmt);
  vfprintf(d->out, fmt, ap);
  va_end(ap);
  fputc('\n', d->out);
}

Span span_join(Span a, Span b) {
  if (a.line == 0) return b;
  if (b.line == 0) return a;
  if (b.line < a.line || (b.line == a.line && b.col < a.col)) {
    Span t = a;
    a = b;
    b = t;
  }
  Span r = a;
  if (b.line == a.line && b.end_col > r.end_col) r.end_col = b.end_col;
  return r;
}
