/* check_expr: the types of expressions — map reads, tuples, casts and
 * type names, positional parameters, operators, indexes, sizeof — and the
 * dispatch of each kind to its check (fields: check_field.c; words and
 * calls: check_call.c). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/ctype.h"

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
