/* disasm: a BPF program as readable assembly, for -d and -v.
 *
 * The syntax is the one the kernel's verifier log uses (r0..r10 for 64-bit
 * registers, w0..w10 for their 32-bit halves), so what -d shows reads like
 * what the verifier complains about. Each run of instructions is preceded
 * by the script line it was generated from:
 *
 *   ; tp_sys_enter: tracepoint:raw_syscalls:sys_enter (tracepoint, 23 insns)
 *   ; 1: tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }
 *      0: r6 = r1
 *     12: r1 = map @ ll
 *     14: if r0 == 0 goto +3 <18>
 */
#include <inttypes.h>
#include <string.h>

#include "codegen/codegen.h"
#include "lang/ctype.h"
#include "probes/syscalls.h"

/* Helper names indexed by id, generated from the kernel header's list so
 * that new helpers need no edit here. __BPF_FUNC_MAPPER calls FN(name) and
 * puts the comma after each entry itself. */
#define HELPER_NAME(name) [BPF_FUNC_##name] = "bpf_" #name
static const char *const helper_names[] = {__BPF_FUNC_MAPPER(HELPER_NAME)};
#undef HELPER_NAME

const char *helper_name(int32_t id) {
  int n = (int)(sizeof(helper_names) / sizeof(helper_names[0]));
  if (id >= 0 && id < n && helper_names[id]) return helper_names[id];
  return NULL;
}

static const char *prog_type_name(uint32_t type) {
  switch (type) {
  case BPF_PROG_TYPE_KPROBE: return "kprobe";
  case BPF_PROG_TYPE_TRACEPOINT: return "tracepoint";
  case BPF_PROG_TYPE_PERF_EVENT: return "perf_event";
  case BPF_PROG_TYPE_RAW_TRACEPOINT: return "raw_tracepoint";
  case BPF_PROG_TYPE_TRACING: return "tracing";
  case BPF_PROG_TYPE_SOCKET_FILTER: return "socket_filter";
  case BPF_PROG_TYPE_SYSCALL: return "syscall";
  default: return NULL;
  }
}

/* ---- operands ------------------------------------------------------- */

/* "r3" or "w3": the register as wide as the instruction class uses it. */
static void put_reg(FILE *out, int reg, int is32) {
  fprintf(out, "%c%d", is32 ? 'w' : 'r', reg);
}

static const char *size_name(int size_code, int is_signed) {
  switch (size_code) {
  case BPF_B: return is_signed ? "s8" : "u8";
  case BPF_H: return is_signed ? "s16" : "u16";
  case BPF_W: return is_signed ? "s32" : "u32";
  default: return is_signed ? "s64" : "u64";
  }
}

/* "(r10 - 8)", "(r1 + 0)" */
static void put_addr(FILE *out, int reg, int16_t off) {
  if (off < 0)
    fprintf(out, "(r%d - %d)", reg, -(int)off);
  else
    fprintf(out, "(r%d + %d)", reg, (int)off);
}

/* "*(u64 *)(r10 - 8)" */
static void put_mem(FILE *out, int size_code, int is_signed, int reg,
                    int16_t off) {
  fprintf(out, "*(%s *)", size_name(size_code, is_signed));
  put_addr(out, reg, off);
}

/* The operand an ALU or jump instruction takes: src_reg or the immediate. */
static void put_src(FILE *out, const struct bpf_insn *in, int is32) {
  if (BPF_SRC(in->code) == BPF_X)
    put_reg(out, in->src_reg, is32);
  else
    fprintf(out, "%" PRId32, in->imm);
}

/* A raw dump for encodings this file does not know; better than silence. */
static void put_unknown(FILE *out, const struct bpf_insn *in) {
  fprintf(out, ".insn code=0x%02x dst=r%d src=r%d off=%d imm=%" PRId32,
          in->code, in->dst_reg, in->src_reg, in->off, in->imm);
}

/* ---- ALU ------------------------------------------------------------ */

static const char *alu_op_text(int op) {
  switch (op) {
  case BPF_ADD: return "+=";
  case BPF_SUB: return "-=";
  case BPF_MUL: return "*=";
  case BPF_DIV: return "/=";
  case BPF_MOD: return "%=";
  case BPF_OR: return "|=";
  case BPF_AND: return "&=";
  case BPF_XOR: return "^=";
  case BPF_LSH: return "<<=";
  case BPF_RSH: return ">>=";
  case BPF_ARSH: return "s>>=";
  default: return NULL;
  }
}

/* Byte swaps: BPF_ALU | BPF_END converts to little/big endian; the ALU64
 * form (cpu v4) swaps unconditionally. imm is the width in bits. */
static void put_end(FILE *out, const struct bpf_insn *in, int is32) {
  const char *kind = !is32 ? "bswap"
                     : BPF_SRC(in->code) == BPF_TO_BE ? "be" : "le";
  fprintf(out, "r%d = %s%" PRId32 " r%d", in->dst_reg, kind, in->imm,
          in->dst_reg);
}

static void put_alu(FILE *out, const struct bpf_insn *in) {
  int is32 = BPF_CLASS(in->code) == BPF_ALU;
  int op = BPF_OP(in->code);
  if (op == BPF_END) {
    put_end(out, in, is32);
    return;
  }
  put_reg(out, in->dst_reg, is32);
  if (op == BPF_NEG) {
    fputs(" = -", out);
    put_reg(out, in->dst_reg, is32);
    return;
  }
  if (op == BPF_MOV) {
    fputs(" = ", out);
    /* movsx (cpu v4): off is the source width in bits. */
    if (BPF_SRC(in->code) == BPF_X && in->off)
      fprintf(out, "(s%d)", in->off);
    put_src(out, in, is32);
    return;
  }
  const char *text = alu_op_text(op);
  if (!text) {
    fputs(" ", out);
    put_unknown(out, in);
    return;
  }
  /* Signed division and modulo (cpu v4) are DIV/MOD with off = 1. */
  int is_signed = (op == BPF_DIV || op == BPF_MOD) && in->off == 1;
  fprintf(out, " %s%s ", is_signed ? "s" : "", text);
  put_src(out, in, is32);
}

/* ---- loads and stores ----------------------------------------------- */

/* A map's name as the script spells it, or the internal map's role. */
static void put_map_name(FILE *out, int32_t id, const Compiled *c) {
  if (id == MAP_ID_RINGBUF)
    fputs("ringbuf", out);
  else if (id == MAP_ID_SCRATCH)
    fputs("scratch", out);
  else if (id == MAP_ID_BIG_SCRATCH)
    fputs("big_scratch", out);
  else if (id == MAP_ID_COUNTS)
    fputs("counts", out);
  else if (id == MAP_ID_WAKE)
    fputs("wake", out);
  else if (id == MAP_ID_SKB_OUTPUT)
    fputs("skb_output", out);
  else if (c && id >= 0 && id < c->nmaps && c->maps[id] && c->maps[id]->name)
    fputs(c->maps[id]->name, out);
  else
    fprintf(out, "#%" PRId32, id);
}

/* LD_IMM64 spans two slots; `next` is the second (NULL if the program is
 * cut short). Map references show the map, constants their value. */
static void put_ld_imm64(FILE *out, const struct bpf_insn *in,
                         const struct bpf_insn *next, const Compiled *c) {
  int32_t hi = next ? next->imm : 0;
  fprintf(out, "r%d = ", in->dst_reg);
  switch (in->src_reg) {
  case BPF_PSEUDO_MAP_FD:
  case BPF_PSEUDO_MAP_IDX:
    fputs("map ", out);
    put_map_name(out, in->imm, c);
    break;
  case BPF_PSEUDO_MAP_VALUE:
  case BPF_PSEUDO_MAP_IDX_VALUE:
    fputs("&map_value(", out);
    put_map_name(out, in->imm, c);
    fprintf(out, ") + %" PRId32, hi);
    break;
  default: {
    uint64_t v = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)hi << 32;
    int64_t sv = (int64_t)v;
    /* Small values read best in decimal, addresses and masks in hex. */
    if (sv >= INT32_MIN && sv <= INT32_MAX)
      fprintf(out, "%" PRId64, sv);
    else
      fprintf(out, "0x%" PRIx64, v);
    if (in->src_reg) fprintf(out, " (src=%d)", in->src_reg);
  }
  }
  fputs(" ll", out);
}

static void put_ldx(FILE *out, const struct bpf_insn *in) {
  int mode = BPF_MODE(in->code);
  if (mode != BPF_MEM && mode != 0x80 /* BPF_MEMSX, cpu v4 */) {
    put_unknown(out, in);
    return;
  }
  fprintf(out, "r%d = ", in->dst_reg);
  put_mem(out, BPF_SIZE(in->code), mode != BPF_MEM, in->src_reg, in->off);
}

static void put_st(FILE *out, const struct bpf_insn *in) {
  if (BPF_MODE(in->code) != BPF_MEM) {
    put_unknown(out, in);
    return;
  }
  put_mem(out, BPF_SIZE(in->code), 0, in->dst_reg, in->off);
  fprintf(out, " = %" PRId32, in->imm);
}

/* Atomic read-modify-write: imm holds the operation, BPF_FETCH asks for the
 * old value back in src_reg (r0 for cmpxchg). */
static void put_atomic(FILE *out, const struct bpf_insn *in) {
  int size = BPF_SIZE(in->code);
  int is32 = size == BPF_W;
  const char *sz = size_name(size, 0);
  int op = in->imm & ~BPF_FETCH;
  const char *text = alu_op_text(op);
  if (in->imm == BPF_XCHG) {
    put_reg(out, in->src_reg, is32);
    fprintf(out, " = xchg((%s *)", sz);
    put_addr(out, in->dst_reg, in->off);
    fputs(", ", out);
    put_reg(out, in->src_reg, is32);
    fputs(")", out);
  } else if (in->imm == BPF_CMPXCHG) {
    put_reg(out, 0, is32);
    fprintf(out, " = cmpxchg((%s *)", sz);
    put_addr(out, in->dst_reg, in->off);
    fputs(", ", out);
    put_reg(out, 0, is32);
    fputs(", ", out);
    put_reg(out, in->src_reg, is32);
    fputs(")", out);
  } else if (text && (op == BPF_ADD || op == BPF_OR || op == BPF_AND ||
                      op == BPF_XOR)) {
    if (in->imm & BPF_FETCH) {
      static const char *const names[] = {
          [BPF_ADD >> 4] = "add", [BPF_OR >> 4] = "or",
          [BPF_AND >> 4] = "and", [BPF_XOR >> 4] = "xor"};
      put_reg(out, in->src_reg, is32);
      fprintf(out, " = atomic_fetch_%s((%s *)", names[op >> 4], sz);
      put_addr(out, in->dst_reg, in->off);
      fputs(", ", out);
      put_reg(out, in->src_reg, is32);
      fputs(")", out);
    } else {
      fputs("lock ", out);
      put_mem(out, size, 0, in->dst_reg, in->off);
      fprintf(out, " %s ", text);
      put_reg(out, in->src_reg, is32);
    }
  } else {
    put_unknown(out, in);
  }
}

static void put_stx(FILE *out, const struct bpf_insn *in) {
  int mode = BPF_MODE(in->code);
  if (mode == BPF_ATOMIC) {
    put_atomic(out, in);
    return;
  }
  if (mode != BPF_MEM) {
    put_unknown(out, in);
    return;
  }
  put_mem(out, BPF_SIZE(in->code), 0, in->dst_reg, in->off);
  fprintf(out, " = r%d", in->src_reg);
}

/* ---- jumps and calls ------------------------------------------------ */

static const char *jmp_op_text(int op) {
  switch (op) {
  case BPF_JEQ: return "==";
  case BPF_JNE: return "!=";
  case BPF_JGT: return ">";
  case BPF_JGE: return ">=";
  case BPF_JLT: return "<";
  case BPF_JLE: return "<=";
  case BPF_JSGT: return "s>";
  case BPF_JSGE: return "s>=";
  case BPF_JSLT: return "s<";
  case BPF_JSLE: return "s<=";
  case BPF_JSET: return "&";
  default: return NULL;
  }
}

/* "+3 <17>": the relative offset as encoded and the absolute target. */
static void put_target(FILE *out, int pc, int32_t off) {
  fprintf(out, "%+" PRId32 " <%" PRId64 ">", off, (int64_t)pc + off + 1);
}

static void put_call(FILE *out, const struct bpf_insn *in, int pc) {
  if (in->src_reg == BPF_PSEUDO_CALL) {
    fputs("call pc", out);
    put_target(out, pc, in->imm);
    return;
  }
  if (in->src_reg == BPF_PSEUDO_KFUNC_CALL) {
    const char *name = ctype_kernel_func_name(in->imm);
    if (name)
      fprintf(out, "call kfunc %s", name);
    else
      fprintf(out, "call kfunc#%" PRId32, in->imm);
    return;
  }
  const char *name = helper_name(in->imm);
  if (name)
    fprintf(out, "call %s", name);
  else
    fprintf(out, "call helper#%" PRId32, in->imm);
}

static void put_jmp(FILE *out, const struct bpf_insn *in, int pc) {
  int is32 = BPF_CLASS(in->code) == BPF_JMP32;
  int op = BPF_OP(in->code);
  if (op == BPF_JA) {
    /* The JMP32 form (gotol, cpu v4) keeps its long offset in imm. */
    fputs(is32 ? "gotol " : "goto ", out);
    put_target(out, pc, is32 ? in->imm : in->off);
    return;
  }
  if (op == BPF_CALL && !is32) {
    put_call(out, in, pc);
    return;
  }
  if (op == BPF_EXIT && !is32) {
    fputs("exit", out);
    return;
  }
  const char *text = jmp_op_text(op);
  if (!text) {
    put_unknown(out, in);
    return;
  }
  fputs("if ", out);
  put_reg(out, in->dst_reg, is32);
  fprintf(out, " %s ", text);
  /* A JSET mask reads best in hex. */
  if (op == BPF_JSET && BPF_SRC(in->code) == BPF_K)
    fprintf(out, "0x%" PRIx32, (uint32_t)in->imm);
  else
    put_src(out, in, is32);
  fputs(" goto ", out);
  put_target(out, pc, in->off);
}

/* Prints instruction pc; returns how many slots it took (2 for LD_IMM64). */
static int put_insn(FILE *out, const BpfProg *p, int pc, const Compiled *c) {
  const struct bpf_insn *in = &p->insns[pc];
  switch (BPF_CLASS(in->code)) {
  case BPF_ALU:
  case BPF_ALU64:
    put_alu(out, in);
    return 1;
  case BPF_LD:
    if (in->code == (BPF_LD | BPF_DW | BPF_IMM)) {
      const struct bpf_insn *next = pc + 1 < p->ninsns ? in + 1 : NULL;
      put_ld_imm64(out, in, next, c);
      return next ? 2 : 1;
    }
    put_unknown(out, in);
    return 1;
  case BPF_LDX:
    put_ldx(out, in);
    return 1;
  case BPF_ST:
    put_st(out, in);
    return 1;
  case BPF_STX:
    put_stx(out, in);
    return 1;
  case BPF_JMP:
  case BPF_JMP32:
    put_jmp(out, in, pc);
    return 1;
  }
  put_unknown(out, in);
  return 1;
}

/* ---- the listing ---------------------------------------------------- */

/* Prints "; N: text" for script line `line`, leading blanks dropped. */
static void put_source_line(FILE *out, const Source *src, int line) {
  const char *p = src && src->text ? src->text : NULL;
  for (int l = 1; p && l < line; l++) {
    p = strchr(p, '\n');
    if (p) p++;
  }
  if (!p) {
    fprintf(out, "; %d:\n", line);
    return;
  }
  p += strspn(p, " \t");
  int len = (int)strcspn(p, "\n");
  while (len > 0 && (p[len - 1] == '\r' || p[len - 1] == ' ')) len--;
  fprintf(out, "; %d: %.*s\n", line, len, p);
}

/* What the program is attached to: its target, its attach point, or every
 * attach point of its probe. */
static void put_attach_text(FILE *out, const BpfProg *p) {
  if (p->syscall_group & SYSCALL_EVERY) {   /* codegen/syscall_raw.c */
    fprintf(out, "%s through the raw tracepoint %s", p->target->name,
            syscall_group_tracepoint(p->syscall_group));
  } else if (p->syscall_group) {
    for (AttachPoint *ap = p->probe->aps; ap; ap = ap->next)
      if (ap->raw_syscalls & (unsigned)p->syscall_group)
        fprintf(out, "%s, ", ap->text);
    fprintf(out, "%d tracepoints through the raw tracepoint %s",
            syscall_group_count(p->probe, p->syscall_group),
            syscall_group_tracepoint(p->syscall_group));
  } else if (p->target && p->target->name) {
    fputs(p->target->name, out);
  } else if (p->ap && p->ap->text) {
    fputs(p->ap->text, out);
  } else if (p->probe) {
    for (AttachPoint *ap = p->probe->aps; ap; ap = ap->next)
      fprintf(out, "%s%s", ap->text ? ap->text : "?", ap->next ? ", " : "");
  } else {
    fputs("?", out);
  }
}

static void put_header(FILE *out, const BpfProg *p) {
  fprintf(out, "; %s: ", p->name[0] ? p->name : "prog");
  put_attach_text(out, p);
  const char *type = prog_type_name(p->prog_type);
  if (type)
    fprintf(out, " (%s, ", type);
  else
    fprintf(out, " (prog type %u, ", p->prog_type);
  fprintf(out, "%d insn%s)\n", p->ninsns, p->ninsns == 1 ? "" : "s");
}

void disasm_print(const BpfProg *p, const Compiled *c, const Source *src,
                  FILE *out) {
  put_header(out, p);
  int last_line = 0;
  for (int pc = 0; pc < p->ninsns;) {
    /* Instructions without a location (line 0) stay under the line above
     * rather than breaking its run. */
    int line = p->insn_span ? p->insn_span[pc].line : 0;
    if (line > 0 && line != last_line) {
      put_source_line(out, src, line);
      last_line = line;
    }
    fprintf(out, "%4d: ", pc);
    pc += put_insn(out, p, pc, c);
    fputc('\n', out);
  }
}
