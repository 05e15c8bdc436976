/* stmt: statements, blocks and loops (for over a map runs its body as a
 * bpf_for_each_map_elem callback). */
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "codegen/gen.h"

/* A `let $x: uint8` variable keeps its width: v truncated, then extended
 * by the declared type's sign. */
static int64_t wrapped(const VarSym *v, int64_t x) {
  int bits = v->decl.size * 8;
  if (v->decl.kind != TY_INT || bits >= 64) return x;
  uint64_t u = (uint64_t)x & ((1ull << bits) - 1);
  if (v->decl.is_signed && (u >> (bits - 1))) u |= ~0ull << bits;
  return (int64_t)u;
}

/* The same on the variable's stack slot. */
void gen_wrap_var(Gen *g, VarSym *v) {
  int bits = v->decl.size * 8;
  if (v->decl.kind != TY_INT || bits >= 64) return;
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, v->stack_off));
  emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - bits));
  emit(g, I_ALU64_IMM(v->decl.is_signed ? BPF_ARSH : BPF_RSH, r, 64 - bits));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, v->stack_off));
  reg_free(g, r);
}

/* let $x [= v]: without a value the variable starts again from zero,
 * each time the statement runs. */
static void gen_let(Gen *g, Node *n) {
  VarSym *v = n->lhs->var;
  if (n->rhs) {
    gen_assign(g, n);
    return;
  }
  if (is_buffer(v->type)) {
    emit_zero(g, v->stack_off, value_cap(v->type));
    return;
  }
  emit_store_const(g, BPF_REG_10, v->stack_off, 0);
  v->known = true;
  v->value = 0;
}

void gen_assign(Gen *g, Node *n) {
  Node *lhs = n->lhs, *rhs = n->rhs;
  if (lhs->kind == N_VAR) {
    VarSym *v = lhs->var;
    if (is_buffer(v->type)) {
      gen_buf_as(g, rhs, v->stack_off, v->type);
      return;
    }
    bool is_signed = v->type.is_signed && rhs->type.is_signed;
    int64_t step = n->field_offset > 1 ? n->field_offset : 1;
    int64_t k, now;
    bool known = n->op == '=' ? fold(g, rhs, &now)
                 : v->known && fold(g, rhs, &k) &&
                       apply_op(n->op, v->value, k * step, is_signed, &now);
    if (known) {
      now = wrapped(v, now);
      emit_store_const(g, BPF_REG_10, v->stack_off, now);
      v->known = true;
      v->value = now;
      return;
    }
    if (n->op == '=') {
      gen_store_int(g, rhs, BPF_REG_10, v->stack_off);
    } else {
      int cur = reg_alloc(g);
      emit(g, I_LDX(BPF_DW, cur, BPF_REG_10, v->stack_off));
      if (fold_imm(g, rhs, &k) && fits32(k * step) &&
          !(k == 0 && (n->op == '/' || n->op == '%'))) {
        emit_op(g, n->op, cur, -1, (int32_t)(k * step), is_signed);
      } else {
        Held h = hold(g, cur);
        int r = gen_int(g, rhs);
        if (step > 1) emit(g, I_ALU64_IMM(BPF_MUL, r, (int32_t)step));
        cur = held_reg(g, h, BPF_REG_0);
        emit_op(g, n->op, cur, r, 0, is_signed);
        reg_free(g, r);
      }
      emit(g, I_STX(BPF_DW, BPF_REG_10, cur, v->stack_off));
      reg_free(g, cur);
    }
    gen_wrap_var(g, v);
    v->known = false;
    return;
  }
  MapSym *m = lhs->map;
  if (n->op != '=') {
    reg_free(g, gen_map_update_int(g, lhs, n->op, rhs,
                                   n->field_offset > 1 ? n->field_offset : 1,
                                   false));
    return;
  }
  if (m->value_type.kind == TY_AGG) {
    /* @m = { statements; avg(v) }: the statements, then the update */
    for (; rhs->kind == N_BLOCK; rhs = rhs->lhs)
      if (gen_block(g, rhs)) return;
    agg_ops(m->value_type.agg)->emit_update(g, lhs, rhs);
    return;
  }
  if (is_buffer(m->value_type)) {
    int key = gen_key(g, lhs);
    int val = scratch_alloc(g, m->value_size);
    gen_buf_as(g, rhs, val, m->value_type);
    emit_update(g, m, key, val);
    return;
  }
  if (gen_map_write(g, lhs, rhs)) return;
  int64_t k;
  if (m->direct && fold(g, rhs, &k)) {
    emit_direct_store_const(g, m, k);
    return;
  }
  if (m->direct) {
    Held v = hold(g, gen_int(g, rhs));
    int r = held_reg(g, v, BPF_REG_2);
    emit_direct_store(g, m, r);
    held_free(g, v);
    return;
  }
  if (fold(g, rhs, &k)) {
    int key = gen_key(g, lhs);
    int val = scratch_alloc(g, 8);
    emit_store_const(g, SCRATCH, val, k);
    emit_update(g, m, key, val);
    return;
  }
  Held v = hold(g, gen_int(g, rhs));
  int key = gen_key(g, lhs);
  int val = scratch_alloc(g, 8);
  int r = held_reg(g, v, BPF_REG_2);
  emit(g, I_STX(BPF_DW, SCRATCH, r, val));
  held_free(g, v);
  emit_update(g, m, key, val);
}

/* if/else. A condition known now generates only the branch taken; else
 * what is known of variables after it is what both branches agree on. */
bool gen_if(Gen *g, Node *n) {
  int64_t k;
  if (fold(g, n->cond, &k)) {
    if (k) return gen_block(g, n->then);
    return n->els ? gen_stmt(g, n->els) : false;
  }
  Jumps to_else = {0};
  gen_cond(g, n->cond, false, &to_else);
  VarState *before = vars_save(g);
  bool then_ends = gen_block(g, n->then);
  VarState *after_then = vars_save(g);
  vars_restore(g, before);
  bool else_ends = false;
  if (n->els) {
    int done = then_ends ? -1 : emit_jump(g, I_JA(0));
    jumps_patch_here(g, &to_else);
    else_ends = gen_stmt(g, n->els);
    if (done >= 0) patch_here(g, done);
  } else {
    jumps_patch_here(g, &to_else);
  }
  if (else_ends && !then_ends)
    vars_restore(g, after_then);
  else if (!then_ends)
    vars_merge(g, after_then);
  free(before);
  free(after_then);
  return then_ends && else_ends;
}

/* for ($i : a..b): $i = a; while ($i < b) { body; $i++ }, with b
 * evaluated once and continue going to the increment. */
void gen_for_range(Gen *g, Node *n) {
  if (g->nloops == (int)(sizeof(g->loops) / sizeof(g->loops[0]))) {
    fail(g, n->span, "%s", "loops are nested too deeply");
    return;
  }
  /* the count lives in a slot of its own, copied into $i at the top of
   * each iteration: a body that assigns $i cannot stop the loop ending
   * (the verifier refused `$i = 0` in the body as an infinite loop) */
  VarSym *v = n->lhs->var;
  int count = stack_alloc(g, 8);
  gen_store_int(g, n->args, BPF_REG_10, count);
  int end = stack_alloc(g, 8);
  gen_store_int(g, n->rhs, BPF_REG_10, end);
  v->known = false;
  vars_forget_assigned(n->then);
  struct Loop *l = &g->loops[g->nloops++];
  memset(l, 0, sizeof(*l));
  l->start = -1;
  int top = g->p->ninsns;
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, count));
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, end));
  int out = emit_jump(g, I_JMP_REG(BPF_JSGE, r, BPF_REG_1, 0));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, v->stack_off));
  reg_free(g, r);
  gen_block(g, n->then);
  for (int i = 0; i < l->nconts; i++) patch_here(g, l->conts[i]);
  g->span = n->span;
  r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, count));
  emit(g, I_ALU64_IMM(BPF_ADD, r, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, count));
  reg_free(g, r);
  emit_jump_back(g, top);
  patch_here(g, out);
  for (int i = 0; i < l->nbreaks; i++) patch_here(g, l->breaks[i]);
  free(l->breaks);
  free(l->conts);
  g->nloops--;
  vars_forget_assigned(n->then);
}

static AstStep is_return(Node *n, void *unused) {
  return n->kind == N_RETURN ? AST_STOP : AST_ENTER;
}

/* Whether a return is in n (or the statements after it), a call's
 * arguments included: `printf("%d", { if (c) { return; } 1 })`. */
static bool has_return(Node *n) {
  return ast_walk(n, is_return, NULL);
}

/* The context a for-over-map body gets from the frame that runs it: 8
 * bytes set when the body returned from the probe, 8 for the value it
 * returned, then the variables of that frame the body uses (each gets
 * its ctx_off). Its size, or 0 when the body needs none. */
static int loop_ctx_layout(Gen *g, Node *loop) {
  int size = 24;   /* and 8 for a range's start */
  bool shares = false;
  for (VarSym *v = g->probe->vars; v; v = v->next)
    if (v->frame == (int)loop->ival && v->outer) {
      v->ctx_off = size;
      size += value_cap(v->type);
      shares = true;
    }
  return shares || loop->rhs || has_return(loop->then) ? size : 0;
}

/* Copies variable v between its home and ctx_reg + off, 8 bytes at a
 * time through r0; to_ctx: from the home. */
static void copy_var_ctx(Gen *g, const VarSym *v, int ctx_reg, int off,
                         bool to_ctx) {
  int home = is_buffer(v->type) ? SCRATCH : BPF_REG_10;
  for (int i = 0; i < value_cap(v->type); i += 8) {
    if (to_ctx) {
      emit(g, I_LDX(BPF_DW, BPF_REG_0, home, v->stack_off + i));
      emit(g, I_STX(BPF_DW, ctx_reg, BPF_REG_0, off + i));
    } else {
      emit(g, I_LDX(BPF_DW, BPF_REG_0, ctx_reg, off + i));
      emit(g, I_STX(BPF_DW, home, BPF_REG_0, v->stack_off + i));
    }
  }
}

/* Leaves the for-over-map body being generated with r0 = `go`: 0 on to
 * the next entry, 1 stop; the variables it shares go back first. */
static void emit_callback_exit(Gen *g, int go) {
  if (g->ctx_slot) {
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, g->ctx_slot));
    for (VarSym *v = g->probe->vars; v; v = v->next)
      if (v->frame == g->frame && v->outer)
        copy_var_ctx(g, v, BPF_REG_1, v->ctx_off, true);
  }
  emit(g, I_MOV64_IMM(BPF_REG_0, go));
  emit(g, I_EXIT());
}

/* return [v] from the probe: in a for-over-map body, through its context
 * (the frame around it returns in turn). `reg`: the value, or -1. */
static void emit_probe_return(Gen *g, int reg) {
  if (g->frame == 0) {
    if (reg < 0)
      emit(g, I_MOV64_IMM(BPF_REG_0, 0));
    else if (reg != BPF_REG_0)
      emit(g, I_MOV64_REG(BPF_REG_0, reg));
    emit(g, I_EXIT());
    return;
  }
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, g->ctx_slot));
  emit(g, I_ST(BPF_DW, BPF_REG_1, 0, 1));
  if (reg < 0)
    emit(g, I_ST(BPF_DW, BPF_REG_1, 8, 0));
  else
    emit(g, I_STX(BPF_DW, BPF_REG_1, reg, 8));
  emit_callback_exit(g, 1);
}

static void gen_loop_done(Gen *g, Node *n, int ctx);

/* The loop's context on this frame's stack, with the variables it shares
 * copied in; its offset. */
static int gen_loop_ctx(Gen *g, Node *n, int size) {
  int ctx = stack_alloc(g, size);
  emit(g, I_ST(BPF_DW, BPF_REG_10, ctx, 0));
  for (VarSym *v = g->probe->vars; v; v = v->next)
    if (v->frame == (int)n->ival && v->outer)
      copy_var_ctx(g, v->outer, BPF_REG_10, ctx + v->ctx_off, true);
  return ctx;
}

void emit_callback_fn(Gen *g, Node *n, int reg,
                      void (*emit_fn)(Gen *g, Node *n)) {
  g->pending = realloc(g->pending, sizeof(*g->pending) * (g->npending + 1));
  g->pending[g->npending].loop = n;
  g->pending[g->npending].emit_fn = emit_fn;
  g->pending[g->npending].at = g->p->ninsns;
  g->pending[g->npending].scratch_at = g->scratch_top;
  g->npending++;
  emit(g, I_LD_IMM64_LO(reg, BPF_PSEUDO_FUNC, 0));
  emit(g, I_LD_IMM64_HI(0));
}

/* Where a loop body's address goes (patched by gen_callback). */
static void emit_callback_addr(Gen *g, Node *n, int reg) {
  emit_callback_fn(g, n, reg, NULL);
}

/* for ($i : a..b) with bounds known only at run time: bpf_loop runs the
 * body max(b - a, 0) times as a callback, b evaluated once. */
static void gen_for_range_callback(Gen *g, Node *n) {
  int ctx = gen_loop_ctx(g, n, loop_ctx_layout(g, n));
  gen_store_int(g, n->args, BPF_REG_10, ctx + 16);
  int r = gen_int(g, n->rhs);
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, ctx + 16));
  emit(g, I_ALU64_REG(BPF_SUB, r, BPF_REG_1));
  /* no iteration: no call. Kernels up to 6.18 at least fail ("verifier
   * bug: No program to jit") on a bpf_loop inside a callback whose count
   * they know to be 0, as in `for ($kv : @m) { for ($i : 2..(2 % 8)) }` */
  int skip = emit_jump(g, I_JMP_IMM(BPF_JSLE, r, 0, 0));
  emit(g, I_MOV64_REG(BPF_REG_1, r));
  reg_free(g, r);
  emit_callback_addr(g, n, BPF_REG_2);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, ctx));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_loop);
  patch_here(g, skip);
  gen_loop_done(g, n, ctx);
}

/* for ($kv : @m): bpf_for_each_map_elem calls the body, generated later
 * as a function of its own (see gen_callbacks), with a context on this
 * frame's stack for the variables they share and a return from it. */
void gen_for_map(Gen *g, Node *n) {
  MapSym *m = n->args->map;
  int size = loop_ctx_layout(g, n);
  int ctx = size ? gen_loop_ctx(g, n, size) : 0;
  emit_map(g, BPF_REG_1, m->id);
  emit_callback_addr(g, n, BPF_REG_2);
  if (size) {   /* the callback gets it in r4 */
    emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, ctx));
  } else {
    emit(g, I_MOV64_IMM(BPF_REG_3, 0));
  }
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_for_each_map_elem);
  if (size) gen_loop_done(g, n, ctx);
}

/* A callback loop n with its context at ctx returned: the variables it
 * shares come back, and a return in it returns from here too. */
static void gen_loop_done(Gen *g, Node *n, int ctx) {
  for (VarSym *v = g->probe->vars; v; v = v->next)
    if (v->frame == (int)n->ival && v->outer) {
      copy_var_ctx(g, v->outer, BPF_REG_10, ctx + v->ctx_off, false);
      v->outer->known = false;
    }
  if (has_return(n->then)) {
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, ctx));
    int go_on = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_10, ctx + 8));
    emit_probe_return(g, BPF_REG_0);
    patch_here(g, go_on);
  }
}

/* scratch + at = the `size` bytes at src, a word at a time through r0. */
static void copy_words(Gen *g, int src, int at, int size) {
  for (int i = 0; i < size; i += 8) {
    emit(g, I_LDX(BPF_DW, BPF_REG_0, src, i));
    emit(g, I_STX(BPF_DW, SCRATCH, BPF_REG_0, at + i));
  }
}

/* $kv = (key, value) from a for-over-map callback's key and value
 * pointers (r2 and r3, or copies of them in callee-saved registers when
 * the body's buffers are in the scratch area). */
static void gen_callback_kv(Gen *g, Node *n, int key_reg, int value_reg) {
  MapSym *m = n->args->map;
  VarSym *kv = n->lhs->var;
  /* a $kv the body widens holds the entry converted from the map's own
   * layout (the loop node's type), copied first beside it */
  Type as_map = n->lhs->type;
  bool widened = !same_layout(as_map, kv->type);
  int at = widened ? scratch_alloc(g, value_cap(as_map)) : kv->stack_off;
  const TupleType *t = as_map.tuple;
  int voff = at + t->offs[1];
  /* no more than $kv holds: a map whose string value widened after $kv
   * was typed (by an assignment in a later probe) wrote past $kv, up to
   * r10 + 0, which the verifier refused */
  int key_size = m->key_size < t->offs[1] ? m->key_size : t->offs[1];
  int value_size = m->value_size < t->size - t->offs[1]
                       ? m->value_size : t->size - t->offs[1];
  /* with the pointers still in r2 and r3, emit_copy_from's temporaries
   * would overwrite them: word by word through r0 */
  bool in_args = key_reg == BPF_REG_2;
  if (in_args)
    copy_words(g, key_reg, at, key_size);
  else
    emit_copy_from(g, key_reg, 0, at, key_size, key_size);
  if (m->value_type.kind == TY_AGG) {
    /* the callback sees this CPU's slot; the value is all CPUs', looked
     * up with the key just copied */
    int r = gen_agg_read(g, m, at);
    emit(g, I_STX(BPF_DW, SCRATCH, r, voff));
    reg_free(g, r);
  } else if (in_args) {
    copy_words(g, value_reg, voff, value_size);
  } else {
    emit_copy_from(g, value_reg, 0, voff, value_size, value_size);
  }
  if (widened) convert_tuple(g, at, as_map, kv->stack_off, kv->type);
}

/* A for-over-map body as a callback (r1 map, r2 key, r3 value, r4 ctx),
 * or a range's for bpf_loop (r1 index, r2 ctx): $kv gets a copy of the
 * key and the value, or $i the range's start plus the index, the
 * variables it shares with the frame around it theirs, then the body runs
 * with its own stack frame and variables. Returns 0 to go on, 1 to stop. */
void gen_callback(Gen *g, int pending) {
  /* a loop inside unroll is emitted, so pending, once per copy: each
   * copy's address gets a callback of its own */
  struct Pending pd = g->pending[pending];   /* bodies may move the array */
  Node *n = pd.loop;
  VarSym *kv = n->lhs->var;
  int ctx_reg = n->rhs ? BPF_REG_2 : BPF_REG_4;
  int start = g->p->ninsns;
  g->p->insns[pd.at].imm = start - pd.at - 1;

  g->frame = (int)n->ival;
  g->buf_base = g->main_base;
  memset(g->reg_used, 0, sizeof(g->reg_used));
  g->stack_top = 16;
  g->span = n->span;
  int key_reg = BPF_REG_2, value_reg = BPF_REG_3, index_reg = BPF_REG_1;
  if (g->buf_base == BPF_REG_9) {
    /* buffers in the scratch area, after those in use around the loop;
     * finding it clobbers r1-r5, so what the callback got moves first */
    if (n->rhs) {
      emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
      index_reg = BPF_REG_6;
    } else {
      emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_2));
      emit(g, I_MOV64_REG(BPF_REG_7, BPF_REG_3));
      key_reg = BPF_REG_6;
      value_reg = BPF_REG_7;
    }
    emit(g, I_MOV64_REG(BPF_REG_8, ctx_reg));
    ctx_reg = BPF_REG_8;
    emit_scratch_base(g);
    g->scratch_top = pd.scratch_at;
  }
  place_vars(g, g->probe);
  note_var_frame(g, start);
  g->ctx_slot = 0;
  if (loop_ctx_layout(g, n)) {
    g->ctx_slot = stack_alloc(g, 8);
    emit(g, I_STX(BPF_DW, BPF_REG_10, ctx_reg, g->ctx_slot));
    for (VarSym *v = g->probe->vars; v; v = v->next)
      if (v->frame == g->frame && v->outer)
        copy_var_ctx(g, v, ctx_reg, v->ctx_off, false);
  }
  if (n->rhs) {
    emit(g, I_LDX(BPF_DW, BPF_REG_0, ctx_reg, 16));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, index_reg));
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, kv->stack_off));
  } else {
    gen_callback_kv(g, n, key_reg, value_reg);
  }
  struct Loop *l = &g->loops[g->nloops++];
  memset(l, 0, sizeof(*l));
  l->callback = true;
  if (!gen_block(g, n->then)) emit_callback_exit(g, 0);
  g->nloops--;
}

/* Generates every pending for-over-map body (bodies may add more). */
void gen_callbacks(Gen *g) {
  int saved_base = g->buf_base, saved_frame = g->frame;
  for (int i = 0; i < g->npending; i++) {
    struct Pending pd = g->pending[i];
    if (!pd.emit_fn) {
      gen_callback(g, i);
      continue;
    }
    g->p->insns[pd.at].imm = g->p->ninsns - pd.at - 1;
    g->span = pd.loop->span;
    pd.emit_fn(g, pd.loop);
  }
  free(g->pending);
  g->pending = NULL;
  g->npending = 0;
  g->buf_base = saved_base;
  g->frame = saved_frame;
  g->ctx_slot = 0;
}

void emit_jump_back(Gen *g, int target) {
  int off = target - g->p->ninsns - 1;
  if (off < INT16_MIN)
    fail(g, g->span, "%s", "this loop's body is longer than 32767 BPF "
         "instructions; make it smaller");
  emit(g, I_JA((int16_t)off));
}

/* while (c) { ... }: the verifier must see that the loop ends. */
void gen_while(Gen *g, Node *n) {
  if (g->nloops == (int)(sizeof(g->loops) / sizeof(g->loops[0]))) {
    fail(g, n->span, "%s", "while loops are nested too deeply");
    return;
  }
  struct Loop *l = &g->loops[g->nloops++];
  /* nothing the body assigns is known at the top of the loop */
  vars_forget_assigned(n->then);
  vars_forget_assigned(n->cond);
  memset(l, 0, sizeof(*l));
  l->start = g->p->ninsns;
  Jumps out = {0};
  gen_cond(g, n->cond, false, &out);
  if (!gen_block(g, n->then)) {
    g->span = n->span;
    emit_jump_back(g, l->start);
  }
  jumps_patch_here(g, &out);
  for (int i = 0; i < l->nbreaks; i++) patch_here(g, l->breaks[i]);
  vars_forget_assigned(n->then);
  free(l->breaks);
  g->nloops--;
}

/* Expression e for its effects alone; returns true when control never
 * continues after it. Calls with no value, blocks and ternaries of them
 * are statements in disguise. */
static bool gen_effect(Gen *g, Node *e) {
  /* a call with a value that has a form of its own for when the value is
   * not used (delete(): a warning when the key was not there) */
  if (e->kind == N_CALL && e->type.kind != TY_VOID && e->builtin &&
      e->builtin->emit_stmt)
    return e->builtin->emit_stmt(g, e);
  if (e->kind == N_CALL && e->type.kind == TY_VOID) {
    const Builtin *b = e->builtin;
    if (b && b->emit_stmt) return b->emit_stmt(g, e);
    fail(g, e->span, "loupe cannot generate code for %s() yet", e->name);
  } else if (e->kind == N_BLOCK && e->type.kind == TY_VOID) {
    return gen_block(g, e) || gen_effect(g, e->lhs);
  } else if (e->kind == N_TERNARY && e->type.kind == TY_VOID) {
    Jumps to_else = {0};
    gen_cond(g, e->cond, false, &to_else);
    bool then_ends = gen_effect(g, e->then);
    int done = then_ends ? -1 : emit_jump(g, I_JA(0));
    jumps_patch_here(g, &to_else);
    bool else_ends = gen_effect(g, e->els);
    if (done >= 0) patch_here(g, done);
    vars_forget_assigned(e->then);
    vars_forget_assigned(e->els);
    return then_ends && else_ends;
  } else if (e->type.kind == TY_ARGS ||
             (e->kind == N_BUILTIN && !strcmp(e->name, "args"))) {
    /* `args;` alone reads nothing, as in bpftrace: no code */
  } else if (is_buffer(e->type)) {
    buf_ref(g, e);
  } else {
    reg_free(g, gen_int(g, e));
  }
  return false;
}

/* Generates statement n; returns true when control never continues after
 * it (exit(), return, break, continue, or an if whose branches all end),
 * so the caller emits nothing the verifier would find unreachable. */
bool gen_stmt(Gen *g, Node *n) {
  int stack_mark = g->stack_top, scratch_mark = g->scratch_top;
  bool ends = false;
  g->span = n->span;
  switch (n->kind) {
  case N_EXPR_STMT:
    ends = gen_effect(g, n->lhs);
    break;
  case N_ASSIGN:
    gen_assign(g, n);
    break;
  case N_LET:
    gen_let(g, n);
    break;
  case N_INCDEC:
    reg_free(g, gen_incdec(g, n, true));
    break;
  case N_IF:
    ends = gen_if(g, n);
    break;
  case N_BLOCK:
    ends = gen_block(g, n);
    break;
  case N_WHILE:
    gen_while(g, n);
    break;
  case N_UNROLL:
    for (int64_t i = 0; i < n->ival && !g->failed && !ends; i++)
      ends = gen_block(g, n->then);
    break;
  case N_BREAK: {
    struct Loop *l = &g->loops[g->nloops - 1];
    if (l->callback) {
      emit_callback_exit(g, 1);              /* stop the iteration */
    } else {
      l->breaks = realloc(l->breaks, sizeof(int) * (l->nbreaks + 1));
      l->breaks[l->nbreaks++] = emit_jump(g, I_JA(0));
    }
    ends = true;
    break;
  }
  case N_CONTINUE: {
    struct Loop *l = &g->loops[g->nloops - 1];
    if (l->callback) {
      emit_callback_exit(g, 0);              /* on to the next entry */
    } else if (l->start >= 0) {
      emit_jump_back(g, l->start);
    } else {
      l->conts = realloc(l->conts, sizeof(int) * (l->nconts + 1));
      l->conts[l->nconts++] = emit_jump(g, I_JA(0));
    }
    ends = true;
    break;
  }
  case N_FOR:
    if (n->rhs && n->ival)
      gen_for_range_callback(g, n);
    else if (n->rhs)
      gen_for_range(g, n);
    else
      gen_for_map(g, n);
    break;
  case N_RETURN:
    emit_probe_return(g, n->lhs ? gen_int(g, n->lhs) : -1);
    ends = true;
    break;
  default:
    fail(g, n->span, "%s", "loupe cannot generate this statement yet");
  }
  g->stack_top = stack_mark;
  g->scratch_top = scratch_mark;
  return ends;
}

/* A block's statements up to the first that ends control (what follows it
 * could never run). Returns whether one did. */
bool gen_block(Gen *g, Node *n) {
  for (Node *s = n->body; s; s = s->next)
    if (gen_stmt(g, s)) return true;
  return false;
}

/* Variables get their homes before the body: integers on the stack,
 * strings in the scratch area. */
void place_vars(Gen *g, Probe *p) {
  for (VarSym *v = p->vars; v; v = v->next) {
    v->known = false;
    if (v->frame != g->frame) continue;
    if (is_buffer(v->type))
      v->stack_off = scratch_alloc(g, value_cap(v->type));
    else
      v->stack_off = stack_alloc(g, 8);
  }
}

void note_var_frame(Gen *g, int start) {
  uint64_t slots = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next) {
    int k = -v->stack_off / 8 - 1;
    if (v->frame == g->frame && !is_buffer(v->type) && k >= 0 && k < 64)
      slots |= (uint64_t)1 << k;
  }
  if (!slots) return;
  BpfProg *p = g->p;
  size_t n = (size_t)p->nvar_frames + 1;
  p->var_starts = realloc(p->var_starts, sizeof(int) * n);
  p->var_slots = realloc(p->var_slots, sizeof(uint64_t) * n);
  p->var_starts[p->nvar_frames] = start;
  p->var_slots[p->nvar_frames++] = slots;
}
