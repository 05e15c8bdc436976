/* print: bpftrace 0.17's printf formatting, and the way to print maps in
 * a format.
 *
 * printf follows bpftrace's way of formatting: every conversion (with the
 * literal text before it) is formatted on its own with the argument widened
 * to 64 bits, so the C length modifier decides how many low bits are shown
 * ("%d" of 0x123456789 prints 591751049, "%lu" of (int32)-1 prints
 * 18446744073709551615). Text after the last conversion, or the whole
 * format when there is none, is written as is ("%%" stays "%%"). %r,
 * %rx and %rh print a buf(): printable ASCII as is and other bytes as
 * \xNN, every byte as \xNN, or every byte as two hex digits, spaced;
 * %gr prints an integer as GFP flags (runtime/gfp.c).
 *
 * Maps print through the encoder of the output format (output/): it
 * decodes them (output/decode.c) and the encoder writes them. What is
 * left here is what printf and the decoding share: the text of an
 * integer that reads as a name, a string's trailer, a buf()'s bytes.
 */
#define _GNU_SOURCE   /* sigabbrev_np, for signal_name() */
#include "runtime/print.h"
#include "runtime/gfp.h"
#include "runtime/print_stack.h"
#include "runtime/map_read.h"

#include "builtins/builtin.h"
#include "output/encoder.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* ---- strings ---------------------------------------------------------- */

static int trunc_strlen;                /* 0: no trailer */
static const char *trunc_trailer = "";

void print_set_truncation(int max_strlen, const char *trailer) {
  trunc_strlen = max_strlen;
  trunc_trailer = trailer ? trailer : "";
}

/* The trailer to print after a string of type t, len bytes held in a
 * buffer of `size`: str() reads up to max_strlen bytes (and a NUL), so a
 * string of that length in such a buffer was (most likely) cut; a
 * `whole` one (path()) never was. */
const char *print_str_trailer(const Type *t, int size, size_t len) {
  if (trunc_strlen <= 0 || size <= trunc_strlen || t->whole ||
      len < (size_t)trunc_strlen)
    return "";
  return trunc_trailer;
}

/* ---- printf ---------------------------------------------------------- */

/* One conversion of a format string, e.g. "%-08.3lx". */
typedef struct Conv {
  int start, end;      /* [start, end) in the format */
  char flags[8];       /* '-', '+', ' ', '0' as written */
  int width;           /* -1: none */
  int prec;            /* -1: none */
  int bits;            /* value bits the length modifier keeps: 8..64 */
  char letter;         /* d i u x X o c s p, r (%r), R (%rx) or H (%rh) */
  bool plain;          /* no flags, width, precision or length */
} Conv;

int printf_field_number(const char *s, int *i) {
  long v = 0;
  while (s[*i] >= '0' && s[*i] <= '9') {
    if (v <= PRINTF_MAX_FIELD_WIDTH) v = v * 10 + (s[*i] - '0');
    (*i)++;
  }
  return v > PRINTF_MAX_FIELD_WIDTH ? PRINTF_MAX_FIELD_WIDTH + 1 : (int)v;
}

/* The length modifier at s[*i]: how many bits of the widened value the C
 * conversion would read. No modifier means int (32 bits). */
static int parse_length(const char *s, int *i) {
  if (s[*i] == 'h' && s[*i + 1] == 'h') return *i += 2, 8;
  if (s[*i] == 'h') return *i += 1, 16;
  if (s[*i] == 'l' && s[*i + 1] == 'l') return *i += 2, 64;
  if (strchr("lzjt", s[*i]) && s[*i]) return *i += 1, 64;
  return 32;
}

/* Parses the conversion starting at fmt[at] == '%'. Returns false when the
 * text is not one (bpftrace then prints it as literal text). Precision needs
 * digits ("%.d" is text); %c and %s take no length modifier. */
static bool parse_conv(const char *fmt, int at, Conv *cv) {
  int i = at + 1, nflags = 0;
  memset(cv, 0, sizeof *cv);
  while (fmt[i] && strchr("-+ 0", fmt[i])) {
    if (nflags < (int)sizeof cv->flags - 1) cv->flags[nflags++] = fmt[i];
    i++;
  }
  cv->width = -1;
  cv->prec = -1;
  if (fmt[i] >= '1' && fmt[i] <= '9') cv->width = printf_field_number(fmt, &i);
  if (fmt[i] == '.') {
    i++;
    if (fmt[i] < '0' || fmt[i] > '9') return false;
    cv->prec = printf_field_number(fmt, &i);
  }
  int len_at = i;
  cv->bits = parse_length(fmt, &i);
  cv->plain = i == at + 1;
  char c = fmt[i];
  if (c == 'g' && fmt[i + 1] == 'r' && i == len_at) {   /* %gr: GFP flags */
    cv->letter = 'G';
    cv->start = at;
    cv->end = i + 2;
    return true;
  }
  if (!c || !strchr("diuxXocspr", c)) return false;
  if ((c == 'c' || c == 's' || c == 'r') && i != len_at) return false;
  cv->letter = c;
  cv->start = at;
  cv->end = i + 1;
  if (c == 'r' && (fmt[i + 1] == 'x' || fmt[i + 1] == 'h')) {
    cv->letter = fmt[i + 1] == 'x' ? 'R' : 'H';
    cv->end = i + 2;
  }
  return true;
}

/* Finds the next conversion at or after fmt[*pos]; "%%" is skipped as
 * literal text. Returns false at the end of the format. */
static bool next_conv(const char *fmt, int *pos, Conv *cv) {
  for (int i = *pos; fmt[i]; i++) {
    if (fmt[i] != '%') continue;
    if (fmt[i + 1] == '%') {
      i++;
      continue;
    }
    if (parse_conv(fmt, i, cv)) {
      *pos = cv->end;
      return true;
    }
  }
  return false;
}

int printf_parse_bytes(const char *fmt, size_t len, char *conv_out, int max,
                       char *err, size_t errlen) {
  int n = 0;
  for (size_t at = 0; at <= len; at += strlen(fmt + at) + 1) {
    int got = printf_parse(fmt + at, conv_out ? conv_out + n : NULL, max - n,
                           err, errlen);
    if (got < 0) return -1;
    n += got;
  }
  return n;
}

int printf_parse(const char *fmt, char *conv_out, int max, char *err,
                 size_t errlen) {
  Conv cv;
  int n = 0, pos = 0;
  while (next_conv(fmt, &pos, &cv)) {
    if (cv.width > PRINTF_MAX_FIELD_WIDTH ||
        cv.prec > PRINTF_MAX_FIELD_WIDTH) {
      snprintf(err, errlen, "printf: field width or precision of '%.*s' is "
               "too large (at most %d)", cv.end - cv.start, fmt + cv.start,
               PRINTF_MAX_FIELD_WIDTH);
      return -1;
    }
    if (n == max) {
      snprintf(err, errlen, "printf: too many format specifiers (at most %d "
               "are supported)", max);
      return -1;
    }
    if (conv_out) conv_out[n] = cv.letter;
    n++;
  }
  if (conv_out) conv_out[n] = '\0';
  return n;
}

/* strftime()'s value: ns since boot as the local time in fmt (strftime(3),
 * plus %f for the microseconds). Boot time becomes wall time through the
 * two clocks' difference when loupe first formats a time. */
static void format_timestamp(const char *fmt, uint64_t ns, char *buf,
                             size_t len) {
  static int64_t boot_to_wall;   /* read once, so times compare exactly */
  if (!boot_to_wall) {
    struct timespec real, boot;
    clock_gettime(CLOCK_REALTIME, &real);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    boot_to_wall = (real.tv_sec - boot.tv_sec) * 1000000000LL +
                   (real.tv_nsec - boot.tv_nsec);
  }
  /* in seconds and nanoseconds apart: ns goes up to 2^64 - 1 (584
   * years), which the sum in nanoseconds overflowed into the 18th
   * century */
  time_t secs = (time_t)(boot_to_wall / 1000000000LL) +
                (time_t)(ns / 1000000000ULL);
  int64_t nsec = boot_to_wall % 1000000000LL + (int64_t)(ns % 1000000000ULL);
  if (nsec >= 1000000000LL) secs++, nsec -= 1000000000LL;
  if (nsec < 0) secs--, nsec += 1000000000LL;
  char micros[8], expanded[512];
  snprintf(micros, sizeof micros, "%06d", (int)(nsec / 1000));
  size_t o = 0;
  for (const char *f = fmt; *f && o + 8 < sizeof expanded; f++) {
    if (f[0] == '%' && f[1] == 'f') {
      memcpy(expanded + o, micros, 6);
      o += 6;
      f++;
    } else if (f[0] == '%' && f[1]) {
      expanded[o++] = *f++;
      expanded[o++] = *f;
    } else {
      expanded[o++] = *f;
    }
  }
  expanded[o] = '\0';
  struct tm tm;
  if (!localtime_r(&secs, &tm))   /* a year an int cannot hold */
    snprintf(buf, len, "(time out of range)");
  else if (strftime(buf, len, expanded, &tm) == 0)
    buf[0] = '\0';
}

/* Literal text between conversions goes through C's printf in bpftrace, so
 * "%%" becomes "%"; anything else is copied. */
static void put_literal(const char *s, int len, FILE *out) {
  for (int i = 0; i < len; i++) {
    fputc(s[i], out);
    if (s[i] == '%' && i + 1 < len && s[i + 1] == '%') i++;
  }
}

/* The C conversion spec for cv: its flags, width and precision, then
 * `length` and `letter`. */
static void c_spec(const Conv *cv, const char *length, char letter, char *buf,
                   size_t len) {
  int n = snprintf(buf, len, "%%%s", cv->flags);
  if (cv->width >= 0) n += snprintf(buf + n, len - n, "%d", cv->width);
  if (cv->prec >= 0) n += snprintf(buf + n, len - n, ".%d", cv->prec);
  snprintf(buf + n, len - n, "%s%c", length, letter);
}

/* Keeps the low `bits` bits of v, sign-extending them when `sign`. */
static uint64_t narrow(uint64_t v, int bits, bool sign) {
  switch (bits) {
  case 8: return sign ? (uint64_t)(int64_t)(int8_t)v : (uint8_t)v;
  case 16: return sign ? (uint64_t)(int64_t)(int16_t)v : (uint16_t)v;
  case 32: return sign ? (uint64_t)(int64_t)(int32_t)v : (uint32_t)v;
  default: return v;
  }
}

/* How a buf() prints: printable ASCII as is and every other byte as \xNN
 * (%r), every byte as \xNN (%rx), or as "NN NN" (%rh). */
typedef enum BufStyle { BUF_ASCII, BUF_HEX, BUF_SPACED } BufStyle;

static void print_buf_bytes(const uint8_t *data, size_t len, BufStyle style,
                            FILE *out) {
  for (size_t i = 0; i < len; i++) {
    if (style == BUF_SPACED)
      fprintf(out, "%s%02x", i ? " " : "", data[i]);
    else if (style == BUF_ASCII && data[i] >= 0x20 && data[i] < 0x7f)
      fputc(data[i], out);
    else
      fprintf(out, "\\x%02x", data[i]);
  }
}

/* The bytes of a TY_BUF value: its 8-byte length, then up to type.size
 * bytes of data. */
void print_buf_escaped(const uint8_t *data, size_t len, FILE *out) {
  print_buf_bytes(data, len, BUF_ASCII, out);
}

static void put_buf(const Type *t, const uint8_t *p, BufStyle style,
                    FILE *out) {
  uint64_t len;
  memcpy(&len, p, 8);
  if (len > (uint64_t)t->size) len = t->size;
  print_buf_bytes(p + 8, len, style, out);
}

/* %r, %rx and %rh of a buf(). bpftrace knows no flags, width or precision
 * for them: such a conversion takes its argument but prints as written. */
static void put_buf_conv(const Conv *cv, const FmtArg *arg,
                         const uint8_t *payload, const char *fmt, FILE *out) {
  if (!cv->plain || arg->type.kind != TY_BUF) {
    fwrite(fmt + cv->start, 1, cv->end - cv->start, out);
    return;
  }
  put_buf(&arg->type, payload + arg->offset,
          cv->letter == 'R' ? BUF_HEX : cv->letter == 'H' ? BUF_SPACED
                                                          : BUF_ASCII, out);
}

/* The text of an integer of an enum type: its enumerator's name, or the
 * number when none has that value. */
static const char *enum_text(const Type *t, uint64_t v, char *buf,
                             size_t len);

const char *print_int_text(const Type *t, uint64_t v, char *buf,
                           size_t len) {
  if (t->time_fmt) {
    format_timestamp(t->time_fmt, v, buf, len);
    return buf;
  }
  if (t->named == NAMED_KSTACK || t->named == NAMED_USTACK)
    return stack_text(t, v, 8);
  if (t->named == NAMED_KSYM || t->named == NAMED_USYM)
    return symbol_text(t, v, buf, len);
  if (t->named) return named_int_text(t, v, buf, len);
  if (t->enum_def) return enum_text(t, v, buf, len);
  return NULL;
}

static const char *enum_text(const Type *t, uint64_t v, char *buf,
                             size_t len) {
  const char *name = enum_value_name(t->enum_def, (int64_t)v);
  if (name) return name;
  if (t->is_signed)
    snprintf(buf, len, "%" PRId64, (int64_t)v);
  else
    snprintf(buf, len, "%" PRIu64, v);
  return buf;
}

/* Writes the formatted conversion. Output stops at a NUL byte (from "%c"
 * of 0) because bpftrace handles each piece as a C string. */
static void put_conv(const Conv *cv, const FmtArg *arg, const uint8_t *payload,
                     FILE *out) {
  char spec[48];
  char small[256];
  char *buf = small;
  size_t need = (size_t)(cv->width > 0 ? cv->width : 0) +
                (size_t)(cv->prec > 0 ? cv->prec : 0) + 64;
  if (arg->type.kind == TY_STR)
    need += arg->type.size + strlen(trunc_trailer);
  if (cv->letter == 's' && arg->type.kind != TY_STR) need += 512;  /* text */
  if (need > sizeof small) buf = malloc(need);
  if (!buf) return;

  if (arg->type.kind == TY_BUF) {   /* %s of an address: its text */
    char text[64];
    c_spec(cv, "", 's', spec, sizeof spec);
    snprintf(buf, need, spec,
             named_buf_text(&arg->type, payload + arg->offset, text,
                            sizeof text));
  } else if (arg->type.kind == TY_STR) {
    int size = arg->type.size;
    const char *text = (const char *)payload + arg->offset;
    size_t len = strnlen(text, size);
    const char *trailer = print_str_trailer(&arg->type, size, len);
    char *s = malloc(len + strlen(trailer) + 1);
    if (s) {
      memcpy(s, text, len);
      strcpy(s + len, trailer);
      c_spec(cv, "", 's', spec, sizeof spec);
      if (cv->letter != 's') snprintf(spec, sizeof spec, "%%s");
      snprintf(buf, need, spec, s);
      free(s);
    } else {
      buf[0] = '\0';
    }
  } else {
    uint64_t v;
    memcpy(&v, payload + arg->offset, 8);
    switch (cv->letter) {
    case 'd':
    case 'i':
      c_spec(cv, "ll", 'd', spec, sizeof spec);
      snprintf(buf, need, spec, (long long)narrow(v, cv->bits, true));
      break;
    case 'u':
    case 'x':
    case 'X':
    case 'o':
      c_spec(cv, "ll", cv->letter, spec, sizeof spec);
      snprintf(buf, need, spec,
               (unsigned long long)narrow(v, cv->bits, false));
      break;
    case 'c':
      c_spec(cv, "", 'c', spec, sizeof spec);
      snprintf(buf, need, spec, (int)(unsigned char)v);
      break;
    case 'p':
      c_spec(cv, "", 'p', spec, sizeof spec);
      snprintf(buf, need, spec, (void *)(uintptr_t)v);
      break;
    case 'G': {   /* %gr */
      char text[512];
      gfp_flags_text(v, text, sizeof text);
      c_spec(cv, "", 's', spec, sizeof spec);
      snprintf(buf, need, spec, text);
      break;
    }
    case 's': {   /* an integer printed as text: a time, a name, a stack */
      char text[512];
      const char *s = print_int_text(&arg->type, v, text, sizeof text);
      size_t slen = s ? strlen(s) : 0;
      if (slen + 64 > need) {   /* a stack can be long */
        char *bigger = malloc(slen + need);
        if (!bigger) { buf[0] = 0; break; }
        if (buf != small) free(buf);
        buf = bigger;
        need += slen;
      }
      c_spec(cv, "", 's', spec, sizeof spec);
      snprintf(buf, need, spec, s ? s : "");
      break;
    }
    default: /* the checker allows no other conversion of an integer */
      snprintf(buf, need, "%" PRId64, (int64_t)v);
      break;
    }
  }
  fputs(buf, out);
  if (buf != small) free(buf);
}

/* One NUL-free stretch of a format, its conversions taking the record's
 * arguments from *arg on. */
static void print_format_part(const PrintfDef *p, const char *fmt, int *arg,
                              const void *payload, FILE *out) {
  int pos = 0, done = 0;
  Conv cv;
  for (; *arg < p->nargs && next_conv(fmt, &pos, &cv); (*arg)++) {
    put_literal(fmt + done, cv.start - done, out);
    if (cv.letter == 'r' || cv.letter == 'R' || cv.letter == 'H')
      put_buf_conv(&cv, &p->args[*arg], payload, fmt, out);
    else
      put_conv(&cv, &p->args[*arg], payload, out);
    done = cv.end;
  }
  fputs(fmt + done, out);
}

/* A format with NUL bytes in it ("a\0b") prints them, as bpftrace does:
 * it is formatted a stretch at a time, with a NUL between stretches. */
void print_printf(const PrintfDef *p, const void *payload, FILE *out) {
  size_t len = p->fmt_len ? (size_t)p->fmt_len : strlen(p->fmt);
  int arg = 0;
  for (size_t at = 0;;) {
    print_format_part(p, p->fmt + at, &arg, payload, out);
    at += strlen(p->fmt + at);
    if (at >= len) break;
    fputc('\0', out);
    at++;
  }
}

/* ---- maps ------------------------------------------------------------- */

int print_map_as(const MapSym *m, const MapState *st, int64_t top,
                 int64_t div, OutFormat fmt, FILE *out) {
  Output o = output_for(fmt, out);
  return output_map(&o, m, st, top, div);
}

int print_map(const MapSym *m, const MapState *st, FILE *out) {
  return print_map_as(m, st, 0, 1, OUT_TEXT, out);
}

/* Every map of the script, by name; exit's two empty lines first if
 * at_exit (bpftrace writes them in JSON mode too; not on SIGUSR1). */
static void print_maps_by_name(const Compiled *c, const Loaded *l,
                               OutFormat fmt, FILE *out, bool at_exit) {
  int n;
  const MapSym **order = loaded_maps_by_name(c, l, &n);
  if (!order) return;
  Output o = output_for(fmt, out);
  o.enc->maps_begin(&o, order, n, at_exit);
  for (int i = 0; i < n; i++)
    output_map(&o, order[i], &l->maps[order[i]->id], 0, 1);
  free(order);
}

void print_all_maps_as(const Compiled *c, const Loaded *l, OutFormat fmt,
                       FILE *out) {
  print_maps_by_name(c, l, fmt, out, true);
}

void print_all_maps_now(const Compiled *c, const Loaded *l, OutFormat fmt,
                        FILE *out) {
  print_maps_by_name(c, l, fmt, out, false);
}

void print_all_maps(const Compiled *c, const Loaded *l, FILE *out) {
  print_all_maps_as(c, l, OUT_TEXT, out);
}
