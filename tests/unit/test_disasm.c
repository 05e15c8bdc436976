/* test_disasm: hand-built programs printed by disasm_print, compared with
 * golden listings character for character. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/codegen.h"
#include "codegen/insn.h"

static int passed, failed;

/* A program under construction: instructions with the script line each
 * came from. */
typedef struct Builder {
  struct bpf_insn insns[64];
  Span spans[64];
  int n;
} Builder;

static void emit(Builder *b, int line, struct bpf_insn in) {
  b->insns[b->n] = in;
  b->spans[b->n] = (Span){.line = line, .col = 1, .end_col = 2};
  b->n++;
}

static BpfProg make_prog(Builder *b, const char *name, uint32_t type,
                         Probe *probe, AttachPoint *ap, Target *target) {
  BpfProg p = {0};
  p.probe = probe;
  p.ap = ap;
  p.target = target;
  p.prog_type = type;
  p.insns = b->insns;
  p.insn_span = b->spans;
  p.ninsns = b->n;
  p.cap = 64;
  snprintf(p.name, sizeof(p.name), "%s", name);
  return p;
}

static char *render(const BpfProg *p, const Compiled *c, const Source *src) {
  char *buf = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&buf, &len);
  disasm_print(p, c, src, out);
  fclose(out);
  return buf;
}

/* Compares line by line so a failure names the first differing line. */
static void expect_listing(const char *test, const char *got,
                           const char *want) {
  if (strcmp(got, want) == 0) {
    passed++;
    return;
  }
  failed++;
  fprintf(stderr, "FAIL %s\n", test);
  int line = 1;
  const char *g = got, *w = want;
  while (*g && *w) {
    size_t gl = strcspn(g, "\n"), wl = strcspn(w, "\n");
    if (gl != wl || memcmp(g, w, gl) != 0) break;
    g += gl + (g[gl] == '\n');
    w += wl + (w[wl] == '\n');
    line++;
  }
  fprintf(stderr, "  first difference at line %d\n  want: %.*s\n  got:  %.*s\n",
          line, (int)strcspn(w, "\n"), w, (int)strcspn(g, "\n"), g);
  fprintf(stderr, "--- full output ---\n%s-------------------\n", got);
}

/* The example from the -d documentation: one source line, a map update. */
static void test_count_by_comm(void) {
  static const char text[] =
      "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }\n";
  Source src = {.name = "stdin", .text = text};
  MapSym at = {.name = "@", .id = 0};
  MapSym *maps[] = {&at};
  Compiled c = {.maps = maps, .nmaps = 1};
  AttachPoint ap = {.text = "tracepoint:raw_syscalls:sys_enter"};
  Target t = {.name = "tracepoint:raw_syscalls:sys_enter"};
  Probe probe = {.aps = &ap};

  Builder b = {0};
  emit(&b, 1, I_MOV64_REG(BPF_REG_6, BPF_REG_1));
  emit(&b, 1, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(&b, 1, I_ALU64_IMM(BPF_ADD, BPF_REG_1, -16));
  emit(&b, 1, I_MOV64_IMM(BPF_REG_2, 16));
  emit(&b, 1, I_CALL(BPF_FUNC_get_current_comm));
  emit(&b, 1, I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, 0));
  emit(&b, 1, I_LD_IMM64_HI(0));
  emit(&b, 1, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(&b, 1, I_ALU64_IMM(BPF_ADD, BPF_REG_2, -16));
  emit(&b, 1, I_CALL(BPF_FUNC_map_lookup_elem));
  emit(&b, 1, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 3));
  emit(&b, 1, I_MOV64_IMM(BPF_REG_1, 1));
  emit(&b, 1, insn_make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_0, BPF_REG_1,
                        0, BPF_ADD));
  emit(&b, 1, I_JA(1));
  emit(&b, 1, I_ST(BPF_DW, BPF_REG_10, -24, 1));
  emit(&b, 1, I_MOV64_IMM(BPF_REG_0, 0));
  emit(&b, 1, I_EXIT());
  BpfProg p = make_prog(&b, "tp_sys_enter", BPF_PROG_TYPE_TRACEPOINT, &probe,
                        &ap, &t);

  char *got = render(&p, &c, &src);
  expect_listing("count_by_comm", got,
                 "; tp_sys_enter: tracepoint:raw_syscalls:sys_enter "
                 "(tracepoint, 17 insns)\n"
                 "; 1: tracepoint:raw_syscalls:sys_enter "
                 "{ @[comm] = count(); }\n"
                 "   0: r6 = r1\n"
                 "   1: r1 = r10\n"
                 "   2: r1 += -16\n"
                 "   3: r2 = 16\n"
                 "   4: call bpf_get_current_comm\n"
                 "   5: r1 = map @ ll\n"
                 "   7: r2 = r10\n"
                 "   8: r2 += -16\n"
                 "   9: call bpf_map_lookup_elem\n"
                 "  10: if r0 == 0 goto +3 <14>\n"
                 "  11: r1 = 1\n"
                 "  12: lock *(u64 *)(r0 + 0) += r1\n"
                 "  13: goto +1 <15>\n"
                 "  14: *(u64 *)(r10 - 24) = 1\n"
                 "  15: r0 = 0\n"
                 "  16: exit\n");
  free(got);
}

/* Every ALU operation in both widths, register and immediate forms. */
static void test_alu(void) {
  static const char text[] = "BEGIN {\n  $x = 1;\n}\n";
  Source src = {.name = "alu.bt", .text = text};
  AttachPoint ap = {.text = "BEGIN"};
  Probe probe = {.aps = &ap};
  static const int ops[] = {BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV,  BPF_MOD,
                            BPF_OR,  BPF_AND, BPF_XOR, BPF_LSH, BPF_RSH,
                            BPF_ARSH};
  Builder b = {0};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    emit(&b, 2, I_ALU64_REG(ops[i], BPF_REG_1, BPF_REG_2));
    emit(&b, 2, I_ALU32_IMM(ops[i], BPF_REG_3, 7));
  }
  emit(&b, 2, I_NEG64(BPF_REG_4));
  emit(&b, 2, insn_make(BPF_ALU | BPF_NEG, BPF_REG_4, 0, 0, 0));
  emit(&b, 2, I_MOV32_REG(BPF_REG_5, BPF_REG_6));
  emit(&b, 2, I_SDIV64_REG(BPF_REG_1, BPF_REG_2));
  emit(&b, 2, I_SMOD64_REG(BPF_REG_1, BPF_REG_2));
  emit(&b, 2, insn_make(BPF_ALU | BPF_END | BPF_TO_BE, BPF_REG_1, 0, 0, 16));
  emit(&b, 2, insn_make(BPF_ALU | BPF_END | BPF_TO_LE, BPF_REG_1, 0, 0, 64));
  emit(&b, 2, insn_make(BPF_ALU64 | BPF_END, BPF_REG_1, 0, 0, 32));
  emit(&b, 2, insn_make(BPF_ALU64 | BPF_MOV | BPF_X, BPF_REG_1, BPF_REG_2, 8,
                        0));
  emit(&b, 3, I_EXIT());
  BpfProg p = make_prog(&b, "BEGIN", BPF_PROG_TYPE_RAW_TRACEPOINT, &probe,
                        NULL, NULL);

  char *got = render(&p, NULL, &src);
  expect_listing("alu", got,
                 "; BEGIN: BEGIN (raw_tracepoint, 32 insns)\n"
                 "; 2: $x = 1;\n"
                 "   0: r1 += r2\n"
                 "   1: w3 += 7\n"
                 "   2: r1 -= r2\n"
                 "   3: w3 -= 7\n"
                 "   4: r1 *= r2\n"
                 "   5: w3 *= 7\n"
                 "   6: r1 /= r2\n"
                 "   7: w3 /= 7\n"
                 "   8: r1 %= r2\n"
                 "   9: w3 %= 7\n"
                 "  10: r1 |= r2\n"
                 "  11: w3 |= 7\n"
                 "  12: r1 &= r2\n"
                 "  13: w3 &= 7\n"
                 "  14: r1 ^= r2\n"
                 "  15: w3 ^= 7\n"
                 "  16: r1 <<= r2\n"
                 "  17: w3 <<= 7\n"
                 "  18: r1 >>= r2\n"
                 "  19: w3 >>= 7\n"
                 "  20: r1 s>>= r2\n"
                 "  21: w3 s>>= 7\n"
                 "  22: r4 = -r4\n"
                 "  23: w4 = -w4\n"
                 "  24: w5 = w6\n"
                 "  25: r1 s/= r2\n"
                 "  26: r1 s%= r2\n"
                 "  27: r1 = be16 r1\n"
                 "  28: r1 = le64 r1\n"
                 "  29: r1 = bswap32 r1\n"
                 "  30: r1 = (s8)r2\n"
                 "; 3: }\n"
                 "  31: exit\n");
  free(got);
}

/* Loads and stores of every size, 64-bit constants, internal maps. */
static void test_memory(void) {
  static const char text[] =
      "interval:s:1 {\n  @a = 1;\n  @b = 2;\n}\n";
  Source src = {.name = "mem.bt", .text = text};
  MapSym a = {.name = "@a", .id = 0}, bmap = {.name = "@b", .id = 1};
  MapSym *maps[] = {&a, &bmap};
  Compiled c = {.maps = maps, .nmaps = 2};
  AttachPoint ap = {.text = "interval:s:1"};
  Probe probe = {.aps = &ap};

  Builder b = {0};
  emit(&b, 2, I_LDX(BPF_B, BPF_REG_0, BPF_REG_1, 0));
  emit(&b, 2, I_LDX(BPF_H, BPF_REG_0, BPF_REG_1, 2));
  emit(&b, 2, I_LDX(BPF_W, BPF_REG_0, BPF_REG_1, 4));
  emit(&b, 2, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_1, 8));
  emit(&b, 0, I_STX(BPF_B, BPF_REG_10, BPF_REG_0, -1));
  emit(&b, 0, I_STX(BPF_H, BPF_REG_10, BPF_REG_0, -4));
  emit(&b, 2, I_ST(BPF_W, BPF_REG_10, -8, -5));
  emit(&b, 3, I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, 1));
  emit(&b, 3, I_LD_IMM64_HI(0));
  emit(&b, 3, I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_FD, MAP_ID_RINGBUF));
  emit(&b, 3, I_LD_IMM64_HI(0));
  emit(&b, 3, I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_MAP_VALUE, MAP_ID_SCRATCH));
  emit(&b, 3, I_LD_IMM64_HI(64));
  emit(&b, 3, I_LD_IMM64_LO(BPF_REG_2, 0, (int32_t)0xdeadbeef));
  emit(&b, 3, I_LD_IMM64_HI(0x12345678));
  emit(&b, 3, I_LD_IMM64_LO(BPF_REG_2, 0, -1));
  emit(&b, 3, I_LD_IMM64_HI(-1));
  emit(&b, 3, insn_make(BPF_STX | BPF_W | BPF_ATOMIC, BPF_REG_1, BPF_REG_2,
                        8, BPF_ADD));
  emit(&b, 3, insn_make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_1, BPF_REG_2,
                        0, BPF_ADD | BPF_FETCH));
  emit(&b, 3, insn_make(BPF_STX | BPF_DW | BPF_ATOMIC, BPF_REG_1, BPF_REG_2,
                        0, BPF_CMPXCHG));
  emit(&b, 4, I_EXIT());
  BpfProg p = make_prog(&b, "interval_s_1", BPF_PROG_TYPE_PERF_EVENT, &probe,
                        NULL, NULL);

  char *got = render(&p, &c, &src);
  expect_listing("memory", got,
                 "; interval_s_1: interval:s:1 (perf_event, 21 insns)\n"
                 "; 2: @a = 1;\n"
                 "   0: r0 = *(u8 *)(r1 + 0)\n"
                 "   1: r0 = *(u16 *)(r1 + 2)\n"
                 "   2: r0 = *(u32 *)(r1 + 4)\n"
                 "   3: r0 = *(u64 *)(r1 + 8)\n"
                 "   4: *(u8 *)(r10 - 1) = r0\n"
                 "   5: *(u16 *)(r10 - 4) = r0\n"
                 "   6: *(u32 *)(r10 - 8) = -5\n"
                 "; 3: @b = 2;\n"
                 "   7: r1 = map @b ll\n"
                 "   9: r1 = map ringbuf ll\n"
                 "  11: r1 = &map_value(scratch) + 64 ll\n"
                 "  13: r2 = 0x12345678deadbeef ll\n"
                 "  15: r2 = -1 ll\n"
                 "  17: lock *(u32 *)(r1 + 8) += w2\n"
                 "  18: r2 = atomic_fetch_add((u64 *)(r1 + 0), r2)\n"
                 "  19: r0 = cmpxchg((u64 *)(r1 + 0), r0, r2)\n"
                 "; 4: }\n"
                 "  20: exit\n");
  free(got);
}

/* Every conditional jump, 64- and 32-bit, backwards targets, calls by name
 * and by unknown id; the header falls back to the probe's attach points. */
static void test_jumps(void) {
  static const char text[] = "tracepoint:a:b,tracepoint:c:d { exit(); }";
  Source src = {.name = "stdin", .text = text};
  AttachPoint ap2 = {.text = "tracepoint:c:d"};
  AttachPoint ap1 = {.text = "tracepoint:a:b", .next = &ap2};
  Probe probe = {.aps = &ap1};
  static const int ops[] = {BPF_JEQ,  BPF_JNE,  BPF_JGT,  BPF_JGE,
                            BPF_JLT,  BPF_JLE,  BPF_JSGT, BPF_JSGE,
                            BPF_JSLT, BPF_JSLE, BPF_JSET};
  Builder b = {0};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
    emit(&b, 1, I_JMP_REG(ops[i], BPF_REG_1, BPF_REG_2, 1));
  emit(&b, 1, insn_make(BPF_JMP32 | BPF_JSLT | BPF_K, BPF_REG_3, 0, -2, -1));
  emit(&b, 1, I_JMP_IMM(BPF_JSET, BPF_REG_3, 0x80, 0));
  emit(&b, 1, I_JA(-14));
  emit(&b, 1, I_CALL(BPF_FUNC_ringbuf_output));
  emit(&b, 1, I_CALL(100000));
  emit(&b, 1, I_EXIT());
  BpfProg p = make_prog(&b, "", BPF_PROG_TYPE_TRACEPOINT, &probe, NULL, NULL);

  char *got = render(&p, NULL, &src);
  expect_listing("jumps", got,
                 "; prog: tracepoint:a:b, tracepoint:c:d "
                 "(tracepoint, 17 insns)\n"
                 "; 1: tracepoint:a:b,tracepoint:c:d { exit(); }\n"
                 "   0: if r1 == r2 goto +1 <2>\n"
                 "   1: if r1 != r2 goto +1 <3>\n"
                 "   2: if r1 > r2 goto +1 <4>\n"
                 "   3: if r1 >= r2 goto +1 <5>\n"
                 "   4: if r1 < r2 goto +1 <6>\n"
                 "   5: if r1 <= r2 goto +1 <7>\n"
                 "   6: if r1 s> r2 goto +1 <8>\n"
                 "   7: if r1 s>= r2 goto +1 <9>\n"
                 "   8: if r1 s< r2 goto +1 <10>\n"
                 "   9: if r1 s<= r2 goto +1 <11>\n"
                 "  10: if r1 & r2 goto +1 <12>\n"
                 "  11: if w3 s< -1 goto -2 <10>\n"
                 "  12: if r3 & 0x80 goto +0 <13>\n"
                 "  13: goto -14 <0>\n"
                 "  14: call bpf_ringbuf_output\n"
                 "  15: call helper#100000\n"
                 "  16: exit\n");
  free(got);
}

/* No spans at all (a program built without locations) prints no comments;
 * a line-less instruction between two runs of one line does not split it. */
static void test_spans(void) {
  Source src = {.name = "stdin", .text = "BEGIN { exit(); }"};
  AttachPoint ap = {.text = "BEGIN"};
  Probe probe = {.aps = &ap};
  Builder b = {0};
  emit(&b, 1, I_MOV64_IMM(BPF_REG_0, 0));
  emit(&b, 0, I_MOV64_IMM(BPF_REG_0, 1));
  emit(&b, 1, I_EXIT());
  BpfProg p = make_prog(&b, "BEGIN", BPF_PROG_TYPE_RAW_TRACEPOINT, &probe,
                        &ap, NULL);
  char *got = render(&p, NULL, &src);
  expect_listing("spans_line_zero", got,
                 "; BEGIN: BEGIN (raw_tracepoint, 3 insns)\n"
                 "; 1: BEGIN { exit(); }\n"
                 "   0: r0 = 0\n"
                 "   1: r0 = 1\n"
                 "   2: exit\n");
  free(got);

  p.insn_span = NULL;
  got = render(&p, NULL, &src);
  expect_listing("spans_none", got,
                 "; BEGIN: BEGIN (raw_tracepoint, 3 insns)\n"
                 "   0: r0 = 0\n"
                 "   1: r0 = 1\n"
                 "   2: exit\n");
  free(got);
}

int main(void) {
  test_count_by_comm();
  test_alu();
  test_memory();
  test_jumps();
  test_spans();
  printf("test_disasm: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
