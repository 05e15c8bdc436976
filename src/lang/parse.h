/* lex + parse: script text to AST. */
#ifndef LOUPE_PARSE_H
#define LOUPE_PARSE_H

#include "lang/ast.h"

/* Parses the whole source. On error, reports through d and returns NULL. */
Script *parse_script(const Source *src, Diag *d);

#endif
