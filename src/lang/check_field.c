/* check_field: the types of fields (N_FIELD): of tracepoint records
 * (args.name), of C structs and unions read through pointers, of tuples
 * and records; `args` as one record; and the loupe type of a C type. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/ctype.h"

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
AddrSpace space_of(Checker *c, Type t) {
  if (t.as) return t.as;
  return c->probe && PROBE_ALL(c->probe, user_space, true) ? AS_USER
                                                          : AS_KERNEL;
}

/* The loupe type of a value of C type ct found in memory of `as`: a
 * pointer found there points into the same space. */
bool type_of_ctype(const CType *ct, AddrSpace as, Type *out) {
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

void check_tuple_field(Checker *c, Node *n) {
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

void check_field(Checker *c, Node *n) {
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
    const TpField *f = tp_field_at(fmt, i);
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
