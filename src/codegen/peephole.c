/* peephole: the last passes over a generated program — unreachable code
 * removed (folded conditions leave branches that never run, which the
 * verifier refuses), and reloads of stack slots a register already holds
 * dropped. */
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"

enum { NO_SLOT = 1, NREGS = 11 };   /* stack slot offsets are <= 0 */

bool is_ld_imm64(const struct bpf_insn *in) {
  return in->code == (BPF_LD | BPF_DW | BPF_IMM);
}

bool is_jump(const struct bpf_insn *in) {
  int cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
  return (cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_CALL &&
         op != BPF_EXIT;
}

bool is_pseudo_call(const struct bpf_insn *in) {
  return in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL;
}

bool is_pseudo_func(const struct bpf_insn *in) {
  return is_ld_imm64(in) && in->src_reg == BPF_PSEUDO_FUNC;
}

void mark_reachable(const BpfProg *p, bool *seen, int *stack,
                           int start) {
  int top = 0;
  stack[top++] = start;
  while (top) {
    int i = stack[--top];
    if (i < 0 || i >= p->ninsns || seen[i]) continue;
    seen[i] = true;
    const struct bpf_insn *in = &p->insns[i];
    if (is_ld_imm64(in)) {
      seen[i + 1] = true;
      if (is_pseudo_func(in)) stack[top++] = i + in->imm + 1;
      stack[top++] = i + 2;
    } else if (in->code == (BPF_JMP | BPF_EXIT)) {
      /* nothing follows */
    } else if (is_jump(in)) {
      stack[top++] = i + in->off + 1;
      if (BPF_OP(in->code) != BPF_JA) stack[top++] = i + 1;
    } else {
      if (is_pseudo_call(in)) stack[top++] = i + in->imm + 1;
      stack[top++] = i + 1;
    }
  }
}

/* Drops the instructions not marked in `keep`, re-aiming every jump and
 * call (a jump to a dropped instruction goes to the next kept one). */
void compact(BpfProg *p, const bool *seen) {
  int n = p->ninsns;
  int *to = malloc(sizeof(int) * (n + 1));
  int kept = 0;
  for (int i = 0; i < n; i++) {
    to[i] = kept;
    if (seen[i]) kept++;
  }
  to[n] = kept;
  if (kept < n) {
    int nmain = p->nmain ? to[p->nmain] : 0;
    for (int i = 0; i < n; i++) {
      if (!seen[i]) continue;
      struct bpf_insn *in = &p->insns[i];
      if (is_jump(in))
        in->off = (int16_t)(to[i + in->off + 1] - to[i] - 1);
      else if (is_pseudo_call(in) || is_pseudo_func(in))
        in->imm = to[i + in->imm + 1] - to[i] - 1;
    }
    for (int i = 0; i < n; i++)
      if (seen[i]) {
        p->insns[to[i]] = p->insns[i];
        p->insn_span[to[i]] = p->insn_span[i];
      }
    p->ninsns = kept;
    p->nmain = nmain;
    int ng = 0;
    for (int k = 0; k < p->nglobals; k++)
      if (seen[p->globals[k]]) {
        p->global_args[ng] = p->global_args[k];
        p->globals[ng++] = to[p->globals[k]];
      }
    p->nglobals = ng;
    int nv = 0;
    for (int k = 0; k < p->nvar_frames; k++)
      if (seen[p->var_starts[k]]) {
        p->var_slots[nv] = p->var_slots[k];
        p->var_starts[nv++] = to[p->var_starts[k]];
      }
    p->nvar_frames = nv;
  }
  free(to);
}

void prune_unreachable(BpfProg *p) {
  bool *seen = calloc(p->ninsns + 1, sizeof(bool));
  int *stack = malloc(sizeof(int) * (3 * p->ninsns + 3));
  mark_reachable(p, seen, stack, 0);
  compact(p, seen);
  free(seen);
  free(stack);
}

/* What each register is known to hold, as drop_redundant_loads follows
 * the code: m[r], the stack slot whose 8 bytes it mirrors (NO_SLOT: none);
 * m[FIELD + r], a field of the context it holds, as (offset << 3 | size)
 * (NO_FIELD: none); m[CTX + r], 1 if it holds the context pointer. The
 * context of every program loupe makes is read-only (tracepoint records,
 * raw and fentry argument arrays, pt_regs, perf and iterator contexts),
 * so a field read once reads the same again; only bpf_override_return
 * changes pt_regs. */
enum { FIELD = NREGS, CTX = 2 * NREGS, NO_FIELD = -1 };

static int unknown(int i) {
  return i < FIELD ? NO_SLOT : i < CTX ? NO_FIELD : 0;
}

void mirror_forget(int *m) {
  for (int i = 0; i < MIRROR_SIZE; i++) m[i] = unknown(i);
}

void mirror_meet(int *into, const int *from) {
  for (int i = 0; i < MIRROR_SIZE; i++)
    if (into[i] != from[i]) into[i] = unknown(i);
}

/* Register r gets a new value: it mirrors nothing. */
static void mirror_write(int *m, int r) {
  m[r] = NO_SLOT;
  m[FIELD + r] = NO_FIELD;
  m[CTX + r] = 0;
}

/* The program starts with the context in r1. */
void mirror_entry(int *m) {
  mirror_forget(m);
  m[CTX + BPF_REG_1] = 1;
}

/* What instruction `in` does to the mirrors; returns true if it is a load
 * the mirrors make redundant. */
bool mirror_step(int *m, const struct bpf_insn *in) {
  int cls = BPF_CLASS(in->code), size = BPF_SIZE(in->code);
  bool mem = BPF_MODE(in->code) == BPF_MEM;
  if (cls == BPF_LDX && mem && in->src_reg == BPF_REG_10 && size == BPF_DW) {
    if (m[in->dst_reg] == in->off) return true;
    mirror_write(m, in->dst_reg);
    m[in->dst_reg] = in->off;
    if (in->off == SLOT_CTX) m[CTX + in->dst_reg] = 1;
    return false;
  }
  if (cls == BPF_LDX && mem && m[CTX + in->src_reg] && in->off >= 0) {
    int field = in->off << 3 | size >> 3;
    if (m[FIELD + in->dst_reg] == field) return true;
    mirror_write(m, in->dst_reg);
    m[FIELD + in->dst_reg] = field;
    return false;
  }
  if ((cls == BPF_STX || cls == BPF_ST) && in->dst_reg == BPF_REG_10) {
    int bytes = size == BPF_DW ? 8 : size == BPF_W ? 4 : size == BPF_H ? 2 : 1;
    for (int r = 0; r < NREGS; r++)
      if (m[r] != NO_SLOT && m[r] < in->off + bytes && in->off < m[r] + 8)
        m[r] = NO_SLOT;
    if (cls == BPF_STX && size == BPF_DW && mem) m[in->src_reg] = in->off;
    return false;
  }
  if (in->code == (BPF_JMP | BPF_CALL)) {
    /* the helper may write any stack slot; r0..r5 are lost, r6..r9 keep
     * their values (and their fields, unless pt_regs change) */
    bool regs_change = in->src_reg == 0 && in->imm == BPF_FUNC_override_return;
    for (int r = 0; r < NREGS; r++) {
      m[r] = NO_SLOT;
      if (r <= BPF_REG_5 || regs_change) {
        m[FIELD + r] = NO_FIELD;
        if (r <= BPF_REG_5) m[CTX + r] = 0;
      }
    }
    return false;
  }
  if (cls == BPF_ALU || cls == BPF_ALU64 || cls == BPF_LDX || is_ld_imm64(in))
    mirror_write(m, in->dst_reg);
  return false;
}

_Static_assert(MIRROR_SIZE == 3 * NREGS, "MIRROR_SIZE in gen.h");

/* Does `in` read register r? (Calls read their arguments, r1..r5.) */
static bool reads_reg(const struct bpf_insn *in, int r) {
  int cls = BPF_CLASS(in->code);
  if (is_ld_imm64(in)) return false;
  if (in->code == (BPF_JMP | BPF_CALL)) return r >= BPF_REG_1 && r <= BPF_REG_5;
  if (in->code == (BPF_JMP | BPF_EXIT)) return r == BPF_REG_0;
  if (cls == BPF_ALU || cls == BPF_ALU64) {
    bool x = BPF_SRC(in->code) == BPF_X && BPF_OP(in->code) != BPF_END &&
             BPF_OP(in->code) != BPF_NEG;
    return (BPF_OP(in->code) != BPF_MOV && in->dst_reg == r) ||
           (x && in->src_reg == r);
  }
  if (cls == BPF_LDX) return in->src_reg == r;
  if (cls == BPF_ST) return in->dst_reg == r;
  return in->dst_reg == r || in->src_reg == r;   /* stores, jumps */
}

/* Does `in` give register r a new value (without reading it first)? */
static bool writes_reg(const struct bpf_insn *in, int r) {
  int cls = BPF_CLASS(in->code);
  if (in->code == (BPF_JMP | BPF_CALL)) return r <= BPF_REG_5;
  if (is_ld_imm64(in) || cls == BPF_LDX || cls == BPF_ALU ||
      cls == BPF_ALU64)
    return in->dst_reg == r && !reads_reg(in, r);
  return false;
}

enum { LOOK_AHEAD = 64 };   /* instructions dead_from may look at */

/* Whether register d, from instruction j on, is written again (or the
 * program leaves) before anything reads it, on every path: forward jumps
 * are followed, a backward jump says no, and so does running out of
 * `budget` instructions looked at. */
static bool dead_from(const BpfProg *p, const bool *keep, int j, int d,
                      int *budget) {
  for (; j < p->ninsns; j++) {
    const struct bpf_insn *next = &p->insns[j];
    if (!keep[j]) continue;
    if (--*budget < 0 || reads_reg(next, d)) return false;
    if (writes_reg(next, d) || next->code == (BPF_JMP | BPF_EXIT))
      return true;
    /* an atomic reads its operands (reads_reg) and a compare-exchange r0 */
    if (BPF_MODE(next->code) == BPF_ATOMIC && d == BPF_REG_0) return false;
    if (is_jump(next)) {
      if (next->off < 0) return false;
      int t = j + next->off + 1;
      if (BPF_OP(next->code) != BPF_JA && !dead_from(p, keep, t, d, budget))
        return false;
      if (BPF_OP(next->code) == BPF_JA) j = t - 1;
      continue;
    }
    if (is_ld_imm64(next)) j++;
  }
  return false;
}

/* What dead_after knows of a program: what is live after each
 * instruction (regs_live_after's, computed when first asked), and
 * whether that is worth computing (-1: not decided yet). */
typedef struct Liveness {
  uint64_t *live;
  int exact;
} Liveness;

/* Whether nothing reads register r after instruction i (on any path):
 * dead_from's look ahead first; where that cannot tell, what is live
 * after i, in programs where the look ahead falls short: those that
 * jump back (loops), and those with variables, whose registers hold
 * values for long (promote_vars). A pass may ask this after changing a
 * few instructions: those it drops stay in p until it compacts, and only
 * make more registers live. */
static bool dead_after(const BpfProg *p, const bool *keep, int i, int r,
                       Liveness *lv) {
  const struct bpf_insn *in = &p->insns[i];
  int budget = LOOK_AHEAD;
  bool jump = is_jump(in), ja = jump && BPF_OP(in->code) == BPF_JA;
  if (in->code == (BPF_JMP | BPF_EXIT)) return true;
  if ((ja || dead_from(p, keep, i + (is_ld_imm64(in) ? 2 : 1), r, &budget)) &&
      (!jump || (in->off >= 0 &&
                 dead_from(p, keep, i + 1 + in->off, r, &budget))))
    return true;
  if (lv->exact < 0) {
    lv->exact = p->nvar_frames > 0;
    for (int k = 0; k < p->ninsns && !lv->exact; k++)
      lv->exact = is_jump(&p->insns[k]) && p->insns[k].off < 0;
  }
  if (!lv->exact) return false;
  if (!lv->live) lv->live = regs_live_after(p);
  return !(lv->live[i] >> r & 1);
}

/* A keep[] for compact() that keeps every instruction of p. */
static bool *keep_all(const BpfProg *p) {
  bool *keep = malloc(sizeof(bool) * ((size_t)p->ninsns + 1));
  for (int i = 0; i < p->ninsns; i++) keep[i] = true;
  return keep;
}

/* Removes a move or a reload of a stack slot whose register is written
 * again, or the program leaves, before anything reads it (what the
 * dropped loads of drop_redundant_loads leave behind: the context
 * fetched from its slot for a field already at hand). A call that takes
 * the register as an argument keeps the instruction. */
void drop_dead_writes(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = keep_all(p);
  bool dropped = false;
  for (int i = 0; i < n; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (is_ld_imm64(in)) {
      i++;
      continue;
    }
    bool pure = (in->code == (BPF_LDX | BPF_MEM | BPF_DW) &&
                 in->src_reg == BPF_REG_10) ||
                in->code == (BPF_ALU64 | BPF_MOV | BPF_X) ||
                in->code == (BPF_ALU64 | BPF_MOV | BPF_K);
    int d = in->dst_reg;
    if (!pure || d == BPF_REG_10) continue;
    int budget = LOOK_AHEAD;
    if (dead_from(p, keep, i + 1, d, &budget)) {
      keep[i] = false;
      dropped = true;
    }
  }
  if (dropped) compact(p, keep);
  free(keep);
}

/* The instructions something other than the one before may lead to:
 * jump and call targets, and the starts of global subprograms. */
static bool *jump_targets(const BpfProg *p) {
  bool *t = calloc((size_t)p->ninsns + 1, sizeof(bool));
  for (int i = 0; i < p->ninsns; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (is_jump(in)) t[i + in->off + 1] = true;
    if (is_pseudo_call(in) || is_pseudo_func(in)) t[i + in->imm + 1] = true;
    if (is_ld_imm64(in)) i++;
  }
  for (int k = 0; k < p->nglobals; k++) t[p->globals[k]] = true;
  return t;
}

/* A copy `rD = rS` whose only use is the store right after it (to the
 * stack, or through another register: a record reserved in the ring
 * buffer) stores rS itself: `r0 >>= 32; w6 = w0; *(u64 *)(r10 - 48) = r6`
 * (pid, kept out of r0 in case a call came first) becomes
 * `r0 >>= 32; *(u64 *)(r10 - 48) = r0`; likewise a conditional jump
 * right after that tests rD (`if r6 != 1234`) tests rS, and an operation
 * or a jump right after that takes rD as its operand takes rS (`r7 = r9;
 * r6 += r7`, a variable in r9: `r6 += r9`). A 32-bit copy qualifies when
 * a shift right by 32 or more just emptied rS's upper half. */
void forward_copies(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = keep_all(p);
  bool *target = jump_targets(p);
  Liveness lv = {NULL, -1};
  bool dropped = false;
  for (int i = 0; i + 1 < n; i++) {
    struct bpf_insn *in = &p->insns[i], *st = &p->insns[i + 1];
    if (is_ld_imm64(in)) {
      i++;
      continue;
    }
    bool copy = in->code == (BPF_ALU64 | BPF_MOV | BPF_X);
    if (in->code == (BPF_ALU | BPF_MOV | BPF_X) && i > 0 && !target[i] &&
        (i < 2 || !is_ld_imm64(&p->insns[i - 2]))) {
      const struct bpf_insn *sh = &p->insns[i - 1];
      copy = sh->code == (BPF_ALU64 | BPF_RSH | BPF_K) &&
             sh->dst_reg == in->src_reg && sh->imm >= 32;
    }
    int d = in->dst_reg, s = in->src_reg;
    if (!copy || d == s || d == BPF_REG_10 || target[i + 1]) continue;
    bool store = BPF_CLASS(st->code) == BPF_STX &&
                 BPF_MODE(st->code) == BPF_MEM && st->src_reg == d &&
                 st->dst_reg != d;
    bool test = is_jump(st) && BPF_OP(st->code) != BPF_JA &&
                st->dst_reg == d && st->off >= 0 &&
                (BPF_SRC(st->code) == BPF_K || st->src_reg != d);
    /* `r7 = r9; r6 += r7` (a variable in r9): `r6 += r9` */
    bool cls_alu = BPF_CLASS(st->code) == BPF_ALU64 ||
                   BPF_CLASS(st->code) == BPF_ALU;
    bool operand = BPF_SRC(st->code) == BPF_X && st->src_reg == d &&
                   st->dst_reg != d &&
                   ((cls_alu && BPF_OP(st->code) != BPF_END &&
                     BPF_OP(st->code) != BPF_NEG) ||
                    (is_jump(st) && BPF_OP(st->code) != BPF_JA &&
                     st->off >= 0));
    /* and nothing reads d after, on any path (the copies already
     * dropped only make more registers live) */
    if (!(store || test || operand) || !dead_after(p, keep, i + 1, d, &lv))
      continue;
    if (store || operand)
      st->src_reg = (uint8_t)s;
    else
      st->dst_reg = (uint8_t)s;
    keep[i] = false;
    dropped = true;
  }
  if (dropped) compact(p, keep);
  free(keep);
  free(target);
  free(lv.live);
}

/* Whether `in` gives its destination a value without reading it, so
 * that another register could take the value in its place: a load, a
 * constant, a copy. */
static bool produces(const struct bpf_insn *in) {
  return (BPF_CLASS(in->code) == BPF_LDX && BPF_MODE(in->code) == BPF_MEM) ||
         in->code == (BPF_ALU64 | BPF_MOV | BPF_K) ||
         in->code == (BPF_ALU64 | BPF_MOV | BPF_X) ||
         in->code == (BPF_ALU | BPF_MOV | BPF_K) || is_ld_imm64(in);
}

/* A value made in one register only to be copied into another, `r6 =
 * *(u64 *)(r1 + 24); r3 = r6` (a helper's argument, computed before the
 * registers r1-r5 were free), is made in the other: `r3 = *(u64 *)(r1 +
 * 24)`, when nothing reads the first register after the copy. */
void coalesce_copies(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = keep_all(p);
  bool *target = jump_targets(p);
  Liveness lv = {NULL, -1};
  bool dropped = false;
  for (int i = 0; i + 1 < n; i++) {
    struct bpf_insn *in = &p->insns[i];
    int next = i + (is_ld_imm64(in) ? 2 : 1);
    if (next >= n) break;
    const struct bpf_insn *cp = &p->insns[next];
    int s = in->dst_reg, d = cp->dst_reg;
    if (produces(in) && cp->code == (BPF_ALU64 | BPF_MOV | BPF_X) &&
        cp->src_reg == s && d != s && d != BPF_REG_10 &&
        s != BPF_REG_10 && !target[next] &&
        !(in->code == (BPF_ALU64 | BPF_MOV | BPF_X) && in->src_reg == d) &&
        dead_after(p, keep, next, s, &lv)) {
      in->dst_reg = (uint8_t)d;
      keep[next] = false;
      dropped = true;
      i = next;
      continue;
    }
    i = next - 1;
  }
  if (dropped) compact(p, keep);
  free(keep);
  free(target);
  free(lv.live);
}

static bool callee_saved(int r) { return r >= BPF_REG_6 && r <= BPF_REG_9; }

/* The registers `in` names, t renamed r (an ld_imm64's src is not one). */
static void rename_reg(struct bpf_insn *in, int t, int r) {
  int cls = BPF_CLASS(in->code);
  if (in->dst_reg == t) in->dst_reg = (uint8_t)r;
  bool src_is_reg = cls == BPF_LDX || cls == BPF_STX ||
                    ((cls == BPF_ALU || cls == BPF_ALU64 || is_jump(in)) &&
                     BPF_SRC(in->code) == BPF_X);
  if (src_is_reg && in->src_reg == t) in->src_reg = (uint8_t)r;
}

/* The first instruction of the straight stretch before the copy at j,
 * `r = t`, that computes t for it: the last one before j that gives t a
 * value without reading it, when nothing from there to j jumps, is
 * jumped to (but the first), reads or changes r (but the first, which
 * may read it), or changes t otherwise. -1 if there is none. */
static int chain_start(const BpfProg *p, const bool *keep,
                       const bool *target, int j, int r, int t) {
  for (int k = j - 1; k >= 0 && j - k <= LOOK_AHEAD; k--) {
    if (target[k + 1]) return -1;
    if (k >= 1 && is_ld_imm64(&p->insns[k - 1])) continue;   /* 2nd half */
    const struct bpf_insn *in = &p->insns[k];
    if (!keep[k]) continue;
    if (writes_reg(in, t)) return k;
    int cls = BPF_CLASS(in->code);
    bool writes_r = in->dst_reg == r &&
                    (cls == BPF_ALU || cls == BPF_ALU64 || cls == BPF_LDX ||
                     is_ld_imm64(in));
    if (is_jump(in) || in->code == (BPF_JMP | BPF_EXIT) ||
        BPF_MODE(in->code) == BPF_ATOMIC || reads_reg(in, r) || writes_r)
      return -1;
  }
  return -1;
}

/* A value computed in one callee-saved register only to be copied into
 * another, `r6 = r9; r6 += 1; r9 = r6` ($d++ with $d in r9, see
 * promote_vars), is computed in the other: `r9 += 1`, when the stretch
 * is straight, nothing in it uses the other's old value after its first
 * instruction, and nothing reads the first register after the copy. */
void compute_in_place(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = keep_all(p);
  bool *target = jump_targets(p);
  Liveness lv = {NULL, -1};
  bool dropped = false;
  for (int j = 0; j < n; j++) {
    struct bpf_insn *cp = &p->insns[j];
    if (is_ld_imm64(cp)) {
      j++;
      continue;
    }
    int r = cp->dst_reg, t = cp->src_reg;
    if (cp->code != (BPF_ALU64 | BPF_MOV | BPF_X) || r == t ||
        !callee_saved(r) || !callee_saved(t))
      continue;
    int d = chain_start(p, keep, target, j, r, t);
    if (d < 0) continue;
    if (!dead_after(p, keep, j, t, &lv)) continue;
    for (int k = d; k < j; k++) {
      if (keep[k]) rename_reg(&p->insns[k], t, r);
      if (is_ld_imm64(&p->insns[k])) k++;
    }
    const struct bpf_insn self = I_MOV64_REG(r, r);
    if (!memcmp(&p->insns[d], &self, sizeof self)) keep[d] = false;
    keep[j] = false;
    dropped = true;
  }
  if (dropped) compact(p, keep);
  free(keep);
  free(target);
  free(lv.live);
}

/* r0 = 0; exit at insns[i]: a return. */
static bool is_return0(const BpfProg *p, int i) {
  const struct bpf_insn ret = I_MOV64_IMM(BPF_REG_0, 0), ex = I_EXIT();
  return i + 1 < p->ninsns && !memcmp(&p->insns[i], &ret, sizeof ret) &&
         !memcmp(&p->insns[i + 1], &ex, sizeof ex);
}

/* The jump that goes where `op` does not (0: none, BPF_JSET). */
static int opposite_jump(int op) {
  switch (op) {
  case BPF_JEQ: return BPF_JNE;
  case BPF_JNE: return BPF_JEQ;
  case BPF_JGT: return BPF_JLE;
  case BPF_JLE: return BPF_JGT;
  case BPF_JGE: return BPF_JLT;
  case BPF_JLT: return BPF_JGE;
  case BPF_JSGT: return BPF_JSLE;
  case BPF_JSLE: return BPF_JSGT;
  case BPF_JSGE: return BPF_JSLT;
  case BPF_JSLT: return BPF_JSGE;
  default: return 0;
  }
}

/* An early return, `if C goto +2; r0 = 0; exit` (the exit() flag, the
 * predicate, -p), becomes `if !C goto` the return that closes the main
 * program: two instructions fewer, and the verifier, which has reached
 * that return by the fall-through path first, prunes the jump's path
 * there at once instead of walking two more instructions. */
void share_returns(BpfProg *p) {
  int end = p->nmain ? p->nmain : p->ninsns;
  if (end < 2 || !is_return0(p, end - 2)) return;
  bool *keep = keep_all(p);
  bool *target = jump_targets(p);
  bool dropped = false;
  for (int i = 0; i + 3 < end - 2; i++) {
    struct bpf_insn *in = &p->insns[i];
    if (is_ld_imm64(in)) {
      i++;
      continue;
    }
    int op = BPF_OP(in->code), inv = opposite_jump(op);
    if (!is_jump(in) || op == BPF_JA || !inv || in->off != 2 ||
        !is_return0(p, i + 1) || target[i + 1] || target[i + 2] ||
        end - 2 - i - 1 > INT16_MAX)
      continue;
    in->code = (uint8_t)((in->code & ~BPF_OP(0xff)) | inv);
    in->off = (int16_t)(end - 2 - i - 1);
    keep[i + 1] = keep[i + 2] = false;
    dropped = true;
    i += 2;
  }
  if (dropped) compact(p, keep);
  free(keep);
  free(target);
}

/* The prologue keeps the context in its stack slot for whatever reads it
 * after r1 is lost; once redundant loads are gone, nothing may: then the
 * store goes too. */
void drop_unread_ctx_save(BpfProg *p) {
  const struct bpf_insn save = I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_CTX);
  if (p->ninsns <= 0 || memcmp(&p->insns[0], &save, sizeof save) != 0)
    return;
  for (int i = 0; i < p->ninsns; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (in->code == (BPF_LDX | BPF_MEM | BPF_DW) &&
        in->src_reg == BPF_REG_10 && in->off == SLOT_CTX)
      return;
    if (is_ld_imm64(in)) i++;
  }
  unsigned n = (unsigned)p->ninsns;
  bool *keep = calloc(n + 1u, sizeof(bool));
  for (unsigned i = 1; i < n; i++) keep[i] = true;
  compact(p, keep);
  free(keep);
}

void drop_redundant_loads(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = malloc(sizeof(bool) * (n + 1));
  bool *fresh = calloc(n + 1, sizeof(bool));   /* starts knowing nothing */
  bool *has_in = calloc(n + 1, sizeof(bool));  /* a forward jump arrives */
  int (*in_state)[MIRROR_SIZE] = malloc(sizeof(*in_state) * (n + 1));
  for (int i = 0; i < n; i++) {
    const struct bpf_insn *in = &p->insns[i];
    keep[i] = true;
    if (is_jump(in) && in->off < 0) fresh[i + in->off + 1] = true;
    if (is_pseudo_call(in) || is_pseudo_func(in)) fresh[i + in->imm + 1] = true;
    if (is_ld_imm64(in)) keep[++i] = true;
  }
  int m[MIRROR_SIZE];
  mirror_entry(m);
  bool falls_in = true;   /* the previous instruction continues here */
  for (int i = 0; i < n; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (fresh[i] || (!falls_in && !has_in[i])) {
      mirror_forget(m);
    } else if (has_in[i]) {
      if (falls_in)
        mirror_meet(m, in_state[i]);
      else
        memcpy(m, in_state[i], sizeof(m));
    }
    if (mirror_step(m, in)) keep[i] = false;
    falls_in = true;
    if (is_jump(in)) {
      int t = i + in->off + 1;
      if (in->off >= 0) {
        if (has_in[t])
          mirror_meet(in_state[t], m);
        else
          memcpy(in_state[t], m, sizeof(m));
        has_in[t] = true;
      }
      falls_in = BPF_OP(in->code) != BPF_JA;
    } else if (in->code == (BPF_JMP | BPF_EXIT)) {
      falls_in = false;
    }
    if (is_ld_imm64(in)) i++;
  }
  compact(p, keep);
  free(keep);
  free(fresh);
  free(has_in);
  free(in_state);
}

/* Is insns[i], insns[i+1] the pair `rX = r10; rX += K` (with nothing
 * jumping to the add)? */
static bool forms_frame_address(const BpfProg *p, const bool *target, int i) {
  const struct bpf_insn *a = &p->insns[i], *b = &p->insns[i + 1];
  return a->code == (BPF_ALU64 | BPF_MOV | BPF_X) &&
         a->src_reg == BPF_REG_10 && !target[i + 1] &&
         b->code == (BPF_ALU64 | BPF_ADD | BPF_K) && b->dst_reg == a->dst_reg;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* The stack address a program forms most often, when it forms it three
 * times or more (a map key filled by a helper, then passed to lookup and
 * update: `rX = r10; rX += K` each time), is formed once at entry in a
 * callee-saved register the program never touches, and each use becomes
 * one move: 2 + c instructions for 2c. Only the main function's own code
 * counts (a bpf_loop callback or subprogram has a frame of its own). */
void hoist_frame_address(BpfProg *p) {
  int n = p->ninsns, end = p->nmain ? p->nmain : n;
  bool *target = calloc(n + 3, sizeof(bool));
  bool used[NREGS] = {false};
  for (int i = 0; i < n; i++) {
    const struct bpf_insn *in = &p->insns[i];
    bool call = is_pseudo_call(in) || is_pseudo_func(in);
    int to = is_jump(in) ? i + in->off + 1 : call ? i + in->imm + 1 : -1;
    if (to >= 0 && to <= n) target[to] = true;
    if (call && to >= 0 && to < end) end = to;   /* a function in main */
    if (is_ld_imm64(in)) i++;
  }
  /* registers anywhere before the shared subprograms (callbacks too) */
  for (int i = 0; i < (p->nmain ? p->nmain : n); i++) {
    const struct bpf_insn *in = &p->insns[i];
    used[in->dst_reg % NREGS] = used[in->src_reg % NREGS] = true;
  }
  int reg = -1;
  for (int r = BPF_REG_6; r <= BPF_REG_9 && reg < 0; r++)
    if (!used[r]) reg = r;
  /* the offset formed most often */
  int *offs = malloc(sizeof(int) * (n + 1)), noffs = 0;
  for (int i = 0; reg >= 0 && i + 1 < end; i++) {
    if (forms_frame_address(p, target, i)) offs[noffs++] = p->insns[i + 1].imm;
    if (is_ld_imm64(&p->insns[i])) i++;
  }
  qsort(offs, noffs, sizeof(int), cmp_int);
  int best = 0, best_uses = 0;
  for (int i = 0, j; i < noffs; i = j) {
    for (j = i; j < noffs && offs[j] == offs[i]; j++) {}
    if (j - i > best_uses) best = offs[i], best_uses = j - i;
  }
  free(offs);
  if (best_uses < 3) {
    free(target);
    return;
  }
  /* room at entry: everything moves by two, so relative jumps and calls
   * stay as they are */
  if (p->cap < n + 2) {
    p->cap = n + 2;
    p->insns = realloc(p->insns, sizeof(*p->insns) * p->cap);
    p->insn_span = realloc(p->insn_span, sizeof(*p->insn_span) * p->cap);
  }
  memmove(p->insns + 2, p->insns, sizeof(*p->insns) * n);
  memmove(p->insn_span + 2, p->insn_span, sizeof(*p->insn_span) * n);
  memmove(target + 2, target, sizeof(bool) * (n + 1));
  target[0] = target[1] = false;
  p->insns[0] = I_MOV64_REG(reg, BPF_REG_10);
  p->insns[1] = I_ALU64_IMM(BPF_ADD, reg, best);
  p->insn_span[1] = p->insn_span[0] = p->insn_span[2];
  p->ninsns = n += 2;
  end += 2;
  if (p->nmain) p->nmain += 2;
  for (int k = 0; k < p->nglobals; k++) p->globals[k] += 2;
  bool *keep = keep_all(p);
  for (int i = 2; i + 1 < end; i++) {
    if (forms_frame_address(p, target, i) && p->insns[i + 1].imm == best) {
      p->insns[i].src_reg = (uint8_t)reg;
      keep[++i] = false;
    } else if (is_ld_imm64(&p->insns[i])) {
      i++;
    }
  }
  compact(p, keep);
  free(keep);
  free(target);
}
