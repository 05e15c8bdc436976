/* syscall_raw: one raw tracepoint program (on sys_enter or sys_exit) for
 * the many syscalls:sys_enter_* or sys_exit_* tracepoints of an attach
 * point, which then need no perf event each, and for raw_syscalls:sys_enter
 * or sys_exit, whose events the raw tracepoints are (see probes/syscalls.h).
 *
 * The program sees what the tracepoints' programs would see:
 * - it runs for the same system calls: those whose number is one of the
 *   tracepoints' (a bitmap in the program), not for 32-bit ones, which
 *   the syscall events skip (thread_info.status has TS_COMPAT; x32 calls
 *   carry a number above any in the bitmap); raw_syscalls' events come for
 *   every system call, as the raw tracepoint's;
 * - args->__syscall_nr is that number, args->NAME of sys_enter_X the
 *   call's argument in NAME's place (read from the task's pt_regs, where
 *   the kernel copies them from), args->ret of sys_exit_X the raw
 *   tracepoint's own `ret`;
 * - raw_syscalls:sys_enter's args->id is the raw tracepoint's `id`, and
 *   args->args[K] (K a constant) the registers syscall_get_arguments
 *   reads (a 32-bit call's others); sys_exit's args->id is the number in
 *   pt_regs, as syscall_get_nr gives it, args->ret the raw `ret`;
 * - `probe` is the tracepoint's name, from an array map of names by
 *   number (raw_syscalls: its own name).
 * A probe whose body needs anything else of its context (the whole
 * `args`, ctx, a field the tracepoints do not share, args->args[i] with i
 * not a constant, kstack or ustack, which walk from a different place)
 * keeps the perf events. */
#include <stdlib.h>
#include <string.h>

#include "codegen/gen.h"
#include "probes/syscalls.h"

/* A name of a tracepoint in the names map: "tracepoint:syscalls:" and the
 * event, NUL-padded; longer names keep their perf events. */
#define NAME_STRIDE 64

/* Set LOUPE_SYSCALL_PERF_EVENTS to a value other than 0 to give every
 * syscall tracepoint its perf event, as before. */
static bool raw_path_disabled(void) {
  const char *v = getenv("LOUPE_SYSCALL_PERF_EVENTS");
  return v && *v && strcmp(v, "0") != 0;
}

/* ---- which probes may take the raw path ---------------------------- */

/* The probe's targets, attach point after attach point: the next one
 * after *t (NULL: the first) that is a syscall tracepoint of `group`, its
 * attach point in *ap; NULL at the end. */
static const Target *next_of_group(const Probe *probe, int group,
                                   const AttachPoint **ap, const Target *t) {
  if (!t) *ap = probe->aps;
  for (; *ap; *ap = (*ap)->next, t = NULL) {
    if (!syscall_tracepoints(*ap)) continue;
    for (t = t ? t->next : (*ap)->targets; t; t = t->next)
      if (syscall_group_of(t, NULL) == group) return t;
  }
  return NULL;
}

#define EACH_OF_GROUP(probe, group, ap, t) \
  for (t = next_of_group(probe, group, &ap, NULL); t; \
       t = next_of_group(probe, group, &ap, t))

/* The field `name` as every target of the group has it, or NULL if they
 * differ in where it is. */
static const TpField *group_field(const Probe *probe, int group,
                                  const char *name) {
  const TpField *first = NULL;
  const AttachPoint *ap;
  const Target *t;
  EACH_OF_GROUP(probe, group, ap, t) {
    const TpField *f = tp_field(t->format, name);
    if (!f) return NULL;
    if (!first) first = f;
    else if (f->offset != first->offset || f->size != first->size)
      return NULL;
  }
  return first;
}

/* Whether the raw program can give field f its meaning. */
static bool field_fits(const TpField *f, int group) {
  if (!f || f->is_string || f->is_array || f->data_loc) return false;
  if (group & SYSCALL_EVERY)   /* id; sys_exit's ret */
    return f->size == 8 && (!strcmp(f->name, "id") ||
                            (group == SYSCALL_EVERY_EXIT &&
                             !strcmp(f->name, "ret")));
  if (!strcmp(f->name, "__syscall_nr")) return f->size == 4;
  if (f->size != 8 || f->offset < 16 || (f->offset - 16) % 8) return false;
  if (group == SYSCALL_EXIT) return f->offset == 16;
  return (f->offset - 16) / 8 < 6;
}

typedef struct Fit {
  const Probe *probe;
  int group;
  bool ok;
  bool in_loop;   /* in the body of a for loop */
} Fit;

/* Whether n is args->NAME. */
static bool is_args_field(const Node *n, const char *name) {
  return n && n->kind == N_FIELD && n->lhs && n->lhs->kind == N_BUILTIN &&
         n->lhs->type.kind == TY_ARGS && (!name || !strcmp(n->name, name));
}

bool syscall_raw_is_arg(const Node *n) {
  return n->kind == N_INDEX && is_args_field(n->lhs, "args") && n->rhs &&
         n->rhs->kind == N_INT && n->rhs->ival >= 0 && n->rhs->ival < 6;
}

/* Whether what n reads suits the group's raw program (Fit.ok); the walk
 * stops at the first thing that does not. */
static AstStep fits(Node *n, void *ctx) {
  Fit *f = ctx;
  if (f->group == SYSCALL_EVERY_ENTER && syscall_raw_is_arg(n))
    return AST_SKIP;
  if (n->kind == N_UNOP && n->op == '&' && n->lhs &&
      syscall_raw_is_arg(n->lhs))
    f->ok = false;   /* the address of a record's copy */
  if (is_args_field(n, NULL)) {
    f->ok = field_fits(group_field(f->probe, f->group, n->name), f->group);
    return f->ok ? AST_SKIP : AST_STOP;
  }
  if ((n->kind == N_BUILTIN || n->kind == N_CALL) && n->name) {
    const char *s = n->name;
    /* probe reads the number the prologue keeps in the probe's own
     * frame, which a loop's callback does not have */
    if (!strcmp(s, "args") || !strcmp(s, "ctx") || !strcmp(s, "kstack") ||
        !strcmp(s, "ustack") ||
        (f->in_loop && (f->group & SYSCALL_NUMBERED) && !strcmp(s, "probe")))
      f->ok = false;
  }
  if (!f->ok) return AST_STOP;
  if (n->kind != N_FOR || f->in_loop) return AST_ENTER;
  f->in_loop = true;
  bool stopped = ast_walk_children(n, fits, f);
  f->in_loop = false;
  return stopped ? AST_STOP : AST_SKIP;
}

/* How many tracepoints of the group the probe has; -1 if one comes twice
 * (its perf events would run the program twice, a raw program once). */
static int group_count(const Probe *probe, int group, bool uses_probe) {
  int count = 0, nr;
  uint64_t seen[SYSCALL_NR_WORDS] = {0};
  const AttachPoint *ap;
  const Target *t;
  EACH_OF_GROUP(probe, group, ap, t) {
    if (group & SYSCALL_EVERY) {   /* one tracepoint */
      if (count++) return -1;
      continue;
    }
    syscall_group_of(t, &nr);
    if (nr >= SYSCALL_NR_WORDS * 64 || (seen[nr / 64] >> (nr % 64)) & 1 ||
        (uses_probe && strlen(t->name) + 1 > NAME_STRIDE))
      return -1;
    seen[nr / 64] |= 1ull << (nr % 64);
    count++;
  }
  return count;
}

unsigned syscall_raw_plan(Probe *probe) {
  unsigned groups = 0;
  FOR_EACH_SYSCALL_GROUP(group) {
    int least = group & SYSCALL_EVERY ? 1 : SYSCALL_RAW_MIN_TARGETS;
    if (group_count(probe, group,
                    probe->uses_probe || probe->uses_target_name) < least ||
        raw_path_disabled() || !syscall_layout())
      continue;
    Fit f = {probe, group, true, false};
    if (!ast_walk(probe->pred, fits, &f)) ast_walk(probe->body, fits, &f);
    if (f.ok) groups |= (unsigned)group;
  }
  for (AttachPoint *ap = probe->aps; ap; ap = ap->next) {
    ap->raw_syscalls = 0;
    FOR_EACH_SYSCALL_GROUP(group) {
      const AttachPoint *at;
      const Target *t = next_of_group(probe, group, &at, NULL);
      for (; t && at != ap; t = next_of_group(probe, group, &at, t)) {}
      if (groups & (unsigned)group && t) ap->raw_syscalls |= (unsigned)group;
    }
  }
  return groups;
}

AttachPoint *syscall_raw_first_ap(Probe *probe, int group) {
  const AttachPoint *ap;
  return next_of_group(probe, group, &ap, NULL) ? (AttachPoint *)ap : NULL;
}

Target *syscall_raw_target(Probe *probe, int group) {
  const AttachPoint *ap;
  return group & SYSCALL_EVERY
             ? (Target *)next_of_group(probe, group, &ap, NULL)
             : NULL;
}

/* ---- the prologue --------------------------------------------------- */

/* The group's system call numbers, as bits of 64-bit words; returns how
 * many words up to the last one set. */
static int group_bitmap(const Probe *probe, int group,
                        uint64_t bits[SYSCALL_NR_WORDS]) {
  int nwords = 0, nr;
  const AttachPoint *ap;
  const Target *t;
  memset(bits, 0, SYSCALL_NR_WORDS * sizeof *bits);
  EACH_OF_GROUP(probe, group, ap, t) {
    syscall_group_of(t, &nr);
    bits[nr / 64] |= 1ull << (nr % 64);
    if (nr / 64 >= nwords) nwords = nr / 64 + 1;
  }
  return nwords;
}

/* Leaves (through `skip`) unless r1, the system call's number, is one of
 * the group's; r1 then holds the number modulo 64. */
static void emit_number_filter(Gen *g, Jumps *skip) {
  uint64_t bits[SYSCALL_NR_WORDS];
  int nwords = group_bitmap(g->probe, g->p->syscall_group, bits);
  /* unsigned: (int)-1 and x32's numbers are out of range as well */
  jumps_add(skip, emit_jump(g, I_JMP_IMM(BPF_JGE, BPF_REG_1, nwords * 64,
                                         0)));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_1));
  emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_2, 6));
  Jumps found = {0};
  for (int w = 0; w < nwords; w++) {
    if (!bits[w]) continue;
    int next = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_2, w, 0));
    emit_imm64(g, BPF_REG_3, (int64_t)bits[w]);
    jumps_add(&found, emit_jump(g, I_JA(0)));
    patch_here(g, next);
  }
  jumps_add(skip, emit_jump(g, I_JA(0)));
  jumps_patch_here(g, &found);
  emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_1, 63));
  emit(g, I_ALU64_REG(BPF_RSH, BPF_REG_3, BPF_REG_1));
  emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_3, 1));
  jumps_add(skip, emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_3, 0, 0)));
}

/* r1 = a probe_read_kernel of `size` bytes at r3 into stack slot `slot`;
 * leaves through skip if the read fails. */
static void emit_read_slot(Gen *g, int slot, int size, Jumps *skip) {
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
  emit(g, I_MOV64_IMM(BPF_REG_2, size));
  emit_call(g, BPF_FUNC_probe_read_kernel);
  jumps_add(skip, emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0)));
  emit(g, I_LDX(size == 4 ? BPF_W : BPF_DW, BPF_REG_1, BPF_REG_10, slot));
}

/* First thing in the program (r1 = ctx: regs, then id or ret): leaves
 * unless the event is one of the group's tracepoints', and keeps the
 * system call's number in g->sysnr_slot. */
void syscall_raw_prologue(Gen *g) {
  if (g->p->syscall_group & SYSCALL_EVERY) return;   /* every event */
  const SyscallLayout *l = syscall_layout();
  Jumps skip = {0};
  g->sysnr_slot = stack_alloc(g, 8);
  int status = stack_alloc(g, 8);
  /* the number as the syscall events take it: (int)regs->orig_ax */
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_1, 0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, l->orig_ax));
  emit_read_slot(g, g->sysnr_slot, 8, &skip);
  emit(g, I_MOV32_REG(BPF_REG_1, BPF_REG_1));
  emit_number_filter(g, &skip);
  /* not a 32-bit system call */
  emit_call(g, BPF_FUNC_get_current_task);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, l->task_status));
  emit_read_slot(g, status, 4, &skip);
  emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_1, SYSCALL_TS_COMPAT));
  jumps_add(&skip, emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_1, 0, 0)));
  int run = emit_jump(g, I_JA(0));
  jumps_patch_here(g, &skip);
  emit_return(g);
  patch_here(g, run);
}

/* ---- what the body reads -------------------------------------------- */

/* r = the 8 bytes at offset `off` of the task's pt_regs (the raw
 * tracepoint's first argument), or at the offset register off_reg holds
 * when that is not -1; read through a stack slot. */
static void emit_regs_read(Gen *g, int r, int off, int off_reg) {
  int slot = stack_alloc(g, 8);
  emit_ctx(g, BPF_REG_3);
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_3, 0));
  if (off_reg >= 0)
    emit(g, I_ALU64_REG(BPF_ADD, BPF_REG_3, off_reg));
  else
    emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, off));
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
  emit(g, I_MOV64_IMM(BPF_REG_2, 8));
  emit_call(g, BPF_FUNC_probe_read_kernel);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
}

/* raw_syscalls' fields: the raw tracepoint's second argument (sys_enter's
 * id, sys_exit's ret), or sys_exit's id, syscall_get_nr's (int)orig_ax. */
static int every_field(Gen *g, const TpField *f) {
  int r = reg_alloc(g);
  if (g->p->syscall_group == SYSCALL_EVERY_EXIT && !strcmp(f->name, "id")) {
    emit_regs_read(g, r, syscall_layout()->orig_ax, -1);
    emit(g, I_ALU64_IMM(BPF_LSH, r, 32));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 32));
    return r;
  }
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, 8));
  return r;
}

int syscall_raw_arg(Gen *g, Node *n) {
  const SyscallLayout *l = syscall_layout();
  int k = (int)n->rhs->ival;
  int r = reg_alloc(g);
  if (l->args[k] == l->compat_args[k]) {   /* dx either way */
    emit_regs_read(g, r, l->args[k], -1);
    return r;
  }
  /* which registers: a 32-bit call's (TS_COMPAT) are others */
  int status = stack_alloc(g, 8);
  emit_call(g, BPF_FUNC_get_current_task);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_0));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, l->task_status));
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, status));
  emit(g, I_MOV64_IMM(BPF_REG_2, 4));
  emit_call(g, BPF_FUNC_probe_read_kernel);
  emit(g, I_LDX(BPF_W, BPF_REG_5, BPF_REG_10, status));
  emit(g, I_ALU64_IMM(BPF_AND, BPF_REG_5, SYSCALL_TS_COMPAT));
  emit(g, I_MOV64_IMM(BPF_REG_4, l->args[k]));
  emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_5, 0, 1));
  emit(g, I_MOV64_IMM(BPF_REG_4, l->compat_args[k]));
  emit_regs_read(g, r, 0, BPF_REG_4);
  return r;
}

int syscall_raw_field(Gen *g, Node *n) {
  const TpField *f = group_field(g->probe, g->p->syscall_group, n->name);
  if (!field_fits(f, g->p->syscall_group)) {
    fail(g, n->span, "internal error: no field '%s' here", n->name);
    return reg_alloc(g);
  }
  if (g->p->syscall_group & SYSCALL_EVERY) return every_field(g, f);
  int r = reg_alloc(g);
  if (!strcmp(f->name, "__syscall_nr")) {
    emit(g, I_LDX(BPF_W, r, BPF_REG_10, g->sysnr_slot));
    emit(g, I_ALU64_IMM(BPF_LSH, r, 32));
    emit(g, I_ALU64_IMM(BPF_ARSH, r, 32));
    return r;
  }
  if (g->p->syscall_group == SYSCALL_EXIT) {   /* ret: the second slot */
    emit_ctx(g, r);
    emit(g, I_LDX(BPF_DW, r, r, 8));
    return r;
  }
  emit_regs_read(g, r, syscall_layout()->args[(f->offset - 16) / 8], -1);
  return r;
}

/* The internal array of tracepoint names by number for a group, made on
 * first use and given the names of the probe's tracepoints. */
static int names_map(Gen *g) {
  int group = g->p->syscall_group;
  const char *name = group == SYSCALL_EXIT ? "@@sys_exit_names"
                                           : "@@sys_enter_names";
  int id = find_map(g, name);
  MapSym *m = id >= 0 ? g->c->maps[id]
                      : add_codegen_array(g, name, NAME_STRIDE,
                                          (uint32_t)syscall_nr_limit());
  id = m->id;
  const AttachPoint *ap;
  const Target *t;
  int nr;
  EACH_OF_GROUP(g->probe, group, ap, t) {
    syscall_group_of(t, &nr);
    if (nr < (int)m->max_entries)
      snprintf(m->init_values + (size_t)nr * NAME_STRIDE, NAME_STRIDE, "%s",
               t->name);
  }
  return id;
}

void syscall_raw_probe_name(Gen *g, int dst, int cap) {
  emit_array_string(g, names_map(g), g->sysnr_slot, 0, NAME_STRIDE, dst,
                    cap);
}
