/* strings: str() and buf(), which read strings and bytes from memory,
 * strncmp() and strcontains(), which compare them in the kernel, and
 * str_concat(), which joins two. */
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"

/* ---- checks ---------------------------------------------------------- */

/* str($1 + k): bpftrace reads a positional parameter inside str() as the
 * address of its text, so a constant k from 0 to the text's length skips
 * that many bytes of it. Turns p into that string; false if p is not a
 * parameter plus something. */
static bool check_positional_offset(Checker *c, Node *p) {
  if (p->kind != N_BINOP || p->op != '+') return false;
  Node *param = p->lhs, *off = p->rhs;
  if (node_is_positional(off)) param = p->rhs, off = p->lhs;
  if (!node_is_positional(param) || param->name[1] == '#') return false;
  check_expr(c, param);   /* as a string: positional_as_string is set */
  check_expr(c, off);
  int64_t k;
  if (param->kind != N_STR) return false;
  if (!const_int(off, &k) || k < 0 || k > param->slen) {
    error_at(c, off->span, "str(%s + N): N must be a constant from 0 to "
             "the length of %s (%d)", param->name, param->name,
             param->slen);
    return true;
  }
  p->kind = N_STR;
  p->name = param->name;   /* a parameter's text: cut to size, not refused */
  p->sval = param->sval + k;
  p->slen = param->slen - (int)k;
  p->type = ty_str(p->slen + 1);
  p->lhs = p->rhs = NULL;
  return true;
}

/* str(p[, n]): a string of at most n - 1 bytes and its NUL; without n (or
 * with a larger one) of max_strlen bytes and the NUL, as bpftrace reads
 * it. A constant n sizes the string; any other n is checked when the
 * string is read, and the string gets the largest size. */
static void check_str(Checker *c, Node *n) {
  Node *p = n->args;
  c->positional_as_string = true;   /* str($1) is the word as given */
  if (!check_positional_offset(c, p)) check_expr(c, p);
  c->positional_as_string = false;
  int size = c->strlen + 1;
  if (p->next) {
    Node *len = p->next;
    int64_t v;
    check_expr(c, len);
    if (!want_int(c, n, len)) return;
    if (const_int(len, &v)) {
      if (v < 1) {
        error_at(c, len->span, "str(): the length must be a positive "
                 "integer");
        return;
      }
      if (v < size) size = (int)v;
    } else if (p->type.kind == TY_STR) {
      error_at(c, len->span, "str() of a string takes a constant length");
      return;
    } else {
      n->ival = 1;   /* the length is computed where the string is read */
    }
  }
  /* str() of a string is fine, as in later bpftrace versions */
  if (p->type.kind == TY_STR) {
    n->type = ty_str(p->type.size < size ? p->type.size : size);
  } else if (p->type.kind == TY_INT) {
    n->type = ty_str(size);
  } else if (p->type.kind != TY_NONE) {
    error_at(c, n->span, "str() expects an integer or a pointer type as "
             "first argument (%s provided)", TYPE_NAME(p->type));
  }
}

/* buf(p, n): n bytes read from p; buf(s) of a string or array. */
static void check_buf(Checker *c, Node *n) {
  Node *a = n->args;
  int64_t v;
  check_expr(c, a);
  int size = c->strlen;
  Node *len = a->next;
  if (len) check_expr(c, len);   /* buf(p, $1): the parameter's value */
  if (len && !const_int(len, &v)) {
    /* buf(p, $skb->len): known only when the probe runs, so the buffer
     * holds up to max_strlen bytes and the length read is cut to that,
     * as bpftrace 0.17 does (undump.bt) */
    if (len->type.kind != TY_INT || len->type.is_pointer) {
      if (len->type.kind != TY_NONE)
        error_at(c, len->span, "buf(): the length must be an integer, got %s",
                 TYPE_NAME(len->type));
      return;
    }
    n->ival = 1;   /* the length is read at run time */
  } else if (len) {
    int most = c->strlen > 1024 ? c->strlen : 1024;
    if (!want_const(c, len, n->name, "the length", 1, most, &v)) return;
    size = (int)v;
  } else if (a->type.kind == TY_INT) {
    error_at(c, n->span, "buf() of a pointer needs a length: buf(p, n)");
    return;
  }
  bool array = (a->type.kind == TY_RECORD || a->type.kind == TY_CVAL) &&
               a->type.ctype && a->type.ctype->kind == C_ARRAY;
  if (array && !a->next) size = a->type.size;   /* the whole array */
  if (a->type.kind == TY_STR || array) {
    if (a->type.size < size) size = a->type.size;
  } else if (a->type.kind != TY_INT && a->type.kind != TY_NONE) {
    error_at(c, a->span, "buf() expects a pointer or an array, got %s",
             TYPE_NAME(a->type));
    return;
  }
  n->type.kind = TY_BUF;
  n->type.size = size;
}

/* The arguments from `a` up to (not including) `end` must be strings. */
static bool want_strings(Checker *c, Node *n, Node *a, Node *end) {
  for (Node *s = a; s != end; s = s->next)
    if (s->type.kind != TY_STR && s->type.kind != TY_NONE) {
      error_at(c, n->span, "%s() only supports string arguments (%s "
               "provided)", n->name, kind_name(s->type));
      return false;
    }
  return true;
}

/* strcontains(h, s): whether s is in h; strstr(h, s): where, or -1. */
static void check_strcontains(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  check_expr(c, a->next);
  if (want_strings(c, n, a, NULL))
    n->type = strcmp(n->name, "strstr") ? ty_bool() : ty_int(8, true);
}

static void check_strncmp(Checker *c, Node *n) {
  Node *a = n->args;
  int64_t v;
  check_expr(c, a);
  check_expr(c, a->next);
  if (!want_strings(c, n, a, a->next->next)) return;
  Node *len = a->next->next;
  check_expr(c, len);
  if (len->type.kind == TY_NONE) return;
  if (!const_int(len, &v)) {
    error_at(c, n->span, "strncmp() expects a integer literal (%s "
             "provided)", kind_name(len->type));
    return;
  }
  if (v < 0) {
    error_at(c, n->span, "Builtin strncmp requires a non-negative size");
    return;
  }
  if (!want_const(c, len, n->name, "the length", 0, 4096, &v)) return;
  n->ival = v;
  n->type = ty_int(8, false);
}

/* memcmp(a, b, n): the first n bytes of two values (strings, buffers,
 * structs, arrays, tuples) compared as C's memcmp does, n a constant no
 * larger than either. */
static void check_memcmp(Checker *c, Node *n) {
  Node *a = n->args, *b = a->next, *len = b->next;
  check_expr(c, a);
  check_expr(c, b);
  check_expr(c, len);
  for (Node *x = a; x != len; x = x->next) {
    TypeKind k = x->type.kind;
    if (k == TY_NONE) return;
    if (k != TY_STR && k != TY_BUF && k != TY_TUPLE && k != TY_RECORD &&
        k != TY_CVAL) {
      error_at(c, x->span, "memcmp() compares values loupe holds: strings, "
               "buffers, structs, arrays or tuples (%s provided)",
               kind_name(x->type));
      return;
    }
  }
  int max = value_cap(a->type) < value_cap(b->type) ? value_cap(a->type)
                                                    : value_cap(b->type);
  int64_t v;
  if (!want_const(c, len, n->name, "the length", 0, max, &v)) return;
  n->ival = v;
  n->type = ty_int(8, true);
}

/* strlen(s) of a string, or of a char pointer (read as str() would). */
static void check_strlen(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  if (a->type.kind == TY_STR || a->type.kind == TY_NONE ||
      (a->type.kind == TY_INT && a->type.is_pointer)) {
    n->type = ty_int(8, false);
    if (a->type.kind == TY_INT) n->ival = c->strlen;   /* bytes read */
    return;
  }
  error_at(c, n->span, "strlen() expects a string or a char pointer (%s "
           "provided)", kind_name(a->type));
}

/* strerror(e), signal_name(s), syscall_name(nr): the number, printed by
 * user space as the error's text, the signal's or the system call's name
 * wherever it goes. */
static void check_named(Checker *c, Node *n) {
  check_expr(c, n->args);
  if (!want_int(c, n, n->args)) return;
  n->type = ty_int(8, true);
  n->type.named = !strcmp(n->name, "strerror")      ? NAMED_ERRNO
                  : !strcmp(n->name, "signal_name") ? NAMED_SIGNAL
                                                    : NAMED_SYSCALL;
}

/* str_concat(a, b): a string of both sizes, which holds all of each. */
static void check_str_concat(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  check_expr(c, a->next);
  if (want_strings(c, n, a, NULL))
    n->type = ty_str(a->type.size + a->next->type.size - 1);
}

/* ---- code ------------------------------------------------------------ */


/* str(p)'s read of the string at r3, r2 bytes at most, into register
 * base + off. */
static void emit_str_read(Gen *g, Node *n, int base, int off) {
  AddrSpace as = n->args->type.as;
  emit_addr(g, BPF_REG_1, base, off);
  emit_call(g, as ? probe_read_str_helper(as) : unknown_space_str_helper(g));
}

static void gen_str_fn(Gen *g, Node *n, int dst, int cap) {
  Node *arg = n->args;
  if (arg->type.kind == TY_STR) {
    gen_buf(g, arg, dst, cap);
    if (n->type.size < arg->type.size) {
      /* str(s, n): cut the string after n - 1 bytes */
      int cut = n->type.size - 1, whole = align8(cut);
      for (int i = cut; i < whole && i < cap; i++)
        emit(g, I_ST(BPF_B, SCRATCH, dst + i, 0));
      if (whole < cap) emit_zero(g, dst + whole, cap - whole);
    }
    return;
  }
  Held len = {-1, 0};
  if (n->ival) len = hold(g, gen_int(g, arg->next));
  int r = gen_int(g, arg);
  /* a computed length fills an unknown part: zero it all */
  if (n->ival)
    emit_zero(g, dst, cap);
  else
    emit_zero_padding(g, n, dst, n->type.size, cap);
  emit(g, I_MOV64_REG(BPF_REG_3, r));
  reg_free(g, r);
  if (n->ival) {
    /* a computed length: at most the string's size, for the verifier */
    int l = held_reg(g, len, BPF_REG_2);
    if (l != BPF_REG_2) emit(g, I_MOV64_REG(BPF_REG_2, l));
    held_free(g, len);
    emit(g, I_JMP_IMM(BPF_JLE, BPF_REG_2, n->type.size, 1));
    emit(g, I_MOV64_IMM(BPF_REG_2, n->type.size));
  } else {
    emit(g, I_MOV64_IMM(BPF_REG_2, n->type.size));
  }
  emit_str_read(g, n, SCRATCH, dst);
}

/* str(p) straight into a reserved record: the helper writes the string
 * and its NUL, and nothing after them needs writing. */
static void gen_str_at(Gen *g, Node *n, int base, int off, int cap) {
  int r = gen_int(g, n->args);
  emit(g, I_MOV64_REG(BPF_REG_3, r));
  reg_free(g, r);
  emit(g, I_MOV64_IMM(BPF_REG_2, n->type.size));
  emit_str_read(g, n, base, off);
}

/* Only str() of an address, and of a length known when compiling. */
static bool str_at_ok(const Node *n) {
  return n->args->type.kind == TY_INT && !n->ival;
}

/* buf(p, len) with len known only at run time: up to `size` bytes are
 * read (len cut to 0..size, which the verifier needs for the read's
 * length), and the length word says how many. */
static void gen_buf_runtime_len(Gen *g, Node *n, int dst, int cap) {
  Node *arg = n->args;
  int size = n->type.size;
  Held p = {-1, 0};
  if (arg->type.kind == TY_INT) p = hold(g, gen_int(g, arg));
  else gen_buf(g, arg, dst + 8, cap - 8);
  int l = gen_int(g, arg->next);
  emit(g, I_JMP_IMM(BPF_JSGE, l, 0, 1));
  emit(g, I_MOV64_IMM(l, 0));
  emit(g, I_JMP_IMM(BPF_JLE, l, size, 1));
  emit(g, I_MOV64_IMM(l, size));
  Held hl = hold(g, l);
  if (arg->type.kind == TY_INT) {
    if (cap > 8) emit_zero(g, dst + 8, cap - 8);
    int pr = held_reg(g, p, BPF_REG_3);
    if (pr != BPF_REG_3) emit(g, I_MOV64_REG(BPF_REG_3, pr));
    int lr = held_reg(g, hl, BPF_REG_2);
    if (lr != BPF_REG_2) emit(g, I_MOV64_REG(BPF_REG_2, lr));
    emit_scratch(g, BPF_REG_1, dst + 8);
    emit_call(g, read_helper(arg->type.as));
    held_free(g, p);
  }
  emit(g, I_STX(BPF_DW, SCRATCH, held_reg(g, hl, BPF_REG_1), dst));
  held_free(g, hl);
}

/* buf(p, n): an 8-byte length, then n bytes read from p (or a string's
 * first n bytes). */
static void gen_buf_fn(Gen *g, Node *n, int dst, int cap) {
  Node *arg = n->args;
  int size = n->type.size;
  if (n->ival) {
    gen_buf_runtime_len(g, n, dst, cap);
    return;
  }
  if (arg->type.kind != TY_INT) {   /* a string or an array: its bytes */
    gen_buf(g, arg, dst + 8, cap - 8);
  } else {
    int r = gen_int(g, arg);
    int whole = size & ~7;   /* the words the read fills completely */
    if (whole + 8 < cap) emit_zero(g, dst + 8 + whole, cap - 8 - whole);
    emit(g, I_MOV64_REG(BPF_REG_3, r));
    reg_free(g, r);
    emit_scratch(g, BPF_REG_1, dst + 8);
    emit(g, I_MOV64_IMM(BPF_REG_2, size));
    emit_call(g, read_helper(arg->type.as));
  }
  emit(g, I_ST(BPF_DW, SCRATCH, dst , size));
}

/* strncmp(a, b, n): 0 when the first n bytes (up to a NUL) agree. */
static int gen_strncmp(Gen *g, Node *n) {
  Node *a = n->args, *b = a->next;
  int pa = buf_ref(g, a), pb = buf_ref(g, b);
  int len = (int)n->ival;
  if (len > a->type.size) len = a->type.size;
  if (len > b->type.size) len = b->type.size;
  int r = reg_alloc(g);
  int *differ = calloc(len + 1, sizeof(int));
  int *same = calloc(len + 1, sizeof(int));
  for (int i = 0; i < len; i++) {
    emit(g, I_LDX(BPF_B, BPF_REG_2, SCRATCH, pa + i));
    emit(g, I_LDX(BPF_B, BPF_REG_3, SCRATCH, pb + i));
    differ[i] = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_2, BPF_REG_3, 0));
    same[i] = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_2, 0, 0));
  }
  for (int i = 0; i < len; i++) patch_here(g, same[i]);
  emit(g, I_MOV64_IMM(r, 0));
  int done = emit_jump(g, I_JA(0));
  for (int i = 0; i < len; i++) patch_here(g, differ[i]);
  emit(g, I_MOV64_IMM(r, 1));
  patch_here(g, done);
  free(differ);
  free(same);
  return r;
}

/* memcmp: byte by byte, unrolled; at the first difference, the two bytes
 * (unsigned) subtracted. */
static int gen_memcmp(Gen *g, Node *n) {
  Node *a = n->args, *b = a->next;
  int pa = buf_ref(g, a), pb = buf_ref(g, b);
  int len = (int)n->ival;
  int r = reg_alloc(g);
  int *differ = calloc((size_t)len + 1, sizeof(int));
  for (int i = 0; i < len; i++) {
    emit(g, I_LDX(BPF_B, BPF_REG_2, SCRATCH, pa + i));
    emit(g, I_LDX(BPF_B, BPF_REG_3, SCRATCH, pb + i));
    differ[i] = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_2, BPF_REG_3, 0));
  }
  emit(g, I_MOV64_IMM(r, 0));
  int done = emit_jump(g, I_JA(0));
  for (int i = 0; i < len; i++) patch_here(g, differ[i]);
  emit(g, I_MOV64_REG(r, BPF_REG_2));
  emit(g, I_ALU64_REG(BPF_SUB, r, BPF_REG_3));
  patch_here(g, done);
  free(differ);
  return r;
}

/* The bytes strcontains looks for: a literal's own (up to its NUL), or
 * -1 when they are known only at run time. */
static int needle_literal_len(const Node *needle) {
  if (needle->kind != N_STR) return -1;
  int len = (int)strlen(needle->sval);
  return len < needle->type.size ? len : needle->type.size;
}

/* Needles of up to this many bytes are compared unrolled: 10
 * instructions a byte, which the verifier walks once (about 26 a byte),
 * and the fastest at run time; longer ones in a bpf_loop of their own,
 * which it checks in some 600 instructions whatever the sizes. */
#define STRCONTAINS_UNROLLED 128

static bool compared_unrolled(const Node *needle) {
  int lit = needle_literal_len(needle);
  return (lit >= 0 ? lit : needle->type.size) <= STRCONTAINS_UNROLLED;
}

/* The end of a callback over h's positions, with r0 = h's address and
 * r1 = i (below h's size): 0, on to i + 1, unless h ends at i; 1 (stop)
 * then and from `stop`. */
static void emit_next_or_stop(Gen *g, Jumps *stop) {
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1));
  emit(g, I_LDX(BPF_B, BPF_REG_0, BPF_REG_0, 0));               /* h[i] */
  emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 1));
  jumps_add(stop, emit_jump(g, I_JA(0)));
  emit(g, I_MOV64_IMM(BPF_REG_0, 0));
  emit(g, I_EXIT());
  jumps_patch_here(g, stop);
  emit(g, I_MOV64_IMM(BPF_REG_0, 1));
  emit(g, I_EXIT());
}

/* Where s is found: strcontains sets its result to 1; strstr to one
 * more than the position i (in register i_reg, or at ctx + i_off when
 * i_reg < 0), so that 0 still means not found. r2 = the context. */
static void emit_found(Gen *g, Node *n, int i_reg, int i_off) {
  if (strcmp(n->name, "strstr")) {
    emit(g, I_ST(BPF_DW, BPF_REG_2, 8, 1));
    return;
  }
  if (i_reg >= 0)
    emit(g, I_MOV64_REG(BPF_REG_0, i_reg));
  else
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_2, i_off));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_0, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_2, BPF_REG_0, 8));
}

/* strcontains' bpf_loop callback, one per call: r1 = i, a position in h,
 * r2 = the context (h's address, the result, s's address). Whether s
 * starts at h[i], byte by byte without a loop or a helper, so that the
 * verifier checks it once, with i unknown, rather than walking every pair
 * of positions. Returns 1 (stop) when s is found, or h ends before it,
 * else 0 (on to i + 1). */
static void strcontains_callback(Gen *g, Node *n) {
  Node *hay = n->args, *needle = hay->next;
  int hcap = hay->type.size, lit = needle_literal_len(needle);
  int len = lit >= 0 ? lit : needle->type.size;
  Jumps found = {0}, next = {0}, stop = {0};
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_2, 0));
  if (lit < 0) emit(g, I_LDX(BPF_DW, BPF_REG_4, BPF_REG_2, 16));
  /* Each test jumps on when it passes and falls through to a jump to its
   * way out: the verifier then follows the way out first, to its end,
   * and keeps one state waiting at a time, where a chain of jumps out
   * would leave one waiting per test (no more than 8192 may wait). */
  for (int j = 0; j < len; j++) {
    if (lit < 0) {
      emit(g, I_LDX(BPF_B, BPF_REG_5, BPF_REG_4, j));          /* s[j] */
      emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_5, 0, 1));
      jumps_add(&found, emit_jump(g, I_JA(0)));
    }
    /* h ends first: not here, nor further on. This bound on i, met
     * before each read, is what keeps the read inside h for the verifier */
    if (j < hcap) emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_1, hcap - j, 1));
    jumps_add(&stop, emit_jump(g, I_JA(0)));
    if (j >= hcap) break;
    emit(g, I_MOV64_REG(BPF_REG_0, BPF_REG_3));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1));
    emit(g, I_LDX(BPF_B, BPF_REG_0, BPF_REG_0, j));          /* h[i + j] */
    emit(g, lit >= 0
        ? I_JMP_IMM(BPF_JEQ, BPF_REG_0, (uint8_t)needle->sval[j], 1)
        : I_JMP_REG(BPF_JEQ, BPF_REG_0, BPF_REG_5, 1));
    jumps_add(&next, emit_jump(g, I_JA(0)));
  }
  jumps_patch_here(g, &found);
  emit_found(g, n, BPF_REG_1, 0);
  emit(g, I_MOV64_IMM(BPF_REG_0, 1));
  emit(g, I_EXIT());
  jumps_patch_here(g, &next);   /* every path here has i < hcap */
  emit(g, I_MOV64_REG(BPF_REG_0, BPF_REG_3));
  emit_next_or_stop(g, &stop);
}

/* A longer needle is compared by a second bpf_loop (its callback over
 * the positions j of s), from the callback over the positions i of h,
 * which leaves i at ctx + 24; ctx + 32 is set when h ended before s. */
static void strcontains_inner(Gen *g, Node *n) {
  int hcap = n->args->type.size, ncap = n->args->next->type.size;
  Jumps found = {0}, stop = {0}, ended = {0};
  emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_1, ncap, 1));   /* all of s matched */
  jumps_add(&found, emit_jump(g, I_JA(0)));
  emit(g, I_LDX(BPF_DW, BPF_REG_4, BPF_REG_2, 16));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_4, BPF_REG_1));
  emit(g, I_LDX(BPF_B, BPF_REG_5, BPF_REG_4, 0));               /* s[j] */
  emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_5, 0, 1));
  jumps_add(&found, emit_jump(g, I_JA(0)));
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_2, 24));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_1));          /* i + j */
  emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_3, hcap, 1));
  jumps_add(&ended, emit_jump(g, I_JA(0)));
  emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_2, 0));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_3));
  emit(g, I_LDX(BPF_B, BPF_REG_0, BPF_REG_0, 0));           /* h[i + j] */
  emit(g, I_JMP_REG(BPF_JEQ, BPF_REG_0, BPF_REG_5, 1));
  jumps_add(&stop, emit_jump(g, I_JA(0)));
  emit(g, I_MOV64_IMM(BPF_REG_0, 0));
  emit(g, I_EXIT());
  jumps_patch_here(g, &ended);
  emit(g, I_ST(BPF_DW, BPF_REG_2, 32, 1));
  jumps_add(&stop, emit_jump(g, I_JA(0)));
  jumps_patch_here(g, &found);
  emit_found(g, n, -1, 24);
  jumps_patch_here(g, &stop);
  emit(g, I_MOV64_IMM(BPF_REG_0, 1));
  emit(g, I_EXIT());
}

static void strcontains_outer(Gen *g, Node *n) {
  int hcap = n->args->type.size, ncap = n->args->next->type.size;
  Jumps stop = {0};
  emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_1, hcap, 1));
  jumps_add(&stop, emit_jump(g, I_JA(0)));
  emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_2));   /* kept across the call */
  emit(g, I_STX(BPF_DW, BPF_REG_2, BPF_REG_1, 24));
  emit(g, I_MOV64_IMM(BPF_REG_1, ncap + 1));
  emit_callback_fn(g, n, BPF_REG_2, strcontains_inner);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_6));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_loop);
  for (int off = 8; off <= 32; off += 24) {     /* found, or h ended */
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_6, off));
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
    jumps_add(&stop, emit_jump(g, I_JA(0)));
  }
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_6, 24));
  emit(g, I_JMP_IMM(BPF_JLT, BPF_REG_1, hcap, 1));
  jumps_add(&stop, emit_jump(g, I_JA(0)));
  emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_6, 0));
  emit_next_or_stop(g, &stop);
}

/* strcontains(h, s): bpf_loop runs a callback for each position of h
 * (it stops at h's end), with a context on the stack: h's address, the
 * result, s's address, then for a long s the position and whether h
 * ended. Two literals are compared here. */
static int gen_strcontains(Gen *g, Node *n) {
  Node *hay = n->args, *needle = hay->next;
  int r;
  bool index = !strcmp(n->name, "strstr");
  if ((hay->kind == N_STR && needle->kind == N_STR) ||
      needle_literal_len(needle) == 0) {   /* "" is in every string, at 0 */
    r = reg_alloc(g);
    const char *at = needle_literal_len(needle) == 0
                         ? (hay->kind == N_STR ? hay->sval : "")
                         : strstr(hay->sval, needle->sval);
    emit(g, I_MOV64_IMM(r, index ? (at ? (int32_t)(at - (hay->kind == N_STR
                                                           ? hay->sval : at))
                                       : -1)
                                 : at != NULL));
    return r;
  }
  bool unrolled = compared_unrolled(needle);
  int ph = buf_ref(g, hay);
  bool literal = unrolled && needle_literal_len(needle) > 0;
  int pn = literal ? 0 : buf_ref(g, needle);
  int ctx = stack_alloc(g, 40);
  emit_scratch(g, BPF_REG_1, ph);
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, ctx));
  emit(g, I_ST(BPF_DW, BPF_REG_10, ctx + 8, 0));
  emit(g, I_ST(BPF_DW, BPF_REG_10, ctx + 32, 0));
  if (!literal) {
    emit_scratch(g, BPF_REG_1, pn);
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, ctx + 16));
  }
  emit(g, I_MOV64_IMM(BPF_REG_1, hay->type.size));
  emit_callback_fn(g, n, BPF_REG_2,
                   unrolled ? strcontains_callback : strcontains_outer);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, ctx));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_loop);
  r = reg_alloc(g);   /* only now: the strings' code may need them all */
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, ctx + 8));
  if (index) emit(g, I_ALU64_IMM(BPF_SUB, r, 1));   /* -1: not found */
  return r;
}

/* strlen(s): the bytes before the first NUL. A string is scanned byte by
 * byte, unrolled (6 instructions a byte, no loop or branch for the
 * verifier to walk); a pointer is read with the *_str helper, whose result counts the
 * NUL. */
static int gen_strlen(Gen *g, Node *n) {
  Node *a = n->args;
  int r;
  if (a->type.kind == TY_INT) {
    int size = (int)n->ival;
    int tmp = scratch_alloc(g, size);
    int p = gen_int(g, a);
    emit(g, I_MOV64_REG(BPF_REG_3, p));
    reg_free(g, p);
    emit_scratch(g, BPF_REG_1, tmp);
    emit(g, I_MOV64_IMM(BPF_REG_2, size));
    emit_call(g, a->type.as ? probe_read_str_helper(a->type.as)
                            : unknown_space_str_helper(g));
    r = reg_alloc(g);
    emit(g, I_MOV64_IMM(r, 0));
    emit(g, I_JMP_IMM(BPF_JSLE, BPF_REG_0, 0, 2));
    emit(g, I_MOV64_REG(r, BPF_REG_0));
    emit(g, I_ALU64_IMM(BPF_SUB, r, 1));
    return r;
  }
  int at = buf_ref(g, a);
  int len = a->type.size;
  if (len > BIG_BUFFER) {
    /* too many branches for the verifier: the *_str helper counts it,
     * copying it (and a NUL after a string that fills its buffer) */
    int tmp = scratch_alloc(g, len + 1);
    emit_scratch(g, BPF_REG_3, at);
    emit_scratch(g, BPF_REG_1, tmp);
    emit(g, I_MOV64_IMM(BPF_REG_2, len + 1));
    emit_call(g, BPF_FUNC_probe_read_kernel_str);
    r = reg_alloc(g);
    emit(g, I_MOV64_IMM(r, 0));
    emit(g, I_JMP_IMM(BPF_JSLE, BPF_REG_0, 0, 2));
    emit(g, I_MOV64_REG(r, BPF_REG_0));
    emit(g, I_ALU64_IMM(BPF_SUB, r, 1));
    return r;
  }
  /* without a branch: r += alive, where alive stays 1 until the first
   * NUL. A branch a byte gave the verifier one path per length, and paths
   * multiply: five strlen() summed and compared went past its million
   * instructions. ((b - 1) >> 63) is 1 for b == 0 alone (b is 0..255). */
  r = reg_alloc(g);
  int alive = BPF_REG_2;   /* a scratch register, as r1 is: no call here */
  emit(g, I_MOV64_IMM(r, 0));
  emit(g, I_MOV64_IMM(alive, 1));
  for (int i = 0; i < len; i++) {
    emit(g, I_LDX(BPF_B, BPF_REG_1, SCRATCH, at + i));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, -1));
    emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_1, 63));
    emit(g, I_ALU64_IMM(BPF_XOR, BPF_REG_1, 1));
    emit(g, I_ALU64_REG(BPF_AND, alive, BPF_REG_1));
    emit(g, I_ALU64_REG(BPF_ADD, r, alive));
  }
  return r;
}

/* str_concat(a, b): a's bytes up to its NUL, then b's over that NUL. The
 * *_str helper copies each; its count of a's bytes places b, bounded by
 * a's size for the verifier. The rest of the string stays zero. */
static void gen_str_concat(Gen *g, Node *n, int dst, int cap) {
  Node *a = n->args, *b = a->next;
  int pa = buf_ref(g, a), pb = buf_ref(g, b);
  int size = n->type.size < cap ? n->type.size : cap;
  int sa = a->type.size < size ? a->type.size : size;
  emit_zero(g, dst, cap);
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, sa));
  emit_scratch(g, BPF_REG_3, pa);
  emit_call(g, BPF_FUNC_probe_read_kernel_str);
  int len = reg_alloc(g);   /* a's bytes before its NUL */
  emit(g, I_MOV64_IMM(len, 0));
  emit(g, I_JMP_IMM(BPF_JSLE, BPF_REG_0, 1, 2));
  emit(g, I_MOV64_REG(len, BPF_REG_0));
  emit(g, I_ALU64_IMM(BPF_SUB, len, 1));
  emit(g, I_JMP_IMM(BPF_JLE, len, sa - 1, 1));
  emit(g, I_MOV64_IMM(len, sa - 1));
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, len));
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_2, len));
  reg_free(g, len);
  emit_scratch(g, BPF_REG_3, pb);
  emit_call(g, BPF_FUNC_probe_read_kernel_str);
}

const Builtin builtins_strings[] = {
    {.name = "str", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_str, .emit_buf = gen_str_fn,
     .emit_buf_at = gen_str_at, .buf_at_ok = str_at_ok},
    {.name = "buf", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .check = check_buf, .emit_buf = gen_buf_fn},
    {.name = "strncmp", .form = BI_CALL, .min_args = 3, .max_args = 3,
     .has_value = true, .check = check_strncmp, .emit_int = gen_strncmp},
    {.name = "strcontains", .form = BI_CALL, .min_args = 2, .max_args = 2,
     .has_value = true, .check = check_strcontains,
     .emit_int = gen_strcontains},
    {.name = "strstr", .form = BI_CALL, .min_args = 2, .max_args = 2,
     .has_value = true, .check = check_strcontains,
     .emit_int = gen_strcontains},
    {.name = "memcmp", .form = BI_CALL, .min_args = 3, .max_args = 3,
     .has_value = true, .check = check_memcmp, .emit_int = gen_memcmp},
    {.name = "strerror", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_named, .emit_int = emit_first_argument},
    {.name = "signal_name", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_named, .emit_int = emit_first_argument},
    {.name = "syscall_name", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_named, .emit_int = emit_first_argument},
    {.name = "strlen", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_strlen, .emit_int = gen_strlen},
    {.name = "str_concat", .form = BI_CALL, .min_args = 2, .max_args = 2,
     .has_value = true, .check = check_str_concat, .emit_buf = gen_str_concat},
    {0},
};
