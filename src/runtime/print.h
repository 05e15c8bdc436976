/* print: bpftrace's text and JSON output for maps and printf records. */
#ifndef LOUPE_PRINT_H
#define LOUPE_PRINT_H

#include <stdint.h>
#include <stdio.h>

#include "model/program.h"
#include "runtime/state.h"

/* The output format (-f): bpftrace's text, its JSON records, one per
 * line, or folded stacks (output/folded.h) for flame graph tools. */
typedef enum OutFormat { OUT_TEXT, OUT_JSON, OUT_FOLDED } OutFormat;

/* Strings of max_strlen bytes read by str() were cut there:
 * printing adds the trailer after them, as bpftrace does. */
void print_set_truncation(int max_strlen, const char *trailer);

/* A growing text: formatting appends to it; s is NUL-terminated once
 * something was appended. */
typedef struct TextBuf {
  char *s;
  size_t len, cap;
} TextBuf;
void text_free(TextBuf *b);

/* A printf format parsed once, for every record printed with it: its
 * literal text and conversions in order, each conversion's C spec made.
 * NULL when out of memory. */
typedef struct PrintfPlan PrintfPlan;
PrintfPlan *printf_plan_new(const PrintfDef *p);
void printf_plan_free(PrintfPlan *pl);

/* One printf record (payload after the EventHeader) formatted as text
 * with p's plan, appended to out. */
void printf_format(const PrintfPlan *pl, const PrintfDef *p,
                   const void *payload, TextBuf *out);

/* A plan for each printf id with a format, made when the run begins
 * (Loaded.printf_plans), and freed when it ends. */
void printf_plans_make(const Compiled *c, Loaded *l);
void printf_plans_free(const Compiled *c, Loaded *l);

/* The text of record `index` (a valid printf id with a format), made
 * with its plan (the plans are made now if the run did not) in l's
 * buffer, which the next record's text replaces (NUL-terminated, and may
 * hold NULs: its len counts them). NULL when out of memory. */
const TextBuf *printf_text(const Compiled *c, Loaded *l, uint32_t index,
                           const void *payload);

/* The same with a plan made for this record alone, written to out. */
void print_printf(const PrintfDef *p, const void *payload, FILE *out);

/* Finds the conversions of a printf format as print_printf will format
 * them: %d %i %u %x %X %o %c %s %p with flags "-+ 0", width, precision
 * (".N") and, except for %c and %s, a length (hh h l ll j z t); and %r,
 * %rx and %rh, which take a buf() argument (with flags, width or precision they
 * still take it, but print as written, as in bpftrace). "%%" and anything
 * else after '%' is literal text. Stores each conversion's letter in
 * conv_out (max + 1 bytes, NUL-terminated; may be NULL) — 'r' for %r, 'R'
 * for %rx, 'H' for %rh, the C letter otherwise — and returns how many there are, or -1
 * with a message in err (more than max conversions, a width or precision
 * over 65535). */
int printf_parse(const char *fmt, char *conv_out, int max, char *err,
                 size_t errlen);
/* The same for a format of len bytes that may hold NUL bytes. */
int printf_parse_bytes(const char *fmt, size_t len, char *conv_out, int max,
                       char *err, size_t errlen);

/* The largest field width or precision a format may ask for, as in
 * bpftrace: a larger one would have the C library pad gigabytes. */
#define PRINTF_MAX_FIELD_WIDTH 65535

/* The decimal number at s[*i] (advancing *i past its digits), or
 * PRINTF_MAX_FIELD_WIDTH + 1 when it is larger than that. */
int printf_field_number(const char *s, int *i);

/* Prints one map (in the kernel as st says) as print(@m, top, div) does:
 * sorted as bpftrace sorts
 * (by value for integers and aggregations — hist/lhist by total count,
 * avg/stats by average —, by key otherwise), only the last `top` entries
 * of that order when top > 0 (not for stats), numbers divided by div when
 * div > 1 (not lhist or stats counts; a histogram's bars stay). In text an
 * empty map prints an empty line, avg() and stats() maps are followed by
 * one; in JSON an empty map prints nothing. Returns 0 or a negative errno. */
int print_map_as(const MapSym *m, const MapState *st, int64_t top,
                 int64_t div, OutFormat fmt, FILE *out);

/* print_map_as(m, st, 0, 1, OUT_TEXT, out). */
int print_map(const MapSym *m, const MapState *st, FILE *out);

/* What bpftrace prints at exit: two empty lines (in JSON too), then every
 * map but internal ones that l created, in name order. */
void print_all_maps_as(const Compiled *c, const Loaded *l, OutFormat fmt,
                       FILE *out);
/* The same while the run goes on (SIGUSR1): no empty lines first. */
void print_all_maps_now(const Compiled *c, const Loaded *l, OutFormat fmt,
                        FILE *out);
void print_all_maps(const Compiled *c, const Loaded *l, FILE *out);  /* text */

/* The text of an integer whose type shows it as text (strftime, a stack
 * indented by 8, ksym, usym, strerror, signal_name, an enum): in buf (or
 * a buffer of its own, for a stack); NULL for plain numbers. */
const char *print_int_text(const Type *t, uint64_t v, char *buf,
                           size_t len);

/* The trailer to print after a string of type t, len bytes held in a
 * buffer of `size` (print_set_truncation). */
const char *print_str_trailer(const Type *t, int size, size_t len);

/* buf() bytes as %r and text show them: printable ASCII as is, other
 * bytes as \xNN. */
void print_buf_escaped(const uint8_t *data, size_t len, FILE *out);

/* The text of a value whose Type.named says how it prints
 * (print_named.c): of an integer (strerror, signal_name), or of a TY_BUF
 * (ntop, macaddr) stored at p. In buf; NULL if t has no such name. */
const char *named_int_text(const Type *t, uint64_t v, char *buf,
                           size_t len);
const char *named_buf_text(const Type *t, const uint8_t *p, char *buf,
                           size_t len);

/* Empties a map (clear) or zeroes its values (zero). */
int map_clear(const MapSym *m, MapState *st);
int map_zero(const MapSym *m, MapState *st);

#endif
