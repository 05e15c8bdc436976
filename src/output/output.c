/* output: the encoder of a format, and what every format does alike:
 * decode a map, then hand it to the encoder. */
#include "output/encoder.h"

#include <inttypes.h>
#include <string.h>
#include <time.h>

#include "runtime/print.h"

/* The formats -f names, in the order of OutFormat (runtime/print.h). A
 * new format is its encoder's file and a line here. */
static const Encoder *const formats[] = {
    [OUT_TEXT] = &text_encoder,
    [OUT_JSON] = &json_encoder,
    [OUT_FOLDED] = &folded_encoder,
};
#define NFORMATS (int)(sizeof formats / sizeof *formats)

Output output_for(int format, FILE *out) {
  const Encoder *enc = format >= 0 && format < NFORMATS ? formats[format]
                                                        : &text_encoder;
  return (Output){.enc = enc, .out = out};
}

int output_format_named(const char *name) {
  for (int i = 0; i < NFORMATS; i++)
    if (!strcmp(formats[i]->name, name)) return i;
  return -1;
}

void output_put_format_names(FILE *out) {
  for (int i = 0; i < NFORMATS; i++)
    fprintf(out, "%s'%s'", i ? ", " : "", formats[i]->name);
}

int output_map(Output *o, const MapSym *m, const MapState *st, int64_t top,
               int64_t div) {
  DecodedMap d;
  int err = decode_map(m, st, top, div, &o->enc->decode, &d);
  if (!err) o->enc->map(o, &d);
  decoded_map_free(&d);
  return err;
}

int output_count_stack_maps(const MapSym *const *maps, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += map_has_stack_key(maps[i]);
  return k;
}

void output_event(Output *o, const char *type, const Value *v, bool line) {
  o->enc->event(o, type, v, line);
}

void output_message(Output *o, const char *type, const char *text,
                    size_t len, bool line) {
  Value v = {.kind = VAL_STR, .bytes = text, .len = len};
  o->enc->event(o, type, &v, line);
}

void output_put_time(uint64_t ns, const char *fmt, int digits, FILE *out) {
  time_t sec = (time_t)(ns / 1000000000);
  struct tm tm;
  localtime_r(&sec, &tm);
  char buf[64];
  strftime(buf, sizeof buf, fmt, &tm);
  uint64_t frac = ns % 1000000000;
  for (int i = digits; i < 9; i++) frac /= 10;
  fprintf(out, "%s.%0*" PRIu64, buf, digits, frac);
}
