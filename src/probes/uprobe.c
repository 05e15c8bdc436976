/* uprobe: dynamic probes on functions of user programs and libraries,
 * through the uprobe PMU.
 *
 *   uprobe:BINARY:FUNC      (alias u:)   fires when FUNC is entered
 *   uretprobe:BINARY:FUNC   (alias ur:)  fires when FUNC returns
 *
 * BINARY is a path, or a bare name looked up on PATH as a shell would.
 * With -p PID a bare name is first looked up among the files the process
 * maps, a wildcard BINARY ("*") matches the paths of the files it maps
 * (each read as mapped), and an absolute path is resolved inside the
 * process's own root (sym/procfs.c).
 * FUNC may hold * and ?: it is matched against the function symbols of
 * the ELF file's .symtab and .dynsym (sym/elf.c finds both).
 *   uprobe:BINARY:cpp:NAME  NAME (a glob too) is matched against the C++
 *                           names of the symbols, demangled, with or
 *                           without their parameter lists
 *
 * Each target is one perf event of the uprobe PMU type, whose config1
 * points at the file's path and config2 holds the offset; it fires in
 * every process that maps the file. Nothing is written to uprobe_events,
 * so nothing outlives loupe. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <bpf/bpf.h>

#include "probes/provider.h"
#include "probes/regs.h"
#include "sym/disasm.h"
#include "sym/dwarf.h"
#include "sym/elf.h"
#include "sym/procfs.h"
#include "sym/usyms.h"


/* ---- the providers -------------------------------------------------- */

/* The view of binary of process pid (-p): a bare name among the files it
 * maps (or, if it has a tree of its own, nowhere else), an absolute path
 * inside its root (a container's paths, symlinks included, are its own).
 * found gets the path to show, real the kept path to open (procfs.h).
 * 1 if found, 0 if this is no path of the process's (look in loupe's
 * tree), -1 with a message in err. */
static int find_in_target(int pid, const char *binary, char *found,
                          char *real, char *err, size_t errlen) {
  const char *kept;
  if (!strchr(binary, '/')) {
    kept = elf_find_in_maps(pid, binary, found, PATH_MAX, err, errlen);
    if (!kept && !*err && !procfs_same_tree(pid))
      snprintf(err, errlen, "process %d maps no file named %s, and its "
               "files are not loupe's: name the file by its path as the "
               "process sees it", pid, binary);
    if (!kept) return *err ? -1 : 0;
  } else if (binary[0] == '/') {
    snprintf(found, PATH_MAX, "%s", binary);
    kept = procfs_file(pid, binary, err, errlen);
    if (!kept) return -1;
  } else {
    return 0;   /* a relative path is the user's, in loupe's tree */
  }
  snprintf(real, PATH_MAX, "%s", kept);
  return 1;
}

/* Finds the file a uprobe's (or usdt's: kind) BINARY names: found is the
 * path to show, real the path to open; false with a message in err. A
 * path through /proc/PID/root into another mount namespace is kept as it
 * is: realpath would resolve the magic link to "/", in loupe's own tree. */
bool uprobe_find_binary(const char *kind, int pid, const char *binary,
                        char *found, char *real, char *err, size_t errlen) {
  int in_target = pid > 0
                      ? find_in_target(pid, binary, found, real, err, errlen)
                      : 0;
  if (in_target) return in_target > 0;
  struct stat st;
  /* a path may name a library that is not executable ("libsimple.so") */
  bool readable_path = strchr(binary, '/') && stat(binary, &st) == 0 &&
                       S_ISREG(st.st_mode) && access(binary, R_OK) == 0;
  if (readable_path) {
    snprintf(found, PATH_MAX, "%s", binary);
  } else if (!elf_find_binary(binary, found, PATH_MAX)) {
    snprintf(err, errlen, "%s target file '%s' does not exist or is not "
             "executable", kind, binary);
    return false;
  }
  if (realpath(found, real) && access(real, R_OK) == 0) return true;
  snprintf(real, PATH_MAX, "%s", found);
  return true;
}

/* One target: the function f of the file, at file offset `offset`, named
 * PROVIDER:SHOWN_PATH:LABEL ("uprobe:/bin/bash:readline+4"). */
static void add_target(AttachPoint *ap, const char *shown_path,
                       const char *real_path, const Func *f,
                       const char *label, uint64_t offset) {
  Target *t = calloc(1, sizeof *t);
  size_t len = strlen(ap->prov->name) + strlen(shown_path) +
               strlen(label) + 3;
  t->name = malloc(len);
  snprintf(t->name, len, "%s:%s:%s", ap->prov->name, shown_path, label);
  t->event = strdup(f->name);
  t->binary = strdup(real_path);
  t->offset = offset;
  dwinfo_note_binary(real_path);   /* its types, for casts and args */
  ap_add_target(ap, t);
}

/* The last target added is named `func` for the script's func. */
static void name_last_target(AttachPoint *ap, const char *func) {
  Target *t = ap->targets;
  while (t->next) t = t->next;
  free(t->event);
  t->event = strdup(func);
}

static const Func *func_named(const FuncList *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->funcs[i].name, name)) return &l->funcs[i];
  return NULL;
}

/* The function whose code holds address a, as the file links it. */
static const Func *func_at(const FuncList *l, uint64_t a) {
  for (int i = 0; i < l->n; i++) {
    const Func *f = &l->funcs[i];
    if (a >= f->vaddr && a < f->vaddr + (f->size ? f->size : 1)) return f;
  }
  return NULL;
}

/* A uprobe's breakpoint must replace the first byte of an instruction:
 * anywhere else it changes the instruction and so what the traced process
 * runs. --unsafe skips the check. False after reporting. */
static bool on_boundary(AttachPoint *ap, const Settings *st, const char *real,
                        const Func *f, uint64_t off, Diag *d) {
  if (off == 0 || st->unsafe) return true;
  char err[200];
  uint64_t start;
  int r = code_boundary(real, f->offset, f->size, off, &start, err,
                        sizeof err);
  if (r == 1) return true;
  if (r == 0)
    diag_error(d, ap->span, "%s+%" PRIu64 " is in the middle of an "
               "instruction (the one at %s+%" PRIu64 "): a uprobe there "
               "would corrupt it", f->name, off, f->name, start);
  else
    diag_error(d, ap->span, "cannot check that %s+%" PRIu64 " starts an "
               "instruction: %s", f->name, off, err);
  if (d->demote == DEMOTE_NONE)
    diag_hint(d, "Use --unsafe to attach anyway. WARNING: a uprobe inside "
              "an instruction corrupts the traced process.");
  return false;
}

/* Whether the instruction at file offset off of the file open as fd
 * (-1: not checked) has a prefix x86's uprobes refuse (lock, and the es,
 * cs, ss and ds segment overrides): the kernel fails such a uprobe where
 * the file is mapped already, and drops it without a word where the file
 * is mapped later. */
static bool kernel_refuses_insn(int fd, uint64_t off) {
#if defined(__x86_64__)
  uint8_t code[15];
  ssize_t n = fd >= 0 ? pread(fd, code, sizeof code, (off_t)off) : 0;
  for (ssize_t i = 0; i < n; i++) {
    switch (code[i]) {
    case 0xf0: case 0x26: case 0x2e: case 0x36: case 0x3e:
      return true;
    case 0xf2: case 0xf3: case 0x64: case 0x65: case 0x66: case 0x67:
      continue;   /* other prefixes: look on */
    default:
      return false;
    }
  }
#else
  (void)fd;
  (void)off;
#endif
  return false;
}

/* An ADDRESS ("0x1234", "4660") of the file: the function holding it.
 * Returns 1 with a target, -1 after reporting. */
static int add_address(AttachPoint *ap, const Settings *st, const FuncList *l,
                       const char *shown, const char *real, const char *spec,
                       uint64_t a, Diag *d) {
  const Func *f = func_at(l, a);
  if (!f) {
    diag_error(d, ap->span, "Could not resolve address: %s:0x%" PRIx64,
               shown, a);
    return -1;
  }
  if (!on_boundary(ap, st, real, f, a - f->vaddr, d)) return -1;
  add_target(ap, shown, real, f, spec, f->offset + (a - f->vaddr));
  return 1;
}

/* FUNC, FUNC+OFFSET or an ADDRESS: one target, inside the function's
 * bounds (its symbol's size; without a disassembler loupe cannot tell
 * instruction boundaries, so an offset is trusted within them). Returns
 * 1 with a target, 0 if there is no such function, -1 after reporting. */
static int add_exact(AttachPoint *ap, const Settings *st, const FuncList *l,
                     const char *shown, const char *real, const char *spec,
                     Diag *d) {
  char *end;
  if (spec[0] >= '0' && spec[0] <= '9') {
    uint64_t a = strtoull(spec, &end, 0);
    if (!*end) return add_address(ap, st, l, shown, real, spec, a, d);
  }
  char name[1024];
  uint64_t off = 0;
  bool has_off = false;
  const char *plus = strrchr(spec, '+');
  if (plus && plus > spec && plus[1] >= '0' && plus[1] <= '9') {
    off = strtoull(plus + 1, &end, 0);
    has_off = !*end;
  }
  snprintf(name, sizeof name, "%.*s",
           (int)(has_off ? (size_t)(plus - spec) : strlen(spec)), spec);
  const Func *f = func_named(l, name);
  if (!f) return 0;
  if (f->size == 0 && !st->unsafe) {
    diag_error(d, ap->span, "Could not determine boundary for %s (symbol "
               "has size 0).", name);
    if (d->demote == DEMOTE_NONE)
      diag_hint(d, "Use --unsafe to force attachment. WARNING: This option "
                "could lead to data corruption in the target process.");
    return -1;
  }
  if (has_off && f->size && off >= f->size) {
    diag_error(d, ap->span, "Offset outside the function bounds ('%s' size "
               "is %" PRIu64 ")", name, f->size);
    return -1;
  }
  if (!on_boundary(ap, st, real, f, off, d)) return -1;
  int fd = open(real, O_RDONLY | O_CLOEXEC);
  bool refused = kernel_refuses_insn(fd, f->offset + off);
  if (fd >= 0) close(fd);
  if (refused) {
    diag_error(d, ap->span, "the kernel cannot put a uprobe on the "
               "instruction at %s (it has a lock or segment prefix)", spec);
    return -1;
  }
  add_target(ap, shown, real, f, spec, f->offset + off);
  return 1;
}

/* Whether name is what pattern (a glob if wild) names. */
static bool name_is(const char *pattern, bool wild, const char *name) {
  return wild ? glob_match(pattern, name) : !strcmp(pattern, name);
}

/* Whether function f is what pattern names: its symbol, or with the cpp
 * qualifier its C++ name, with or without its parameter list (a symbol
 * that is no mangled C++ name stands for itself). On a match, label
 * (size bytes) gets the name its target shows: the symbol, or
 * "cpp:NAME"; and with full_out, *full_out the C++ name with its
 * parameters (malloc'd; NULL if the symbol is not a mangled C++ name). */
static bool func_matches(const Func *f, const char *pattern, bool cpp,
                         char *label, size_t size, char **full_out) {
  bool wild = has_wildcard(pattern);
  if (full_out) *full_out = NULL;
  if (!cpp) {
    snprintf(label, size, "%s", f->name);
    return name_is(pattern, wild, f->name);
  }
  char *plain = usyms_demangle(f->name, false);
  char *full = usyms_demangle(f->name, true);
  const char *name = plain ? plain : f->name;
  bool hit = name_is(pattern, wild, name) ||
             (full && name_is(pattern, wild, full));
  snprintf(label, size, "cpp:%s", name);
  free(plain);
  if (hit && full_out)
    *full_out = full;
  else
    free(full);
  return hit;
}

/* Adds a target for each function matching pattern (see func_matches)
 * but those whose first instruction the kernel cannot probe, left out
 * with a warning; how many it added. */
static int add_matches(AttachPoint *ap, const FuncList *l,
                       const char *shown_path, const char *real_path,
                       const char *pattern, bool cpp, Diag *d) {
  int found = 0;
  char label[1024];
  int fd = open(real_path, O_RDONLY | O_CLOEXEC);   /* read once per file */
  for (int i = 0; i < l->n; i++) {
    const Func *f = &l->funcs[i];
    char *full;
    if (func_matches(f, pattern, cpp, label, sizeof label, &full)) {
      if (kernel_refuses_insn(fd, f->offset)) {
        diag_warning(d, ap->span, "%s:%s:%s: the kernel cannot put a uprobe "
                     "on this function's first instruction (it has a lock "
                     "or segment prefix); skipped", ap->prov->name,
                     shown_path, label);
        free(full);
        continue;
      }
      add_target(ap, shown_path, real_path, f, label, f->offset);
      if (full) name_last_target(ap, full);   /* func: as usym() shows */
      free(full);
      found++;
    }
  }
  if (fd >= 0) close(fd);
  return found;
}

/* For a wildcard BINARY with -p: every file the process maps whose path
 * matches gets a target per matching function (or with `list` set, a line
 * there, for -l). */
typedef struct MappedMatch {
  AttachPoint *ap;
  const char *binary, *func;
  bool cpp;   /* func is a C++ name (the cpp qualifier) */
  int found;
  FILE *list;
  const char *pname;
  Diag *d;     /* for the functions left out */
} MappedMatch;

/* The functions of one file (shown as path, opened as real) that match. */
static void match_file(MappedMatch *m, const char *path, const char *real) {
  char err[PATH_MAX + 100];
  FuncList funcs = {0};
  /* files that are no ELF (locale archives, caches) have no functions */
  if (elf_read_functions(real, &funcs, err, sizeof err) < 0) return;
  char label[1024];
  if (m->list) {
    for (int i = 0; i < funcs.n; i++)
      if (func_matches(&funcs.funcs[i], m->func, m->cpp, label, sizeof label,
                       NULL))
        fprintf(m->list, "%s:%s:%s\n", m->pname, path, label);
  } else {
    m->found += add_matches(m->ap, &funcs, path, real, m->func, m->cpp, m->d);
  }
  elf_funcs_free(&funcs);
}

/* A file the -p process maps, if its path matches: the mapped file
 * itself is read (procfs_mapped_file), not what its path names now. */
static bool match_mapped(const ProcMapping *pm, void *arg) {
  MappedMatch *m = arg;
  char err[PATH_MAX + 100];
  const char *real;
  if (glob_match(m->binary, pm->path) &&
      (real = procfs_mapped_file(pm, err, sizeof err)))
    match_file(m, pm->path, real);
  return false;
}

/* uprobe:BINARY@FILE:LINE — the first statement of a source line, found
 * in the binary's line tables. */
static int expand_source_line(AttachPoint *ap, const Settings *st, Diag *d) {
  const char *at = strchr(ap->parts[0], '@');
  char binary[PATH_MAX], found[PATH_MAX], real[PATH_MAX], err[PATH_MAX + 200];
  char *end;
  long line = strtol(ap->parts[1], &end, 10);
  if (*end || line <= 0 || !at[1] || strcmp(ap->prov->name, "uprobe")) {
    diag_error(d, ap->span, "a source location is written "
               "uprobe:BINARY@FILE:LINE, with a line number, on a uprobe");
    return -1;
  }
  snprintf(binary, sizeof binary, "%.*s", (int)(at - ap->parts[0]),
           ap->parts[0]);
  if (!uprobe_find_binary("uprobe", st->target_pid, binary, found, real,
                          err, sizeof err)) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  Func f = {.name = ap->parts[1]};
  const char *in_func;
  if (!dwinfo_line_offset(real, at + 1, (int)line, &f.offset, &in_func,
                          err, sizeof err)) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  add_target(ap, ap->parts[0], real, &f, f.name, f.offset);
  if (in_func) name_last_target(ap, in_func);   /* the line's function */
  return 0;
}

/* The regular files a wildcard path matches (glob(3), without -p): the
 * user's own paths, in loupe's tree. */
static void match_globbed(MappedMatch *m) {
  glob_t g;
  if (glob(m->binary, 0, NULL, &g) != 0) return;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    char real[PATH_MAX];
    struct stat st;
    if (stat(g.gl_pathv[i], &st) == 0 && S_ISREG(st.st_mode) &&
        realpath(g.gl_pathv[i], real))
      match_file(m, g.gl_pathv[i], real);
  }
  globfree(&g);
}

static int uprobe_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  const char *pname = ap->prov->name;
  /* uprobe:BINARY:cpp:NAME: NAME is a C++ name, demangled */
  bool cpp = ap->nparts == 3 && !strcmp(ap->parts[1], "cpp");
  if ((ap->nparts != 2 && !cpp) || !*ap->parts[0] ||
      !*ap->parts[ap->nparts - 1]) {
    diag_error(d, ap->span, "%s probe type requires 2 arguments", pname);
    if (ap->nparts == 3)
      diag_hint(d, "a C++ name is written %s:BINARY:cpp:NAME, quoted when "
                "it holds '::'", pname);
    return -1;
  }
  if (probe_pmu_type("uprobe") < 0) {
    diag_error(d, ap->span, "uprobes are not available on this kernel (no "
               "uprobe PMU: CONFIG_UPROBES is off)");
    return -1;
  }
  const char *binary = ap->parts[0], *func = ap->parts[ap->nparts - 1];
  if (strchr(binary, '@') && !has_wildcard(binary) && !cpp)
    return expand_source_line(ap, st, d);
  char what[2 * PATH_MAX];
  if (has_wildcard(binary)) {
    /* with -p the files the process maps, else the file system's */
    MappedMatch m = {.ap = ap, .binary = binary, .func = func, .cpp = cpp,
                     .d = d};
    if (st->target_pid > 0)
      procfs_each_mapped_file(st->target_pid, match_mapped, &m);
    else
      match_globbed(&m);
    if (m.found > 0) return 0;
    snprintf(what, sizeof what, "%s:%s%s", binary, cpp ? "cpp:" : "", func);
    return probe_no_matches(ap, d, what);
  }
  char found[PATH_MAX], real[PATH_MAX], err[PATH_MAX + 100];
  if (!uprobe_find_binary("uprobe", st->target_pid, binary, found, real,
                          err, sizeof err)) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  FuncList funcs = {0};
  if (elf_read_functions(real, &funcs, err, sizeof err) < 0) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  /* `probe` shows a path as written, a bare name as found on PATH. */
  const char *shown = strchr(binary, '/') ? binary : found;
  int n = has_wildcard(func) || cpp
              ? add_matches(ap, &funcs, shown, real, func, cpp, d)
              : add_exact(ap, st, &funcs, shown, real, func, d);
  elf_funcs_free(&funcs);
  if (n > 0) return 0;
  if (n < 0) return -1;
  snprintf(what, sizeof what, "%s:%s%s", shown, cpp ? "cpp:" : "", func);
  return probe_no_matches(ap, d, what);
}

/* ---- uprobe_multi links ---------------------------------------------------
 * Debian 12's libbpf predates these links, so the attribute is laid out
 * here as the kernel's uapi header has it. */

#define UPROBE_MULTI_RETURN (1U << 0)   /* BPF_F_UPROBE_MULTI_RETURN */

struct uprobe_multi_link_attr {
  uint32_t prog_fd, target_fd, attach_type, flags;
  uint64_t path, offsets, ref_ctr_offsets, cookies;
  uint32_t cnt, multi_flags, pid, pad;
};

uint32_t uprobe_multi_attach_type(void) {
  static int known = -1;
  if (known < 0) {
    const struct bpf_insn ret0[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
        {.code = BPF_JMP | BPF_EXIT},
    };
    LIBBPF_OPTS(bpf_prog_load_opts, opts,
                .expected_attach_type = ATTACH_UPROBE_MULTI);
    int fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "loupe_probe", "GPL",
                           ret0, 2, &opts);
    /* Kernels before 6.6 load it too (they ignore the attach type of a
     * kprobe program) but refuse the link (EINVAL); those that have the
     * links try to open the file, and "/" is none (EBADF). */
    known = 0;
    if (fd >= 0) {
      uint64_t offset = 0;
      struct uprobe_multi_link_attr attr = {
          .prog_fd = (uint32_t)fd, .attach_type = ATTACH_UPROBE_MULTI,
          .path = (uint64_t)(uintptr_t)"/",
          .offsets = (uint64_t)(uintptr_t)&offset, .cnt = 1};
      int link = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
      known = link < 0 && errno == EBADF;
      if (link >= 0) close(link);
      close(fd);
    }
  }
  return known ? ATTACH_UPROBE_MULTI : 0;
}

int uprobe_multi_link(const char *path, int n, const uint64_t *offsets,
                      const uint64_t *ref_ctrs, const uint64_t *cookies,
                      bool retprobe, int pid, int prog_fd, LinkSet *links,
                      char *err, size_t errlen) {
  struct uprobe_multi_link_attr attr = {
      .prog_fd = (uint32_t)prog_fd,
      .attach_type = ATTACH_UPROBE_MULTI,
      .path = (uint64_t)(uintptr_t)path,
      .offsets = (uint64_t)(uintptr_t)offsets,
      .ref_ctr_offsets = (uint64_t)(uintptr_t)ref_ctrs,
      .cookies = (uint64_t)(uintptr_t)cookies,
      .cnt = (uint32_t)n,
      .multi_flags = retprobe ? UPROBE_MULTI_RETURN : 0,
      .pid = pid > 0 ? (uint32_t)pid : 0,
  };
  int fd = (int)syscall(SYS_bpf, BPF_LINK_CREATE, &attr, sizeof attr);
  if (fd < 0) {
    int saved = errno;   /* callers look at it */
    snprintf(err, errlen, "creating its uprobe_multi link: %s",
             strerror(saved));
    errno = saved;
    return -1;
  }
  links_add(links, fd);
  return 0;
}

/* The kernel's answer to a place whose first instruction it cannot
 * probe (ENOTSUPP: a lock prefix, ...). */
#define UPROBE_REFUSED 524

static int attach_uprobe(const Target *t, const Settings *st, bool retprobe,
                         int prog_fd, LinkSet *links, char *err,
                         size_t errlen) {
  /* config1: the file's path; config2: where in the file. The event fires
   * in every process that runs that code, or with -p in that one only. */
  int pid = st->target_pid > 0 ? st->target_pid : -1;   /* -p */
  int rc = probe_pmu_attach("uprobe", retprobe, pid,
                            (uint64_t)(uintptr_t)t->binary, t->offset,
                            target_cookie(t), prog_fd, links, err, errlen);
  if (rc < 0 && errno == UPROBE_REFUSED)
    snprintf(err, errlen, "the kernel cannot put a uprobe on the "
             "function's first instruction (%s)", strerror(errno));
  return rc;
}

static int uprobe_attach(const Target *t, const Settings *st, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  return attach_uprobe(t, st, false, prog_fd, links, err, errlen);
}

static int uretprobe_attach(const Target *t, const Settings *st, int prog_fd,
                            LinkSet *links, char *err, size_t errlen) {
  return attach_uprobe(t, st, true, prog_fd, links, err, errlen);
}

/* A program that serves several places (a wildcard's, or of several
 * attach points) goes on with uprobe_multi links where the kernel has
 * them: one per file, for all of its places at once. */
static uint32_t uprobe_attach_type(const AttachPoint *ap, const Target *t) {
  if (t || ap->ntargets < 2) return 0;
  return uprobe_multi_attach_type();
}

/* One file's places of a wildcard, linked in as few uprobe_multi links as
 * the kernel takes: all at once, or, when it refuses an instruction (and
 * says not which), each half again, down to the places it refuses, which
 * are left out with a warning. */
typedef struct FileLinks {
  const AttachPoint *ap;
  const Target **targets;   /* the file's, n of them */
  bool retprobe;
  int pid, prog_fd;
  LinkSet *links;
  Diag *d;
} FileLinks;

/* Returns how many places it linked, or -1 with a message in err. */
static int link_places(FileLinks *f, const Target **t, int n, char *err,
                       size_t errlen) {
  uint64_t *offsets = calloc((size_t)n, sizeof *offsets),
           *cookies = calloc((size_t)n, sizeof *cookies);
  if (!offsets || !cookies) abort();
  for (int i = 0; i < n; i++) {
    offsets[i] = t[i]->offset;
    cookies[i] = target_cookie(t[i]);
  }
  int rc = uprobe_multi_link(t[0]->binary, n, offsets, NULL, cookies,
                             f->retprobe, f->pid, f->prog_fd, f->links, err,
                             errlen);
  int refused = rc < 0 && errno == UPROBE_REFUSED;
  free(offsets);
  free(cookies);
  if (rc == 0) return n;
  if (!refused || !has_wildcard(f->ap->text)) return -1;
  if (n == 1) {
    diag_warning(f->d, f->ap->span, "%s: the kernel cannot put a uprobe on "
                 "this function's first instruction; skipped", t[0]->name);
    return 0;
  }
  int first = link_places(f, t, n / 2, err, errlen);
  int second = first < 0 ? -1 : link_places(f, t + n / 2, n - n / 2, err,
                                            errlen);
  return second < 0 ? -1 : first + second;
}

static int attach_group(const AttachPoint *ap, const Settings *st,
                        uint32_t attach_type, int prog_fd, LinkSet *links,
                        Diag *d, char *err, size_t errlen) {
  if (attach_type != ATTACH_UPROBE_MULTI) return 0;
  FileLinks f = {.ap = ap, .retprobe = !strcmp(ap->prov->name, "uretprobe"),
                 .pid = st->target_pid > 0 ? st->target_pid : -1,   /* -p */
                 .prog_fd = prog_fd, .links = links, .d = d};
  f.targets = calloc((size_t)ap->ntargets, sizeof *f.targets);
  if (!f.targets) abort();
  /* a file's places: the targets of its path, each file once */
  int linked = 0;
  for (const Target *t = ap->targets; t && linked >= 0; t = t->next) {
    bool seen = false;
    for (const Target *b = ap->targets; b != t && !seen; b = b->next)
      seen = !strcmp(b->binary, t->binary);
    if (seen) continue;
    int n = 0;
    for (const Target *o = t; o; o = o->next)
      if (!strcmp(o->binary, t->binary)) f.targets[n++] = o;
    int k = link_places(&f, f.targets, n, err, errlen);
    linked = k < 0 ? -1 : linked + k;
  }
  free(f.targets);
  if (linked == 0)   /* 0 would mean "one by one" */
    snprintf(err, errlen, "the kernel cannot put a uprobe on the first "
             "instruction of any function matched");
  return linked > 0 ? linked : -1;
}

/* -lv: the function's parameters, one per line as bpftrace shows them
 * ("    int* n"), when the binary's debug information describes it. */
static void list_params(const char *path, const char *func, FILE *out) {
  const DwParam *params;
  char err[PATH_MAX + 200];
  int n = dwinfo_func_params(path, func, &params, err, sizeof err);
  for (int i = 0; i < n; i++)
    fprintf(out, "    %s%s%s\n", params[i].type_text,
            params[i].name ? " " : "", params[i].name ? params[i].name : "");
}

/* Lists provider:BINARY:FUNC for the functions of the binary that the
 * pattern names ("uprobe:/bin/bash:read*"). Every process's files cannot
 * be listed, so a pattern without a binary lists nothing. */
static void list_functions(const char *pname, const char *pattern,
                           const Settings *st, FILE *out) {
  if (!pattern || probe_pmu_type("uprobe") < 0) return;
  size_t plen = strlen(pname);
  if (strncmp(pattern, pname, plen) || pattern[plen] != ':') return;
  const char *binary = pattern + plen + 1;
  size_t blen = strcspn(binary, ":");
  if (blen == 0 || blen >= PATH_MAX) return;
  char written[PATH_MAX], found[PATH_MAX], real[PATH_MAX], err[PATH_MAX + 100];
  snprintf(written, sizeof written, "%.*s", (int)blen, binary);
  const char *func_pattern = binary[blen] == ':' ? binary + blen + 1 : "*";
  bool cpp = !strncmp(func_pattern, "cpp:", 4);
  if (cpp) func_pattern += 4;
  if (!*func_pattern) func_pattern = "*";
  if (st->target_pid > 0 && has_wildcard(written)) {
    /* -p: the files the process maps */
    MappedMatch m = {.binary = written, .func = func_pattern, .cpp = cpp,
                     .list = out, .pname = pname};
    procfs_each_mapped_file(st->target_pid, match_mapped, &m);
    return;
  }
  if (has_wildcard(written)) {
    MappedMatch m = {.binary = written, .func = func_pattern, .cpp = cpp,
                     .list = out, .pname = pname};
    match_globbed(&m);
    return;
  }
  if (!uprobe_find_binary("uprobe", st->target_pid, written, found, real,
                          err, sizeof err))
    return;
  FuncList funcs = {0};
  if (elf_read_functions(real, &funcs, err, sizeof err) < 0) return;
  const char *shown = strchr(written, '/') ? written : found;
  char label[1024];
  for (int i = 0; i < funcs.n; i++)
    if (func_matches(&funcs.funcs[i], func_pattern, cpp, label,
                     sizeof label, NULL)) {
      fprintf(out, "%s:%s:%s\n", pname, shown, label);
      if (st->list_verbose) list_params(real, funcs.funcs[i].name, out);
    }
  elf_funcs_free(&funcs);
}

static void uprobe_list(const char *pattern, const Settings *st, FILE *out) {
  list_functions("uprobe", pattern, st, out);
}

static void uretprobe_list(const char *pattern, const Settings *st, FILE *out) {
  list_functions("uretprobe", pattern, st, out);
}

const Provider uprobe_provider = {
    .name = "uprobe",
    .aliases = (const char *const[]){"u", NULL},
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = uprobe_expand,
    .attach = uprobe_attach,
    .list = uprobe_list,
    .attach_type = uprobe_attach_type,
    .attach_group = attach_group,
    .fires_newest_first = true,
    .names_by_cookie = true,
    .args = ARGS_DEBUGINFO,
    .argn = ARGN_REGS,
    .func = FUNC_REGS,
    .user_space = true,
    .emit_arg = regs_emit_arg,
};

const Provider uretprobe_provider = {
    .name = "uretprobe",
    .aliases = (const char *const[]){"ur", NULL},
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = uprobe_expand,
    .attach = uretprobe_attach,
    .list = uretprobe_list,
    .attach_type = uprobe_attach_type,
    .attach_group = attach_group,
    .fires_newest_first = true,
    .names_by_cookie = true,
    .retval = RETVAL_REGS,
    .func = FUNC_REGS,
    .user_space = true,
    .ip_after_return = true,
    .emit_retval = regs_emit_retval,
};
