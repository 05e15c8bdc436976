/* dwarf: finding the debug information of probed binaries (through
 * libdwfl, which knows where distributions keep it), the functions and
 * parameters it describes, the named types scripts cast to, and the
 * record of a uprobe's arguments. Types themselves are converted in
 * dwarf_types.c. */
#define _GNU_SOURCE   /* asprintf */
#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sym/debuginfo.h"
#include "sym/dwarf_int.h"

/* A function of a binary's debug information. */
typedef struct DwFunc {
  char *name;
  Dwarf_Die die;
  DwParam *params;     /* read on first use */
  int nparams;         /* -1 until read */
  const CType *args;   /* the arguments record, built on first use */
  char **left_out;     /* parameters not in the record */
  int nleft_out;
} DwFunc;

/* An ELF file that uprobes probe, and its debug information. */
typedef struct DwBinary {
  struct DwBinary *next;
  char *path;
  bool opened;         /* reading was attempted */
  Dwfl *dwfl;
  Dwfl_Module *mod;
  Dwarf *dbg;          /* NULL: no debug information */
  DwFunc *funcs;       /* every defined function, indexed on first use */
  int nfuncs;
  bool indexed;
  char *debug_dir;     /* where libdw looks for .dwo files, on first use */
  bool debug_dir_known;
} DwBinary;

static DwBinary *binaries;

/* ---- opening --------------------------------------------------------- */

static const Dwfl_Callbacks offline_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = debuginfo_find,
    .section_address = dwfl_offline_section_address,
};

static DwBinary *binary_named(const char *path, bool add) {
  for (DwBinary *b = binaries; b; b = b->next)
    if (!strcmp(b->path, path)) return b;
  if (!add) return NULL;
  DwBinary *b = calloc(1, sizeof *b);
  if (!b || !(b->path = strdup(path))) abort();
  DwBinary **tail = &binaries;
  while (*tail) tail = &(*tail)->next;
  *tail = b;
  return b;
}

/* The binary's DWARF, opened once; NULL if it has none. */
static Dwarf *binary_dwarf(DwBinary *b) {
  if (b->opened) return b->dbg;
  b->opened = true;
  b->dwfl = dwfl_begin(&offline_callbacks);
  if (!b->dwfl) return NULL;
  b->mod = dwfl_report_offline(b->dwfl, "", b->path, -1);
  dwfl_report_end(b->dwfl, NULL, NULL);
  /* Debug information is looked for on this machine only: with
   * DEBUGINFOD_URLS set, libdwfl would download what is missing, and a
   * script would wait on the network before its probes attach. */
  const char *urls = getenv("DEBUGINFOD_URLS");
  char *saved = urls ? strdup(urls) : NULL;
  if (saved) unsetenv("DEBUGINFOD_URLS");
  Dwarf_Addr bias;
  b->dbg = b->mod ? dwfl_module_getdwarf(b->mod, &bias) : NULL;
  if (saved) {
    setenv("DEBUGINFOD_URLS", saved, 1);
    free(saved);
  }
  return b->dbg;
}

/* The directory of the file b's DWARF is read from (its separate debug
 * file, or itself), where libdw looks for .dwo files; NULL if unknown. */
static const char *debug_dir(DwBinary *b) {
  if (b->debug_dir_known) return b->debug_dir;
  b->debug_dir_known = true;
  const char *main_file = NULL, *debug_file = NULL;
  dwfl_module_info(b->mod, NULL, NULL, NULL, NULL, NULL, &main_file,
                   &debug_file);
  char *real = realpath(debug_file ? debug_file : main_file ? main_file
                                                            : b->path,
                        NULL);
  char *slash = real ? strrchr(real, '/') : NULL;
  if (slash) *slash = '\0';
  b->debug_dir = real;
  return real;
}

/* Where libdw opens a .dwo file named file: as it is if absolute, else
 * in dir if that is absolute, else in the debug directory (with dir). */
static char *dwo_path(const char *debug_dir, const char *dir,
                      const char *file) {
  char *path = NULL;
  int len = 0;
  if (file[0] == '/') return strdup(file);
  if (dir && dir[0] == '/')
    len = asprintf(&path, "%s/%s", dir, file);
  else if (debug_dir)
    len = asprintf(&path, "%s/%s%s%s", debug_dir, dir ? dir : "",
                   dir ? "/" : "", file);
  return len < 0 ? NULL : path;
}

/* Whether libdw may look for the .dwo file of skeleton unit cudie. It
 * opens it blocking, by DW_AT_dwo_name (in the debug directory, then in
 * DW_AT_comp_dir), names the binary gives: each place must hold a
 * regular file or nothing, not a FIFO or a device. (A file swapped in
 * between this look and libdw's open is not caught.) */
static bool dwo_lookup_safe(Dwarf_Die *cudie, const char *debug_dir) {
  Dwarf_Attribute at;
  const char *file = dwarf_formstring(dwarf_attr(cudie, DW_AT_dwo_name, &at));
  if (!file)
    file = dwarf_formstring(dwarf_attr(cudie, DW_AT_GNU_dwo_name, &at));
  if (!file) return true;
  const char *comp_dir =
      dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &at));
  const char *dirs[] = {NULL, comp_dir};
  for (int i = 0; i < 2; i++) {
    char *path = dwo_path(debug_dir, dirs[i], file);
    struct stat st;
    bool bad = path && stat(path, &st) == 0 && !S_ISREG(st.st_mode);
    free(path);
    if (bad) return false;
  }
  return true;
}

/* Calls fn with each compilation unit's DIE (the split unit of a
 * skeleton) until it returns true. */
static bool each_unit(DwBinary *b, bool (*fn)(Dwarf_Die *cu, void *arg),
                      void *arg) {
  Dwarf_CU *cu = NULL;
  Dwarf_Die cudie, subdie;
  uint8_t unit_type;
  while (dwarf_get_units(b->dbg, cu, &cu, NULL, &unit_type, &cudie,
                         NULL) == 0) {
    Dwarf_Die *die = &cudie;
    if (unit_type == DW_UT_skeleton) {
      if (!dwo_lookup_safe(&cudie, debug_dir(b)) ||
          dwarf_cu_info(cu, NULL, NULL, NULL, &subdie, NULL, NULL, NULL) !=
              0 ||
          !dwarf_tag(&subdie))
        continue;
      die = &subdie;
    }
    if (fn(die, arg)) return true;
  }
  return false;
}

void dwinfo_note_binary(const char *path) {
  binary_named(path, true);
  ctype_set_user_lookup(dwinfo_lookup_named);
}

bool dwinfo_available(const char *path) {
  return binary_dwarf(binary_named(path, true)) != NULL;
}

void dwinfo_forget_binaries(void) {
  while (binaries) {
    DwBinary *b = binaries;
    binaries = b->next;
    for (int i = 0; i < b->nfuncs; i++) {
      DwFunc *f = &b->funcs[i];
      for (int k = 0; k < f->nparams; k++) {
        free(f->params[k].name);
        free(f->params[k].type_text);
      }
      free(f->params);
      free(f->left_out);
      free(f->name);
    }
    free(b->funcs);
    if (b->dwfl) dwfl_end(b->dwfl);
    free(b->path);
    free(b);
  }
  dwinfo_types_forget();
}

/* ---- named types -------------------------------------------------------- */

typedef struct NameQuery {
  const char *name;
  CKind kind;
  Dwarf_Die found;
} NameQuery;

static bool tag_fits(int tag, CKind kind) {
  switch (kind) {
  case C_STRUCT: return tag == DW_TAG_structure_type || tag == DW_TAG_class_type;
  case C_UNION: return tag == DW_TAG_union_type;
  case C_ENUM: return tag == DW_TAG_enumeration_type;
  default: return tag == DW_TAG_typedef;
  }
}

static bool find_in_unit(Dwarf_Die *cu, void *arg) {
  NameQuery *q = arg;
  Dwarf_Die child;
  if (dwarf_child(cu, &child) != 0) return false;
  do {
    if (!tag_fits(dwarf_tag(&child), q->kind) ||
        dwarf_hasattr(&child, DW_AT_declaration))
      continue;
    const char *name = dwarf_diename(&child);
    if (name && !strcmp(name, q->name)) {
      q->found = child;
      return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

bool dwinfo_find_named_die(const char *name, CKind kind, Dwarf_Die *out) {
  NameQuery q = {.name = name, .kind = kind};
  for (DwBinary *b = binaries; b; b = b->next) {
    Dwarf *dbg = binary_dwarf(b);
    if (dbg && each_unit(b, find_in_unit, &q)) {
      *out = q.found;
      return true;
    }
  }
  return false;
}

const CType *dwinfo_lookup_named(const char *name, CKind kind) {
  Dwarf_Die die;
  if (kind == C_VOID) {
    /* a plain name: a typedef, or a struct or union named without its
     * keyword, as bpftrace allows */
    static const CKind kinds[] = {C_VOID, C_STRUCT, C_UNION};
    for (int i = 0; i < 3; i++)
      if (dwinfo_find_named_die(name, kinds[i], &die)) {
        if (kinds[i] != C_VOID) return dwinfo_type_of_die(&die);
        Dwarf_Die target;
        return dwinfo_type_die(&die, &target) ? dwinfo_type_of_die(&target)
                                              : ctype_void();
      }
    return NULL;
  }
  return dwinfo_find_named_die(name, kind, &die) ? dwinfo_type_of_die(&die)
                                                 : NULL;
}

/* ---- functions ------------------------------------------------------- */

/* The code of a function: a definition with an address. */
static bool has_code(Dwarf_Die *die) {
  return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges) ||
         dwarf_hasattr(die, DW_AT_entry_pc);
}

static bool index_unit(Dwarf_Die *cu, void *arg) {
  DwBinary *b = arg;
  Dwarf_Die child;
  if (dwarf_child(cu, &child) != 0) return false;
  do {
    if (dwarf_tag(&child) != DW_TAG_subprogram || !has_code(&child))
      continue;
    const char *name = dwarf_diename(&child);
    if (!name) continue;
    b->funcs = realloc(b->funcs, sizeof *b->funcs * (size_t)(b->nfuncs + 1));
    if (!b->funcs) abort();
    DwFunc *f = &b->funcs[b->nfuncs++];
    memset(f, 0, sizeof *f);
    f->name = strdup(name);
    f->die = child;
    f->nparams = -1;
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

static void read_params(DwFunc *f) {
  Dwarf_Die child;
  f->nparams = 0;
  if (dwarf_child(&f->die, &child) != 0) return;
  do {
    if (dwarf_tag(&child) != DW_TAG_formal_parameter) continue;
    f->params = realloc(f->params, sizeof *f->params * (size_t)(f->nparams + 1));
    if (!f->params) abort();
    DwParam *p = &f->params[f->nparams++];
    const char *name = dwarf_diename(&child);
    p->name = name ? strdup(name) : NULL;
    Dwarf_Die type;
    bool typed = dwinfo_type_die(&child, &type);
    p->type = dwinfo_type_of_die(typed ? &type : NULL);
    char text[256];
    dwinfo_type_text(typed ? &type : NULL, text, sizeof text);
    p->type_text = strdup(text);
  } while (dwarf_siblingof(&child, &child) == 0);
}

/* The binary's DWARF with its functions indexed; NULL with a message if
 * it has none. */
static Dwarf *indexed_dwarf(DwBinary *b, char *err, size_t errlen) {
  Dwarf *dbg = binary_dwarf(b);
  if (!dbg) {
    snprintf(err, errlen, "No debuginfo found for %s (it was built without "
             "-g, or its debug information is not installed)", b->path);
    return NULL;
  }
  if (!b->indexed) {
    b->indexed = true;
    each_unit(b, index_unit, b);
  }
  return dbg;
}

/* The function `func` of path, its parameters read; NULL with a message. */
static DwFunc *find_func(const char *path, const char *func, char *err,
                         size_t errlen) {
  DwBinary *b = binary_named(path, true);
  if (!indexed_dwarf(b, err, errlen)) return NULL;
  for (int i = 0; i < b->nfuncs; i++)
    if (!strcmp(b->funcs[i].name, func)) {
      if (b->funcs[i].nparams < 0) read_params(&b->funcs[i]);
      return &b->funcs[i];
    }
  snprintf(err, errlen, "the debug information of %s does not describe "
           "function '%s'", path, func);
  return NULL;
}

int dwinfo_func_params(const char *path, const char *func,
                       const DwParam **params, char *err, size_t errlen) {
  DwFunc *f = find_func(path, func, err, errlen);
  if (!f) return -1;
  *params = f->params;
  return f->nparams;
}

/* ---- the arguments record ------------------------------------------------ */

#define ARG_REGS 6   /* rdi, rsi, rdx, rcx, r8, r9 */

static bool has_float(const CType *t) {
  if (t->kind == C_FLOAT) return true;
  if (t->kind == C_ARRAY) return t->target && has_float(t->target);
  const CField *fs;
  int n = ctype_fields(t, &fs);
  for (int i = 0; i < n; i++)
    if (has_float(fs[i].type)) return true;
  return false;
}

/* How many general-purpose registers a parameter of type t takes (System
 * V classification, simplified: aggregates of up to 16 bytes without
 * floating point are INTEGER); 0 if it is passed elsewhere. */
static int registers_for(const CType *t) {
  switch (t->kind) {
  case C_INT:
  case C_ENUM:
  case C_PTR:
    return t->size <= 8 ? 1 : t->size <= 16 ? 2 : 0;
  case C_STRUCT:
  case C_UNION:
  case C_ARRAY:
    if (t->size <= 0 || t->size > 16 || has_float(t)) return 0;
    return (t->size + 7) / 8;
  default:
    return 0;
  }
}

static void build_args(DwFunc *f) {
  CField *fields = calloc((size_t)(f->nparams ? f->nparams : 1),
                          sizeof *fields);
  f->left_out = calloc((size_t)(f->nparams ? f->nparams : 1), sizeof(char *));
  if (!fields || !f->left_out) abort();
  int n = 0, used = 0;
  for (int i = 0; i < f->nparams; i++) {
    const DwParam *p = &f->params[i];
    int regs = registers_for(p->type);
    if (!p->name) {
      used += regs && used + regs <= ARG_REGS ? regs : 0;
      continue;
    }
    if (regs == 0 || used + regs > ARG_REGS) {
      f->left_out[f->nleft_out++] = p->name;
      continue;
    }
    fields[n].name = strdup(p->name);   /* outlives dwinfo_forget_binaries */
    fields[n].type = p->type;
    fields[n].offset = used * 8;
    n++;
    used += regs;
  }
  char name[300];
  snprintf(name, sizeof name, "%s_args", f->name);
  CType *t = ctype_new(C_STRUCT, name, used * 8, 8);
  ctype_set_fields(t, fields, n);
  f->args = t;
}

const CType *dwinfo_args_record(const char *path, const char *func,
                                char *err, size_t errlen) {
  DwFunc *f = find_func(path, func, err, errlen);
  if (!f) return NULL;
  if (!f->args) build_args(f);
  return f->args;
}

bool dwinfo_param_not_in_registers(const char *path, const char *func,
                                   const char *name) {
  char err[8];
  DwFunc *f = find_func(path, func, err, sizeof err);
  if (!f) return false;
  if (!f->args) build_args(f);
  for (int i = 0; i < f->nleft_out; i++)
    if (!strcmp(f->left_out[i], name)) return true;
  return false;
}

/* ---- source lines ------------------------------------------------------ */

typedef struct LineQuery {
  const char *file;
  int line;
  bool found;
  Dwarf_Addr addr;   /* the lowest address of a statement on the line */
} LineQuery;

/* "dir/uprobe_test.c" names the file "uprobe_test.c" too, as does
 * "./uprobe_test.c" or a longer tail of its path. */
static bool same_source(const char *path, const char *file) {
  while (!strncmp(file, "./", 2)) file += 2;
  size_t lp = strlen(path), lf = strlen(file);
  return lp >= lf && !strcmp(path + lp - lf, file) &&
         (lp == lf || path[lp - lf - 1] == '/');
}

static bool lines_of_unit(Dwarf_Die *cu, void *arg) {
  LineQuery *q = arg;
  Dwarf_Lines *lines;
  size_t n;
  if (dwarf_getsrclines(cu, &lines, &n) != 0) return false;
  for (size_t i = 0; i < n; i++) {
    Dwarf_Line *l = dwarf_onesrcline(lines, i);
    int lineno;
    bool stmt;
    Dwarf_Addr addr;
    const char *src;
    if (!l || dwarf_lineno(l, &lineno) != 0 || lineno != q->line ||
        dwarf_linebeginstatement(l, &stmt) != 0 || !stmt ||
        dwarf_lineaddr(l, &addr) != 0 ||
        !(src = dwarf_linesrc(l, NULL, NULL)) || !same_source(src, q->file))
      continue;
    if (!q->found || addr < q->addr) q->addr = addr;
    q->found = true;
  }
  return false;
}

/* The offset in the ELF file of the address vaddr (as its program
 * headers and its DWARF give addresses). */
static bool file_offset(DwBinary *b, Dwarf_Addr vaddr, uint64_t *offset) {
  Dwarf_Addr bias;
  Elf *elf = b->mod ? dwfl_module_getelf(b->mod, &bias) : NULL;
  size_t nph;
  if (!elf || elf_getphdrnum(elf, &nph) != 0) return false;
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
        !(ph.p_flags & PF_X))
      continue;
    if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
      *offset = vaddr - ph.p_vaddr + ph.p_offset;
      return true;
    }
  }
  return false;
}

/* The name of the function whose code holds addr, or NULL. */
static const char *function_at(DwBinary *b, Dwarf_Addr addr) {
  for (int i = 0; i < b->nfuncs; i++)
    if (dwarf_haspc(&b->funcs[i].die, addr) == 1) return b->funcs[i].name;
  return NULL;
}

bool dwinfo_line_offset(const char *path, const char *file, int line,
                        uint64_t *offset, const char **func, char *err,
                        size_t errlen) {
  DwBinary *b = binary_named(path, true);
  Dwarf *dbg = indexed_dwarf(b, err, errlen);
  if (!dbg) return false;
  LineQuery q = {.file = file, .line = line};
  each_unit(b, lines_of_unit, &q);
  if (!q.found) {
    snprintf(err, errlen, "the debug information of %s has no code at "
             "%s:%d", path, file, line);
    return false;
  }
  *func = function_at(b, q.addr);
  if (!file_offset(b, q.addr, offset)) {
    snprintf(err, errlen, "the code of %s:%d (0x%llx) is in no executable "
             "segment of %s", file, line, (unsigned long long)q.addr, path);
    return false;
  }
  return true;
}
