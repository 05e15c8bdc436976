/* context: the builtin words that describe where and when a probe fired —
 * the task (pid, tid, uid, gid, comm, cgroup, curtask), the time (nsecs,
 * elapsed), the CPU, random numbers, the probe itself (probe, func), and
 * the probed code's arguments (args, arg0..arg5, retval). */
#include <bpf/libbpf.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>

#include "builtins/builtin.h"
#include "lang/config.h"
#include "lang/ctype.h"
#include "probes/provider.h"
#include "probes/syscalls.h"

/* The inode number of the initial PID namespace (include/linux/proc_ns.h). */
#define PROC_PID_INIT_INO 0xEFFFFFFCU

/* ---- checks ---------------------------------------------------------- */

static void check_u32(Checker *c, Node *n) { n->type = ty_int(4, false); }
static void check_u64(Checker *c, Node *n) { n->type = ty_int(8, false); }

static void check_cpid(Checker *c, Node *n) {
  if (!c->script->settings->has_command) {
    error_at(c, n->span, "cpid cannot be used without child command");
    return;
  }
  n->kind = N_INT;   /* the child exists before the script is compiled */
  n->ival = c->script->settings->cpid;
  n->type = ty_int(4, false);
}

/* The argument of nsecs(clock), pid(ns) and tid(ns): one of `names`,
 * as a bare word; its index goes to n->ival. */
static void check_mode_arg(Checker *c, Node *n, const char *const names[],
                           const char *what) {
  Node *a = n->args;
  if (!a) {
    n->ival = 0;
    return;
  }
  for (int i = 0; names[i]; i++)
    if (a->kind == N_BUILTIN && !strcmp(a->name, names[i])) {
      n->ival = i;
      return;
    }
  error_at(c, a->span, "%s() expects %s", n->name, what);
}

static void check_nsecs_call(Checker *c, Node *n) {
  static const char *const clocks[] = {"monotonic", "boot", "tai", "sw_tai",
                                       NULL};
  check_mode_arg(c, n, clocks, "a clock: monotonic, boot, tai or sw_tai");
  n->type = ty_int(8, false);
}

static void check_task_id_call(Checker *c, Node *n) {
  static const char *const spaces[] = {"curr_ns", "init", NULL};
  check_mode_arg(c, n, spaces, "a PID namespace: curr_ns or init");
  n->type = ty_int(4, false);
}

/* ppid / pcomm [(task)]: task->real_parent->tgid / ->comm, and
 * leader_comm [(task)]: task->group_leader->comm, the task being curtask
 * without an argument. The call becomes that field access, which the
 * checker types from BTF. */
static void check_task_link_field(Checker *c, Node *n, const char *link,
                                  const char *field) {
  Node *task = n->args;
  if (!task) {
    task = node_new(N_BUILTIN, n->span);
    task->name = "curtask";
  }
  Node *parent = node_new(N_FIELD, n->span);
  parent->lhs = task;
  parent->name = (char *)link;
  n->kind = N_FIELD;
  n->lhs = parent;
  n->name = (char *)field;
  n->args = NULL;
  n->builtin = NULL;
  check_expr(c, n);
}

static void check_ppid(Checker *c, Node *n) {
  check_task_link_field(c, n, "real_parent", "tgid");
  if (n->type.kind == TY_INT) n->type = ty_int(4, false);
}

static void check_pcomm(Checker *c, Node *n) {
  check_task_link_field(c, n, "real_parent", "comm");
}

static void check_leader_comm(Checker *c, Node *n) {
  check_task_link_field(c, n, "group_leader", "comm");
}

/* leader_tid [(task)]: task->group_leader->pid */
static void check_leader_tid(Checker *c, Node *n) {
  check_task_link_field(c, n, "group_leader", "pid");
  if (n->type.kind == TY_INT) n->type = ty_int(4, false);
}

/* is_integer(e), is_unsigned_integer, is_ptr, is_str, is_array,
 * is_literal: what the type of e is, a constant; e is not evaluated. */
static void check_type_predicate(Checker *c, Node *n) {
  Node *a = n->args;
  bool literal = a->kind == N_INT || a->kind == N_STR ||
                 (a->kind == N_BUILTIN && (!strcmp(a->name, "true") ||
                                           !strcmp(a->name, "false")));
  check_expr(c, a);
  Type t = a->type;
  if (t.kind == TY_NONE) return;
  bool integer = t.kind == TY_INT && !t.is_pointer && !t.is_bool;
  bool array = (t.kind == TY_CVAL || t.kind == TY_RECORD) && t.ctype &&
               t.ctype->kind == C_ARRAY;
  bool v = !strcmp(n->name, "is_integer")            ? integer
           : !strcmp(n->name, "is_unsigned_integer") ? integer && !t.is_signed
           : !strcmp(n->name, "is_ptr")  ? t.kind == TY_INT && t.is_pointer
           : !strcmp(n->name, "is_str")  ? t.kind == TY_STR
           : !strcmp(n->name, "is_array") ? array
                                          : literal;
  n->kind = N_INT;
  n->ival = v;
  n->args = NULL;
  n->type = ty_bool();
}

/* static_assert(cond, "message"): cond, a constant, must hold, or the
 * script does not compile (the code generator folds it: emit_static_
 * assert). */
static void check_static_assert(Checker *c, Node *n) {
  Node *cond = n->args, *msg = cond->next;
  check_expr(c, cond);
  if (!msg || msg->kind != N_STR) {
    error_at(c, n->span, "static_assert() expects a condition and a string "
             "literal message");
    return;
  }
  if (cond->type.kind != TY_NONE && !want_int(c, n, cond)) return;
  n->type = ty_void();
}

static bool emit_static_assert(Gen *g, Node *n) {
  int64_t v;
  if (!fold(g, n->args, &v))
    fail(g, n->args->span, "%s", "static_assert(): the condition must be "
         "known when the script is compiled");
  else if (!v)
    fail(g, n->span, "%s", n->args->next->sval);
  return false;
}

/* strcap(s): the capacity of a string or array value, a constant. */
static void check_strcap(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  Type t = a->type;
  if (t.kind == TY_NONE) return;
  int64_t cap;
  if (t.kind == TY_STR)
    cap = t.size;
  else if ((t.kind == TY_CVAL || t.kind == TY_RECORD) && t.ctype &&
           t.ctype->kind == C_ARRAY)
    cap = t.ctype->nelems;
  else {
    error_at(c, a->span, "strcap() expects a string or an array (%s "
             "provided)", kind_name(t));
    return;
  }
  n->kind = N_INT;
  n->ival = cap;
  n->args = NULL;
  n->type = ty_int(8, true);
}

/* assert_str(v): a compile-time check that v is string-like: a string, a
 * char array or a char pointer; v is not evaluated. */
static void check_assert_str(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  Type t = a->type;
  if (t.kind == TY_NONE) return;
  const CType *elem = NULL;
  if ((t.kind == TY_CVAL || t.kind == TY_RECORD) && t.ctype &&
      t.ctype->kind == C_ARRAY)
    elem = t.ctype->target;
  else if (t.kind == TY_INT && t.is_pointer && t.ctype)
    elem = t.ctype;
  bool chars = elem && elem->kind == C_INT && elem->size == 1;
  if (t.kind != TY_STR && !chars)
    error_at(c, a->span, "assert_str() expects a string, a char array or a "
             "char pointer (%s provided)", kind_name(t));
}

static bool emit_nothing(Gen *g, Node *n) {
  (void)g;
  (void)n;
  return false;
}

/* default_str_length: the size strings have unless the script says
 * otherwise (max_strlen), a constant. */
static void check_default_str_length(Checker *c, Node *n) {
  n->kind = N_INT;
  n->ival = c->strlen;
  n->args = NULL;
  n->type = ty_int(8, true);
}

/* has_cpid: whether cpid has a value (a -c command runs): a constant. */
static void check_has_cpid(Checker *c, Node *n) {
  n->kind = N_INT;
  n->ival = c->script->settings->has_command;
  n->type = ty_bool();
}

/* getopt("name"[, default[, "description"]]): the value of --name or
 * --name=value after "--" on the command line, typed by the default (a
 * bool without one), folded into a constant. */
static bool bool_word(const char *v, bool *out) {
  if (!v || !strcasecmp(v, "true") || !strcmp(v, "1")) return *out = true;
  if (!strcasecmp(v, "false") || !strcmp(v, "0")) return !(*out = false);
  return false;
}

static void check_getopt(Checker *c, Node *n) {
  Node *name = n->args, *dflt = name->next;
  if (name->kind != N_STR || (dflt && dflt->next && dflt->next->kind != N_STR)) {
    error_at(c, n->span, "getopt() expects a string literal name, a default "
             "value and a string literal description");
    return;
  }
  if (dflt) check_expr(c, dflt);
  int64_t dv = 0;
  bool is_str = dflt && dflt->kind == N_STR;
  bool is_bool = !dflt || dflt->type.is_bool;
  if (dflt && !is_str && !const_int(dflt, &dv)) {
    error_at(c, dflt->span, "getopt(): the default must be a literal");
    return;
  }
  ProgramOption *o = NULL;
  for (int i = 0; i < c->script->noptions; i++)
    if (!strcmp(c->script->options[i].name, name->sval))
      o = &c->script->options[i];
  if (o) o->used = true;
  script_add_getopt_name(c->script, name->sval,
                         dflt && dflt->next ? dflt->next->sval : NULL);
  const char *v = o ? o->value : NULL;
  if (is_str) {
    const char *text = o ? (v ? v : "") : dflt->sval;
    n->kind = N_STR;
    n->sval = (char *)text;
    n->slen = (int)strlen(text);
    n->name = NULL;
    n->type = ty_str(n->slen + 1);
    return;
  }
  int64_t value = dv;
  bool b = dv != 0;
  if (o && is_bool && !bool_word(v, &b)) {
    error_at(c, n->span, "program command line option --%s invalid boolean "
             "(value: %s)", o->name, v);
    return;
  }
  if (o && !is_bool) {
    char *end = NULL;
    value = v && *v == '-' ? strtoll(v, &end, 0)
                           : (int64_t)strtoull(v ? v : "", &end, 0);
    if (!v || !*v || *end) {
      error_at(c, n->span, "program command line option --%s invalid "
               "integer (value: %s)", o->name, v ? v : "");
      return;
    }
  }
  n->kind = N_INT;
  n->ival = is_bool ? b : value;
  n->type = is_bool ? ty_bool() : ty_int(8, dv < 0 || (v && *v == '-'));
}

/* ncpus: the CPUs the kernel may bring up (possible CPUs), a constant. */
static void check_ncpus(Checker *c, Node *n) {
  int k = libbpf_num_possible_cpus();
  n->kind = N_INT;
  n->ival = k > 0 ? k : 1;
  n->type = ty_int(8, false);
}

/* config and config(): every setting's value, as a record whose fields
 * are the settings' names (config.max_strlen), made of literals. */
static void check_config(Checker *c, Node *n) {
  Node *rec = config_record(c->script, n->span), *next = n->next;
  *n = *rec;
  n->next = next;
  check_expr(c, n);
}

/* true and false are bool constants. */
static void check_true(Checker *c, Node *n) {
  n->kind = N_INT;
  n->ival = 1;
  n->type = ty_bool();
}

static void check_false(Checker *c, Node *n) {
  n->kind = N_INT;
  n->ival = 0;
  n->type = ty_bool();
}

static void check_curtask(Checker *c, Node *n) {
  char err[200];
  const CType *task = ctype_parse("struct task_struct", err, sizeof(err));
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
  n->type.ctype = task;   /* NULL without BTF: a plain address */
}

static void check_comm(Checker *c, Node *n) { n->type = ty_str(COMM_SIZE); }

/* comm(pid): the name of the thread with that pid (as the initial PID
 * namespace numbers it), "" if there is none. The kernel functions
 * bpf_task_from_pid and bpf_task_release (kfuncs, Linux 6.2 and later)
 * find the task and let it go; its comm is read in between. */
static void check_comm_call(Checker *c, Node *n) {
  Node *pid = n->args;
  if (!pid) {
    check_comm(c, n);
    return;
  }
  check_expr(c, pid);
  if (!want_int(c, n, pid)) return;
  char err[200];
  const CType *task = ctype_parse("struct task_struct", err, sizeof err);
  CField comm;
  if (!task || !ctype_field(task, "comm", &comm)) {
    error_at(c, n->span, "comm(pid) needs the kernel's BTF (%s)",
             task ? "struct task_struct has no comm" : err);
    return;
  }
  if (!ctype_is_kfunc("bpf_task_from_pid") ||
      !ctype_is_kfunc("bpf_task_release")) {
    error_at(c, n->span, "comm(pid) needs the kernel functions "
             "bpf_task_from_pid and bpf_task_release (Linux 6.2 and "
             "later), which this kernel does not have; comm alone is the "
             "current thread's name");
    return;
  }
  n->ival = comm.offset;
  n->type = ty_str(COMM_SIZE);
  /* raw tracepoints load as tracing programs (tp_btf), which may */
  if (PROBE_ALL(c->probe, tracing_on_demand, true))
    c->probe->wants_tracing = true;
}

/* usermode reads the interrupted registers' privilege level from the
 * context of kprobes, uprobes and perf events. */
static void check_usermode(Checker *c, Node *n) {
  if (c->frame != 0) {
    error_at(c, n->span, "usermode can not be used inside a for loop over "
             "a map (its body runs as a separate function); copy it into a "
             "variable first");
    return;
  }
  c->probe->uses_ctx = true;
  n->type = ty_int(1, false);
}

/* The probe type's name: the provider's probetype, else its name. */
static const char *probe_type_name(const AttachPoint *ap) {
  const Provider *prov = ap_provider(ap);
  return prov && prov->probetype ? prov->probetype : ap->provider;
}

static void check_probetype(Checker *c, Node *n) {
  int size = 1;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
    if ((int)strlen(probe_type_name(ap)) + 1 > size)
      size = (int)strlen(probe_type_name(ap)) + 1;
  n->type = ty_str(size);
}

/* `probe` and `func` are constants of each target's program, or read by
 * a program serving many targets through its cookie (names_by_cookie),
 * which needs the context. */
static void uses_target_name(Checker *c) {
  c->probe->uses_target_name = true;
  for (const AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
    if (ap->prov && ap->prov->names_by_cookie) c->probe->uses_ctx = true;
}

static void check_probe(Checker *c, Node *n) {
  uses_target_name(c);
  n->type = ty_str(probe_name_size(c->probe));
}

static void check_args(Checker *c, Node *n) {
  if (c->frame != 0) {
    error_at(c, n->span, "args can not be used inside a for loop over a "
             "map (its body runs as a separate function); copy what you "
             "need into a map first");
    return;
  }
  if (PROBE_ALL(c->probe, user_space, true)) {
    check_uprobe_args(c, n);
    return;
  }
  if (!PROBE_ALL(c->probe, args, ARGS_FIELDS)) {
    error_at(c, n->span, "The args builtin can only be used with "
             "tracepoint, rawtracepoint, fentry, fexit and uprobe probes");
    return;
  }
  c->probe->uses_args = c->probe->uses_ctx = true;
  n->type.kind = TY_ARGS;
  if (!c->args_not_whole) check_args_record(c, n);
}

/* args as one value: a uprobe's registers (uprobe_args.c), or else the
 * record check_args_record laid out, filled field by field as args.NAME
 * reads each from this program's target. */
static void emit_args(Gen *g, Node *n, int dst, int cap) {
  if (g->target && g->target->binary) {
    emit_uprobe_args(g, n, dst, cap);
    return;
  }
  const CField *fs;
  int k = ctype_fields(n->type.ctype, &fs);
  emit_zero(g, dst, cap);
  for (int i = 0; i < k; i++) {
    const CType *ct = fs[i].type;
    Node field = {.kind = N_FIELD, .span = n->span, .name = (char *)fs[i].name,
                  .type = ty_int(ct->size, ct->is_signed)};
    if (ct->kind == C_ARRAY) {
      field.type = ty_str(ct->size);
      gen_field_str(g, &field, dst + fs[i].offset, ct->size);
      continue;
    }
    int r = gen_field_int(g, &field);
    emit(g, I_STX(insn_size_code(ct->size), SCRATCH, r, dst + fs[i].offset));
    reg_free(g, r);
  }
}

/* The provider of the first attach point of the probe whose provider
 * reads argN itself (usdt), or NULL. */
static const Provider *probe_own_argn(const Probe *p) {
  for (const AttachPoint *ap = p->aps; ap; ap = ap->next) {
    const Provider *prov = ap_provider(ap);
    if (prov && prov->argn == ARGN_OWN) return prov;
  }
  return NULL;
}

/* Whether n, which reads the probe's context, is in the probe's own
 * frame: a for loop over a map runs its body as a function of its own,
 * which has no context. */
static bool in_probe_frame(Checker *c, Node *n) {
  if (c->frame == 0) return true;
  error_at(c, n->span, "%s can not be used inside a for loop over a map "
           "(its body runs as a separate function); copy it into a "
           "variable first", n->name);
  return false;
}

/* Whether argN (n) can be read in every target of the probe, whose
 * attach points are all prov's, as prov's arg_usable says; else an
 * error. */
static bool arg_usable(Checker *c, Node *n, const Provider *prov) {
  char msg[512];
  if (!prov || !prov->arg_usable ||
      prov->arg_usable(c->probe, atoi(n->name + 3), msg, sizeof msg))
    return true;
  error_at(c, n->span, "%s", msg);
  return false;
}

/* argN of a provider that reads it its own way (usdt: where its note
 * says, probes/usdt_args.c), which differs from probe to probe, so each
 * target gets its own program. */
static void check_own_arg(Checker *c, Node *n, const Provider *own) {
  for (const AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
    if (ap_provider(ap) != own) {
      error_at(c, n->span, "%s can not be used in a probe that has %s "
               "and %s attach points", n->name, own->name, ap->provider);
      return;
    }
  if (!in_probe_frame(c, n) || !arg_usable(c, n, own)) return;
  c->probe->uses_ctx = c->probe->uses_probe = true;
  n->type = ty_int(8, true);
  n->type.as = AS_USER;
}

/* fexit's retval: the slot after the arguments, typed as the function
 * returns it. */
static void check_fexit_retval(Checker *c, Node *n) {
  if (c->frame != 0) {
    error_at(c, n->span, "retval can not be used inside a for loop over a "
             "map (its body runs as a separate function); copy it into a "
             "variable first");
    return;
  }
  c->probe->uses_ctx = true;
  check_target_field(c, n, true);
}

/* argN and retval read the probed function's registers from the context. */
static void check_register(Checker *c, Node *n) {
  const char *s = n->name;
  bool is_retval = !strcmp(s, "retval");
  const Provider *own = is_retval ? NULL : probe_own_argn(c->probe);
  if (own) {
    check_own_arg(c, n, own);
    return;
  }
  if (!is_retval && atoi(s + 3) > 5) {   /* stack arguments: not read yet */
    error_at(c, n->span, "loupe does not support the builtin '%s' yet", s);
    return;
  }
  bool slots = PROBE_ALL(c->probe, argn, ARGN_SLOTS);
  if (!is_retval && !PROBE_ALL(c->probe, argn, ARGN_REGS) && !slots) {
    error_at(c, n->span, "The %s builtin can only be used with 'kprobes', "
             "'uprobes' and 'usdt' probes", s);
    return;
  }
  if (is_retval && PROBE_ALL(c->probe, retval, RETVAL_FIELD)) {
    check_fexit_retval(c, n);
    return;
  }
  if (is_retval && !PROBE_ALL(c->probe, retval, RETVAL_REGS)) {
    error_at(c, n->span, "The retval builtin can only be used with "
             "'kretprobe' and 'uretprobe' and 'kfunc' probes (try to use "
             "args->ret instead)");
    return;
  }
  if (!in_probe_frame(c, n)) return;
  if (!is_retval && slots && c->probe->aps &&
      !arg_usable(c, n, ap_provider(c->probe->aps)))
    return;
  c->probe->uses_ctx = true;
  n->type = ty_int(8, false);
  /* Not a pointer type (it prints as a number), but str() of it reads
   * user memory in uprobes. */
  if (PROBE_ALL(c->probe, user_space, true)) n->type.as = AS_USER;
}

/* reg("name"): a register of x86-64's struct pt_regs, in its order. */
static const char *const pt_regs_names[] = {
    "r15", "r14", "r13", "r12", "bp", "bx", "r11", "r10", "r9", "r8", "ax",
    "cx", "dx", "si", "di", "orig_ax", "ip", "cs", "flags", "sp", "ss"};

static void check_reg(Checker *c, Node *n) {
  Node *arg = n->args;
  if (arg->kind != N_STR) {
    error_at(c, arg->span, "reg() expects a string literal: the register's "
             "name (\"ip\", \"sp\", \"di\", ...)");
    return;
  }
  const char *name = !strcmp(arg->sval, "pc") ? "ip" : arg->sval;
  int i = 0, nregs = sizeof pt_regs_names / sizeof pt_regs_names[0];
  while (i < nregs && strcmp(pt_regs_names[i], name)) i++;
  if (i == nregs) {
    error_at(c, arg->span, "'%s' is not a valid register on this "
             "architecture", arg->sval);
    return;
  }
  n->ival = i * 8;
  const char *saved = n->name;
  n->name = "reg";
  check_register(c, n);   /* the same probes and rules as argN */
  n->name = (char *)saved;
}

/* reg(): the register's pt_regs slot, read from the context. */
static int emit_reg(Gen *g, Node *n) {
  int r = reg_alloc(g);
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, (int16_t)n->ival));
  return r;
}

static void check_func(Checker *c, Node *n) {
  const AttachPoint *other = PROBE_ALL(c->probe, func, FUNC_BTF)
                                 ? NULL
                                 : PROBE_OTHER(c->probe, func, FUNC_REGS);
  if (other) {
    error_at(c, n->span, "The func builtin can not be used with '%s' "
             "probes", other->provider);
    return;
  }
  uses_target_name(c);
  n->type = ty_str(func_name_size(c->probe));
}

/* ---- code ------------------------------------------------------------ */

/* r = helper() >> shift, as a 32-bit value. */
static int emit_helper_u32(Gen *g, int helper, int shift) {
  int r = reg_alloc(g);
  emit_call(g, helper);
  if (shift) emit(g, I_ALU64_IMM(BPF_RSH, BPF_REG_0, shift));
  emit(g, I_MOV32_REG(r, BPF_REG_0));
  return r;
}

static int emit_helper_u64(Gen *g, int helper) {
  int r = reg_alloc(g);
  emit_call(g, helper);
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  return r;
}

/* loupe's PID namespace, when it is not the initial one: pid and tid are
 * then the numbers that namespace sees, as in bpftrace. */
static bool pid_namespace(uint64_t *dev, uint64_t *ino) {
  struct stat st;
  if (stat("/proc/self/ns/pid", &st) != 0) return false;
  if (st.st_ino == PROC_PID_INIT_INO) return false;
  *dev = st.st_dev;
  *ino = st.st_ino;
  return true;
}

/* pid (word = 4 bytes at 4: the tgid) or tid (at 0) of the current task;
 * init_ns: as the initial PID namespace numbers it. */
int emit_task_id(Gen *g, bool want_pid, bool init_ns) {
  uint64_t dev, ino;
  if (init_ns || !pid_namespace(&dev, &ino))
    return emit_helper_u32(g, BPF_FUNC_get_current_pid_tgid,
                           want_pid ? 32 : 0);
  int slot = stack_alloc(g, 8);
  emit(g, I_ST(BPF_DW, BPF_REG_10, slot, 0));
  emit_imm64(g, BPF_REG_1, (int64_t)dev);
  emit_imm64(g, BPF_REG_2, (int64_t)ino);
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, slot));
  emit(g, I_MOV64_IMM(BPF_REG_4, 8));
  emit_call(g, BPF_FUNC_get_ns_current_pid_tgid);
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_W, r, BPF_REG_10, slot + (want_pid ? 4 : 0)));
  return r;
}

/* pid and tid, and pid(curr_ns|init), tid(curr_ns|init): ival 1 is init */
static int emit_pid(Gen *g, Node *n) {
  return emit_task_id(g, true, n->kind == N_CALL && n->ival == 1);
}
static int emit_tid(Gen *g, Node *n) {
  return emit_task_id(g, false, n->kind == N_CALL && n->ival == 1);
}
static int emit_uid(Gen *g, Node *n) {
  return emit_helper_u32(g, BPF_FUNC_get_current_uid_gid, 0);
}
static int emit_gid(Gen *g, Node *n) {
  return emit_helper_u32(g, BPF_FUNC_get_current_uid_gid, 32);
}
static int emit_cpu(Gen *g, Node *n) {
  return emit_helper_u32(g, BPF_FUNC_get_smp_processor_id, 0);
}
static int emit_rand(Gen *g, Node *n) {
  return emit_helper_u32(g, BPF_FUNC_get_prandom_u32, 0);
}
enum { CLOCK_MONO, CLOCK_BOOT, CLOCK_TAI_NS, CLOCK_SW_TAI };

static int emit_nsecs(Gen *g, Node *n) {
  int mode = n->kind == N_CALL ? (int)n->ival : CLOCK_MONO;
  if (mode == CLOCK_MONO) return emit_helper_u64(g, BPF_FUNC_ktime_get_ns);
  if (mode == CLOCK_TAI_NS)
    return emit_helper_u64(g, BPF_FUNC_ktime_get_tai_ns);
  int r = emit_helper_u64(g, BPF_FUNC_ktime_get_boot_ns);
  if (mode == CLOCK_SW_TAI) {
    /* TAI less boot time, read now in user space, added to boot time */
    struct timespec tai, boot;
    clock_gettime(CLOCK_TAI, &tai);
    clock_gettime(CLOCK_BOOTTIME, &boot);
    int64_t off = (tai.tv_sec - boot.tv_sec) * 1000000000LL +
                  (tai.tv_nsec - boot.tv_nsec);
    emit_imm64(g, BPF_REG_1, off);
    emit(g, I_ALU64_REG(BPF_ADD, r, BPF_REG_1));
  }
  return r;
}
static int emit_curtask(Gen *g, Node *n) {
  return emit_helper_u64(g, BPF_FUNC_get_current_task);
}
static int emit_jiffies(Gen *g, Node *n) {
  return emit_helper_u64(g, BPF_FUNC_jiffies64);
}
static int emit_numaid(Gen *g, Node *n) {
  return emit_helper_u32(g, BPF_FUNC_get_numa_node_id, 0);
}

/* x86-64: the low two bits of the saved cs are 3 in user mode. BEGIN and
 * END run on behalf of loupe itself, a user process; tracepoints always
 * fire in the kernel. */
#define PT_REGS_CS 136
static int emit_usermode(Gen *g, Node *n) {
  int r = reg_alloc(g);
  const Provider *prov = ap_provider(g->p->ap);
  bool special = prov && prov->in_user_mode;
  if (g->p->prog_type != BPF_PROG_TYPE_KPROBE &&
      g->p->prog_type != BPF_PROG_TYPE_PERF_EVENT) {
    emit(g, I_MOV64_IMM(r, special ? 1 : 0));
    return r;
  }
  /* a perf event's context starts with the interrupted pt_regs */
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, PT_REGS_CS));
  emit(g, I_ALU64_IMM(BPF_AND, r, 3));
  emit(g, I_JMP_IMM(BPF_JEQ, r, 3, 2));
  emit(g, I_MOV64_IMM(r, 0));
  emit(g, I_JA(1));
  emit(g, I_MOV64_IMM(r, 1));
  return r;
}

static void emit_probetype(Gen *g, Node *n, int dst, int cap) {
  const char *name = probe_type_name(g->p->ap);
  emit_literal(g, name, (int)strlen(name), dst, cap);
}

static int emit_cgroup(Gen *g, Node *n) {
  return emit_helper_u64(g, BPF_FUNC_get_current_cgroup_id);
}

/* nsecs less the start time user space stored in the elapsed map. */
static int emit_elapsed(Gen *g, Node *n) {
  int r = emit_helper_u64(g, BPF_FUNC_ktime_get_ns);
  int miss = emit_lookup_slot0(g, find_map(g, ELAPSED_MAP_NAME))
      ? emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0)) : -1;
  emit(g, I_LDX(BPF_DW, BPF_REG_1, BPF_REG_0, 0));
  emit(g, I_ALU64_REG(BPF_SUB, r, BPF_REG_1));
  if (miss >= 0) patch_here(g, miss);
  return r;
}

/* sargN: the Nth argument passed on the stack (x86-64: above the return
 * address, 8 bytes each, at the probed function's entry), in kprobes and
 * uprobes, as bpftrace documents it. */
#define PT_REGS_SP 152
#define MAX_STACK_ARG 1023
static void check_stack_arg(Checker *c, Node *n) {
  long index = strtol(n->name + 4, NULL, 10);
  if (index > MAX_STACK_ARG) {
    error_at(c, n->span, "%s: loupe reads the stack arguments sarg0 to "
             "sarg%d", n->name, MAX_STACK_ARG);
    return;
  }
  if (!PROBE_ALL(c->probe, argn, ARGN_REGS)) {
    error_at(c, n->span, "The %s builtin can only be used with 'kprobes' and "
             "'uprobes' probes", n->name);
    return;
  }
  if (!in_probe_frame(c, n)) return;
  c->probe->uses_ctx = true;
  n->ival = index;
  n->type = ty_int(8, false);
  /* a pointer found there points where the probe's code runs */
  n->type.as = PROBE_ALL(c->probe, user_space, true) ? AS_USER : AS_KERNEL;
}

static int emit_stack_arg(Gen *g, Node *n) {
  int r = reg_alloc(g);
  int slot = stack_alloc(g, 8);
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, BPF_REG_3, r, PT_REGS_SP));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, 8 * ((int)n->ival + 1)));
  emit(g, I_MOV64_REG(BPF_REG_1, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_1, slot));
  emit(g, I_MOV64_IMM(BPF_REG_2, 8));
  emit_call(g, read_helper(n->type.as));
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
  return r;
}

/* argN and retval: read from the context as the attach point's provider
 * says (probes/regs.c for kprobes and uprobes). */
static int emit_register(Gen *g, Node *n) {
  const Provider *prov = g->p->ap->prov;
  bool is_retval = !strcmp(n->name, "retval");
  if (is_retval ? !prov->emit_retval : !prov->emit_arg) {
    fail(g, n->span, "loupe cannot generate code for '%s' yet", n->name);
    return reg_alloc(g);
  }
  return is_retval ? prov->emit_retval(g, n)
                   : prov->emit_arg(g, atoi(n->name + 3));
}

/* bpf_get_current_comm pads the name with zeros only on newer kernels
 * (strscpy_pad); 6.1's strscpy leaves the bytes after the NUL as they
 * were, which would make comm map keys and comparisons differ by stack
 * garbage. Where the kernel was found to pad (kernel_pads_comm), only what
 * lies beyond the helper's 16 bytes is zeroed. */
static void emit_comm_at(Gen *g, Node *n, int base, int off, int cap) {
  emit_addr(g, BPF_REG_1, base, off);
  emit(g, I_MOV64_IMM(BPF_REG_2, COMM_SIZE));
  emit_call(g, BPF_FUNC_get_current_comm);
}

static void emit_comm(Gen *g, Node *n, int dst, int cap) {
  if (g->st->comm_padded && g->st->comm_padded()) {
    if (cap > COMM_SIZE) emit_zero(g, dst + COMM_SIZE, cap - COMM_SIZE);
  } else {
    emit_zero_padding(g, n, dst, COMM_SIZE, cap);
  }
  emit_comm_at(g, n, SCRATCH, dst, cap);
}

/* comm() of another task is read through it: only comm without one is
 * written in place. */
static bool comm_at_ok(const Node *n) { return !n->args; }

static void emit_comm_call(Gen *g, Node *n, int dst, int cap) {
  if (!n->args) {
    emit_comm(g, n, dst, cap);
    return;
  }
  int pid = gen_int(g, n->args);
  emit(g, I_MOV64_REG(BPF_REG_1, pid));
  reg_free(g, pid);
  emit_kfunc_call(g, ctype_kernel_func_id("bpf_task_from_pid"));
  int found = emit_jump(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 0));
  emit_zero(g, dst, cap);   /* no such task: "" */
  int done = emit_jump(g, I_JA(0));
  patch_here(g, found);
  int task = reg_alloc(g);   /* r6..r8: kept across the read */
  emit(g, I_MOV64_REG(task, BPF_REG_0));
  if (cap > COMM_SIZE) emit_zero(g, dst + COMM_SIZE, cap - COMM_SIZE);
  emit_scratch(g, BPF_REG_1, dst);
  emit(g, I_MOV64_IMM(BPF_REG_2, COMM_SIZE));
  emit(g, I_MOV64_REG(BPF_REG_3, task));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, (int32_t)n->ival));
  emit_call(g, BPF_FUNC_probe_read_kernel);
  emit(g, I_MOV64_REG(BPF_REG_1, task));
  reg_free(g, task);
  emit_kfunc_call(g, ctype_kernel_func_id("bpf_task_release"));
  patch_here(g, done);
}

/* A program serving many targets of a provider that gives each target
 * a cookie: its `probe` and `func` are read by that (emit_target_name). */
static bool names_by_cookie(const Gen *g) {
  return !g->target && g->p->ap && g->p->ap->prov->names_by_cookie;
}

/* probe and func are constants of each target's program. */
static void emit_probe(Gen *g, Node *n, int dst, int cap) {
  if (g->p->syscall_group & SYSCALL_NUMBERED) {   /* many tracepoints */
    syscall_raw_probe_name(g, dst, cap);
    return;
  }
  if (names_by_cookie(g)) {
    emit_target_name(g, false, dst, cap);
    return;
  }
  const char *name = g->target ? g->target->name : g->p->ap->text;
  emit_literal(g, name, (int)strlen(name), dst, cap);
}

static void emit_func(Gen *g, Node *n, int dst, int cap) {
  if (names_by_cookie(g)) {
    emit_target_name(g, true, dst, cap);
    return;
  }
  if (!g->target || !g->target->event) {
    fail(g, n->span, "loupe cannot generate code for '%s' yet", n->name);
    return;
  }
  emit_literal(g, g->target->event, (int)strlen(g->target->event), dst,
               cap);
}

/* ctx: the address of the program's context (pt_regs for kprobes and
 * uprobes, bpf_perf_event_data for perf events, the record of a
 * tracepoint), of no type: it is read through a cast. */
static void check_ctx(Checker *c, Node *n) {
  c->probe->uses_ctx = true;   /* the prologue keeps it */
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
  /* an iterator's: its fields (ctx.task, ...) read as a tracepoint's
   * args are, from the u64 slots of the context (iter.c) */
  const AttachPoint *ap = c->probe->aps;
  const Provider *prov = ap ? ap_provider(ap) : NULL;
  if (prov && prov->ctx_is_args) {
    c->probe->uses_args = true;
    n->type = (Type){.kind = TY_ARGS};
  }
}

static int emit_ctx_word(Gen *g, Node *n) {
  int r = reg_alloc(g);
  emit_ctx(g, r);
  return r;
}

#define WORD(name_, check_, emit)                                        \
  {.name = name_, .form = BI_WORD, .check = check_, .emit_int = emit}
#define STRING_WORD(name_, check_, emit)                                 \
  {.name = name_, .form = BI_WORD, .check = check_, .emit_buf = emit}
#define NOT_YET(name_) {.name = name_, .form = BI_WORD}

const Builtin builtins_context[] = {
    WORD("pid", check_u32, emit_pid),
    WORD("tid", check_u32, emit_tid),
    WORD("uid", check_u64, emit_uid),
    WORD("gid", check_u64, emit_gid),
    WORD("cpu", check_u32, emit_cpu),
    WORD("rand", check_u32, emit_rand),
    WORD("nsecs", check_u64, emit_nsecs),
    {.name = "elapsed", .form = BI_WORD, .check = check_u64,
     .emit_int = emit_elapsed, .own_map = ELAPSED_MAP_NAME},
    WORD("cgroup", check_u64, emit_cgroup),
    WORD("jiffies", check_u64, emit_jiffies),
    WORD("numaid", check_u32, emit_numaid),
    WORD("usermode", check_usermode, emit_usermode),
    STRING_WORD("probetype", check_probetype, emit_probetype),
    WORD("curtask", check_curtask, emit_curtask),
    WORD("ctx", check_ctx, emit_ctx_word),
    WORD("cpid", check_cpid, NULL),   /* folded to its value by check */
    WORD("ncpus", check_ncpus, NULL), /* likewise */
    WORD("config", check_config, NULL),   /* a record of literals */
    {.name = "config", .form = BI_CALL, .min_args = 0, .max_args = 0,
     .has_value = true, .check = check_config},
    WORD("true", check_true, NULL),
    WORD("false", check_false, NULL),
    {.name = "comm", .form = BI_WORD, .check = check_comm,
     .emit_buf = emit_comm, .emit_buf_at = emit_comm_at},
    STRING_WORD("probe", check_probe, emit_probe),
    STRING_WORD("func", check_func, emit_func),
    /* tracepoints: read through its fields; uprobes: a value too */
    STRING_WORD("args", check_args, emit_args),
    WORD("arg0", check_register, emit_register),
    WORD("arg1", check_register, emit_register),
    WORD("arg2", check_register, emit_register),
    WORD("arg3", check_register, emit_register),
    WORD("arg4", check_register, emit_register),
    WORD("arg5", check_register, emit_register),
    /* arg6..arg11: usdt probes have up to 12 arguments */
    WORD("arg6", check_register, emit_register),
    WORD("arg7", check_register, emit_register),
    WORD("arg8", check_register, emit_register),
    WORD("arg9", check_register, emit_register),
    WORD("arg10", check_register, emit_register),
    WORD("arg11", check_register, emit_register),
    WORD("retval", check_register, emit_register),
    /* the forms with an argument; without one, any word can be called */
    {.name = "nsecs", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_nsecs_call, .emit_int = emit_nsecs},
    {.name = "pid", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_task_id_call, .emit_int = emit_pid},
    {.name = "tid", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_task_id_call, .emit_int = emit_tid},
    {.name = "ppid", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_ppid},
    {.name = "comm", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_comm_call, .emit_buf = emit_comm_call,
     .emit_buf_at = emit_comm_at, .buf_at_ok = comm_at_ok},
    {.name = "pcomm", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_pcomm},
    WORD("ppid", check_ppid, NULL),   /* rewritten by check into fields */
    STRING_WORD("pcomm", check_pcomm, NULL),
    {.name = "leader_comm", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_leader_comm},
    STRING_WORD("leader_comm", check_leader_comm, NULL),
    {.name = "leader_tid", .form = BI_CALL, .min_args = 0, .max_args = 1,
     .has_value = true, .check = check_leader_tid},
    WORD("leader_tid", check_leader_tid, NULL),
    {.name = "has_cpid", .form = BI_CALL, .min_args = 0, .max_args = 0,
     .has_value = true, .check = check_has_cpid},
    WORD("has_cpid", check_has_cpid, NULL),
    {.name = "is_integer", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_type_predicate},
    {.name = "is_unsigned_integer", .form = BI_CALL, .min_args = 1,
     .max_args = 1, .has_value = true, .check = check_type_predicate},
    {.name = "is_ptr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_type_predicate},
    {.name = "is_str", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_type_predicate},
    {.name = "is_array", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_type_predicate},
    {.name = "is_literal", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_type_predicate},
    {.name = "static_assert", .form = BI_CALL, .min_args = 2, .max_args = 2,
     .check = check_static_assert, .emit_stmt = emit_static_assert},
    {.name = "strcap", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_strcap},
    {.name = "assert_str", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_assert_str, .emit_stmt = emit_nothing},
    {.name = "default_str_length", .form = BI_CALL, .min_args = 0,
     .max_args = 0, .has_value = true, .check = check_default_str_length},
    WORD("default_str_length", check_default_str_length, NULL),
    {.name = "reg", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_reg, .emit_int = emit_reg},
    {.name = "getopt", .form = BI_CALL, .min_args = 1, .max_args = 3,
     .has_value = true, .check = check_getopt},
    WORD("sargN", check_stack_arg, emit_stack_arg),
    {0},
};
