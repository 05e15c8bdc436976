/* output: the builtins that write to loupe's output — printf(), and
 * system(), cat(), time() and join(), which are formatted the same way in
 * user space — and exit(). Each sends a record through the ring buffer;
 * user space makes its message and hands it to the output's encoder
 * (output/encoder.h), which writes it as text or as a JSON record. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "builtins/builtin.h"
#include "output/encoder.h"
#include "runtime/print.h"

/* By default cat() prints at most this much of a file, as bpftrace
 * does; config max_cat_bytes (BPFTRACE_MAX_CAT_BYTES) sets another. */
#define CAT_BYTES_MAX 10240

/* ---- checks ---------------------------------------------------------- */

/* printf(fmt, ...), and system() and cat(), which format the same way. */
static void check_printf(Checker *c, Node *n) {
  Node *fmt = n->args;
  if (!fmt) {
    error_at(c, n->span, "%s() requires at least one argument (0 provided)",
             n->name);
    return;
  }
  if (fmt->kind != N_STR) {
    error_at(c, fmt->span, "%s() expects a string literal as format",
             n->name);
    return;
  }
  for (Node *a = fmt->next; a; a = a->next) check_expr(c, a);
  char conv[MAX_PRINTF_ARGS + 1];
  char err[200];
  int nconv = printf_parse_bytes(fmt->sval, (size_t)fmt->slen, conv,
                                 MAX_PRINTF_ARGS, err, sizeof(err));
  if (nconv < 0) {
    error_at(c, fmt->span, "%s", err);
    return;
  }
  int nargs = count_args(n) - 1;
  if (nargs != nconv) {
    error_at(c, n->span,
             "%s: Expected %d argument%s for the format, got %d", n->name,
             nconv, nconv == 1 ? "" : "s", nargs);
    return;
  }
  if (c->pass != 2) return;
  PrintfDef def = {.fmt = fmt->sval, .nargs = nargs, .span = n->span};
  if (memchr(fmt->sval, 0, (size_t)fmt->slen)) def.fmt_len = fmt->slen;
  int off = 0, i = 0;
  for (Node *a = fmt->next; a; a = a->next, i++) {
    TypeKind want = conv[i] == 's' ? TY_STR
                    : (conv[i] == 'r' || conv[i] == 'R' || conv[i] == 'H') ? TY_BUF : TY_INT;
    if (a->type.kind == TY_NONE) return;
    /* %s of an enum value prints its enumerator's name */
    bool ok = a->type.kind == want ||
              (want == TY_BUF && a->type.kind == TY_STR) ||
              (want == TY_STR && a->type.kind == TY_INT &&
               (a->type.enum_def || a->type.time_fmt || a->type.named)) ||
              (want == TY_STR && a->type.kind == TY_BUF && a->type.named);
    if (!ok) {
      const char *what = want == TY_STR ? "a string"
                         : want == TY_BUF ? "a buffer" : "an integer";
      error_at(c, a->span, "%s: %%%s specifier expects %s, got %s", n->name,
               conv[i] == 'R' || conv[i] == 'H' ? "r"
               : conv[i] == 'G'                 ? "gr"
                                                : (char[]){conv[i], 0},
               what, TYPE_NAME(a->type));
      return;
    }
    def.args[i].type = a->type.kind == TY_INT ? ty_widened(a->type)
                                              : a->type;
    def.args[i].offset = off;
    off += value_cap(a->type);
  }
  def.size = off;
  n->printf_id = add_printf_def(c, def);
}

/* system() runs a command: only with --unsafe. */
static void check_system(Checker *c, Node *n) {
  if (!want_unsafe(c, n)) return;
  check_printf(c, n);
}

static void check_time(Checker *c, Node *n) {
  Node *a = n->args;
  if (a && a->kind != N_STR) {
    error_at(c, a->span, "time() expects a string literal as format");
    return;
  }
  PrintfDef def = {.fmt = a ? a->sval : "%H:%M:%S\n", .span = n->span};
  n->printf_id = add_printf_def(c, def);
}

static void check_join(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  if (a->type.kind != TY_INT && a->type.kind != TY_NONE) {
    error_at(c, a->span, "join() expects an array of strings (char **), "
             "got %s", TYPE_NAME(a->type));
    return;
  }
  if (a->next && a->next->kind != N_STR) {
    error_at(c, a->next->span, "join() expects a string literal as "
             "delimiter");
    return;
  }
  PrintfDef def = {.fmt = a->next ? a->next->sval : " ", .span = n->span};
  n->printf_id = add_printf_def(c, def);
}

/* errorf() and warnf(): printf on stderr, after the call's location.
 * With --no-warnings a warnf() is checked but sends nothing (ival 1). */
static void check_errorf(Checker *c, Node *n) {
  check_printf(c, n);
  n->ival = n->name[0] == 'w' && c->d->no_warnings;
  if (c->pass == 2 && n->printf_id >= 0 && c->d->errors == 0) {
    const char *kind = n->name[0] == 'e' ? "ERROR" : "WARNING";
    PrintfDef *p = &c->out->printfs[n->printf_id];
    p->prefix = diag_prefix(c->d, n->span, kind);
    p->expansions = diag_expansions(c->d, n->span, kind);
  }
}

/* One conversion of fail()'s format as C's printf reads it: flags,
 * width, precision, length, letter. */
typedef struct FailConv {
  const char *start, *end;   /* the text, '%' to the letter */
  char flags[6];             /* each of "-+ #0" written, once */
  int width, prec;           /* -1: none */
  bool length;               /* hh h l ll j z t */
  char letter;               /* NUL when the format ends first */
} FailConv;

static void parse_fail_conv(const char *p, FailConv *cv) {
  memset(cv, 0, sizeof *cv);
  cv->start = p++;
  cv->width = cv->prec = -1;
  for (; *p && strchr("-+ #0", *p); p++)
    if (!strchr(cv->flags, *p)) cv->flags[strlen(cv->flags)] = *p;
  int i = 0;
  if (*p >= '1' && *p <= '9') cv->width = printf_field_number(p, &i);
  p += i;
  if (*p == '.') {
    i = 0;
    cv->prec = printf_field_number(++p, &i);
    p += i;
  }
  for (; *p && strchr("lhjzt", *p); p++) cv->length = true;
  cv->letter = *p;
  cv->end = *p ? p + 1 : p;
}

/* Formats the literal `arg` as the conversion says; false after
 * reporting why it cannot. */
static bool put_fail_arg(Checker *c, Node *n, const FailConv *cv, Node *arg,
                         FILE *f) {
  int speclen = (int)(cv->end - cv->start);
  /* only what takes a string or an integer: the text is formatted by
   * fprintf, where %n, %S or %f would read or write through nonsense */
  if (!strchr("sdiouxXc", cv->letter) || (cv->letter == 's' && cv->length)) {
    error_at(c, n->span, "fail(): %.*s is not a conversion fail() takes "
             "(%%s, %%d, %%i, %%u, %%o, %%x, %%X, %%c)", speclen, cv->start);
    return false;
  }
  if (cv->width > PRINTF_MAX_FIELD_WIDTH ||
      cv->prec > PRINTF_MAX_FIELD_WIDTH) {
    error_at(c, n->span, "fail(): field width or precision of '%.*s' is too "
             "large (at most %d)", speclen, cv->start, PRINTF_MAX_FIELD_WIDTH);
    return false;
  }
  /* the spec again from what was parsed, so its length is bounded; an
   * integer as C's long long, the conversion's letter kept */
  char spec[40];
  int at = snprintf(spec, sizeof spec, "%%%s", cv->flags);
  if (cv->width >= 0) at += snprintf(spec + at, sizeof spec - (size_t)at,
                                     "%d", cv->width);
  if (cv->prec >= 0) at += snprintf(spec + at, sizeof spec - (size_t)at,
                                    ".%d", cv->prec);
  snprintf(spec + at, sizeof spec - (size_t)at, "%s%c",
           strchr("sc", cv->letter) ? "" : "ll", cv->letter);
  int64_t v;
  if (cv->letter == 's' && arg->kind == N_STR) {
    fprintf(f, spec, arg->sval);
  } else if (cv->letter == 'c' && const_int(arg, &v)) {
    fprintf(f, spec, (int)(unsigned char)v);
  } else if (cv->letter != 's' && const_int(arg, &v)) {
    fprintf(f, spec, (long long)v);
  } else {
    error_at(c, arg->span, "fail(): its arguments must be literals that "
             "%.*s takes (they are formatted when the script is compiled)",
             speclen, cv->start);
    return false;
  }
  return true;
}

/* fail(fmt, literals...): a compile-time assertion, bpftrace's static
 * assert: the script does not compile if the code holding the call is
 * generated (a branch that constant folding does not remove). The
 * message is formatted now, printf-style, from the literals. */
static void check_fail(Checker *c, Node *n) {
  Node *fmt = n->args;
  if (!fmt || fmt->kind != N_STR) {
    error_at(c, n->span, "fail() expects a string literal as format");
    return;
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) abort();
  Node *arg = fmt->next;
  bool ok = true;
  for (const char *p = fmt->sval; *p && ok; p++) {
    if (*p != '%') {
      fputc(*p, f);
      continue;
    }
    if (p[1] == '%') {
      fputc('%', f);
      p++;
      continue;
    }
    FailConv cv;
    parse_fail_conv(p, &cv);
    if (!cv.letter) break;
    if (!arg) {
      error_at(c, n->span, "fail(): the format has more conversions than "
               "arguments");
      ok = false;
      break;
    }
    check_expr(c, arg);
    ok = put_fail_arg(c, n, &cv, arg, f);
    arg = arg->next;
    p = cv.end - 1;
  }
  fclose(f);
  if (!ok) {
    free(text);
    return;
  }
  n->sval = text;
  n->type = ty_void();
}

static bool emit_fail(Gen *g, Node *n) {
  fail(g, n->span, "%s", n->sval ? n->sval : "fail()");
  return true;
}

/* strftime(fmt, ns): ns, a time since boot, printed as fmt says wherever
 * it goes (printf %s, print, maps, tuples); formatted in user space. */
static void check_strftime(Checker *c, Node *n) {
  Node *fmt = n->args, *ns = fmt->next;
  if (fmt->kind != N_STR) {
    error_at(c, fmt->span, "strftime() expects a string literal as format");
    return;
  }
  check_expr(c, ns);
  if (!want_int(c, n, ns)) return;
  int64_t v;
  if (const_int(ns, &v) && v < 0) {
    error_at(c, ns->span, "strftime(): the timestamp must not be negative");
    return;
  }
  n->type = ty_int(8, false);
  n->type.time_fmt = fmt->sval;
}

/* ---- code ------------------------------------------------------------ */

static int emit_strftime(Gen *g, Node *n) { return gen_int(g, n->args->next); }

/* Whether a record of the arguments from `first` on can be reserved in
 * the ring buffer and filled in place, as a hand-written program does
 * (no copy of it), and how many of its first arguments are then
 * evaluated before the reservation (*before): those up to the last
 * with effects (expr_has_effects), which must happen, in order, even
 * when the ring is full and the filling is skipped. They must be
 * integers (kept on the stack meanwhile), and the strings after them
 * ones gen_buf_at writes in place. Otherwise the record is built on the
 * stack and copied (emit_output), as it is in iterators and with -k,
 * whose reports of a failed read would be sent during the filling and
 * so come after the record instead of before it. */
static bool record_in_place(Gen *g, Node *first, int *before) {
  if (!record_can_be_in_place(g) || g->st->helper_errors) return false;
  int i = 0, last = -1;
  for (Node *a = first; a; a = a->next, i++)
    if (expr_has_effects(a)) last = i;
  i = 0;
  for (Node *a = first; a; a = a->next, i++)
    if (is_buffer(a->type) && (i <= last || !gen_buf_at_ok(g, a)))
      return false;
  *before = last + 1;
  return true;
}

void emit_record(Gen *g, Node *n, Node *first, uint32_t kind) {
  PrintfDef *def = &g->c->printfs[n->printf_id];
  if (def->nargs == 0) {
    emit_event(g, kind, (uint32_t)n->printf_id);
    return;
  }
  int before = 0, slot[MAX_PRINTF_ARGS], reg[MAX_PRINTF_ARGS];
  bool in_place = record_in_place(g, first, &before);
  Node *a = first;
  for (int i = 0; i < before; a = a->next, i++) {
    slot[i] = stack_alloc(g, 8);
    gen_store_int(g, a, BPF_REG_10, slot[i]);
  }
  /* Fields of the context are read before the reservation too, into
   * registers that the helper calls keep, while the registers last: in
   * a program's first statement r1 still holds the context then, and
   * the prologue need not save it (the floor's printf reads
   * args->flags so). One register stays for what comes after, and one
   * for the record where r9 cannot hold it. */
  int room = free_regs(g) - 1 - (g->buf_base == BPF_REG_10 ? 0 : 1);
  for (int i = 0; i < MAX_PRINTF_ARGS; i++) reg[i] = -1;
  a = first;
  for (int i = 0; a; a = a->next, i++)
    if (in_place && i >= before && room > 0 && gen_is_ctx_field(g, a)) {
      reg[i] = gen_int(g, a);
      room--;
    }
  OutRec r = record_begin(g, (int)sizeof(EventHeader) + def->size,
                          in_place, true);
  emit_header_at(g, r.base, r.off, kind, (uint32_t)n->printf_id);
  int base = r.off + (int)sizeof(EventHeader);
  int i = 0;
  for (a = first; a; a = a->next, i++) {
    int at = base + def->args[i].offset;
    if (i < before) {
      emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, slot[i]));
      emit(g, I_STX(BPF_DW, r.base, BPF_REG_1, at));
    } else if (reg[i] >= 0) {
      emit(g, I_STX(BPF_DW, r.base, reg[i], at));
      reg_free(g, reg[i]);
    } else if (in_place && is_buffer(a->type)) {
      gen_buf_at(g, a, r.base, at, value_cap(a->type));
    } else if (is_buffer(a->type)) {
      if (a->type.kind == TY_STR) g->unpadded = a;
      gen_buf(g, a, at, value_cap(a->type));
      g->unpadded = NULL;
    } else {
      gen_store_int(g, a, r.base, at);
    }
  }
  record_end(g, &r);
}

/* join(argv): up to JOIN_MAX_ARGS strings read through a user array of
 * pointers; a NULL pointer ends the list (its slot is left empty). */
static void gen_join(Gen *g, Node *n) {
  int payload = JOIN_MAX_ARGS * JOIN_ARG_SIZE;
  Held argv = hold(g, gen_int(g, n->args));
  int slot = stack_alloc(g, 8);
  /* in place but with -k (see record_in_place) */
  OutRec r = record_begin(g, (int)sizeof(EventHeader) + payload,
                          !g->st->helper_errors, true);
  emit_header_at(g, r.base, r.off, EV_JOIN, (uint32_t)n->printf_id);
  int base = r.off + (int)sizeof(EventHeader);
  int ends[JOIN_MAX_ARGS];
  for (int i = 0; i < JOIN_MAX_ARGS; i++) {
    /* slot = argv[i] */
    emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
    emit(g, I_MOV64_IMM(BPF_REG_2, 8));
    int a = held_reg(g, argv, BPF_REG_3);
    if (a != BPF_REG_3) emit(g, I_MOV64_REG(BPF_REG_3, a));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, i * 8));
    emit_call(g, BPF_FUNC_probe_read_user);
    emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, slot));
    emit(g, I_ST(BPF_B, r.base, base + i * JOIN_ARG_SIZE, 0));
    ends[i] = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0));
    emit_addr(g, BPF_REG_1, r.base, base + i * JOIN_ARG_SIZE);
    emit(g, I_MOV64_IMM(BPF_REG_2, JOIN_ARG_SIZE));
    emit_call(g, BPF_FUNC_probe_read_user_str);
  }
  for (int i = 0; i < JOIN_MAX_ARGS; i++) patch_here(g, ends[i]);
  held_free(g, argv);
  record_end(g, &r);
}

static bool emit_printf(Gen *g, Node *n) {
  emit_record(g, n, n->args->next, EV_PRINTF);
  return false;
}

static bool emit_system(Gen *g, Node *n) {
  emit_record(g, n, n->args->next, EV_SYSTEM);
  return false;
}

static bool emit_cat(Gen *g, Node *n) {
  emit_record(g, n, n->args->next, EV_CAT);
  return false;
}

static bool emit_time(Gen *g, Node *n) {
  emit_event(g, EV_TIME, (uint32_t)n->printf_id);
  return false;
}

static bool emit_join(Gen *g, Node *n) {
  gen_join(g, n);
  return false;
}

static bool emit_errorf(Gen *g, Node *n) {
  if (n->ival) return false;
  emit_record(g, n, n->args->next, n->name[0] == 'e' ? EV_ERRORF : EV_WARNF);
  return false;
}

/* exit([code]): the code, 0 to 255, is a constant. */
static void check_exit(Checker *c, Node *n) {
  int64_t code = 0;
  if (n->args && !want_const(c, n->args, n->name, "the exit code", 0, 255,
                             &code))
    return;
  n->ival = code;
}

/* Raises the flag that stops every probe but END, tells user space (the
 * record's index is the code), then leaves the program at once. */
static bool emit_exit(Gen *g, Node *n) {
  if (emit_lookup_slot0(g, find_map(g, EXITED_MAP_NAME)))
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
  emit(g, I_ST(BPF_DW, BPF_REG_0, 0, 1));
  emit_event(g, EV_EXIT, (uint32_t)n->ival);
  emit_return(g);
  return true;
}

/* ---- user space ------------------------------------------------------ */

/* The text of a printf-like record (printf id `index`), formatted with
 * its format's plan, parsed when the run began: NUL-terminated, and
 * valid until the next record's. NULL when out of memory. */
static const char *format_record(const EventCtx *e, uint32_t index,
                                 const uint8_t *payload, size_t *len) {
  const TextBuf *b = printf_text(e->c, e->l, index, payload);
  *len = b ? b->len : 0;
  return b ? b->s : NULL;
}

/* The record's text, as the message of event `type`. */
static void handle_printf(const EventCtx *e, uint32_t index,
                          const uint8_t *payload) {
  size_t len;
  const char *text = format_record(e, index, payload, &len);
  if (text) output_message(e->output, "printf", text, len, false);
}

/* time(fmt): the local time, through strftime. */
static void handle_time(const PrintfDef *p, Output *o) {
  const char *fmt = p->fmt ? p->fmt : "%H:%M:%S\n";
  char buf[512];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  size_t n = strftime(buf, sizeof buf, fmt, &tm);
  if (n == 0) {
    /* bpftrace's words, for an empty result too */
    fputs("ERROR: strftime returned 0\n", stderr);
    return;
  }
  output_message(o, "time", buf, n, false);
}

/* Reads everything from fd, up to max bytes (0: no limit), into a malloc'd
 * buffer. Retries reads a signal interrupted. */
static char *read_fd(int fd, size_t max, size_t *len) {
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf && (max == 0 || n < max)) {
    if (n == cap) {
      char *nb = realloc(buf, cap *= 2);
      if (!nb) break;
      buf = nb;
    }
    size_t want = cap - n;
    if (max && want > max - n) want = max - n;
    ssize_t r = read(fd, buf + n, want);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    n += r;
  }
  *len = n;
  return buf;
}

/* system(fmt, ...): runs the command with /bin/sh; what it writes on its
 * stdout becomes loupe's output, in order with the rest (bpftrace does the
 * same; its JSON record type is "syscall"). */
static void handle_system(const EventCtx *e, uint32_t index,
                          const uint8_t *payload) {
  Output *o = e->output;
  size_t len;
  const char *cmd = format_record(e, index, payload, &len);
  if (!cmd) return;
  fflush(o->out);
  fflush(stderr);
  FILE *f = popen(cmd, "r");
  if (!f) {
    fprintf(stderr, "loupe: system(\"%s\") failed: %s\n", cmd,
            strerror(errno));
    return;
  }
  char *text = read_fd(fileno(f), 0, &len);
  pclose(f);
  if (text) output_message(o, "syscall", text, len, false);
  free(text);
}

/* cat(fmt, ...): the file's contents, as they are (no newline added). */
static void handle_cat(const EventCtx *e, uint32_t index,
                       const uint8_t *payload) {
  Output *o = e->output;
  int max_bytes = e->c->max_cat_bytes;
  size_t len;
  const char *path = format_record(e, index, payload, &len);
  if (!path) return;
  char *text = NULL;
  len = 0;
  /* non-blocking: a FIFO (a path a traced process may have named) must
   * not stall the event loop; its open and reads return at once */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    /* current bpftrace's words (0.17 put ": " before the reason) */
    fprintf(stderr, "ERROR: failed to open file '%s' (%s)\n", path,
            strerror(errno));
  } else {
    text = read_fd(fd, max_bytes > 0 ? max_bytes : CAT_BYTES_MAX, &len);
    close(fd);
  }
  /* A file that cannot be read gives an empty message (in JSON, a
   * record). */
  output_message(o, "cat", text ? text : "", text ? len : 0, false);
  free(text);
}

/* join(argv[, delim]): the argument slots up to the first empty one,
 * joined by the delimiter, as a line. */
static void handle_join(const PrintfDef *p, const uint8_t *payload,
                        size_t payload_size, Output *o) {
  const char *delim = p->fmt ? p->fmt : " ";
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) return;
  for (int i = 0; i < JOIN_MAX_ARGS; i++) {
    size_t off = (size_t)i * JOIN_ARG_SIZE;
    if (off + JOIN_ARG_SIZE > payload_size) break;
    const char *arg = (const char *)payload + off;
    if (!arg[0]) break;
    if (i) fputs(delim, f);
    fwrite(arg, 1, strnlen(arg, JOIN_ARG_SIZE), f);
  }
  fclose(f);
  if (text) output_message(o, "join", text, len, true);
  free(text);
}

/* The printf definition of a record, or NULL when its index is out of
 * range or the payload is short. */
static const PrintfDef *record_printf(const Compiled *c, uint32_t index,
                                      size_t payload_size) {
  if (index >= (uint32_t)c->nprintfs) return NULL;
  if (payload_size < (size_t)c->printfs[index].size) return NULL;
  return &c->printfs[index];
}

/* record_printf's definition if it has a format to fill in (print()'s
 * have none): what a record of printf, system, cat or errorf must name. */
static const PrintfDef *record_format(const Compiled *c, uint32_t index,
                                      size_t payload_size) {
  const PrintfDef *p = record_printf(c, index, payload_size);
  return p && p->fmt ? p : NULL;
}

static void on_printf(const EventCtx *e, uint32_t index,
                      const uint8_t *payload, size_t size) {
  if (record_format(e->c, index, size)) handle_printf(e, index, payload);
}

static void on_time(const EventCtx *e, uint32_t index,
                    const uint8_t *payload, size_t size) {
  const PrintfDef *p = record_printf(e->c, index, size);
  if (p) handle_time(p, e->output);
}

static void on_system(const EventCtx *e, uint32_t index,
                      const uint8_t *payload, size_t size) {
  if (record_format(e->c, index, size)) handle_system(e, index, payload);
}

static void on_cat(const EventCtx *e, uint32_t index, const uint8_t *payload,
                   size_t size) {
  if (record_format(e->c, index, size)) handle_cat(e, index, payload);
}

static void on_join(const EventCtx *e, uint32_t index,
                    const uint8_t *payload, size_t size) {
  if (index < (uint32_t)e->c->nprintfs)
    handle_join(&e->c->printfs[index], payload, size, e->output);
}

/* The message on stderr, ended by a newline if the format has none;
 * stdout is flushed first so that the two stay in order on a terminal. */
static void on_errorf(const EventCtx *e, uint32_t index,
                      const uint8_t *payload, size_t size) {
  const PrintfDef *p = record_format(e->c, index, size);
  if (!p) return;
  if (p->once && e->l->warn_repeats && e->l->warn_repeats[index]++ > 0)
    return;
  size_t len;
  const char *text = format_record(e, index, payload, &len);
  if (!text) return;
  fflush(e->output->out);
  fprintf(stderr, "%s%s%s%s", p->prefix ? p->prefix : "", text,
          len && text[len - 1] == '\n' ? "" : "\n",
          p->expansions ? p->expansions : "");
}

/* bpftrace stops handling events once exit() is seen; loupe then exits
 * with its code. */
static void on_exit_event(const EventCtx *e, uint32_t index,
                          const uint8_t *payload, size_t size) {
  *e->exit_seen = 1 + (int)(index & 0xff);
}

/* A statement sending event `ev`: name, arguments, check, emit, handler. */
#define OUTPUT(name_, min, max, check_, emit, ev, on)                     \
  {.name = name_, .form = BI_CALL, .min_args = min, .max_args = max,      \
   .check = check_, .emit_stmt = emit, .event = ev, .on_event = on}

const Builtin builtins_output[] = {
    OUTPUT("printf", 0, -1, check_printf, emit_printf, EV_PRINTF, on_printf),
    OUTPUT("system", 0, -1, check_system, emit_system, EV_SYSTEM, on_system),
    OUTPUT("cat", 0, -1, check_printf, emit_cat, EV_CAT, on_cat),
    OUTPUT("time", 0, 1, check_time, emit_time, EV_TIME, on_time),
    OUTPUT("join", 1, 2, check_join, emit_join, EV_JOIN, on_join),
    {.name = "exit", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .check = check_exit, .emit_stmt = emit_exit, .event = EV_EXIT,
     .on_event = on_exit_event, .own_map = EXITED_MAP_NAME},
    {.name = "strftime", .form = BI_CALL, .min_args = 2, .max_args = 2,
     .has_value = true, .check = check_strftime, .emit_int = emit_strftime},
    OUTPUT("errorf", 0, -1, check_errorf, emit_errorf, EV_ERRORF, on_errorf),
    {.name = "fail", .form = BI_CALL, .min_args = 1, .max_args = -1,
     .check = check_fail, .emit_stmt = emit_fail},
    OUTPUT("warnf", 0, -1, check_errorf, emit_errorf, EV_WARNF, on_errorf),
    {0},
};
