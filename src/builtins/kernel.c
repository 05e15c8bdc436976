/* kernel: builtins about the kernel itself — kaddr() of a kernel symbol,
 * signal() to the current task, path() of a struct path, is_err() of a
 * returned pointer, kfunc_exist(), override(), unwatch() — and those loupe does not have yet,
 * which the user is told about. */
#define _GNU_SOURCE   /* name_to_handle_at */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"
#include "sym/kallsyms.h"

/* ---- checks ---------------------------------------------------------- */

/* kaddr("sym"): the address of a kernel symbol, from /proc/kallsyms,
 * folded into a constant. */
static void check_kaddr(Checker *c, Node *n) {
  Node *a = n->args;
  /* kaddr(str($1)): the parameter's text is the name */
  if (a->kind == N_CALL && !strcmp(a->name, "str") && a->args &&
      !a->args->next && a->args->kind == N_VAR) {
    c->positional_as_string = true;
    check_expr(c, a->args);
    c->positional_as_string = false;
    if (a->args->kind == N_STR) a = n->args = a->args;
  }
  if (a->kind != N_STR) {
    error_at(c, n->span, "kaddr() expects a string literal");
    return;
  }
  uint64_t addr = 0;
  if (!kallsyms_address(a->sval, &addr)) {
    error_at(c, n->span, "Failed to resolve kernel symbol: %s", a->sval);
    if (c->pass == 2 && !kallsyms_lists_data())   /* after the error */
      diag_hint(c->d, "this kernel's /proc/kallsyms lists functions only "
                "(CONFIG_KALLSYMS_ALL is off): kaddr() cannot find a "
                "variable there");
    return;
  }
  if (addr == 0) {
    error_at(c, n->span, "kaddr(\"%s\"): /proc/kallsyms shows address 0; "
             "kernel addresses are hidden (kptr_restrict) or loupe is not "
             "root", a->sval);
    return;
  }
  n->kind = N_INT;
  n->ival = (int64_t)addr;
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
}

/* override(rc): the probed kernel function does not run and returns rc
 * to its caller (bpf_override_return): in kprobes, with --unsafe, on the
 * functions the kernel lets errors be injected into (its
 * ALLOW_ERROR_INJECTION list, which it checks as it attaches). */
static void check_override(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  if (!want_unsafe(c, n) || !want_int(c, n, a)) return;
  const AttachPoint *other = PROBE_OTHER(c->probe, can_override, true);
  if (other) {
    error_at(c, n->span, "override() can only be used in kprobes (it "
             "makes the probed function return at once), not in %s "
             "probes", other->provider);
    return;
  }
  if (c->frame != 0) {
    error_at(c, n->span, "override() can not be used inside a for loop "
             "over a map (its body runs as a separate function)");
    return;
  }
  c->probe->uses_ctx = true;   /* the prologue keeps it */
}

static bool emit_override(Gen *g, Node *n) {
  int rc = gen_int(g, n->args);
  emit(g, I_MOV64_REG(BPF_REG_2, rc));
  reg_free(g, rc);
  emit_ctx(g, BPF_REG_1);
  emit_call(g, BPF_FUNC_override_return);
  return false;
}

/* unwatch(addr): the watchpoints on addr stop firing, once user space has
 * the record (watchpoint_unwatch disables their perf events). */
static void check_unwatch(Checker *c, Node *n) {
  check_expr(c, n->args);
  want_int(c, n, n->args);
}

static bool emit_unwatch(Gen *g, Node *n) {
  int addr = gen_int(g, n->args);
  OutRec r = record_begin(g, (int)sizeof(EventHeader) + 8, true, false);
  emit_header_at(g, r.base, r.off, EV_UNWATCH, 0);
  emit(g, I_STX(BPF_DW, r.base, addr, r.off + 8));
  reg_free(g, addr);
  record_end(g, &r);
  return false;
}

static void on_unwatch(const EventCtx *e, uint32_t index,
                       const uint8_t *payload, size_t size) {
  (void)e;
  (void)index;
  uint64_t addr;
  if (size < sizeof addr) return;
  memcpy(&addr, payload, sizeof addr);
  watchpoint_unwatch(addr);
}

/* kfunc_exist("name"): whether the kernel has that kfunc (a function its
 * BTF tags as one), a constant, so that a script can leave out code
 * that calls it (comm(pid)). */
static void check_kfunc_exist(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->kind != N_STR) {
    error_at(c, a->span, "kfunc_exist() expects a string literal");
    return;
  }
  n->kind = N_INT;
  n->ival = ctype_is_kfunc(a->sval);
  n->args = NULL;
  n->type = ty_bool();
}

/* percpu_kaddr("var"[, cpu]): the address of a kernel per-CPU variable on
 * this CPU (or on `cpu`, 0 past the last CPU), found in BTF; a pointer
 * to uint64 (cast it to the variable's real type). The BTF id is kept
 * in ival. */
static void check_percpu_kaddr(Checker *c, Node *n) {
  Node *name = n->args, *cpu = name->next;
  if (name->kind != N_STR) {
    error_at(c, name->span, "percpu_kaddr() expects a string literal");
    return;
  }
  if (cpu) {
    check_expr(c, cpu);
    if (!want_int(c, n, cpu)) return;
  }
  int id = ctype_percpu_var_id(name->sval);
  if (id <= 0) {
    error_at(c, n->span, id < 0 ? "%s is not a per-CPU variable"
                                : "Could not resolve variable \"%s\" "
                                  "from BTF", name->sval);
    return;
  }
  /* the verifier resolves the ksym through kallsyms, which lists data
   * symbols only with CONFIG_KALLSYMS_ALL */
  uint64_t addr;
  if (!kallsyms_address(name->sval, &addr)) {
    error_at(c, n->span, "percpu_kaddr(): the kernel does not list %s in "
             "/proc/kallsyms (CONFIG_KALLSYMS_ALL is off), so BPF programs "
             "cannot take its address", name->sval);
    return;
  }
  n->ival = id;
  char err[120];
  n->type = ty_int(8, false);
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
  n->type.ctype = ctype_parse("uint64", err, sizeof err);
}

static int signal_number(const char *name) {
  static const char *const names[] = {
      "", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL",
      "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD",
      "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
      "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"};
  if (!strncmp(name, "SIG", 3)) name += 3;
  for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

/* signal(SIG) with a name ("KILL", "SIGKILL") or a number: only with
 * --unsafe. */
static void check_signal(Checker *c, Node *n) {
  Node *a = n->args;
  int64_t v;
  if (!want_unsafe(c, n)) return;
  if (a->kind == N_STR) {
    int sig = signal_number(a->sval);
    if (sig < 0) {
      error_at(c, a->span, "signal(): unknown signal %s", a->sval);
      return;
    }
    n->ival = sig;
  } else if (want_const(c, a, n->name, "the signal", 1, 64, &v)) {
    n->ival = v;
  }
}

/* write_user(dst, src, len): len bytes of the value src (a string,
 * buffer, struct, tuple, or an integer's 8 bytes) written to the user
 * address dst; true if the kernel wrote them. Only with --unsafe. */
static void check_write_user(Checker *c, Node *n) {
  Node *dst = n->args, *src = dst->next, *len = src->next;
  check_expr(c, dst);
  check_expr(c, src);
  check_expr(c, len);
  if (!want_unsafe(c, n) || !want_int(c, n, dst)) return;
  Type st = src->type;
  if (st.kind == TY_NONE) return;
  bool is_value = st.kind == TY_INT || st.kind == TY_STR ||
                  st.kind == TY_BUF || st.kind == TY_TUPLE ||
                  st.kind == TY_RECORD || st.kind == TY_CVAL;
  if (!is_value) {
    error_at(c, src->span, "write_user() writes a value it holds: a string, "
             "a buffer, a struct, a tuple or an integer, not %s",
             kind_name(st));
    return;
  }
  int cap = st.kind == TY_INT ? 8 : value_cap(st);
  int64_t k;
  if (!want_const(c, len, n->name, "the length", 1, cap, &k)) return;
  n->ival = k;
  n->type = ty_bool();
}

/* cgroupid("/sys/fs/cgroup/PATH"): the id of that cgroup (v2), as the
 * builtin `cgroup` gives it, found now: the 64-bit handle the kernel
 * gives the directory (name_to_handle_at), which is its kernfs id. */
static void check_cgroupid(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->kind != N_STR) {
    check_expr(c, a);
    error_at(c, a->span, "cgroupid() expects a string literal path (it is "
             "looked up when the script is compiled)");
    return;
  }
  struct {
    struct file_handle fh;
    uint64_t id;
  } h = {.fh.handle_bytes = sizeof(uint64_t)};
  int mount_id;
  errno = 0;
  if (name_to_handle_at(AT_FDCWD, a->sval, &h.fh, &mount_id, 0) != 0 ||
      h.fh.handle_bytes != sizeof(uint64_t)) {
    /* another file system's handles are not 8 bytes (EOVERFLOW) */
    error_at(c, a->span, "cgroupid(): cannot find the cgroup %s: %s",
             a->sval, errno && errno != EOVERFLOW
                          ? strerror(errno)
                          : "not a directory of a cgroup2 file system");
    return;
  }
  uint64_t id;
  memcpy(&id, h.fh.f_handle, sizeof id);
  n->kind = N_INT;
  n->ival = (int64_t)id;
  n->type = ty_int(8, false);
}

/* bswap(n): n's bytes reversed, an unsigned integer of n's width. */
static void check_bswap(Checker *c, Node *n) {
  check_expr(c, n->args);
  if (!want_int(c, n, n->args)) return;
  n->type = ty_int(n->args->type.size ? n->args->type.size : 8, false);
}

/* kptr(p), uptr(p): p, marked as a kernel or a user address. */
static void check_address_space(Checker *c, Node *n) {
  check_expr(c, n->args);
  Type t = n->args->type;
  if (t.kind == TY_NONE) return;
  if (t.kind != TY_INT) {
    error_at(c, n->span, "%s() expects a pointer or an integer (%s "
             "provided)", n->name, kind_name(t));
    return;
  }
  t.as = n->name[0] == 'u' ? AS_USER : AS_KERNEL;
  n->type = t;
}

/* ---- code ------------------------------------------------------------ */


/* BPF_END to big endian swaps on x86-64's little-endian machine. */
static int emit_bswap(Gen *g, Node *n) {
  int r = gen_int(g, n->args);
  int bits = n->type.size * 8;
  if (bits > 8)
    emit(g, insn_make(BPF_ALU | BPF_END | BPF_TO_BE, r, 0, 0, bits));
  else
    emit(g, I_ALU64_IMM(BPF_AND, r, 0xff));
  return r;
}

/* bpf_probe_write_user(dst, the value's bytes, len); true when it
 * returned 0. */
static int emit_write_user(Gen *g, Node *n) {
  Node *dst = n->args, *src = dst->next;
  int at;
  if (src->type.kind == TY_INT) {
    at = scratch_alloc(g, 8);
    int v = gen_int(g, src);
    emit(g, I_STX(BPF_DW, SCRATCH, v, at));
    reg_free(g, v);
  } else {
    at = buf_ref(g, src);
  }
  int r = gen_int(g, dst);
  emit(g, I_MOV64_REG(BPF_REG_1, r));
  emit_scratch(g, BPF_REG_2, at);
  emit(g, I_MOV64_IMM(BPF_REG_3, (int32_t)n->ival));
  emit_call(g, BPF_FUNC_probe_write_user);
  emit(g, I_MOV64_IMM(r, 1));
  emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
  emit(g, I_MOV64_IMM(r, 0));
  return r;
}

static bool emit_write_user_stmt(Gen *g, Node *n) {
  reg_free(g, emit_write_user(g, n));
  return false;
}

/* signal(): to the current process; signal_thread(): to the current
 * thread alone. */
static bool emit_signal(Gen *g, Node *n) {
  emit(g, I_MOV64_IMM(BPF_REG_1, (int32_t)n->ival));
  emit_call(g, strcmp(n->name, "signal_thread") ? BPF_FUNC_send_signal
                                                 : BPF_FUNC_send_signal_thread);
  return false;
}

/* The variable's address as a BTF ksym (ld_imm64 of its BTF id), made
 * this CPU's or cpu's copy by bpf_this_cpu_ptr / bpf_per_cpu_ptr. */
static int emit_percpu_kaddr(Gen *g, Node *n) {
  Node *cpu = n->args->next;
  int r = cpu ? gen_int(g, cpu) : -1;
  if (cpu) emit(g, I_MOV64_REG(BPF_REG_2, r));
  emit(g, I_LD_IMM64_LO(BPF_REG_1, BPF_PSEUDO_BTF_ID, (int32_t)n->ival));
  emit(g, I_LD_IMM64_HI(0));
  emit_call(g, cpu ? BPF_FUNC_per_cpu_ptr : BPF_FUNC_this_cpu_ptr);
  if (r < 0) r = reg_alloc(g);
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  return r;
}

/* path(p[, size]): the full path of a struct path (a value, such as
 * args.file->f_path, or a pointer to one), from the kernel's bpf_d_path
 * helper, which only fentry and fexit programs may call, and the kernel
 * lets them only in a few functions (its btf_allowlist_d_path). */
static void check_path(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  int64_t size = c->strlen + 1;
  if (a->next) {
    check_expr(c, a->next);
    if (!want_const(c, a->next, "path", "the size", 1, 4096, &size)) return;
  }
  if (a->type.kind == TY_NONE) return;
  const CType *ct = a->type.ctype;
  bool is_path = ct && ct->kind == C_STRUCT && ct->name &&
                 !strcmp(ct->name, "path") &&
                 (a->type.kind == TY_RECORD ||
                  (a->type.kind == TY_INT && a->type.is_pointer));
  if (!is_path) {
    error_at(c, a->span, "path() expects a struct path or a pointer to one "
             "(e.g. args.file->f_path)");
    return;
  }
  if (!want_tracing_probe(c, n, "bpf_d_path", false)) return;
  n->type = ty_str((int)size);
  n->type.whole = true;   /* what the kernel wrote, cut at the front */
}

/* bpf_d_path(p, dst, size). A path longer than size leaves its tail in
 * dst (the kernel builds it from the end, Linux 5.12 on): kept, as the
 * truncated path; any other failure gives an empty string. */
static void emit_path(Gen *g, Node *n, int dst, int cap) {
  Node *a = n->args;
  int addr = a->type.kind == TY_RECORD ? gen_addr(g, a) : gen_int(g, a);
  emit_zero(g, dst, cap);
  /* an iterator's objects may be NULL (ctx.file.f_path is then a small
   * number): an empty string, and the verifier, which knows such numbers,
   * sees no call with one */
  int null = g->seq_output ? emit_jump(g, I_JMP_IMM(BPF_JLT, addr, 4096, 0))
                           : -1;
  emit(g, I_MOV64_REG(BPF_REG_1, addr));
  reg_free(g, addr);
  emit_scratch(g, BPF_REG_2, dst);
  emit(g, I_MOV64_IMM(BPF_REG_3, n->type.size < cap ? n->type.size : cap));
  /* a refusal of the helper points at the call */
  Span saved = g->span;
  g->span = n->span;
  emit_call(g, BPF_FUNC_d_path);
  g->span = saved;
  int ok = emit_jump(g, I_JMP_IMM(BPF_JSGE, BPF_REG_0, 0, 0));
  int cut = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, -ENAMETOOLONG, 0));
  emit_zero(g, dst, cap);
  patch_here(g, ok);
  patch_here(g, cut);
  if (null >= 0) patch_here(g, null);
}

/* is_err(p): whether p is an error the kernel returns as a pointer
 * (ERR_PTR: -4095 to -1), as its IS_ERR() says. */
static void check_is_err(Checker *c, Node *n) {
  check_expr(c, n->args);
  if (want_int(c, n, n->args)) n->type = ty_bool();
}

static int emit_is_err(Gen *g, Node *n) {
  int r = gen_int(g, n->args);
  /* the immediate is sign-extended: r >= 0xfffffffffffff001, unsigned */
  emit(g, I_JMP_IMM(BPF_JGE, r, -4095, 2));
  emit(g, I_MOV64_IMM(r, 0));
  emit(g, I_JA(1));
  emit(g, I_MOV64_IMM(r, 1));
  return r;
}

#define NOT_YET(name_, form_) {.name = name_, .form = form_}

const Builtin builtins_kernel[] = {
    {.name = "kaddr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_kaddr},
    {.name = "signal", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_signal, .emit_stmt = emit_signal},
    {.name = "signal_thread", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_signal, .emit_stmt = emit_signal},
    {.name = "write_user", .form = BI_CALL, .min_args = 3, .max_args = 3,
     .has_value = true, .check = check_write_user, .emit_int = emit_write_user,
     .emit_stmt = emit_write_user_stmt, .effects = true},
    {.name = "bswap", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_bswap, .emit_int = emit_bswap},
    {.name = "kptr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_address_space,
     .emit_int = emit_first_argument},
    {.name = "uptr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_address_space,
     .emit_int = emit_first_argument},
    {.name = "percpu_kaddr", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_percpu_kaddr,
     .emit_int = emit_percpu_kaddr},
    {.name = "cgroupid", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_cgroupid},
    {.name = "kfunc_exist", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_kfunc_exist},
    {.name = "override", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_override, .emit_stmt = emit_override},
    {.name = "unwatch", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_unwatch, .emit_stmt = emit_unwatch, .event = EV_UNWATCH,
     .on_event = on_unwatch},
    {.name = "is_err", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_is_err, .emit_int = emit_is_err},
    {.name = "path", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_path, .emit_buf = emit_path},
    NOT_YET("sizeof", BI_CALL),
    {0},
};
