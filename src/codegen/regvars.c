/* regvars: scalar variables moved from their stack slots into the
 * callee-saved registers r6-r9, where those are free.
 *
 * Codegen gives every `$variable` a stack slot of its frame (place_vars)
 * and loads it at each use. The registers it computes in, r6-r8 (and r9
 * for a record being filled, or the scratch area's address), each hold a
 * value for a few instructions only, so over much of a program some of
 * them hold nothing. promote_vars finds, function by function (the
 * probe's code and each callback is a frame of its own), the variable
 * slots whose whole life a register is free for, by liveness over the
 * function's control flow, and turns their loads and stores into moves;
 * helper calls keep r6-r9, so nothing has to be spilled around them.
 *
 * Which slots may move is decided from the code alone, with one fact from
 * codegen: the slots place_vars gave scalar variables (BpfProg.var_slots)
 * lie apart from every buffer and spill slot, so an address formed for a
 * helper never reaches one, unless it is the slot's own (`&$x`), which
 * keeps that slot on the stack. A slot moves only when every access to it
 * is a whole 8-byte load or store of r10 at its offset, and when no path
 * from the function's entry reads it before such a store. */
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"

enum {
  NPHYS = 10,         /* r0..r9, bits 0..9 of a Live mask */
  ARGS = 0x3e,        /* r1..r5 */
  MAX_SLOTS = 54,     /* candidate slots, bits 10..63 */
  MAX_EVICTIONS = 64, /* values moved aside for one slot, at most */
  MAX_WEB = 1024,     /* instructions of a value moved aside, at most */
  SLOTS_PER_MASK = 64 /* 8-byte slots of the 512-byte frame */
};

typedef uint64_t Live;

static Live reg_bit(int r) {
  return r >= BPF_REG_0 && r <= BPF_REG_9 ? (Live)1 << r : 0;
}

/* The slot offset of bit k of a frame's var_slots mask, and back. */
static int slot_off(int k) { return -8 * (k + 1); }

/* What instruction `in` reads and writes of r0-r9 (use, def) and of the
 * candidate slots: the slot at r10 - 8 * (k + 1) is candidate cand[k]
 * (its bit NPHYS + cand[k]), or none when that is -1. A call's reads of
 * r1-r5 are analyze's: those set since the last call (a call reads no
 * argument the program did not set, which the verifier refuses; after a
 * call r1-r5 are unset again). */
static void use_def(const struct bpf_insn *in, const signed char *cand,
                    Live *use, Live *def) {
  int cls = BPF_CLASS(in->code), mode = BPF_MODE(in->code);
  int op = BPF_OP(in->code);
  Live u = 0, d = 0;
  bool x = BPF_SRC(in->code) == BPF_X;
  int slot = -1;
  if (cand && in->off < 0 && in->off % 8 == 0 && -in->off / 8 <= SLOTS_PER_MASK &&
      ((cls == BPF_LDX && in->src_reg == BPF_REG_10) ||
       ((cls == BPF_STX || cls == BPF_ST) && in->dst_reg == BPF_REG_10)))
    slot = cand[-in->off / 8 - 1];
  switch (cls) {
  case BPF_ALU:
  case BPF_ALU64:
    if (op != BPF_MOV) u |= reg_bit(in->dst_reg);
    if (x && op != BPF_END && op != BPF_NEG) u |= reg_bit(in->src_reg);
    d |= reg_bit(in->dst_reg);
    break;
  case BPF_LDX:
    u |= reg_bit(in->src_reg);
    d |= reg_bit(in->dst_reg);
    if (slot >= 0) u |= (Live)1 << (NPHYS + slot);
    break;
  case BPF_ST:
  case BPF_STX:
    u |= reg_bit(in->dst_reg);
    if (cls == BPF_STX) u |= reg_bit(in->src_reg);
    if (mode == BPF_ATOMIC && in->imm == BPF_CMPXCHG)
      u |= reg_bit(BPF_REG_0), d |= reg_bit(BPF_REG_0);
    else if (mode == BPF_ATOMIC && (in->imm & BPF_FETCH))
      d |= reg_bit(in->src_reg);
    if (slot >= 0 && mode == BPF_MEM) d |= (Live)1 << (NPHYS + slot);
    break;
  case BPF_LD:
    if (in->code == (BPF_LD | BPF_DW | BPF_IMM)) d |= reg_bit(in->dst_reg);
    break;
  default:
    if (in->code == (BPF_JMP | BPF_CALL)) {
      /* r0-r5 are lost, r6-r9 kept; which arguments it reads, analyze
       * adds */
      d |= 0x3f;
      break;
    }
    if (in->code == (BPF_JMP | BPF_EXIT)) {
      u |= reg_bit(BPF_REG_0);
      break;
    }
    if (op == BPF_JA) break;
    u |= reg_bit(in->dst_reg);
    if (x) u |= reg_bit(in->src_reg);
  }
  *use = u;
  *def = d;
}

/* The slots (bits of a frame's mask) `in` reaches other than by a whole
 * 8-byte load or store at a slot's offset: a narrower or wider access, an
 * atomic one, or the slot's address formed (`rX = r10; rX += off`, with
 * `next` the instruction after). *exact gets the bit of the slot it loads
 * or stores whole, if any. */
static uint64_t slots_escaping(const struct bpf_insn *in,
                               const struct bpf_insn *next, uint64_t *exact) {
  int cls = BPF_CLASS(in->code), size = BPF_SIZE(in->code);
  int bytes = size == BPF_DW ? 8 : size == BPF_W ? 4 : size == BPF_H ? 2 : 1;
  bool mem = (cls == BPF_LDX && in->src_reg == BPF_REG_10) ||
             ((cls == BPF_STX || cls == BPF_ST) && in->dst_reg == BPF_REG_10);
  int lo = 0, hi = -1;   /* the bytes reached, below r10 */
  *exact = 0;
  if (mem) {
    lo = in->off, hi = in->off + bytes - 1;
  } else if (next && in->code == (BPF_ALU64 | BPF_MOV | BPF_X) &&
             in->src_reg == BPF_REG_10 &&
             next->code == (BPF_ALU64 | BPF_ADD | BPF_K) &&
             next->dst_reg == in->dst_reg) {
    lo = hi = next->imm;
  }
  uint64_t reached = 0;
  for (int k = 0; k < SLOTS_PER_MASK; k++) {
    int off = slot_off(k);
    if (lo <= off + 7 && off <= hi) reached |= (uint64_t)1 << k;
  }
  if (mem && size == BPF_DW && BPF_MODE(in->code) == BPF_MEM &&
      in->off < 0 && in->off % 8 == 0 && -in->off / 8 <= SLOTS_PER_MASK) {
    *exact = (uint64_t)1 << (-in->off / 8 - 1);
    reached &= ~*exact;
  }
  return reached;
}

/* What is live after each instruction of [s, e) (live[i - s]), and at
 * its entry (live[e - s]), by iteration to the fixed point over the
 * function's control flow; calls read the argument registers that may
 * have been set since the function's entry (where `entry` are) or the
 * last call. Other functions' starts inside get all their arguments.
 * The use, def, use_out and def_out arrays (NULL: not wanted) get what
 * each instruction reads and writes. */
static void analyze(const BpfProg *p, int s, int e, const signed char *cand,
                    Live entry, Live *live, Live *use_out, Live *def_out) {
  size_t size = (size_t)(e - s);
  Live *use = malloc(sizeof(Live) * (size + 1));
  Live *def = malloc(sizeof(Live) * (size + 1));
  Live *set = calloc(size + 1, sizeof(Live));
  Live *in_of = calloc(size + 1, sizeof(Live));
  int (*next)[2] = malloc(sizeof(*next) * (size + 1));
  bool *call = calloc(size + 1, sizeof(bool));
  bool *half = calloc(size + 1, sizeof(bool));   /* an ld_imm64's 2nd */
  for (int i = s; i < e; i++) {
    const struct bpf_insn *in = &p->insns[i];
    int x = i - s, len = is_ld_imm64(in) ? 2 : 1;
    use_def(in, cand, &use[x], &def[x]);
    call[x] = in->code == (BPF_JMP | BPF_CALL);
    bool falls = in->code != (BPF_JMP | BPF_EXIT) &&
                 !(is_jump(in) && BPF_OP(in->code) == BPF_JA);
    int t = is_jump(in) ? i + in->off + 1 : -1;
    next[x][0] = falls && i + len < e ? x + len : -1;
    next[x][1] = t >= s && t < e ? t - s : -1;
    int f = is_pseudo_call(in) || is_pseudo_func(in) ? i + in->imm + 1 : -1;
    if (f > s && f < e) set[f - s] = ARGS;
    if (len == 2 && x + 1 < (int)size) {
      half[x + 1] = true;
      use[x + 1] = def[x + 1] = 0;
      next[x + 1][0] = next[x + 1][1] = -1;
      i++;
    }
  }
  for (int k = 0; k < p->nglobals; k++)
    if (p->globals[k] > s && p->globals[k] < e) set[p->globals[k] - s] = ARGS;
  if (size) set[0] = entry;
  /* without a jump back, one pass each way is the fixed point */
  bool loops = false;
  for (size_t x = 0; x < size && !loops; x++)
    loops = next[x][1] >= 0 && (size_t)next[x][1] <= x;
  /* which of r0-r5 may be set when each instruction runs */
  for (bool changed = true; changed; changed = changed && loops) {
    changed = false;
    for (size_t x = 0; x < size; x++) {
      if (half[x]) continue;
      Live now = call[x] ? reg_bit(BPF_REG_0) : (set[x] | def[x]) & 0x3f;
      for (int j = 0; j < 2; j++) {
        int y = next[x][j];
        if (y >= 0 && (set[y] | now) != set[y]) {
          set[y] |= now;
          changed = true;
        }
      }
    }
  }
  for (size_t x = 0; x < size; x++)
    if (call[x]) use[x] |= set[x] & ARGS;
  for (bool changed = true; changed; changed = changed && loops) {
    changed = false;
    for (size_t x = size; x-- > 0;) {
      if (half[x]) continue;
      Live out = 0;
      for (int j = 0; j < 2; j++)
        if (next[x][j] >= 0) out |= in_of[next[x][j]];
      Live li = use[x] | (out & ~def[x]);
      live[x] = out;
      if (li != in_of[x]) {
        in_of[x] = li;
        changed = true;
      }
    }
  }
  for (size_t x = 0; x < size; x++)
    if (half[x]) live[x] = 0;
  live[size] = size ? in_of[0] : 0;
  if (use_out) memcpy(use_out, use, sizeof(Live) * size);
  if (def_out) memcpy(def_out, def, sizeof(Live) * size);
  free(use);
  free(def);
  free(set);
  free(in_of);
  free(next);
  free(call);
  free(half);
}

/* A function being worked on: [s, e) of p, and per instruction (index
 * i - s) what is live after it, what it reads and writes, and who comes
 * before it. */
typedef struct Fn {
  BpfProg *p;
  int s, e;
  Live *out, *use, *def;
  int *pred_at, *preds;   /* preds[pred_at[x] .. pred_at[x + 1]) */
  unsigned char *mark;    /* collect_web's */
  int *stack, *web;
} Fn;

static Live live_in(const Fn *f, int x) {
  return f->use[x] | (f->out[x] & ~f->def[x]);
}

/* The instructions that may run after instruction x (indices into f). */
static int successors(const Fn *f, int x, int next[2]) {
  const struct bpf_insn *in = &f->p->insns[f->s + x];
  int n = 0, len = is_ld_imm64(in) ? 2 : 1, size = f->e - f->s;
  bool falls = in->code != (BPF_JMP | BPF_EXIT) &&
               !(is_jump(in) && BPF_OP(in->code) == BPF_JA);
  if (falls && x + len < size) next[n++] = x + len;
  if (is_jump(in) && x + in->off + 1 >= 0 && x + in->off + 1 < size)
    next[n++] = x + in->off + 1;
  return n;
}

static bool second_half(const Fn *f, int x) {
  return x > 0 && is_ld_imm64(&f->p->insns[f->s + x - 1]);
}

static void find_preds(Fn *f) {
  int size = f->e - f->s, next[2];
  f->pred_at = calloc((size_t)size + 2, sizeof(int));
  for (int x = 0; x < size; x++) {
    if (second_half(f, x)) continue;
    for (int j = successors(f, x, next); j-- > 0;) f->pred_at[next[j] + 2]++;
  }
  for (int x = 0; x < size; x++) f->pred_at[x + 2] += f->pred_at[x + 1];
  f->preds = malloc(sizeof(int) * ((size_t)f->pred_at[size + 1] + 1));
  for (int x = 0; x < size; x++) {
    if (second_half(f, x)) continue;
    for (int j = successors(f, x, next); j-- > 0;)
      f->preds[f->pred_at[next[j] + 1]++] = x;
  }
}

/* The registers of r6-r9 (bits 0-3) that candidate k (at off) cannot
 * live in over f: those written while it is live after, and those live
 * after its stores, unless the write copies the other (a load of the
 * slot into the register, a store of the register into the slot). With
 * `at`, the instructions where register r does so go there. */
static Live conflicts(const Fn *f, int k, int off, int r, int *at, int *nat) {
  Live kb = (Live)1 << (NPHYS + k), regs = 0;
  if (nat) *nat = 0;
  for (int x = 0; x < f->e - f->s; x++) {
    const struct bpf_insn *in = &f->p->insns[f->s + x];
    Live d = f->def[x], out = f->out[x], copy = 0, here = 0;
    if (in->off == off &&
        in->code == (BPF_LDX | BPF_DW | BPF_MEM) && in->src_reg == BPF_REG_10)
      copy = reg_bit(in->dst_reg);
    if (in->off == off &&
        in->code == (BPF_STX | BPF_DW | BPF_MEM) && in->dst_reg == BPF_REG_10)
      copy = reg_bit(in->src_reg);
    if (out & kb) here |= d & ~copy;
    if (d & kb) here |= out & ~copy;
    regs |= here;
    if (at && (here & reg_bit(r))) at[(*nat)++] = x;
  }
  return regs & (((Live)1 << NPHYS) - 1);
}

enum { IN_WEB = 1, WENT_ON = 2, WENT_BACK = 4 };

/* The web of register r's value at instruction x (written or live
 * there): every instruction where that value is written or live before,
 * including the other writes that reach its reads, into f->web. Its
 * size, or -1 when the value comes from before the function, or the web
 * is larger than MAX_WEB (one that long rarely finds a free register). */
static int collect_web(Fn *f, int r, int x) {
  Live rb = reg_bit(r);
  int top = 0, n = 0, next[2];
  bool whole = true;
  f->stack[top++] = x;
  while (top && whole) {
    int y = f->stack[--top];
    if (!(f->mark[y] & IN_WEB)) {
      f->mark[y] |= IN_WEB;
      f->web[n++] = y;
      whole = n < MAX_WEB;
    }
    if (!(f->mark[y] & WENT_ON) && (f->out[y] & rb)) {
      f->mark[y] |= WENT_ON;
      for (int j = successors(f, y, next); j-- > 0;)
        if (live_in(f, next[j]) & rb) f->stack[top++] = next[j];
    }
    if (!(f->mark[y] & WENT_BACK) && (live_in(f, y) & rb)) {
      f->mark[y] |= WENT_BACK;
      whole = whole && y != 0;
      for (int j = f->pred_at[y]; j < f->pred_at[y + 1]; j++)
        f->stack[top++] = f->preds[j];
    }
  }
  for (int i = 0; i < n; i++) f->mark[f->web[i]] = 0;
  return whole ? n : -1;
}

static Live swap_bit(Live m, Live from, Live to) {
  return m & from ? (m & ~from) | to : m;
}

/* What move_web changed, to undo it: the instruction and its masks as
 * they were. */
typedef struct Undo {
  int x;
  struct bpf_insn in;
  Live out, use, def;
} Undo;

/* Moves the web just collected (n instructions) from register r to
 * another of r6-r9 that is free over it, logging what it changes at
 * log + *nlog; false if none is free. */
static bool move_web(Fn *f, int n, int r, Undo *log, int *nlog) {
  Live busy = 0;
  for (int i = 0; i < n; i++) {
    int y = f->web[i];
    busy |= f->use[y] | f->def[y] | live_in(f, y) | f->out[y];
  }
  static const int order[] = {BPF_REG_1, BPF_REG_2, BPF_REG_3, BPF_REG_4,
                              BPF_REG_5, BPF_REG_0, BPF_REG_6, BPF_REG_7,
                              BPF_REG_8, BPF_REG_9};
  int to = -1;
  for (int i = 0; i < NPHYS && to < 0; i++)
    if (order[i] != r && !(busy & reg_bit(order[i]))) to = order[i];
  if (to < 0) return false;
  Live from = reg_bit(r), tb = reg_bit(to);
  for (int i = 0; i < n; i++) {
    int y = f->web[i];
    struct bpf_insn *in = &f->p->insns[f->s + y];
    log[(*nlog)++] = (Undo){y, *in, f->out[y], f->use[y], f->def[y]};
    if ((f->use[y] | f->def[y]) & from) {
      int cls = BPF_CLASS(in->code);
      if (in->dst_reg == r) in->dst_reg = (uint8_t)to;
      if (in->src_reg == r && !is_ld_imm64(in) &&
          (cls == BPF_LDX || cls == BPF_STX ||
           (cls != BPF_ST && BPF_SRC(in->code) == BPF_X &&
            in->code != (BPF_JMP | BPF_CALL))))
        in->src_reg = (uint8_t)to;
    }
    f->use[y] = swap_bit(f->use[y], from, tb);
    f->def[y] = swap_bit(f->def[y], from, tb);
    f->out[y] = swap_bit(f->out[y], from, tb);
  }
  return true;
}

/* Frees register r for candidate k by moving each value of r it
 * conflicts with to another register; false (and f as it was) when one
 * cannot move. */
static bool evict(Fn *f, int k, int off, int r) {
  int size = f->e - f->s, nat;
  int *at = malloc(sizeof(int) * ((size_t)size + 1));
  conflicts(f, k, off, r, at, &nat);
  bool ok = nat <= MAX_EVICTIONS;
  Undo *log = ok ? malloc(sizeof(Undo) * (size_t)nat * MAX_WEB) : NULL;
  int nlog = 0;
  for (int i = 0; i < nat && ok; i++) {
    /* an earlier move may have taken this one's value already */
    if (!((f->def[at[i]] | f->out[at[i]]) & reg_bit(r))) continue;
    int n = collect_web(f, r, at[i]);
    ok = n > 0 && move_web(f, n, r, log, &nlog);
  }
  ok = ok && !(conflicts(f, k, off, r, NULL, NULL) & reg_bit(r));
  for (int i = nlog; !ok && i-- > 0;) {
    Undo *u = &log[i];
    f->p->insns[f->s + u->x] = u->in;
    f->out[u->x] = u->out;
    f->use[u->x] = u->use;
    f->def[u->x] = u->def;
  }
  free(at);
  free(log);
  return ok;
}

/* Slot k's loads and stores in f become moves to and from r; a move of
 * r to itself is dropped. */
static void rewrite(Fn *f, int off, int r, bool *keep) {
  for (int i = f->s; i < f->e; i++) {
    struct bpf_insn *in = &f->p->insns[i];
    if (is_ld_imm64(in)) {
      i++;
      continue;
    }
    if (in->off != off) continue;
    if (in->code == (BPF_LDX | BPF_DW | BPF_MEM) &&
        in->src_reg == BPF_REG_10) {
      *in = I_MOV64_REG(in->dst_reg, r);
      keep[i] = in->dst_reg != r;
    } else if (in->code == (BPF_STX | BPF_DW | BPF_MEM) &&
               in->dst_reg == BPF_REG_10) {
      *in = I_MOV64_REG(r, in->src_reg);
      keep[i] = in->src_reg != r;
    } else if (in->code == (BPF_ST | BPF_DW | BPF_MEM) &&
               in->dst_reg == BPF_REG_10) {
      *in = I_MOV64_IMM(r, in->imm);
    }
  }
}

typedef struct Cand {
  int off;
  long weight;
} Cand;

static int by_weight(const void *a, const void *b) {
  const Cand *x = a, *y = b;
  return (x->weight < y->weight) - (x->weight > y->weight);
}

/* The slots of `slots` that may move (see the top), weighted by their
 * uses, a use inside loops counting more; the most used first. */
static int candidates(const BpfProg *p, int s, int e, uint64_t slots,
                      Cand *cand) {
  /* loop depth of each instruction, from the backward jumps */
  int *depth = calloc((size_t)(e - s + 1), sizeof(int));
  for (int i = s; i < e; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (is_jump(in) && in->off < 0 && i + in->off + 1 >= s) {
      depth[i + in->off + 1 - s]++;
      depth[i + 1 - s]--;
    }
    if (is_ld_imm64(in)) i++;
  }
  for (int i = s + 1; i < e; i++) depth[i - s] += depth[i - 1 - s];
  long weight[SLOTS_PER_MASK] = {0};
  uint64_t escaped = 0;
  for (int i = s; i < e; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (is_ld_imm64(in)) {
      i++;
      continue;
    }
    uint64_t exact;
    escaped |= slots_escaping(in, i + 1 < e ? &p->insns[i + 1] : NULL, &exact);
    if (exact & slots) {
      int dp = depth[i - s] < 4 ? depth[i - s] : 4;
      weight[__builtin_ctzll(exact)] += 1L << (3 * dp);
    }
  }
  int nc = 0;
  for (int k = 0; k < SLOTS_PER_MASK; k++)
    if ((slots & ~escaped) >> k & 1 && weight[k])
      cand[nc++] = (Cand){slot_off(k), weight[k]};
  free(depth);
  qsort(cand, (size_t)nc, sizeof *cand, by_weight);
  return nc < MAX_SLOTS ? nc : MAX_SLOTS;
}

/* The variable slots of the function [s, e) (bits of `slots`) into
 * registers, the most used first: one free over the slot's life, or one
 * made free by moving the values in its way to others. */
static void promote_function(BpfProg *p, int s, int e, uint64_t slots,
                             bool *keep) {
  Cand cand[SLOTS_PER_MASK];
  int nc = candidates(p, s, e, slots, cand);
  if (!nc) return;
  signed char index[SLOTS_PER_MASK];
  memset(index, -1, sizeof index);
  for (int k = 0; k < nc; k++) index[-cand[k].off / 8 - 1] = (signed char)k;
  size_t size = (size_t)(e - s);
  Fn f = {.p = p, .s = s, .e = e};
  f.out = calloc(size + 1, sizeof(Live));
  f.use = calloc(size + 1, sizeof(Live));
  f.def = calloc(size + 1, sizeof(Live));
  f.mark = calloc(size + 1, 1);
  f.stack = malloc(sizeof(int) * (5 * size + 5));   /* collect_web's */
  f.web = malloc(sizeof(int) * (size + 1));
  analyze(p, s, e, index, s == 0 ? reg_bit(BPF_REG_1) : ARGS, f.out, f.use,
          f.def);
  Live entry = f.out[size];
  f.out[size] = 0;
  find_preds(&f);
  for (int k = 0; k < nc; k++) {
    Live kb = (Live)1 << (NPHYS + k);
    if (entry & kb) continue;   /* read before a store of its own */
    /* a register free over its life: one the calls keep first; else
     * one the values in its way can leave */
    Live busy = conflicts(&f, k, cand[k].off, 0, NULL, NULL);
    int r = -1;
    for (int t = BPF_REG_6; t <= BPF_REG_9 && r < 0; t++)
      if (!(busy & reg_bit(t))) r = t;
    for (int t = BPF_REG_1; t <= BPF_REG_5 && r < 0; t++)
      if (!(busy & reg_bit(t))) r = t;
    for (int t = BPF_REG_9; t >= BPF_REG_6 && r < 0; t--)
      if (evict(&f, k, cand[k].off, t)) r = t;
    if (r < 0) continue;
    rewrite(&f, cand[k].off, r, keep);
    /* r now holds the slot's value where the slot was live, and is
     * read and written where the slot was */
    Live rb = reg_bit(r);
    for (size_t i = 0; i < size; i++) {
      f.out[i] = swap_bit(f.out[i], kb, rb);
      f.use[i] = swap_bit(f.use[i], kb, rb);
      f.def[i] = swap_bit(f.def[i], kb, rb);
    }
  }
  free(f.out);
  free(f.use);
  free(f.def);
  free(f.mark);
  free(f.stack);
  free(f.web);
  free(f.pred_at);
  free(f.preds);
}

/* The start of the function after the one starting at s. */
static int function_end(const BpfProg *p, int s) {
  int e = p->ninsns;
  for (int i = 0; i < p->ninsns; i++) {
    const struct bpf_insn *in = &p->insns[i];
    if (is_pseudo_call(in) || is_pseudo_func(in)) {
      int t = i + in->imm + 1;
      if (t > s && t < e) e = t;
    }
    if (is_ld_imm64(in)) i++;
  }
  for (int k = 0; k < p->nglobals; k++)
    if (p->globals[k] > s && p->globals[k] < e) e = p->globals[k];
  for (int k = 0; k < p->nvar_frames; k++)
    if (p->var_starts[k] > s && p->var_starts[k] < e) e = p->var_starts[k];
  return e;
}

uint64_t *regs_live_after(const BpfProg *p) {
  uint64_t *live = calloc((size_t)p->ninsns + 1, sizeof(uint64_t));
  analyze(p, 0, p->ninsns, NULL, reg_bit(BPF_REG_1), live, NULL, NULL);
  return live;
}

void promote_vars(BpfProg *p) {
  if (!p->nvar_frames) return;
  bool *keep = malloc(sizeof(bool) * ((size_t)p->ninsns + 1));
  for (int i = 0; i < p->ninsns; i++) keep[i] = true;
  for (int k = 0; k < p->nvar_frames; k++) {
    int s = p->var_starts[k];
    if (p->var_slots[k])
      promote_function(p, s, function_end(p, s), p->var_slots[k], keep);
  }
  compact(p, keep);
  free(keep);
}
