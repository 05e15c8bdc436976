/* stack: kstack and ustack — the kernel and user call stacks of the
 * current task, kept in stack-trace maps by bpf_get_stackid (one map per
 * frame limit) — and the symbol builtins ksym, usym and uaddr. Values and
 * their layout: runtime/print_stack.h, which prints them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"
#include "runtime/print_stack.h"
#include "sym/usyms.h"

#define DEFAULT_STACK_FRAMES 127
#define PT_REGS_IP 128   /* x86-64's struct pt_regs: ip */

/* The kernel's limit on frames a stack-trace map entry may hold (read
 * once). */
static int max_stack_frames(void) {
  static int max;
  if (max) return max;
  max = DEFAULT_STACK_FRAMES;
  FILE *f = fopen("/proc/sys/kernel/perf_event_max_stack", "r");
  if (f) {
    if (fscanf(f, "%d", &max) != 1 || max <= 0) max = DEFAULT_STACK_FRAMES;
    fclose(f);
  }
  return max;
}

static bool stack_mode_named(const Node *a, int *mode) {
  static const char *const names[] = {"bpftrace", "perf", "raw",
                                      "build_id"};
  if (a->kind != N_BUILTIN && a->kind != N_VAR) return false;
  for (int i = 0; i < 4; i++)
    if (!strcmp(a->name, names[i])) {
      *mode = i;
      return true;
    }
  return false;
}

/* The processes ustack has met (an LRU hash of pids): the first stack of
 * each also tells user space, which then reads the process's maps while
 * it is alive, so that its stacks still print once it has exited. */
#define PIDS_SEEN_MAP_NAME "@@pids_seen"
#define PIDS_SEEN_ENTRIES 16384

/* A map of loupe's own, made on first use: 4-byte keys. */
static void want_internal_map(Checker *c, Node *n, const char *name,
                              uint32_t type, int value_size,
                              uint32_t entries) {
  if (map_find(c->out, name)) return;
  MapSym *m = calloc(1, sizeof(*m));
  m->name = strdup(name);
  m->id = c->out->nmaps;
  m->first_use = n->span;
  m->key_size = 4;
  m->value_type = ty_int(8, false);
  m->value_size = value_size;
  m->bpf_type = type;
  m->max_entries = entries;
  m->internal = true;
  c->out->maps = realloc(c->out->maps,
                         sizeof(MapSym *) * (c->out->nmaps + 1));
  c->out->maps[c->out->nmaps++] = m;
}

static void stack_map_name(int limit, char *buf, size_t len) {
  snprintf(buf, len, "@@stack_%d", limit);
}

/* The stack-trace map for stacks of `limit` frames, made on first use. */
static void want_stack_map(Checker *c, Node *n, int limit) {
  char name[32];
  stack_map_name(limit, name, sizeof name);
  want_internal_map(c, n, name, BPF_MAP_TYPE_STACK_TRACE, limit * 8,
           (uint32_t)c->map_keys);
}

/* User addresses of a process loupe never saw alive are looked up in the
 * binaries the probe is in. */
static void note_probe_binaries(Probe *p) {
  for (AttachPoint *ap = p ? p->aps : NULL; ap; ap = ap->next)
    for (Target *t = ap->targets; t; t = t->next)
      if (t->binary) usyms_add_binary(t->binary);
}

/* kstack, ustack, kstack([mode][, limit]), ustack([mode][, limit]) */
static void check_stack(Checker *c, Node *n) {
  bool user = n->name[0] == 'u';
  int mode = c->script->settings->stack_mode, max = max_stack_frames();
  if (c->frame != 0) {   /* the loop body's frame has no context pointer */
    error_at(c, n->span, "%s can not be used in the body of a for loop "
             "over a map; take it before the loop", n->name);
    return;
  }
  bool mode_given = false;
  int64_t limit = max < DEFAULT_STACK_FRAMES ? max : DEFAULT_STACK_FRAMES;
  Node *a = n->kind == N_CALL ? n->args : NULL;
  if (count_args(n) > 2) {
    error_at(c, n->span, "%s() takes at most two arguments: a mode "
             "(bpftrace, perf, raw%s) and a frame limit", n->name,
             user ? ", build_id" : "");
    return;
  }
  if (a && stack_mode_named(a, &mode)) {
    mode_given = true;
    a = a->next;
  } else if (a && a->next) {
    error_at(c, a->span, "%s(): the first of two arguments is the mode: "
             "bpftrace, perf, raw%s", n->name, user ? " or build_id" : "");
    return;
  }
  if (a) {
    check_expr(c, a);
    if (!want_const(c, a, n->name, "the frame limit", 1, max, &limit))
      return;
  }
  if (!user && mode == STACK_BUILD_ID) {
    if (mode_given) {
      error_at(c, n->span, "kstack(): the build_id mode is for ustack "
               "only; use bpftrace, perf or raw");
      return;
    }
    mode = STACK_BPFTRACE;   /* a config default meant for ustack */
  }
  if (user && mode == STACK_BPFTRACE && c->script->settings->show_debug_info)
    mode = STACK_BPFTRACE_LINES;
  if (user && mode == STACK_PERF && c->script->settings->show_debug_info)
    mode = STACK_PERF_INLINED;
  want_stack_map(c, n, (int)limit);
  if (c->probe) c->probe->uses_ctx = true;   /* bpf_get_stackid reads it */
  if (user) {
    note_probe_binaries(c->probe);
    want_internal_map(c, n, PIDS_SEEN_MAP_NAME, BPF_MAP_TYPE_LRU_HASH, 8,
                      PIDS_SEEN_ENTRIES);
  }
  n->type = ty_int(8, false);
  n->type.named = user ? NAMED_USTACK : NAMED_KSTACK;
  n->type.stack_mode = (uint8_t)mode;
  n->type.stack_limit = (uint16_t)limit;
}

/* len(stack): its number of frames. Anything but a map or a stack is
 * reported here; false leaves a map to len(@m). */
bool stack_check_len(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->kind == N_MAP) return false;
  check_expr(c, a);
  if (!ty_is_stack(a->type)) {
    if (a->type.kind != TY_NONE)
      error_at(c, a->span, "len() expects a map or a stack (kstack, ustack), "
               "not %s", TYPE_NAME(a->type));
    return true;
  }
  c->out->stacks_counted = true;
  n->type = ty_int(8, true);
  return true;
}

/* ksym(addr), usym(addr): the address, named in user space. */
static void check_symbol(Checker *c, Node *n) {
  check_expr(c, n->args);
  if (!want_int(c, n, n->args)) return;
  n->type = ty_int(8, false);
  n->type.named = n->name[0] == 'k' ? NAMED_KSYM : NAMED_USYM;
  if (n->type.named == NAMED_USYM) note_probe_binaries(c->probe);
}

/* Whether an attach point of the probe is a uretprobe's: there the
 * instruction pointer is the return address, not the function's. */
static bool probe_has_uretprobe(Probe *p) {
  return !PROBE_ALL(p, ip_after_return, false);
}

/* uaddr("sym"): the address of a symbol of the probe's binary, a pointer
 * to an unsigned integer of the symbol's size (8 bytes if it has none of
 * 1, 2 or 4). In an executable with fixed addresses it is folded into a
 * constant; in a PIE or a library it is the function's address at the
 * probe (its instruction pointer) moved by the distance between the two
 * symbols in the file, worked out per target (n->ival: the symbol's
 * address in the file). */
static void check_uaddr(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->kind != N_STR) {
    error_at(c, n->span, "uaddr() expects a string literal");
    return;
  }
  const char *binary = NULL;
  for (AttachPoint *ap = c->probe ? c->probe->aps : NULL; ap; ap = ap->next)
    for (Target *t = ap->targets; t && !binary; t = t->next)
      if (t->binary) binary = t->binary;
  if (!binary || !PROBE_ALL(c->probe, user_space, true)) {
    error_at(c, n->span, "uaddr() can only be used in uprobes and USDT "
             "probes, whose binary has the symbol");
    return;
  }
  uint64_t addr = 0, size = 0;
  bool relocatable = false;
  char err[512];
  if (!usyms_symbol_address(binary, a->sval, &addr, &size, &relocatable,
                            err, sizeof err)) {
    error_at(c, n->span, "uaddr(\"%s\"): %s", a->sval, err);
    return;
  }
  if (relocatable && probe_has_uretprobe(c->probe)) {
    error_at(c, n->span, "uaddr(\"%s\"): %s is position-independent, and "
             "a uretprobe does not see where it is loaded; use a uprobe",
             a->sval, binary);
    return;
  }
  const char *pointee = size == 1   ? "uint8"
                        : size == 2 ? "uint16"
                        : size == 4 ? "uint32"
                                    : "uint64";
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_USER;
  n->type.ctype = ctype_parse(pointee, err, sizeof err);
  n->ival = (int64_t)addr;
  if (relocatable) {
    c->probe->uses_probe = c->probe->uses_ctx = true;  /* per target */
    return;
  }
  Type t = n->type;
  n->kind = N_INT;
  n->type = t;
}

/* ---- code ------------------------------------------------------------ */

/* Tells user space about process `pid` (a register) the first time. */
static void emit_first_sight(Gen *g, int pid) {
  int key = stack_alloc(g, 8), value = stack_alloc(g, 8);
  emit(g, I_STX(BPF_DW, BPF_REG_10, pid, key));
  emit(g, I_ST(BPF_DW, BPF_REG_10, value, 0));
  emit_map(g, BPF_REG_1, find_map(g, PIDS_SEEN_MAP_NAME));
  emit(g, I_MOV64_REG(BPF_REG_2, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_2, key));
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, value));
  emit(g, I_MOV64_IMM(BPF_REG_4, BPF_NOEXIST));
  emit_call(g, BPF_FUNC_map_update_elem);
  int known = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  emit(g, I_MOV64_REG(BPF_REG_1, pid));
  emit_event_r1(g, EV_PROCESS_SEEN);
  patch_here(g, known);
}

/* In user space: the process's maps, now. */
static void on_process_seen(const EventCtx *e, uint32_t pid,
                            const uint8_t *payload, size_t size) {
  usyms_remember((int)pid);
}

/* The stack id + 1 (0 if there is none), its frame count when len()
 * needs it, and for ustack the pid above them. */
static int emit_stack(Gen *g, Node *n) {
  bool user = n->type.named == NAMED_USTACK;
  int limit = n->type.stack_limit;
  uint64_t flags = user ? BPF_F_USER_STACK : 0;
  char name[32];
  stack_map_name(limit, name, sizeof name);
  int r = reg_alloc(g);
  emit_ctx(g, BPF_REG_1);
  emit_map(g, BPF_REG_2, find_map(g, name));
  emit(g, I_MOV64_IMM(BPF_REG_3, (int32_t)flags));
  emit_call(g, BPF_FUNC_get_stackid);
  emit(g, I_MOV64_IMM(r, 0));
  int slot = g->c->maps[find_map(g, name)]->full_slot;
  if (slot) {
    /* no room for a new stack (its bucket holds another): counted as
     * the refused updates of a full map are, -EEXIST each time */
    int placed = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, -EEXIST, 0));
    emit_count_slot(g, slot, BPF_REG_0);
    patch_here(g, placed);
  }
  int none = emit_jump(g, I_JMP_IMM(BPF_JSLT, BPF_REG_0, 0, 0));
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  emit(g, I_ALU64_IMM(BPF_ADD, r, 1));
  emit(g, I_ALU64_IMM(BPF_AND, r, STACK_ID_MASK));
  patch_here(g, none);
  if (g->c->stacks_counted) {
    int buf = scratch_alloc(g, limit * 8);
    emit_ctx(g, BPF_REG_1);
    emit_scratch(g, BPF_REG_2, buf);
    emit(g, I_MOV64_IMM(BPF_REG_3, limit * 8));
    emit(g, I_MOV64_IMM(BPF_REG_4, (int32_t)flags));
    emit_call(g, BPF_FUNC_get_stack);
    int failed = emit_jump(g, I_JMP_IMM(BPF_JSLT, BPF_REG_0, 0, 0));
    emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, 3));
    emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_0, STACK_FRAMES_SHIFT));
    emit(g, I_ALU64_REG(BPF_OR, r, BPF_REG_0));
    patch_here(g, failed);
  }
  if (user) {
    int pid = emit_task_id(g, true, false);
    emit_first_sight(g, pid);
    emit(g, I_ALU64_IMM(BPF_LSH, pid, 32));
    emit(g, I_ALU64_REG(BPF_OR, r, pid));
    reg_free(g, pid);
  }
  return r;
}

/* len(stack): the frame count kept in the value. */
int stack_emit_len(Gen *g, Node *n) {
  int r = gen_int(g, n->args);
  emit(g, I_ALU64_IMM(BPF_RSH, r, STACK_FRAMES_SHIFT));
  emit(g, I_ALU64_IMM(BPF_AND, r, 0xff));
  return r;
}

/* usym(addr): the address, and above it the pid when both fit. */
static int emit_usym(Gen *g, Node *n) {
  int r = gen_int(g, n->args);
  int pid = emit_task_id(g, true, false);
  emit(g, I_MOV64_REG(BPF_REG_0, r));
  emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, USYM_ADDR_BITS));
  int high = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  int big = emit_jump(g, I_JMP_IMM(BPF_JGT, pid, USYM_PID_MAX, 0));
  emit(g, I_ALU64_IMM(BPF_LSH, pid, USYM_ADDR_BITS));
  emit(g, I_ALU64_REG(BPF_OR, r, pid));
  patch_here(g, high);
  patch_here(g, big);
  reg_free(g, pid);
  return r;
}

/* uaddr() in a PIE or a library: the probed function's address now (the
 * instruction pointer at a uprobe) plus the symbol's distance from it. */
static int emit_uaddr(Gen *g, Node *n) {
  uint64_t func = 0;
  Target *t = g->target;
  if (!t || !t->binary ||
      !usyms_offset_to_vaddr(t->binary, t->offset, &func)) {
    fail(g, n->span, "uaddr(\"%s\"): cannot tell where the probed "
         "function is in its binary", n->args->sval);
    return reg_alloc(g);
  }
  int r = reg_alloc(g);
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, PT_REGS_IP));
  int64_t delta = n->ival - (int64_t)func;
  if (delta >= INT32_MIN && delta <= INT32_MAX) {
    emit(g, I_ALU64_IMM(BPF_ADD, r, (int32_t)delta));
  } else {
    emit_imm64(g, BPF_REG_0, delta);
    emit(g, I_ALU64_REG(BPF_ADD, r, BPF_REG_0));
  }
  return r;
}

const Builtin builtins_stack[] = {
    {.name = "kstack", .form = BI_WORD, .has_value = true,
     .check = check_stack, .emit_int = emit_stack},
    {.name = "ustack", .form = BI_WORD, .has_value = true,
     .check = check_stack, .emit_int = emit_stack, .event = EV_PROCESS_SEEN,
     .on_event = on_process_seen, .effects = true},
    {.name = "kstack", .form = BI_CALL, .min_args = 0, .max_args = -1,
     .has_value = true, .check = check_stack, .emit_int = emit_stack},
    {.name = "ustack", .form = BI_CALL, .min_args = 0, .max_args = -1,
     .has_value = true, .check = check_stack, .emit_int = emit_stack,
     .effects = true},
    {.name = "ksym", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_symbol,
     .emit_int = emit_first_argument},
    {.name = "usym", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_symbol, .emit_int = emit_usym},
    {.name = "uaddr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_uaddr, .emit_int = emit_uaddr},
    {0},
};
