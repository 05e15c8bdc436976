/* fentry, fexit: kernel functions entered and returning, through the
 * kernel's BPF trampolines (BPF_PROG_TYPE_TRACING).
 *
 *   fentry:FUNC            (aliases f:, kfunc:)    in vmlinux or a module
 *   fentry:MODULE:FUNC     MODULE is "vmlinux" for the kernel itself
 *   fexit:...              (aliases fr:, kretfunc:)
 *
 * Either part may hold * and ?. The functions are the FUNCs of the
 * kernel's BTF (vmlinux's and each module's) that the kernel can trace.
 * The kernel ties each program to its function when loading it
 * (attach_btf_id, and attach_btf_obj_fd for a module), so every target
 * has a program of its own; a BPF link then attaches it. The context is
 * the function's arguments, each in a u64 slot, as for raw tracepoints
 * (kernel_btf.c types them): `args.NAME` reads them by the prototype's
 * names, and in fexit `retval` is the slot after them. */
#include <errno.h>
#include <glob.h>
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "codegen/gen.h"
#include "probes/kernel_btf.h"
#include "probes/list.h"
#include "probes/provider.h"

/* ---- the functions of each BTF -------------------------------------- */

typedef struct KFunc {
  const char *name;     /* points into the BTF's strings */
  int id;               /* its BTF FUNC */
  TpFormat *format[2];  /* its arguments: [0] fentry, [1] fexit (with
                           retval), built on first use */
} KFunc;

typedef struct FuncIndex {
  const KernelBtf *kb;
  KFunc *funcs;         /* sorted by name */
  int n;
} FuncIndex;

static FuncIndex *indexes;
static int nindexes;

static int compare_kfunc(const void *a, const void *b) {
  return strcmp(((const KFunc *)a)->name, ((const KFunc *)b)->name);
}

static KFunc *kfunc_find(const FuncIndex *ix, const char *name) {
  KFunc key = {.name = name};
  return ix->n ? bsearch(&key, ix->funcs, ix->n, sizeof(KFunc), compare_kfunc)
               : NULL;
}

static void index_funcs(FuncIndex *ix) {
  const struct btf *btf = ix->kb->btf;
  int count = (int)btf__type_cnt(btf), cap = 0;
  for (int id = ix->kb->first; id < count; id++) {
    const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
    if (!btf_is_func(t)) continue;
    if (ix->n == cap) {
      cap = cap ? cap * 2 : 4096;
      ix->funcs = realloc(ix->funcs, cap * sizeof(KFunc));
    }
    ix->funcs[ix->n++] =
        (KFunc){btf__name_by_offset(btf, t->name_off), id, {NULL, NULL}};
  }
  if (ix->n) qsort(ix->funcs, ix->n, sizeof(KFunc), compare_kfunc);
}

static void load_indexes(void) {
  static bool loaded;
  if (loaded) return;
  loaded = true;
  int n;
  const KernelBtf *kb = kernel_btfs(&n);
  indexes = calloc(n ? n : 1, sizeof(FuncIndex));
  for (int i = 0; i < n; i++) {
    indexes[nindexes] = (FuncIndex){&kb[i], NULL, 0};
    index_funcs(&indexes[nindexes++]);
  }
}

static TpFormat *kfunc_format(const FuncIndex *ix, KFunc *f, bool fexit) {
  if (!f->format[fexit]) {
    const struct btf_type *t = btf__type_by_id(ix->kb->btf, (__u32)f->id);
    f->format[fexit] =
        btf_proto_format(ix->kb->btf, (int)t->type, 0, true, fexit);
  }
  return f->format[fexit];
}

/* Functions the kernel refuses to attach tracing programs to (its
 * btf_id_deny list): left out of wildcard matches. */
static bool denied(const char *name) {
  static const char *const deny[] = {
      "migrate_disable", "migrate_enable", "rcu_read_unlock_strict",
      "preempt_count_add", "preempt_count_sub", "__rcu_read_lock",
      "__rcu_read_unlock"};
  for (size_t i = 0; i < sizeof deny / sizeof deny[0]; i++)
    if (!strcmp(name, deny[i])) return true;
  return false;
}

/* ---- the providers -------------------------------------------------- */

static bool is_fexit(const AttachPoint *ap) {
  return !strcmp(ap->prov->name, "fexit");
}

static void add_target(AttachPoint *ap, FuncIndex *ix, KFunc *f) {
  Target *t = calloc(1, sizeof *t);
  const char *module = ix->kb->module;
  size_t len = strlen(ap->prov->name) + strlen(module) + strlen(f->name) + 3;
  t->name = malloc(len);
  snprintf(t->name, len, "%s:%s:%s", ap->prov->name, module, f->name);
  t->category = strdup(module);
  t->event = strdup(f->name);
  t->data = btf_target_new((uint32_t)f->id, 0);
  t->format = kfunc_format(ix, f, is_fexit(ap));
  ap_add_target(ap, t);
}

/* Every function matching the globs, in vmlinux and then the modules; a
 * function without a module is looked for in all of them. A function
 * named exactly is taken as the BTF has it (the kernel says why it
 * refuses one); wildcards take only the functions it can trace. */
static void add_matches(AttachPoint *ap, const Settings *st, const char *mod,
                        const char *fn) {
  for (int i = 0; i < nindexes; i++) {
    FuncIndex *ix = &indexes[i];
    if (!glob_match(mod, ix->kb->module)) continue;
    if (!has_wildcard(fn)) {
      KFunc *f = kfunc_find(ix, fn);
      if (f) add_target(ap, ix, f);
      continue;
    }
    for (int k = 0; k < ix->n; k++) {
      KFunc *f = &ix->funcs[k];
      if (glob_match(fn, f->name) && !denied(f->name) &&
          kernel_function_known(f->name, st))
        add_target(ap, ix, f);
    }
  }
}

/* ---- fentry:bpf[:ID]:NAME: functions of running BPF programs ---------- */

/* Calls fn for each function (the main one and each subprogram) of each
 * running BPF program with BTF, its id `id` if not 0: the program's id,
 * the function's name and BTF id in the program's BTF. */
static void each_bpf_func(uint32_t id,
                          void (*fn)(uint32_t prog, const char *name,
                                     uint32_t btf_id, void *arg),
                          void *arg) {
  for (uint32_t next = 0; bpf_prog_get_next_id(next, &next) == 0;) {
    if (id && next != id) continue;
    int fd = bpf_prog_get_fd_by_id(next);
    if (fd < 0) continue;
    struct bpf_prog_info info = {0};
    __u32 len = sizeof info;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) || !info.btf_id ||
        !info.nr_func_info) {
      close(fd);
      continue;
    }
    __u32 n = info.nr_func_info, btf_id = info.btf_id;
    struct bpf_func_info *funcs = calloc(n, sizeof *funcs);
    memset(&info, 0, sizeof info);
    info.nr_func_info = n;
    info.func_info_rec_size = sizeof *funcs;
    info.func_info = (__u64)(uintptr_t)funcs;
    len = sizeof info;
    struct btf *btf = NULL;
    if (funcs && !bpf_obj_get_info_by_fd(fd, &info, &len))
      btf = btf__load_from_kernel_by_id(btf_id);
    for (__u32 i = 0; btf && i < n; i++) {
      const struct btf_type *t = btf__type_by_id(btf, funcs[i].type_id);
      if (t && btf_is_func(t))
        fn(next, btf__name_by_offset(btf, t->name_off), funcs[i].type_id,
           arg);
    }
    btf__free(btf);
    free(funcs);
    close(fd);
  }
}

typedef struct BpfMatch {
  AttachPoint *ap;
  const char *pattern;
  FILE *list;          /* -l: print, do not add */
  const char *pname;
} BpfMatch;

static void bpf_func_matched(uint32_t prog, const char *name, uint32_t btf_id,
                             void *arg) {
  BpfMatch *m = arg;
  if (!glob_match(m->pattern, name)) return;
  if (m->list) {
    fprintf(m->list, "%s:bpf:%u:%s\n", m->pname, prog, name);
    return;
  }
  static TpFormat no_args = {.id = -1};   /* args are not read here */
  Target *t = calloc(1, sizeof *t);
  if (!t) abort();
  size_t len = strlen(m->ap->prov->name) + strlen(name) + 32;
  t->name = malloc(len);
  if (!t->name) abort();
  snprintf(t->name, len, "%s:bpf:%u:%s", m->ap->prov->name, prog, name);
  t->category = strdup("bpf");
  t->event = strdup(name);
  t->data = btf_target_new(btf_id, prog);
  t->format = &no_args;
  ap_add_target(m->ap, t);
}

/* fentry:bpf:NAME and fentry:bpf:ID:NAME (parts after "bpf"). */
static int expand_bpf(AttachPoint *ap, Diag *d) {
  const char *pname = ap->prov->name;
  uint32_t id = 0;
  if (ap->nparts == 3) {
    char *end;
    unsigned long v = strtoul(ap->parts[1], &end, 10);
    if (!*ap->parts[1] || *end || v == 0 || v > UINT32_MAX) {
      diag_error(d, ap->span, "%s:bpf: '%s' is not a program id", pname,
                 ap->parts[1]);
      return -1;
    }
    id = (uint32_t)v;
  }
  BpfMatch m = {.ap = ap, .pattern = ap->parts[ap->nparts - 1]};
  each_bpf_func(id, bpf_func_matched, &m);
  if (ap->ntargets > 0) return 0;
  probe_no_matches(ap, d, ap->text + strlen(pname) + 1);
  if (d->demote == DEMOTE_NONE)
    diag_hint(d, "loupe -l '%s:bpf:*' lists the functions of the running "
              "BPF programs that have BTF", pname);
  return -1;
}

static int fentry_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  const char *pname = ap->prov->name;
  if ((ap->nparts == 2 || ap->nparts == 3) && !strcmp(ap->parts[0], "bpf"))
    return expand_bpf(ap, d);
  bool parts_ok = ap->nparts == 1 || ap->nparts == 2;
  for (int i = 0; parts_ok && i < ap->nparts; i++)
    if (!*ap->parts[i]) parts_ok = false;
  if (!parts_ok) {
    diag_error(d, ap->span, "%s probe type requires 1 or 2 arguments "
               "(%s:FUNCTION or %s:MODULE:FUNCTION)", pname, pname, pname);
    return -1;
  }
  const char *mod = ap->nparts == 2 ? ap->parts[0] : "*";
  const char *fn = ap->parts[ap->nparts - 1];
  load_indexes();
  if (nindexes == 0) {
    diag_error(d, ap->span, "%s probes need the kernel's BTF "
               "(/sys/kernel/btf/vmlinux), which this kernel does not have",
               pname);
    diag_hint(d, "kprobe:%s reads the same function's arguments as "
              "arg0, arg1, ... where the kernel has kprobes", fn);
    return -1;
  }
  add_matches(ap, st, mod, fn);
  if (ap->ntargets > 0) return 0;
  char what[512];
  snprintf(what, sizeof what, "%s%s%s", ap->nparts == 2 ? mod : "",
           ap->nparts == 2 ? ":" : "", fn);
  probe_no_matches(ap, d, what);
  if (d->demote == DEMOTE_NONE)
    diag_hint(d, "no function '%s' in the BTF of %s: loupe -l '%s:%s' "
              "lists them", fn, ap->nparts == 2 ? mod : "vmlinux or a module",
              pname, has_wildcard(fn) ? fn : "*");
  return -1;
}

static int attach_tracing(const Target *t, int prog_fd,
                          enum bpf_attach_type type, LinkSet *links,
                          char *err, size_t errlen) {
  (void)t;
  int fd = bpf_link_create(prog_fd, 0, type, NULL);
  /* kernels before 5.8 attach tracing programs with the raw tracepoint
   * call, whose fd is a link all the same */
  if (fd < 0 && errno == EINVAL) fd = bpf_raw_tracepoint_open(NULL, prog_fd);
  if (fd < 0) {
    snprintf(err, errlen, "bpf(BPF_LINK_CREATE): %s", strerror(errno));
    return -1;
  }
  links_add(links, fd);
  return 0;
}

static int fentry_attach(const Target *t, const Settings *st, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  return attach_tracing(t, prog_fd, BPF_TRACE_FENTRY, links, err, errlen);
}

static int fexit_attach(const Target *t, const Settings *st, int prog_fd,
                        LinkSet *links, char *err, size_t errlen) {
  return attach_tracing(t, prog_fd, BPF_TRACE_FEXIT, links, err, errlen);
}

static uint32_t fentry_attach_type(const AttachPoint *ap, const Target *t) {
  (void)ap;
  (void)t;
  return BPF_TRACE_FENTRY;
}

static uint32_t fexit_attach_type(const AttachPoint *ap, const Target *t) {
  (void)ap;
  (void)t;
  return BPF_TRACE_FEXIT;
}

/* Prints PROVIDER:MODULE:FUNC for each function matching the pattern
 * (which may leave the module out), and with -lv its arguments. */
static void list_funcs(const char *pname, const char *pattern,
                       const Settings *st, FILE *out) {
  load_indexes();
  size_t plen = strlen(pname);
  const char *rest = pattern && !strncmp(pattern, pname, plen) &&
                             pattern[plen] == ':' ? pattern + plen + 1 : NULL;
  char name[600];
  for (int i = 0; i < nindexes; i++) {
    FuncIndex *ix = &indexes[i];
    for (int k = 0; k < ix->n; k++) {
      KFunc *f = &ix->funcs[k];
      snprintf(name, sizeof name, "%s:%s:%s", pname, ix->kb->module,
               f->name);
      bool show = !pattern || !*pattern || glob_match(pattern, name) ||
                  (rest && !strchr(rest, ':') && glob_match(rest, f->name));
      if (!show || denied(f->name) || !kernel_function_known(f->name, st))
        continue;
      fprintf(out, "%s\n", name);
      if (st->list_verbose)
        list_fields(kfunc_format(ix, f, !strcmp(pname, "fexit")), out);
    }
  }
}

void list_kernel_func_params(const char *module, const char *func,
                             FILE *out) {
  load_indexes();
  for (int i = 0; i < nindexes; i++) {
    FuncIndex *ix = &indexes[i];
    if (module ? strcmp(ix->kb->module, module) : i > 0) continue;
    KFunc *f = kfunc_find(ix, func);
    if (f) {
      list_fields(kfunc_format(ix, f, false), out);
      return;
    }
  }
}

/* -l 'fentry:bpf:*': the functions of the running BPF programs. */
static bool list_bpf(const char *pname, const char *pattern, FILE *out) {
  size_t plen = strlen(pname);
  if (!pattern || strncmp(pattern, pname, plen) ||
      strncmp(pattern + plen, ":bpf:", 5))
    return false;
  const char *rest = pattern + plen + 5;
  const char *colon = strchr(rest, ':');
  uint32_t id = colon ? (uint32_t)strtoul(rest, NULL, 10) : 0;
  BpfMatch m = {.pattern = colon ? colon + 1 : rest, .list = out,
                .pname = pname};
  each_bpf_func(id, bpf_func_matched, &m);
  return true;
}

static void fentry_list(const char *pattern, const Settings *st, FILE *out) {
  if (!list_bpf("fentry", pattern, out))
    list_funcs("fentry", pattern, st, out);
}

/* Every function is also an fexit probe: like kretprobes, they are listed
 * only when asked for by name. */
static void fexit_list(const char *pattern, const Settings *st, FILE *out) {
  if (pattern && !strncmp(pattern, "fexit:", 6) &&
      !list_bpf("fexit", pattern, out))
    list_funcs("fexit", pattern, st, out);
}

/* ---- when the kernel refuses ----------------------------------------- */

/* Appends "PROBE" to the list of alternatives in buf. */
static void add_alternative(char *buf, size_t len, const char *probe) {
  size_t used = strlen(buf);
  snprintf(buf + used, len - used, "%s%s", used ? ", " : "", probe);
}

/* The tracepoints named after function fn, and for a function that is a
 * system call's body, the syscall's tracepoint (entry or exit). */
static void tracepoint_alternatives(const char *fn, bool fexit, char *buf,
                                    size_t len) {
  const char *dir = tracefs_dir();
  if (!dir) return;
  char path[600];
  snprintf(path, sizeof path, "%s/events/*/%s", dir, fn);
  glob_t g;
  if (glob(path, 0, NULL, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; i++) {
      char *event = strrchr(g.gl_pathv[i], '/');
      *event = '\0';
      const char *category = strrchr(g.gl_pathv[i], '/') + 1;
      snprintf(path, sizeof path, "tracepoint:%s:%s", category, event + 1);
      add_alternative(buf, len, path);
    }
  }
  globfree(&g);
  static const char *const syscall_prefixes[] = {
      "__x64_sys_", "__ia32_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_",
      "__sys_", "ksys_"};
  for (size_t i = 0; i < sizeof syscall_prefixes / sizeof *syscall_prefixes;
       i++) {
    size_t plen = strlen(syscall_prefixes[i]);
    if (strncmp(fn, syscall_prefixes[i], plen)) continue;
    const char *call = fn + plen;
    snprintf(path, sizeof path, "%s/events/syscalls/sys_%s_%s", dir,
             fexit ? "exit" : "enter", call);
    if (access(path, F_OK) != 0) continue;
    snprintf(path, sizeof path, "tracepoint:syscalls:sys_%s_%s",
             fexit ? "exit" : "enter", call);
    add_alternative(buf, len, path);
    break;
  }
}

static const char *errno_name(int err) {
  switch (err) {
  case EPERM: return "EPERM";
  case EACCES: return "EACCES";
  case EOPNOTSUPP: return "EOPNOTSUPP";
  case 524: return "ENOTSUPP";
  default: return NULL;
  }
}

/* The kernel refusing every fentry program (as ours does: EPERM, with no
 * verifier log, even for root), or lacking trampolines (ENOTSUPP): said
 * at the probe, with what this kernel offers instead. */
static bool tracing_load_refused(const AttachPoint *ap, const Target *t,
                                 int err, Diag *d) {
  const char *name = errno_name(err);
  if (!name || !t || ((err == EPERM || err == EACCES) && geteuid() != 0))
    return false;
  bool fexit = is_fexit(ap);
  diag_error(d, ap->span, "this kernel refuses %s programs: loading the "
             "program for %s (bpf(BPF_PROG_LOAD), BPF_PROG_TYPE_TRACING, "
             "attach type BPF_TRACE_%s) fails with %s (%s)%s",
             ap->prov->name, t->name, fexit ? "FEXIT" : "FENTRY", name,
             err == 524 ? "Operation not supported" : strerror(err),
             err == EPERM ? " although loupe runs as root" : "");
  char alt[1024] = "";
  tracepoint_alternatives(t->event, fexit, alt, sizeof alt);
  bool kprobes = probe_pmu_type("kprobe") >= 0;
  if (kprobes) {
    char k[300];
    snprintf(k, sizeof k, "%s:%s", fexit ? "kretprobe" : "kprobe", t->event);
    add_alternative(alt, sizeof alt, k);
  }
  if (*alt)
    diag_hint(d, "the same event without %s: %s%s", ap->prov->name, alt,
              kprobes ? "" : " (this kernel has no kprobes either)");
  else
    diag_hint(d, "no tracepoint is named after %s, and this kernel has no "
              "kprobes: the function cannot be traced here", t->event);
  return true;
}

/* retval: the field after the arguments (check_target_field found it). */
static int fexit_emit_retval(Gen *g, Node *n) { return gen_field_int(g, n); }

const Provider fentry_provider = {
    .name = "fentry",
    /* kfunc, kretfunc: their names before bpftrace 0.18 */
    .aliases = (const char *const[]){"f", "kfunc", NULL},
    .prog_type = BPF_PROG_TYPE_TRACING,
    .expand = fentry_expand,
    .attach = fentry_attach,
    .list = fentry_list,
    .attach_type = fentry_attach_type,
    .fires_newest_first = true,
    .prog_per_target = true,
    .load_refused = tracing_load_refused,
    .args = ARGS_FIELDS,
    .func = FUNC_BTF,
    .tracing_helpers = true,
    .attach_btf = btf_target_attach,
};

const Provider fexit_provider = {
    .name = "fexit",
    .aliases = (const char *const[]){"fr", "kretfunc", NULL},
    .prog_type = BPF_PROG_TYPE_TRACING,
    .expand = fentry_expand,
    .attach = fexit_attach,
    .list = fexit_list,
    .attach_type = fexit_attach_type,
    .fires_newest_first = true,
    .prog_per_target = true,
    .load_refused = tracing_load_refused,
    .args = ARGS_FIELDS,
    .retval = RETVAL_FIELD,
    .func = FUNC_BTF,
    .tracing_helpers = true,
    .emit_retval = fexit_emit_retval,
    .attach_btf = btf_target_attach,
};
