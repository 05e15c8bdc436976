/* lex + parse: script text to AST. */
#ifndef LOUPE_PARSE_H
#define LOUPE_PARSE_H

#include "lang/ast.h"

/* Parses the whole source, with the files --include names first and the
 * -I directories of st (NULL: none). On error, reports through d and
 * returns NULL. */
Script *parse_script(const Source *src, const Settings *st, Diag *d);

/* $1, $2 ... in attach points ("interval:ms:$1", "uprobe:$1:f", "$1"),
 * replaced by the command line's words (s->settings->params). Returns the
 * number of errors (a parameter not given). */
int substitute_attach_params(Script *s, Diag *d);

#endif
