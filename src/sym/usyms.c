/* usyms: user-space addresses to names with libdwfl, which reads a
 * process's maps, opens its files (and their separate debug files) and
 * finds the symbol of an address, PIE and shared libraries included. One
 * Dwfl session per process, SESSIONS_MAX of them open at once, made again
 * from the process's maps as first read when it is needed again. */
#include "sym/usyms.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/debuginfo.h"
#include "sym/procfs.h"

static int proc_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
                         Dwarf_Addr base, char **file_name, Elf **elfp);

static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = proc_find_elf,
    .find_debuginfo = debuginfo_find,
};
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = debuginfo_find,
    .section_address = dwfl_offline_section_address,
};

/* What is kept of each process seen: the lines of its maps that name
 * files, read when it was first seen, from which a session can be made
 * again once the process is gone; and, for the most recently used ones,
 * an open session. Both are bounded: a session holds the files it opened
 * and their symbol tables (about 8 KB before a lookup, megabytes after),
 * and loupe may see thousands of short-lived processes. */
#define SESSIONS_MAX 64          /* open sessions */
#define PROCS_MAX 4096           /* processes whose maps are kept */
#define MAPS_BYTES_MAX 65536     /* of one process's maps */
#define ALL_MAPS_BYTES_MAX (16u << 20)

/* A file a process maps, as its maps name it, and the file itself,
 * opened by procfs when the process was first seen (kept for the run). */
typedef struct ProcFile {
  char *name;
  const char *kept;   /* "/proc/self/fd/N" */
} ProcFile;

#define PROC_FILES_MAX 512       /* files of one process */

typedef struct Proc {
  int pid;
  char *maps;        /* its maps' lines with a file, or NULL: unreadable */
  size_t maps_len;
  ProcFile *files;
  int nfiles;
  Dwfl *dwfl;        /* open session, or NULL */
  uint64_t used;     /* when last looked up, for least-recently-used */
} Proc;

static Proc *procs;
static int nprocs, nsessions;
static size_t maps_bytes;
static uint64_t use_clock;
static Dwfl *binaries;   /* the probed binaries, at their file addresses */

static Proc *proc_find(int pid) {
  for (int i = 0; i < nprocs; i++)
    if (procs[i].pid == pid) return &procs[i];
  return NULL;
}

/* The lines of /proc/PID/maps that name a file (libdwfl needs no
 * other), at most MAPS_BYTES_MAX of them; NULL if it cannot be read.
 * They are gathered in one buffer kept for the run and copied into a
 * block of their size: a block of MAPS_BYTES_MAX for each process, shrunk
 * at once, left a hole that the next one never fitted in once small
 * blocks of longer life were placed in it, and the heap grew with every
 * process seen, past the PROCS_MAX kept (bench/soak.sh). */
static char *maps_read(int pid, size_t *len) {
  static char text[MAPS_BYTES_MAX];
  char path[64], line[PATH_MAX + 256];
  snprintf(path, sizeof path, "/proc/%d/maps", pid);
  FILE *f = fopen(path, "re");
  if (!f) return NULL;
  size_t n = 0;
  bool partial = false;   /* the line read is the rest of a longer one */
  while (fgets(line, sizeof line, f)) {
    size_t k = strlen(line);
    bool whole = !partial && line[k - 1] == '\n';
    partial = line[k - 1] != '\n';
    if (!whole || !strchr(line, '/')) continue;
    if (n + k > MAPS_BYTES_MAX) break;
    memcpy(text + n, line, k);
    n += k;
  }
  fclose(f);
  char *fit = malloc(n ? n : 1);
  if (fit) memcpy(fit, text, n);
  *len = n;
  return fit;
}

static void session_close(Proc *p) {
  if (!p->dwfl) return;
  dwfl_end(p->dwfl);
  p->dwfl = NULL;
  nsessions--;
}

/* The least recently used process, with an open session if `open`. */
static Proc *least_used(bool open) {
  Proc *lru = NULL;
  for (int i = 0; i < nprocs; i++)
    if ((!open || procs[i].dwfl) && (!lru || procs[i].used < lru->used))
      lru = &procs[i];
  return lru;
}

/* Forgets the least recently used process, for room. */
static void proc_forget_one(void) {
  Proc *p = least_used(false);
  if (!p) return;
  session_close(p);
  maps_bytes -= p->maps_len;
  free(p->maps);
  for (int i = 0; i < p->nfiles; i++) free(p->files[i].name);
  free(p->files);
  *p = procs[--nprocs];
}

/* procfs_each_mapped_file's callback: opens the file of one mapping (the
 * mapped object, inside the process's root, regular files only) and
 * remembers it by the name libdwfl will ask for. */
static bool remember_file(const ProcMapping *m, void *arg) {
  Proc *p = arg;
  if (p->nfiles == PROC_FILES_MAX) return true;
  char err[256];
  const char *kept = procfs_mapped_file(m, err, sizeof err);
  if (!kept) return false;   /* deleted, not a regular file: no symbols */
  ProcFile *grown = realloc(p->files, sizeof(*grown) * (p->nfiles + 1));
  char *name = strdup(m->path);
  if (!grown || !name) {
    free(name);
    if (grown) p->files = grown;
    return true;
  }
  p->files = grown;
  p->files[p->nfiles++] = (ProcFile){.name = name, .kept = kept};
  return false;
}

/* The process whose session libdwfl is working for, so that
 * proc_find_elf knows whose files it asks for. */
static Proc *current;

/* libdwfl's find_elf for a process's modules: the file opened when the
 * process was first seen (remember_file), never the path its maps name,
 * which the process controls (a symlink planted under a deleted
 * library's name, a FIFO, a path into its own container root). The vDSO
 * comes from the process's memory, as libdwfl reads it. */
static int proc_find_elf(Dwfl_Module *mod, void **userdata, const char *name,
                         Dwarf_Addr base, char **file_name, Elf **elfp) {
  if (!name || name[0] != '/')
    return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name,
                                    elfp);
  const char *kept = NULL;
  for (int i = 0; current && !kept && i < current->nfiles; i++)
    if (!strcmp(current->files[i].name, name)) kept = current->files[i].kept;
  int fd = kept ? open(kept, O_RDONLY | O_CLOEXEC) : -1;
  if (fd < 0) return -1;
  *elfp = elf_begin(fd, ELF_C_READ_MMAP, NULL);
  if (!*elfp) {
    close(fd);
    return -1;
  }
  *file_name = strdup(name);
  return fd;
}

/* A session for pid: from its maps now (with its vDSO) while it runs, or
 * from the maps kept; NULL if neither can be read. */
static Dwfl *session_open(Proc *p, bool live) {
  Dwfl *d = dwfl_begin(&proc_callbacks);
  if (!d) return NULL;
  dwfl_report_begin(d);
  int failed = -1;
  if (live) {
    failed = dwfl_linux_proc_report(d, p->pid);
  } else if (p->maps) {
    FILE *f = fmemopen(p->maps, p->maps_len ? p->maps_len : 1, "r");
    if (f) {
      failed = p->maps_len ? dwfl_linux_proc_maps_report(d, f) : 0;
      fclose(f);
    }
  }
  if (failed != 0) {
    dwfl_end(d);
    return NULL;
  }
  dwfl_report_end(d, NULL, NULL);
  return d;
}

/* p's session, opened (from its kept maps) if it was closed; the least
 * recently used one is closed when SESSIONS_MAX are open. */
static Dwfl *proc_session(Proc *p, bool live) {
  p->used = ++use_clock;
  current = p;
  if (p->dwfl || !p->maps) return p->dwfl;
  if (nsessions >= SESSIONS_MAX) session_close(least_used(true));
  p->dwfl = session_open(p, live);
  if (p->dwfl) nsessions++;
  return p->dwfl;
}

void usyms_remember(int pid) {
  if (pid <= 0 || proc_find(pid)) return;
  size_t len = 0;
  char *maps = maps_read(pid, &len);
  while (nprocs > 0 &&
         (nprocs >= PROCS_MAX || maps_bytes + len > ALL_MAPS_BYTES_MAX))
    proc_forget_one();
  if (nprocs % 64 == 0) {
    Proc *grown = realloc(procs, sizeof(*procs) * (nprocs + 64));
    if (!grown) {
      free(maps);
      return;
    }
    procs = grown;
  }
  Proc *p = &procs[nprocs++];
  *p = (Proc){.pid = pid, .maps = maps, .maps_len = len};
  maps_bytes += len;
  /* the files of the lines just read, not of a second reading that the
   * process may have changed since */
  FILE *f = len ? fmemopen(maps, len, "r") : NULL;
  if (f) {
    procfs_maps_each_file(f, pid, remember_file, p);
    fclose(f);
  }
  proc_session(p, true);
}

static char **added;   /* the paths of the probed binaries */
static int nadded;

void usyms_add_binary(const char *path) {
  for (int i = 0; i < nadded; i++)
    if (!strcmp(added[i], path)) return;
  char **grown = realloc(added, sizeof(*added) * (nadded + 1));
  if (!grown) return;
  added = grown;
  added[nadded++] = strdup(path);
  if (!binaries) binaries = dwfl_begin(&offline_callbacks);
  if (!binaries) return;
  dwfl_report_begin_add(binaries);
  dwfl_report_elf(binaries, path, path, -1, 0, false);
  dwfl_report_end(binaries, NULL, NULL);
}

/* vaddr's offset in the ELF file: from the PT_LOAD segment holding it. */
static bool file_offset(Elf *e, uint64_t vaddr, uint64_t *out) {
  size_t n;
  if (!e || elf_getphdrnum(e, &n) != 0) return false;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
    if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_memsz) {
      *out = vaddr - ph.p_vaddr + ph.p_offset;
      return true;
    }
  }
  return false;
}

/* C++ names as the source spells them (libiberty), kept in a hash table
 * by the mangled name: a session and the names it gave may be closed
 * since (SESSIONS_MAX). At most DEMANGLED_MAX are kept; the table is
 * emptied before a lookup that finds it full, so that the names a lookup
 * gives stay valid until the next one. */
#define DEMANGLED_MAX 65536

typedef struct Demangled {
  char *mangled;        /* a copy */
  const char *plain;    /* malloc'd, or mangled if it does not demangle */
} Demangled;

static Demangled *demangled_cache;
static size_t demangled_n, demangled_cap;   /* cap: a power of two */

static size_t demangled_slot(const Demangled *t, size_t cap,
                             const char *name) {
  size_t h = 2166136261u;   /* FNV-1a */
  for (const char *c = name; *c; c++) h = (h ^ (unsigned char)*c) * 16777619u;
  h &= cap - 1;
  while (t[h].mangled && strcmp(t[h].mangled, name)) h = (h + 1) & (cap - 1);
  return h;
}

static void demangled_grow(void) {
  size_t cap = demangled_cap ? demangled_cap * 2 : 256;
  Demangled *t = calloc(cap, sizeof(*t));
  if (!t) return;
  for (size_t i = 0; i < demangled_cap; i++)
    if (demangled_cache[i].mangled)
      t[demangled_slot(t, cap, demangled_cache[i].mangled)] =
          demangled_cache[i];
  free(demangled_cache);
  demangled_cache = t;
  demangled_cap = cap;
}

static void demangled_clear(void) {
  for (size_t i = 0; i < demangled_cap; i++) {
    Demangled *d = &demangled_cache[i];
    if (d->plain != d->mangled) free((char *)d->plain);
    free(d->mangled);
  }
  free(demangled_cache);
  demangled_cache = NULL;
  demangled_n = demangled_cap = 0;
}

char *usyms_demangle(const char *name, bool with_params) {
  if (!name || strncmp(name, "_Z", 2) != 0) return NULL;
  return cplus_demangle(name, DMGL_ANSI | (with_params ? DMGL_PARAMS : 0));
}

/* A symbol's name as bpftrace prints it: without the ELF symbol version
 * a library's symbol table may give it ("clock_nanosleep@GLIBC_2.2.5",
 * "f@@V2"), C++ names demangled. Cached by the name's text. */
static const char *demangled(const char *name) {
  const char *version = name ? strchr(name, '@') : NULL;
  if (version == name) version = NULL;
  if (!name || (!version && strncmp(name, "_Z", 2) != 0)) return name;
  if (2 * (demangled_n + 1) > demangled_cap) demangled_grow();
  if (!demangled_cap) return name;
  size_t h = demangled_slot(demangled_cache, demangled_cap, name);
  if (demangled_cache[h].mangled) return demangled_cache[h].plain;
  char *copy = strdup(name);
  if (!copy) return name;
  char *bare = version ? strndup(name, (size_t)(version - name)) : NULL;
  char *plain = usyms_demangle(bare ? bare : name, true);
  if (plain)
    free(bare);
  else
    plain = bare;
  demangled_cache[h].mangled = copy;
  demangled_cache[h].plain = plain ? plain : copy;
  demangled_n++;
  return demangled_cache[h].plain;
}

#define MAX_SCOPES 32

/* The DIEs under parent whose code holds addr, outermost first, into
 * chain (n of them so far); how many then. dwarf_getscopes follows an
 * inlined function to its abstract definition, so the concrete nesting
 * (a function inlined into one inlined into another) is walked here. */
static int scopes_holding(Dwarf_Die *parent, Dwarf_Addr addr,
                          Dwarf_Die *chain, int n) {
  Dwarf_Die child;
  if (n == MAX_SCOPES || dwarf_child(parent, &child) != 0) return n;
  do {
    int tag = dwarf_tag(&child);
    if (tag == DW_TAG_namespace) {
      int k = scopes_holding(&child, addr, chain, n);
      if (k > n) return k;
    } else if ((tag == DW_TAG_subprogram ||
                tag == DW_TAG_inlined_subroutine ||
                tag == DW_TAG_lexical_block) &&
               dwarf_haspc(&child, addr) == 1) {
      chain[n] = child;
      return scopes_holding(&chain[n], addr, chain, n + 1);
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return n;
}

/* The functions inlined at addr (bias subtracted: the DWARF address) in
 * the CU cu, innermost first, with the lines: the innermost is where the
 * address is (the line table's answer, in out->src_*); each one's call
 * site is where the next frame out is; the last call site becomes the
 * real function's out->src_*. */
static void inline_chain(Dwarf_Die *cu, Dwarf_Addr addr, USym *out) {
  Dwarf_Die chain[MAX_SCOPES];
  int n = scopes_holding(cu, addr, chain, 0);
  Dwarf_Files *files = NULL;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(cu, &files, &nfiles) != 0) files = NULL;
  const char *file = out->src_file;
  int line = out->src_line;
  for (int i = n - 1; i >= 0 && out->ninlined < USYM_MAX_INLINED; i--) {
    if (dwarf_tag(&chain[i]) != DW_TAG_inlined_subroutine) continue;
    int k = out->ninlined++;
    /* dwarf_diename reads an inlined copy's name from its origin */
    const char *fn = dwarf_diename(&chain[i]);
    out->inlined[k].name = demangled(fn ? fn : "?");
    out->inlined[k].file = file;
    out->inlined[k].line = line;
    /* the frame out of it is at its call */
    Dwarf_Attribute at;
    Dwarf_Word call_file = 0, call_line = 0;
    dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_file, &at), &call_file);
    dwarf_formudata(dwarf_attr(&chain[i], DW_AT_call_line, &at), &call_line);
    const char *name = files && call_file < nfiles
                           ? dwarf_filesrc(files, call_file, NULL, NULL)
                           : NULL;
    if (name) file = name;
    line = (int)call_line;
  }
  out->src_file = file;
  out->src_line = line;
}

static bool lookup_in(Dwfl *d, uint64_t addr, bool want_line, USym *out) {
  Dwfl_Module *m = d ? dwfl_addrmodule(d, addr) : NULL;
  if (!m) return false;
  const char *file = NULL;
  out->module = dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, &file,
                                 NULL);
  if (file) out->module = file;
  GElf_Off off = 0;
  GElf_Sym sym;
  out->name = demangled(
      dwfl_module_addrinfo(m, addr, &off, &sym, NULL, NULL, NULL));
  out->offset = off;
  Dwfl_Line *line = want_line ? dwfl_module_getsrc(m, addr) : NULL;
  if (line)
    out->src_file = dwfl_lineinfo(line, NULL, &out->src_line, NULL, NULL,
                                  NULL);
  Dwarf_Addr cu_bias = 0;
  Dwarf_Die *cu = want_line ? dwfl_module_addrdie(m, addr, &cu_bias) : NULL;
  if (cu) inline_chain(cu, addr - cu_bias, out);
  GElf_Addr bias = 0;
  Elf *e = dwfl_module_getelf(m, &bias);
  if (!file_offset(e, addr - bias, &out->file_offset))
    out->file_offset = addr - bias;
  GElf_Addr id_vaddr;
  const unsigned char *id = NULL;
  int len = dwfl_module_build_id(m, &id, &id_vaddr);
  if (len > 0) {
    out->build_id = id;
    out->build_id_len = len;
  }
  return true;
}

bool usyms_lookup(int pid, uint64_t addr, bool want_line, USym *out) {
  memset(out, 0, sizeof(*out));
  if (demangled_n >= DEMANGLED_MAX) demangled_clear();
  if (pid > 0) {
    usyms_remember(pid);
    Proc *p = proc_find(pid);
    if (p && lookup_in(proc_session(p, false), addr, want_line, out))
      return true;
    /* a process that exited before its maps were read has an empty map
     * list: the probed binaries, at their file addresses, are left */
    memset(out, 0, sizeof(*out));
  }
  return lookup_in(binaries, addr, want_line, out);
}

/* ---- symbol to address ---------------------------------------------- */

static bool find_symbol(Elf *e, const char *name, GElf_Sym *out) {
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) ||
        (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
      continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t n = sh.sh_entsize ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t i = 0; data && i < n; i++) {
      GElf_Sym sym;
      if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF)
        continue;
      const char *s = elf_strptr(e, sh.sh_link, sym.st_name);
      if (s && !strcmp(s, name)) {
        *out = sym;
        return true;
      }
    }
  }
  return false;
}

/* The ELF file at path, opened for reading; NULL with a message in err. */
static Elf *elf_open(const char *path, int *fd, char *err, size_t errlen) {
  elf_version(EV_CURRENT);
  *fd = open(path, O_RDONLY | O_CLOEXEC);
  if (*fd < 0) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  Elf *e = elf_begin(*fd, ELF_C_READ, NULL);
  GElf_Ehdr eh;
  if (!e || !gelf_getehdr(e, &eh)) {
    snprintf(err, errlen, "%s is not an ELF file", path);
    if (e) elf_end(e);
    close(*fd);
    return NULL;
  }
  return e;
}

bool usyms_symbol_address(const char *path, const char *name,
                          uint64_t *addr, uint64_t *size, bool *relocatable,
                          char *err, size_t errlen) {
  int fd;
  Elf *e = elf_open(path, &fd, err, errlen);
  if (!e) return false;
  GElf_Ehdr eh;
  GElf_Sym sym;
  bool ok = gelf_getehdr(e, &eh) && find_symbol(e, name, &sym);
  if (ok) {
    *addr = sym.st_value;
    *size = sym.st_size;
    *relocatable = eh.e_type != ET_EXEC;
  } else {
    snprintf(err, errlen, "no symbol of that name in %s", path);
  }
  elf_end(e);
  close(fd);
  return ok;
}

bool usyms_offset_to_vaddr(const char *path, uint64_t offset,
                           uint64_t *vaddr) {
  char err[256];
  int fd;
  Elf *e = elf_open(path, &fd, err, sizeof err);
  if (!e) return false;
  size_t n = 0;
  bool ok = false;
  if (elf_getphdrnum(e, &n) == 0)
    for (size_t i = 0; i < n && !ok; i++) {
      GElf_Phdr ph;
      if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD) continue;
      if (offset >= ph.p_offset && offset < ph.p_offset + ph.p_filesz) {
        *vaddr = offset - ph.p_offset + ph.p_vaddr;
        ok = true;
      }
    }
  elf_end(e);
  close(fd);
  return ok;
}

void usyms_forget_binaries(void) {
  if (binaries) dwfl_end(binaries);
  binaries = NULL;
  for (int i = 0; i < nadded; i++) free(added[i]);
  free(added);
  added = NULL;
  nadded = 0;
  /* the cache is keyed by names the sessions held */
  for (size_t i = 0; i < demangled_cap; i++)
    if (demangled_cache[i].plain != demangled_cache[i].mangled)
      free((char *)demangled_cache[i].plain);
  free(demangled_cache);
  demangled_cache = NULL;
  demangled_n = demangled_cap = 0;
}
