/* usyms: user-space addresses to names with libdwfl, which reads a
 * process's maps, opens its files (and their separate debug files) and
 * finds the symbol of an address, PIE and shared libraries included. One
 * Dwfl session per process, kept until loupe exits. */
#include "sym/usyms.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libiberty/demangle.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *debuginfo_path;
static const Dwfl_Callbacks proc_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .debuginfo_path = &debuginfo_path,
};
static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &debuginfo_path,
};

typedef struct Proc {
  int pid;
  Dwfl *dwfl;      /* NULL: its maps could not be read */
} Proc;

static Proc *procs;
static int nprocs;
static Dwfl *binaries;   /* the probed binaries, at their file addresses */

static Proc *proc_find(int pid) {
  for (int i = 0; i < nprocs; i++)
    if (procs[i].pid == pid) return &procs[i];
  return NULL;
}

/* A session for pid from its maps, or NULL if they cannot be read. */
static Dwfl *proc_report(int pid) {
  Dwfl *d = dwfl_begin(&proc_callbacks);
  if (!d) return NULL;
  dwfl_report_begin(d);
  if (dwfl_linux_proc_report(d, pid) != 0) {
    dwfl_end(d);
    return NULL;
  }
  dwfl_report_end(d, NULL, NULL);
  return d;
}

void usyms_remember(int pid) {
  if (pid <= 0 || proc_find(pid)) return;
  Proc *grown = realloc(procs, sizeof(*procs) * (nprocs + 1));
  if (!grown) return;
  procs = grown;
  procs[nprocs].pid = pid;
  procs[nprocs++].dwfl = proc_report(pid);
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
 * by the mangled name's address, which libdwfl keeps for as long as its
 * module. */
typedef struct Demangled {
  const char *mangled, *plain;
} Demangled;

static Demangled *demangled_cache;
static size_t demangled_n, demangled_cap;   /* cap: a power of two */

static size_t demangled_slot(const Demangled *t, size_t cap,
                             const char *name) {
  size_t h = ((uintptr_t)name >> 3) & (cap - 1);
  while (t[h].mangled && t[h].mangled != name) h = (h + 1) & (cap - 1);
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

char *usyms_demangle(const char *name, bool with_params) {
  if (!name || strncmp(name, "_Z", 2) != 0) return NULL;
  return cplus_demangle(name, DMGL_ANSI | (with_params ? DMGL_PARAMS : 0));
}

static const char *demangled(const char *name) {
  if (!name || strncmp(name, "_Z", 2) != 0) return name;
  if (2 * (demangled_n + 1) > demangled_cap) demangled_grow();
  if (!demangled_cap) return name;
  size_t h = demangled_slot(demangled_cache, demangled_cap, name);
  if (demangled_cache[h].mangled) return demangled_cache[h].plain;
  char *plain = usyms_demangle(name, true);
  demangled_cache[h].mangled = name;
  demangled_cache[h].plain = plain ? plain : name;
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
  if (pid > 0) {
    usyms_remember(pid);
    Proc *p = proc_find(pid);
    if (p && p->dwfl && lookup_in(p->dwfl, addr, want_line, out))
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
