/* types: the checker's Type values and the names bpftrace users know
 * them by ("int64", "unsigned int8 *", "string[16]", "(int64,string[2])").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/checker.h"
#include "lang/ctype.h"

static int align8(int n) { return (n + 7) & ~7; }

Type ty_int(int size, bool is_signed) {
  Type t = {.kind = TY_INT, .size = size, .is_signed = is_signed};
  return t;
}

Type ty_stored(Type t) {
  if (t.kind == TY_RECORD) t.kind = TY_CVAL;   /* stored as a copy */
  return t.kind == TY_INT ? ty_widened(t) : t;
}

Type ty_str(int size) {
  Type t = {.kind = TY_STR, .size = size};
  return t;
}

Type ty_bool(void) {
  Type t = {.kind = TY_INT, .size = 1, .is_bool = true};
  return t;
}

Type ty_widened(Type t) {
  Type w = ty_int(8, t.is_signed);
  w.is_bool = t.is_bool;
  w.is_pointer = t.is_pointer;
  w.time_fmt = t.time_fmt;
  w.named = t.named;
  w.stack_mode = t.stack_mode;
  w.stack_limit = t.stack_limit;
  w.as = t.as;
  w.ctype = t.ctype;
  w.enum_def = t.enum_def;
  w.pointee = t.pointee;
  w.name_filter = t.name_filter;
  return w;
}

int pointer_step(Type t) {
  if (t.kind != TY_INT || !t.is_pointer) return 1;
  return t.ctype && t.ctype->size > 1 ? t.ctype->size : 1;
}

Type ty_void(void) {
  Type t = {.kind = TY_VOID};
  return t;
}

Type ty_agg(AggKind agg) {
  Type t = {.kind = TY_AGG, .size = 8, .is_signed = agg != AGG_COUNT,
            .agg = agg};
  return t;
}

const char *agg_name(AggKind a) {
  switch (a) {
  case AGG_COUNT: return "count";
  case AGG_SUM: return "sum";
  case AGG_MIN: return "min";
  case AGG_MAX: return "max";
  case AGG_AVG: return "avg";
  case AGG_HIST: return "hist";
  case AGG_LHIST: return "lhist";
  case AGG_STATS: return "stats";
  case AGG_TSERIES: return "tseries";
  default: return "none";
  }
}

/* Appends '*' to a type name: "int8 *", "char **". */
static void add_star(char *buf, size_t len) {
  size_t n = strlen(buf);
  if (n == 0 || n + 3 > len) return;
  if (buf[n - 1] != '*') buf[n++] = ' ';
  buf[n++] = '*';
  buf[n] = 0;
}

/* A C type as bpftrace names it: integers by size ("unsigned int8"),
 * pointers by what they point to ("unsigned int8 *"). */
const char *c_type_name(const CType *ct, char *buf, size_t len) {
  if (ct->kind == C_INT && !ct->is_bool) {
    snprintf(buf, len, "%sint%d", ct->is_signed ? "" : "unsigned ",
             ct->size * 8);
  } else if (ct->kind == C_PTR && ct->target) {
    c_type_name(ct->target, buf, len);
    add_star(buf, len);
  } else {
    ctype_name(ct, buf, len);
  }
  return buf;
}

/* The name bpftrace users know a type by: int64, unsigned int32,
 * string[16], (int64,string[2]). */
bool ty_is_stack(Type t) {
  return t.kind == TY_INT &&
         (t.named == NAMED_KSTACK || t.named == NAMED_USTACK);
}

bool same_stack(Type a, Type b) {
  if (!ty_is_stack(a) || !ty_is_stack(b))
    return ty_is_stack(a) == ty_is_stack(b);
  return a.named == b.named && a.stack_mode == b.stack_mode &&
         a.stack_limit == b.stack_limit;
}

const char *type_name(Type t, char *buf, size_t len) {
  switch (t.kind) {
  case TY_INT:
    if (ty_is_stack(t)) {
      static const char *const modes[] = {"bpftrace", "perf", "raw",
                                          "build_id"};
      snprintf(buf, len, "%s(%s, %d)",
               t.named == NAMED_KSTACK ? "kstack" : "ustack",
               modes[t.stack_mode == STACK_BPFTRACE_LINES ? STACK_BPFTRACE
                     : t.stack_mode == STACK_PERF_INLINED ? STACK_PERF
                                                          : t.stack_mode],
               t.stack_limit);
      break;
    }
    if (t.is_bool) {
      snprintf(buf, len, "bool");
      break;
    }
    if (t.is_pointer && t.ctype) {
      c_type_name(t.ctype, buf, len);
      add_star(buf, len);
      break;
    }
    if (t.enum_def) {
      snprintf(buf, len, "enum %s",
               t.enum_def->name ? t.enum_def->name : "<anonymous>");
      break;
    }
    snprintf(buf, len, "%sint%d", t.is_signed ? "" : "unsigned ",
             t.size * 8);
    break;
  case TY_TUPLE: {
    size_t used = snprintf(buf, len, "(");
    for (int i = 0; i < t.tuple->n && used < len; i++) {
      char elem[120];
      used += snprintf(buf + used, len - used, "%s%s%s%s", i ? "," : "",
                       t.tuple->names ? t.tuple->names[i] : "",
                       t.tuple->names ? "=" : "",
                       type_name(t.tuple->elems[i], elem, sizeof(elem)));
    }
    if (used < len) snprintf(buf + used, len - used, ")");
    break;
  }
  case TY_BUF: snprintf(buf, len, "buffer[%d]", t.size); break;
  case TY_RECORD:
  case TY_CVAL:
    ctype_name(t.ctype, buf, len);
    break;
  case TY_STR: snprintf(buf, len, "string[%d]", t.size); break;
  case TY_AGG: snprintf(buf, len, "%s_t", agg_name(t.agg)); break;
  case TY_ARGS: snprintf(buf, len, "args"); break;
  case TY_VOID: snprintf(buf, len, "void"); break;
  default: snprintf(buf, len, "none"); break;
  }
  return buf;
}

/* The kind of a type as bpftrace's argument messages name it: "integer",
 * "string", "tuple", ... */
const char *kind_name(Type t) {
  switch (t.kind) {
  case TY_INT: return t.is_pointer ? "pointer" : "integer";
  case TY_STR: return "string";
  case TY_AGG: return agg_name(t.agg);
  case TY_ARGS: return "record";
  case TY_TUPLE: return "tuple";
  case TY_BUF: return "buffer";
  case TY_RECORD:
  case TY_CVAL:
    return t.ctype && t.ctype->kind == C_ARRAY ? "array" : "record";
  case TY_VOID: return "void";
  default: return "none";
  }
}

/* The record size a value takes in a printf record or a scratch buffer. */
int value_cap(Type t) {
  switch (t.kind) {
  case TY_STR: return align8(t.size);
  case TY_BUF: return 8 + align8(t.size);
  case TY_TUPLE: return t.tuple->size;
  case TY_RECORD:
  case TY_CVAL: return align8(t.size);
  default: return 8;
  }
}

/* Two C types of one layout: the same type, or arrays of as many
 * elements of such types (an array declared in `let` and the member it
 * is given are made separately). */
static bool same_ctype(const CType *a, const CType *b) {
  if (a == b) return true;
  return a && b && a->kind == C_ARRAY && b->kind == C_ARRAY &&
         a->nelems == b->nelems && same_ctype(a->target, b->target);
}

/* Tuples are compatible when their elements are of the same kinds and
 * sizes (the layouts then agree). */
bool same_layout(Type a, Type b) {
  if (a.kind != b.kind) return false;
  if (a.kind == TY_STR || a.kind == TY_BUF) return a.size == b.size;
  if (a.kind == TY_CVAL) return same_ctype(a.ctype, b.ctype);
  if (a.kind != TY_TUPLE) return same_stack(a, b);  /* stacks: same kind */
  if (a.tuple->n != b.tuple->n) return false;
  if (!a.tuple->names != !b.tuple->names) return false;  /* record, tuple */
  for (int i = 0; i < a.tuple->n; i++) {
    if (!same_layout(a.tuple->elems[i], b.tuple->elems[i])) return false;
    if (a.tuple->names && strcmp(a.tuple->names[i], b.tuple->names[i]))
      return false;
  }
  return true;
}

/* The tuple type that holds values of tuple types a and b, which have the
 * same shape: each string as large as the larger of the two, nested
 * tuples likewise, so that assigning either widens to it (as bpftrace
 * does). False when the shapes differ. */
int tuple_slot(const TupleType *to, const TupleType *from, int i) {
  if (!to->names || !from->names) return i < to->n ? i : -1;
  for (int j = 0; j < to->n; j++)
    if (!strcmp(to->names[j], from->names[i])) return j;
  return -1;
}

bool tuple_union(Type a, Type b, Type *out) {
  if (a.kind != TY_TUPLE || b.kind != TY_TUPLE) return false;
  TupleType *ta = a.tuple, *tb = b.tuple;
  if (ta->n != tb->n || !ta->names != !tb->names) return false;
  /* records: fields match by name (in a's order), tuples by position */
  int *from_b = calloc((size_t)ta->n, sizeof(int));
  if (!from_b) abort();
  for (int i = 0; i < tb->n; i++) {
    int j = tuple_slot(ta, tb, i);
    if (j < 0) {
      free(from_b);
      return false;
    }
    from_b[j] = i;
  }
  TupleType *u = calloc(1, sizeof(*u));
  u->n = ta->n;
  u->names = ta->names;
  u->elems = calloc(u->n, sizeof(Type));
  u->offs = calloc(u->n, sizeof(int));
  for (int i = 0; i < u->n; i++) {
    Type ea = ta->elems[i], eb = tb->elems[from_b[i]];
    if (ea.kind == TY_STR && eb.kind == TY_STR) {
      if (eb.size > ea.size) ea.size = eb.size;
    } else if (ea.kind == TY_TUPLE && eb.kind == TY_TUPLE) {
      if (!tuple_union(ea, eb, &ea)) {
        free(from_b);
        return false;
      }
    } else if (ea.kind != eb.kind || !same_stack(ea, eb) ||
               (ea.kind != TY_INT && !same_layout(ea, eb))) {
      free(from_b);
      return false;
    }
    u->elems[i] = ea;
    u->offs[i] = u->size;
    u->size += value_cap(ea);
  }
  free(from_b);
  *out = a;
  out->tuple = u;
  out->size = u->size;
  return true;
}
