/* expr: expressions — integers into registers, strings and tuples into
 * buffers, conditions into jumps. */
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "codegen/gen.h"
#include "probes/syscalls.h"

/* The ALU opcode of an arithmetic operator, or -1 for comparisons. */
int alu_code(int op, bool is_signed) {
  switch (op) {
  case '+': return BPF_ADD;
  case '-': return BPF_SUB;
  case '*': return BPF_MUL;
  case '/': return BPF_DIV;
  case '%': return BPF_MOD;
  case '&': return BPF_AND;
  case '|': return BPF_OR;
  case '^': return BPF_XOR;
  case OP_SHL: return BPF_LSH;
  case OP_SHR: return is_signed ? BPF_ARSH : BPF_RSH;
  default: return -1;
  }
}

int jmp_code(int op, bool is_signed) {
  switch (op) {
  case OP_EQ: return BPF_JEQ;
  case OP_NE: return BPF_JNE;
  case '<': return is_signed ? BPF_JSLT : BPF_JLT;
  case '>': return is_signed ? BPF_JSGT : BPF_JGT;
  case OP_LE: return is_signed ? BPF_JSLE : BPF_JLE;
  case OP_GE: return is_signed ? BPF_JSGE : BPF_JGE;
  default: return -1;
  }
}

/* Emits `dst = dst op src` (src a register, or the immediate imm when
 * src < 0) for any integer operator but && and ||. Division and modulo
 * are unsigned, as BPF has them before cpu v4 (and as bpftrace does). */
void emit_op(Gen *g, int op, int dst, int src, int32_t imm,
                    bool is_signed) {
  int alu = alu_code(op, is_signed);
  bool use_imm = src < 0;
  if (alu >= 0) {
    /* a constant shift by 64 or more (or less than 0) is one the verifier
     * refuses; count modulo 64, as constant folding and a shift by a
     * register do */
    if (use_imm && (alu == BPF_LSH || alu == BPF_RSH || alu == BPF_ARSH))
      imm &= 63;
    struct bpf_insn i = use_imm ? I_ALU64_IMM(alu, dst, imm)
                                : I_ALU64_REG(alu, dst, src);
    emit(g, i);
    return;
  }
  /* dst = (dst op src) ? 1 : 0. A sign test is the sign bit, with no
   * branch (as clang gives it): the verifier then follows one path with
   * dst in [0, 1], not two with dst known, which a later branch on dst
   * (`$n += x >= 0; ... if ($n == 10)`) would make it keep apart. */
  bool sign_test = use_imm && is_signed &&
                   ((imm == 0 && (op == '<' || op == OP_GE)) ||
                    (imm == -1 && (op == '>' || op == OP_LE)));
  if (sign_test) {
    if (op == OP_GE || op == '>') emit(g, I_ALU64_IMM(BPF_XOR, dst, -1));
    emit(g, I_ALU64_IMM(BPF_RSH, dst, 63));
    return;
  }
  int jmp = jmp_code(op, is_signed);
  emit(g, use_imm ? I_JMP_IMM(jmp, dst, imm, 2) : I_JMP_REG(jmp, dst, src, 2));
  emit(g, I_MOV64_IMM(dst, 0));
  emit(g, I_JA(1));
  emit(g, I_MOV64_IMM(dst, 1));
}

static void gen_buf_here(Gen *g, Node *n, int dst, int cap);
static void gen_string_cast(Gen *g, Node *n, int dst, int cap);

/* Generates string expression n into the scratch buffer at dst (capacity
 * cap >= the string's capacity), zero-padded; its instructions are n's
 * (line info, -k reports). */
void gen_buf(Gen *g, Node *n, int dst, int cap) {
  Span saved = g->span;
  if (n->span.line) g->span = n->span;
  gen_buf_here(g, n, dst, cap);
  g->span = saved;
}

static void gen_buf_here(Gen *g, Node *n, int dst, int cap) {
  if (n->type.kind == TY_RECORD && in_memory(n)) {
    gen_mem_copy(g, n, dst, cap);   /* a struct or array, copied */
    return;
  }
  switch (n->kind) {
  case N_STR:
    emit_literal(g, n->sval, n->slen, dst, cap);
    return;
  case N_BUILTIN:
  case N_CALL:
    if (n->builtin && n->builtin->emit_buf)
      n->builtin->emit_buf(g, n, dst, cap);
    else
      fail(g, n->span, "loupe cannot generate code for '%s' yet", n->name);
    return;
  case N_FIELD:
    if (n->lhs->type.kind == TY_TUPLE)
      gen_tuple_field_buf(g, n, dst, cap);
    else if (in_memory(n))
      gen_mem_str(g, n, dst, cap);
    else
      gen_field_str(g, n, dst, cap);
    return;
  case N_INDEX:
  case N_UNOP:
    gen_mem_str(g, n, dst, cap);
    return;
  case N_TUPLE:
    gen_tuple(g, n, dst, cap);
    return;
  case N_CAST:   /* to an integer array: the operand's bytes */
    if (n->type.kind == TY_STR) {
      gen_string_cast(g, n, dst, cap);
    } else if (n->lhs->type.kind == TY_INT) {
      int r = gen_int(g, n->lhs);
      if (n->type.size < cap) emit_zero(g, dst, cap);
      emit(g, I_STX(BPF_DW, SCRATCH, r, dst));
      reg_free(g, r);
    } else {
      gen_buf(g, n->lhs, dst, cap);
    }
    return;
  case N_VAR:
    emit_copy(g, n->var->stack_off, dst, value_cap(n->var->type), cap);
    return;
  case N_MAP:
    gen_map_str(g, n, dst, cap);
    return;
  case N_BLOCK:
    /* { statements; value }: what follows an exit() in it is removed */
    gen_block(g, n);
    gen_buf(g, n->lhs, dst, cap);
    return;
  case N_TERNARY: {
    Jumps to_else = {0};
    gen_cond(g, n->cond, false, &to_else);
    /* tuples: each branch in the ternary's layout (check_ternary) */
    if (n->type.kind == TY_TUPLE)
      gen_buf_as(g, n->then, dst, n->type);
    else
      gen_buf(g, n->then, dst, cap);
    int done = emit_jump(g, I_JA(0));
    jumps_patch_here(g, &to_else);
    if (n->type.kind == TY_TUPLE)
      gen_buf_as(g, n->els, dst, n->type);
    else
      gen_buf(g, n->els, dst, cap);
    patch_here(g, done);
    vars_forget_assigned(n->then);
    vars_forget_assigned(n->els);
    return;
  }
  default:
    fail(g, n->span, "%s", "loupe cannot generate this string expression yet");
  }
}

/* Whether evaluating n may do more than read (ast_walk's visitor; ctx
 * unused): an assignment, ++ or --, a block of statements, a builtin with
 * effects (Builtin.effects, or one that is a statement), a function
 * loupe does not know, or a division that warns of a zero divisor (a
 * record of its own). */
static AstStep find_effects(Node *n, void *ctx) {
  switch (n->kind) {
  case N_INT: case N_STR: case N_VAR: case N_MAP: case N_UNOP:
  case N_FIELD: case N_TERNARY: case N_INDEX: case N_CAST: case N_TUPLE:
  case N_SIZEOF: case N_OFFSETOF: case N_TYPEOF:
    return AST_ENTER;
  case N_BINOP:
    return (n->op == '/' || n->op == '%') && n->ival ? AST_STOP : AST_ENTER;
  case N_BUILTIN:
  case N_CALL:
    return !n->builtin || n->builtin->effects || n->builtin->emit_stmt
               ? AST_STOP : AST_ENTER;
  default:
    return AST_STOP;
  }
}

bool expr_has_effects(Node *n) {
  return find_effects(n, NULL) == AST_STOP ||
         ast_walk_children(n, find_effects, NULL);
}

/* Whether integer n is a field of the context, one load from it (a
 * tracepoint's args->x: gen_field_int), which a record filled in place
 * reads before its reservation, while r1 may still hold the context. */
bool gen_is_ctx_field(Gen *g, Node *n) {
  return n->kind == N_FIELD && n->type.kind == TY_INT &&
         n->lhs->type.kind != TY_TUPLE && !in_memory(n) &&
         !g->p->syscall_group && target_field(g, n);
}

/* Whether gen_buf_at can write value n in place: a variable (its buffer
 * copied whole, whatever it holds), a string literal, a tracepoint's
 * string field, or a builtin's string that it can (Builtin.emit_buf_at:
 * comm, str() of an address). Other buffers (tuples, a map's value, a
 * ternary, ntop(), ...) are built on the stack first: emit_record. */
bool gen_buf_at_ok(Gen *g, Node *n) {
  if (n->kind == N_VAR) return true;   /* a copy of its buffer, whole */
  if (n->type.kind != TY_STR) return false;
  switch (n->kind) {
  case N_STR:
    return true;
  case N_FIELD: {
    if (n->lhs->type.kind == TY_TUPLE || in_memory(n) ||
        g->p->syscall_group)
      return false;
    const TpField *f = target_field(g, n);
    return f && !(f->is_array && !f->is_string);
  }
  case N_BUILTIN:
  case N_CALL:
    return n->builtin && n->builtin->emit_buf_at &&
           (!n->builtin->buf_at_ok || n->builtin->buf_at_ok(n));
  default:
    return false;
  }
}

/* Value n straight into memory at register base + off, `cap` bytes: a
 * record reserved in the ring buffer, whose reader reads a string up to
 * its NUL, so what lies after the NUL is not written. For the values
 * gen_buf_at_ok accepts. */
void gen_buf_at(Gen *g, Node *n, int base, int off, int cap) {
  Span saved = g->span;
  if (n->span.line) g->span = n->span;
  if (n->kind == N_VAR) {
    int len = value_cap(n->var->type);
    emit_copy_to(g, SCRATCH, n->var->stack_off, base, off,
                 len < cap ? len : cap);
  } else if (n->kind == N_STR) {
    /* the words up to its NUL */
    int len = (n->slen + 1 + 3) & ~3;
    emit_literal_at(g, n->sval, n->slen, base, off, len < cap ? len : cap);
  }
  else if (n->kind == N_FIELD)
    gen_field_str_at(g, n, base, off, cap);
  else
    n->builtin->emit_buf_at(g, n, base, off, cap);
  g->span = saved;
}

/* The scratch offset of a string value: a variable's own buffer, or a new
 * temporary holding it. */
int buf_ref(Gen *g, Node *n) {
  if (n->kind == N_VAR) return n->var->stack_off;
  int at = scratch_alloc(g, value_cap(n->type));
  gen_buf(g, n, at, value_cap(n->type));
  return at;
}

/* a == b / a != b on strings: whole words up to the shorter capacity. */
int gen_str_compare(Gen *g, Node *n) {
  int a = buf_ref(g, n->lhs);
  int b = buf_ref(g, n->rhs);
  int len = value_cap(n->lhs->type) < value_cap(n->rhs->type)
                ? value_cap(n->lhs->type) : value_cap(n->rhs->type);
  int r = reg_alloc(g);
  int nwords = len / 8;
  bool eq = n->op == OP_EQ;
  if (len > BIG_BUFFER) {
    /* without a branch a word, which the verifier could not follow for
     * thousands of words: r = OR of a[i] ^ b[i], then tested once */
    emit(g, I_MOV64_IMM(r, 0));
    for (int i = 0; i < nwords; i++) {
      emit(g, I_LDX(BPF_DW, BPF_REG_2, SCRATCH, a + i * 8));
      emit(g, I_LDX(BPF_DW, BPF_REG_3, SCRATCH, b + i * 8));
      emit(g, I_ALU64_REG(BPF_XOR, BPF_REG_2, BPF_REG_3));
      emit(g, I_ALU64_REG(BPF_OR, r, BPF_REG_2));
    }
    emit(g, I_JMP_IMM(BPF_JEQ, r, 0, 2));
    emit(g, I_MOV64_IMM(r, eq ? 0 : 1));
    emit(g, I_JA(1));
    emit(g, I_MOV64_IMM(r, eq ? 1 : 0));
    return r;
  }
  int *differ = calloc(nwords, sizeof(int));
  for (int i = 0; i < nwords; i++) {
    emit(g, I_LDX(BPF_DW, BPF_REG_2, SCRATCH, a + i * 8));
    emit(g, I_LDX(BPF_DW, BPF_REG_3, SCRATCH, b + i * 8));
    differ[i] = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_2, BPF_REG_3, 0));
  }
  emit(g, I_MOV64_IMM(r, eq ? 1 : 0));
  int done = emit_jump(g, I_JA(0));
  for (int i = 0; i < nwords; i++) patch_here(g, differ[i]);
  emit(g, I_MOV64_IMM(r, eq ? 0 : 1));
  patch_here(g, done);
  free(differ);
  return r;
}

/* (a, b, ...) into dst, each element at its offset in the tuple's layout. */
void gen_tuple(Gen *g, Node *n, int dst, int cap) {
  TupleType *t = n->type.tuple;
  int i = 0;
  for (Node *e = n->args; e; e = e->next, i++) {
    int at = dst + t->offs[i];
    if (e->type.kind == TY_INT) {
      gen_store_int(g, e, SCRATCH, at);
    } else {
      gen_buf(g, e, at, value_cap(t->elems[i]));
    }
  }
  if (cap > t->size) {
    for (int off = t->size; off < cap; off += 8)
      emit(g, I_ST(BPF_DW, SCRATCH, dst + off, 0));
  }
}

/* A tuple of layout `from` at src copied into dst with layout `to`, its
 * widened form: each string moved to its place there, zero-padded. */
void convert_tuple(Gen *g, int src, Type from, int dst, Type to) {
  TupleType *f = from.tuple, *t = to.tuple;
  for (int i = 0; i < f->n; i++) {
    int j = tuple_slot(t, f, i);   /* a record's fields go by name */
    if (j < 0) continue;
    if (f->elems[i].kind == TY_TUPLE)
      convert_tuple(g, src + f->offs[i], f->elems[i], dst + t->offs[j],
                    t->elems[j]);
    else
      emit_copy(g, src + f->offs[i], dst + t->offs[j],
                value_cap(f->elems[i]), value_cap(t->elems[j]));
  }
}

/* Value n into dst laid out as `want`: its own type, or for a tuple the
 * wider tuple type a variable, map value or key holds (tuple_union). */
void gen_buf_as(Gen *g, Node *n, int dst, Type want) {
  int cap = value_cap(want);
  if (n->type.kind != TY_TUPLE || want.kind != TY_TUPLE ||
      same_layout(n->type, want)) {
    gen_buf(g, n, dst, cap);
    return;
  }
  if (n->kind == N_TUPLE) {
    TupleType *t = want.tuple;
    int i = 0;
    for (Node *e = n->args; e; e = e->next, i++) {
      int j = tuple_slot(t, n->type.tuple, i);   /* records: by name */
      if (j < 0) continue;
      if (e->type.kind == TY_INT)
        gen_store_int(g, e, SCRATCH, dst + t->offs[j]);
      else
        gen_buf_as(g, e, dst + t->offs[j], t->elems[j]);
    }
    return;
  }
  int tmp = scratch_alloc(g, value_cap(n->type));
  gen_buf(g, n, tmp, value_cap(n->type));
  convert_tuple(g, tmp, n->type, dst, want);
}

/* (string[N])s: s, cut to its first N - 1 bytes and a NUL when it may be
 * longer (made whole in a buffer of its own first: a helper such as str()
 * writes all of its size), zero-filled past N up to cap. */
static void gen_string_cast(Gen *g, Node *n, int dst, int cap) {
  int size = n->type.size, from = value_cap(n->lhs->type);
  if (n->lhs->type.size <= size) {
    gen_buf(g, n->lhs, dst, cap);   /* it fits: gen_buf pads it */
    return;
  }
  int tmp = scratch_alloc(g, from);
  gen_buf(g, n->lhs, tmp, from);
  int keep = value_cap(n->type) < cap ? value_cap(n->type) : cap;
  emit_copy(g, tmp, dst, keep, cap);
  for (int i = size - 1; i < keep; i++)
    emit(g, I_ST(BPF_B, SCRATCH, dst + i, 0));
}

/* $t.N for a string element: copied out of the tuple. */
void gen_tuple_field_buf(Gen *g, Node *n, int dst, int cap) {
  int src = buf_ref(g, n->lhs) + n->lhs->type.tuple->offs[n->ival];
  emit_copy(g, src, dst, value_cap(n->type), cap);
}

/* && and ||, short-circuit, giving 0 or 1. */
int gen_logical(Gen *g, Node *n) {
  Jumps is_false = {0};
  gen_cond(g, n, false, &is_false);
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 1));
  emit(g, I_JA(1));
  jumps_patch_here(g, &is_false);
  emit(g, I_MOV64_IMM(r, 0));
  return r;
}

static void gen_checked_division(Gen *g, Node *n, int ar, int b);

int gen_binop(Gen *g, Node *n) {
  if (n->op == OP_AND || n->op == OP_OR) return gen_logical(g, n);
  if (n->lhs->type.kind == TY_STR || is_buffer(n->lhs->type))
    return gen_str_compare(g, n);
  bool is_signed = operands_signed(n);
  int a = gen_int(g, n->lhs);
  int64_t k;
  if (n->type.is_pointer && n->field_offset > 1) {
    /* pointer arithmetic: the offset counts elements */
    /* the machine's multiplication: wraps, as the BPF_MUL below does */
    int64_t bytes = 0;
    if (fold(g, n->rhs, &k))
      bytes = (int64_t)((uint64_t)k * (uint64_t)n->field_offset);
    if (fold(g, n->rhs, &k) && fits32(bytes)) {
      emit_op(g, n->op, a, -1, (int32_t)bytes, false);
      return a;
    }
    Held h = hold(g, a);
    int b = gen_int(g, n->rhs);
    emit(g, I_ALU64_IMM(BPF_MUL, b, n->field_offset));
    int ar = held_reg(g, h, BPF_REG_0);
    emit_op(g, n->op, ar, b, 0, false);
    if (ar == BPF_REG_0) {
      emit(g, I_MOV64_REG(b, BPF_REG_0));
      return b;
    }
    reg_free(g, b);
    return ar;
  }
  if (fold_imm(g, n->rhs, &k) && !(k == 0 && (n->op == '/' ||
                                               n->op == '%'))) {
    /* a constant right operand: the immediate form, no register */
    emit_op(g, n->op, a, -1, (int32_t)k, is_signed);
    return a;
  }
  Held h = hold(g, a);
  int b = gen_int(g, n->rhs);
  int ar = held_reg(g, h, BPF_REG_0);
  if (n->op == '/' || n->op == '%')
    gen_checked_division(g, n, ar, b);
  else
    emit_op(g, n->op, ar, b, 0, is_signed);
  if (ar == BPF_REG_0) {
    emit(g, I_MOV64_REG(b, BPF_REG_0));
    return b;
  }
  reg_free(g, b);
  return ar;
}

/* ar = ar / b (or %): 1 when b is 0, with a warning record when the
 * checker asked for one (n->ival). The record's helper call may clobber
 * ar if it is r0, so ar is set after it. */
static void gen_checked_division(Gen *g, Node *n, int ar, int b) {
  int zero = emit_jump(g, I_JMP_IMM(BPF_JEQ, b, 0, 0));
  emit_op(g, n->op, ar, b, 0, false);
  int done = emit_jump(g, I_JA(0));
  patch_here(g, zero);
  if (n->ival) emit_event(g, EV_WARNF, (uint32_t)n->printf_id);
  emit(g, I_MOV64_IMM(ar, 1));
  patch_here(g, done);
}

int gen_unop(Gen *g, Node *n) {
  if (n->op == '*') return gen_mem_int(g, n);
  if (n->op == '&') {   /* &$x: where the variable lives */
    VarSym *v = n->lhs->var;
    int r = reg_alloc(g);
    emit(g, I_MOV64_REG(r, is_buffer(v->type) ? SCRATCH : BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, r, v->stack_off));
    return r;
  }
  int r = gen_int(g, n->lhs);
  switch (n->op) {   /* of an unsigned x, -x and ~x wrap at its width */
  case '-': emit(g, I_NEG64(r)); emit_truncate(g, r, n->type); break;
  case '~':
    emit(g, I_ALU64_IMM(BPF_XOR, r, -1));
    emit_truncate(g, r, n->type);
    break;
  case '!':
    emit(g, I_JMP_IMM(BPF_JEQ, r, 0, 2));
    emit(g, I_MOV64_IMM(r, 0));
    emit(g, I_JA(1));
    emit(g, I_MOV64_IMM(r, 1));
    break;
  }
  return r;
}

/* The jump opcode that is taken when `op` is false. */
int inverse_jump(int op, bool is_signed) {
  switch (op) {
  case OP_EQ: return BPF_JNE;
  case OP_NE: return BPF_JEQ;
  case '<': return is_signed ? BPF_JSGE : BPF_JGE;
  case '>': return is_signed ? BPF_JSLE : BPF_JLE;
  case OP_LE: return is_signed ? BPF_JSGT : BPF_JGT;
  case OP_GE: return is_signed ? BPF_JSLT : BPF_JLT;
  default: return -1;
  }
}

/* Emits jumps taken when cond is `when` (true or false), adding them to
 * out; control falls through otherwise. Comparisons become one conditional
 * jump each, and && || ! become jumps too, never 0/1 values. */
void gen_cond(Gen *g, Node *cond, bool when, Jumps *out) {
  Span saved = g->span;
  if (cond->span.line) g->span = cond->span;
  int64_t k;
  bool is_logic = cond->kind == N_BINOP &&
                  (cond->op == OP_AND || cond->op == OP_OR);
  if (fold(g, cond, &k)) {
    if ((k != 0) == when) jumps_add(out, emit_jump(g, I_JA(0)));
  } else if (is_logic) {
    /* a && b is false when either is; a || b is true when either is */
    bool shortcut = cond->op == OP_AND ? false : true;
    if (when == shortcut) {
      gen_cond(g, cond->lhs, when, out);
      gen_cond(g, cond->rhs, when, out);
    } else {
      Jumps decided = {0};
      gen_cond(g, cond->lhs, shortcut, &decided);
      gen_cond(g, cond->rhs, when, out);
      jumps_patch_here(g, &decided);
    }
    vars_forget_assigned(cond->rhs);   /* it ran only on some paths */
  } else if (cond->kind == N_UNOP && cond->op == '!') {
    gen_cond(g, cond->lhs, !when, out);
  } else if (cond->kind == N_BINOP && cond->lhs->type.kind == TY_INT &&
             jmp_code(cond->op, false) >= 0) {
    bool is_signed = operands_signed(cond);
    Node *l = cond->lhs, *r = cond->rhs;
    int op = cond->op;
    if (fold_imm(g, l, &k) && !fold(g, r, &k)) {
      /* 3 < x: test x > 3, with the constant as the immediate */
      Node *t = l;
      l = r;
      r = t;
      op = op == '<' ? '>' : op == '>' ? '<' : op == OP_LE ? OP_GE
           : op == OP_GE ? OP_LE : op;
    }
    int jmp = when ? jmp_code(op, is_signed) : inverse_jump(op, is_signed);
    int a = gen_int(g, l);
    if (fold_imm(g, r, &k)) {
      jumps_add(out, emit_jump(g, I_JMP_IMM(jmp, a, (int32_t)k, 0)));
      reg_free(g, a);
    } else {
      Held h = hold(g, a);
      int b = gen_int(g, r);
      a = held_reg(g, h, BPF_REG_0);
      jumps_add(out, emit_jump(g, I_JMP_REG(jmp, a, b, 0)));
      reg_free(g, a);
      reg_free(g, b);
    }
  } else {
    int r = gen_int(g, cond);
    jumps_add(out, emit_jump(g, I_JMP_IMM(when ? BPF_JNE : BPF_JEQ, r, 0, 0)));
    reg_free(g, r);
  }
  g->span = saved;
}

int gen_ternary_int(Gen *g, Node *n) {
  Jumps to_else = {0};
  int t, done;
  if (n->then) {
    gen_cond(g, n->cond, false, &to_else);
    t = gen_int(g, n->then);
    done = emit_jump(g, I_JA(0));
    jumps_patch_here(g, &to_else);
  } else {   /* a ?: b */
    t = gen_int(g, n->cond);
    done = emit_jump(g, I_JMP_IMM(BPF_JNE, t, 0, 0));
  }
  reg_free(g, t);
  int e = gen_int(g, n->els);
  if (e != t) {
    emit(g, I_MOV64_REG(t, e));
    reg_free(g, e);
  }
  g->reg_used[t] = true;
  patch_here(g, done);
  /* an x++ in one branch happened only on that path */
  vars_forget_assigned(n->then);
  vars_forget_assigned(n->els);
  return t;
}

/* s[i] of a string value: byte i, sign-extended; 0 when i is outside
 * the buffer (the verifier wants the read inside it). */
static int gen_str_index(Gen *g, Node *n) {
  int off = buf_ref(g, n->lhs), size = n->lhs->type.size;
  int64_t k;
  int r;
  if (fold(g, n->rhs, &k)) {
    r = reg_alloc(g);
    if (k < 0 || k >= size) {
      emit(g, I_MOV64_IMM(r, 0));
      return r;
    }
    emit(g, I_LDX(BPF_B, r, SCRATCH, off + (int)k));
  } else {
    r = gen_int(g, n->rhs);
    int outside = emit_jump(g, I_JMP_IMM(BPF_JGE, r, size, 0));
    emit(g, I_ALU64_REG(BPF_ADD, r, SCRATCH));
    emit(g, I_LDX(BPF_B, r, r, off));
    int done = emit_jump(g, I_JA(0));
    patch_here(g, outside);
    emit(g, I_MOV64_IMM(r, 0));
    patch_here(g, done);
  }
  emit(g, I_ALU64_IMM(BPF_LSH, r, 56));
  emit(g, I_ALU64_IMM(BPF_ARSH, r, 56));
  return r;
}

/* $x++ / ++$x and the map forms. As a statement (value unused) the old
 * value is not kept. A pointer moves by whole elements (field_offset). */
int gen_incdec(Gen *g, Node *n, bool as_stmt) {
  int64_t step = n->field_offset > 1 ? n->field_offset : 1;
  int64_t delta = n->op == OP_INC ? step : -step;
  bool prefix = n->ival != 0 || as_stmt;
  if (n->lhs->kind == N_MAP)
    return gen_map_update_int(g, n->lhs, '+', NULL, delta, !prefix);
  VarSym *v = n->lhs->var;
  int slot = v->stack_off;
  int r = reg_alloc(g);
  if (v->known && v->decl.kind == TY_NONE) {
    int64_t old = v->value;
    v->value = (int64_t)((uint64_t)old + (uint64_t)delta);
    emit_store_const(g, BPF_REG_10, slot, v->value);
    emit_imm64(g, r, prefix ? v->value : old);
    return r;
  }
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
  emit(g, I_ALU64_IMM(BPF_ADD, r, (int32_t)delta));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, slot));
  if (v->decl.kind != TY_NONE) {
    /* a declared width: the stored value wraps; so does what x++ gives */
    gen_wrap_var(g, v);
    if (prefix) emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
    else emit(g, I_ALU64_IMM(BPF_SUB, r, (int32_t)delta));
    v->known = false;
    return r;
  }
  if (!prefix) emit(g, I_ALU64_IMM(BPF_SUB, r, (int32_t)delta));
  return r;
}

/* r = r truncated to integer type t, then extended by its sign. */
void emit_truncate(Gen *g, int r, Type t) {
  if (t.size == 4 && !t.is_signed) {
    emit(g, I_MOV32_REG(r, r));
  } else if (t.size < 8 && !t.is_signed) {
    emit(g, I_ALU64_IMM(BPF_AND, r, (int32_t)((1u << (t.size * 8)) - 1)));
  } else if (t.size < 8) {
    emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - t.size * 8));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 64 - t.size * 8));
  }
}

/* (uint8)x ... (int64)x, (bool)x: truncate, then extend by the new type;
 * (uint32)a of an integer array: its bytes (read from memory first when
 * the array is a field there), loaded at the type's width. */
int gen_cast(Gen *g, Node *n) {
  if (n->lhs->type.kind == TY_CVAL || n->lhs->type.kind == TY_RECORD) {
    static const int widths[] = {[1] = BPF_B, [2] = BPF_H, [4] = BPF_W,
                                 [8] = BPF_DW};
    int at = buf_ref(g, n->lhs);
    int r = reg_alloc(g);
    emit(g, I_LDX(widths[n->type.size], r, SCRATCH, at));
    if (n->type.is_signed) emit_truncate(g, r, n->type);
    return r;
  }
  int r = gen_int(g, n->lhs);
  if (n->type.is_bool) {
    emit(g, I_JMP_IMM(BPF_JEQ, r, 0, 1));
    emit(g, I_MOV64_IMM(r, 1));
  } else {
    emit_truncate(g, r, n->type);
  }
  return r;
}

int gen_call_int(Gen *g, Node *n) {
  if (n->builtin && n->builtin->emit_int) return n->builtin->emit_int(g, n);
  fail(g, n->span, "loupe cannot use the value of %s() yet", n->name);
  return reg_alloc(g);
}

/* $t.N for an integer element. */
int gen_tuple_field_int(Gen *g, Node *n) {
  int src = buf_ref(g, n->lhs) + n->lhs->type.tuple->offs[n->ival];
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, SCRATCH, src));
  return r;
}

/* Generates integer expression n; returns the register holding it. */
int gen_int(Gen *g, Node *n) {
  Span saved = g->span;
  if (n->span.line) g->span = n->span;
  int r;
  int64_t v;
  if (fold(g, n, &v)) {
    r = reg_alloc(g);
    emit_imm64(g, r, v);
    g->span = saved;
    return r;
  }
  switch (n->kind) {
  case N_INT:
    r = reg_alloc(g);
    emit_imm64(g, r, n->ival);
    break;
  case N_BUILTIN:
    if (n->builtin && n->builtin->emit_int) {
      r = n->builtin->emit_int(g, n);
    } else {
      fail(g, n->span, "loupe cannot generate code for '%s' yet", n->name);
      r = reg_alloc(g);
    }
    break;
  case N_VAR:
    r = reg_alloc(g);
    emit(g, I_LDX(BPF_DW, r, BPF_REG_10, n->var->stack_off));
    break;
  case N_MAP:
    r = gen_map_int(g, n);
    break;
  case N_FIELD:
    r = n->lhs->type.kind == TY_TUPLE ? gen_tuple_field_int(g, n)
        : in_memory(n)                ? gen_mem_int(g, n)
                                      : gen_field_int(g, n);
    break;
  case N_INDEX:
    r = n->lhs->type.kind == TY_STR ? gen_str_index(g, n)
        : g->p->syscall_group == SYSCALL_EVERY_ENTER && syscall_raw_is_arg(n)
            ? syscall_raw_arg(g, n)   /* args->args[K] from the registers */
            : gen_mem_int(g, n);
    break;
  case N_CAST:
    r = gen_cast(g, n);
    break;
  case N_CALL:
    r = gen_call_int(g, n);
    break;
  case N_BINOP:
    r = gen_binop(g, n);
    break;
  case N_UNOP:
    r = gen_unop(g, n);
    break;
  case N_TERNARY:
    r = gen_ternary_int(g, n);
    break;
  case N_INCDEC:
    r = gen_incdec(g, n, false);
    break;
  case N_BLOCK:
    gen_block(g, n);
    r = gen_int(g, n->lhs);
    break;
  default:
    fail(g, n->span, "%s", "loupe cannot generate this expression yet");
    r = reg_alloc(g);
    break;
  }
  g->span = saved;
  return r;
}
