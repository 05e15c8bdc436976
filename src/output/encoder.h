/* encoder: an output format, as one record of hooks that write decoded
 * values (value.h, decode.h). The formats are text.c (bpftrace's text),
 * json.c (its JSON records, one per line), folded.c (folded stacks) and
 * flamegraph.c (an SVG file, --flamegraph).
 *
 * Nothing else formats output: the builtins decode their records into
 * Values and hand them to output_event, maps print through output_map. */
#ifndef LOUPE_OUTPUT_ENCODER_H
#define LOUPE_OUTPUT_ENCODER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "model/program.h"
#include "output/decode.h"
#include "output/value.h"

struct Output;

typedef struct Encoder {
  const char *name;       /* as -f names it */
  DecodeOpts decode;      /* what its maps need decoded */
  /* Before the maps printed together, in name order (at the end of the
   * run when at_exit, else on SIGUSR1). */
  void (*maps_begin)(struct Output *o, const MapSym *const *maps, int n,
                     bool at_exit);
  /* One map (print(@m), or one of those above). */
  void (*map)(struct Output *o, const DecodedMap *d);
  /* A record a builtin sent (printf, print(value), time, ...): its JSON
   * type ("printf", "value", ...) and value; `line`: a line of its own
   * (text ends it with a newline). NULL in a format of maps only (the
   * flame graph). */
  void (*event)(struct Output *o, const char *type, const Value *v,
                bool line);
} Encoder;

/* An encoder writing to a stream. */
typedef struct Output {
  const Encoder *enc;
  FILE *out;
  void *state;     /* what an encoder gathers over several maps */
  /* while maps print together (maps_begin): the stack-keyed ones among
   * them (folded puts each under a frame of its name when several) */
  bool in_map_set;
  int set_stack_maps;
} Output;

extern const Encoder text_encoder;     /* text.c */
extern const Encoder json_encoder;     /* json.c */
extern const Encoder folded_encoder;   /* folded.c */

/* The encoder of an OutFormat (runtime/print.h), writing to out. */
Output output_for(int format, FILE *out);
/* The OutFormat -f names `name` (its encoder's name), or -1. */
int output_format_named(const char *name);
/* The names of the formats, quoted and joined by ", ". */
void output_put_format_names(FILE *out);

/* Decodes map m (in the kernel as st says) as print(@m, top, div) shows it
 * and encodes it. Returns 0 or a negative errno. */
int output_map(Output *o, const MapSym *m, const MapState *st, int64_t top,
               int64_t div);
/* How many of the maps are keyed by a stack. */
int output_count_stack_maps(const MapSym *const *maps, int n);
/* Encodes an event's value. */
void output_event(Output *o, const char *type, const Value *v, bool line);
/* The same for a message (the text of printf, time, system, cat, join). */
void output_message(Output *o, const char *type, const char *text,
                    size_t len, bool line);

/* ns since the Unix epoch as local time: strftime's fmt, then '.' and
 * `digits` digits (1..9) of the second. */
void output_put_time(uint64_t ns, const char *fmt, int digits, FILE *out);

/* The text of a value as text output shows it (text.c), for the formats
 * that name things by it (JSON's map keys, folded frames). */
void text_put_value(const Value *v, FILE *out);
/* A string as a quoted JSON string, escaped as bpftrace escapes it
 * (json.c). */
void json_put_string(const char *s, size_t len, FILE *out);

#endif
