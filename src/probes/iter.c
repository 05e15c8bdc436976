/* iter: the kernel's BPF iterators, which run a program once for each
 * object of a kind (each task, each open file of each task, ...) while
 * a reader reads them (BPF_PROG_TYPE_TRACING, attach type BPF_TRACE_ITER).
 *
 *   iter:NAME          (alias it:)   task, task_file, task_vma, ...
 *
 * The iterators are those the kernel's BTF has a `bpf_iter_NAME` function
 * and a `struct bpf_iter__NAME` context for, less those that must be given
 * an object to walk (a map, a cgroup, a socket map). The program's `ctx`
 * is a pointer to that struct: `ctx.task.comm`. loupe loads the program
 * for the iterator's function (attach_btf_id), links it, and then, once
 * BEGIN has run, reads the iterator to its end itself (runtime/run.c):
 * that runs the program over every object, and the run ends as after
 * exit(). Everything the program sends goes through the iterator's own
 * output (bpf_seq_write), so nothing is lost however many objects there
 * are, and it arrives in order.
 *
 * bpftrace's `iter:NAME:PIN` form, which pins the iterator to a file in
 * /sys/fs/bpf for others to read, is refused: what loupe's programs write
 * is records for loupe to format, not text a reader of that file could
 * use. */
#define _GNU_SOURCE   /* asprintf */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "probes/iter.h"
#include "probes/kernel_btf.h"
#include "probes/list.h"
#include "probes/provider.h"

/* Iterators whose link must name the object they walk. */
static bool needs_object(const char *name) {
  static const char *const needs[] = {"bpf_map_elem", "bpf_sk_storage_map",
                                      "sockmap", "cgroup"};
  for (size_t i = 0; i < sizeof needs / sizeof *needs; i++)
    if (!strcmp(name, needs[i])) return true;
  return false;
}

/* The BTF id of vmlinux's FUNC bpf_iter_NAME when NAME is an iterator
 * loupe can run (its context struct exists too), else 0. */
static int iter_func(const struct btf *btf, const char *name) {
  char fn[160], ctx[160];
  snprintf(fn, sizeof fn, "bpf_iter_%s", name);
  snprintf(ctx, sizeof ctx, "bpf_iter__%s", name);
  if (needs_object(name)) return 0;
  int id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC);
  if (id <= 0 || btf__find_by_name_kind(btf, ctx, BTF_KIND_STRUCT) <= 0)
    return 0;
  return id;
}

static const struct btf *vmlinux_btf(void) {
  int n;
  const KernelBtf *kb = kernel_btfs(&n);
  return n > 0 ? kb[0].btf : NULL;
}

int iter_btf_id(const char *name) {
  const struct btf *btf = vmlinux_btf();
  return btf ? iter_func(btf, name) : 0;
}

/* Calls fn for each iterator name, in BTF order. */
static void each_iter(const struct btf *btf,
                      void (*fn)(const struct btf *btf, const char *name,
                                 int id, void *arg),
                      void *arg) {
  int count = (int)btf__type_cnt(btf);
  for (int id = 1; id < count; id++) {
    const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
    if (!btf_is_func(t)) continue;
    const char *fname = btf__name_by_offset(btf, t->name_off);
    if (strncmp(fname, "bpf_iter_", 9) || !strncmp(fname, "bpf_iter__", 10))
      continue;
    if (iter_func(btf, fname + 9) == id) fn(btf, fname + 9, id, arg);
  }
}

static int iter_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts < 1 || ap->nparts > 2 || !*ap->parts[0]) {
    diag_error(d, ap->span, "iter probe type requires 1 or 2 arguments "
               "(iter:NAME or iter:NAME:PIN)");
    return -1;
  }
  if (ap->nparts == 2) {
    diag_error(d, ap->span, "loupe does not pin iterators (iter:%s:%s): "
               "its programs write records for loupe to format, which a "
               "reader of the pinned file could not use", ap->parts[0],
               ap->parts[1]);
    diag_hint(d, "iter:%s runs the iterator once and prints what it "
              "finds", ap->parts[0]);
    return -1;
  }
  const char *name = ap->parts[0];
  const struct btf *btf = vmlinux_btf();
  if (!btf) {
    diag_error(d, ap->span, "iter probes need the kernel's BTF "
               "(/sys/kernel/btf/vmlinux), which this kernel does not have");
    return -1;
  }
  if (has_wildcard(name)) {
    diag_error(d, ap->span, "iter probes do not take wildcards: name one "
               "iterator");
    diag_hint(d, "loupe -l 'iter:*' lists them");
    return -1;
  }
  int id = iter_func(btf, name);
  if (id <= 0) {
    probe_no_matches(ap, d, name);
    if (d->demote == DEMOTE_NONE)
      diag_hint(d, needs_object(name)
                       ? "this iterator walks one object that must be named "
                         "when it is linked, which loupe cannot do yet"
                       : "loupe -l 'iter:*' lists the iterators of this "
                         "kernel");
    return -1;
  }
  /* the fields of ctx: the function's parameters after `meta`, each in
   * its u64 slot of the context (from slot 1 on) */
  const struct btf_type *fn = btf__type_by_id(btf, (__u32)id);
  TpFormat *format = btf_proto_format(btf, (int)fn->type, 0, true, false);
  if (format->nfields > 0) {
    free(format->fields[0].name);
    free(format->fields[0].type_text);
    memmove(format->fields, format->fields + 1,
            sizeof(TpField) * (size_t)--format->nfields);
  }
  Target *t = calloc(1, sizeof *t);
  t->format = format;
  if (!t || asprintf(&t->name, "iter:%s", name) < 0) abort();
  t->category = strdup("vmlinux");
  t->event = strdup(name);
  t->data = btf_target_new((uint32_t)id, 0);
  ap->targets = t;
  ap->ntargets = 1;
  return 0;
}

/* ---- links, and reading them ---------------------------------------- */

typedef struct IterLink {
  int prog_fd;
  int link_fd;   /* owned by the LinkSet it was added to */
} IterLink;

static IterLink *iter_links;
static int niter_links;

static int iter_attach(const Target *t, const Settings *st, int prog_fd,
                       LinkSet *links, char *err, size_t errlen) {
  (void)t;
  int fd = bpf_link_create(prog_fd, 0, BPF_TRACE_ITER, NULL);
  if (fd < 0) {
    snprintf(err, errlen, "bpf(BPF_LINK_CREATE): %s", strerror(errno));
    return -1;
  }
  IterLink *grown =
      realloc(iter_links, sizeof(IterLink) * (size_t)(niter_links + 1));
  if (!grown) {
    close(fd);
    snprintf(err, errlen, "out of memory");
    return -1;
  }
  iter_links = grown;
  iter_links[niter_links++] = (IterLink){prog_fd, fd};
  links_add(links, fd);
  return 0;
}

int iter_open(int prog_fd) {
  for (int i = 0; i < niter_links; i++)
    if (iter_links[i].prog_fd == prog_fd)
      return bpf_iter_create(iter_links[i].link_fd);
  errno = ENOENT;
  return -1;
}

static uint32_t iter_attach_type(const AttachPoint *ap, const Target *t) {
  (void)ap;
  (void)t;
  return BPF_TRACE_ITER;
}

/* ---- listing ---------------------------------------------------------- */

/* -lv: the context's members but the iterator's own `meta`. The kernel
 * declares each pointer in an anonymous union with a u64 (so that it
 * takes 8 bytes everywhere): the union's first member is the one. */
static void list_ctx_fields(const struct btf *btf, const char *name,
                            FILE *out) {
  char sname[160];
  snprintf(sname, sizeof sname, "bpf_iter__%s", name);
  int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
  const struct btf_type *st = btf__type_by_id(btf, (__u32)id);
  const struct btf_member *m = btf_members(st);
  for (int i = 0; i < btf_vlen(st); i++, m++) {
    const struct btf_member *shown = m;
    const struct btf_type *mt = btf__type_by_id(btf, m->type);
    if (!m->name_off && btf_is_union(mt) && btf_vlen(mt) > 0)
      shown = btf_members(mt);
    const char *mname = btf__name_by_offset(btf, shown->name_off);
    if (!mname || !*mname || !strcmp(mname, "meta")) continue;
    char text[256];
    btf_type_text(btf, (int)shown->type, text, sizeof text);
    fprintf(out, "    %s %s\n", text, mname);
  }
}

typedef struct ListArg {
  const char *pattern;
  bool verbose;   /* -lv */
  FILE *out;
} ListArg;

static void list_one(const struct btf *btf, const char *name, int id,
                     void *arg) {
  (void)id;
  ListArg *la = arg;
  char full[200];
  snprintf(full, sizeof full, "iter:%s", name);
  if (la->pattern && *la->pattern && !glob_match(la->pattern, full)) return;
  fprintf(la->out, "%s\n", full);
  if (la->verbose) list_ctx_fields(btf, name, la->out);
}

static void iter_list(const char *pattern, const Settings *st, FILE *out) {
  const struct btf *btf = vmlinux_btf();
  if (!btf) return;
  ListArg la = {pattern, st->list_verbose, out};
  each_iter(btf, list_one, &la);
}

const Provider iter_provider = {
    .name = "iter",
    .aliases = (const char *const[]){"it", NULL},
    .prog_type = BPF_PROG_TYPE_TRACING,
    .expand = iter_expand,
    .attach = iter_attach,
    .list = iter_list,
    .attach_type = iter_attach_type,
    .prog_per_target = true,
    /* its programs have the tracing helpers too: want_tracing_probe
     * knows an iterator's probe by its first attach point's ctx_is_args */
    .ctx_is_args = true,
    .run = RUN_AS_ITERATOR,
    .attach_btf = btf_target_attach,
};
