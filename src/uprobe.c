/* uprobe: dynamic probes on functions of user programs and libraries,
 * through the uprobe PMU.
 *
 *   uprobe:BINARY:FUNC      (alias u:)   fires when FUNC is entered
 *   uretprobe:BINARY:FUNC   (alias ur:)  fires when FUNC returns
 *
 * BINARY is a path, or a bare name looked up on PATH as a shell would.
 * FUNC may hold * and ?: it is matched against the function symbols of
 * the ELF file's .symtab and .dynsym. The kernel wants a file offset, not
 * the symbol's virtual address: the PT_LOAD segment holding the address
 * converts one into the other.
 *
 * Each target is one perf event of the uprobe PMU type, whose config1
 * points at the file's path and config2 holds the offset; it fires in
 * every process that maps the file. Nothing is written to uprobe_events,
 * so nothing outlives loupe. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "provider.h"


/* ---- the binary ----------------------------------------------------- */

static bool is_executable_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
         access(path, X_OK) == 0;
}

static bool is_elf_file(const char *dir, const char *name) {
  char path[PATH_MAX];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  unsigned char magic[4] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(magic, 1, 4, f);
  fclose(f);
  return n == 4 && magic[0] == 0x7f && magic[1] == 'E' && magic[2] == 'L' &&
         magic[3] == 'F';
}

/* A shared library named without its path ("libc", "libssl"): the
 * NAME.so or NAME.so.N ELF file in the usual library directories, the
 * shortest such name first (libc.so.6 before libc.so.6.bak; libc.so, a
 * linker script, is no ELF file). */
static bool find_library(const char *name, char *out, size_t outlen) {
  static const char *const dirs[] = {
      "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
      "/usr/lib64", "/lib", "/usr/lib", "/usr/local/lib", NULL};
  size_t nlen = strlen(name);
  for (int i = 0; dirs[i]; i++) {
    DIR *dir = opendir(dirs[i]);
    if (!dir) continue;
    char best[NAME_MAX + 1] = "";
    struct dirent *e;
    while ((e = readdir(dir))) {
      const char *rest = e->d_name + nlen;
      if (strncmp(e->d_name, name, nlen) != 0 || strncmp(rest, ".so", 3) != 0 ||
          (rest[3] != '\0' && rest[3] != '.') ||
          !is_elf_file(dirs[i], e->d_name))
        continue;
      if (!best[0] || strlen(e->d_name) < strlen(best))
        snprintf(best, sizeof(best), "%s", e->d_name);
    }
    closedir(dir);
    if (best[0]) {
      snprintf(out, outlen, "%s/%s", dirs[i], best);
      struct stat st;
      if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
    }
  }
  return false;
}

/* Finds the file BINARY names: a path as it is, a bare name in the first
 * PATH directory holding an executable of that name, or else a shared
 * library of that name. The path found goes to out; false if there is
 * none. */
static bool find_binary(const char *binary, char *out, size_t outlen) {
  if (strchr(binary, '/')) {
    snprintf(out, outlen, "%s", binary);
    return is_executable_file(out);
  }
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  while (*path) {
    size_t len = strcspn(path, ":");
    if (len > 0) {
      snprintf(out, outlen, "%.*s/%s", (int)len, path, binary);
      if (is_executable_file(out)) return true;
    }
    path += len;
    if (*path == ':') path++;
  }
  return find_library(binary, out, outlen);
}

/* ---- the ELF file's functions --------------------------------------- */

typedef struct Func {
  char *name;
  uint64_t offset;   /* in the file */
} Func;

typedef struct FuncList {
  Func *funcs;
  int n, cap;
} FuncList;

static void funcs_add(FuncList *l, const char *name, uint64_t offset) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 256;
    l->funcs = realloc(l->funcs, l->cap * sizeof(Func));
  }
  l->funcs[l->n].name = strdup(name);
  l->funcs[l->n].offset = offset;
  l->n++;
}

static void funcs_free(FuncList *l) {
  for (int i = 0; i < l->n; i++) free(l->funcs[i].name);
  free(l->funcs);
  l->funcs = NULL;
  l->n = l->cap = 0;
}

static int compare_funcs(const void *a, const void *b) {
  return strcmp(((const Func *)a)->name, ((const Func *)b)->name);
}

/* Sorts by name and keeps one of each: a function is usually in both
 * .symtab and .dynsym. */
static void funcs_sort_unique(FuncList *l) {
  if (l->n == 0) return;
  qsort(l->funcs, l->n, sizeof(Func), compare_funcs);
  int k = 1;
  for (int i = 1; i < l->n; i++) {
    if (strcmp(l->funcs[i].name, l->funcs[k - 1].name))
      l->funcs[k++] = l->funcs[i];
    else
      free(l->funcs[i].name);
  }
  l->n = k;
}

/* The file offset of virtual address vaddr: through the PT_LOAD segment
 * whose file image holds it. False if no segment does. */
static bool vaddr_to_offset(Elf *e, uint64_t vaddr, uint64_t *offset) {
  size_t nphdrs;
  if (elf_getphdrnum(e, &nphdrs) != 0) return false;
  for (size_t i = 0; i < nphdrs; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
    if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
      *offset = vaddr - ph.p_vaddr + ph.p_offset;
      return true;
    }
  }
  return false;
}

/* Adds the defined function symbols of one symbol table section. */
static void read_symbols(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
                         FuncList *l) {
  Elf_Data *data = elf_getdata(scn, NULL);
  if (!data || sh->sh_entsize == 0) return;
  size_t nsyms = sh->sh_size / sh->sh_entsize;
  for (size_t i = 0; i < nsyms; i++) {
    GElf_Sym sym;
    if (!gelf_getsym(data, (int)i, &sym)) continue;
    if (GELF_ST_TYPE(sym.st_info) != STT_FUNC) continue;
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
    const char *name = elf_strptr(e, sh->sh_link, sym.st_name);
    uint64_t offset;
    if (name && *name && vaddr_to_offset(e, sym.st_value, &offset))
      funcs_add(l, name, offset);
  }
}

/* Reads the function symbols of the ELF file at path into l, sorted by
 * name. Returns 0, or -1 with a message in err. */
static int read_functions(const char *path, FuncList *l, char *err,
                          size_t errlen) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
    return -1;
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  Elf *e = elf_begin(fd, ELF_C_READ, NULL);
  if (!e || elf_kind(e) != ELF_K_ELF) {
    snprintf(err, errlen, "uprobe target file '%s' is not an ELF file",
             path);
    if (e) elf_end(e);
    close(fd);
    return -1;
  }
  for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) &&
        (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
      read_symbols(e, scn, &sh, l);
  }
  elf_end(e);
  close(fd);
  funcs_sort_unique(l);
  return 0;
}

/* ---- the providers -------------------------------------------------- */

static void add_target(AttachPoint *ap, const char *shown_path,
                       const char *real_path, const Func *f) {
  Target *t = calloc(1, sizeof *t);
  size_t len = strlen(ap->prov->name) + strlen(shown_path) +
               strlen(f->name) + 3;
  t->name = malloc(len);
  snprintf(t->name, len, "%s:%s:%s", ap->prov->name, shown_path, f->name);
  t->event = strdup(f->name);
  t->binary = strdup(real_path);
  t->offset = f->offset;
  Target **tail = &ap->targets;
  while (*tail) tail = &(*tail)->next;
  *tail = t;
  ap->ntargets++;
}

/* Adds a target for each function matching pattern; how many were. */
static int add_matches(AttachPoint *ap, const FuncList *l,
                       const char *shown_path, const char *real_path,
                       const char *pattern) {
  int found = 0;
  bool wild = has_wildcard(pattern);
  for (int i = 0; i < l->n; i++) {
    const Func *f = &l->funcs[i];
    if (wild ? glob_match(pattern, f->name) : !strcmp(pattern, f->name)) {
      add_target(ap, shown_path, real_path, f);
      found++;
    }
  }
  return found;
}

static int uprobe_expand(AttachPoint *ap, Diag *d) {
  const char *pname = ap->prov->name;
  if (ap->nparts != 2 || !*ap->parts[0] || !*ap->parts[1]) {
    diag_error(d, ap->span, "%s probe type requires 2 arguments", pname);
    return -1;
  }
  if (probe_pmu_type("uprobe") < 0) {
    diag_error(d, ap->span, "uprobes are not available on this kernel (no "
               "uprobe PMU: CONFIG_UPROBES is off)");
    return -1;
  }
  const char *binary = ap->parts[0], *func = ap->parts[1];
  char found[PATH_MAX], real[PATH_MAX], err[PATH_MAX + 100];
  if (!find_binary(binary, found, sizeof found) || !realpath(found, real)) {
    diag_error(d, ap->span, "uprobe target file '%s' does not exist or is "
               "not executable", binary);
    return -1;
  }
  FuncList funcs = {0};
  if (read_functions(real, &funcs, err, sizeof err) < 0) {
    diag_error(d, ap->span, "%s", err);
    return -1;
  }
  /* `probe` shows a path as written, a bare name as found on PATH. */
  const char *shown = strchr(binary, '/') ? binary : found;
  int n = add_matches(ap, &funcs, shown, real, func);
  funcs_free(&funcs);
  if (n > 0) return 0;
  if (has_wildcard(func))
    diag_error(d, ap->span, "No %s matches %s:%s", pname, shown, func);
  else
    diag_error(d, ap->span, "Could not resolve symbol: %s:%s", shown, func);
  return -1;
}

static int attach_uprobe(const Target *t, bool retprobe, int prog_fd,
                         LinkSet *links, char *err, size_t errlen) {
  /* config1: the file's path; config2: where in the file. The event fires
   * in every process that runs that code. */
  return probe_pmu_attach("uprobe", retprobe, (uint64_t)(uintptr_t)t->binary,
                          t->offset, prog_fd, links, err, errlen);
}

static int uprobe_attach(const Target *t, int prog_fd, LinkSet *links,
                         char *err, size_t errlen) {
  return attach_uprobe(t, false, prog_fd, links, err, errlen);
}

static int uretprobe_attach(const Target *t, int prog_fd, LinkSet *links,
                            char *err, size_t errlen) {
  return attach_uprobe(t, true, prog_fd, links, err, errlen);
}

/* Lists provider:BINARY:FUNC for the functions of the binary that the
 * pattern names ("uprobe:/bin/bash:read*"). Every process's files cannot
 * be listed, so a pattern without a binary lists nothing. */
static void list_functions(const char *pname, const char *pattern,
                           FILE *out) {
  if (!pattern || probe_pmu_type("uprobe") < 0) return;
  size_t plen = strlen(pname);
  if (strncmp(pattern, pname, plen) || pattern[plen] != ':') return;
  const char *binary = pattern + plen + 1;
  size_t blen = strcspn(binary, ":");
  if (blen == 0 || blen >= PATH_MAX) return;
  char written[PATH_MAX], found[PATH_MAX], real[PATH_MAX], err[PATH_MAX + 100];
  snprintf(written, sizeof written, "%.*s", (int)blen, binary);
  if (has_wildcard(written) || !find_binary(written, found, sizeof found) ||
      !realpath(found, real))
    return;
  FuncList funcs = {0};
  if (read_functions(real, &funcs, err, sizeof err) < 0) return;
  const char *shown = strchr(written, '/') ? written : found;
  const char *func_pattern = binary[blen] == ':' ? binary + blen + 1 : "*";
  for (int i = 0; i < funcs.n; i++)
    if (glob_match(*func_pattern ? func_pattern : "*", funcs.funcs[i].name))
      fprintf(out, "%s:%s:%s\n", pname, shown, funcs.funcs[i].name);
  funcs_free(&funcs);
}

static void uprobe_list(const char *pattern, FILE *out) {
  list_functions("uprobe", pattern, out);
}

static void uretprobe_list(const char *pattern, FILE *out) {
  list_functions("uretprobe", pattern, out);
}

const Provider uprobe_provider = {
    .name = "uprobe",
    .alias = "u",
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = uprobe_expand,
    .attach = uprobe_attach,
    .list = uprobe_list,
};

const Provider uretprobe_provider = {
    .name = "uretprobe",
    .alias = "ur",
    .prog_type = BPF_PROG_TYPE_KPROBE,
    .expand = uprobe_expand,
    .attach = uretprobe_attach,
    .list = uretprobe_list,
};
