/* debug: debugf(fmt, ...), printf to the kernel's trace buffer
 * (/sys/kernel/tracing/trace_pipe) through bpf_trace_printk, for
 * debugging a script without loupe's output in the way. The kernel
 * formats it: up to three arguments, integers or strings. */
#include <string.h>

#include "builtins/builtin.h"
#include "runtime/print.h"

enum { DEBUGF_MAX_ARGS = 3 };   /* bpf_trace_printk's r3..r5 */

static void check_debugf(Checker *c, Node *n) {
  Node *fmt = n->args;
  if (!want_args(c, n, 1, -1)) return;
  if (fmt->kind != N_STR) {
    error_at(c, fmt->span, "debugf() expects a string literal as format");
    return;
  }
  for (Node *a = fmt->next; a; a = a->next) check_expr(c, a);
  char conv[DEBUGF_MAX_ARGS + 2], err[200];
  int nconv = printf_parse(fmt->sval, conv, DEBUGF_MAX_ARGS + 1, err,
                           sizeof err);
  int nargs = count_args(n) - 1;
  if (nargs > DEBUGF_MAX_ARGS || nconv > DEBUGF_MAX_ARGS) {
    error_at(c, n->span, "debugf() takes at most %d arguments after the "
             "format (the limit of bpf_trace_printk)", DEBUGF_MAX_ARGS);
    return;
  }
  if (nconv < 0) {
    error_at(c, fmt->span, "%s", err);
    return;
  }
  if (nconv != nargs) {
    error_at(c, n->span, "debugf: Expected %d argument%s for the format, "
             "got %d", nconv, nconv == 1 ? "" : "s", nargs);
    return;
  }
  int i = 0;
  for (Node *a = fmt->next; a; a = a->next, i++) {
    if (a->type.kind == TY_NONE) return;
    bool want_str = conv[i] == 's';
    if (want_str ? a->type.kind != TY_STR : a->type.kind != TY_INT ||
                   conv[i] == 'r' || conv[i] == 'R') {
      error_at(c, a->span, "debugf: %%%c specifier cannot print %s",
               conv[i] == 'R' ? 'r' : conv[i], TYPE_NAME(a->type));
      return;
    }
  }
}

/* The format goes in the scratch area; integers wait in stack slots and
 * strings in buffers until the call loads their values or addresses. */
static bool emit_debugf(Gen *g, Node *n) {
  Node *fmt = n->args;
  int len = fmt->slen + 1;
  int at_fmt = scratch_alloc(g, align8(len));
  emit_literal(g, fmt->sval, fmt->slen, at_fmt, align8(len));
  int at[DEBUGF_MAX_ARGS], n_args = 0;
  bool is_str[DEBUGF_MAX_ARGS];
  for (Node *a = fmt->next; a; a = a->next, n_args++) {
    is_str[n_args] = a->type.kind == TY_STR;
    if (is_str[n_args]) {
      at[n_args] = buf_ref(g, a);
      continue;
    }
    int r = gen_int(g, a);
    at[n_args] = stack_alloc(g, 8);
    emit(g, I_STX(BPF_DW, BPF_REG_10, r, at[n_args]));
    reg_free(g, r);
  }
  for (int i = 0; i < n_args; i++) {
    if (is_str[i])
      emit_scratch(g, BPF_REG_3 + i, at[i]);
    else
      emit(g, I_LDX(BPF_DW, BPF_REG_3 + i, BPF_REG_10, at[i]));
  }
  emit_scratch(g, BPF_REG_1, at_fmt);
  emit(g, I_MOV64_IMM(BPF_REG_2, len));
  emit_call(g, BPF_FUNC_trace_printk);
  return false;
}

const Builtin builtins_debug[] = {
    {.name = "debugf", .form = BI_CALL, .min_args = 1, .max_args = -1,
     .check = check_debugf, .emit_stmt = emit_debugf},
    {0},
};
