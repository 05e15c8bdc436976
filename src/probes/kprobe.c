/* kprobe: dynamic probes on kernel functions, through the kprobe PMU.
 *
 *   kprobe:FUNC      (alias k:)   fires when FUNC is entered
 *   kretprobe:FUNC   (alias kr:)  fires when FUNC returns
 *
 * FUNC may hold * and ?: it is matched against the functions ftrace can
 * trace (tracefs' available_filter_functions), or, without that file, the
 * text symbols of /proc/kallsyms. Functions the kernel refuses to probe
 * (its kprobe blacklist) are left out of wildcard matches.
 *
 * Each target is one perf event of the kprobe PMU type, whose config1
 * points at the function's name; no kprobe_events file is written, so
 * nothing outlives loupe. */
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probes/provider.h"


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

/* "func" or "func [module]" lines. */
static bool read_filter_functions(NameList *l) {
  const char *dir = tracefs_dir();
  if (!dir) return false;
  char path[600];
  snprintf(path, sizeof path, "%s/available_filter_functions", dir);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[512];
  while (fgets(line, sizeof line, f)) {
    size_t len = strcspn(line, " \t\n");
    if (len > 0) names_add(l, line, len);
  }
  fclose(f);
  return l->n > 0;
}

/* "ADDR t name [module]" lines: only code (t, T) counts. */
static bool read_kallsyms_text(NameList *l) {
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return false;
  char line[512], kind;
  int name_at;
  while (fgets(line, sizeof line, f)) {
    if (sscanf(line, "%*s %c %n", &kind, &name_at) < 1) continue;
    if (kind != 't' && kind != 'T') continue;
    const char *name = line + name_at;
    names_add(l, name, strcspn(name, " \t\n"));
  }
  fclose(f);
  return l->n > 0;
}

/* Functions that can be probed; loaded once. NULL if neither source can
 * be read (then names are not checked before attaching). */
static const NameList *kernel_functions(void) {
  static NameList funcs;
  static bool loaded, ok;
  if (!loaded) {
    loaded = true;
    ok = read_filter_functions(&funcs) || read_kallsyms_text(&funcs);
    names_sort_unique(&funcs);
  }
  return ok ? &funcs : NULL;
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

static void add_target(AttachPoint *ap, const char *func) {
  Target *t = calloc(1, sizeof *t);
  const char *pname = ap->prov->name;
  size_t plen = strlen(pname), flen = strlen(func);
  t->name = malloc(plen + flen + 2);
  memcpy(t->name, pname, plen);
  t->name[plen] = ':';
  memcpy(t->name + plen + 1, func, flen + 1);
  t->event = strdup(func);
  Target **tail = &ap->targets;
  while (*tail) tail = &(*tail)->next;
  *tail = t;
  ap->ntargets++;
}

static int kprobe_expand(AttachPoint *ap, Diag *d) {
  const char *pname = ap->prov->name;
  if (ap->nparts != 1 || !*ap->parts[0]) {
    diag_error(d, ap->span, "%s probe type requires 1 argument", pname);
    return -1;
  }
  if (probe_pmu_type("kprobe") < 0) {
    diag_error(d, ap->span, "kprobes are not available on this kernel (no "
               "kprobe PMU: CONFIG_KPROBES is off)");
    return -1;
  }
  const char *func = ap->parts[0];
  const NameList *funcs = kernel_functions();
  if (!has_wildcard(func)) {
    if (funcs && !names_has(funcs, func)) {
      diag_error(d, ap->span, "%s is not traceable (either non-existing, "
                 "inlined, or marked as \"notrace\")", func);
      return -1;
    }
    add_target(ap, func);
    return 0;
  }
  if (!funcs) {
    diag_error(d, ap->span, "cannot list the kernel's functions to match "
               "%s: %s", func, strerror(errno));
    return -1;
  }
  const NameList *refused = blacklist();
  for (int i = 0; i < funcs->n; i++)
    if (glob_match(func, funcs->names[i]) &&
        !names_has(refused, funcs->names[i]))
      add_target(ap, funcs->names[i]);
  if (ap->ntargets == 0) return probe_no_matches(ap, d, func);
  return 0;
}

static int attach_kprobe(const Target *t, bool retprobe, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  /* config1: the function's name; config2: the offset into it */
  return probe_pmu_attach("kprobe", retprobe, -1,
                          (uint64_t)(uintptr_t)t->event, 0, prog_fd, links, err, errlen);
}

static int kprobe_attach(const Target *t, int prog_fd, LinkSet *links,
                         char *err, size_t errlen) {
  return attach_kprobe(t, false, prog_fd, links, err, errlen);
}

static int kretprobe_attach(const Target *t, int prog_fd, LinkSet *links,
                            char *err, size_t errlen) {
  return attach_kprobe(t, true, prog_fd, links, err, errlen);
}

/* Lists provider:FUNC for every function matching pattern. Without a
 * kprobe PMU nothing can be attached, so nothing is listed. */
static void list_functions(const char *pname, const char *pattern,
                           FILE *out) {
  if (probe_pmu_type("kprobe") < 0) return;
  const NameList *funcs = kernel_functions();
  if (!funcs) return;
  char name[600];
  for (int i = 0; i < funcs->n; i++) {
    snprintf(name, sizeof name, "%s:%s", pname, funcs->names[i]);
    if (!pattern || !*pattern || glob_match(pattern, name))
      fprintf(out, "%s\n", name);
  }
}

static void kprobe_list(const char *pattern, FILE *out) {
  list_functions("kprobe", pattern, out);
}

/* Every function is also a kretprobe, so like bpftrace, kretprobes are
 * listed only when asked for by name. */
static void kretprobe_list(const char *pattern, FILE *out) {
  if (pattern && !strncmp(pattern, "kretprobe:", 10))
    list_functions("kretprobe", pattern, out);
}

const Provider kprobe_provider = {
    .name = "kprobe",
    .alias = "k",
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = kprobe_expand,
    .attach = kprobe_attach,
    .list = kprobe_list,
};

const Provider kretprobe_provider = {
    .name = "kretprobe",
    .alias = "kr",
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = kprobe_expand,
    .attach = kretprobe_attach,
    .list = kretprobe_list,
};

bool kernel_function_known(const char *name) {
  const NameList *funcs = kernel_functions();
  return !funcs || names_has(funcs, name);
}
