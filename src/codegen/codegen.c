/* codegen: typed AST to eBPF.
 *
 * Where values live:
 * - integers are computed in registers r6..r8 (callee-saved, so they
 *   survive helper calls), handed out by a small allocator; a value that
 *   must be kept while a sibling is computed goes to a stack slot only
 *   when no register is free; scratch variables live in stack slots,
 *   which a last pass (regvars.c) moves into registers where their
 *   lives allow;
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
 * through small shared subprograms, and the last passes drop unreachable
 * code and reloads a register already holds, and put variables in
 * registers.
 *
 * Every buffer has a capacity rounded up to 8 bytes and is zero-padded
 * after its string, so strings compare and hash by whole words. */

#include "codegen/codegen.h"

#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "codegen/gen.h"
#include "probes/syscalls.h"

/* ---- programs ------------------------------------------------------- */

static void prog_name(BpfProg *p, AttachPoint *ap, Target *t) {
  const char *base = t && t->event ? t->event
                     : ap->nparts ? ap->parts[ap->nparts - 1] : ap->provider;
  const char *prefix = ap->prov->prog_prefix ? ap->prov->prog_prefix : "";
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
  if (ap->prov->attach_type)
    p->expected_attach_type = ap->prov->attach_type(ap, t);
  if (t && ap->prov->attach_btf)
    p->attach_btf_id = ap->prov->attach_btf(t, probe->wants_tracing,
                                            &p->attach_prog_id);
  if (p->attach_btf_id && ap->prov->tracing_on_demand) {
    /* a raw tracepoint that must be a tracing program (tp_btf) */
    p->prog_type = BPF_PROG_TYPE_TRACING;
    p->expected_attach_type = BPF_TRACE_RAW_TP;
  }
  if (p->attach_btf_id && !p->attach_prog_id && t->category &&
      strcmp(t->category, "vmlinux"))
    p->attach_btf_module = t->category;
  prog_name(p, ap, t);
  return p;
}

/* The program's body, with buffers on the stack (buf_base r10) or in the
 * scratch area (r9): the per-CPU one, or the big one when `big`. */
static void gen_body(Gen *g, Probe *probe, int buf_base, bool big) {
  g->p->ninsns = 0;
  g->p->nglobals = 0;
  g->p->nvar_frames = 0;
  g->buf_base = g->main_base = buf_base;
  g->scratch_bias = big ? SCRATCH_SLOT : 0;
  g->too_big = false;
  g->frame = 0;
  free(g->pending);
  g->pending = NULL;
  g->npending = 0;
  memset(g->reg_used, 0, sizeof(g->reg_used));
  for (int sub = 0; sub < g->nsubs; sub++) {
    free(g->subcalls[sub]);
    g->subcalls[sub] = NULL;
    g->nsubcalls[sub] = 0;
  }
  memset(g->full_sites, 0, sizeof(int) * (size_t)g->nmap_slots);
  memset(g->read_sites, 0, sizeof(int) * (size_t)g->nmap_slots);
  memset(g->write_sites, 0, sizeof(int) * (size_t)g->nmap_slots);
  memset(g->out_sites, 0, sizeof g->out_sites);
  g->stack_top = g->stack_max = 16;
  g->scratch_top = g->scratch_max = 0;
  g->span = probe->span;

  /* prologue: keep ctx if fields are read; find the scratch area */
  if (probe->uses_ctx || g->seq_output)
    emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_1, SLOT_CTX));
  if (g->seq_output) {
    /* an iterator calls its program once more after the last object,
     * with none (the pointer after `meta` is NULL): nothing to do then */
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_1, 8));
    emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 1));
    emit(g, I_EXIT());
  }
  /* a raw program for many syscall tracepoints: only their events */
  if (g->p->syscall_group) syscall_raw_prologue(g);
  int exited = find_map(g, EXITED_MAP_NAME);
  if (exited >= 0 && !g->is_end) {
    /* after exit(), nothing but END runs */
    if (emit_lookup_slot0(g, exited))
      emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 4));
    /* r0 only: r1 still holds the context after */
    emit(g, I_LDX(BPF_DW, BPF_REG_0, BPF_REG_0, 0));
    emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 2));
    emit_return(g);
  }
  if (g->pid_filter) {
    /* -p PID: as if /pid == PID/ came first (pid as loupe's PID namespace
     * numbers it, as PID is given) */
    int stack_mark = g->stack_top;
    int r = emit_task_id(g, true, false);
    emit(g, I_JMP_IMM(BPF_JEQ, r, g->pid_filter, 2));
    emit_return(g);
    reg_free(g, r);
    g->stack_top = stack_mark;
  }
  if (buf_base == BPF_REG_9) emit_scratch_base(g);

  place_vars(g, probe);
  note_var_frame(g, 0);
  /* a variable read after the block it was assigned in (bpftrace 0.17's
   * probe-wide variables) reads 0 until assigned */
  for (VarSym *v = probe->vars; v; v = v->next) {
    if (!v->probe_wide || v->frame != 0) continue;
    if (is_buffer(v->type)) {
      emit_zero(g, v->stack_off, value_cap(v->type));
    } else {
      emit(g, I_ST(BPF_DW, BPF_REG_10, v->stack_off, 0));
      v->known = true;
      v->value = 0;
    }
  }
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

/* Whether loupe runs ap's programs itself (BEGIN, END, bench, self),
 * which -p does not filter. */
static bool ap_is_special(const AttachPoint *ap) {
  return ap->prov->attach == NULL;
}

/* Whether a map's full-map counting, its reads or its writes move to
 * global subprograms (emit_update, gen_map_int, gen_map_write): once the
 * program updates it, reads it or writes it GLOBAL_SITES times or more. Two or three instructions a
 * site and the subprogram's six or ten are then no more than the four or
 * nine at every site, and the verifier follows one path where each site
 * made two. The program is then generated again. */
enum { GLOBAL_SITES = 3 };
static bool more_go_global(Gen *g) {
  bool again = false;
  for (int i = 0; i < g->nmap_slots; i++) {
    if (!g->full_global[i] && g->full_sites[i] >= GLOBAL_SITES)
      again = g->full_global[i] = true;
    if (!g->read_global[i] && g->read_sites[i] >= GLOBAL_SITES)
      again = g->read_global[i] = true;
    if (!g->write_global[i] && g->write_sites[i] >= GLOBAL_SITES)
      again = g->write_global[i] = true;
  }
  return again;
}

/* Whether an output subprogram has one site only, where its body then
 * goes (emit_send): fewer instructions, and no call for the verifier to
 * follow. Not for iterators, whose output subprograms use r6-r8. */
static bool more_inlined(Gen *g) {
  bool again = false;
  if (g->seq_output) return false;
  for (int sub = 0; sub < SUB_FULL; sub++)
    if (!g->out_inline[sub] && g->out_sites[sub] == 1)
      again = g->out_inline[sub] = true;
  return again;
}

/* One program for probe at ap: for target t alone, for all of ap's
 * targets (t NULL), or with group set, the raw tracepoint program for
 * that group of ap's syscall tracepoints (codegen/syscall_raw.c). */
static int gen_prog(Gen *g, Probe *probe, AttachPoint *ap, Target *t,
                    int target_pid, int group) {
  BpfProg *p = new_prog(g->c, probe, ap, t);
  if (group) {
    p->syscall_group = group;
    p->prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT;
    p->expected_attach_type = 0;
    snprintf(p->name, sizeof p->name, "tp_%s_rt",
             syscall_group_tracepoint(group));
  }
  g->p = p;
  g->pid_filter = ap_is_special(ap) ? 0 : target_pid;
  g->is_end = ap->prov->run == RUN_AT_END;
  g->seq_output = p->expected_attach_type == BPF_TRACE_ITER;
  g->probe = probe;
  g->target = t;
  memset(g->full_global, 0, sizeof(bool) * (size_t)g->nmap_slots);
  memset(g->read_global, 0, sizeof(bool) * (size_t)g->nmap_slots);
  memset(g->write_global, 0, sizeof(bool) * (size_t)g->nmap_slots);
  memset(g->out_inline, 0, sizeof g->out_inline);
  /* Buffers go on the stack when they fit: no scratch lookup then. */
  gen_body(g, probe, BPF_REG_10, false);
  bool global = !g->failed && more_go_global(g);
  bool inlined = !g->failed && more_inlined(g);
  if (global || inlined)
    gen_body(g, probe, BPF_REG_10, false);
  if (g->too_big && !g->failed) gen_body(g, probe, BPF_REG_9, false);
  if (g->scratch_max > SCRATCH_SLOT && !g->failed) {
    gen_body(g, probe, BPF_REG_9, true);
    if (g->scratch_max > SCRATCH_MAX) {
      char need[32];
      snprintf(need, sizeof need, "%d", g->scratch_max);
      fail(g, probe->span, "this probe's strings and buffers need %s bytes, "
           "more than the 64 KiB loupe can address; lower max_strlen",
           need);
    }
    if ((uint32_t)g->scratch_max > g->c->big_scratch_size)
      g->c->big_scratch_size = (uint32_t)g->scratch_max;
    g->scratch_max = 0;
  }
  if (!g->failed) {
    prune_unreachable(p);
    drop_redundant_loads(p);
    promote_vars(p);
    drop_dead_writes(p);
    forward_copies(p);
    coalesce_copies(p);
    compute_in_place(p);
    share_returns(p);
    drop_unread_ctx_save(p);
    hoist_frame_address(p);
  }
  if ((uint32_t)g->scratch_max > g->c->scratch_size)
    g->c->scratch_size = (uint32_t)g->scratch_max;
  return g->failed ? -1 : 0;
}

/* The targets of ap that get programs of their own kind: those the raw
 * syscall programs do not serve. */
static int targets_left(const AttachPoint *ap) {
  int rest = ap->ntargets;
  for (Target *t = ap->targets; t; t = t->next)
    if (syscall_raw_serves(ap, t)) rest--;
  return rest;
}

/* Whether ap gets one program per target rather than one for all. */
static bool program_per_target(const Probe *probe, const AttachPoint *ap) {
  return probe->uses_args || probe->uses_probe ||
         (probe->uses_target_name && !ap->prov->names_by_cookie) ||
         ap->prov->prog_per_target ||
         probe->wants_tracing;   /* tp_btf programs are tied to theirs */
}

/* How many programs the probe makes: one per target where each needs its
 * own (it reads `probe` or args, or its provider attaches so), else one
 * per attach point; the raw tracepoint programs of syscall groups. */
static int probe_programs(Probe *probe) {
  unsigned raw = syscall_raw_plan(probe);
  int n = 0;
  FOR_EACH_SYSCALL_GROUP(group) n += !!(raw & (unsigned)group);
  for (AttachPoint *ap = probe->aps; ap; ap = ap->next) {
    int rest = targets_left(ap);
    if (rest > 0) n += program_per_target(probe, ap) ? rest : 1;
  }
  return n;
}

/* bpftrace's max_bpf_progs: a wildcard that would make thousands of
 * programs (`kprobe:* { @[probe] = count(); }`) is refused before loading
 * them takes minutes. */
static int check_program_count(Script *s, Diag *d) {
  int total = 0;
  Probe *crossing = NULL;   /* the probe that goes past the limit */
  for (Probe *probe = s->probes; probe; probe = probe->next) {
    total += probe_programs(probe);
    if (total > s->settings->max_bpf_progs && !crossing) crossing = probe;
  }
  if (!crossing) return 0;
  diag_error(d, crossing->aps ? crossing->aps->span : crossing->span,
             "Your program is trying to generate %d BPF programs, which "
             "exceeds the current limit of %d", total,
             s->settings->max_bpf_progs);
  diag_hint(d, "You can increase the limit through the "
            "BPFTRACE_MAX_BPF_PROGS environment variable (or max_bpf_progs "
            "in a config block).");
  return -1;
}

/* The longest `probe` or `func` (with its NUL, in whole words) of the
 * targets whose programs read them by cookie (emit_target_name). */
static int target_name_stride(const Script *s) {
  size_t longest = 0;
  for (const Probe *probe = s->probes; probe; probe = probe->next) {
    if (!probe->uses_target_name) continue;
    for (const AttachPoint *ap = probe->aps; ap; ap = ap->next) {
      if (!ap->prov || !ap->prov->names_by_cookie) continue;
      for (const Target *t = ap->targets; t; t = t->next) {
        if (strlen(t->name) > longest) longest = strlen(t->name);
        if (t->event && strlen(t->event) > longest) longest = strlen(t->event);
      }
    }
  }
  return (int)((longest + 1 + 7) & ~(size_t)7);
}

/* bpftrace's max_probes: a wildcard that matches more places than that
 * (`kprobe:* { ... }`, tens of thousands of functions) is refused before
 * anything is loaded: so many probes slow the system down, or freeze it,
 * and a perf event each can run out of file descriptors. */
static int check_probe_count(Script *s, Diag *d) {
  int total = 0;
  for (Probe *probe = s->probes; probe; probe = probe->next)
    for (AttachPoint *ap = probe->aps; ap; ap = ap->next) {
      if (!ap->prov || !ap->prov->attach) continue;   /* BEGIN, END */
      total += ap->ntargets;
      if (total > s->settings->max_probes) {
        diag_error(d, ap->span, "Can't attach to %d probes because it "
                   "exceeds the current limit of %d probes", total,
                   s->settings->max_probes);
        diag_hint(d, "You can increase the limit through the "
                  "BPFTRACE_MAX_PROBES environment variable (or max_probes "
                  "in a config block), but many probes can slow the system "
                  "down or freeze it.");
        return -1;
      }
    }
  return 0;
}

int codegen_script(Script *s, Compiled *c, Diag *d) {
  if (check_probe_count(s, d) < 0 || check_program_count(s, d) < 0)
    return -1;
  Gen g = {.d = d, .c = c, .st = s->settings,
           .name_stride = target_name_stride(s)};
  g.nmap_slots = c->nmaps + CODEGEN_MAPS;
  g.nsubs = SUB_FULL + 3 * g.nmap_slots;
  g.subcalls = calloc((size_t)g.nsubs, sizeof *g.subcalls);
  g.nsubcalls = calloc((size_t)g.nsubs, sizeof *g.nsubcalls);
  size_t n = (size_t)g.nmap_slots;
  g.full_sites = calloc(n, sizeof *g.full_sites);
  g.full_global = calloc(n, sizeof *g.full_global);
  g.read_sites = calloc(n, sizeof *g.read_sites);
  g.read_global = calloc(n, sizeof *g.read_global);
  g.write_sites = calloc(n, sizeof *g.write_sites);
  g.write_global = calloc(n, sizeof *g.write_global);
  int pid = s->settings->target_pid;   /* -p */
  for (Probe *probe = s->probes; probe; probe = probe->next) {
    /* many syscall tracepoints: one raw tracepoint program per group */
    unsigned raw = syscall_raw_plan(probe);
    FOR_EACH_SYSCALL_GROUP(group)
      if (raw & (unsigned)group &&
          gen_prog(&g, probe, syscall_raw_first_ap(probe, group),
                   syscall_raw_target(probe, group), pid, group))
        goto out;
    for (AttachPoint *ap = probe->aps; ap; ap = ap->next) {
      if (targets_left(ap) == 0) continue;
      if (!program_per_target(probe, ap)) {
        if (gen_prog(&g, probe, ap, ap->ntargets == 1 ? ap->targets : NULL,
                     pid, 0))
          goto out;
        continue;
      }
      for (Target *t = ap->targets; t; t = t->next)
        if (!syscall_raw_serves(ap, t) &&
            gen_prog(&g, probe, ap, t, pid, 0))
          goto out;
    }
  }
  if (c->scratch_size == 0) c->scratch_size = 8;
out:
  for (int sub = 0; sub < g.nsubs; sub++) free(g.subcalls[sub]);
  free(g.subcalls);
  free(g.nsubcalls);
  free(g.full_sites);
  free(g.full_global);
  free(g.read_sites);
  free(g.read_global);
  free(g.write_sites);
  free(g.write_global);
  free(g.pending);
  return g.failed ? -1 : 0;
}
