/* elf: finding user-space binaries and reading their function symbols.
 * The kernel wants a file offset, not a symbol's virtual address: the
 * PT_LOAD segment holding the address converts one into the other. */
#include "sym/elf.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
      /* The name must match before rest may point past it: a name longer
       * than d_name would put rest outside the entry. */
      if (strncmp(e->d_name, name, nlen) != 0) continue;
      const char *rest = e->d_name + nlen;
      if (strncmp(rest, ".so", 3) != 0 ||
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
bool elf_find_binary(const char *binary, char *out, size_t outlen) {
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

/* Whether base (a file name) is name, or name.so, name.so.N. */
static bool base_matches(const char *base, const char *name) {
  size_t nlen = strlen(name);
  if (strncmp(base, name, nlen)) return false;
  const char *rest = base + nlen;
  return !*rest ||
         (!strncmp(rest, ".so", 3) && (rest[3] == '\0' || rest[3] == '.'));
}

int elf_each_mapped_file(int pid, bool (*fn)(const char *path, void *arg),
                         void *arg) {
  char maps[64];
  snprintf(maps, sizeof maps, "/proc/%d/maps", pid);
  FILE *f = fopen(maps, "r");
  if (!f) return -1;
  elf_maps_each_file(f, fn, arg);
  fclose(f);
  return 0;
}

void elf_maps_each_file(FILE *f, bool (*fn)(const char *path, void *arg),
                        void *arg) {
  char line[PATH_MAX + 256], last[PATH_MAX + 256] = "";
  while (fgets(line, sizeof line, f)) {
    /* address perms offset dev inode   pathname */
    char *path = strchr(line, '/');
    if (!path) continue;
    path[strcspn(path, "\n")] = '\0';
    /* a file's mappings are adjacent: report each file once */
    if (!strcmp(path, last)) continue;
    snprintf(last, sizeof last, "%s", path);
    if (fn(path, arg)) break;
  }
}

typedef struct MapsFind {
  const char *name;
  char *out;
  size_t outlen;
  bool found;
} MapsFind;

static bool maps_find_one(const char *path, void *arg) {
  MapsFind *m = arg;
  if (!base_matches(strrchr(path, '/') + 1, m->name)) return false;
  snprintf(m->out, m->outlen, "%s", path);
  return m->found = true;
}

bool elf_find_in_maps(int pid, const char *name, char *out, size_t outlen) {
  MapsFind m = {name, out, outlen, false};
  elf_each_mapped_file(pid, maps_find_one, &m);
  return m.found;
}

bool elf_other_mount_ns(int pid) {
  char theirs[64];
  struct stat self_st, their_st;
  snprintf(theirs, sizeof theirs, "/proc/%d/ns/mnt", pid);
  return stat("/proc/self/ns/mnt", &self_st) == 0 &&
         stat(theirs, &their_st) == 0 && self_st.st_ino != their_st.st_ino;
}

/* ---- the ELF file's functions --------------------------------------- */

static void funcs_add(FuncList *l, const char *name, uint64_t offset,
                      const GElf_Sym *sym) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 256;
    l->funcs = realloc(l->funcs, l->cap * sizeof(Func));
  }
  l->funcs[l->n].name = strdup(name);
  l->funcs[l->n].offset = offset;
  l->funcs[l->n].vaddr = sym->st_value;
  l->funcs[l->n].size = sym->st_size;
  l->n++;
}

void elf_funcs_free(FuncList *l) {
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
bool elf_vaddr_to_offset(Elf *e, uint64_t vaddr, uint64_t *offset) {
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
    if (name && *name && elf_vaddr_to_offset(e, sym.st_value, &offset))
      funcs_add(l, name, offset, &sym);
  }
}

/* Reads the function symbols of the ELF file at path into l, sorted by
 * name. Returns 0, or -1 with a message in err. */
Elf *elf_open_file(const char *path, const char *kind, int *fd, char *err,
                   size_t errlen) {
  if (elf_version(EV_CURRENT) == EV_NONE) {
    snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
    return NULL;
  }
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  Elf *e = elf_begin(*fd, ELF_C_READ, NULL);
  if (!e || elf_kind(e) != ELF_K_ELF) {
    snprintf(err, errlen, "%s target file '%s' is not an ELF file", kind,
             path);
    if (e) elf_end(e);
    close(*fd);
    return NULL;
  }
  return e;
}

int elf_read_functions(const char *path, FuncList *l, char *err,
                          size_t errlen) {
  int fd;
  Elf *e = elf_open_file(path, "uprobe", &fd, err, errlen);
  if (!e) return -1;
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
