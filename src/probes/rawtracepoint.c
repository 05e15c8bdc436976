/* rawtracepoint: the kernel's tracepoints, attached to directly
 * (BPF_PROG_TYPE_RAW_TRACEPOINT) rather than through a perf event.
 *
 *   rawtracepoint:EVENT          (alias rt:)  in vmlinux or any module
 *   rawtracepoint:MODULE:EVENT   MODULE is "vmlinux" for the kernel itself
 *
 * Either part may hold * and ?. The tracepoints are those the kernel's BTF
 * declares a `btf_trace_EVENT` typedef for (vmlinux, and each module in
 * /sys/kernel/btf). A program's context is the tracepoint's arguments, each
 * in a u64 slot: arg0..argN read the slots, and `args.NAME` reads them
 * typed, with the names and types of the `__probestub_EVENT` function
 * (same prototype, named parameters; its first parameter, `__data`, is
 * the tracepoint's own and is left out), or without names
 * (arg0..) from the typedef's prototype on kernels that lack the stubs.
 * A probe that calls what only tracing programs may (socket_cookie(),
 * kfuncs) loads as a BTF raw tracepoint (tp_btf: BPF_PROG_TYPE_TRACING,
 * tied to the btf_trace_EVENT typedef as it loads), one per tracepoint. */
#include <errno.h>
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

/* ---- the tracepoints of one BTF ------------------------------------- */

typedef struct RawTp {
  const char *name;    /* "sys_enter": points into the BTF's strings */
  int typedef_id;      /* btf_trace_NAME */
  int proto;           /* its FUNC_PROTO, __data first */
  bool named;          /* proto is the stub's: its parameters have names */
  TpFormat *format;    /* the arguments as fields, built on first use */
} RawTp;

typedef struct TpIndex {
  char *module;        /* "vmlinux", or the module's name */
  struct btf *btf;
  RawTp *tps;          /* sorted by name */
  int n;
} TpIndex;

static int compare_rawtp(const void *a, const void *b) {
  return strcmp(((const RawTp *)a)->name, ((const RawTp *)b)->name);
}

static RawTp *rawtp_find(const TpIndex *ix, const char *name) {
  RawTp key = {.name = name};
  return ix->n ? bsearch(&key, ix->tps, ix->n, sizeof(RawTp), compare_rawtp)
               : NULL;
}

/* The FUNC_PROTO a typedef of a function pointer names, or 0. */
static int typedef_proto(const struct btf *btf, int id) {
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  if (!t || !btf_is_typedef(t)) return 0;
  t = btf__type_by_id(btf, t->type);
  if (!t || !btf_is_ptr(t)) return 0;
  int proto = (int)t->type;
  t = btf__type_by_id(btf, (__u32)proto);
  return t && btf_is_func_proto(t) ? proto : 0;
}

/* One pass over the types (from `first`: a module's own start after
 * vmlinux's) collects the btf_trace_ typedefs, then gives each the
 * prototype of its __probestub_ function when there is one. */
static void index_types(TpIndex *ix, int first) {
  int count = (int)btf__type_cnt(ix->btf), cap = 0, nstubs = 0, stubcap = 0;
  RawTp *stubs = NULL;
  for (int id = first; id < count; id++) {
    const struct btf_type *t = btf__type_by_id(ix->btf, (__u32)id);
    const char *name = btf__name_by_offset(ix->btf, t->name_off);
    if (!name || (name[0] != 'b' && name[0] != '_')) continue;
    if (btf_is_typedef(t) && !strncmp(name, "btf_trace_", 10)) {
      if (ix->n == cap) {
        cap = cap ? cap * 2 : 1024;
        ix->tps = realloc(ix->tps, cap * sizeof(RawTp));
      }
      ix->tps[ix->n++] = (RawTp){name + 10, id, typedef_proto(ix->btf, id),
                                 false, NULL};
    } else if (btf_is_func(t) && !strncmp(name, "__probestub_", 12)) {
      if (nstubs == stubcap) {
        stubcap = stubcap ? stubcap * 2 : 1024;
        stubs = realloc(stubs, stubcap * sizeof(RawTp));
      }
      stubs[nstubs++] = (RawTp){name + 12, 0, (int)t->type, true, NULL};
    }
  }
  if (ix->n) qsort(ix->tps, ix->n, sizeof(RawTp), compare_rawtp);
  for (int i = 0; i < nstubs; i++) {
    RawTp *tp = rawtp_find(ix, stubs[i].name);
    if (tp) {
      tp->proto = stubs[i].proto;
      tp->named = true;
    }
  }
  free(stubs);
}

/* vmlinux first, then the modules with BTF, each indexed once. */
static TpIndex *indexes;
static int nindexes;
static bool indexes_loaded;

static void load_indexes(void) {
  if (indexes_loaded) return;
  indexes_loaded = true;
  int n;
  const KernelBtf *kb = kernel_btfs(&n);
  indexes = calloc(n ? n : 1, sizeof(TpIndex));
  for (int i = 0; i < n; i++) {
    TpIndex *ix = &indexes[nindexes++];
    *ix = (TpIndex){kb[i].module, kb[i].btf, NULL, 0};
    index_types(ix, kb[i].first);
  }
}

/* The arguments of a tracepoint as the fields of `args`: one per
 * parameter after __data, each in a u64 slot of the context. */
static TpFormat *rawtp_format(const TpIndex *ix, RawTp *tp) {
  if (!tp->format)
    tp->format = btf_proto_format(ix->btf, tp->proto, 1, tp->named, false);
  return tp->format;
}

/* ---- the provider --------------------------------------------------- */

static void add_target(AttachPoint *ap, TpIndex *ix, RawTp *tp) {
  Target *t = calloc(1, sizeof *t);
  size_t len = strlen(ix->module) + strlen(tp->name) + 20;
  t->name = malloc(len);
  snprintf(t->name, len, "rawtracepoint:%s:%s", ix->module, tp->name);
  t->category = strdup(ix->module);
  t->event = strdup(tp->name);
  t->format = rawtp_format(ix, tp);
  t->data = btf_target_new((uint32_t)tp->typedef_id, 0);
  ap_add_target(ap, t);
}

/* Every tracepoint matching the globs, in vmlinux and then the modules;
 * an event without a module is looked for in all of them. */
static void add_matches(AttachPoint *ap, const char *mod, const char *ev) {
  for (int i = 0; i < nindexes; i++) {
    TpIndex *ix = &indexes[i];
    if (!glob_match(mod, ix->module)) continue;
    if (!has_wildcard(ev)) {
      RawTp *tp = rawtp_find(ix, ev);
      if (tp) add_target(ap, ix, tp);
      continue;
    }
    for (int k = 0; k < ix->n; k++)
      if (glob_match(ev, ix->tps[k].name)) add_target(ap, ix, &ix->tps[k]);
  }
}

static int rawtracepoint_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts != 1 && ap->nparts != 2) {
    diag_error(d, ap->span, "rawtracepoint probe type requires 1 or 2 "
               "arguments");
    return -1;
  }
  const char *mod = ap->nparts == 2 ? ap->parts[0] : "*";
  const char *ev = ap->parts[ap->nparts - 1];
  if (!*mod || !*ev) {
    diag_error(d, ap->span, "rawtracepoint probe type requires 1 or 2 "
               "arguments");
    return -1;
  }
  load_indexes();
  if (nindexes == 0) {
    /* no BTF: the kernel knows the name or not; no typed args */
    if (has_wildcard(ev) || (ap->nparts == 2 && strcmp(mod, "vmlinux"))) {
      diag_error(d, ap->span, "rawtracepoint wildcards and modules need the "
                 "kernel's BTF (/sys/kernel/btf/vmlinux), which is missing");
      return -1;
    }
    static TpIndex bare = {"vmlinux", NULL, NULL, 0};
    static TpFormat no_fields = {.id = -1};
    RawTp tp = {.name = ev, .format = &no_fields};   /* no tp_btf either */
    add_target(ap, &bare, &tp);
    return 0;
  }
  add_matches(ap, mod, ev);
  if (ap->ntargets > 0) return 0;
  if (ap->nparts == 1) {
    /* bpftrace's words for an event found nowhere */
    diag_error(d, ap->span, "Probe has no valid attach points.%s",
               d->demote == DEMOTE_TO_WARNING ? " Skipping." : "");
    if (d->demote == DEMOTE_NONE)
      diag_hint(d, "no raw tracepoint '%s' in vmlinux or a module: loupe "
                "-l 'rawtracepoint:*' lists them", ev);
    return -1;
  }
  char what[512];
  snprintf(what, sizeof what, "%s:%s", mod, ev);
  return probe_no_matches(ap, d, what);
}

/* A raw tracepoint program is attached by the tracepoint's name; a
 * tracing one (tp_btf) was tied to its tracepoint as it loaded. */
static int rawtracepoint_attach(const Target *t, const Settings *st,
                                int prog_fd, LinkSet *links, char *err,
                                size_t errlen) {
  struct bpf_prog_info info = {0};
  __u32 len = sizeof info;
  bool tracing = bpf_obj_get_info_by_fd(prog_fd, &info, &len) == 0 &&
                 info.type == BPF_PROG_TYPE_TRACING;
  int fd = bpf_raw_tracepoint_open(tracing ? NULL : t->event, prog_fd);
  if (fd < 0) {
    snprintf(err, errlen, "bpf_raw_tracepoint_open: %s", strerror(errno));
    return -1;
  }
  links_add(links, fd);
  return 0;
}

/* Prints rawtracepoint:MODULE:EVENT for each match, and with -lv its
 * arguments. The pattern may leave the module out. */
static void rawtracepoint_list(const char *pattern, const Settings *st,
                               FILE *out) {
  load_indexes();
  const char *rest = NULL;
  if (pattern && *pattern) {
    if (strncmp(pattern, "rawtracepoint:", 14)) {
      rest = NULL;         /* a pattern for every provider: full names */
    } else {
      rest = pattern + 14;
    }
  }
  char name[600];
  for (int i = 0; i < nindexes; i++) {
    TpIndex *ix = &indexes[i];
    for (int k = 0; k < ix->n; k++) {
      RawTp *tp = &ix->tps[k];
      snprintf(name, sizeof name, "rawtracepoint:%s:%s", ix->module,
               tp->name);
      bool show = !pattern || !*pattern || glob_match(pattern, name) ||
                  (rest && !strchr(rest, ':') && glob_match(rest, tp->name));
      if (!show) continue;
      fprintf(out, "%s\n", name);
      if (!st->list_verbose) continue;
      list_fields(rawtp_format(ix, tp), out);
    }
  }
}

/* Its programs load for the event's btf_trace_ typedef only as tp_btf,
 * when the probe wants the tracing helpers. */
static uint32_t rawtracepoint_attach_btf(const Target *t, bool tracing,
                                         uint32_t *prog_id) {
  return tracing ? btf_target_attach(t, tracing, prog_id) : 0;
}

/* argN exists only up to the event's argument count: the kernel refuses
 * to attach a program reading past it. */
static bool rawtracepoint_arg_usable(const Probe *p, int index, char *msg,
                                     size_t len) {
  for (const AttachPoint *ap = p->aps; ap; ap = ap->next)
    for (const Target *t = ap->targets; t; t = t->next)
      if (t->format && t->format->nfields > 0 &&
          index >= t->format->nfields) {
        snprintf(msg, len, "rawtracepoint %s:%s has %d argument%s (arg0 to "
                 "arg%d)", t->category, t->event, t->format->nfields,
                 t->format->nfields == 1 ? "" : "s",
                 t->format->nfields - 1);
        return false;
      }
  return true;
}

/* argN: the context's u64 slot N (also when loaded as tp_btf). */
static int rawtracepoint_emit_arg(Gen *g, int index) {
  int r = reg_alloc(g);
  emit_ctx(g, r);
  emit(g, I_LDX(BPF_DW, r, r, 8 * index));
  return r;
}

const Provider rawtracepoint_provider = {
    .name = "rawtracepoint",
    .aliases = (const char *const[]){"rt", NULL},
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = rawtracepoint_expand,
    .attach = rawtracepoint_attach,
    .list = rawtracepoint_list,
    .args = ARGS_FIELDS,
    .argn = ARGN_SLOTS,
    .tracing_on_demand = true,
    .arg_usable = rawtracepoint_arg_usable,
    .emit_arg = rawtracepoint_emit_arg,
    .attach_btf = rawtracepoint_attach_btf,
};
