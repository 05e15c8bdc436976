/* enums: enumerators as constants. A script's enum definitions are
 * checked here (one name, one meaning), and a bare identifier that names
 * an enumerator — the script's first, then the kernel's from BTF — becomes
 * an integer constant of that enum's type, which prints as the
 * enumerator's name. */
#include <stdio.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/ctype.h"

/* The script's enumerator called `name`, and its enum in *def. */
static const Enumerator *script_enumerator(const Script *s, const char *name,
                                           const EnumDef **def) {
  for (const EnumDef *d = s->enums; d; d = d->next)
    for (const Enumerator *e = d->items; e; e = e->next)
      if (!strcmp(e->name, name)) {
        *def = d;
        return e;
      }
  return NULL;
}

/* "enum Foo", or "an anonymous enum (line 3)". */
static const char *enum_words(const EnumDef *d, char *buf, size_t len) {
  if (d->name)
    snprintf(buf, len, "enum %s", d->name);
  else
    snprintf(buf, len, "the anonymous enum of line %d", d->span.line);
  return buf;
}

/* Whether the script's enumerator `name` comes before `current`, whose
 * value is being worked out; its value then is in *v. */
static bool earlier_enumerator(const Script *s, const char *name,
                               const Enumerator *current, int64_t *v) {
  for (const EnumDef *d = s->enums; d; d = d->next)
    for (const Enumerator *e = d->items; e; e = e->next) {
      if (e == current) return false;
      if (!strcmp(e->name, name)) {
        *v = e->value;
        return true;
      }
    }
  return false;
}

/* a op b on 64-bit integers, wrapping as the BPF code would; false for a
 * division by zero or INT64_MIN / -1. */
static bool fold_binary(int op, int64_t a, int64_t b, int64_t *v) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case '+': *v = (int64_t)(ua + ub); return true;
  case '-': *v = (int64_t)(ua - ub); return true;
  case '*': *v = (int64_t)(ua * ub); return true;
  case '&': *v = a & b; return true;
  case '|': *v = a | b; return true;
  case '^': *v = a ^ b; return true;
  case OP_SHL: *v = ub < 64 ? (int64_t)(ua << ub) : 0; return true;
  case OP_SHR: *v = ub < 64 ? (int64_t)(ua >> ub) : 0; return true;
  case '<': *v = a < b; return true;
  case '>': *v = a > b; return true;
  case OP_LE: *v = a <= b; return true;
  case OP_GE: *v = a >= b; return true;
  case OP_EQ: *v = a == b; return true;
  case OP_NE: *v = a != b; return true;
  case OP_AND: *v = a && b; return true;
  case OP_OR: *v = a || b; return true;
  case '/':
  case '%':
    if (b == 0 || (a == INT64_MIN && b == -1)) return false;
    *v = op == '/' ? a / b : a % b;
    return true;
  default: return false;
  }
}

/* The value of an enumerator's expression: integer literals, earlier
 * enumerators, the kernel's, and integer operators. Reports and returns
 * false if it is not such a constant. */
static bool const_value(const Script *s, const Enumerator *current, Node *n,
                        int64_t *v, Diag *d) {
  int64_t a, b;
  switch (n->kind) {
  case N_INT:
    *v = n->ival;
    return true;
  case N_BUILTIN:
    if (earlier_enumerator(s, n->name, current, v) ||
        ctype_enum_value(n->name, v, NULL))
      return true;
    diag_error(d, n->span, "'%s' is not an enumerator defined before '%s'",
               n->name, current->name);
    return false;
  case N_UNOP:
    if (n->op == '*') break;
    if (!const_value(s, current, n->lhs, &a, d)) return false;
    *v = n->op == '-' ? (int64_t)(0 - (uint64_t)a) : n->op == '~' ? ~a : !a;
    return true;
  case N_BINOP:
    if (!const_value(s, current, n->lhs, &a, d) ||
        !const_value(s, current, n->rhs, &b, d))
      return false;
    if (fold_binary(n->op, a, b, v)) return true;
    diag_error(d, n->span, "%s in the value of '%s'",
               b == 0 ? "division by zero" : "an overflowing division",
               current->name);
    return false;
  default:
    break;
  }
  diag_error(d, n->span, "the value of '%s' must be a constant integer "
             "expression", current->name);
  return false;
}

/* Works out each enumerator's value: its expression's, or one more than
 * the one before it, the first 0. */
static void enum_values(Script *s, EnumDef *def, Diag *d) {
  const Enumerator *prev = NULL;
  for (Enumerator *e = def->items; e; prev = e, e = e->next) {
    if (e->expr) {
      if (!const_value(s, e, e->expr, &e->value, d)) e->value = 0;
    } else if (prev && prev->value == INT64_MAX) {
      diag_error(d, e->span, "'%s' would be %s + 1, which is too large",
                 e->name, prev->name);
    } else {
      e->value = prev ? prev->value + 1 : 0;
    }
  }
}

int check_script_enums(Script *s, Diag *d) {
  int errors_before = d->errors;
  for (EnumDef *def = s->enums; def; def = def->next) {
    enum_values(s, def, d);
    for (const Enumerator *e = def->items; e; e = e->next) {
      const EnumDef *first_def = NULL;
      const Enumerator *first = script_enumerator(s, e->name, &first_def);
      if (first != e) {
        char where[120];
        diag_error(d, e->span, "Redefinition of enumerator '%s' (it is "
                   "already in %s)", e->name,
                   enum_words(first_def, where, sizeof where));
      } else if (builtin_find(e->name, BI_WORD)) {
        diag_error(d, e->span, "enumerator '%s' has the name of a builtin",
                   e->name);
      }
    }
  }
  return d->errors - errors_before;
}

bool enum_constant(Checker *c, Node *n) {
  const EnumDef *def = NULL;
  int64_t v;
  const Enumerator *e = script_enumerator(c->script, n->name, &def);
  if (e) {
    v = e->value;
  } else {
    const CType *ct = NULL;
    if (!ctype_enum_value(n->name, &v, &ct)) return false;
    def = ct ? ct->enumdef : NULL;
  }
  n->kind = N_INT;
  n->ival = v;
  n->type = ty_int(8, true);
  n->type.enum_def = def;
  return true;
}
