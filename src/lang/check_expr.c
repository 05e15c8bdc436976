/* check_expr: the types of expressions — fields of tracepoint records and
 * C structs, tuples, casts, positional parameters, operators — and the
 * dispatch of builtin words and calls to their records (builtins/). */
#define _GNU_SOURCE   /* strerrorname_np, sigabbrev_np */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/ctype.h"
#include "lang/sysheader.h"
#include "probes/provider.h"
#include "probes/syscalls.h"

/* ---- fields --------------------------------------------------------- */

static Type field_type(const TpField *f, const char *category, int strlen) {
  if (f->is_string)
    return ty_str(f->data_loc ? strlen + 1 : f->size);   /* as str() */
  if (f->is_array) {
    /* "__u8[4]": a copy of the array, as a struct member's would be; an
     * element type loupe cannot name reads as unsigned bytes */
    const char *open = strrchr(f->type_text, '[');
    int n = open ? atoi(open + 1) : 0;
    char base[160], err[160];
    snprintf(base, sizeof base, "%.*s",
             open ? (int)(open - f->type_text) : 0, f->type_text);
    const CType *el = ctype_parse(base, err, sizeof err);
    if (!el || el->size <= 0 || n <= 0 || el->size * n != f->size) {
      el = ctype_int(1, false);
      n = f->size;
    }
    const CType *ct = ctype_array_of(el, n);
    return (Type){.kind = TY_CVAL, .size = ct->size, .ctype = ct};
  }
  if (f->is_pointer) {
    Type t = ty_int(8, false);
    t.is_pointer = true;
    /* Syscall arguments are user addresses; other tracepoints record
     * kernel ones. */
    t.as = strcmp(category, "syscalls") == 0 ? AS_USER : AS_KERNEL;
    /* what it points to, when the type reads as one loupe knows;
     * qualifiers ("const char *const *argv") change nothing here */
    char err[160], text[160];
    size_t o = 0;
    for (const char *p = f->type_text; *p && o + 1 < sizeof text; p++) {
      if ((p == f->type_text || !isalnum((unsigned char)p[-1])) &&
          !strncmp(p, "const", 5) && !isalnum((unsigned char)p[5]) &&
          p[5] != '_') {
        p += 4;
        continue;
      }
      text[o++] = *p;
    }
    text[o] = '\0';
    const CType *ct = ctype_parse(text, err, sizeof(err));
    if (ct && ct->kind == C_PTR) t.ctype = ct->target;
    return t;
  }
  Type t = ty_int(f->size, f->is_signed);
  /* an enum field prints its values by name when BTF knows the enum */
  if (!strncmp(f->type_text, "enum ", 5)) {
    char err[160];
    const CType *ct = ctype_parse(f->type_text, err, sizeof(err));
    if (ct && ct->kind == C_ENUM) t.enum_def = ct->enumdef;
  }
  return t;
}

/* The address space a pointer made from, or read through, a value of type
 * t points into: t's own (a uprobe's arg0 is a user address, curtask a
 * kernel one), else the probe's: user memory in uprobes, kernel memory
 * elsewhere. */
static AddrSpace space_of(Checker *c, Type t) {
  if (t.as) return t.as;
  return c->probe && PROBE_ALL(c->probe, user_space, true) ? AS_USER
                                                          : AS_KERNEL;
}

/* The loupe type of a value of C type ct found in memory of `as`: a
 * pointer found there points into the same space. */
static bool type_of_ctype(const CType *ct, AddrSpace as, Type *out) {
  Type t = {0};
  switch (ct->kind) {
  case C_INT:
  case C_ENUM:
    if (ct->size != 1 && ct->size != 2 && ct->size != 4 && ct->size != 8)
      return false;
    t = ty_int(ct->size, ct->is_signed);
    t.enum_def = ct->enumdef;
    break;
  case C_PTR:
    t = ty_int(8, false);
    t.is_pointer = true;
    t.ctype = ct->target;
    t.as = as;
    break;
  case C_STRUCT:
  case C_UNION:
    t.kind = TY_RECORD;
    t.ctype = ct;
    t.size = ct->size;
    t.as = as;
    break;
  case C_ARRAY:
    if (ct->target && ct->target->kind == C_INT && ct->target->is_char) {
      t = ty_str(ct->nelems > 0 ? ct->nelems : 1);   /* char name[N] */
      t.as = as;
    } else {
      t.kind = TY_RECORD;     /* indexable with [] */
      t.ctype = ct;
      t.size = ct->size;
      t.as = as;
    }
    break;
  default:
    return false;
  }
  *out = t;
  return true;
}

/* p->name and r.name on kernel (or script) structs. */
static void check_struct_field(Checker *c, Node *n) {
  Type lt = n->lhs->type;
  const CType *st = lt.ctype;
  if (!st || (st->kind != C_STRUCT && st->kind != C_UNION)) {
    /* bpftrace names what a pointer points to: p->x reads through it */
    char name[120];
    error_at(c, n->span, "Can not access field '%s' on expression of type "
             "'%s'", n->name, lt.kind == TY_INT && st
                                  ? c_type_name(st, name, sizeof(name))
                                  : TYPE_NAME(lt));
    return;
  }
  CField f;
  if (!ctype_field(st, n->name, &f)) {
    char name[120];
    error_at(c, n->span, "Struct/union of type '%s' does not contain a field "
             "named '%s'", ctype_name(st, name, sizeof(name)), n->name);
    return;
  }
  Type t;
  if (!type_of_ctype(f.type, space_of(c, lt), &t)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read field '%s' of type '%s' yet",
             n->name, ctype_name(f.type, name, sizeof(name)));
    return;
  }
  n->field_offset = f.offset;
  n->bit_offset = f.bit_offset;
  n->bit_size = f.bit_size;
  n->type = t;
}

/* args->name: the field must exist, with one type, in every target. */
/* (1, "a").1 or config.max_strlen: a field of a tuple written out of
 * literals alone (nothing else to evaluate) is that literal, without
 * building the tuple. */
static void fold_tuple_literal_field(Node *n) {
  if (n->lhs->kind != N_TUPLE) return;
  for (Node *x = n->lhs->args; x; x = x->next)
    if (x->kind != N_INT && x->kind != N_STR) return;
  Node *e = n->lhs->args;
  for (int64_t i = 0; e && i < n->ival; i++) e = e->next;
  if (!e) return;
  Node *next = n->next;
  Span at = n->span;
  *n = *e;
  n->next = next;
  n->span = at;
}

static void check_tuple_field(Checker *c, Node *n) {
  TupleType *t = n->lhs->type.tuple;
  if (t->names) {
    for (int i = 0; i < t->n; i++)
      if (!strcmp(t->names[i], n->name)) {
        n->ival = i;
        n->type = t->elems[i];
        fold_tuple_literal_field(n);
        return;
      }
    char ty[200];
    error_at(c, n->span, "the record %s has no field %s",
             type_name(n->lhs->type, ty, sizeof ty), n->name);
    return;
  }
  char *end;
  long i = strtol(n->name, &end, 10);
  if (*end || i < 0) {
    error_at(c, n->span, "Tuples must be indexed with a constant and "
             "non-negative integer");
    return;
  }
  if (i >= t->n) {
    error_at(c, n->span, "Invalid tuple index: %s. Found %d elements in "
             "tuple.", n->name, t->n);
    return;
  }
  n->ival = i;
  n->type = t->elems[i];
  fold_tuple_literal_field(n);
}

static void check_field(Checker *c, Node *n) {
  /* args.NAME reads the field alone, not args as a whole */
  c->args_not_whole = n->lhs->kind == N_BUILTIN && n->lhs->name &&
                     !strcmp(n->lhs->name, "args");
  check_expr(c, n->lhs);
  c->args_not_whole = false;
  if (n->lhs->type.kind == TY_TUPLE) {
    check_tuple_field(c, n);
    return;
  }
  if (n->lhs->kind == N_BUILTIN && n->lhs->type.kind == TY_CVAL &&
      check_uprobe_args_field(c, n))
    return;   /* a uprobe's args: not one of its readable parameters */
  if (n->lhs->type.kind == TY_RECORD || n->lhs->type.kind == TY_CVAL ||
      (n->lhs->type.kind == TY_INT && n->lhs->type.is_pointer &&
       n->lhs->type.ctype)) {
    check_struct_field(c, n);
    return;
  }
  if (n->lhs->type.kind != TY_ARGS) {
    if (n->lhs->type.kind != TY_NONE)
      error_at(c, n->span, "Can not access field '%s' on expression of type "
               "'%s'", n->name, TYPE_NAME(n->lhs->type));
    return;
  }
  check_target_field(c, n, false);
}

void check_target_field(Checker *c, Node *n, bool want_return) {
  bool first = true;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next) {
    for (Target *t = ap->targets; t; t = t->next) {
      const TpField *f = t->format ? tp_field(t->format, n->name) : NULL;
      if (f && f->is_return != want_return) f = NULL;
      if (!f && want_return) {
        error_at(c, n->span, "%s returns nothing (void): fexit:%s:%s has "
                 "no retval", t->event, t->category, t->event);
        return;
      }
      if (!f) {
        error_at(c, n->span, "%s %s:%s has no field named '%s'",
                 ap->provider, t->category, t->event, n->name);
        return;
      }
      Type ft = field_type(f, t->category, c->strlen);
      if (first) {
        n->type = ft;
        n->field_offset = f->offset;
        n->field_data_loc = f->data_loc;
        first = false;
      } else if (ft.kind != n->type.kind ||
                 (ft.kind == TY_CVAL && ft.size != n->type.size)) {
        error_at(c, n->span,
                 "field '%s' has different types in the probe's tracepoints",
                 n->name);
        return;
      } else if (ft.kind == TY_STR && ft.size > n->type.size) {
        n->type.size = ft.size;
      }
    }
  }
}

/* The struct `args` is in one target of a tracepoint, raw tracepoint,
 * fentry or fexit probe: its fields in order (fexit's retval left out),
 * each typed as args.NAME reads it and laid out as C would. NULL, with
 * the reason in err, when a field has no such type. */
static const CType *args_record(Target *t, int strlen, char *err,
                                size_t errlen) {
  if (t->args_record) return t->args_record;
  const TpFormat *fmt = t->format;
  CField *fields = calloc((size_t)fmt->nfields + 1, sizeof *fields);
  if (!fields) abort();
  int n = 0, size = 0, align = 1;
  for (int i = 0; i < fmt->nfields; i++) {
    const TpField *f = &fmt->fields[i];
    if (f->is_return) continue;
    Type ft = field_type(f, t->category, strlen);
    const CType *ct;
    if (ft.kind == TY_STR)
      ct = ctype_array_of(ctype_char(true, true), ft.size);
    else if (ft.kind == TY_CVAL)
      ct = ft.ctype;
    else if (ft.is_pointer)
      ct = ctype_pointer_to(ft.ctype ? ft.ctype : ctype_void());
    else
      ct = ctype_int(ft.size, ft.is_signed);
    if (!ct) {
      snprintf(err, errlen, "field '%s' (%s) can not be part of a value",
               f->name, f->type_text);
      free(fields);
      return NULL;
    }
    /* strings and arrays are copied with 8-byte stores: they start on
     * an 8-byte boundary of the record */
    int a = ct->kind == C_ARRAY ? 8 : ct->align > 0 ? ct->align : 1;
    size = (size + a - 1) / a * a;
    fields[n++] = (CField){.name = f->name, .offset = size, .type = ct};
    size += ct->size;
    if (a > align) align = a;
  }
  char name[300];
  snprintf(name, sizeof name, "%s_args", t->event);
  CType *r = ctype_new(C_STRUCT, name, (size + align - 1) / align * align,
                       align);
  ctype_set_fields(r, fields, n);
  t->args_record = r;
  return r;
}

void check_args_record(Checker *c, Node *n) {
  const CType *record = NULL;
  n->type = (Type){.kind = TY_NONE};   /* until it is known: no more errors */
  AddrSpace as = AS_KERNEL;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
    for (Target *t = ap->targets; t; t = t->next) {
      char err[300];
      const CType *r = t->format ? args_record(t, c->strlen, err, sizeof err)
                                 : NULL;
      if (!t->format) snprintf(err, sizeof err, "its fields are not known");
      if (!r) {
        error_at(c, n->span, "args of %s can not be used as one value: %s; "
                 "use its fields (args.NAME)", t->name, err);
        return;
      }
      if (!record) {
        record = r;
      } else if (!ctype_same_members(record, r)) {
        error_at(c, n->span, "args differ between the attach points of "
                 "this probe (%s is one); use their fields (args.NAME) "
                 "instead", t->name);
        return;
      }
      /* a syscall's pointers are the caller's */
      if (ap->prov && ap->prov->args_user_space &&
          ap->prov->args_user_space(t))
        as = AS_USER;
    }
  if (!record) return;
  n->type = (Type){.kind = TY_CVAL, .size = record->size, .ctype = record,
                   .as = as};
}

/* Constants of kernel headers that bpftrace's tools use after including
 * them (<linux/sched.h>, <linux/socket.h>): the task states that have kept
 * their values across kernel versions, and the address families, as the
 * C library knows them. loupe knows these names itself, for scripts
 * whose headers are not installed (the kernel's <linux/sched.h> is not
 * the uapi one); a script's own #define or enum, or an included header's
 * constant, comes first. */
static int kernel_macro_number(const char *name) {
  static const struct { const char *name; int nr; } known[] = {
      {"TASK_RUNNING", 0}, {"TASK_INTERRUPTIBLE", 1},
      {"TASK_UNINTERRUPTIBLE", 2}, {"__TASK_STOPPED", 4},
      {"__TASK_TRACED", 8}, {"EXIT_DEAD", 16}, {"EXIT_ZOMBIE", 32},
      {"TASK_PARKED", 64}, {"TASK_DEAD", 128},
      {"AF_UNSPEC", AF_UNSPEC}, {"AF_UNIX", AF_UNIX}, {"AF_LOCAL", AF_LOCAL},
      {"AF_INET", AF_INET}, {"AF_INET6", AF_INET6},
      {"AF_NETLINK", AF_NETLINK}, {"AF_PACKET", AF_PACKET},
      {"AF_VSOCK", AF_VSOCK}, {"AF_XDP", AF_XDP}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(known[i].name, name)) return known[i].nr;
  return -1;
}

/* The number of an errno name (ENOENT) or a signal name (SIGKILL), or -1.
 * Only upper-case words are asked about, so no identifier of the script
 * can be taken for one by accident of spelling. */
static int errno_or_signal_number(const char *name) {
  if (name[0] != 'E' && strncmp(name, "SIG", 3)) return -1;
  for (const char *p = name; *p; p++)
    if (!isupper((unsigned char)*p) && !isdigit((unsigned char)*p) &&
        *p != '_')
      return -1;
  if (name[0] == 'E') {
    for (int e = 1; e < 4096; e++) {
      const char *known = strerrorname_np(e);
      if (known && !strcmp(known, name)) return e;
    }
    /* the kernel's own, which functions return but no C library names
     * (include/linux/errno.h) */
    static const struct { const char *name; int nr; } kernel[] = {
        {"ERESTARTSYS", 512}, {"ERESTARTNOINTR", 513},
        {"ERESTARTNOHAND", 514}, {"ENOIOCTLCMD", 515},
        {"ERESTART_RESTARTBLOCK", 516}, {"EPROBE_DEFER", 517},
        {"EOPENSTALE", 518}, {"ENOPARAM", 519}, {"EBADHANDLE", 521},
        {"ENOTSYNC", 522}, {"EBADCOOKIE", 523}, {"ENOTSUPP", 524},
        {"ETOOSMALL", 525}, {"ESERVERFAULT", 526}, {"EBADTYPE", 527},
        {"EJUKEBOX", 528}, {"EIOCBQUEUED", 529}, {"ERECALLCONFLICT", 530}};
    for (size_t i = 0; i < sizeof kernel / sizeof kernel[0]; i++)
      if (!strcmp(kernel[i].name, name)) return kernel[i].nr;
    return -1;
  }
  for (int s = 1; s < 65; s++) {
    const char *abbrev = sigabbrev_np(s);
    if (abbrev && !strcmp(abbrev, name + 3)) return s;
  }
  return -1;
}

/* ---- builtins --------------------------------------------------------
 * Each builtin's rules are in its record (builtins/); here a word or a
 * call is matched to its record, or reported. */

static void not_yet(Checker *c, Node *n, const char *what) {
  error_at(c, n->span, "loupe does not support the %s '%s' yet", what,
           n->name);
}

/* A constant of the system headers the script includes (ICMP_ECHO after
 * #include <linux/icmp.h>): before the kernel's enumerators, as cpp
 * replaces a macro before clang sees a name. True if it is one; a
 * definition loupe cannot evaluate leaves the reason in `why` (reported
 * if nothing else knows the name: a script that worked with the
 * kernel's enumerator before it included the header still does). */
static bool header_constant(Checker *c, Node *n, char *why, size_t whylen) {
  const struct SysHeaders *h = c->script->sysheaders;
  if (!h) return false;
  int64_t v;
  bool is_unsigned;
  int found = sysheaders_constant(h, n->name, &v, &is_unsigned, why,
                                  whylen);
  if (found <= 0) return false;
  n->kind = N_INT;
  n->ival = v;
  n->type = ty_int(8, !is_unsigned);
  return true;
}

/* "Unknown identifier", naming the headers that were looked in. */
static void unknown_identifier(Checker *c, Node *n) {
  const struct SysHeaders *h = c->script->sysheaders;
  char read[2048], missing[2048], why[4200] = "";
  int nread = 0, nmissing = 0;
  if (h) {
    sysheaders_describe(h, true, read, sizeof read, &nread);
    sysheaders_describe(h, false, missing, sizeof missing, &nmissing);
  }
  int len = 0;
  if (nread)
    len += snprintf(why, sizeof why, "not defined by %s or the headers %s",
                  read, nread > 1 ? "they include" : "it includes");
  if (nmissing)
    snprintf(why + len, sizeof why - (size_t)len, "%s%s %s not found in the "
             "include path", nread ? "; " : "", missing,
             nmissing > 1 ? "were" : "was");
  if (*why)
    error_at(c, n->span, "Unknown identifier: '%s' (%s)", n->name, why);
  else
    error_at(c, n->span, "Unknown identifier: '%s'", n->name);
}

static void check_builtin(Checker *c, Node *n) {
  if (!strncmp(n->name, "__builtin_", 10) && n->name[10])
    n->name += 10;
  const Builtin *b = builtin_find(n->name, BI_WORD);
  if (b && b->check) {
    n->builtin = b;
    b->check(c, n);
    return;
  }
  /* stack arguments (arg6...) are not read yet */
  if (b || !strncmp(n->name, "arg", 3)) {
    not_yet(c, n, "builtin");
    return;
  }
  char header_why[5000] = "";
  if (header_constant(c, n, header_why, sizeof header_why)) return;
  /* an enumerator of the script's or the kernel's is a constant */
  if (enum_constant(c, n)) return;
  /* __NR_name and SYS_name: the system call numbers <syscall.h> defines
   * for bpftrace's C preprocessor, known to loupe without it */
  const char *call = !strncmp(n->name, "__NR_", 5) ? n->name + 5
                     : !strncmp(n->name, "SYS_", 4) ? n->name + 4 : NULL;
  int nr = call ? syscall_number(call) : -1;
  /* ENOENT, SIGKILL...: the numbers <errno.h> and <signal.h> define, as
   * the C library knows them */
  if (nr < 0) nr = errno_or_signal_number(n->name);
  if (nr < 0) nr = kernel_macro_number(n->name);   /* TASK_RUNNING, AF_INET */
  if (nr >= 0) {
    n->kind = N_INT;
    n->ival = nr;
    n->type = ty_int(8, true);
    return;
  }
  if (*header_why) {   /* the node stays a name: the reporting pass sees it */
    error_at(c, n->span, "%s", header_why);
    n->type = ty_int(8, true);
    return;
  }
  unknown_identifier(c, n);
}

static void check_call(Checker *c, Node *n) {
  /* __builtin_NAME is another name of every builtin */
  if (!strncmp(n->name, "__builtin_", 10) && n->name[10])
    n->name += 10;
  const Builtin *b = builtin_find(n->name, BI_CALL);
  n->type = ty_void();
  if (!b && !n->args && builtin_find(n->name, BI_WORD)) {
    /* a builtin word may be called: pid() is pid */
    n->kind = N_BUILTIN;
    check_builtin(c, n);
    return;
  }
  if (!b) {
    error_at(c, n->span, "Unknown function: '%s'", n->name);
    n->type.kind = TY_NONE;   /* not also "has no value" */
    return;
  }
  if (!b->check) {
    not_yet(c, n, "function");
    return;
  }
  n->builtin = b;
  /* a value once checked: no "has no value" after an error here */
  if (b->has_value) n->type.kind = TY_NONE;
  if (b->max_args >= 0 && !want_args(c, n, b->min_args, b->max_args)) return;
  b->check(c, n);
}

/* ---- values ------------------------------------------------------------ */

/* What reading an aggregation gives: an integer, its value over all CPUs
 * (codegen/maps.c, gen_agg_read); a count's is unsigned. */
Type agg_read_type(int agg) { return ty_int(8, agg != AGG_COUNT); }

static void check_map_read(Checker *c, Node *n) {
  check_map_keys(c, n);
  MapSym *m = n->map;
  if (m->value_type.kind == TY_NONE && c->pass == 1 && c->assign_map &&
      !strcmp(c->assign_map, m->name)) {
    /* @b = @b + 1 before anything else gave @b a type: an absent entry
     * reads as zero, so the first pass types the read as an integer and
     * the assignment gives @b its type from that */
    n->type = ty_int(8, true);
    return;
  }
  if (m->value_type.kind == TY_NONE) {
    error_at(c, n->span, "Undefined map: %s", m->name);
    return;
  }
  n->type = m->value_type;
  if (n->type.kind == TY_AGG && n->type.agg == AGG_TSERIES) {
    error_at(c, n->span, "%s holds tseries() values, which can be printed, "
             "cleared or zeroed but not read", m->name);
    n->type = (Type){.kind = TY_NONE};
    return;
  }
  if (n->type.kind == TY_AGG) n->type = agg_read_type(n->type.agg);
}

/* The size and alignment of a value of type t as a member of a C struct,
 * as sizeof counts a tuple's elements. */
static int c_size_of(Type t, int *align) {
  int size = value_cap(t);
  *align = 8;
  if (t.kind == TY_INT) {
    size = t.is_pointer ? 8 : t.is_bool ? 1 : t.size;
    *align = size;
  } else if (t.kind == TY_STR) {
    size = t.size;
    *align = 1;
  } else if (t.kind == TY_TUPLE && t.tuple->c_size) {
    size = t.tuple->c_size;
    *align = t.tuple->c_align;
  } else if ((t.kind == TY_RECORD || t.kind == TY_CVAL) && t.ctype) {
    size = t.ctype->size;
    *align = t.ctype->align > 0 ? t.ctype->align : 1;
  }
  return size;
}

/* Lays tuple t out as the C struct of the elements (types as written). */
static void tuple_c_layout(TupleType *t, Node *elems) {
  int size = 0, max_align = 1;
  for (Node *e = elems; e; e = e->next) {
    int align, n = c_size_of(e->type, &align);
    size = (size + align - 1) / align * align + n;
    if (align > max_align) max_align = align;
  }
  t->c_size = (size + max_align - 1) / max_align * max_align;
  t->c_align = max_align;
}

/* (a, b, ...): each element laid out as in a map key. */
static void check_tuple(Checker *c, Node *n) {
  int k = 0;
  for (Node *e = n->args; e; e = e->next) {
    check_expr(c, e);
    if (e->type.kind != TY_INT && e->type.kind != TY_STR &&
        e->type.kind != TY_TUPLE && e->type.kind != TY_BUF &&
        e->type.kind != TY_RECORD && e->type.kind != TY_CVAL) {
      if (e->type.kind != TY_NONE)
        error_at(c, e->span, "%s can not be part of a tuple",
                 TYPE_NAME(e->type));
      return;
    }
    k++;
  }
  TupleType *t = calloc(1, sizeof(*t));
  t->n = k;
  t->names = n->fields;
  for (int i = 0; n->fields && i < k; i++)
    for (int j = 0; j < i; j++)
      if (!strcmp(n->fields[i], n->fields[j]))
        error_at(c, n->span, "the record has two fields named %s",
                 n->fields[i]);
  t->elems = calloc(k, sizeof(Type));
  t->offs = calloc(k, sizeof(int));
  int i = 0;
  for (Node *e = n->args; e; e = e->next, i++) {
    t->elems[i] = ty_stored(e->type);
    t->offs[i] = t->size;
    t->size += value_cap(t->elems[i]);
  }
  tuple_c_layout(t, n->args);
  n->type.kind = TY_TUPLE;
  n->type.tuple = t;
  n->type.size = t->size;
}

/* Integer casts: (uint8)x ... (int64)x, (bool)x. */
static bool int_type_named(const char *name, Type *out) {
  static const struct { const char *name; int size; bool is_signed; } ints[] = {
      {"int8", 1, true},   {"uint8", 1, false},  {"int16", 2, true},
      {"uint16", 2, false}, {"int32", 4, true},  {"uint32", 4, false},
      {"int64", 8, true},  {"uint64", 8, false}, {"bool", 1, false},
      {"char", 1, true},   {"int", 4, true},     {"unsigned int", 4, false},
      {"short", 2, true},  {"unsigned short", 2, false}, {"long", 8, true},
      {"unsigned long", 8, false}, {"unsigned char", 1, false},
      {"long long", 8, true}, {"unsigned long long", 8, false},
  };
  for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
    if (!strcmp(ints[i].name, name)) {
      *out = ty_int(ints[i].size, ints[i].is_signed);
      out->is_bool = !strcmp(name, "bool");
      return true;
    }
  return false;
}

/* An integer or pointer type by name; `as` is the address space a
 * pointer gets. Errors point at `at`, or at `whole` for a type that
 * exists but is not an integer or a pointer. */
static bool scalar_type_named(Checker *c, const char *name, Span at,
                              Span whole, AddrSpace as, Type *t) {
  if (int_type_named(name, t)) return true;
  char err[200];
  const CType *ct = ctype_parse(name, err, sizeof(err));
  if (!ct) {
    /* bpftrace takes any unknown name in a cast for a struct's */
    if (!strncmp(err, "Unknown type: ", 14))
      error_at(c, at, "Unknown struct/union: %s", err + 14);
    else
      error_at(c, at, "%s", err);
    return false;
  }
  if (ct->kind == C_STRUCT || ct->kind == C_UNION) {
    error_at(c, whole, "Cannot cast to struct type \"%s\"", name);
    return false;
  }
  if ((ct->kind != C_PTR && ct->kind != C_INT && ct->kind != C_ENUM) ||
      !type_of_ctype(ct, as, t)) {
    error_at(c, whole, "Cannot cast to \"%s\": only integer and "
             "pointer casts are possible", name);
    return false;
  }
  return true;
}

/* A declared struct, union or array ("struct Foo", "struct Foo *[2]"):
 * a value of that C type. False if name is none of these (a pointer, an
 * integer, or no type: scalar_type_named says which). */
static bool value_type_named(const char *name, Type *out) {
  char err[200];
  const CType *ct = ctype_parse(name, err, sizeof err);
  if (!ct || (ct->kind != C_STRUCT && ct->kind != C_UNION &&
              ct->kind != C_ARRAY))
    return false;
  *out = (Type){.kind = TY_CVAL, .size = ct->size, .ctype = ct};
  return ct->size > 0;
}

/* The string type `string[N]`: N bytes, its NUL included. False if name
 * is not of that form; an error if N is out of range. */
static bool string_type_named(Checker *c, const char *name, Span at,
                              Type *out) {
  if (strncmp(name, "string[", 7)) return false;
  char *end;
  long n = strtol(name + 7, &end, 10);
  if (n < 1 || n > MAX_STRLEN_LIMIT || strcmp(end, "]")) {
    error_at(c, at, "%s: the size of a string type is from 1 to %d bytes",
             name, MAX_STRLEN_LIMIT);
    *out = (Type){0};
    return true;
  }
  *out = ty_str((int)n);
  return true;
}

/* A declared variable's type: an integer, a pointer, `string` (as str()
 * gives it) or `string[N]`, or a struct or array value. */
bool type_named(Checker *c, const char *name, Span at, Type *out) {
  if (!strcmp(name, "string")) {
    *out = ty_str(c->strlen + 1);   /* what str() gives */
    return true;
  }
  if (string_type_named(c, name, at, out)) return out->kind == TY_STR;
  if (value_type_named(name, out)) return true;
  Type none = {0};
  return scalar_type_named(c, name, at, at, space_of(c, none), out);
}

/* The type a let's annotation or typeof() gives: the type named (name),
 * or expr's: typeof(...) again, a lone word that names a type
 * (typeof(size_t)), or any other expression, checked. False, perhaps
 * after an error, if there is none. */
bool type_given(Checker *c, const char *name, Node *expr, Span at,
                Type *out) {
  if (name) return type_named(c, name, at, out);
  if (expr->kind == N_TYPEOF)
    return type_given(c, expr->name, expr->lhs, expr->span, out);
  char err[160];
  if (expr->kind == N_BUILTIN && !builtin_find(expr->name, BI_WORD) &&
      !enum_constant(c, expr) && ctype_parse(expr->name, err, sizeof err))
    return type_named(c, expr->name, expr->span, out);
  check_expr(c, expr);
  *out = expr->type;
  return out->kind != TY_NONE && out->kind != TY_VOID;
}

/* (type)x. Errors about the type point at "(type)", as bpftrace's do. */
/* (int8[8])x, (uint8[])"abc": the bytes of an integer, a string or an
 * array as an array of integers of the same size in all (the count, when
 * left out, is what fills it). False if the cast is not to an array. */
static bool check_array_cast(Checker *c, Node *n) {
  const char *dims = strchr(n->name, '[');
  size_t len = strlen(n->name);
  if (!dims || n->name[len - 1] != ']') return false;   /* T[4]*: a pointer */
  Type from = n->lhs->type;
  if (from.kind == TY_NONE) return true;
  char elem_name[200], err[200], name[256];
  snprintf(elem_name, sizeof elem_name, "%.*s", (int)(dims - n->name),
           n->name);
  const CType *elem = ctype_parse(elem_name, err, sizeof err);
  bool from_ok = (from.kind == TY_INT && !from.is_pointer) ||
                 from.kind == TY_STR ||
                 (from.kind == TY_CVAL && from.ctype &&
                  from.ctype->kind == C_ARRAY);
  if (!elem || elem->kind != C_INT || !from_ok) {
    error_at(c, n->part_span, "Cannot cast from \"%s\" to \"%s\"",
             TYPE_NAME(from), n->name);
    return true;
  }
  int count = atoi(dims + 1);
  if (dims[1] == ']' && from.size % elem->size == 0)
    count = from.size / elem->size;
  if (count * elem->size != from.size) {
    error_at(c, n->part_span, "Cannot cast from \"%s\" to \"%s\": the "
             "sizes differ (%d and %d bytes)", TYPE_NAME(from), n->name,
             from.size, count * elem->size);
    return true;
  }
  snprintf(name, sizeof name, "%s[%d]", elem_name, count);
  value_type_named(name, &n->type);
  return true;
}

/* (uint32)$a of an integer array, a copy or one in memory (a struct's
 * uint8_t b[4]): its bytes as one integer of the same size. */
static bool cast_from_int_array(Checker *c, Node *n, Type to) {
  const Type from = n->lhs->type;
  if ((from.kind != TY_CVAL && from.kind != TY_RECORD) || !from.ctype ||
      from.ctype->kind != C_ARRAY ||
      !from.ctype->target || from.ctype->target->kind != C_INT)
    return false;
  if (to.is_pointer || to.size != from.size)
    error_at(c, n->part_span, "Cannot cast from \"%s\" to \"%s\": the "
             "sizes differ (%d and %d bytes)", TYPE_NAME(from), n->name,
             from.size, to.size);
  return true;
}

static void cast_to_int(Checker *c, Node *n, Type t);

static void check_cast(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  Type t;
  if (n->rhs) {   /* (typeof(...))x */
    Node *of = n->rhs;   /* kept: the checker runs twice */
    if (of->name) {
      n->name = of->name;   /* typeof(TYPE): as (TYPE)x */
    } else {
      if (!type_given(c, NULL, of->lhs, of->span, &t)) return;
      if (t.kind != TY_INT) {
        error_at(c, n->part_span, "Cannot cast to \"%s\": a cast gives an "
                 "integer or a pointer", TYPE_NAME(t));
        return;
      }
      cast_to_int(c, n, t);
      return;
    }
  }
  if (string_type_named(c, n->name, n->part_span, &t)) {
    /* (string[N])s: the string cut to N - 1 bytes or padded */
    Type from = n->lhs->type;
    if (t.kind != TY_STR || from.kind == TY_NONE) return;
    if (from.kind != TY_STR) {
      error_at(c, n->part_span, "Cannot cast from \"%s\" to \"%s\": only "
               "a string becomes a string (str(p, N) reads one from an "
               "address)", TYPE_NAME(from), n->name);
      return;
    }
    n->type = t;
    return;
  }
  if (check_array_cast(c, n)) return;
  if (!scalar_type_named(c, n->name, n->part_span, n->span,
                         space_of(c, n->lhs->type), &t))
    return;
  cast_to_int(c, n, t);
}

/* (t)x to integer or pointer type t. */
static void cast_to_int(Checker *c, Node *n, Type t) {
  if (cast_from_int_array(c, n, t)) {
    n->type = t;
    return;
  }
  if (n->lhs->type.kind != TY_INT && n->lhs->type.kind != TY_NONE) {
    error_at(c, n->part_span, "Casts are not supported for type: \"%s\"",
             TYPE_NAME(n->lhs->type));
    return;
  }
  /* (uint64)arg0 is still an address in arg0's space */
  if (!t.is_pointer) t.as = n->lhs->type.as;
  n->type = t;
}

/* $1, $2 ...: the command line's words, as integers when they read as
 * one, else as strings; $# is their count. Rewritten into literals. */
static bool check_positional(Checker *c, Node *n) {
  const char *name = n->name + 1;
  if (!strcmp(name, "#")) {
    n->kind = N_INT;
    n->ival = c->script->nparams;
    n->type = ty_int(8, true);
    return true;
  }
  char *end;
  long i = strtol(name, &end, 10);
  if (*end || i < 1) return false;
  const char *text = i <= c->script->nparams ? c->script->params[i - 1] : "";
  errno = 0;
  long long v = strtoll(text, &end, 0);
  bool above_int64 = false;
  if (errno == ERANGE && *text != '-') {
    /* 0xffffffffffffffff: a uint64 beyond int64's range */
    errno = 0;
    unsigned long long u = strtoull(text, &end, 0);
    above_int64 = errno == 0;
    v = (long long)u;
  }
  if (!*text && !c->positional_as_string) {
    /* a missing parameter reads as 0 (and as "" inside str()) */
    n->kind = N_INT;
    n->ival = 0;
    n->type = ty_int(8, true);
  } else if (*text && !*end && !c->positional_as_string) {
    n->kind = N_INT;
    n->ival = v;
    n->type = ty_int(8, !above_int64);
  } else {
    n->kind = N_STR;
    n->sval = (char *)text;
    n->slen = (int)strlen(text);
    n->type = ty_str(n->slen + 1);
  }
  return true;
}

const char *op_text(int op) {
  static char one[2];
  switch (op) {
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_LE: return "<=";
  case OP_GE: return ">=";
  case OP_AND: return "&&";
  case OP_OR: return "||";
  case OP_SHL: return "<<";
  case OP_SHR: return ">>";
  case OP_INC: return "++";
  case OP_DEC: return "--";
  default: one[0] = (char)op; one[1] = 0; return one;
  }
}

/* A struct, union or array, in memory or copied: what == compares whole. */
static bool is_cvalue(Type t) {
  return t.kind == TY_RECORD || t.kind == TY_CVAL;
}

static bool is_comparison(int op) {
  return op == OP_EQ || op == OP_NE || op == '<' || op == '>' ||
         op == OP_LE || op == OP_GE;
}

/* Integer results follow C's usual conversions on 64-bit values: the
 * result is unsigned if either side is a 64-bit unsigned integer. */
static bool result_signed(Type a, Type b) {
  bool a_unsigned = !a.is_signed && a.size == 8;
  bool b_unsigned = !b.is_signed && b.size == 8;
  return !(a_unsigned || b_unsigned);
}

/* An operand of / or % that the division treats as unsigned without
 * surprise: an unsigned value or a literal that is not negative. */
static bool unsigned_operand(const Node *e) {
  return !e->type.is_signed || (e->kind == N_INT && e->ival >= 0);
}

/* / and %: BPF divides unsigned (signed division needs cpu v4, kernel
 * 6.6), so signed operands get bpftrace's warning. A divisor that is not
 * a known non-zero constant is tested at run time: dividing by 0 gives 1
 * and a warning record (printf_id; ival 1 unless --no-warnings). */
static void check_division(Checker *c, Node *n) {
  if (c->pass != 2) return;
  if (!unsigned_operand(n->lhs) || !unsigned_operand(n->rhs))
    diag_warning(c->d, n->part_span.line ? n->part_span : n->span,
                 "signed operands for '%s' can lead to "
                 "undefined behavior (cast to unsigned to silence warning)",
                 op_text(n->op));
  n->ival = 0;
  if (n->rhs->kind == N_INT && n->rhs->ival != 0) return;
  if (c->d->no_warnings) return;
  PrintfDef def = {.fmt = "Divide or modulo by 0 detected. This can lead "
                          "to unexpected results. 1 is being used as the "
                          "result.\n",
                   .span = n->span};
  def.prefix = diag_prefix(c->d, n->span, "WARNING");
  n->printf_id = add_printf_def(c, def);
  n->ival = n->printf_id >= 0;
}

static void check_binop(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  check_expr(c, n->rhs);
  Type l = n->lhs->type, r = n->rhs->type;
  if (l.kind == TY_NONE || r.kind == TY_NONE) return;
  /* strings, and buffers (their length first), compare by their bytes */
  if (((l.kind == TY_STR && r.kind == TY_STR) ||
       (l.kind == TY_BUF && r.kind == TY_BUF)) &&
      (n->op == OP_EQ || n->op == OP_NE)) {
    n->type = ty_int(8, false);
    return;
  }
  if (is_cvalue(l) && is_cvalue(r) && l.ctype == r.ctype &&
      (n->op == OP_EQ || n->op == OP_NE)) {
    n->type = ty_int(8, false);   /* compared byte by byte */
    return;
  }
  if (l.kind != TY_INT || r.kind != TY_INT || ty_is_stack(l) ||
      ty_is_stack(r)) {
    error_at(c, n->span, "Type mismatch for '%s': comparing '%s' with '%s'",
             op_text(n->op), TYPE_NAME(l), TYPE_NAME(r));
    return;
  }
  if (is_comparison(n->op) || n->op == OP_AND || n->op == OP_OR) {
    n->type = ty_int(8, false);
  } else if (l.is_pointer && !r.is_pointer && (n->op == '+' || n->op == '-')) {
    /* p + i moves by whole elements, as in C */
    n->type = l;
    n->field_offset = pointer_step(l);
  } else {
    n->type = ty_int(8, result_signed(l, r));
    if (n->op == '/' || n->op == '%') check_division(c, n);
    /* arg0 + 8 is still an address in arg0's space */
    if (n->op == '+' || n->op == '-') n->type.as = l.as ? l.as : r.as;
  }
}

/* *p: what p points to, read from memory (a struct stays in memory). */
static void check_deref(Checker *c, Node *n) {
  Type t = n->lhs->type;
  if (t.kind == TY_INT && !t.is_pointer && !t.is_bool && !ty_is_stack(t)) {
    /* *$x of an integer (0xff & *retval, str(*arg1)): an address,
     * where bpftrace reads a signed 64-bit integer, in the integer's own
     * address space or else the probe's */
    n->lhs->type.as = space_of(c, t);
    t = n->lhs->type;
    t.is_pointer = true;
    t.ctype = NULL;
  }
  if (t.kind != TY_INT || !t.is_pointer) {
    error_at(c, n->span, "Can not dereference type '%s': it is not a "
             "pointer", TYPE_NAME(t));
    return;
  }
  if (t.pointee) {   /* *p of p = &$x: $x's type, as it prints */
    n->type = *t.pointee;
    n->type.size = 8;   /* the variable's home holds 8 bytes */
    return;
  }
  /* a pointer to nothing known (kaddr("avenrun"), void *): bpftrace 0.17
   * reads a signed 64-bit integer there, as its tools expect */
  const CType *target = !t.ctype || t.ctype->kind == C_VOID
                            ? ctype_int(8, true) : t.ctype;
  if (!type_of_ctype(target, space_of(c, t), &n->type)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read a value of type '%s' yet",
             ctype_name(t.ctype, name, sizeof(name)));
  }
}

/* A constant integer expression: literals and + - * of them. */
static bool const_expr(const Node *n, int64_t *v) {
  int64_t a, b;
  if (n->kind == N_INT) {
    *v = n->ival;
    return true;
  }
  if (n->kind != N_BINOP || !const_expr(n->lhs, &a) ||
      !const_expr(n->rhs, &b))
    return false;
  switch (n->op) {
  case '+': *v = (int64_t)((uint64_t)a + (uint64_t)b); return true;
  case '-': *v = (int64_t)((uint64_t)a - (uint64_t)b); return true;
  case '*': *v = (int64_t)((uint64_t)a * (uint64_t)b); return true;
  default: return false;
  }
}

/* t[i] on a tuple is t.i: the index must be a constant. */
static void check_tuple_index(Checker *c, Node *n) {
  int64_t i;
  if (!const_expr(n->rhs, &i) || i < 0) {
    error_at(c, n->span, "Tuples must be indexed with a constant and "
             "non-negative integer");
    return;
  }
  char text[24];
  snprintf(text, sizeof text, "%lld", (long long)i);
  n->kind = N_FIELD;
  n->name = strdup(text);
  n->rhs = NULL;
  check_tuple_field(c, n);
}

/* s[i] on a string value: its byte i as a signed char. A constant index
 * must be inside the buffer; codegen reads 0 for one outside it. */
static void check_string_index(Checker *c, Node *n) {
  Type t = n->lhs->type;
  if (n->rhs->type.kind != TY_INT) {
    error_at(c, n->rhs->span, "an index must be an integer, not %s",
             TYPE_NAME(n->rhs->type));
    return;
  }
  if (n->rhs->kind == N_INT && (n->rhs->ival < 0 || n->rhs->ival >= t.size))
    error_at(c, n->span, "the index %lld is out of bounds for array of size "
             "%d", (long long)n->rhs->ival, t.size);
  n->type = ty_int(1, true);
}

/* p[i] on a pointer, or a[i] on an array in memory. */
static void check_index(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  check_expr(c, n->rhs);
  Type t = n->lhs->type;
  if (t.kind == TY_NONE) return;
  if (t.kind == TY_TUPLE) {
    check_tuple_index(c, n);
    return;
  }
  if (t.kind == TY_STR) {
    check_string_index(c, n);
    return;
  }
  const CType *elem = NULL;
  if (t.kind == TY_INT && t.is_pointer && t.ctype)
    elem = t.ctype;
  else if ((t.kind == TY_RECORD || t.kind == TY_CVAL) &&
           t.ctype->kind == C_ARRAY)
    elem = t.ctype->target;
  if (!elem || elem->size <= 0) {
    error_at(c, n->span, "The array index operator [] can not be used on "
             "expressions of type '%s'", TYPE_NAME(t));
    return;
  }
  if (n->rhs->type.kind != TY_INT) {
    error_at(c, n->rhs->span, "an index must be an integer, not %s",
             TYPE_NAME(n->rhs->type));
    return;
  }
  if (t.kind != TY_INT && t.ctype->nelems > 0 && n->rhs->kind == N_INT &&
      (n->rhs->ival < 0 || n->rhs->ival >= t.ctype->nelems)) {
    error_at(c, n->span, "the index %lld is out of bounds for array of size "
             "%d", (long long)n->rhs->ival, t.ctype->nelems);
    return;
  }
  n->field_offset = elem->size;   /* the element size, for codegen */
  if (!type_of_ctype(elem, space_of(c, t), &n->type)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read a value of type '%s' yet",
             ctype_name(elem, name, sizeof(name)));
  }
}

/* sizeof(TYPE), sizeof(expr), offsetof(TYPE, field): integer constants. */
static void check_sizeof(Checker *c, Node *n) {
  int64_t value = 0;
  char err[200];
  Type t;
  /* sizeof(TYPE[N]) goes through typeof, which knows array types, and
   * sizeof(typeof(TYPE)) of any other TYPE is sizeof(TYPE) */
  if (n->kind == N_SIZEOF && n->name && strchr(n->name, '[')) {
    n->lhs = node_new(N_TYPEOF, n->span);
    n->lhs->name = n->name;
    n->name = NULL;
  }
  if (n->kind == N_SIZEOF && !n->name && n->lhs->kind == N_TYPEOF &&
      n->lhs->name && !strchr(n->lhs->name, '['))
    n->name = n->lhs->name, n->lhs = NULL;
  if (n->kind == N_SIZEOF && n->name && !ctype_parse(n->name, err, sizeof err)) {
    /* sizeof(NAME) of a word that names no type but an enumerator
     * (sizeof(BTF_VAR_STATIC)): the size of that constant */
    Node *word = node_new(N_BUILTIN, n->span);
    word->name = n->name;
    if (enum_constant(c, word)) n->lhs = word, n->name = NULL;
  }
  if (n->kind == N_SIZEOF && !n->name) {
    if (n->lhs->kind == N_TYPEOF) {
      if (!type_given(c, NULL, n->lhs, n->lhs->span, &t)) return;
    } else {
      check_expr(c, n->lhs);
      t = n->lhs->type;
      /* not folded yet: the reporting pass checks it again */
      if (t.kind == TY_NONE) return;
    }
    int align;
    value = t.kind == TY_INT ? (t.is_pointer ? 8 : t.size)
            : t.kind == TY_RECORD || t.kind == TY_CVAL || t.kind == TY_STR
                ? t.size
            : t.kind == TY_TUPLE && t.tuple->c_size ? c_size_of(t, &align)
                                                     : value_cap(t);
  } else {
    const CType *ct = ctype_parse(n->name, err, sizeof(err));
    if (!ct) {
      error_at(c, n->span, "%s", err);
      return;
    }
    if (n->kind == N_SIZEOF) {
      value = ct->size;
    } else {
      CField f;
      if (!ctype_field_path(ct, n->sval, &f)) {
        error_at(c, n->span, "'%s' has no field '%s'", n->name, n->sval);
        return;
      }
      value = f.offset;
    }
  }
  n->kind = N_INT;
  n->ival = value;
  n->type = ty_int(8, false);
}

/* &$x: a kernel pointer to the variable's home, typed as what it holds
 * (integers as int64 / uint64, strings as char arrays, structs as
 * themselves). *&$x is $x itself, of any type. */
static void check_address_of(Checker *c, Node *n) {
  Node *var = n->lhs;
  Type t = var->type;
  const CType *ct = NULL;
  char err[120];
  if (var->kind != N_VAR) {
    error_at(c, n->span, "& takes the address of a $variable only");
    return;
  }
  if (var->var) var_holds(var->var, ty_void());   /* written through */
  if (!var->var) return;
  if (t.kind == TY_INT)
    ct = t.is_pointer ? ctype_parse("void *", err, sizeof err)
                      : ctype_parse(t.is_signed ? "int64" : "uint64", err,
                                    sizeof err);
  else if (t.kind == TY_STR)
    ct = ctype_array_of(ctype_parse("char", err, sizeof err), t.size);
  else if (t.kind == TY_CVAL)
    ct = t.ctype;
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
  n->type.ctype = ct;   /* NULL: only *&$x reads it */
  if (t.kind == TY_INT && !t.is_pointer &&
      (t.named || t.time_fmt || t.enum_def || t.is_bool)) {
    Type *keep = malloc(sizeof *keep);
    if (!keep) abort();
    *keep = t;
    n->type.pointee = keep;
  }
}

static void check_unop(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  Type t = n->lhs->type;
  if (t.kind == TY_NONE) return;
  if (n->op == '&') {
    check_address_of(c, n);
    return;
  }
  if (n->op == '*' && n->lhs->kind == N_UNOP && n->lhs->op == '&' &&
      n->lhs->lhs->kind == N_VAR) {
    Node *next = n->next;
    *n = *n->lhs->lhs;   /* *&$x */
    n->next = next;
    return;
  }
  if (n->op == '*') {
    check_deref(c, n);
    return;
  }
  if (t.kind != TY_INT) {
    error_at(c, n->span, "Invalid operand to unary '%s': %s", op_text(n->op),
             TYPE_NAME(t));
    return;
  }
  /* As in bpftrace 0.17: !x is unsigned, of x's width; -x and ~x of an
   * unsigned x keep its type (they wrap at its width: ~(uint8)5 is 250).
   * Of a signed x they are int64, the value's true negation. */
  t = int_operand_type(c, n->lhs);
  int width = t.size == 1 || t.size == 2 || t.size == 4 ? t.size : 8;
  n->type = ty_int(n->op == '!' || !t.is_signed ? width : 8,
                   n->op != '!' && t.is_signed);
}

/* cond ? a : b: both integers (bools stay bools), both strings, both
 * buffers, tuples of one layout, or both calls with no value (the
 * ternary is then a statement). In a ?: b the value a is the condition's. */
static void check_ternary(Checker *c, Node *n) {
  check_expr(c, n->cond);
  if (n->then) check_expr(c, n->then);
  check_expr(c, n->els);
  Type a = n->then ? n->then->type : n->cond->type, b = n->els->type;
  if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE) {
    error_at(c, n->span, "Invalid condition in ternary: %s",
             kind_name(n->cond->type));
    return;
  }
  if (a.kind == TY_NONE || b.kind == TY_NONE) return;
  if (a.kind != TY_INT && a.kind != TY_STR && a.kind != TY_VOID &&
      a.kind != TY_BUF && a.kind != TY_TUPLE) {
    error_at(c, n->span, "Ternary return type unsupported %s", kind_name(a));
  } else if (a.kind != b.kind) {
    error_at(c, n->span, "Ternary operator must return the same type: have "
             "'%s' and '%s'", kind_name(a), kind_name(b));
  } else if (a.kind == TY_INT) {
    n->type = ty_int(8, result_signed(a, b));
    n->type.is_bool = a.is_bool && b.is_bool;
    /* c ? ONE : TWO stays of their enum */
    if (a.enum_def == b.enum_def) n->type.enum_def = a.enum_def;
  } else if (a.kind == TY_TUPLE && !same_layout(a, b)) {
    /* tuples whose strings differ in size: each branch is laid out as
     * the union of the two (the larger string of each element) */
    if (!tuple_union(a, b, &n->type))
      error_at(c, n->span, "Ternary operator must return the same type: "
               "have '%s' and '%s'", TYPE_NAME(a), TYPE_NAME(b));
  } else {
    n->type = a.size >= b.size ? a : b;   /* strings, buffers: the larger */
  }
}

void check_expr(Checker *c, Node *n) {
  switch (n->kind) {
  case N_INT:
    /* a constant a builtin was folded into (true, ncpus) keeps its type */
    if (n->type.kind != TY_INT) n->type = ty_int(8, true);
    break;
  case N_STR:
    /* a string literal must fit the string buffers (formats need not);
     * a positional parameter made into a string (it keeps its name "$1")
     * is cut to size instead */
    if (!n->name && n->slen + 1 > c->strlen)
      error_at(c, n->span, "String is too long (over %d bytes): %s",
               c->strlen, n->sval);
    n->type = ty_str(n->slen + 1);
    break;
  case N_BUILTIN:
    check_builtin(c, n);
    break;
  case N_TYPEOF:
    error_at(c, n->span, "typeof() gives a type, not a value: pass it to a "
             "macro, sizeof() or a let declaration");
    break;
  case N_VAR: {
    if (check_positional(c, n)) break;
    VarSym *v = var_find(c, n);
    if (!v && c->pass == 1) v = var_note_wide(c, n);
    if (v && v->broken && v->type.kind == TY_NONE) return;
    if (!v || v->type.kind == TY_NONE) {
      error_at(c, n->span, "Undefined or undeclared variable: %s", n->name);
      return;
    }
    n->var = v;
    n->type = v->type;
    break;
  }
  case N_MAP:
    check_map_read(c, n);
    break;
  case N_CALL:
    check_call(c, n);
    break;
  case N_BINOP:
    check_binop(c, n);
    break;
  case N_UNOP:
    check_unop(c, n);
    break;
  case N_FIELD:
    check_field(c, n);
    break;
  case N_TERNARY:
    check_ternary(c, n);
    break;
  case N_TUPLE:
    check_tuple(c, n);
    break;
  case N_CAST:
    check_cast(c, n);
    break;
  case N_INDEX:
    check_index(c, n);
    break;
  case N_SIZEOF:
  case N_OFFSETOF:
    check_sizeof(c, n);
    break;
  case N_BLOCK:
    /* { statements; value }: a macro's expansion, or written so */
    check_block(c, n);   /* its value too, in its scope */
    if (!n->lhs) {
      error_at(c, n->span, "this block has no value");
      return;
    }
    n->type = n->lhs->type;
    break;
  case N_INCDEC:
    /* as an expression: x++ yields an integer, or the pointer it holds
     * (moved by whole elements: ($p++)->x walks an array) */
    check_incdec(c, n);
    n->type = n->lhs->type.is_pointer ? ty_stored(n->lhs->type)
                                      : ty_int(8, true);
    n->field_offset = pointer_step(n->lhs->type);
    break;
  default:
    error_at(c, n->span, "this is not an expression");
    break;
  }
}
