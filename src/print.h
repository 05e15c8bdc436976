/* print: bpftrace's text output for maps and printf records. */
#ifndef LOUPE_PRINT_H
#define LOUPE_PRINT_H

#include <stdio.h>

#include "program.h"

/* Formats one printf record (payload after the EventHeader). */
void print_printf(const PrintfDef *p, const void *payload, FILE *out);

/* Prints one map in bpftrace's format (sorted as bpftrace sorts). */
int print_map(const MapSym *m, FILE *out);

/* Prints every non-empty map, as bpftrace does at exit. */
void print_all_maps(const Compiled *c, FILE *out);

/* Empties a map (clear) or zeroes its values (zero). */
int map_clear(const MapSym *m);
int map_zero(const MapSym *m);

#endif
