/* dlib: a shared library loaded the first time a feature needs it, so
 * that runs without the feature do not pay for loading it (libcurl and
 * libmicrohttpd bring some thirty libraries with them, ten times loupe's
 * whole start-up). Not in the static build, which links what it has. */
#ifndef LOUPE_UTIL_DLIB_H
#define LOUPE_UTIL_DLIB_H

#include <stdbool.h>
#include <stddef.h>

/* Opens the first of `sonames` (NULL-terminated) that loads and looks up
 * each of `symbols` (NULL-terminated) into fns[i]. False with a message
 * in err naming the library (and `package`, the Debian package that has
 * it) or the symbol that is missing. */
bool dlib_load(const char *const *sonames, const char *package,
               const char *const *symbols, void **fns, char *err,
               size_t errlen);

#endif
