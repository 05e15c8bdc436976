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
#include <stdarg.h>
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

/* ---- a growing text ------------------------------------------------- */

/* Room for `more` bytes and a NUL after len; false when out of memory. */
static bool tb_room(TextBuf *b, size_t more) {
  if (b->len + more < b->cap) return true;
  size_t cap = b->cap ? b->cap : 256;
  while (cap <= b->len + more) cap *= 2;
  char *s = realloc(b->s, cap);
  if (!s) return false;
  b->s = s;
  b->cap = cap;
  return true;
}

static void tb_put(TextBuf *b, const void *data, size_t n) {
  if (!n || !tb_room(b, n)) return;
  memcpy(b->s + b->len, data, n);
  b->len += n;
  b->s[b->len] = '\0';
}

/* Appends what snprintf makes of spec, up to its first NUL byte (a "%c"
 * of 0): bpftrace handles each piece as a C string. */
__attribute__((format(printf, 2, 3)))
static void tb_printf(TextBuf *b, const char *spec, ...) {
  va_list ap;
  va_start(ap, spec);
  int n = tb_room(b, 64) ? vsnprintf(b->s + b->len, b->cap - b->len, spec, ap)
                         : -1;
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n >= b->cap - b->len) {
    if (!tb_room(b, (size_t)n)) return;
    va_start(ap, spec);
    vsnprintf(b->s + b->len, b->cap - b->len, spec, ap);
    va_end(ap);
  }
  b->len += strnlen(b->s + b->len, (size_t)n);
  b->s[b->len] = '\0';
}

void text_free(TextBuf *b) {
  free(b->s);
  *b = (TextBuf){0};
}

/* ---- printf records ------------------------------------------------- */

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

static void put_buf_bytes(const uint8_t *data, size_t len, BufStyle style,
                          TextBuf *out) {
  for (size_t i = 0; i < len; i++) {
    if (style == BUF_SPACED)
      tb_printf(out, "%s%02x", i ? " " : "", data[i]);
    else if (style == BUF_ASCII && data[i] >= 0x20 && data[i] < 0x7f)
      tb_put(out, &data[i], 1);
    else
      tb_printf(out, "\\x%02x", data[i]);
  }
}

/* The bytes of a TY_BUF value: its 8-byte length, then up to type.size
 * bytes of data. */
void print_buf_escaped(const uint8_t *data, size_t len, FILE *out) {
  TextBuf b = {0};
  put_buf_bytes(data, len, BUF_ASCII, &b);
  if (b.len) fwrite(b.s, 1, b.len, out);
  text_free(&b);
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


/* What a piece of a format does with its argument. */
typedef enum PieceKind {
  P_NONE,      /* the text after the last conversion */
  P_SIGNED,    /* an integer, narrowed and sign-extended: spec of a long long */
  P_UNSIGNED,  /* narrowed: spec of an unsigned long long */
  P_CHAR,      /* %c: its low byte */
  P_POINTER,   /* %p */
  P_INT_TEXT,  /* %s of an integer that prints as text (print_int_text) */
  P_GFP,       /* %gr */
  P_NUMBER,    /* any other conversion of an integer: the number */
  P_STR,       /* a string, with its trailer; `spec` NULL: written as is */
  P_BUF_NAME,  /* %s of a buffer with a name (ntop, macaddr) */
  P_BUF,       /* %r, %rx, %rh of a buf(): its bytes */
  P_AS_WRITTEN,  /* a %r that takes its argument but prints as written */
} PieceKind;

/* One piece of a format: the literal text before a conversion, as it
 * prints ("%%" made "%"; between the NUL-free stretches of a format with
 * NULs, the NUL), then the conversion of argument `arg`. */
typedef struct FmtPiece {
  size_t text, text_len;   /* in PrintfPlan.text */
  PieceKind kind;
  int arg;
  int bits;                /* P_SIGNED, P_UNSIGNED: bits kept */
  BufStyle style;          /* P_BUF */
  char *spec;              /* the C conversion, for snprintf */
} FmtPiece;

struct PrintfPlan {
  char *text;              /* the literal text of all the pieces */
  size_t text_len;
  FmtPiece *pieces;
  int n;
};

/* Sets piece pc to conversion cv (in fmt) of argument arg. */
static bool plan_conv(FmtPiece *pc, const Conv *cv, const FmtArg *arg,
                      const char *fmt) {
  char spec[48];
  const char *length = "";
  char letter = 's';
  if (cv->letter == 'r' || cv->letter == 'R' || cv->letter == 'H') {
    if (!cv->plain || arg->type.kind != TY_BUF) {
      pc->kind = P_AS_WRITTEN;
      snprintf(spec, sizeof spec, "%.*s", cv->end - cv->start, fmt + cv->start);
      pc->spec = strdup(spec);
      return pc->spec != NULL;
    }
    pc->kind = P_BUF;
    pc->style = cv->letter == 'R' ? BUF_HEX
                : cv->letter == 'H' ? BUF_SPACED : BUF_ASCII;
    return true;
  }
  if (arg->type.kind == TY_BUF) {
    pc->kind = P_BUF_NAME;
  } else if (arg->type.kind == TY_STR) {
    pc->kind = P_STR;
    if (cv->plain && cv->letter == 's') return true;  /* as is */
    if (cv->letter != 's') {
      pc->spec = strdup("%s");
      return pc->spec != NULL;
    }
  } else {
    switch (cv->letter) {
    case 'd':
    case 'i':
      pc->kind = P_SIGNED, length = "ll", letter = 'd';
      break;
    case 'u':
    case 'x':
    case 'X':
    case 'o':
      pc->kind = P_UNSIGNED, length = "ll", letter = cv->letter;
      break;
    case 'c':
      pc->kind = P_CHAR, letter = 'c';
      break;
    case 'p':
      pc->kind = P_POINTER, letter = 'p';
      break;
    case 'G':
      pc->kind = P_GFP;
      break;
    case 's':
      pc->kind = P_INT_TEXT;
      break;
    default: /* the checker allows no other conversion of an integer */
      pc->kind = P_NUMBER;
      pc->spec = strdup("%" PRId64);
      return pc->spec != NULL;
    }
  }
  pc->bits = cv->bits;
  c_spec(cv, length, letter, spec, sizeof spec);
  pc->spec = strdup(spec);
  return pc->spec != NULL;
}

/* Literal text of the format from s, len bytes, appended to the plan's:
 * with "%%" made "%" when `collapse` (text before a conversion goes
 * through C's printf in bpftrace; after the last one it is written as
 * is). */
static bool plan_text(PrintfPlan *pl, const char *s, size_t len,
                      bool collapse) {
  char *t = realloc(pl->text, pl->text_len + len + 1);
  if (!t) return false;
  pl->text = t;
  for (size_t i = 0; i < len; i++) {
    t[pl->text_len++] = s[i];
    if (collapse && s[i] == '%' && i + 1 < len && s[i + 1] == '%') i++;
  }
  t[pl->text_len] = '\0';
  return true;
}

static FmtPiece *plan_piece(PrintfPlan *pl) {
  FmtPiece *p = realloc(pl->pieces, sizeof *p * (size_t)(pl->n + 1));
  if (!p) return NULL;
  pl->pieces = p;
  p += pl->n++;
  *p = (FmtPiece){.text = pl->text_len};
  return p;
}

/* One NUL-free stretch of a format, its conversions taking the record's
 * arguments from *arg on; the text after its last conversion goes into
 * the piece that follows (*tail). */
static bool plan_stretch(PrintfPlan *pl, const PrintfDef *p, const char *fmt,
                         int *arg, FmtPiece **tail) {
  int pos = 0, done = 0;
  Conv cv;
  for (; *arg < p->nargs && next_conv(fmt, &pos, &cv); (*arg)++) {
    if (!plan_text(pl, fmt + done, (size_t)(cv.start - done), true))
      return false;
    (*tail)->text_len = pl->text_len - (*tail)->text;
    if (!plan_conv(*tail, &cv, &p->args[*arg], fmt)) return false;
    (*tail)->arg = *arg;
    if (!(*tail = plan_piece(pl))) return false;
    done = cv.end;
  }
  if (!plan_text(pl, fmt + done, strlen(fmt + done), false)) return false;
  (*tail)->text_len = pl->text_len - (*tail)->text;
  return true;
}

PrintfPlan *printf_plan_new(const PrintfDef *p) {
  PrintfPlan *pl = calloc(1, sizeof *pl);
  FmtPiece *tail = pl ? plan_piece(pl) : NULL;
  if (!tail) {
    printf_plan_free(pl);
    return NULL;
  }
  size_t len = p->fmt_len ? (size_t)p->fmt_len : strlen(p->fmt);
  int arg = 0;
  for (size_t at = 0;;) {
    if (!plan_stretch(pl, p, p->fmt + at, &arg, &tail)) {
      printf_plan_free(pl);
      return NULL;
    }
    at += strlen(p->fmt + at);
    if (at >= len) break;
    /* a NUL between stretches, as bpftrace prints it */
    if (!plan_text(pl, "", 1, false)) {
      printf_plan_free(pl);
      return NULL;
    }
    tail->text_len = pl->text_len - tail->text;
    at++;
  }
  return pl;
}

void printf_plan_free(PrintfPlan *pl) {
  if (!pl) return;
  for (int i = 0; i < pl->n; i++) free(pl->pieces[i].spec);
  free(pl->pieces);
  free(pl->text);
  free(pl);
}

/* A string argument: its bytes up to the NUL, then the trailer of a cut
 * one; through the piece's spec when it has flags, a width or a
 * precision. */
static void put_str(const FmtPiece *pc, const FmtArg *arg, const char *text,
                    TextBuf *out) {
  int size = arg->type.size;
  size_t len = strnlen(text, size);
  const char *trailer = print_str_trailer(&arg->type, size, len);
  if (!pc->spec) {
    tb_put(out, text, len);
    tb_put(out, trailer, strlen(trailer));
    return;
  }
  char *s = malloc(len + strlen(trailer) + 1);
  if (!s) return;
  memcpy(s, text, len);
  strcpy(s + len, trailer);
  tb_printf(out, pc->spec, s);
  free(s);
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void put_piece(const FmtPiece *pc, const FmtArg *arg,
                      const uint8_t *payload, TextBuf *out) {
  const uint8_t *at = payload + arg->offset;
  uint64_t v = 0;
  if (arg->type.kind != TY_STR && arg->type.kind != TY_BUF)
    memcpy(&v, at, 8);
  char text[512];
  switch (pc->kind) {
  case P_NONE:
    break;
  case P_SIGNED:
    tb_printf(out, pc->spec, (long long)narrow(v, pc->bits, true));
    break;
  case P_UNSIGNED:
    tb_printf(out, pc->spec, (unsigned long long)narrow(v, pc->bits, false));
    break;
  case P_CHAR:
    tb_printf(out, pc->spec, (int)(unsigned char)v);
    break;
  case P_POINTER:
    tb_printf(out, pc->spec, (void *)(uintptr_t)v);
    break;
  case P_INT_TEXT: {   /* a time, a name, a stack */
    const char *s = print_int_text(&arg->type, v, text, sizeof text);
    tb_printf(out, pc->spec, s ? s : "");
    break;
  }
  case P_GFP:
    gfp_flags_text(v, text, sizeof text);
    tb_printf(out, pc->spec, text);
    break;
  case P_NUMBER:
    tb_printf(out, pc->spec, (int64_t)v);
    break;
  case P_STR:
    put_str(pc, arg, (const char *)at, out);
    break;
  case P_BUF_NAME:
    tb_printf(out, pc->spec, named_buf_text(&arg->type, at, text,
                                            sizeof text));
    break;
  case P_BUF: {
    uint64_t len;
    memcpy(&len, at, 8);
    if (len > (uint64_t)arg->type.size) len = arg->type.size;
    put_buf_bytes(at + 8, len, pc->style, out);
    break;
  }
  case P_AS_WRITTEN:
    tb_put(out, pc->spec, strlen(pc->spec));
    break;
  }
}
#pragma GCC diagnostic pop

void printf_format(const PrintfPlan *pl, const PrintfDef *p,
                   const void *payload, TextBuf *out) {
  for (int i = 0; i < pl->n; i++) {
    const FmtPiece *pc = &pl->pieces[i];
    tb_put(out, pl->text + pc->text, pc->text_len);
    if (pc->kind != P_NONE) put_piece(pc, &p->args[pc->arg], payload, out);
  }
}

void printf_plans_make(const Compiled *c, Loaded *l) {
  l->printf_plans = calloc((size_t)c->nprintfs, sizeof *l->printf_plans);
  l->printf_text = calloc(1, sizeof *l->printf_text);
  for (int i = 0; l->printf_plans && i < c->nprintfs; i++)
    if (c->printfs[i].fmt)
      l->printf_plans[i] = printf_plan_new(&c->printfs[i]);
}

void printf_plans_free(const Compiled *c, Loaded *l) {
  for (int i = 0; l->printf_plans && i < c->nprintfs; i++)
    printf_plan_free(l->printf_plans[i]);
  free(l->printf_plans);
  l->printf_plans = NULL;
  if (l->printf_text) text_free(l->printf_text);
  free(l->printf_text);
  l->printf_text = NULL;
}

const TextBuf *printf_text(const Compiled *c, Loaded *l, uint32_t index,
                           const void *payload) {
  const PrintfDef *p = &c->printfs[index];
  if (!l->printf_plans) printf_plans_make(c, l);   /* not from run_begin */
  if (!l->printf_plans || !l->printf_plans[index] || !l->printf_text)
    return NULL;
  TextBuf *b = l->printf_text;
  b->len = 0;
  if (!tb_room(b, 0)) return NULL;
  b->s[0] = '\0';
  printf_format(l->printf_plans[index], p, payload, b);
  return b;
}

/* A format with NUL bytes in it ("a\0b") prints them, as bpftrace does:
 * it is formatted a stretch at a time, with a NUL between stretches. */
void print_printf(const PrintfDef *p, const void *payload, FILE *out) {
  PrintfPlan *pl = printf_plan_new(p);
  if (!pl) return;
  TextBuf b = {0};
  printf_format(pl, p, payload, &b);
  if (b.len) fwrite(b.s, 1, b.len, out);
  text_free(&b);
  printf_plan_free(pl);
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
