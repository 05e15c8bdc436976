/* print: bpftrace's text output for maps and printf records. */
#ifndef LOUPE_PRINT_H
#define LOUPE_PRINT_H

#include <stdio.h>

#include "program.h"

/* Formats one printf record (payload after the EventHeader). */
void print_printf(const PrintfDef *p, const void *payload, FILE *out);

/* Finds the conversions of a printf format as print_printf will format
 * them: %d %i %u %x %X %o %c %s %p with flags "-+ 0", width, precision
 * (".N") and, except for %c and %s, a length (hh h l ll j z t). "%%" and
 * anything else after '%' is literal text. Stores each conversion's letter
 * in conv_out (max + 1 bytes, NUL-terminated; may be NULL) and returns how
 * many there are, or -1 with a message in err (more than max conversions,
 * a width or precision over 65535). */
int printf_parse(const char *fmt, char *conv_out, int max, char *err,
                 size_t errlen);

/* Prints one map in bpftrace's format (sorted as bpftrace sorts); an empty
 * map prints an empty line, an avg() map is followed by one. Returns 0 or
 * a negative errno. */
int print_map(const MapSym *m, FILE *out);

/* What bpftrace prints at exit: two empty lines, then every map but
 * internal ones, in name order. */
void print_all_maps(const Compiled *c, FILE *out);

/* Empties a map (clear) or zeroes its values (zero). */
int map_clear(const MapSym *m);
int map_zero(const MapSym *m);

#endif
