/* kprobe: dynamic probes on kernel functions, through the kprobe PMU.
 *
 *   kprobe[:MODULE]:FUNC[+OFFSET]  (alias k:)   fires when FUNC is entered
 *                                               (or reaches OFFSET in it)
 *   kretprobe[:MODULE]:FUNC        (alias kr:)  fires when FUNC returns
 *
 * FUNC and MODULE may hold * and ?: FUNC is matched against the functions
 * ftrace can trace (tracefs' available_filter_functions, which names the
 * module of each function outside vmlinux), or, without that file, the
 * text symbols of /proc/kallsyms. MODULE "vmlinux" is the kernel itself.
 * Functions the kernel refuses to probe (its kprobe blacklist) are left
 * out of wildcard matches.
 *
 * Each target is one perf event of the kprobe PMU type, whose config1
 * points at the function's name ("module:func" for a module's) and config2
 * holds the offset; no kprobe_events file is written, so nothing outlives
 * loupe. A program that serves many functions of vmlinux (a wildcard) is
 * put on all of them with one kprobe_multi link instead, when the kernel
 * has them (fprobe, Linux 5.18): one attach, and one detach, for all. */
#define _GNU_SOURCE  /* asprintf */
#include <errno.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include "probes/list.h"
#include "probes/provider.h"
#include "probes/regs.h"
#include "sym/kallsyms.h"

/* A target's Target.data points here when its `offset` is the kernel
 * address the probe was given (kprobe:0xADDR), not an offset into
 * `event`. */
static const char at_address;

/* ---- the kernel's functions ----------------------------------------- */

typedef struct NameList {
  char **names;
  int n, cap;
} NameList;

static void names_add(NameList *l, const char *name, size_t len) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4096;
    l->names = realloc(l->names, l->cap * sizeof(char *));
  }
  l->names[l->n++] = strndup(name, len);
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorts the list and drops duplicates (static functions of one name in
 * several files appear once each). */
static void names_sort_unique(NameList *l) {
  if (l->n == 0) return;
  qsort(l->names, l->n, sizeof(char *), compare_names);
  int k = 1;
  for (int i = 1; i < l->n; i++) {
    if (strcmp(l->names[i], l->names[k - 1]))
      l->names[k++] = l->names[i];
    else
      free(l->names[i]);
  }
  l->n = k;
}

static bool names_has(const NameList *l, const char *name) {
  return l->n > 0 && bsearch(&name, l->names, l->n, sizeof(char *),
                             compare_names) != NULL;
}

/* A function ftrace can trace, and the module it is in (NULL: vmlinux). */
typedef struct KFunc {
  char *name;
  char *mod;
} KFunc;

typedef struct FuncList {
  KFunc *v;
  int n, cap;
} FuncList;

static void funcs_add(FuncList *l, const char *name, size_t len,
                      const char *mod, size_t modlen) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 4096;
    l->v = realloc(l->v, l->cap * sizeof(KFunc));
  }
  l->v[l->n].name = strndup(name, len);
  l->v[l->n].mod = modlen ? strndup(mod, modlen) : NULL;
  l->n++;
}

static const char *kfunc_module(const KFunc *f) {
  return f->mod ? f->mod : "vmlinux";
}

static int compare_funcs(const void *a, const void *b) {
  const KFunc *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : strcmp(kfunc_module(x), kfunc_module(y));
}

/* Sorts by name, then module, and drops duplicates (static functions of
 * one name in several files appear once per module). */
static void funcs_sort_unique(FuncList *l) {
  if (l->n == 0) return;
  qsort(l->v, l->n, sizeof(KFunc), compare_funcs);
  int k = 1;
  for (int i = 1; i < l->n; i++) {
    if (compare_funcs(&l->v[i], &l->v[k - 1])) {
      l->v[k++] = l->v[i];
    } else {
      free(l->v[i].name);
      free(l->v[i].mod);
    }
  }
  l->n = k;
}

/* The module part of a line: "[name]" after the function, if any. */
static void module_of(const char *rest, const char **mod, size_t *len) {
  const char *open = strchr(rest, '[');
  *mod = NULL;
  *len = 0;
  if (!open) return;
  *mod = open + 1;
  *len = strcspn(*mod, "]\n");
}

/* "func" or "func [module]" lines, from --traceable-functions FILE or
 * else from ftrace's list. False if there are none (or no such list). */
static bool read_filter_functions(FuncList *l, const char *file) {
  char path[600];
  if (file) {
    snprintf(path, sizeof path, "%s", file);
  } else {
    const char *dir = tracefs_dir();
    if (!dir) return false;
    snprintf(path, sizeof path, "%s/available_filter_functions", dir);
  }
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    size_t len = strcspn(line, " \t\n");
    const char *mod;
    size_t modlen;
    module_of(line + len, &mod, &modlen);
    /* ftrace's placeholder for functions it could not place */
    if (len > 0 && strncmp(line, "__ftrace_invalid_address__", 26))
      funcs_add(l, line, len, mod, modlen);
  }
  fclose(f);
  return l->n > 0;
}

/* "ADDR t name [module]" lines: only code (t, T) counts. */
static bool read_kallsyms_text(FuncList *l) {
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return false;
  char line[512], kind;
  int name_at;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%*s %c %n", &kind, &name_at) < 1) continue;
    if (kind != 't' && kind != 'T') continue;
    const char *name = line + name_at, *mod;
    size_t len = strcspn(name, " \t\n"), modlen;
    module_of(name + len, &mod, &modlen);
    funcs_add(l, name, len, mod, modlen);
  }
  fclose(f);
  return l->n > 0;
}

/* Functions the kernel lets us probe but that can stall it when probed:
 * the RCU machinery, inside whose read sections BPF programs run, and the
 * idle loop, where RCU is not watching. The kernel's own BPF self-tests
 * leave the same ones out when they attach to every function. */
static bool stalls_when_probed(const char *name) {
  return !strncmp(name, "rcu_", 4) || !strcmp(name, "arch_cpu_idle") ||
         !strcmp(name, "default_idle") ||
         !strcmp(name, "bpf_dispatcher_xdp_func");
}

/* Functions that can be probed; loaded once (the run's settings do not
 * change). NULL if neither source can be read (then names are not checked
 * before attaching). Without --unsafe, those that stall the kernel are
 * left out. */
static const FuncList *kernel_functions(const Settings *st) {
  static FuncList funcs;
  static bool loaded, ok;
  if (!loaded) {
    loaded = true;
    ok = read_filter_functions(&funcs, st->traceable_functions) ||
         /* the user's list is the list, even empty */
         st->traceable_functions || read_kallsyms_text(&funcs);
    funcs_sort_unique(&funcs);
    int kept = 0;
    for (int i = 0; i < funcs.n; i++) {
      if (st->unsafe || !stalls_when_probed(funcs.v[i].name)) {
        funcs.v[kept++] = funcs.v[i];
      } else {
        free(funcs.v[i].name);
        free(funcs.v[i].mod);
      }
    }
    funcs.n = kept;
  }
  return ok ? &funcs : NULL;
}

/* The first function of that name, or NULL. */
static const KFunc *funcs_find(const FuncList *l, const char *name) {
  int lo = 0, hi = l->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (strcmp(l->v[mid].name, name) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < l->n && !strcmp(l->v[lo].name, name) ? &l->v[lo] : NULL;
}

/* The kernel's kprobe blacklist ("0xSTART-0xEND\tname" lines). */
static const NameList *blacklist(void) {
  static NameList list;
  static bool loaded;
  if (loaded) return &list;
  loaded = true;
  /* In debugfs; without it, attaching reports what the kernel refuses. */
  FILE *f = fopen("/sys/kernel/debug/kprobes/blacklist", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f)) {
      char *name = strpbrk(line, " \t");
      if (!name) continue;
      name += strspn(name, " \t");
      names_add(&list, name, strcspn(name, " \t\n"));
    }
    fclose(f);
  }
  names_sort_unique(&list);
  return &list;
}

/* ---- the providers -------------------------------------------------- */

/* What a kprobe spec asks for: [MODULE:]FUNC[+OFFSET]. */
typedef struct KSpec {
  const char *mod;     /* as written (may hold wildcards), or NULL */
  char *func;          /* the FUNC part, without the offset */
  uint64_t offset;
  bool has_offset;
  bool is_address;     /* kprobe:ADDR: `offset` is the address */
} KSpec;

/* Appends a target after *tail (kept by the caller, so that a wildcard of
 * many thousand functions costs no walk per function). */
static Target **add_target(AttachPoint *ap, Target **tail, const KSpec *k,
                           const char *func, const char *mod) {
  Target *t = calloc(1, sizeof *t);
  char off[32] = "";
  if (k->has_offset) snprintf(off, sizeof off, "+%llu",
                              (unsigned long long)k->offset);
  /* The module shows in the name only when the script named one. */
  const char *shown_mod = k->mod ? (mod ? mod : "vmlinux") : NULL;
  if (asprintf(&t->name, "%s:%s%s%s%s", ap->prov->name,
               shown_mod ? shown_mod : "", shown_mod ? ":" : "", func,
               off) < 0)
    abort();
  t->event = strdup(func);
  t->category = mod ? strdup(mod) : NULL;
  t->offset = k->offset;
  *tail = t;
  ap->ntargets++;
  return &t->next;
}

/* Splits ap's parts into k; reports what cannot be a kprobe. */
static int parse_spec(AttachPoint *ap, const Settings *st, KSpec *k, Diag *d) {
  const char *pname = ap->prov->name;
  memset(k, 0, sizeof *k);
  if (ap->nparts < 1 || ap->nparts > 2 || !*ap->parts[ap->nparts - 1]) {
    diag_error(d, ap->span, "%s probe type requires 1 or 2 arguments "
               "([module:]function)", pname);
    return -1;
  }
  if (ap->nparts == 2) k->mod = ap->parts[0];
  const char *spec = ap->parts[ap->nparts - 1];
  if (spec[0] >= '0' && spec[0] <= '9') {
    /* a kernel address, as bpftrace takes it with --unsafe: loupe cannot
     * check that it starts an instruction, nor that the function there
     * may be probed */
    char *end;
    errno = 0;
    k->offset = strtoull(spec, &end, 0);
    if (*end || errno || k->offset == 0) {
      diag_error(d, ap->span, "invalid address '%s' in %s", spec, ap->text);
      return -1;
    }
    if (k->mod) {
      diag_error(d, ap->span, "a %s at an address takes no module", pname);
      return -1;
    }
    if (!st->unsafe) {
      diag_error(d, ap->span, "a %s at a bare address needs --unsafe: "
                 "loupe cannot check that it starts an instruction of a "
                 "function the kernel lets us probe", pname);
      diag_hint(d, "name the function instead: %s:FUNC or kprobe:FUNC+OFFSET",
                pname);
      return -1;
    }
    k->is_address = true;
    k->func = strdup(spec);
    return 0;
  }
  const char *plus = strchr(spec, '+');
  k->func = plus ? strndup(spec, plus - spec) : strdup(spec);
  if (plus) {
    char *end;
    errno = 0;
    k->offset = strtoull(plus + 1, &end, 0);
    if (!plus[1] || *end || errno) {
      diag_error(d, ap->span, "invalid offset '%s' in %s", plus + 1,
                 ap->text);
      return -1;
    }
    k->has_offset = true;
    if (strcmp(pname, "kprobe")) {
      diag_error(d, ap->span, "an offset is not allowed in a %s: it fires "
                 "when the function returns", pname);
      return -1;
    }
    if (has_wildcard(k->func)) {
      diag_error(d, ap->span, "an offset cannot go with a wildcard: the "
                 "same offset falls in a different place in each function");
      return -1;
    }
  }
  return 0;
}

/* The spec as written, after the provider: "vmlinux:vfs_read". */
static const char *spec_text(const AttachPoint *ap) {
  return ap->text + strcspn(ap->text, ":") + 1;
}

/* Whether a module of that name is loaded ("vmlinux": the kernel). */
static bool module_loaded(const char *mod) {
  if (!strcmp(mod, "vmlinux")) return true;
  char path[300];
  snprintf(path, sizeof path, "/sys/module/%s/initstate", mod);
  return access(path, F_OK) == 0;
}

static int kprobe_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  KSpec k;
  if (parse_spec(ap, st, &k, d) < 0) {
    free(k.func);
    return -1;
  }
  int rc = -1;
  if (probe_pmu_type("kprobe") < 0) {
    diag_error(d, ap->span, "kprobes are not available on this kernel (no "
               "kprobe PMU: CONFIG_KPROBES is off)");
    goto out;
  }
  if (k.mod && !has_wildcard(k.mod) && !module_loaded(k.mod)) {
    diag_error(d, ap->span, "specified module %s in probe %s is not loaded.",
               k.mod, ap->text);
    goto out;
  }
  Target **tail = &ap->targets;
  if (k.is_address) {
    /* `func` is the function holding the address, if kallsyms says */
    uint64_t into = 0;
    const char *holder = kallsyms_name(k.offset, &into);
    add_target(ap, tail, &k, k.func, NULL);
    ap->targets->data = (void *)&at_address;
    if (holder) {
      free(ap->targets->event);
      ap->targets->event = strdup(holder);
    }
    rc = 0;
    goto out;
  }
  const FuncList *funcs = kernel_functions(st);
  if (!has_wildcard(k.func) && !(k.mod && has_wildcard(k.mod))) {
    if (!st->unsafe && stalls_when_probed(k.func)) {
      diag_error(d, ap->span, "%s is not probed: a probe on an RCU or idle "
                 "function can stall the kernel (BPF programs run inside RCU "
                 "read sections); --unsafe allows it", k.func);
      goto out;
    }
    const KFunc *f = funcs ? funcs_find(funcs, k.func) : NULL;
    /* the function of that name in the module asked for */
    while (f && k.mod && f < funcs->v + funcs->n && !strcmp(f->name, k.func) &&
           strcmp(kfunc_module(f), k.mod))
      f++;
    if (funcs && (!f || f == funcs->v + funcs->n || strcmp(f->name, k.func))) {
      diag_warning(d, ap->span, "%s is not traceable (either non-existing, "
                   "inlined, or marked as \"notrace\"); attaching to it "
                   "will likely fail", k.func);
      /* --unsafe: the kernel may still take it (a function the list
       * leaves out, CONFIG_KPROBE_EVENTS_ON_NOTRACE); attaching says */
      if (!st->unsafe) {
        rc = probe_no_matches(ap, d, spec_text(ap));
        goto out;
      }
      f = NULL;
    }
    add_target(ap, tail, &k, k.func, k.mod && f ? f->mod : NULL);
    rc = 0;
    goto out;
  }
  if (!funcs) {
    diag_error(d, ap->span, "cannot list the kernel's functions to match "
               "%s: %s", ap->text, strerror(errno));
    goto out;
  }
  const NameList *refused = blacklist();
  for (int i = 0; i < funcs->n; i++) {
    const KFunc *f = &funcs->v[i];
    if (glob_match(k.func, f->name) &&
        (!k.mod || glob_match(k.mod, kfunc_module(f))) &&
        !names_has(refused, f->name))
      tail = add_target(ap, tail, &k, f->name, f->mod);
  }
  rc = ap->ntargets ? 0 : probe_no_matches(ap, d, spec_text(ap));
out:
  free(k.func);
  return rc;
}

static int attach_kprobe(const Target *t, bool retprobe, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  /* config1: the function's name ("module:function" for a module's, which
   * the kernel looks up in that module); config2: the offset into it */
  char *sym = NULL;
  if (asprintf(&sym, "%s%s%s", t->category ? t->category : "",
               t->category ? ":" : "", t->event) < 0)
    abort();
  /* at an address: no name, config2 the address itself */
  int rc = probe_pmu_attach("kprobe", retprobe, -1,
                            t->data == &at_address ? 0
                                                   : (uint64_t)(uintptr_t)sym,
                            t->offset, target_cookie(t), prog_fd, links, err,
                            errlen);
  /* the kernel's word for an offset that splits an instruction */
  if (rc < 0 && t->offset && t->data != &at_address &&
      strstr(err, strerror(EILSEQ)))
    snprintf(err, errlen, "offset %llu is not at an instruction boundary "
             "of %s", (unsigned long long)t->offset, sym);
  free(sym);
  return rc;
}

static int kprobe_attach(const Target *t, const Settings *st, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  return attach_kprobe(t, false, prog_fd, links, err, errlen);
}

static int kretprobe_attach(const Target *t, const Settings *st, int prog_fd,
                            LinkSet *links, char *err, size_t errlen) {
  return attach_kprobe(t, true, prog_fd, links, err, errlen);
}

/* ---- kprobe_multi links ------------------------------------------------
 * One link puts a program on many functions through fprobe (ftrace): one
 * system call to attach a wildcard of hundreds of functions, and one to
 * detach it, where perf events cost a grace period each to close. Before
 * Linux 6.3 the kernel resolves the names in vmlinux only, so there a
 * program with targets in modules keeps one perf event each, as does one
 * with an offset anywhere. */

#ifndef BPF_F_KPROBE_MULTI_RETURN
#define BPF_F_KPROBE_MULTI_RETURN (1U << 0)
#endif
#define ATTACH_KPROBE_MULTI 42   /* BPF_TRACE_KPROBE_MULTI (Linux 5.18) */

/* Whether the kernel has fprobe, which kprobe_multi links are made of:
 * without it the kernel loads such programs but refuses the link. */
bool kernel_has_fprobe(void) {
  static int known = -1;
  if (known >= 0) return known;
  known = 0;
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return false;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    const char *name = strrchr(line, ' ');
    if (name && !strcmp(name, " register_fprobe\n")) {
      known = 1;
      break;
    }
  }
  fclose(f);
  return known;
}

/* Whether kprobe_multi links find functions of modules by name, which
 * they do from Linux 6.3 (before, in vmlinux only). */
static bool multi_finds_module_functions(void) {
  struct utsname u;
  int major = 0, minor = 0;
  if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2)
    return false;
  return major > 6 || (major == 6 && minor >= 3);
}

static uint32_t kprobe_attach_type(const AttachPoint *ap, const Target *t) {
  if (t || ap->ntargets < 2) return 0;
  bool modules_too = multi_finds_module_functions();
  for (const Target *x = ap->targets; x; x = x->next)
    if (x->offset || (x->category && !modules_too)) return 0;
  return kernel_has_fprobe() ? ATTACH_KPROBE_MULTI : 0;
}

static int attach_multi(const AttachPoint *ap, const Settings *st,
                        uint32_t attach_type, int prog_fd, LinkSet *links,
                        Diag *d, char *err, size_t errlen) {
  (void)d;
  if (attach_type != ATTACH_KPROBE_MULTI) return 0;
  const char **syms = calloc(ap->ntargets, sizeof *syms);
  uint64_t *cookies = calloc(ap->ntargets, sizeof *cookies);
  if (!syms || !cookies) abort();
  int n = 0;
  for (const Target *t = ap->targets; t; t = t->next) {
    cookies[n] = target_cookie(t);
    syms[n++] = t->event;
  }
  LIBBPF_OPTS(bpf_link_create_opts, opts);
  opts.kprobe_multi.syms = syms;
  opts.kprobe_multi.cookies = (const __u64 *)cookies;
  opts.kprobe_multi.cnt = (uint32_t)n;
  opts.kprobe_multi.flags =
      strcmp(ap->prov->name, "kretprobe") ? 0 : BPF_F_KPROBE_MULTI_RETURN;
  int fd = bpf_link_create(prog_fd, 0, ATTACH_KPROBE_MULTI, &opts);
  int saved = errno;
  free(syms);
  free(cookies);
  if (fd < 0) {
    snprintf(err, errlen, "creating its kprobe_multi link for %d functions: "
             "%s", n, strerror(saved));
    return -1;
  }
  links_add(links, fd);
  return n;
}

/* Lists provider:FUNC for every function matching pattern (-lv: with its
 * parameters, from BTF). Without a kprobe PMU nothing can be attached, so
 * nothing is listed. */
static void list_functions(const char *pname, const char *pattern,
                           const Settings *st, FILE *out) {
  if (probe_pmu_type("kprobe") < 0) return;
  const FuncList *funcs = kernel_functions(st);
  if (!funcs) return;
  char name[600];
  /* a module's functions as kprobe:MODULE:FUNC */
  for (int i = 0; i < funcs->n; i++) {
    const KFunc *f = &funcs->v[i];
    snprintf(name, sizeof name, "%s:%s%s%s", pname, f->mod ? f->mod : "",
             f->mod ? ":" : "", f->name);
    if (!pattern || !*pattern || glob_match(pattern, name)) {
      fprintf(out, "%s\n", name);
      if (st->list_verbose) list_kernel_func_params(f->mod, f->name, out);
    }
  }
}

static void kprobe_list(const char *pattern, const Settings *st, FILE *out) {
  list_functions("kprobe", pattern, st, out);
}

/* Every function is also a kretprobe, so like bpftrace, kretprobes are
 * listed only when asked for by name. */
static void kretprobe_list(const char *pattern, const Settings *st, FILE *out) {
  if (pattern && !strncmp(pattern, "kretprobe:", 10))
    list_functions("kretprobe", pattern, st, out);
}

const Provider kprobe_provider = {
    .name = "kprobe",
    .aliases = (const char *const[]){"k", NULL},
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = kprobe_expand,
    .attach = kprobe_attach,
    .list = kprobe_list,
    .attach_type = kprobe_attach_type,
    .attach_group = attach_multi,
    /* the kernel puts a new kprobe at the head of a function's list */
    .fires_newest_first = true,
    .names_by_cookie = true,
    .argn = ARGN_REGS,
    .func = FUNC_REGS,
    .can_override = true,
    .emit_arg = regs_emit_arg,
};

const Provider kretprobe_provider = {
    .name = "kretprobe",
    .aliases = (const char *const[]){"kr", NULL},
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = kprobe_expand,
    .attach = kretprobe_attach,
    .list = kretprobe_list,
    .attach_type = kprobe_attach_type,
    .attach_group = attach_multi,
    .names_by_cookie = true,
    .retval = RETVAL_REGS,
    .func = FUNC_REGS,
    .emit_retval = regs_emit_retval,
};

bool kernel_function_known(const char *name, const Settings *st) {
  const FuncList *funcs = kernel_functions(st);
  return !funcs || funcs_find(funcs, name);
}
