/* fold: integer expressions whose value is known while generating
 * (literals, variables last assigned a known value, and operators over
 * them) are folded, so unrolled loops over constant indexes cost no
 * arithmetic; what is known of variables is kept across branches. */
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"

bool operands_signed(Node *n) {
  return n->lhs->type.is_signed && n->rhs->type.is_signed;
}

/* a op b with the program's 64-bit semantics; false if it cannot be
 * folded (division by zero is left to the kernel's rules). */
bool apply_op(int op, int64_t a, int64_t b, bool is_signed,
                     int64_t *out) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case '+': *out = (int64_t)(ua + ub); return true;
  case '-': *out = (int64_t)(ua - ub); return true;
  case '*': *out = (int64_t)(ua * ub); return true;
  case '/':
  case '%':
    /* unsigned, as the code generated for them (expr.c) */
    if (b == 0) return false;
    *out = (int64_t)(op == '/' ? ua / ub : ua % ub);
    return true;
  case '&': *out = a & b; return true;
  case '|': *out = a | b; return true;
  case '^': *out = a ^ b; return true;
  case OP_SHL: *out = (int64_t)(ua << (ub & 63)); return true;
  case OP_SHR:
    *out = is_signed ? a >> (ub & 63) : (int64_t)(ua >> (ub & 63));
    return true;
  case OP_EQ: *out = a == b; return true;
  case OP_NE: *out = a != b; return true;
  case '<': *out = is_signed ? a < b : ua < ub; return true;
  case '>': *out = is_signed ? a > b : ua > ub; return true;
  case OP_LE: *out = is_signed ? a <= b : ua <= ub; return true;
  case OP_GE: *out = is_signed ? a >= b : ua >= ub; return true;
  case OP_AND: *out = a && b; return true;
  case OP_OR: *out = a || b; return true;
  }
  return false;
}

int64_t truncate_to(Type t, int64_t v) {
  if (t.size >= 8) return v;
  int bits = t.size * 8;
  uint64_t mask = (1ull << bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (t.is_signed && (u >> (bits - 1))) u |= ~mask;
  return (int64_t)u;
}

/* The value of integer expression n if it is known now. */
bool fold(Gen *g, Node *n, int64_t *v) {
  int64_t a, b;
  switch (n->kind) {
  case N_INT:
    *v = n->ival;
    return true;
  case N_VAR:
    if (n->type.kind != TY_INT || !n->var || !n->var->known) return false;
    *v = n->var->value;
    return true;
  case N_UNOP:
    if (n->op == '*' || n->op == '&' || !fold(g, n->lhs, &a)) return false;
    *v = n->op == '-' ? (int64_t)(0 - (uint64_t)a) : n->op == '~' ? ~a : !a;
    *v = truncate_to(n->type, *v);   /* of an unsigned x, at its width */
    return true;
  case N_BINOP:
    if (n->lhs->type.kind != TY_INT || n->type.is_pointer ||
        !fold(g, n->lhs, &a) ||
        !fold(g, n->rhs, &b))
      return false;
    return apply_op(n->op, a, b, operands_signed(n), v);
  case N_CAST:
    if (n->type.kind != TY_INT || n->type.is_pointer || !fold(g, n->lhs, &a))
      return false;
    *v = n->type.is_bool ? a != 0 : truncate_to(n->type, a);
    return true;
  default:
    return false;
  }
}

bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

bool fold_imm(Gen *g, Node *n, int64_t *v) {
  return fold(g, n, v) && fits32(*v);
}

/* *(u64 *)(base + off) = v, for a known v. */
void emit_store_const(Gen *g, int base, int off, int64_t v) {
  if (fits32(v)) {
    emit(g, I_ST(BPF_DW, base, off, (int32_t)v));
    return;
  }
  emit_imm64(g, BPF_REG_1, v);
  emit(g, I_STX(BPF_DW, base, BPF_REG_1, off));
}

/* Stores integer expression n at base + off. */
void gen_store_int(Gen *g, Node *n, int base, int off) {
  int64_t v;
  if (fold(g, n, &v)) {
    emit_store_const(g, base, off, v);
    return;
  }
  int r = gen_int(g, n);
  emit(g, I_STX(BPF_DW, base, r, off));
  reg_free(g, r);
}

VarState *vars_save(Gen *g) {
  int n = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next) n++;
  VarState *st = calloc(n + 1, sizeof(*st));
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++)
    st[i] = (VarState){v->known, v->value};
  return st;
}

void vars_restore(Gen *g, const VarState *st) {
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++) {
    v->known = st[i].known;
    v->value = st[i].value;
  }
}

/* Keeps only what both paths agree on. */
void vars_merge(Gen *g, const VarState *other) {
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++)
    if (!other[i].known || !v->known || other[i].value != v->value)
      v->known = false;
}

static AstStep forget_assigned(Node *n, void *unused) {
  if ((n->kind == N_ASSIGN || n->kind == N_INCDEC) && n->lhs &&
      n->lhs->kind == N_VAR && n->lhs->var)
    n->lhs->var->known = false;
  return AST_ENTER;
}

/* Forgets what is known of every variable that n assigns. */
void vars_forget_assigned(Node *n) {
  ast_walk(n, forget_assigned, NULL);
}
