/* emit: the instruction stream of the program being generated, and the
 * registers, stack slots and buffers it uses; events through the shared
 * subprograms. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"

/* Values that live in the scratch area rather than in a register. */
bool is_buffer(Type t) {
  return t.kind == TY_STR || t.kind == TY_TUPLE || t.kind == TY_BUF ||
         t.kind == TY_RECORD || t.kind == TY_CVAL;
}


int emit(Gen *g, struct bpf_insn i) {
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

void emit_imm64(Gen *g, int reg, int64_t v) {
  if (v >= INT32_MIN && v <= INT32_MAX) {
    emit(g, I_MOV64_IMM(reg, (int32_t)v));
    return;
  }
  emit(g, I_LD_IMM64_LO(reg, 0, (int32_t)(uint32_t)v));
  emit(g, I_LD_IMM64_HI((int32_t)(uint32_t)((uint64_t)v >> 32)));
}

/* reg = address of map `id` (an index into Compiled.maps, or one of the
 * MAP_ID_* internal ids); load replaces the id with the map's fd. */
void emit_map(Gen *g, int reg, int id) {
  emit(g, I_LD_IMM64_LO(reg, BPF_PSEUDO_MAP_FD, id));
  emit(g, I_LD_IMM64_HI(0));
}

/* reg = the address of byte `off` of map id's value: a one-slot array
 * (not per CPU), addressed directly with no lookup, never NULL. */
void emit_map_value(Gen *g, int reg, int id, int off) {
  emit(g, I_LD_IMM64_LO(reg, BPF_PSEUDO_MAP_VALUE, id));
  emit(g, I_LD_IMM64_HI(off));
}

/* Register reg added to counter `slot` of loupe_counts, addressed directly
 * (no lookup) and atomically: three instructions, for failure paths. */
void emit_count_slot(Gen *g, int slot, int reg) {
  emit_map_value(g, BPF_REG_1, MAP_ID_COUNTS, slot * (int)sizeof(uint64_t));
  emit(g, I_ATOMIC_ADD(BPF_DW, BPF_REG_1, reg, 0));
}

/* One more in counter `slot`: four instructions. */
void emit_count_failure(Gen *g, int slot) {
  emit(g, I_MOV64_IMM(BPF_REG_2, 1));
  emit_count_slot(g, slot, BPF_REG_2);
}

/* r0 = the value of key 0 of a one-slot array map. loupe's own arrays
 * (one slot, shared by the CPUs) are addressed directly: two instructions
 * and no call, and r0 is never NULL. Other maps are looked up, and r0 is
 * NULL if there is no slot 0. Returns whether r0 may be NULL. */
bool emit_lookup_slot0(Gen *g, int map_id) {
  const MapSym *m = map_id >= 0 ? g->c->maps[map_id] : NULL;
  if (m && m->internal && m->bpf_type == BPF_MAP_TYPE_ARRAY &&
      m->max_entries == 1) {
    emit_map_value(g, BPF_REG_0, map_id, 0);
    return false;
  }
  emit(g, I_ST(BPF_DW, BPF_REG_10, SLOT_KEY0, 0));
  emit_map(g, BPF_REG_1, map_id);
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, SLOT_KEY0));
  emit_call(g, BPF_FUNC_map_lookup_elem);
  return true;
}

/* r9 = this CPU's scratch area (+ the bias of the big one); leaves the
 * program if there is none. */
void emit_scratch_base(Gen *g) {
  if (g->scratch_bias) {
    emit_call(g, BPF_FUNC_get_smp_processor_id);
    emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_0, SLOT_KEY0));
    emit_map(g, BPF_REG_1, MAP_ID_BIG_SCRATCH);
    emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, SLOT_KEY0));
    emit_call(g, BPF_FUNC_map_lookup_elem);
  } else {
    emit_lookup_slot0(g, MAP_ID_SCRATCH);
  }
  emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 2));
  emit_return(g);
  emit(g, I_MOV64_REG(BPF_REG_9, BPF_REG_0));
  if (g->scratch_bias)
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_9, g->scratch_bias));
}

/* reg = base + off */
void emit_addr(Gen *g, int reg, int base, int off) {
  emit(g, I_MOV64_REG(reg, base));
  if (off) emit(g, I_ALU64_IMM(BPF_ADD, reg, off));
}

/* reg = scratch area + off */
void emit_scratch(Gen *g, int reg, int off) { emit_addr(g, reg, SCRATCH, off); }

/* -k: the helpers whose failures are reported, as bpftrace's -k does:
 * reads of memory. */
static bool checked_helper(int helper) {
  switch (helper) {
  case BPF_FUNC_probe_read:
  case BPF_FUNC_probe_read_str:
  case BPF_FUNC_probe_read_user:
  case BPF_FUNC_probe_read_user_str:
  case BPF_FUNC_probe_read_kernel:
  case BPF_FUNC_probe_read_kernel_str:
    return true;
  default:
    return false;
  }
}

/* A new HelperSite for helper at g->span; its index. The source line
 * and underline are rendered now, by diag, for user space to print. */
static int helper_site(Gen *g, int helper) {
  Compiled *c = g->c;
  HelperSite *grown = realloc(c->helper_sites,
                              sizeof(HelperSite) * (size_t)(c->nhelper_sites + 1));
  if (!grown) return -1;
  c->helper_sites = grown;
  HelperSite *site = &c->helper_sites[c->nhelper_sites];
  *site = (HelperSite){.helper = helper, .span = g->span,
                       .file = g->d->src ? g->d->src->name : "stdin"};
  site->prefix = diag_prefix(g->d, g->span, "WARNING");
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (mem) {
    Diag shown = *g->d;
    shown.out = mem;
    shown.no_warnings = false;
    diag_warning(&shown, g->span, "-");
    fclose(mem);
  }
  const char *nl = text ? strchr(text, '\n') : NULL;
  site->context = strdup(nl ? nl + 1 : "");
  free(text);
  return c->nhelper_sites++;
}

void emit_helper_error(Gen *g, int helper) {
  int site = helper_site(g, helper);
  if (site < 0) return;
  int rec = emit_header(g, 8, EV_HELPER_ERROR, (uint32_t)site);
  emit(g, I_STX(BPF_DW, SCRATCH, BPF_REG_0, rec + 8));
  emit_output(g, rec, 16);
  emit(g, I_LDX(BPF_DW, BPF_REG_0, SCRATCH, rec + 8));
}

void emit_call(Gen *g, int helper) {
  emit(g, I_CALL(helper));
  if (!g->st->helper_errors || !checked_helper(helper)) return;
  /* -k: a failed read (r0 < 0) is reported; r0 is kept */
  int ok = emit_jump(g, I_JMP_IMM(BPF_JSGE, BPF_REG_0, 0, 0));
  emit_helper_error(g, helper);
  patch_here(g, ok);
}

void emit_kfunc_call(Gen *g, int btf_id) {
  emit(g, insn_make(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_KFUNC_CALL, 0, btf_id));
}

/* A forward jump whose offset is filled in by patch_here. */
int emit_jump(Gen *g, struct bpf_insn j) { return emit(g, j); }

void patch_here(Gen *g, int at) {
  int off = g->p->ninsns - at - 1;
  if (off > INT16_MAX)
    fail(g, g->p->insn_span[at], "%s", "this branch spans more than 32767 "
         "BPF instructions; split the probe or use fewer unrolled steps");
  g->p->insns[at].off = (int16_t)off;
}

void jumps_add(Jumps *j, int at) {
  j->at = realloc(j->at, sizeof(int) * (j->n + 1));
  j->at[j->n++] = at;
}

void jumps_patch_here(Gen *g, Jumps *j) {
  for (int i = 0; i < j->n; i++) patch_here(g, j->at[i]);
  free(j->at);
  j->at = NULL;
  j->n = 0;
}

/* Leaves the program. Done in place (two instructions) rather than by a
 * jump to one epilogue, which could be out of a jump's reach. */
void emit_return(Gen *g) {
  emit(g, I_MOV64_IMM(BPF_REG_0, 0));
  emit(g, I_EXIT());
}

void fail(Gen *g, Span at, const char *fmt, const char *arg) {
  if (!g->failed) diag_error(g->d, at, fmt, arg);
  g->failed = true;
}

int free_regs(Gen *g) {
  int n = 0;
  for (int r = FIRST_TEMP_REG; r <= LAST_TEMP_REG; r++) n += !g->reg_used[r];
  return n;
}

int reg_alloc(Gen *g) {
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

void reg_free(Gen *g, int r) {
  if (r >= FIRST_TEMP_REG && r <= LAST_TEMP_REG) g->reg_used[r] = false;
}

int stack_alloc(Gen *g, int size) {
  g->stack_top += align8(size);
  if (g->stack_top > g->stack_max) g->stack_max = g->stack_top;
  if (g->stack_top > STACK_LIMIT) {
    if (g->frame != 0 && g->main_base == BPF_REG_10)
      g->too_big = true;   /* the loop body's buffers go to scratch too */
    else if (g->frame != 0)
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
int scratch_alloc(Gen *g, int size) {
  if (g->buf_base == BPF_REG_10) return stack_alloc(g, size);
  int off = g->scratch_top;
  g->scratch_top += align8(size);
  if (g->scratch_top > g->scratch_max) g->scratch_max = g->scratch_top;
  return off - g->scratch_bias;
}

/* Keeps reg's value while something else is generated, and guarantees that
 * generation at least one free register. */
Held hold(Gen *g, int reg) {
  Held h = {reg, 0};
  if (free_regs(g) > 0) return h;
  h.slot = stack_alloc(g, 8);
  emit(g, I_STX(BPF_DW, BPF_REG_10, reg, h.slot));
  reg_free(g, reg);
  h.reg = -1;
  return h;
}

/* The held value's register, loading a spilled one into `tmp`. */
int held_reg(Gen *g, Held h, int tmp) {
  if (h.reg >= 0) return h.reg;
  emit(g, I_LDX(BPF_DW, tmp, BPF_REG_10, h.slot));
  return tmp;
}

void held_free(Gen *g, Held h) {
  if (h.reg >= 0) reg_free(g, h.reg);
}

/* bpf_probe_read_kernel(base + dst, n, r3): one helper call copies a
 * big buffer (r3 set by the caller; r0..r5 are lost). */
static void emit_read_into(Gen *g, int base, int dst, int n) {
  emit_addr(g, BPF_REG_1, base, dst);
  emit_imm64(g, BPF_REG_2, n);
  emit_call(g, BPF_FUNC_probe_read_kernel);
}

/* Zeroes the buffer of string n before a helper writes `filled` bytes of
 * it: all of it (map keys and compares see every byte), or, when n goes
 * straight into an output record, only the words the helper does not
 * fill (the verifier wants every byte sent initialized). */
void emit_zero_padding(Gen *g, const Node *n, int dst, int filled, int cap) {
  int from = g->unpadded == n ? filled & ~7 : 0;
  if (from < cap) emit_zero(g, dst + from, cap - from);
}

/* Zeroes cap bytes at dst: word by word, or for a big buffer by copies
 * from the zero map (there when strings are big, see check.c). Big
 * buffers lose r0..r5. */
void emit_zero(Gen *g, int dst, int cap) {
  int zero = cap > BIG_BUFFER ? find_map(g, ZERO_MAP_NAME) : -1;
  if (zero < 0) {
    for (int i = 0; i < cap; i += 8)
      emit(g, I_ST(BPF_DW, SCRATCH, dst + i, 0));
    return;
  }
  int chunk = g->c->maps[zero]->value_size & ~7;
  for (int i = 0; i < cap; i += chunk) {
    int n = cap - i < chunk ? cap - i : chunk;
    int missing = emit_lookup_slot0(g, zero)
        ? emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)) : -1;
    emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
    emit_read_into(g, SCRATCH, dst + i, n);
    if (missing >= 0) patch_here(g, missing);
  }
}

/* Copies `n` bytes (a multiple of 8) between scratch buffers through r0,
 * zero-filling the destination up to `cap`. base is a register holding the
 * source's base address (r0 result of a lookup, or the scratch area). A
 * big buffer is copied by a helper, which loses r0..r5. */
void emit_copy_from(Gen *g, int base, int src_off, int dst, int n,
                           int cap) {
  int len = n < cap ? n : cap;
  emit_copy_to(g, base, src_off, SCRATCH, dst, len);
  if (len > BIG_BUFFER) {
    if (len < cap) emit_zero(g, dst + len, cap - len);
    return;
  }
  for (int i = len; i < cap; i += 8) emit(g, I_ST(BPF_DW, SCRATCH, dst + i, 0));
}

/* Copies len bytes (a multiple of 8) from register base + src_off to
 * register dst_base + dst: word by word through r2, or for a big buffer
 * by a helper, which loses r0..r5. */
void emit_copy_to(Gen *g, int base, int src_off, int dst_base, int dst,
                  int len) {
  if (len > BIG_BUFFER) {
    emit(g, I_MOV64_REG(BPF_REG_3, base));
    if (src_off) emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, src_off));
    emit_read_into(g, dst_base, dst, len);
    return;
  }
  for (int i = 0; i < len; i += 8) {
    emit(g, I_LDX(BPF_DW, BPF_REG_2, base, src_off + i));
    emit(g, I_STX(BPF_DW, dst_base, BPF_REG_2, dst + i));
  }
}

void emit_copy(Gen *g, int src, int dst, int n, int cap) {
  if (src == dst) return;
  emit_copy_from(g, SCRATCH, src, dst, n, cap);
}

/* Stores literal bytes (zero-padded to cap) into a scratch buffer. */
void emit_literal(Gen *g, const char *s, int len, int dst, int cap) {
  emit_literal_at(g, s, len, SCRATCH, dst, cap);
}

/* The same at register base + dst. */
void emit_literal_at(Gen *g, const char *s, int len, int base, int dst,
                     int cap) {
  for (int i = 0; i < cap; i += 4) {
    uint32_t word = 0;
    for (int b = 0; b < 4; b++)
      if (i + b < len) word |= (uint32_t)(unsigned char)s[i + b] << (8 * b);
    emit(g, I_ST(BPF_W, base, dst + i, (int32_t)word));
  }
}

/* reg = ctx */
void emit_ctx(Gen *g, int reg) {
  emit(g, I_LDX(BPF_DW, reg, BPF_REG_10, SLOT_CTX));
}

/* Events go out through small subprograms placed after the probe's code,
 * so each printf costs a few instructions at its call site:
 *   SUB_OUTPUT(r2 = record, r3 = size) sends a record built by the caller
 *   (in the registers bpf_ringbuf_output takes them in);
 *   SUB_EVENT + kind (r1 = index) sends a bare header of that kind. */
void emit_subcall(Gen *g, int sub) {
  int at = emit(g, insn_make(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, 0));
  int *n = &g->nsubcalls[sub];
  g->subcalls[sub] = realloc(g->subcalls[sub], sizeof(int) * (*n + 1));
  g->subcalls[sub][(*n)++] = at;
}

/* An iterator's output subprograms write to the iterator, which they find
 * through the context: r5 at each call. A for-over-map body, a function
 * of its own, does not have the context at hand. */
static void emit_seq_ctx(Gen *g) {
  if (!g->seq_output) return;
  if (g->frame != 0) {
    fail(g, g->span, "%s: output from inside a for loop is not supported "
         "in iter probes yet; collect into a map and print it after the "
         "loop", "iter");
    return;
  }
  emit_ctx(g, BPF_REG_5);
}

/* reg = the flags user space keeps in loupe_wake for each record sent
 * (whether to wake it). */
static void emit_wake_flags(Gen *g, int reg) {
  emit_map_value(g, reg, MAP_ID_WAKE, 0);
  emit(g, I_LDX(BPF_DW, reg, reg, 0));
}

/* Sends the record at r2, r3 bytes long, to the ring buffer, with the
 * wake flags; if the ring refused it (r0 < 0), one more in the count user
 * space reports as lost events. Only the failure path does any work. */
static void emit_ringbuf_send(Gen *g) {
  emit_map(g, BPF_REG_1, MAP_ID_RINGBUF);
  emit_wake_flags(g, BPF_REG_4);
  emit_call(g, BPF_FUNC_ringbuf_output);
  int sent = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit_count_failure(g, COUNT_SLOT_LOST);
  patch_here(g, sent);
}

/* r0 = `size` bytes reserved in the ring buffer for a record filled in
 * place, as a hand-written program sends one: no copy. When the ring is
 * full there is none: one more in the lost events' count, and a jump
 * (returned) that emit_submit aims past the filling and the submit. So
 * nothing between the two may leave the program: the verifier wants the
 * reservation submitted on every path. */
int emit_reserve(Gen *g, int size) {
  emit_map(g, BPF_REG_1, MAP_ID_RINGBUF);
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit(g, I_MOV64_IMM(BPF_REG_3, 0));
  emit_call(g, BPF_FUNC_ringbuf_reserve);
  int got = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  emit_count_failure(g, COUNT_SLOT_LOST);
  int lost = emit_jump(g, I_JA(0));
  patch_here(g, got);
  return lost;
}

/* Commits the reserved record at register rec, with the wake flags;
 * `lost` (emit_reserve's jump) comes here. */
void emit_submit(Gen *g, int rec, int lost) {
  if (rec != BPF_REG_1) emit(g, I_MOV64_REG(BPF_REG_1, rec));
  emit_wake_flags(g, BPF_REG_2);
  emit_call(g, BPF_FUNC_ringbuf_submit);
  patch_here(g, lost);
}

/* The register a reservation is kept in across calls: r9 where buffers
 * are on the stack (it then holds nothing), so that r6-r8 stay free for
 * the values filled in; else one of those. */
static int record_reg(Gen *g) {
  return g->buf_base == BPF_REG_10 ? BPF_REG_9 : reg_alloc(g);
}

bool record_can_be_in_place(Gen *g) {
  return !g->seq_output &&
         free_regs(g) >= (g->buf_base == BPF_REG_10 ? 1 : 2);
}

OutRec record_begin(Gen *g, int size, bool in_place, bool calls) {
  OutRec r = {.size = size, .in_place = in_place && !g->seq_output};
  if (!r.in_place) {
    r.base = SCRATCH;
    r.off = scratch_alloc(g, size);
    return r;
  }
  r.lost = emit_reserve(g, size);
  r.base = BPF_REG_0;
  if (calls) {
    r.base = record_reg(g);
    emit(g, I_MOV64_REG(r.base, BPF_REG_0));
  }
  return r;
}

void record_end(Gen *g, const OutRec *r) {
  if (!r->in_place) {
    emit_output(g, r->off, r->size);
    return;
  }
  emit_submit(g, r->base, r->lost);
  reg_free(g, r->base);
}

/* A record that is only a header, reserved, written and submitted in
 * place. */
static void emit_bare_event(Gen *g, uint32_t kind, uint32_t index) {
  OutRec r = record_begin(g, (int)sizeof(EventHeader), true, false);
  emit_header_at(g, r.base, r.off, kind, index);
  record_end(g, &r);
}

/* The call of output subprogram `sub` (SUB_OUTPUT, or SUB_EVENT + kind
 * with r1 = the index); or, where the program has only this one site, its
 * body in place (r2 = record, r3 = size), which spares the verifier the
 * call and its return. */
static void emit_send(Gen *g, int sub) {
  g->out_sites[sub]++;
  if (g->out_inline[sub])
    emit_ringbuf_send(g);
  else
    emit_subcall(g, sub);
}

/* Sends `size` bytes at scratch + rec to user space. */
void emit_output(Gen *g, int rec, int size) {
  emit_scratch(g, BPF_REG_2, rec);
  emit(g, I_MOV64_IMM(BPF_REG_3, size));
  emit_seq_ctx(g);
  emit_send(g, SUB_OUTPUT);
}

/* A record that is only a header: two instructions where it is sent
 * through the subprogram. */
void emit_event(Gen *g, uint32_t kind, uint32_t index) {
  int sub = SUB_EVENT + (int)kind;
  if (g->out_inline[sub]) {
    g->out_sites[sub]++;
    emit_bare_event(g, kind, index);
    return;
  }
  emit(g, I_MOV64_IMM(BPF_REG_1, (int32_t)index));
  emit_seq_ctx(g);
  emit_send(g, sub);
}

/* The same, with the index in r1. */
void emit_event_r1(Gen *g, uint32_t kind) {
  int sub = SUB_EVENT + (int)kind;
  if (g->out_inline[sub]) {
    /* the header waits on the stack while the ring is asked */
    g->out_sites[sub]++;
    int slot = stack_alloc(g, (int)sizeof(EventHeader));
    emit(g, I_ST(BPF_W, BPF_REG_10, slot, (int32_t)kind));
    emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_1, slot + 4));
    int lost = emit_reserve(g, (int)sizeof(EventHeader));
    emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_10, slot));
    emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_1, 0));
    emit_submit(g, BPF_REG_0, lost);
    return;
  }
  emit_seq_ctx(g);
  emit_send(g, sub);
}

/* The end of an iterator's output subprogram, with r2 = record, r3 = its
 * size, r5 = the context: the size (4 bytes), then the record, written
 * to the iterator's seq_file (ctx->meta->seq), where user space reads
 * them in order. A full buffer needs no count: the kernel would drop
 * what this object wrote and run the program on it again once the reader
 * made room (loupe reads little at a time so that this does not happen:
 * runtime/run.c). */
static void emit_seq_write(Gen *g) {
  emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_2));
  emit(g, I_MOV64_REG(BPF_REG_7, BPF_REG_3));
  emit(g, I_LDX(BPF_DW, BPF_REG_8, BPF_REG_5, 0));   /* meta */
  emit(g, I_LDX(BPF_DW, BPF_REG_8, BPF_REG_8, 0));   /* meta->seq */
  emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_3, -16));
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_8));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -16));
  emit(g, I_MOV64_IMM(BPF_REG_3, 4));
  emit_call(g, BPF_FUNC_seq_write);
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_8));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_6));
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_7));
  emit_call(g, BPF_FUNC_seq_write);
  emit_return(g);
}

/* Counts a refused update of the map whose SUB_FULL this is: r1 is the
 * update's result, added when it is -E2BIG (user space divides, see
 * report_counts). */
static void emit_full_counter(Gen *g, int sub) {
  const MapSym *m = g->c->maps[sub - SUB_FULL];
  emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_1, -E2BIG, 3));
  emit_map_value(g, BPF_REG_2, MAP_ID_COUNTS,
                 m->full_slot * (int)sizeof(uint64_t));
  emit(g, I_ATOMIC_ADD(BPF_DW, BPF_REG_2, BPF_REG_1, 0));
  emit_return(g);
}

/* Reads the integer value of the map whose reader (sub_read) this is, at
 * the key in r1: r0 = the value, or 0 when there is none. */
static void emit_map_reader(Gen *g, int sub) {
  int id = sub - SUB_FULL - g->nmap_slots;
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -8));
  emit_map(g, BPF_REG_1, id);
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
  emit_call(g, BPF_FUNC_map_lookup_elem);
  emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2));
  emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, 0));
  emit(g, I_EXIT());
  emit_return(g);
}

/* Writes r2 at key r1 of the map whose writer (sub_write) this is, and
 * counts the update if the map is full and refuses it. */
static void emit_map_writer(Gen *g, int sub) {
  const MapSym *m = g->c->maps[sub - SUB_FULL - 2 * g->nmap_slots];
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, -8));
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_2, -16));
  emit_map(g, BPF_REG_1, m->id);
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, -16));
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_ANY));
  emit_call(g, BPF_FUNC_map_update_elem);
  if (m->full_slot) {
    emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_0));
    emit_full_counter(g, SUB_FULL + m->id);
  } else {
    emit_return(g);
  }
}

/* Marks the subprogram starting here global: the verifier checks it once,
 * with its arguments (r1, and r2 for a writer) any scalars, and at each call only sets r0 to
 * an unknown scalar, where it would walk a static one's body again from
 * every call site. Iterators' output subprograms take the context in r5,
 * which a global one cannot, and len()'s callback must be static. */
static void mark_global(Gen *g, int start, int nargs) {
  BpfProg *p = g->p;
  size_t n = (size_t)(p->nglobals + 1);
  p->globals = realloc(p->globals, sizeof(int) * n);
  p->global_args = realloc(p->global_args, sizeof(int) * n);
  p->global_args[p->nglobals] = nargs;
  p->globals[p->nglobals++] = start;
}

/* The subprograms the probe called, with their calls patched. */
void emit_subprograms(Gen *g) {
  for (int sub = 0; sub < g->nsubs; sub++) {
    if (!g->nsubcalls[sub]) continue;
    int start = g->p->ninsns;
    if (sub >= SUB_FULL + 2 * g->nmap_slots) {
      mark_global(g, start, 2);
      emit_map_writer(g, sub);
    } else if (sub >= SUB_FULL + g->nmap_slots) {
      mark_global(g, start, 1);
      emit_map_reader(g, sub);
    } else if (sub >= SUB_FULL) {
      mark_global(g, start, 1);
      emit_full_counter(g, sub);
    } else if (sub == SUB_COUNT) {
      /* bpf_for_each_map_elem callback: ++*(u64 *)ctx, go on. An atomic
       * add, so the verifier does not follow the count's exact value
       * through every iteration it simulates: with the count known 0, 1,
       * 2, ... its states never converged once the count was compared. */
      emit(g, I_MOV64_IMM(BPF_REG_1, 1));
      emit(g, I_ATOMIC_ADD(BPF_DW, BPF_REG_4, BPF_REG_1, 0));
      emit_return(g);
    } else if (sub >= SUB_EVENT && !g->seq_output) {
      /* r1 = the index: the header (index, then kind, as a u64) waits
       * in r6 while the ring is asked, then is written in place */
      mark_global(g, start, 1);
      emit(g, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
      emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_6, 32));
      emit(g, I_ALU64_IMM(BPF_OR, BPF_REG_6, sub - SUB_EVENT));
      int lost = emit_reserve(g, (int)sizeof(EventHeader));
      emit(g, I_STX(BPF_DW, BPF_REG_0, BPF_REG_6, 0));
      emit_submit(g, BPF_REG_0, lost);
      emit_return(g);
    } else if (sub >= SUB_EVENT) {
      emit(g, I_ST(BPF_W, BPF_REG_10, -8, sub - SUB_EVENT));
      emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_1, -4));
      emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
      emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -8));
      emit(g, I_MOV64_IMM(BPF_REG_3, (int32_t)sizeof(EventHeader)));
    }
    if (sub >= SUB_FULL || sub == SUB_COUNT ||
        (sub >= SUB_EVENT && !g->seq_output)) {
      /* done above */
    } else if (g->seq_output) {
      emit_seq_write(g);
    } else {
      emit_ringbuf_send(g);
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

void emit_header_at(Gen *g, int base, int off, uint32_t kind,
                    uint32_t index) {
  if (index == 0 && kind <= INT32_MAX) {
    /* both halves in one store: kind, then the zero its sign extends to */
    emit(g, I_ST(BPF_DW, base, off, (int32_t)kind));
    return;
  }
  emit(g, I_ST(BPF_W, base, off, (int32_t)kind));
  emit(g, I_ST(BPF_W, base, off + 4, (int32_t)index));
}

int emit_header(Gen *g, int payload, uint32_t kind, uint32_t index) {
  int rec = scratch_alloc(g, (int)sizeof(EventHeader) + payload);
  emit_header_at(g, SCRATCH, rec, kind, index);
  return rec;
}

int find_map(Gen *g, const char *name) {
  for (int i = 0; i < g->c->nmaps; i++)
    if (!strcmp(g->c->maps[i]->name, name)) return i;
  return -1;
}

MapSym *add_codegen_array(Gen *g, const char *name, int value_size,
                          uint32_t max_entries) {
  /* one of the CODEGEN_MAPS the per-map arrays have room for */
  if (g->c->nmaps >= g->nmap_slots) abort();
  MapSym *m = calloc(1, sizeof *m);
  if (!m) abort();
  m->name = strdup(name);
  m->id = g->c->nmaps;
  m->key_size = 4;
  m->value_type = (Type){.kind = TY_STR, .size = value_size};
  m->value_size = value_size;
  m->bpf_type = BPF_MAP_TYPE_ARRAY;
  m->max_entries = max_entries;
  m->internal = true;
  m->init_values = calloc(max_entries ? max_entries : 1, (size_t)value_size);
  g->c->maps = realloc(g->c->maps, sizeof(MapSym *) * (g->c->nmaps + 1));
  if (!m->init_values || !g->c->maps) abort();
  g->c->maps[g->c->nmaps++] = m;
  return m;
}

void emit_array_string(Gen *g, int map_id, int key_slot, int off, int n,
                       int dst, int cap) {
  emit_map(g, BPF_REG_1, map_id);
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, key_slot));
  emit_call(g, BPF_FUNC_map_lookup_elem);
  int missing = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  emit_copy_from(g, BPF_REG_0, off, dst, n, cap);
  int done = emit_jump(g, I_JA(0));
  patch_here(g, missing);
  emit_zero(g, dst, cap);
  patch_here(g, done);
}

#define TARGET_NAMES_MAP "@@target_names"

/* Gives each target of the program's attach point an entry of the names
 * map, `probe` then `func`, once. */
static MapSym *target_names(Gen *g) {
  int id = find_map(g, TARGET_NAMES_MAP);
  MapSym *m = id >= 0 ? g->c->maps[id]
                      : add_codegen_array(g, TARGET_NAMES_MAP,
                                          2 * g->name_stride, 0);
  for (Target *t = g->p->ap->targets; t; t = t->next) {
    if (t->name_slot) continue;
    size_t at = (size_t)m->max_entries * (size_t)m->value_size;
    m->init_values = realloc(m->init_values, at + (size_t)m->value_size);
    if (!m->init_values) abort();
    memset(m->init_values + at, 0, (size_t)m->value_size);
    snprintf(m->init_values + at, (size_t)g->name_stride, "%s", t->name);
    snprintf(m->init_values + at + g->name_stride, (size_t)g->name_stride,
             "%s", t->event ? t->event : "");
    t->name_slot = ++m->max_entries;
  }
  return m;
}

void emit_target_name(Gen *g, bool func, int dst, int cap) {
  MapSym *m = target_names(g);
  int key = stack_alloc(g, 8);
  emit_ctx(g, BPF_REG_1);
  emit_call(g, BPF_FUNC_get_attach_cookie);
  emit(g, I_STX(BPF_W, BPF_REG_10, BPF_REG_0, key));
  emit_array_string(g, m->id, key, func ? g->name_stride : 0,
                    g->name_stride, dst, cap);
}
