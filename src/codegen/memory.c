/* memory: reading tracepoint fields, struct members and pointers. */
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"
#include "lang/ctype.h"

/* The field's offset in this program's target (fields can sit at different
 * offsets in different tracepoints). */
const TpField *target_field(Gen *g, Node *n) {
  Target *t = g->target;
  if (!t || !t->format) return NULL;
  return tp_field(t->format, n->name);
}

int gen_field_int(Gen *g, Node *n) {
  if (g->p->syscall_group) return syscall_raw_field(g, n);
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
  /* an argument in a u64 slot (raw tracepoint, fentry, iterator): the
   * whole slot, of which the value is the low `size` bytes. The rest is
   * not the value's: an iterator's struct has padding there, a fentry
   * trampoline saves whole registers, so it is cut off (zero or sign),
   * as a narrow load's upper bytes are for a signed field. */
  emit(g, I_LDX(insn_size_code(f->in_u64 ? 8 : size), r, BPF_REG_1,
                f->offset));
  if (f->in_u64 || f->is_signed)
    emit_truncate(g, r, (Type){.kind = TY_INT, .size = size,
                               .is_signed = f->is_signed});
  if (f->is_pointer && g->seq_output) {
    /* an iterator's objects may be NULL, as the verifier knows: checked,
     * so that it lets the code add to a pointer that is not (ctx.task.pid) */
    emit(g, I_JMP_IMM(BPF_JNE, r, 0, 1));
    emit(g, I_MOV64_IMM(r, 0));
  }
  return r;
}

int probe_read_str_helper(AddrSpace as) {
  return as == AS_USER ? BPF_FUNC_probe_read_user_str
                       : BPF_FUNC_probe_read_kernel_str;
}

/* For str() of an address whose space nothing tells, such as a kprobe's
 * arg1 (a kernel function may take user or kernel pointers). On x86-64
 * the two do not overlap, and in kprobe programs the older helper reads
 * from either, as bpftrace's str(argN) does; elsewhere: kernel. */
int unknown_space_str_helper(Gen *g) {
  return g->p->prog_type == BPF_PROG_TYPE_KPROBE
             ? BPF_FUNC_probe_read_str
             : BPF_FUNC_probe_read_kernel_str;
}

/* A string field: a char array in the record, or a __data_loc string
 * somewhere after it; or an array of numbers, copied whole. */
void gen_field_str(Gen *g, Node *n, int dst, int cap) {
  const TpField *f = target_field(g, n);
  if (!f) {
    fail(g, n->span, "internal error: no field '%s' here", n->name);
    return;
  }
  if (f->is_array && !f->is_string) {
    int size = f->size < cap ? f->size : cap;
    if (size < cap) emit_zero(g, dst + (size & ~7), cap - (size & ~7));
    emit_ctx(g, BPF_REG_3);
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, f->offset));
    emit_scratch(g, BPF_REG_1, dst);
    emit(g, I_MOV64_IMM(BPF_REG_2, size));
    emit_call(g, BPF_FUNC_probe_read_kernel);
    return;
  }
  emit_zero(g, dst, cap);
  gen_field_str_at(g, n, SCRATCH, dst, cap);
}

void gen_field_str_at(Gen *g, Node *n, int base, int off, int cap) {
  const TpField *f = target_field(g, n);
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
  emit_addr(g, BPF_REG_1, base, off);
  emit(g, I_MOV64_IMM(BPF_REG_2, size < cap ? size : cap));
  emit_call(g, BPF_FUNC_probe_read_kernel_str);
}

bool in_memory(Node *n) {
  Type lt = n->lhs ? n->lhs->type : (Type){0};
  switch (n->kind) {
  case N_FIELD:
    return lt.kind == TY_RECORD || lt.kind == TY_CVAL ||
           (lt.kind == TY_INT && lt.is_pointer);
  case N_UNOP:
    return n->op == '*';
  case N_INDEX:
    return true;
  default:
    return false;
  }
}

int read_helper(AddrSpace as) {
  return as == AS_USER ? BPF_FUNC_probe_read_user : BPF_FUNC_probe_read_kernel;
}

/* Where the value n reads lives: in a copy this program made (a struct
 * or array value: $s.m, $a[1].x), which is kernel memory, or else where
 * the pointer it goes through points. */
static bool in_copy(Node *n) {
  for (Node *at = n; at->kind == N_FIELD || at->kind == N_INDEX;
       at = at->lhs) {
    if (at->lhs->type.kind == TY_CVAL) return true;
    if (at->lhs->type.kind != TY_RECORD) break;
  }
  return false;
}

static AddrSpace mem_space(Node *n) {
  return in_copy(n) ? AS_KERNEL : n->lhs->type.as;
}

/* The address of a struct or array value's copy, in a new register. */
static int gen_copy_addr(Gen *g, Node *n) {
  int off = buf_ref(g, n);
  int r = reg_alloc(g);
  emit(g, I_MOV64_REG(r, SCRATCH));
  emit(g, I_ALU64_IMM(BPF_ADD, r, off));
  return r;
}

/* a[i]: base + index * element size. In a copy on the stack the verifier
 * wants the index within the array: one outside it gives address 0, which
 * reads as 0. */
static int gen_index_addr(Gen *g, Node *n, int base) {
  int64_t k;
  const CType *t = n->lhs->type.kind == TY_INT ? NULL : n->lhs->type.ctype;
  if (t && t->kind == C_ARRAY && t->nelems > 0 && fold(g, n->rhs, &k) &&
      (k < 0 || k >= t->nelems))   /* a variable known to hold k */
    diag_warning(g->d, n->span, "Array access out of bounds. This can lead "
                 "to unexpected results.");
  if (fold(g, n->rhs, &k) && fits32(k * n->field_offset)) {
    if (k) emit(g, I_ALU64_IMM(BPF_ADD, base, (int32_t)(k * n->field_offset)));
    return base;
  }
  const CType *arr = n->lhs->type.kind == TY_INT ? NULL : n->lhs->type.ctype;
  bool check = in_copy(n) && arr && arr->kind == C_ARRAY;
  Held h = hold(g, base);
  int i = gen_int(g, n->rhs);
  int outside = -1;
  if (check)
    outside = emit_jump(g, I_JMP_IMM(BPF_JGE, i, arr->nelems, 0));
  emit(g, I_ALU64_IMM(BPF_MUL, i, n->field_offset));
  base = held_reg(g, h, BPF_REG_0);
  emit(g, I_ALU64_REG(BPF_ADD, i, base));
  if (base != BPF_REG_0) reg_free(g, base);
  if (check) {
    int done = emit_jump(g, I_JA(0));
    patch_here(g, outside);
    emit(g, I_MOV64_IMM(i, 0));
    patch_here(g, done);
  }
  return i;
}

/* The address of a value that lives in memory (see in_memory), in a new
 * register. */
int gen_addr(Gen *g, Node *n) {
  Node *lhs = n->lhs;
  if (n->kind == N_UNOP) return gen_int(g, lhs);
  int base = lhs->type.kind == TY_RECORD ? gen_addr(g, lhs)
             : lhs->type.kind == TY_CVAL ? gen_copy_addr(g, lhs)
                                         : gen_int(g, lhs);
  if (n->kind == N_FIELD) {
    if (n->field_offset)
      emit(g, I_ALU64_IMM(BPF_ADD, base, n->field_offset));
    return base;
  }
  return gen_index_addr(g, n, base);
}

/* ---- the context of a perf event program -------------------------- */

/* A perf event program's ctx points to the kernel's bpf_perf_event_data_
 * kern (pointers to the registers, the sample, the event), which the
 * verifier shows as struct bpf_perf_event_data: only loads straight from
 * ctx, at an offset the instruction holds, are translated, so a copy
 * with a probe_read helper reads the wrong struct. Every member of
 * bpf_perf_event_data is a u64 (the registers, sample_period, addr). */
static bool reads_ctx_directly(Gen *g) {
  return g->p->prog_type == BPF_PROG_TYPE_PERF_EVENT;
}

/* Whether n reads through ctx itself, cast to a struct pointer, with only
 * members on the way (((struct bpf_perf_event_data *)ctx)->regs.ip): then
 * *off is the offset from ctx. */
static bool ctx_member_offset(const Node *n, int *off) {
  int total = 0;
  const Node *at = n;
  for (; at->kind == N_FIELD && at->bit_size == 0; at = at->lhs) {
    total += at->field_offset;
    if (at->lhs->type.kind == TY_RECORD) continue;   /* a member's member */
    const Node *base = at->lhs;
    while (base->kind == N_CAST) base = base->lhs;
    if (base->kind != N_BUILTIN || strcmp(base->name, "ctx")) return false;
    *off = total;
    return true;
  }
  return false;
}

/* r = the integer at ctx + off, loaded straight from the context: the
 * verifier allows only whole u64 loads of the registers (x86-64's
 * pt_regs.cs is a u16), so the u64 holding it, shifted and cut to it. */
static int gen_ctx_int(Gen *g, Node *n, int off) {
  int r = reg_alloc(g);
  int size = n->type.is_pointer ? 8 : n->type.size;
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, (int16_t)(off & ~7)));
  if (off & 7) emit(g, I_ALU64_IMM(BPF_RSH, r, (off & 7) * 8));
  emit_truncate(g, r, (Type){.kind = TY_INT, .size = size,
                             .is_signed = n->type.is_signed});
  return r;
}

/* A struct of the context copied to dst a u64 at a time, loaded straight
 * from it; zero-padded to cap. */
static void gen_ctx_copy(Gen *g, Node *n, int off, int dst, int cap) {
  int size = n->type.size < cap ? n->type.size : cap;
  emit_zero(g, dst + (size & ~7), cap - (size & ~7));
  for (int done = 0; done + 8 <= size; done += 8) {
    emit_ctx(g, BPF_REG_0);
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, (int16_t)(off + done)));
    emit(g, I_STX(BPF_DW, SCRATCH, BPF_REG_0, dst + done));
  }
}

/* An integer or pointer read from memory. */
int gen_mem_int(Gen *g, Node *n) {
  int off;
  if (reads_ctx_directly(g) && ctx_member_offset(n, &off))
    return gen_ctx_int(g, n, off);
  int addr = gen_addr(g, n);
  int size = n->type.is_pointer ? 8 : n->type.size;
  AddrSpace as = mem_space(n);
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

void emit_read_at(Gen *g, int addr, int dst, int cap, int len, int helper) {
  emit_zero(g, dst, cap);
  emit(g, I_MOV64_REG(BPF_REG_3, addr));
  reg_free(g, addr);
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, len));
  emit_call(g, helper);
}

/* Reads n (in memory) into dst with a probe_read helper, up to cap bytes,
 * after zeroing dst up to cap. */
static void gen_mem_read(Gen *g, Node *n, int dst, int cap, int helper) {
  emit_read_at(g, gen_addr(g, n), dst, cap,
               n->type.size < cap ? n->type.size : cap, helper);
}

/* A char array in memory, read as a string. Its last char counts even
 * when no NUL follows it (char s[5] can hold "hello"): when the *_str
 * helper filled the array, that char is read again as it is. */
void gen_mem_str(Gen *g, Node *n, int dst, int cap) {
  int size = n->type.size < cap ? n->type.size : cap;
  int addr = gen_addr(g, n);
  AddrSpace as = mem_space(n);
  emit_zero_padding(g, n, dst, size, cap);
  emit(g, I_MOV64_REG(BPF_REG_3, addr));
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit_call(g, probe_read_str_helper(as));
  int partial = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, size, 0));
  emit(g, I_MOV64_REG(BPF_REG_3, addr));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, size - 1));
  emit_scratch(g, BPF_REG_1, dst + size - 1);
  emit(g, I_MOV64_IMM(BPF_REG_2, 1));
  emit_call(g, read_helper(as));
  patch_here(g, partial);
  reg_free(g, addr);
}

/* A struct or array in memory, copied whole into dst and zero-padded to
 * cap, so that copies compare and hash as whole words. */
void gen_mem_copy(Gen *g, Node *n, int dst, int cap) {
  int off;
  if (reads_ctx_directly(g) && ctx_member_offset(n, &off)) {
    gen_ctx_copy(g, n, off, dst, cap);
    return;
  }
  gen_mem_read(g, n, dst, cap, read_helper(mem_space(n)));
}
