/* diag: located error messages shared by every stage.
 *
 * A message names the source, line and columns (end column exclusive, as
 * bpftrace prints them), shows the offending line and underlines the
 * culprit with carets:
 *
 *   stdin:1:14-21: ERROR: Type mismatch for '+': int64 and string[2]
 *   BEGIN { @a = 1 + "x"; }
 *                ^^^^^^^
 */
#ifndef LOUPE_DIAG_H
#define LOUPE_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

/* A script's text and the name it is reported under ("stdin" for -e).
 *
 * Whose text a message may show: the script's own (-e, its file, stdin)
 * is the user's, and a message quotes its line. A file the script reads
 * in (#include, import) may be anyone's: /etc/shadow named by mistake, or
 * by a script from elsewhere, and loupe runs as root. Its text is shown
 * only if every user may read the file anyway (o+r); in any other file
 * (hide_text) a message gives the file, line and columns, says that the
 * text there is not valid and why none is shown, and quotes nothing: not
 * the line, and not the message either, since messages quote names and
 * literals. Whoever may read the file opens it at that line. */
typedef struct Source {
  const char *name;
  const char *text;
  bool hide_text;
} Source;

/* A region of the source: 1-based line, 1-based column, end column
 * exclusive. A span with line 0 is "no location" (the message then has no
 * file prefix and no source line). */
typedef struct Span {
  int line;
  int col;
  int end_col;
  int exp;      /* 0, or the macro expansion this text was copied into
                   (diag_expansion): a message here then also shows the
                   call that expanded it, and that call's own expansion */
} Span;

/* Files read by #include "file" get line numbers of their own range:
 * line L of the k-th (from 1) is k * DIAG_INCLUDE_LINES + L, so that a
 * Span says which file it is in without a field of its own. */
#define DIAG_INCLUDE_LINES 1000000
#define DIAG_MAX_INCLUDES 64

typedef struct Diag {
  const Source *src;
  const Source *included[DIAG_MAX_INCLUDES];  /* by k - 1 */
  int nincluded;
  FILE *out;    /* stderr unless a test redirects it */
  int errors;   /* number of errors reported so far */
  int warnings;
  bool no_warnings;  /* --no-warnings: count warnings, print none */
  int demote;   /* DEMOTE_*: how errors are reported for now */
  Span *calls;  /* the call site of each macro expansion, by id - 1 */
  int ncalls;
} Diag;

/* Diag.demote: errors as errors, as warnings, or not at all (a probe
 * that matches nothing under missing_probes = warn or ignore). */
enum { DEMOTE_NONE, DEMOTE_TO_WARNING, DEMOTE_TO_NOTHING };

void diag_init(Diag *d, const Source *src);
void diag_error(Diag *d, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A follow-up line ("HINT: ...") printed after the last error. */
void diag_hint(Diag *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void diag_verror(Diag *d, Span at, const char *fmt, va_list ap);

/* "stdin:1:9-62: KIND: ", the prefix of a located message, malloc'd. */
char *diag_prefix(const Diag *d, Span at, const char *kind);
/* For a place in text a macro expanded: the "expanded from" lines of
 * each call out to the script's own text, as an error there shows them,
 * malloc'd; NULL elsewhere. */
char *diag_expansions(Diag *d, Span at, const char *kind);

/* Records a file read by #include; returns its k (see DIAG_INCLUDE_LINES),
 * or 0 when there are too many. */
int diag_include(Diag *d, const Source *src);

/* Records a macro expansion called at `call` and returns its id, for the
 * Span.exp of the text copied into it. */
int diag_expansion(Diag *d, Span call);

/* The smallest span covering both (expanded from where the first is). */
Span span_join(Span a, Span b);

#endif
