/* codegen: typed AST to eBPF.
 *
 * Where values live:
 * - integers are computed in registers r6..r8 (callee-saved, so they
 *   survive helper calls), handed out by a small allocator; a value that
 *   must be kept while a sibling is computed goes to a stack slot only
 *   when no register is free; scratch variables live in stack slots;
 * - strings, map keys, map values, tuples and event records ("buffers")
 *   live at offsets fixed at compile time: on the stack when a probe's
 *   buffers fit in it, else in a per-CPU scratch area (one array map
 *   slot) whose address r9 holds for the whole program. Either way a
 *   store into a buffer is one instruction off SCRATCH;
 * - r0..r5 are used only inside short fixed sequences (helper calls).
 * Stack slots and buffers taken by a statement are given back when the
 * statement ends, so long probes reuse them.
 *
 * Known values are folded (constant propagation through variables keeps
 * unrolled loops cheap), conditions compile to jumps, events go out
 * through small shared subprograms, and a last pass drops unreachable
 * code and reloads a register already holds.
 *
 * Every buffer has a capacity rounded up to 8 bytes and is zero-padded
 * after its string, so strings compare and hash by whole words. */
#include "codegen/codegen.h"

#include <stdlib.h>
#include <string.h>

#include "codegen/insn.h"
#include "probes/provider.h"

/* 512 bytes of BPF stack, less the 8 a subprogram's frame takes */
#define STACK_LIMIT 504
#define SLOT_CTX (-8)       /* the program's context pointer */
/* Subprograms: SUB_OUTPUT, SUB_COUNT (len's callback), then one
 * SUB_EVENT per EventKind. */
enum { SUB_OUTPUT, SUB_COUNT, SUB_EVENT, NSUBS = SUB_EVENT + 16 };
#define SLOT_KEY0 (-16)     /* 0 when used: key 0 of the one-slot arrays */
#define FIRST_TEMP_REG BPF_REG_6
#define LAST_TEMP_REG BPF_REG_8
/* The base register of buffers: r10 when they fit on the stack, else r9,
 * which then holds the scratch area's address for the whole program. */
#define SCRATCH (g->buf_base)

typedef struct Gen {
  Diag *d;
  Compiled *c;
  BpfProg *p;
  Probe *probe;
  Target *target;      /* the one target, for per-target programs */
  Span span;           /* source of the instructions being emitted */
  bool reg_used[11];
  int *subcalls[NSUBS];  /* calls to patch, per subprogram (SUB_*) */
  int nsubcalls[NSUBS];
  int buf_base;        /* BPF_REG_10 or BPF_REG_9, see SCRATCH */
  bool too_big;        /* buffers did not fit on the stack */
  int stack_top;       /* bytes in use below the frame pointer */
  int stack_max;
  int scratch_top;     /* bytes in use in the scratch area */
  int scratch_max;
  struct Loop {        /* the loops around the code being generated */
    int start;         /* where continue goes back to; -1: forward, to
                          where conts are patched */
    int *breaks;       /* jumps to patch to the loop's end */
    int nbreaks;
    int *conts;        /* forward continue jumps (for ranges) */
    int nconts;
    bool callback;     /* a for-over-map body: break and continue return */
  } loops[64];
  int nloops;
  struct Pending {     /* for-over-map bodies, generated after the probe */
    Node *loop;
    int at;            /* the LD_IMM64 of the callback's address */
  } *pending;
  int npending;
  int frame;           /* the frame being generated (VarSym.frame) */
  bool failed;
} Gen;

static int gen_int(Gen *g, Node *n);
static void gen_store_int(Gen *g, Node *n, int base, int off);
static void vars_forget_assigned(Node *n);
static bool fold(Gen *g, Node *n, int64_t *v);
static bool fits32(int64_t v);
static void fail(Gen *g, Span at, const char *fmt, const char *arg);
static void gen_buf(Gen *g, Node *n, int dst, int cap);
static int buf_ref(Gen *g, Node *n);
static bool gen_block(Gen *g, Node *n);
static bool gen_stmt(Gen *g, Node *n);
static void gen_while(Gen *g, Node *n);
static void gen_for_range(Gen *g, Node *n);
static void gen_for_map(Gen *g, Node *n);
static void place_vars(Gen *g, Probe *p);
static void emit_jump_back(Gen *g, int target);

static int align8(int n) { return (n + 7) & ~7; }

/* Values that live in the scratch area rather than in a register. */
static bool is_buffer(Type t) {
  return t.kind == TY_STR || t.kind == TY_TUPLE || t.kind == TY_BUF;
}

/* Bytes a buffer value takes in the scratch area, a map or a record. */
static int buf_cap(Type t) {
  switch (t.kind) {
  case TY_STR: return align8(t.size);
  case TY_BUF: return 8 + align8(t.size);
  case TY_TUPLE: return t.tuple->size;
  default: return 8;
  }
}

/* ---- emission ------------------------------------------------------- */

static int emit(Gen *g, struct bpf_insn i) {
  BpfProg *p = g->p;
  if (p->ninsns == p->cap) {
    p->cap = p->cap ? p->cap * 2 : 256;
    p->insns = realloc(p->insns, sizeof(*p->insns) * p->cap);
    p->insn_span = realloc(p->insn_span, sizeof(*p->insn_span) * p->cap);
  }
  p->insns[p->ninsns] = i;
  p->insn_span[p->ninsns] = g->span;
  return p->ninsns++;
}

static void emit_imm64(Gen *g, int reg, int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    emit(g, I_MOV64_IMM(reg, (int32_t)v));
    return;
  }
  emit(g, I_LD_IMM64_LO(reg, 0, (int32_t)(uint32_t)v));
  emit(g, I_LD_IMM64_HI((int32_t)(uint32_t)((uint64_t)v >> 32)));
}

/* reg = address of map `id` (an index into Compiled.maps, or one of the
 * MAP_ID_* internal ids); load replaces the id with the map's fd. */
static void emit_map(Gen *g, int reg, int id) {
  emit(g, I_LD_IMM64_LO(reg, BPF_PSEUDO_MAP_FD, id));
  emit(g, I_LD_IMM64_HI(0));
}

/* reg = scratch area + off */
static void emit_scratch(Gen *g, int reg, int off) {
  emit(g, I_MOV64_REG(reg, SCRATCH));
  if (off) emit(g, I_ALU64_IMM(BPF_ADD, reg, off));
}

static void emit_call(Gen *g, int helper) { emit(g, I_CALL(helper)); }

/* A forward jump whose offset is filled in by patch_here. */
static int emit_jump(Gen *g, struct bpf_insn j) { return emit(g, j); }

static void patch_here(Gen *g, int at) {
  int off = g->p->ninsns - at - 1;
  if (off > INT16_MAX)
    fail(g, g->p->insn_span[at], "%s", "this branch spans more than 32767 "
         "BPF instructions; split the probe or use fewer unrolled steps");
  g->p->insns[at].off = (int16_t)off;
}

/* Forward jumps waiting for the same target. */
typedef struct Jumps {
  int *at;
  int n;
} Jumps;

static void jumps_add(Jumps *j, int at) {
  j->at = realloc(j->at, sizeof(int) * (j->n + 1));
  j->at[j->n++] = at;
}

static void jumps_patch_here(Gen *g, Jumps *j) {
  for (int i = 0; i < j->n; i++) patch_here(g, j->at[i]);
  free(j->at);
  j->at = NULL;
  j->n = 0;
}

static void gen_cond(Gen *g, Node *cond, bool when, Jumps *out);

/* Leaves the program. Done in place (two instructions) rather than by a
 * jump to one epilogue, which could be out of a jump's reach. */
static void emit_return(Gen *g) {
  emit(g, I_MOV64_IMM(BPF_REG_0, 0));
  emit(g, I_EXIT());
}

static void fail(Gen *g, Span at, const char *fmt, const char *arg) {
  if (!g->failed) diag_error(g->d, at, fmt, arg);
  g->failed = true;
}

/* ---- registers, stack, scratch -------------------------------------- */

static int free_regs(Gen *g) {
  int n = 0;
  for (int r = FIRST_TEMP_REG; r <= LAST_TEMP_REG; r++) n += !g->reg_used[r];
  return n;
}

static int reg_alloc(Gen *g) {
  for (int r = FIRST_TEMP_REG; r <= LAST_TEMP_REG; r++)
    if (!g->reg_used[r]) {
      g->reg_used[r] = true;
      return r;
    }
  /* hold() keeps one register free for every expression; reaching here is
   * a bug in the generator, not in the script. */
  fail(g, g->span, "%s", "internal error: out of registers");
  return FIRST_TEMP_REG;
}

static void reg_free(Gen *g, int r) {
  if (r >= FIRST_TEMP_REG && r <= LAST_TEMP_REG) g->reg_used[r] = false;
}

static int stack_alloc(Gen *g, int size) {
  g->stack_top += align8(size);
  if (g->stack_top > g->stack_max) g->stack_max = g->stack_top;
  if (g->stack_top > STACK_LIMIT) {
    if (g->frame != 0)
      fail(g, g->span, "%s", "the body of this for loop needs more than the "
           "BPF stack it can have; make it smaller");
    else if (g->buf_base == BPF_REG_10)
      g->too_big = true;   /* gen_prog tries again with the scratch area */
    else
      fail(g, g->span, "%s", "this probe needs more than the 512 bytes of "
           "BPF stack; split the expression or the probe");
    g->stack_top = 16;     /* keep offsets valid until then */
  }
  return -g->stack_top;
}

/* Room for a buffer: on the stack when the program's buffers fit there,
 * else in the scratch area. Offsets are relative to SCRATCH. */
static int scratch_alloc(Gen *g, int size) {
  if (g->buf_base == BPF_REG_10) return stack_alloc(g, size);
  int off = g->scratch_top;
  g->scratch_top += align8(size);
  if (g->scratch_top > g->scratch_max) g->scratch_max = g->scratch_top;
  return off;
}

/* A value kept in a register, or on the stack if registers ran out. */
typedef struct Held {
  int reg;   /* -1 if spilled */
  int slot;
} Held;

/* Keeps reg's value while something else is generated, and guarantees that
 * generation at least one free register. */
static Held hold(Gen *g, int reg) {
  Held h = {reg, 0};
  if (free_regs(g) > 0) return h;
  h.slot = stack_alloc(g, 8);
  emit(g, I_STX(BPF_DW, BPF_REG_10, reg, h.slot));
  reg_free(g, reg);
  h.reg = -1;
  return h;
}

/* The held value's register, loading a spilled one into `tmp`. */
static int held_reg(Gen *g, Held h, int tmp) {
  if (h.reg >= 0) return h.reg;
  emit(g, I_LDX(BPF_DW, tmp, BPF_REG_10, h.slot));
  return tmp;
}

static void held_free(Gen *g, Held h) {
  if (h.reg >= 0) reg_free(g, h.reg);
}

/* ---- scratch buffers ------------------------------------------------ */

static void emit_zero(Gen *g, int dst, int cap) {
  for (int i = 0; i < cap; i += 8)
    emit(g, I_ST(BPF_DW, SCRATCH, dst + i, 0));
}

/* Copies `n` bytes (a multiple of 8) between scratch buffers through r0,
 * zero-filling the destination up to `cap`. base is a register holding the
 * source's base address (r0 result of a lookup, or the scratch area). */
static void emit_copy_from(Gen *g, int base, int src_off, int dst, int n,
                           int cap) {
  int i = 0;
  for (; i < n && i < cap; i += 8) {
    emit(g, I_LDX(BPF_DW, BPF_REG_2, base, src_off + i));
    emit(g, I_STX(BPF_DW, SCRATCH, BPF_REG_2, dst + i));
  }
  for (; i < cap; i += 8) emit(g, I_ST(BPF_DW, SCRATCH, dst + i, 0));
}

static void emit_copy(Gen *g, int src, int dst, int n, int cap) {
  if (src == dst) return;
  emit_copy_from(g, SCRATCH, src, dst, n, cap);
}

/* Stores literal bytes (zero-padded to cap) into a scratch buffer. */
static void emit_literal(Gen *g, const char *s, int len, int dst, int cap) {
  for (int i = 0; i < cap; i += 4) {
    uint32_t word = 0;
    for (int b = 0; b < 4; b++)
      if (i + b < len) word |= (uint32_t)(unsigned char)s[i + b] << (8 * b);
    emit(g, I_ST(BPF_W, SCRATCH, dst + i, (int32_t)word));
  }
}

/* ---- context -------------------------------------------------------- */

/* reg = ctx */
static void emit_ctx(Gen *g, int reg) {
  emit(g, I_LDX(BPF_DW, reg, BPF_REG_10, SLOT_CTX));
}

/* The field's offset in this program's target (fields can sit at different
 * offsets in different tracepoints). */
static const TpField *target_field(Gen *g, Node *n) {
  Target *t = g->target;
  if (!t || !t->format) return NULL;
  return tp_field(t->format, n->name);
}

static int gen_field_int(Gen *g, Node *n) {
  const TpField *f = target_field(g, n);
  int r = reg_alloc(g);
  if (!f) {
    fail(g, n->span, "internal error: no field '%s' here", n->name);
    return r;
  }
  int size = f->is_pointer ? 8 : f->size;
  if (size != 1 && size != 2 && size != 4 && size != 8) {
    fail(g, n->span, "field '%s' has a size loupe cannot read", n->name);
    return r;
  }
  emit_ctx(g, BPF_REG_1);
  emit(g, I_LDX(insn_size_code(size), r, BPF_REG_1, f->offset));
  if (n->type.is_signed && size < 8) {
    emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - size * 8));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 64 - size * 8));
  }
  return r;
}

static int probe_read_str_helper(AddrSpace as) {
  return as == AS_USER ? BPF_FUNC_probe_read_user_str
                       : BPF_FUNC_probe_read_kernel_str;
}

/* For str() of an address whose space nothing tells, such as a kprobe's
 * arg1 (a kernel function may take user or kernel pointers). On x86-64
 * the two do not overlap, and in kprobe programs the older helper reads
 * from either, as bpftrace's str(argN) does; elsewhere: kernel. */
static int unknown_space_str_helper(Gen *g) {
  return g->p->prog_type == BPF_PROG_TYPE_KPROBE
             ? BPF_FUNC_probe_read_str
             : BPF_FUNC_probe_read_kernel_str;
}

/* A string field: a char array in the record, or a __data_loc string
 * somewhere after it. */
static void gen_field_str(Gen *g, Node *n, int dst, int cap) {
  const TpField *f = target_field(g, n);
  if (!f) {
    fail(g, n->span, "internal error: no field '%s' here", n->name);
    return;
  }
  emit_zero(g, dst, cap);
  emit_ctx(g, BPF_REG_3);
  int size = n->type.size;
  if (f->data_loc) {
    emit(g, I_LDX(BPF_W, BPF_REG_2, BPF_REG_3, f->offset));
    emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_2, 0xffff));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, BPF_REG_2));
  } else {
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, f->offset));
    size = f->size + 1 < cap ? f->size + 1 : cap;
  }
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, size < cap ? size : cap));
  emit_call(g, BPF_FUNC_probe_read_kernel_str);
}

/* ---- memory: struct fields, dereferences, indexes -------------------- */

static bool in_memory(Node *n) {
  Type lt = n->lhs ? n->lhs->type : (Type){0};
  switch (n->kind) {
  case N_FIELD:
    return lt.kind == TY_RECORD || (lt.kind == TY_INT && lt.is_pointer);
  case N_UNOP:
    return n->op == '*';
  case N_INDEX:
    return true;
  default:
    return false;
  }
}

static int read_helper(AddrSpace as) {
  return as == AS_USER ? BPF_FUNC_probe_read_user : BPF_FUNC_probe_read_kernel;
}

/* The address of a value that lives in memory (see in_memory), in a new
 * register. */
static int gen_addr(Gen *g, Node *n) {
  Node *lhs = n->lhs;
  if (n->kind == N_UNOP) return gen_int(g, lhs);
  int base = lhs->type.kind == TY_RECORD ? gen_addr(g, lhs) : gen_int(g, lhs);
  if (n->kind == N_FIELD) {
    if (n->field_offset)
      emit(g, I_ALU64_IMM(BPF_ADD, base, n->field_offset));
    return base;
  }
  /* N_INDEX: base + index * element size */
  int64_t k;
  if (fold(g, n->rhs, &k) && fits32(k * n->field_offset)) {
    if (k) emit(g, I_ALU64_IMM(BPF_ADD, base, (int32_t)(k * n->field_offset)));
    return base;
  }
  Held h = hold(g, base);
  int i = gen_int(g, n->rhs);
  emit(g, I_ALU64_IMM(BPF_MUL, i, n->field_offset));
  base = held_reg(g, h, BPF_REG_0);
  emit(g, I_ALU64_REG(BPF_ADD, i, base));
  if (base != BPF_REG_0) reg_free(g, base);
  return i;
}

/* An integer or pointer read from memory. */
static int gen_mem_int(Gen *g, Node *n) {
  int addr = gen_addr(g, n);
  int size = n->type.is_pointer ? 8 : n->type.size;
  AddrSpace as = n->lhs->type.as;
  int slot = stack_alloc(g, 8);
  emit(g, I_MOV64_REG(BPF_REG_3, addr));
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit_call(g, read_helper(as));
  int r = addr;
  emit(g, I_LDX(insn_size_code(size), r, BPF_REG_10, slot));
  if (n->kind == N_FIELD && n->bit_size > 0) {
    /* a bitfield: its bits, moved down, sign-extended if signed */
    emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - n->bit_offset - n->bit_size));
    emit(g, I_ALU64_IMM(n->type.is_signed ? BPF_ARSH : BPF_RSH, r,
                        64 - n->bit_size));
  } else if (n->type.is_signed && size < 8) {
    emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - size * 8));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 64 - size * 8));
  }
  return r;
}

/* A char array in memory, read as a string. */
static void gen_mem_str(Gen *g, Node *n, int dst, int cap) {
  int addr = gen_addr(g, n);
  emit_zero(g, dst, cap);
  emit(g, I_MOV64_REG(BPF_REG_3, addr));
  reg_free(g, addr);
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, n->type.size < cap ? n->type.size : cap));
  emit_call(g, n->lhs->type.as == AS_USER ? BPF_FUNC_probe_read_user_str
                                          : BPF_FUNC_probe_read_kernel_str);
}

/* ---- maps ----------------------------------------------------------- */

/* Builds the key of @m[...] in a scratch buffer; returns its offset. */
static int gen_key(Gen *g, Node *mapnode) {
  MapSym *m = mapnode->map;
  int key = scratch_alloc(g, m->key_size);
  if (m->nkeys == 0) {
    emit(g, I_ST(BPF_DW, SCRATCH, key, 0));
    return key;
  }
  int i = 0;
  for (Node *k = mapnode->args; k; k = k->next, i++) {
    if (is_buffer(k->type)) {
      gen_buf(g, k, key + m->key_off[i], buf_cap(m->key_types[i]));
    } else {
      gen_store_int(g, k, SCRATCH, key + m->key_off[i]);
    }
  }
  return key;
}

/* r0 = bpf_map_lookup_elem(m, scratch + key) */
static void emit_lookup(Gen *g, MapSym *m, int key) {
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit_call(g, BPF_FUNC_map_lookup_elem);
}

/* bpf_map_update_elem(m, scratch + key, scratch + val, BPF_ANY) */
static void emit_update(Gen *g, MapSym *m, int key, int val) {
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit_scratch(g, BPF_REG_3, val);
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
  emit_call(g, BPF_FUNC_map_update_elem);
}

/* An integer read of @m[k]: 0 when the entry is missing. Aggregations give
 * this CPU's share (avg: this CPU's average). */
static int gen_map_int(Gen *g, Node *n) {
  MapSym *m = n->map;
  int key = gen_key(g, n);
  emit_lookup(g, m, key);
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 0));
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit(g, I_LDX(BPF_DW, r, BPF_REG_0, 0));
  if (m->value_type.kind == TY_AGG && m->value_type.agg == AGG_AVG) {
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    emit(g, I_SDIV64_REG(r, BPF_REG_1));
  }
  patch_here(g, miss);
  return r;
}

static void gen_map_str(Gen *g, Node *n, int dst, int cap) {
  MapSym *m = n->map;
  int key = gen_key(g, n);
  emit_lookup(g, m, key);
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit_copy_from(g, BPF_REG_0, 0, dst, m->value_size, cap);
  int done = emit_jump(g, I_JA(0));
  patch_here(g, miss);
  emit_zero(g, dst, cap);
  patch_here(g, done);
}

/* The ALU opcode of an arithmetic operator, or -1 for comparisons. */
static int alu_code(int op, bool is_signed) {
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

static int jmp_code(int op, bool is_signed) {
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
 * src < 0) for any integer operator but && and ||. Signed division and
 * modulo use the signed forms (off = 1). */
static void emit_op(Gen *g, int op, int dst, int src, int32_t imm,
                    bool is_signed) {
  int alu = alu_code(op, is_signed);
  bool use_imm = src < 0;
  if (alu >= 0) {
    struct bpf_insn i = use_imm ? I_ALU64_IMM(alu, dst, imm)
                                : I_ALU64_REG(alu, dst, src);
    if (is_signed && (alu == BPF_DIV || alu == BPF_MOD)) i.off = 1;
    emit(g, i);
    return;
  }
  /* dst = (dst op src) ? 1 : 0 */
  int jmp = jmp_code(op, is_signed);
  emit(g, use_imm ? I_JMP_IMM(jmp, dst, imm, 2) : I_JMP_REG(jmp, dst, src, 2));
  emit(g, I_MOV64_IMM(dst, 0));
  emit(g, I_JA(1));
  emit(g, I_MOV64_IMM(dst, 1));
}

/* @m[k] op= v, @m[k]++ ...: read (0 if missing), compute, write back.
 * Returns a register with the value before (post) or after the change
 * when want_value, else -1. */
static int gen_map_update_int(Gen *g, Node *mapnode, int op, Node *rhs,
                              int64_t delta, bool want_old) {
  MapSym *m = mapnode->map;
  Held v = {-1, 0};
  if (rhs) v = hold(g, gen_int(g, rhs));
  int key = gen_key(g, mapnode);
  int val = scratch_alloc(g, 8);
  emit_lookup(g, m, key);
  int cur = reg_alloc(g);
  emit(g, I_MOV64_IMM(cur, 0));
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit(g, I_LDX(BPF_DW, cur, BPF_REG_0, 0));
  patch_here(g, miss);
  Held old = {-1, 0};
  int result = cur;
  if (want_old) {
    int o = reg_alloc(g);
    emit(g, I_MOV64_REG(o, cur));
    old = hold(g, o);
  }
  if (rhs) {
    int r = held_reg(g, v, BPF_REG_1);
    emit_op(g, op, cur, r, 0, m->value_type.is_signed);
    held_free(g, v);
  } else {
    emit(g, I_ALU64_IMM(BPF_ADD, cur, (int32_t)delta));
  }
  emit(g, I_STX(BPF_DW, SCRATCH, cur, val));
  emit_update(g, m, key, val);
  if (want_old) {
    reg_free(g, cur);
    result = held_reg(g, old, BPF_REG_0);
    if (result == BPF_REG_0) {
      result = reg_alloc(g);
      emit(g, I_MOV64_REG(result, BPF_REG_0));
    }
  }
  return result;
}

static int find_map(Gen *g, const char *name) {
  for (int i = 0; i < g->c->nmaps; i++)
    if (!strcmp(g->c->maps[i]->name, name)) return i;
  return -1;
}

/* idx = the hist() bucket of v (layout in program.h), using r1..r4. */
static void emit_hist_index(Gen *g, int idx, int v, int bits) {
  emit(g, I_MOV64_IMM(idx, 0));
  int done1 = emit_jump(g, I_JMP_IMM(BPF_JSLT, v, 0, 0));
  emit(g, I_MOV64_IMM(idx, 1));
  int done2 = emit_jump(g, I_JMP_IMM(BPF_JEQ, v, 0, 0));
  /* r3 = floor(log2 v) by halving the search range */
  emit(g, I_MOV64_REG(BPF_REG_1, v));
  emit(g, I_MOV64_IMM(BPF_REG_3, 0));
  for (int sh = 32; sh >= 1; sh /= 2) {
    emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_1));
    emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_2, sh));
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_2, 0, 2));
    emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_2));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, sh));
  }
  if (bits == 0) {
    emit(g, I_MOV64_REG(idx, BPF_REG_3));
  } else {
    /* r1 = the `bits` bits after the leading one */
    emit(g, I_MOV64_REG(BPF_REG_1, v));
    emit(g, I_MOV64_IMM(BPF_REG_4, bits));
    int below = emit_jump(g, I_JMP_REG(BPF_JGT, BPF_REG_4, BPF_REG_3, 0));
    emit(g, I_MOV64_REG(BPF_REG_4, BPF_REG_3));
    emit(g, I_ALU64_IMM(BPF_SUB, BPF_REG_4, bits));
    emit(g, I_ALU64_REG(BPF_RSH, BPF_REG_1, BPF_REG_4));
    int joined = emit_jump(g, I_JA(0));
    patch_here(g, below);
    emit(g, I_ALU64_REG(BPF_SUB, BPF_REG_4, BPF_REG_3));
    emit(g, I_ALU64_REG(BPF_LSH, BPF_REG_1, BPF_REG_4));
    patch_here(g, joined);
    emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_1, (1 << bits) - 1));
    emit(g, I_MOV64_REG(idx, BPF_REG_3));
    emit(g, I_ALU64_IMM(BPF_LSH, idx, bits));
    emit(g, I_ALU64_REG(BPF_ADD, idx, BPF_REG_1));
  }
  emit(g, I_ALU64_IMM(BPF_ADD, idx, 2));
  patch_here(g, done1);
  patch_here(g, done2);
}

/* idx = the lhist() bucket of v. */
static void emit_lhist_index(Gen *g, int idx, int v, const MapSym *m) {
  int last = lhist_buckets(m) - 1;
  emit(g, I_MOV64_IMM(idx, 0));
  int done1 = emit_jump(g, I_JMP_IMM(BPF_JSLT, v, (int32_t)m->lhist_min, 0));
  emit(g, I_MOV64_IMM(idx, last));
  int done2 = emit_jump(g, I_JMP_IMM(BPF_JSGE, v, (int32_t)m->lhist_max, 0));
  emit(g, I_MOV64_REG(idx, v));
  emit(g, I_ALU64_IMM(BPF_SUB, idx, (int32_t)m->lhist_min));
  emit(g, I_ALU64_IMM(BPF_DIV, idx, (int32_t)m->lhist_step));
  emit(g, I_ALU64_IMM(BPF_ADD, idx, 1));
  patch_here(g, done1);
  patch_here(g, done2);
}

/* @m[k] = hist(v) / lhist(v, ...): one bucket of this CPU's slot counts
 * up; a missing entry is first inserted from the zero map. */
static void gen_histogram(Gen *g, Node *mapnode, Node *call) {
  MapSym *m = mapnode->map;
  int v = gen_int(g, call->args);
  int idx = reg_alloc(g);
  if (m->value_type.agg == AGG_HIST)
    emit_hist_index(g, idx, v, m->hist_bits);
  else
    emit_lhist_index(g, idx, v, m);
  reg_free(g, v);
  int nb = m->value_size / 8;
  emit(g, I_JMP_IMM(BPF_JLE, idx, nb - 1, 1));
  emit(g, I_MOV64_IMM(idx, nb - 1));
  Held hidx = hold(g, idx);
  int key = gen_key(g, mapnode);
  emit_lookup(g, m, key);
  int have = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  emit(g, I_ST(BPF_DW, BPF_REG_10, SLOT_KEY0, 0));
  emit_map(g, BPF_REG_1, find_map(g, ZERO_MAP_NAME));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, SLOT_KEY0));
  emit_call(g, BPF_FUNC_map_lookup_elem);
  int nozero = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
  emit_map(g, BPF_REG_1, m->id);
  emit_scratch(g, BPF_REG_2, key);
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_NOEXIST));
  emit_call(g, BPF_FUNC_map_update_elem);
  emit_lookup(g, m, key);
  int gone = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  patch_here(g, have);
  int r = held_reg(g, hidx, BPF_REG_1);
  emit(g, I_MOV64_REG(BPF_REG_1, r));
  emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_1, 3));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_0, BPF_REG_1));
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
  patch_here(g, nozero);
  patch_here(g, gone);
  held_free(g, hidx);
}

/* @m[k] = count() / sum(v) / min(v) / max(v) / avg(v) / stats(v) on a
 * per-CPU map: update this CPU's slot in place, or insert it. */
static void gen_aggregate(Gen *g, Node *mapnode, Node *call) {
  MapSym *m = mapnode->map;
  AggKind agg = m->value_type.agg;
  if (agg == AGG_HIST || agg == AGG_LHIST) {
    gen_histogram(g, mapnode, call);
    return;
  }
  Held v = {-1, 0};
  if (agg != AGG_COUNT) v = hold(g, gen_int(g, call->args));
  int key = gen_key(g, mapnode);
  int val = scratch_alloc(g, m->value_size);
  emit_lookup(g, m, key);
  int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  int vr = agg == AGG_COUNT ? -1 : held_reg(g, v, BPF_REG_2);
  int skip = -1;
  switch (agg) {
  case AGG_COUNT:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    break;
  case AGG_SUM:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, vr));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    break;
  case AGG_AVG:
  case AGG_STATS:
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_1, vr));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 8));
    break;
  case AGG_MIN:
  case AGG_MAX: {
    /* store when this CPU has no value yet or v beats it */
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 8));
    int store = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_1, 0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    skip = emit_jump(g, I_JMP_REG(agg == AGG_MIN ? BPF_JSGE : BPF_JSLE, vr,
                                  BPF_REG_1, 0));
    patch_here(g, store);
    emit(g, I_STX(BPF_DW, BPF_REG_0, vr, 0));
    emit(g, I_ST(BPF_DW, BPF_REG_0, 8, 1));
    break;
  }
  default:
    break;
  }
  if (skip >= 0) patch_here(g, skip);
  int done = emit_jump(g, I_JA(0));
  patch_here(g, miss);
  /* first value on this CPU */
  if (agg == AGG_COUNT) {
    emit(g, I_ST(BPF_DW, SCRATCH, val, 1));
  } else {
    vr = held_reg(g, v, BPF_REG_2);
    emit(g, I_STX(BPF_DW, SCRATCH, vr, val));
    if (m->value_size > 8) emit(g, I_ST(BPF_DW, SCRATCH, val + 8, 1));
  }
  emit_update(g, m, key, val);
  patch_here(g, done);
  held_free(g, v);
}

/* ---- events --------------------------------------------------------- */

/* Sends `size` bytes at scratch + rec to user space. */
/* Events go out through small subprograms placed after the probe's code,
 * so each printf costs a few instructions at its call site:
 *   SUB_OUTPUT(r1 = record, r2 = size) sends a record built by the caller;
 *   SUB_EVENT + kind (r1 = index) sends a bare header of that kind. */
static void emit_subcall(Gen *g, int sub) {
  int at = emit(g, insn_make(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 0));
  int *n = &g->nsubcalls[sub];
  g->subcalls[sub] = realloc(g->subcalls[sub], sizeof(int) * (*n + 1));
  g->subcalls[sub][(*n)++] = at;
}

static void emit_output(Gen *g, int rec, int size) {
  emit_scratch(g, BPF_REG_1, rec);
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit_subcall(g, SUB_OUTPUT);
}

/* A record that is only a header: two instructions where it is sent. */
static void emit_event(Gen *g, uint32_t kind, uint32_t index) {
  emit(g, I_MOV64_IMM(BPF_REG_1, (int32_t)index));
  emit_subcall(g, SUB_EVENT + (int)kind);
}

/* The subprograms the probe called, with their calls patched. */
static void emit_subprograms(Gen *g) {
  for (int sub = 0; sub < NSUBS; sub++) {
    if (!g->nsubcalls[sub]) continue;
    int start = g->p->ninsns;
    if (sub == SUB_COUNT) {
      /* bpf_for_each_map_elem callback: ++*(u64 *)ctx, go on */
      emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_4, 0));
      emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
      emit(g, I_STX(BPF_DW, BPF_REG_4, BPF_REG_1, 0));
      emit_return(g);
    } else if (sub >= SUB_EVENT) {
      emit(g, I_ST(BPF_W, BPF_REG_10, -8, sub - SUB_EVENT));
      emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_1, -4));
      emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
      emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
      emit(g, I_MOV64_IMM(BPF_REG_3, (int32_t)sizeof(EventHeader)));
    } else {
      emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_2));
      emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_1));
    }
    if (sub != SUB_COUNT) {
      emit_map(g, BPF_REG_1, MAP_ID_RINGBUF);
      emit(g, I_MOV64_IMM(BPF_REG_4, 0));
      emit_call(g, BPF_FUNC_ringbuf_output);
      emit_return(g);
    }
    for (int i = 0; i < g->nsubcalls[sub]; i++) {
      int at = g->subcalls[sub][i];
      g->p->insns[at].imm = start - at - 1;
    }
    free(g->subcalls[sub]);
    g->subcalls[sub] = NULL;
    g->nsubcalls[sub] = 0;
  }
}

static int emit_header(Gen *g, int payload, uint32_t kind, uint32_t index) {
  int rec = scratch_alloc(g, (int)sizeof(EventHeader) + payload);
  emit(g, I_ST(BPF_W, SCRATCH, rec, (int32_t)kind));
  emit(g, I_ST(BPF_W, SCRATCH, rec + 4, (int32_t)index));
  return rec;
}

/* printf(), system() and cat(): a record laid out by the PrintfDef. */
static void gen_format(Gen *g, Node *n, uint32_t kind) {
  PrintfDef *def = &g->c->printfs[n->printf_id];
  if (def->nargs == 0) {
    emit_event(g, kind, (uint32_t)n->printf_id);
    return;
  }
  int rec = emit_header(g, def->size, kind, (uint32_t)n->printf_id);
  int base = rec + (int)sizeof(EventHeader);
  int i = 0;
  for (Node *a = n->args->next; a; a = a->next, i++) {
    int at = base + def->args[i].offset;
    if (is_buffer(a->type)) {
      gen_buf(g, a, at, buf_cap(a->type));
    } else {
      gen_store_int(g, a, SCRATCH, at);
    }
  }
  emit_output(g, rec, (int)sizeof(EventHeader) + def->size);
}

/* join(argv): up to JOIN_MAX_ARGS strings read through a user array of
 * pointers; a NULL pointer ends the list (its slot is left empty). */
static void gen_join(Gen *g, Node *n) {
  int payload = JOIN_MAX_ARGS * JOIN_ARG_SIZE;
  int rec = emit_header(g, payload, EV_JOIN, (uint32_t)n->printf_id);
  int base = rec + (int)sizeof(EventHeader);
  Held argv = hold(g, gen_int(g, n->args));
  int slot = stack_alloc(g, 8);
  int ends[JOIN_MAX_ARGS];
  for (int i = 0; i < JOIN_MAX_ARGS; i++) {
    /* slot = argv[i] */
    emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
    emit(g, I_MOV64_IMM(BPF_REG_2, 8));
    int a = held_reg(g, argv, BPF_REG_3);
    if (a != BPF_REG_3) emit(g, I_MOV64_REG(BPF_REG_3, a));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, i * 8));
    emit_call(g, BPF_FUNC_probe_read_user);
    emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, slot));
    emit(g, I_ST(BPF_B, SCRATCH, base + i * JOIN_ARG_SIZE, 0));
    ends[i] = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0));
    emit_scratch(g, BPF_REG_1, base + i * JOIN_ARG_SIZE);
    emit(g, I_MOV64_IMM(BPF_REG_2, JOIN_ARG_SIZE));
    emit_call(g, BPF_FUNC_probe_read_user_str);
  }
  for (int i = 0; i < JOIN_MAX_ARGS; i++) patch_here(g, ends[i]);
  held_free(g, argv);
  emit_output(g, rec, (int)sizeof(EventHeader) + payload);
}

/* print(@m[, top[, div]]): user space prints; the record says how. */
static void gen_print(Gen *g, Node *n) {
  Node *top = n->args->next;
  Node *div = top ? top->next : NULL;
  int rec = emit_header(g, 16, EV_PRINT_MAP, (uint32_t)n->args->map->id);
  int payload = rec + (int)sizeof(EventHeader);
  emit(g, I_ST(BPF_DW, SCRATCH, payload, top ? (int32_t)top->ival : 0));
  emit(g, I_ST(BPF_DW, SCRATCH, payload + 8, div ? (int32_t)div->ival : 0));
  emit_output(g, rec, (int)sizeof(EventHeader) + 16);
}

static void gen_call_stmt(Gen *g, Node *n) {
  const char *f = n->name;
  if (!strcmp(f, "printf")) {
    gen_format(g, n, EV_PRINTF);
  } else if (!strcmp(f, "system")) {
    gen_format(g, n, EV_SYSTEM);
  } else if (!strcmp(f, "cat")) {
    gen_format(g, n, EV_CAT);
  } else if (!strcmp(f, "time")) {
    emit_event(g, EV_TIME, (uint32_t)n->printf_id);
  } else if (!strcmp(f, "join")) {
    gen_join(g, n);
  } else if (!strcmp(f, "signal")) {
    emit(g, I_MOV64_IMM(BPF_REG_1, (int32_t)n->ival));
    emit_call(g, BPF_FUNC_send_signal);
  } else if (!strcmp(f, "print")) {
    gen_print(g, n);
  } else if (!strcmp(f, "exit")) {
    emit_event(g, EV_EXIT, 0);
    emit_return(g);
  } else if (!strcmp(f, "clear") || !strcmp(f, "zero")) {
    uint32_t kind = f[0] == 'c' ? EV_CLEAR_MAP : EV_ZERO_MAP;
    emit_event(g, kind, (uint32_t)n->args->map->id);
  } else if (!strcmp(f, "delete")) {
    int key = gen_key(g, n->args);
    emit_map(g, BPF_REG_1, n->args->map->id);
    emit_scratch(g, BPF_REG_2, key);
    emit_call(g, BPF_FUNC_map_delete_elem);
  } else {
    fail(g, n->span, "loupe cannot generate code for %s() yet", f);
  }
}

/* ---- strings -------------------------------------------------------- */

static void gen_str_fn(Gen *g, Node *n, int dst, int cap) {
  Node *arg = n->args;
  if (arg->type.kind == TY_STR) {
    gen_buf(g, arg, dst, cap);
    if (n->type.size < arg->type.size) {
      /* str(s, n): cut the string after n - 1 bytes */
      for (int i = n->type.size - 1; i < cap; i++)
        emit(g, I_ST(BPF_B, SCRATCH, dst + i, 0));
    }
    return;
  }
  int r = gen_int(g, arg);
  emit_zero(g, dst, cap);
  emit(g, I_MOV64_REG(BPF_REG_3, r));
  reg_free(g, r);
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, n->type.size));
  emit_call(g, arg->type.as ? probe_read_str_helper(arg->type.as)
                            : unknown_space_str_helper(g));
}

/* (a, b, ...) into dst, each element at its offset in the tuple's layout. */
static void gen_tuple(Gen *g, Node *n, int dst, int cap) {
  TupleType *t = n->type.tuple;
  int i = 0;
  for (Node *e = n->args; e; e = e->next, i++) {
    int at = dst + t->offs[i];
    if (e->type.kind == TY_INT) {
      gen_store_int(g, e, SCRATCH, at);
    } else {
      gen_buf(g, e, at, buf_cap(t->elems[i]));
    }
  }
  if (cap > t->size) {
    for (int off = t->size; off < cap; off += 8)
      emit(g, I_ST(BPF_DW, SCRATCH, dst + off, 0));
  }
}

/* buf(p, n): an 8-byte length, then n bytes read from p (or a string's
 * first n bytes). */
static void gen_buf_fn(Gen *g, Node *n, int dst, int cap) {
  Node *arg = n->args;
  int size = n->type.size;
  if (arg->type.kind == TY_STR) {
    gen_buf(g, arg, dst + 8, cap - 8);
  } else {
    int r = gen_int(g, arg);
    emit(g, I_MOV64_REG(BPF_REG_3, r));
    reg_free(g, r);
    emit_scratch(g, BPF_REG_1, dst + 8);
    emit(g, I_MOV64_IMM(BPF_REG_2, size));
    emit_call(g, arg->type.as == AS_USER ? BPF_FUNC_probe_read_user
                                         : BPF_FUNC_probe_read_kernel);
  }
  emit(g, I_ST(BPF_DW, SCRATCH, dst , size));
}

/* $t.N for a string element: copied out of the tuple. */
static void gen_tuple_field_buf(Gen *g, Node *n, int dst, int cap) {
  int src = buf_ref(g, n->lhs) + n->lhs->type.tuple->offs[n->ival];
  emit_copy(g, src, dst, buf_cap(n->type), cap);
}

/* Generates string expression n into the scratch buffer at dst (capacity
 * cap >= the string's capacity), zero-padded. */
static void gen_buf(Gen *g, Node *n, int dst, int cap) {
  switch (n->kind) {
  case N_STR:
    emit_literal(g, n->sval, n->slen, dst, cap);
    return;
  case N_BUILTIN:
    if (!strcmp(n->name, "comm")) {
      /* Kernels before 6.2 or so copy comm with strscpy, which leaves the
       * bytes after its NUL as they were: zero them all first, or string
       * compares and map keys see stale bytes. */
      emit_zero(g, dst, cap);
      emit_scratch(g, BPF_REG_1, dst);
      emit(g, I_MOV64_IMM(BPF_REG_2, COMM_SIZE));
      emit_call(g, BPF_FUNC_get_current_comm);
    } else if (!strcmp(n->name, "probe")) {
      const char *name = g->target ? g->target->name : g->p->ap->text;
      emit_literal(g, name, (int)strlen(name), dst, cap);
    } else if (!strcmp(n->name, "func") && g->target && g->target->event) {
      const char *name = g->target->event;
      emit_literal(g, name, (int)strlen(name), dst, cap);
    } else {
      fail(g, n->span, "loupe cannot generate code for '%s' yet", n->name);
    }
    return;
  case N_CALL:
    if (!strcmp(n->name, "buf"))
      gen_buf_fn(g, n, dst, cap);
    else
      gen_str_fn(g, n, dst, cap);
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
  case N_VAR:
    emit_copy(g, n->var->stack_off, dst, buf_cap(n->var->type), cap);
    return;
  case N_MAP:
    gen_map_str(g, n, dst, cap);
    return;
  case N_TERNARY: {
    Jumps to_else = {0};
    gen_cond(g, n->cond, false, &to_else);
    gen_buf(g, n->then, dst, cap);
    int done = emit_jump(g, I_JA(0));
    jumps_patch_here(g, &to_else);
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

/* The scratch offset of a string value: a variable's own buffer, or a new
 * temporary holding it. */
static int buf_ref(Gen *g, Node *n) {
  if (n->kind == N_VAR) return n->var->stack_off;
  int at = scratch_alloc(g, buf_cap(n->type));
  gen_buf(g, n, at, buf_cap(n->type));
  return at;
}

/* a == b / a != b on strings: whole words up to the shorter capacity. */
static int gen_str_compare(Gen *g, Node *n) {
  int a = buf_ref(g, n->lhs);
  int b = buf_ref(g, n->rhs);
  int len = buf_cap(n->lhs->type) < buf_cap(n->rhs->type)
                ? buf_cap(n->lhs->type) : buf_cap(n->rhs->type);
  int r = reg_alloc(g);
  int nwords = len / 8;
  int *differ = calloc(nwords, sizeof(int));
  for (int i = 0; i < nwords; i++) {
    emit(g, I_LDX(BPF_DW, BPF_REG_2, SCRATCH, a + i * 8));
    emit(g, I_LDX(BPF_DW, BPF_REG_3, SCRATCH, b + i * 8));
    differ[i] = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_2, BPF_REG_3, 0));
  }
  bool eq = n->op == OP_EQ;
  emit(g, I_MOV64_IMM(r, eq ? 1 : 0));
  int done = emit_jump(g, I_JA(0));
  for (int i = 0; i < nwords; i++) patch_here(g, differ[i]);
  emit(g, I_MOV64_IMM(r, eq ? 0 : 1));
  patch_here(g, done);
  free(differ);
  return r;
}

/* ---- integers ------------------------------------------------------- */

/* Where argN and retval live in x86-64's struct pt_regs (the calling
 * convention's registers di, si, dx, cx, r8, r9, and ax); -1 for other
 * names. */
static int pt_regs_offset(const char *builtin) {
  static const struct { const char *name; int offset; } regs[] = {
      {"arg0", 112}, {"arg1", 104}, {"arg2", 96}, {"arg3", 88},
      {"arg4", 72},  {"arg5", 64},  {"retval", 80},
  };
  for (size_t i = 0; i < sizeof regs / sizeof regs[0]; i++)
    if (!strcmp(regs[i].name, builtin)) return regs[i].offset;
  return -1;
}

static int gen_builtin_int(Gen *g, Node *n) {
  const char *s = n->name;
  int r = reg_alloc(g);
  if (!strcmp(s, "pid") || !strcmp(s, "tid")) {
    emit_call(g, BPF_FUNC_get_current_pid_tgid);
    if (s[0] == 'p')
      emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    emit(g, I_MOV32_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "uid") || !strcmp(s, "gid")) {
    emit_call(g, BPF_FUNC_get_current_uid_gid);
    if (s[0] == 'g')
      emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 32));
    emit(g, I_MOV32_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "nsecs")) {
    emit_call(g, BPF_FUNC_ktime_get_ns);
    emit(g, I_MOV64_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "elapsed")) {
    int base = -1;
    for (int i = 0; i < g->c->nmaps; i++)
      if (!strcmp(g->c->maps[i]->name, ELAPSED_MAP_NAME)) base = i;
    emit_call(g, BPF_FUNC_ktime_get_ns);
    emit(g, I_MOV64_REG(r, BPF_REG_0));
    emit(g, I_ST(BPF_DW, BPF_REG_10, SLOT_KEY0, 0));
    emit_map(g, BPF_REG_1, base);
    emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, SLOT_KEY0));
    emit_call(g, BPF_FUNC_map_lookup_elem);
    int miss = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
    emit(g, I_ALU64_REG(BPF_SUB, r, BPF_REG_1));
    patch_here(g, miss);
  } else if (!strcmp(s, "cpu")) {
    emit_call(g, BPF_FUNC_get_smp_processor_id);
    emit(g, I_MOV32_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "rand")) {
    emit_call(g, BPF_FUNC_get_prandom_u32);
    emit(g, I_MOV32_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "curtask")) {
    emit_call(g, BPF_FUNC_get_current_task);
    emit(g, I_MOV64_REG(r, BPF_REG_0));
  } else if (!strcmp(s, "cgroup")) {
    emit_call(g, BPF_FUNC_get_current_cgroup_id);
    emit(g, I_MOV64_REG(r, BPF_REG_0));
  } else if (pt_regs_offset(s) >= 0) {
    /* kprobe programs may read their struct pt_regs context directly. */
    emit_ctx(g, r);
    emit(g, I_LDX(BPF_DW, r, r, pt_regs_offset(s)));
  } else {
    fail(g, n->span, "loupe cannot generate code for '%s' yet", s);
  }
  return r;
}

/* ---- constants ------------------------------------------------------
 * Integer expressions whose value is known while generating (literals,
 * variables last assigned a known value, and operators over them) are
 * folded: unrolled loops over constant indexes then cost no arithmetic. */

static bool operands_signed(Node *n);

/* a op b with the program's 64-bit semantics; false if it cannot be
 * folded (division by zero is left to the kernel's rules). */
static bool apply_op(int op, int64_t a, int64_t b, bool is_signed,
                     int64_t *out) {
  uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
  switch (op) {
  case '+': *out = (int64_t)(ua + ub); return true;
  case '-': *out = (int64_t)(ua - ub); return true;
  case '*': *out = (int64_t)(ua * ub); return true;
  case '/':
  case '%':
    if (b == 0 || (is_signed && a == INT64_MIN && b == -1)) return false;
    if (is_signed)
      *out = op == '/' ? a / b : a % b;
    else
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

static int64_t truncate_to(Type t, int64_t v) {
  if (t.size >= 8) return v;
  int bits = t.size * 8;
  uint64_t mask = (1ull << bits) - 1;
  uint64_t u = (uint64_t)v & mask;
  if (t.is_signed && (u >> (bits - 1))) u |= ~mask;
  return (int64_t)u;
}

/* The value of integer expression n if it is known now. */
static bool fold(Gen *g, Node *n, int64_t *v) {
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
    if (n->op == '*' || !fold(g, n->lhs, &a)) return false;
    *v = n->op == '-' ? (int64_t)(0 - (uint64_t)a) : n->op == '~' ? ~a : !a;
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
    *v = !strcmp(n->name, "bool") ? a != 0 : truncate_to(n->type, a);
    return true;
  default:
    return false;
  }
}

static bool fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

static bool fold_imm(Gen *g, Node *n, int64_t *v) {
  return fold(g, n, v) && fits32(*v);
}

/* *(u64 *)(base + off) = v, for a known v. */
static void emit_store_const(Gen *g, int base, int off, int64_t v) {
  if (fits32(v)) {
    emit(g, I_ST(BPF_DW, base, off, (int32_t)v));
    return;
  }
  emit_imm64(g, BPF_REG_1, v);
  emit(g, I_STX(BPF_DW, base, BPF_REG_1, off));
}

/* Stores integer expression n at base + off. */
static void gen_store_int(Gen *g, Node *n, int base, int off) {
  int64_t v;
  if (fold(g, n, &v)) {
    emit_store_const(g, base, off, v);
    return;
  }
  int r = gen_int(g, n);
  emit(g, I_STX(BPF_DW, base, r, off));
  reg_free(g, r);
}

/* What is known of the variables, saved around branches. */
typedef struct VarState {
  bool known;
  int64_t value;
} VarState;

static VarState *vars_save(Gen *g) {
  int n = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next) n++;
  VarState *st = calloc(n + 1, sizeof(*st));
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++)
    st[i] = (VarState){v->known, v->value};
  return st;
}

static void vars_restore(Gen *g, const VarState *st) {
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++) {
    v->known = st[i].known;
    v->value = st[i].value;
  }
}

/* Keeps only what both paths agree on. */
static void vars_merge(Gen *g, const VarState *other) {
  int i = 0;
  for (VarSym *v = g->probe->vars; v; v = v->next, i++)
    if (!other[i].known || !v->known || other[i].value != v->value)
      v->known = false;
}

/* Forgets what is known of every variable that n assigns. */
static void vars_forget_assigned(Node *n) {
  for (; n; n = n->next) {
    if ((n->kind == N_ASSIGN || n->kind == N_INCDEC) && n->lhs &&
        n->lhs->kind == N_VAR && n->lhs->var)
      n->lhs->var->known = false;
    vars_forget_assigned(n->lhs);
    vars_forget_assigned(n->rhs);
    vars_forget_assigned(n->cond);
    vars_forget_assigned(n->then);
    vars_forget_assigned(n->els);
    vars_forget_assigned(n->args);
    vars_forget_assigned(n->body);
  }
}

static bool operands_signed(Node *n) {
  return n->lhs->type.is_signed && n->rhs->type.is_signed;
}

/* && and ||, short-circuit, giving 0 or 1. */
static int gen_logical(Gen *g, Node *n) {
  Jumps is_false = {0};
  gen_cond(g, n, false, &is_false);
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 1));
  emit(g, I_JA(1));
  jumps_patch_here(g, &is_false);
  emit(g, I_MOV64_IMM(r, 0));
  return r;
}

static int gen_binop(Gen *g, Node *n) {
  if (n->op == OP_AND || n->op == OP_OR) return gen_logical(g, n);
  if (n->lhs->type.kind == TY_STR) return gen_str_compare(g, n);
  bool is_signed = operands_signed(n);
  int a = gen_int(g, n->lhs);
  int64_t k;
  if (n->type.is_pointer && n->field_offset > 1) {
    /* pointer arithmetic: the offset counts elements */
    if (fold(g, n->rhs, &k) && fits32(k * n->field_offset)) {
      emit_op(g, n->op, a, -1, (int32_t)(k * n->field_offset), false);
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
  emit_op(g, n->op, ar, b, 0, is_signed);
  if (ar == BPF_REG_0) {
    emit(g, I_MOV64_REG(b, BPF_REG_0));
    return b;
  }
  reg_free(g, b);
  return ar;
}

static int gen_unop(Gen *g, Node *n) {
  if (n->op == '*') return gen_mem_int(g, n);
  int r = gen_int(g, n->lhs);
  switch (n->op) {
  case '-': emit(g, I_NEG64(r)); break;
  case '~': emit(g, I_ALU64_IMM(BPF_XOR, r, -1)); break;
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
static int inverse_jump(int op, bool is_signed) {
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
static void gen_cond(Gen *g, Node *cond, bool when, Jumps *out) {
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

static int gen_ternary_int(Gen *g, Node *n) {
  Jumps to_else = {0};
  gen_cond(g, n->cond, false, &to_else);
  int t = gen_int(g, n->then);
  int done = emit_jump(g, I_JA(0));
  jumps_patch_here(g, &to_else);
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

/* $x++ / ++$x and the map forms. As a statement (value unused) the old
 * value is not kept. */
static int gen_incdec(Gen *g, Node *n, bool as_stmt) {
  int64_t delta = n->op == OP_INC ? 1 : -1;
  bool prefix = n->ival != 0 || as_stmt;
  if (n->lhs->kind == N_MAP)
    return gen_map_update_int(g, n->lhs, '+', NULL, delta, !prefix);
  VarSym *v = n->lhs->var;
  int slot = v->stack_off;
  int r = reg_alloc(g);
  if (v->known) {
    int64_t old = v->value;
    v->value = (int64_t)((uint64_t)old + (uint64_t)delta);
    emit_store_const(g, BPF_REG_10, slot, v->value);
    emit_imm64(g, r, prefix ? v->value : old);
    return r;
  }
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
  emit(g, I_ALU64_IMM(BPF_ADD, r, (int32_t)delta));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, slot));
  if (!prefix) emit(g, I_ALU64_IMM(BPF_SUB, r, (int32_t)delta));
  return r;
}

/* (uint8)x ... (int64)x, (bool)x: truncate, then extend by the new type. */
static int gen_cast(Gen *g, Node *n) {
  int r = gen_int(g, n->lhs);
  Type t = n->type;
  if (!strcmp(n->name, "bool")) {
    emit(g, I_JMP_IMM(BPF_JEQ, r, 0, 1));
    emit(g, I_MOV64_IMM(r, 1));
  } else if (t.size == 4 && !t.is_signed) {
    emit(g, I_MOV32_REG(r, r));
  } else if (t.size < 8 && !t.is_signed) {
    emit(g, I_ALU64_IMM(BPF_AND, r, (int32_t)((1u << (t.size * 8)) - 1)));
  } else if (t.size < 8) {
    emit(g, I_ALU64_IMM(BPF_LSH, r, 64 - t.size * 8));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 64 - t.size * 8));
  }
  return r;
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

/* strcontains(h, s): a bounded loop over the positions of h, comparing s
 * there byte by byte (no helper call inside, so r1..r5 serve). */
static int gen_strcontains(Gen *g, Node *n) {
  Node *hay = n->args, *needle = hay->next;
  int ph = buf_ref(g, hay), pn = buf_ref(g, needle);
  int hcap = hay->type.size, ncap = needle->type.size;
  int r = reg_alloc(g);
  Jumps found = {0}, missing = {0};
  emit(g, I_MOV64_IMM(BPF_REG_1, 0));                       /* i */
  int outer = g->p->ninsns;
  jumps_add(&missing, emit_jump(g, I_JMP_IMM(BPF_JGE, BPF_REG_1, hcap, 0)));
  emit(g, I_MOV64_IMM(BPF_REG_2, 0));                       /* j */
  int inner = g->p->ninsns;
  jumps_add(&found, emit_jump(g, I_JMP_IMM(BPF_JGE, BPF_REG_2, ncap, 0)));
  emit(g, I_MOV64_REG(BPF_REG_4, SCRATCH));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_4, BPF_REG_2));
  emit(g, I_LDX(BPF_B, BPF_REG_3, BPF_REG_4, pn));         /* s[j] */
  jumps_add(&found, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0)));
  emit(g, I_MOV64_REG(BPF_REG_5, BPF_REG_1));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_5, BPF_REG_2));
  jumps_add(&missing, emit_jump(g, I_JMP_IMM(BPF_JGE, BPF_REG_5, hcap, 0)));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_5, SCRATCH));
  emit(g, I_LDX(BPF_B, BPF_REG_5, BPF_REG_5, ph));         /* h[i + j] */
  int next_i = emit_jump(g, I_JMP_REG(BPF_JNE, BPF_REG_5, BPF_REG_3, 0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, 1));
  emit_jump_back(g, inner);
  patch_here(g, next_i);
  emit(g, I_MOV64_REG(BPF_REG_4, SCRATCH));
  emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_4, BPF_REG_1));
  emit(g, I_LDX(BPF_B, BPF_REG_3, BPF_REG_4, ph));         /* h[i] */
  jumps_add(&missing, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0)));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, 1));
  emit_jump_back(g, outer);
  jumps_patch_here(g, &found);
  emit(g, I_MOV64_IMM(r, 1));
  int done = emit_jump(g, I_JA(0));
  jumps_patch_here(g, &missing);
  emit(g, I_MOV64_IMM(r, 0));
  patch_here(g, done);
  return r;
}

/* len(@m): the entries counted by a callback over the map. */
static int gen_len(Gen *g, Node *n) {
  int slot = stack_alloc(g, 8);
  emit(g, I_ST(BPF_DW, BPF_REG_10, slot, 0));
  emit_map(g, BPF_REG_1, n->args->map->id);
  int at = emit(g, I_LD_IMM64_LO(BPF_REG_2, BPF_PSEUDO_FUNC, 0));
  emit(g, I_LD_IMM64_HI(0));
  int *cnt = &g->nsubcalls[SUB_COUNT];
  g->subcalls[SUB_COUNT] =
      realloc(g->subcalls[SUB_COUNT], sizeof(int) * (*cnt + 1));
  g->subcalls[SUB_COUNT][(*cnt)++] = at;
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, slot));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_for_each_map_elem);
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
  return r;
}

static int gen_call_int(Gen *g, Node *n) {
  if (!strcmp(n->name, "strncmp")) return gen_strncmp(g, n);
  if (!strcmp(n->name, "len")) return gen_len(g, n);
  if (!strcmp(n->name, "strcontains")) return gen_strcontains(g, n);
  if (!strcmp(n->name, "has_key")) {
    int key = gen_key(g, n->args);
    emit_lookup(g, n->args->map, key);
    int r = reg_alloc(g);
    emit(g, I_MOV64_IMM(r, 0));
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
    emit(g, I_MOV64_IMM(r, 1));
    return r;
  }
  fail(g, n->span, "loupe cannot use the value of %s() yet", n->name);
  return reg_alloc(g);
}

/* $t.N for an integer element. */
static int gen_tuple_field_int(Gen *g, Node *n) {
  int src = buf_ref(g, n->lhs) + n->lhs->type.tuple->offs[n->ival];
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, SCRATCH, src));
  return r;
}

/* Generates integer expression n; returns the register holding it. */
static int gen_int(Gen *g, Node *n) {
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
    r = gen_builtin_int(g, n);
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
    r = gen_mem_int(g, n);
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
  default:
    fail(g, n->span, "%s", "loupe cannot generate this expression yet");
    r = reg_alloc(g);
    break;
  }
  g->span = saved;
  return r;
}

/* ---- statements ----------------------------------------------------- */

static void gen_assign(Gen *g, Node *n) {
  Node *lhs = n->lhs, *rhs = n->rhs;
  if (lhs->kind == N_VAR) {
    VarSym *v = lhs->var;
    if (is_buffer(v->type)) {
      gen_buf(g, rhs, v->stack_off, buf_cap(v->type));
      return;
    }
    bool is_signed = v->type.is_signed && rhs->type.is_signed;
    int64_t k, now;
    bool known = n->op == '=' ? fold(g, rhs, &now)
                 : v->known && fold(g, rhs, &k) &&
                       apply_op(n->op, v->value, k, is_signed, &now);
    if (known) {
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
      if (fold_imm(g, rhs, &k) && !(k == 0 && (n->op == '/' || n->op == '%'))) {
        emit_op(g, n->op, cur, -1, (int32_t)k, is_signed);
      } else {
        Held h = hold(g, cur);
        int r = gen_int(g, rhs);
        cur = held_reg(g, h, BPF_REG_0);
        emit_op(g, n->op, cur, r, 0, is_signed);
        reg_free(g, r);
      }
      emit(g, I_STX(BPF_DW, BPF_REG_10, cur, v->stack_off));
      reg_free(g, cur);
    }
    v->known = false;
    return;
  }
  MapSym *m = lhs->map;
  if (n->op != '=') {
    reg_free(g, gen_map_update_int(g, lhs, n->op, rhs, 0, false));
    return;
  }
  if (m->value_type.kind == TY_AGG) {
    gen_aggregate(g, lhs, rhs);
    return;
  }
  if (is_buffer(m->value_type)) {
    int key = gen_key(g, lhs);
    int val = scratch_alloc(g, m->value_size);
    gen_buf(g, rhs, val, m->value_size);
    emit_update(g, m, key, val);
    return;
  }
  int64_t k;
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
static bool gen_if(Gen *g, Node *n) {
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
static void gen_for_range(Gen *g, Node *n) {
  if (g->nloops == (int)(sizeof(g->loops) / sizeof(g->loops[0]))) {
    fail(g, n->span, "%s", "loops are nested too deeply");
    return;
  }
  VarSym *v = n->lhs->var;
  gen_store_int(g, n->args, BPF_REG_10, v->stack_off);
  int end = stack_alloc(g, 8);
  gen_store_int(g, n->rhs, BPF_REG_10, end);
  v->known = false;
  vars_forget_assigned(n->then);
  struct Loop *l = &g->loops[g->nloops++];
  memset(l, 0, sizeof(*l));
  l->start = -1;
  int top = g->p->ninsns;
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, v->stack_off));
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, end));
  int out = emit_jump(g, I_JMP_REG(BPF_JSGE, r, BPF_REG_1, 0));
  reg_free(g, r);
  gen_block(g, n->then);
  for (int i = 0; i < l->nconts; i++) patch_here(g, l->conts[i]);
  g->span = n->span;
  r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, v->stack_off));
  emit(g, I_ALU64_IMM(BPF_ADD, r, 1));
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, v->stack_off));
  reg_free(g, r);
  emit_jump_back(g, top);
  patch_here(g, out);
  for (int i = 0; i < l->nbreaks; i++) patch_here(g, l->breaks[i]);
  free(l->breaks);
  free(l->conts);
  g->nloops--;
  vars_forget_assigned(n->then);
}

/* for ($kv : @m): bpf_for_each_map_elem calls the body, generated later
 * as a function of its own (see gen_callbacks). */
static void gen_for_map(Gen *g, Node *n) {
  MapSym *m = n->args->map;
  emit_map(g, BPF_REG_1, m->id);
  g->pending = realloc(g->pending, sizeof(*g->pending) * (g->npending + 1));
  g->pending[g->npending].loop = n;
  g->pending[g->npending].at = g->p->ninsns;
  g->npending++;
  emit(g, I_LD_IMM64_LO(BPF_REG_2, BPF_PSEUDO_FUNC, 0));
  emit(g, I_LD_IMM64_HI(0));
  emit(g, I_MOV64_IMM(BPF_REG_3, 0));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_for_each_map_elem);
}

/* A for-over-map body as a callback (r1 map, r2 key, r3 value, r4 ctx):
 * $kv gets a copy of the key and the value, then the body runs with its
 * own stack frame and variables. Returns 0 to go on, 1 to stop. */
static void gen_callback(Gen *g, Node *n) {
  MapSym *m = n->args->map;
  VarSym *kv = n->lhs->var;
  int start = g->p->ninsns;
  struct Pending *pd = NULL;
  for (int i = 0; i < g->npending; i++)
    if (g->pending[i].loop == n) pd = &g->pending[i];
  g->p->insns[pd->at].imm = start - pd->at - 1;

  g->frame = (int)n->ival;
  g->buf_base = BPF_REG_10;
  memset(g->reg_used, 0, sizeof(g->reg_used));
  g->stack_top = 16;
  g->span = n->span;
  place_vars(g, g->probe);
  int kv_off = kv->stack_off;
  for (int i = 0; i < m->key_size; i += 8) {
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_2, i));
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, kv_off + i));
  }
  int voff = kv_off + kv->type.tuple->offs[1];
  for (int i = 0; i < m->value_size; i += 8) {
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_3, i));
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, voff + i));
  }
  struct Loop *l = &g->loops[g->nloops++];
  memset(l, 0, sizeof(*l));
  l->callback = true;
  if (!gen_block(g, n->then)) emit_return(g);
  g->nloops--;
}

/* Generates every pending for-over-map body (bodies may add more). */
static void gen_callbacks(Gen *g) {
  int saved_base = g->buf_base, saved_frame = g->frame;
  for (int i = 0; i < g->npending; i++) gen_callback(g, g->pending[i].loop);
  free(g->pending);
  g->pending = NULL;
  g->npending = 0;
  g->buf_base = saved_base;
  g->frame = saved_frame;
}

static void emit_jump_back(Gen *g, int target) {
  int off = target - g->p->ninsns - 1;
  if (off < INT16_MIN)
    fail(g, g->span, "%s", "this loop's body is longer than 32767 BPF "
         "instructions; make it smaller");
  emit(g, I_JA((int16_t)off));
}

/* while (c) { ... }: the verifier must see that the loop ends. */
static void gen_while(Gen *g, Node *n) {
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

/* Generates statement n; returns true when control never continues after
 * it (exit(), return, break, continue, or an if whose branches all end),
 * so the caller emits nothing the verifier would find unreachable. */
static bool gen_stmt(Gen *g, Node *n) {
  int stack_mark = g->stack_top, scratch_mark = g->scratch_top;
  bool ends = false;
  g->span = n->span;
  switch (n->kind) {
  case N_EXPR_STMT:
    if (n->lhs->kind == N_CALL && n->lhs->type.kind == TY_VOID) {
      gen_call_stmt(g, n->lhs);
      ends = !strcmp(n->lhs->name, "exit");
    }
    else if (is_buffer(n->lhs->type))
      buf_ref(g, n->lhs);
    else
      reg_free(g, gen_int(g, n->lhs));
    break;
  case N_ASSIGN:
    gen_assign(g, n);
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
      emit(g, I_MOV64_IMM(BPF_REG_0, 1));   /* stop the iteration */
      emit(g, I_EXIT());
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
      emit_return(g);                        /* on to the next entry */
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
    if (n->rhs)
      gen_for_range(g, n);
    else
      gen_for_map(g, n);
    break;
  case N_RETURN:
    emit_return(g);
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
static bool gen_block(Gen *g, Node *n) {
  for (Node *s = n->body; s; s = s->next)
    if (gen_stmt(g, s)) return true;
  return false;
}

/* ---- programs ------------------------------------------------------- */

/* Variables get their homes before the body: integers on the stack,
 * strings in the scratch area. */
static void place_vars(Gen *g, Probe *p) {
  for (VarSym *v = p->vars; v; v = v->next) {
    v->known = false;
    if (v->frame != g->frame) continue;
    if (is_buffer(v->type))
      v->stack_off = scratch_alloc(g, buf_cap(v->type));
    else
      v->stack_off = stack_alloc(g, 8);
  }
}

static void prog_name(BpfProg *p, AttachPoint *ap, Target *t) {
  const char *base = t && t->event ? t->event
                     : ap->nparts ? ap->parts[ap->nparts - 1] : ap->provider;
  const char *prefix = !strcmp(ap->provider, "tracepoint") ? "tp_"
                       : !strcmp(ap->provider, "interval") ? "iv_" : "";
  snprintf(p->name, sizeof(p->name), "%s%s", prefix, base);
  for (char *s = p->name; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      *s = '_';
}

static BpfProg *new_prog(Compiled *c, Probe *probe, AttachPoint *ap,
                         Target *t) {
  c->progs = realloc(c->progs, sizeof(BpfProg) * (c->nprogs + 1));
  BpfProg *p = &c->progs[c->nprogs++];
  memset(p, 0, sizeof(*p));
  p->probe = probe;
  p->ap = ap;
  p->target = t;
  p->prog_type = ap->prov->prog_type;
  p->fd = -1;
  prog_name(p, ap, t);
  return p;
}

/* The program's body, with buffers on the stack (buf_base r10) or in the
 * scratch area (r9). */
static void gen_body(Gen *g, Probe *probe, int buf_base) {
  g->p->ninsns = 0;
  g->buf_base = buf_base;
  g->too_big = false;
  g->frame = 0;
  free(g->pending);
  g->pending = NULL;
  g->npending = 0;
  memset(g->reg_used, 0, sizeof(g->reg_used));
  for (int sub = 0; sub < NSUBS; sub++) {
    free(g->subcalls[sub]);
    g->subcalls[sub] = NULL;
    g->nsubcalls[sub] = 0;
  }
  g->stack_top = g->stack_max = 16;
  g->scratch_top = 0;
  g->span = probe->span;

  /* prologue: keep ctx if fields are read; find the scratch area */
  if (probe->uses_ctx)
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_CTX));
  if (buf_base == BPF_REG_9) {
    emit(g, I_ST(BPF_DW, BPF_REG_10, SLOT_KEY0, 0));
    emit_map(g, BPF_REG_1, MAP_ID_SCRATCH);
    emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, SLOT_KEY0));
    emit_call(g, BPF_FUNC_map_lookup_elem);
    emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 2));
    emit_return(g);
    emit(g, I_MOV64_REG(SCRATCH, BPF_REG_0));
  }

  place_vars(g, probe);
  if (probe->pred) {
    int stack_mark = g->stack_top, scratch_mark = g->scratch_top;
    g->span = probe->pred->span;
    int64_t k;
    if (!fold(g, probe->pred, &k) || !k) {
      Jumps pass = {0};
      gen_cond(g, probe->pred, true, &pass);
      emit_return(g);
      jumps_patch_here(g, &pass);
    }
    g->stack_top = stack_mark;
    g->scratch_top = scratch_mark;
  }
  g->span = probe->span;
  if (!gen_block(g, probe->body)) {
    g->span = probe->span;
    emit_return(g);
  }
  g->span = probe->span;
  g->p->nmain = g->p->ninsns;
  gen_callbacks(g);
  emit_subprograms(g);
}

/* ---- unreachable code ------------------------------------------------
 * Folded conditions leave branches that can never run, which the verifier
 * refuses; they are removed here, once, with every jump re-aimed. */

static bool is_ld_imm64(const struct bpf_insn *in) {
  return in->code == (BPF_LD | BPF_DW | BPF_IMM);
}

static bool is_jump(const struct bpf_insn *in) {
  int cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
  return (cls == BPF_JMP || cls == BPF_JMP32) && op != BPF_CALL &&
         op != BPF_EXIT;
}

static bool is_pseudo_call(const struct bpf_insn *in) {
  return in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL;
}

static bool is_pseudo_func(const struct bpf_insn *in) {
  return is_ld_imm64(in) && in->src_reg == BPF_PSEUDO_FUNC;
}

static void mark_reachable(const BpfProg *p, bool *seen, int *stack,
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
static void compact(BpfProg *p, const bool *seen) {
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
  }
  free(to);
}

static void prune_unreachable(BpfProg *p) {
  bool *seen = calloc(p->ninsns + 1, sizeof(bool));
  int *stack = malloc(sizeof(int) * (3 * p->ninsns + 3));
  mark_reachable(p, seen, stack, 0);
  compact(p, seen);
  free(seen);
  free(stack);
}

/* Drops a load of a stack slot into a register that already holds it
 * (variables are re-read at each use). A register mirrors a slot from a
 * load or store until the register or the slot is written or a call
 * (which may write the stack through a pointer). Where jumps meet, only
 * what every forward path agrees on is kept; targets of backward jumps
 * and function entries start knowing nothing. */
enum { NO_SLOT = 1, NREGS = 11 };   /* stack slot offsets are <= 0 */

static void mirror_forget(int *m) {
  for (int r = 0; r < NREGS; r++) m[r] = NO_SLOT;
}

static void mirror_meet(int *into, const int *from) {
  for (int r = 0; r < NREGS; r++)
    if (into[r] != from[r]) into[r] = NO_SLOT;
}

/* What instruction `in` does to the mirrors; returns true if it is a load
 * the mirrors make redundant. */
static bool mirror_step(int *m, const struct bpf_insn *in) {
  int cls = BPF_CLASS(in->code), size = BPF_SIZE(in->code);
  bool mem = BPF_MODE(in->code) == BPF_MEM;
  if (cls == BPF_LDX && mem && in->src_reg == BPF_REG_10 && size == BPF_DW) {
    if (m[in->dst_reg] == in->off) return true;
    m[in->dst_reg] = in->off;
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
    mirror_forget(m);
    return false;
  }
  if (cls == BPF_ALU || cls == BPF_ALU64 || cls == BPF_LDX || is_ld_imm64(in))
    m[in->dst_reg] = NO_SLOT;
  return false;
}

static void drop_redundant_loads(BpfProg *p) {
  int n = p->ninsns;
  bool *keep = malloc(sizeof(bool) * (n + 1));
  bool *fresh = calloc(n + 1, sizeof(bool));   /* starts knowing nothing */
  bool *has_in = calloc(n + 1, sizeof(bool));  /* a forward jump arrives */
  int (*in_state)[NREGS] = malloc(sizeof(*in_state) * (n + 1));
  for (int i = 0; i < n; i++) {
    const struct bpf_insn *in = &p->insns[i];
    keep[i] = true;
    if (is_jump(in) && in->off < 0) fresh[i + in->off + 1] = true;
    if (is_pseudo_call(in) || is_pseudo_func(in)) fresh[i + in->imm + 1] = true;
    if (is_ld_imm64(in)) keep[++i] = true;
  }
  int m[NREGS];
  mirror_forget(m);
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

static int gen_prog(Gen *g, Probe *probe, AttachPoint *ap, Target *t) {
  BpfProg *p = new_prog(g->c, probe, ap, t);
  g->p = p;
  g->probe = probe;
  g->target = t;
  /* Buffers go on the stack when they fit: no scratch lookup then. */
  gen_body(g, probe, BPF_REG_10);
  if (g->too_big && !g->failed) gen_body(g, probe, BPF_REG_9);
  if (!g->failed) {
    prune_unreachable(p);
    drop_redundant_loads(p);
  }
  if ((uint32_t)g->scratch_max > g->c->scratch_size)
    g->c->scratch_size = (uint32_t)g->scratch_max;
  return g->failed ? -1 : 0;
}

int codegen_script(Script *s, Compiled *c, Diag *d) {
  Gen g = {.d = d, .c = c};
  for (Probe *probe = s->probes; probe; probe = probe->next) {
    bool per_target = probe->uses_args || probe->uses_probe;
    for (AttachPoint *ap = probe->aps; ap; ap = ap->next) {
      if (!per_target) {
        if (gen_prog(&g, probe, ap, ap->ntargets == 1 ? ap->targets : NULL))
          goto out;
        continue;
      }
      for (Target *t = ap->targets; t; t = t->next)
        if (gen_prog(&g, probe, ap, t)) goto out;
    }
  }
  if (c->scratch_size == 0) c->scratch_size = 8;
out:
  return g.failed ? -1 : 0;
}
