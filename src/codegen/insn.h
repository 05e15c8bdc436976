/* insn: constructors for eBPF instructions (struct bpf_insn from
 * <linux/bpf.h>). Names follow the instruction classes: ALU64 register and
 * immediate forms, loads/stores by size, jumps, calls. */
#ifndef LOUPE_INSN_H
#define LOUPE_INSN_H

#include <linux/bpf.h>

static inline struct bpf_insn insn_make(__u8 code, __u8 dst, __u8 src,
                                        __s16 off, __s32 imm) {
  struct bpf_insn i = {.code = code, .dst_reg = dst, .src_reg = src,
                       .off = off, .imm = imm};
  return i;
}

/* dst op= src / dst op= imm, 64-bit */
#define I_ALU64_REG(op, dst, src) insn_make(BPF_ALU64 | (op) | BPF_X, dst, src, 0, 0)
#define I_ALU64_IMM(op, dst, imm) insn_make(BPF_ALU64 | (op) | BPF_K, dst, 0, 0, imm)
/* 32-bit forms (zero the upper half) */
#define I_ALU32_REG(op, dst, src) insn_make(BPF_ALU | (op) | BPF_X, dst, src, 0, 0)
#define I_ALU32_IMM(op, dst, imm) insn_make(BPF_ALU | (op) | BPF_K, dst, 0, 0, imm)
#define I_MOV64_REG(dst, src) I_ALU64_REG(BPF_MOV, dst, src)
#define I_MOV64_IMM(dst, imm) I_ALU64_IMM(BPF_MOV, dst, imm)
#define I_MOV32_REG(dst, src) I_ALU32_REG(BPF_MOV, dst, src)
#define I_NEG64(dst) insn_make(BPF_ALU64 | BPF_NEG, dst, 0, 0, 0)
/* Signed division/modulo (cpu v4, kernel 6.6+): off = 1 on BPF_DIV/BPF_MOD. */
#define I_SDIV64_REG(dst, src) insn_make(BPF_ALU64 | BPF_DIV | BPF_X, dst, src, 1, 0)
#define I_SMOD64_REG(dst, src) insn_make(BPF_ALU64 | BPF_MOD | BPF_X, dst, src, 1, 0)

/* 64-bit immediate load: two instructions. The second is I_LD_IMM64_HI. */
#define I_LD_IMM64_LO(dst, src, imm) insn_make(BPF_LD | BPF_DW | BPF_IMM, dst, src, 0, imm)
#define I_LD_IMM64_HI(imm) insn_make(0, 0, 0, 0, imm)

/* dst = *(size *)(src + off) ; size is BPF_B, BPF_H, BPF_W, BPF_DW */
#define I_LDX(size, dst, src, off) insn_make(BPF_LDX | (size) | BPF_MEM, dst, src, off, 0)
/* *(size *)(dst + off) = src */
#define I_STX(size, dst, src, off) insn_make(BPF_STX | (size) | BPF_MEM, dst, src, off, 0)
/* *(size *)(dst + off) = imm */
/* *(size *)(dst + off) += src, atomically */
#define I_ATOMIC_ADD(size, dst, src, off) insn_make(BPF_STX | (size) | BPF_ATOMIC, dst, src, off, BPF_ADD)
#define I_ST(size, dst, off, imm) insn_make(BPF_ST | (size) | BPF_MEM, dst, 0, off, imm)

/* if (dst op src) goto pc + off + 1 */
#define I_JMP_REG(op, dst, src, off) insn_make(BPF_JMP | (op) | BPF_X, dst, src, off, 0)
#define I_JMP_IMM(op, dst, imm, off) insn_make(BPF_JMP | (op) | BPF_K, dst, 0, off, imm)
#define I_JA(off) insn_make(BPF_JMP | BPF_JA, 0, 0, off, 0)
#define I_CALL(helper) insn_make(BPF_JMP | BPF_CALL, 0, 0, 0, helper)
#define I_EXIT() insn_make(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

/* Size code for a byte count (1, 2, 4, 8). */
static inline int insn_size_code(int bytes) {
  switch (bytes) {
  case 1: return BPF_B;
  case 2: return BPF_H;
  case 4: return BPF_W;
  default: return BPF_DW;
  }
}

#endif
