/* usdt: user-level statically defined tracing — the probes programs and
 * libraries declare with <sys/sdt.h> (SystemTap's notes), through the
 * uprobe PMU.
 *
 *   usdt:BINARY:PROVIDER:NAME    (alias U:)
 *   usdt:BINARY:NAME             the provider left out: NAME must be
 *                                unique in BINARY unless it is a wildcard
 *
 * BINARY is a path or a bare name as for uprobes, or a glob of paths;
 * with -p PID, a glob (or nothing: `usdt::NAME`) matches the files the
 * process maps, and without -p, `*` alone matches the files every
 * running process maps. PROVIDER and NAME may hold * and ?.
 *
 * A target is one probe (PROVIDER:NAME of one file) with every location
 * the compiler gave it; each location is one perf event of the uprobe
 * PMU. A probe with a semaphore (is-enabled probes) gets the semaphore's
 * file offset as the uprobe's reference counter, so the kernel raises it
 * in every process the probe is in while loupe runs. Each location's
 * link carries its index as the BPF cookie, for arguments whose spec
 * differs from one location to the next (usdt_args.c). Where the kernel
 * has uprobe_multi links, one link holds all the locations of a probe
 * instead of one perf event each. */
#include "probes/usdt.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "probes/provider.h"
#include "sym/elf.h"
#include "sym/procfs.h"

/* ---- the notes of each file, read once --------------------------------- */

typedef struct FileNotes {
  struct FileNotes *next;
  char *real;
  UsdtNotes notes;
  bool is_elf;
} FileNotes;

static FileNotes *files_read;

/* The notes of the file at real (a path loupe can open); NULL if it is
 * no ELF file. They stay for the whole run: targets point into them. */
static const UsdtNotes *notes_of(const char *real) {
  for (FileNotes *f = files_read; f; f = f->next)
    if (!strcmp(f->real, real)) return f->is_elf ? &f->notes : NULL;
  FileNotes *f = calloc(1, sizeof *f);
  if (!f) abort();
  char err[PATH_MAX + 100];
  f->real = strdup(real);
  f->is_elf = stapsdt_read(real, &f->notes, err, sizeof err) == 0;
  f->next = files_read;
  files_read = f;
  return f->is_elf ? &f->notes : NULL;
}

/* ---- matching ----------------------------------------------------------- */

/* An attach point or a -l pattern, split: BINARY[:PROVIDER]:NAME. */
typedef struct UsdtPattern {
  const char *binary, *provider, *name;
  bool provider_given;
} UsdtPattern;

static void split_parts(char *const *parts, int nparts, UsdtPattern *p) {
  p->binary = nparts > 0 ? parts[0] : "*";
  p->provider = "*";
  p->name = "*";
  p->provider_given = false;
  if (nparts == 2) {
    p->name = parts[1];
  } else if (nparts >= 3) {
    p->provider_given = *parts[1] != '\0';
    if (p->provider_given) p->provider = parts[1];
    p->name = parts[2];
  }
  if (!*p->name) p->name = "*";
}

/* What one expansion (or listing) is after, and what it found. */
typedef struct Expansion {
  AttachPoint *ap;      /* NULL when listing */
  Diag *d;
  UsdtPattern pat;
  int pid;              /* -p PID: the files it maps; 0: none */
  FILE *list;           /* -l: where the lines go */
  int found;
  bool failed;
} Expansion;

static bool note_matches(const UsdtPattern *p, const UsdtNote *n) {
  return glob_match(p->provider, n->provider) && glob_match(p->name, n->name);
}

/* The note standing for probe k of l: its first. */
static const UsdtNote *probe_note(const UsdtNotes *l, int k) {
  return &l->notes[l->by_probe[l->probes[k].start]];
}

/* usdt:FILE:NAME with a plain NAME that more than one provider of the
 * file has: bpftrace asks for the provider. */
static bool ambiguous(Expansion *x, const UsdtNotes *l, const char *shown) {
  if (x->pat.provider_given || has_wildcard(x->pat.name)) return false;
  int providers = 0;
  for (int k = 0; k < l->nprobes; k++)
    providers += !strcmp(probe_note(l, k)->name, x->pat.name);
  if (providers < 2) return false;
  if (x->ap) {
    diag_error(x->d, x->ap->span, "namespace for usdt:%s:%s not specified, "
               "matched %d probes", shown, x->pat.name, providers);
    diag_hint(x->d, "name the provider (usdt:%s:PROVIDER:%s), or use '*' "
              "to attach to all matched probes", shown, x->pat.name);
  }
  x->failed = true;
  return true;
}

static void add_target(Expansion *x, const char *shown, const char *real,
                       const UsdtNotes *l, int k) {
  const UsdtNote *n = probe_note(l, k);
  const UsdtProbeNotes *pn = &l->probes[k];
  UsdtProbe *probe = calloc(1, sizeof *probe);
  Target *t = calloc(1, sizeof *t);
  if (!probe || !t) abort();
  probe->locs = malloc(pn->count * sizeof(void *));
  if (!probe->locs) abort();
  for (int i = 0; i < pn->count; i++)
    probe->locs[i] = &l->notes[l->by_probe[pn->start + i]];
  probe->nlocs = pn->count;
  size_t len = strlen(shown) + strlen(n->provider) + strlen(n->name) + 8;
  t->name = malloc(len);
  if (!t->name) abort();
  snprintf(t->name, len, "usdt:%s:%s:%s", shown, n->provider, n->name);
  t->event = strdup(n->name);
  t->binary = strdup(real);
  t->offset = n->pc;
  t->data = probe;
  ap_add_target(x->ap, t);
}

/* A file with more notes than are read: said where the script (or -l)
 * asked for its probes. */
static void warn_too_many(Expansion *x, const char *shown) {
  char msg[PATH_MAX + 100];
  snprintf(msg, sizeof msg, "%s has more than %d USDT notes: none of its "
           "probes are read", shown, USDT_MAX_NOTES);
  if (x->ap)
    diag_warning(x->d, x->ap->span, "%s", msg);
  else
    fprintf(stderr, "WARNING: %s\n", msg);
}

/* Adds a target (or a -l line) for each probe of one file that matches:
 * one per provider:name, its first note standing for all. */
static void expand_file(Expansion *x, const char *shown, const char *real) {
  const UsdtNotes *l = notes_of(real);
  if (l && l->too_many) warn_too_many(x, shown);
  if (!l || ambiguous(x, l, shown)) return;
  for (int k = 0; k < l->nprobes; k++) {
    const UsdtNote *n = probe_note(l, k);
    if (!note_matches(&x->pat, n)) continue;
    x->found++;
    if (x->list)
      fprintf(x->list, "usdt:%s:%s:%s\n", shown, n->provider, n->name);
    else
      add_target(x, shown, real, l, k);
  }
}

/* ---- the files ------------------------------------------------------------ */

/* -p: each file the process maps whose path matches the binary glob;
 * the mapped file itself is read (procfs_mapped_file). */
static bool expand_mapped(const ProcMapping *pm, void *arg) {
  Expansion *x = arg;
  char err[PATH_MAX + 100];
  const char *real;
  if (glob_match(x->pat.binary, pm->path) &&
      (real = procfs_mapped_file(pm, err, sizeof err)))
    expand_file(x, pm->path, real);
  return x->failed;
}

/* Without -p, `*`: the files every process maps, each once. A process
 * in another mount namespace names its files in its own tree, so each is
 * the mapped file itself, never what its path names in loupe's. */
typedef struct SeenFiles {
  const char **paths;   /* kept paths: one per file */
  int n;
  Expansion *x;
} SeenFiles;

static bool expand_host_file(const ProcMapping *pm, void *arg) {
  SeenFiles *s = arg;
  char err[PATH_MAX + 100];
  const char *real = procfs_mapped_file(pm, err, sizeof err);
  if (!real) return false;
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->paths[i], real)) return false;
  s->paths = realloc(s->paths, (s->n + 1) * sizeof(char *));
  if (!s->paths) abort();
  s->paths[s->n++] = real;
  expand_file(s->x, pm->path, real);
  return s->x->failed;
}

static void expand_host(Expansion *x) {
  SeenFiles seen = {.x = x};
  DIR *proc = opendir("/proc");
  struct dirent *e;
  while (proc && (e = readdir(proc)) && !x->failed) {
    char *end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0 || pid == getpid()) continue;
    procfs_each_mapped_file((int)pid, expand_host_file, &seen);
  }
  if (proc) closedir(proc);
  free(seen.paths);
}

/* A glob of paths without -p: the regular files it names. */
static void expand_glob(Expansion *x) {
  glob_t g;
  if (glob(x->pat.binary, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc && !x->failed; i++) {
    char real[PATH_MAX];
    struct stat st;
    if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) &&
        realpath(g.gl_pathv[i], real))
      expand_file(x, g.gl_pathv[i], real);
  }
  globfree(&g);
}

/* Every file the pattern's binary names. False if a plain BINARY names
 * no file, with a message in err. */
static bool expand_files(Expansion *x, char *err, size_t errlen) {
  const char *binary = x->pat.binary;
  if (x->pid > 0 && (!*binary || has_wildcard(binary))) {
    if (!*binary) x->pat.binary = "*";
    procfs_each_mapped_file(x->pid, expand_mapped, x);
  } else if (!strcmp(binary, "*")) {
    expand_host(x);
  } else if (has_wildcard(binary)) {
    expand_glob(x);
  } else {
    char found[PATH_MAX], real[PATH_MAX];
    if (!uprobe_find_binary("usdt", x->pid, binary, found, real, err,
                            errlen))
      return false;
    /* `probe` shows a path as written, a bare name as found */
    expand_file(x, strchr(binary, '/') ? binary : found, real);
  }
  return true;
}

static int usdt_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts < 2 || ap->nparts > 3) {
    diag_error(d, ap->span, "usdt probe type requires 2 or 3 arguments: "
               "usdt:BINARY:[PROVIDER:]NAME");
    return -1;
  }
  if (probe_pmu_type("uprobe") < 0) {
    diag_error(d, ap->span, "usdt probes are not available on this kernel "
               "(no uprobe PMU: CONFIG_UPROBES is off)");
    return -1;
  }
  Expansion x = {.ap = ap, .d = d, .pid = st->target_pid};
  split_parts(ap->parts, ap->nparts, &x.pat);
  if (!*x.pat.binary && x.pid <= 0) {
    diag_error(d, ap->span, "usdt probe needs a binary or library path "
               "(or -p PID to search the files a process maps)");
    return -1;
  }
  char err[PATH_MAX + 200];
  if (!expand_files(&x, err, sizeof err)) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  if (x.failed) return -1;
  if (x.found > 0) return 0;
  if (x.pat.provider_given)
    diag_error(d, ap->span, "No usdt probe matches %s:%s:%s",
               *x.pat.binary ? x.pat.binary : "*", x.pat.provider,
               x.pat.name);
  else
    diag_error(d, ap->span, "No usdt probe matches %s:%s",
               *x.pat.binary ? x.pat.binary : "*", x.pat.name);
  return -1;
}

/* ---- attaching ----------------------------------------------------------- */

/* The process to attach to: -p's, or -c's child (bpftrace attaches usdt
 * probes to it alone); -1 for every process. */
static int attach_pid(const Settings *st) {
  return st->target_pid > 0 ? st->target_pid
         : st->cpid > 0     ? st->cpid
                            : -1;
}

/* The first bit of perf_event_attr.config that holds the reference
 * counter's offset ("config:32-63"); -1 if the kernel has none. */
static int ref_ctr_shift(void) {
  FILE *f = fopen("/sys/bus/event_source/devices/uprobe/format/"
                  "ref_ctr_offset", "r");
  int bit = -1;
  if (f) {
    if (fscanf(f, "config:%d", &bit) != 1) bit = -1;
    fclose(f);
  }
  return bit;
}

/* One location: a uprobe perf event at pc of the file, with the
 * semaphore as its reference counter, running prog_fd with `cookie`, in
 * process pid (attach_pid). */
static int attach_location(const char *path, const UsdtNote *loc,
                           uint64_t cookie, int pid, int prog_fd,
                           LinkSet *links, char *err, size_t errlen) {
  struct perf_event_attr attr = {0};
  attr.size = sizeof attr;
  attr.type = (uint32_t)probe_pmu_type("uprobe");
  if (loc->semaphore) {
    int shift = ref_ctr_shift();
    if (shift < 0) {
      snprintf(err, errlen, "the probe has a semaphore and this kernel's "
               "uprobes have no reference counter to set it");
      return -1;
    }
    attr.config = loc->semaphore << shift;
  }
  attr.config1 = (uint64_t)(uintptr_t)path;
  attr.config2 = loc->pc;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  /* as uprobes do: one event for every process, or one following one */
  return perf_event_attach_cookie(&attr, pid, pid > 0 ? -1 : 0, prog_fd,
                                  cookie, links, err, errlen);
}

static uint32_t usdt_attach_type(const AttachPoint *ap, const Target *t) {
  (void)ap;
  (void)t;
  return uprobe_multi_attach_type();
}

/* All of the probe's locations in one uprobe_multi link, each with its
 * index as cookie, as attach_location gives it. */
static int attach_multi(const Target *t, int pid, int prog_fd,
                        LinkSet *links, char *err, size_t errlen) {
  const UsdtProbe *up = t->data;
  int n = up->nlocs;
  uint64_t *offsets = calloc(n, sizeof *offsets),
           *ref_ctrs = calloc(n, sizeof *ref_ctrs),
           *cookies = calloc(n, sizeof *cookies);
  if (!offsets || !ref_ctrs || !cookies) abort();
  for (int i = 0; i < n; i++) {
    offsets[i] = up->locs[i]->pc;
    ref_ctrs[i] = up->locs[i]->semaphore;
    cookies[i] = (uint64_t)i;
  }
  int ret = uprobe_multi_link(t->binary, n, offsets, ref_ctrs, cookies, false,
                              pid, prog_fd, links, err, errlen);
  free(offsets);
  free(ref_ctrs);
  free(cookies);
  return ret;
}

static int usdt_attach(const Target *t, const Settings *st, int prog_fd,
                       LinkSet *links, char *err, size_t errlen) {
  int pid = attach_pid(st);
  if (uprobe_multi_attach_type() == ATTACH_UPROBE_MULTI)
    return attach_multi(t, pid, prog_fd, links, err, errlen);
  const UsdtProbe *up = t->data;
  for (int i = 0; i < up->nlocs; i++)
    if (attach_location(t->binary, up->locs[i], (uint64_t)i, pid, prog_fd,
                        links, err, errlen) < 0)
      return -1;
  return 0;
}

/* ---- listing ------------------------------------------------------------- */

static int compare_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The newline-ended lines of text (len bytes, changed), sorted, each
 * once. */
static void print_sorted_lines(char *text, size_t len, FILE *out) {
  size_t n = 0;
  for (size_t i = 0; i < len; i++) n += text[i] == '\n';
  char **line = n ? malloc(n * sizeof *line) : NULL;
  if (!line) {
    if (len) fwrite(text, 1, len, out);
    return;
  }
  size_t k = 0;
  for (char *p = text; k < n; p += strlen(p) + 1) {
    line[k++] = p;
    *strchr(p, '\n') = '\0';
  }
  qsort(line, n, sizeof *line, compare_lines);
  for (size_t i = 0; i < n; i++)
    if (i == 0 || strcmp(line[i], line[i - 1])) fprintf(out, "%s\n", line[i]);
  free(line);
}

/* usdt:BINARY[:PROVIDER[:NAME]] as -l gives it; without -p, a BINARY of
 * `*` lists the probes of every running process's files. */
static void usdt_list(const char *pattern, const Settings *st, FILE *out) {
  if (!pattern || strncmp(pattern, "usdt:", 5) ||
      probe_pmu_type("uprobe") < 0)
    return;
  char *copy = strdup(pattern + 5), *parts[3];
  if (!copy) return;
  int nparts = 0;
  for (char *p = copy; nparts < 3;) {
    parts[nparts++] = p;
    char *colon = nparts < 3 ? strchr(p, ':') : NULL;
    if (!colon) break;
    *colon = '\0';
    p = colon + 1;
  }
  /* the lines are sorted before they are printed, as bpftrace sorts
   * them (the notes come in the file's order) */
  char *text = NULL;
  size_t len = 0;
  FILE *lines = open_memstream(&text, &len);
  if (!lines) {
    free(copy);
    return;
  }
  Expansion x = {.list = lines, .pid = st->target_pid};
  split_parts(parts, nparts, &x.pat);
  if (!*x.pat.binary) x.pat.binary = "*";
  /* "usdt:FILE:*" means every provider too */
  if (nparts == 2) x.pat.provider_given = true;
  char err[PATH_MAX + 200];
  expand_files(&x, err, sizeof err);
  fclose(lines);
  print_sorted_lines(text, len, out);
  free(text);
  free(copy);
}

const Provider usdt_provider = {
    .name = "usdt",
    .aliases = (const char *const[]){"U", NULL},
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = usdt_expand,
    .attach = usdt_attach,
    .list = usdt_list,
    .attach_type = usdt_attach_type,
    .fires_newest_first = true,
    .argn = ARGN_OWN,
    .arg_usable = usdt_arg_usable,
    .emit_arg = usdt_emit_arg,
    .user_space = true,
};
