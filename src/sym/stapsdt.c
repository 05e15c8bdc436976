/* stapsdt: reading the USDT probes of an ELF file.
 *
 * Each probe is one note of type 3 owned by "stapsdt" in the section
 * .note.stapsdt. Its descriptor holds three addresses — the probe's nop,
 * the link-time address of the .stapsdt.base section, the semaphore —
 * then three strings: provider, name, argument spec. A file that was
 * prelinked has its sections moved but not its notes: the difference
 * between .stapsdt.base's address now and the one the note recorded is
 * added to the other two addresses.
 *
 * The spec is GNU assembler operand syntax, one `SIZE@OPERAND` per
 * argument, SIZE negative for a signed value. */
#define _GNU_SOURCE   /* qsort_r */
#include "sym/stapsdt.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sym/elf.h"

#define NT_STAPSDT 3
#define PT_REGS_IP 128

/* ---- x86-64 registers ------------------------------------------------ */

/* Every name of a general-purpose register, with where struct pt_regs
 * keeps it; the width a name implies does not matter, as the spec's
 * SIZE says how much of the register is the value. */
static const struct {
  const char *names[5];
  int offset;
} x86_regs[] = {
    {{"rax", "eax", "ax", "al", NULL}, 80},
    {{"rbx", "ebx", "bx", "bl", NULL}, 40},
    {{"rcx", "ecx", "cx", "cl", NULL}, 88},
    {{"rdx", "edx", "dx", "dl", NULL}, 96},
    {{"rsi", "esi", "si", "sil", NULL}, 104},
    {{"rdi", "edi", "di", "dil", NULL}, 112},
    {{"rbp", "ebp", "bp", "bpl", NULL}, 32},
    {{"rsp", "esp", "sp", "spl", NULL}, 152},
    {{"r8", "r8d", "r8w", "r8b", "r8l"}, 72},
    {{"r9", "r9d", "r9w", "r9b", "r9l"}, 64},
    {{"r10", "r10d", "r10w", "r10b", "r10l"}, 56},
    {{"r11", "r11d", "r11w", "r11b", "r11l"}, 48},
    {{"r12", "r12d", "r12w", "r12b", "r12l"}, 24},
    {{"r13", "r13d", "r13w", "r13b", "r13l"}, 16},
    {{"r14", "r14d", "r14w", "r14b", "r14l"}, 8},
    {{"r15", "r15d", "r15w", "r15b", "r15l"}, 0},
    {{"rip", "eip", NULL}, PT_REGS_IP},
};

/* Reads "%name" at *s: the register's pt_regs offset (and shift, 8 for
 * the high bytes %ah ... %dh), or -1. */
static int parse_reg(const char **s, int *shift) {
  const char *p = *s;
  if (*p != '%') return -1;
  p++;
  size_t len = 0;
  while (isalnum((unsigned char)p[len])) len++;
  *shift = 0;
  static const char *const high[] = {"ah", "bh", "ch", "dh"};
  static const int high_off[] = {80, 40, 88, 96};
  for (int i = 0; i < 4; i++)
    if (len == 2 && !strncmp(p, high[i], 2)) {
      *shift = 8;
      *s = p + len;
      return high_off[i];
    }
  for (size_t i = 0; i < sizeof x86_regs / sizeof x86_regs[0]; i++)
    for (int k = 0; k < 5 && x86_regs[i].names[k]; k++)
      if (strlen(x86_regs[i].names[k]) == len &&
          !strncmp(p, x86_regs[i].names[k], len)) {
        *s = p + len;
        return x86_regs[i].offset;
      }
  return -1;
}

/* ---- symbols, for sym(%rip) ------------------------------------------ */

/* The file's defined symbols sorted by name, built on the first sym(%rip)
 * operand: a file may have thousands of notes and of symbols, and a scan
 * of the symbol tables per operand made reading it quadratic. */
typedef struct SymEntry {
  const char *name;
  uint64_t value;
  size_t order;   /* tables' order: the first of equal names wins */
} SymEntry;

typedef struct SymIndex {
  Elf *e;
  SymEntry *syms;
  size_t n;
  bool built;
} SymIndex;

static int sym_entry_cmp(const void *a, const void *b) {
  const SymEntry *x = a, *y = b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x->order > y->order) - (x->order < y->order);
}

static void sym_index_build(SymIndex *ix) {
  ix->built = true;
  size_t cap = 0;
  for (Elf_Scn *scn = elf_nextscn(ix->e, NULL); scn;
       scn = elf_nextscn(ix->e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) ||
        (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
        sh.sh_entsize == 0)
      continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    size_t n = data ? sh.sh_size / sh.sh_entsize : 0;
    for (size_t i = 0; i < n; i++) {
      GElf_Sym sym;
      const char *s;
      if (!gelf_getsym(data, (int)i, &sym) || sym.st_shndx == SHN_UNDEF ||
          !(s = elf_strptr(ix->e, sh.sh_link, sym.st_name)))
        continue;
      if (ix->n == cap) {
        cap = cap ? cap * 2 : 256;
        ix->syms = realloc(ix->syms, cap * sizeof *ix->syms);
        if (!ix->syms) abort();
      }
      ix->syms[ix->n] = (SymEntry){s, sym.st_value, ix->n};
      ix->n++;
    }
  }
  if (ix->n > 1) qsort(ix->syms, ix->n, sizeof *ix->syms, sym_entry_cmp);
}

/* strcmp of s against name[0..len). */
static int name_cmp(const char *s, const char *name, size_t len) {
  int c = strncmp(s, name, len);
  return c ? c : (unsigned char)s[len];
}

/* The address of symbol name[0..len) in the file's symbol tables. */
static bool find_symbol(SymIndex *ix, const char *name, size_t len,
                        uint64_t *addr) {
  if (!ix->built) sym_index_build(ix);
  size_t lo = 0, hi = ix->n;   /* the first entry not below name */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (name_cmp(ix->syms[mid].name, name, len) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == ix->n || name_cmp(ix->syms[lo].name, name, len) != 0)
    return false;
  *addr = ix->syms[lo].value;
  return true;
}

/* ---- argument specs -------------------------------------------------- */

/* A number in C's decimal or hex form at *s: a negative one from
 * INT64_MIN, a positive one up to INT64_MAX, or if `wide` up to
 * UINT64_MAX (an unsigned constant or an address keeps its 64 bits in
 * *v). */
static bool parse_number(const char **s, int64_t *v, bool wide) {
  char *end;
  errno = 0;
  const char *p = *s;
  bool neg = *p == '-';
  if (neg || *p == '+') p++;
  if (!isdigit((unsigned char)*p)) return false;
  uint64_t u = strtoull(p, &end, 0);
  if (errno || (neg && u > (uint64_t)INT64_MAX + 1) ||
      (!neg && !wide && u > INT64_MAX))
    return false;
  *v = (int64_t)(neg ? 0 - u : u);
  *s = end;
  return true;
}

/* What is at and after the start of a symbol's name in an operand. */
static bool is_symbol_char(char c) {
  return isalnum((unsigned char)c) || (c && strchr("_.$@", c));
}

/* The displacement before '(' or a bare address: a number, or a symbol
 * with an optional +N/-N. A symbol becomes an offset from the probe's
 * address (pc_vaddr), to be added to the ip the program sees. */
static const char *parse_disp(SymIndex *syms, uint64_t pc_vaddr,
                              const char **s, UsdtArg *a, bool *is_symbol) {
  const char *p = *s;
  *is_symbol = false;
  a->value = 0;
  if (isalpha((unsigned char)*p) || *p == '_' || *p == '.') {
    size_t len = 0;
    while (is_symbol_char(p[len])) len++;
    uint64_t addr;
    if (!find_symbol(syms, p, len, &addr))
      return "names a symbol the file lacks";
    p += len;
    int64_t off = 0;
    if ((*p == '+' || *p == '-') && !parse_number(&p, &off, true))
      return "has a bad offset";
    /* addresses wrap as the program's own arithmetic does */
    a->value = (int64_t)(addr - pc_vaddr + (uint64_t)off);
    *is_symbol = true;
  } else if (*p != '(' && !parse_number(&p, &a->value, true)) {
    return "has an operand loupe cannot read";
  }
  *s = p;
  return NULL;
}

/* "(%base,%index,scale)" after the displacement. */
static const char *parse_mem_regs(const char **s, UsdtArg *a) {
  const char *p = *s + 1;   /* past '(' */
  int shift;
  a->reg = *p == ',' ? -1 : parse_reg(&p, &shift);
  if (a->reg < 0 && *p != ',') return "has an unknown base register";
  if (*p == ',') {
    p++;
    a->index_reg = parse_reg(&p, &shift);
    if (a->index_reg < 0) return "has an unknown index register";
    if (*p == ',') {
      int64_t scale;
      p++;
      if (!parse_number(&p, &scale, false) ||
          (scale != 1 && scale != 2 && scale != 4 && scale != 8))
        return "has a bad scale";
      a->scale = (int)scale;
    }
  }
  if (*p != ')') return "has an unclosed memory operand";
  *s = p + 1;
  return NULL;
}

/* What separates arguments: isspace()'s characters, which parse_args
 * skips between them. */
#define SPEC_SPACE " \t\n\v\f\r"

/* One "SIZE@OPERAND"; NULL, or what is wrong with it. */
static const char *parse_arg(SymIndex *syms, uint64_t pc_vaddr,
                             const char **s, UsdtArg *a) {
  const char *p = *s;
  memset(a, 0, sizeof *a);
  a->size = 8;
  a->index_reg = -1;
  a->scale = 1;
  const char *at = strchr(p, '@');
  const char *space = p + strcspn(p, SPEC_SPACE);
  if (at && at < space) {
    int64_t size;
    if (!parse_number(&p, &size, false) || p != at) return "has a bad size";
    a->is_signed = size < 0;
    if (size < -8 || size > 8) return "has a bad size";
    a->size = (int)(size < 0 ? -size : size);
    if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
      return "has a bad size";
    p++;
  }
  const char *why = NULL;
  if (*p == '%') {
    a->kind = USDT_ARG_REG;
    a->reg = parse_reg(&p, &a->reg_shift);
    if (a->reg < 0 || a->reg == PT_REGS_IP) why = "has an unknown register";
  } else if (*p == '$') {
    p++;
    a->kind = USDT_ARG_CONST;
    if (!parse_number(&p, &a->value, true))
      why = "has a constant loupe cannot read";
  } else {
    bool is_symbol;
    a->kind = USDT_ARG_MEM;
    a->reg = -1;
    why = parse_disp(syms, pc_vaddr, &p, a, &is_symbol);
    if (!why && *p == '(') why = parse_mem_regs(&p, a);
    if (!why && a->reg == PT_REGS_IP && !is_symbol)
      why = "is relative to %rip without a symbol";
    if (!why && a->reg < 0 && a->index_reg < 0) {
      /* an absolute address: as far from the probe as at link time */
      a->reg = PT_REGS_IP;
      if (!is_symbol) a->value = (int64_t)((uint64_t)a->value - pc_vaddr);
    } else if (!why && is_symbol && a->reg != PT_REGS_IP) {
      why = "adds a symbol to a register";
    }
  }
  if (!why && *p && !isspace((unsigned char)*p)) why = "has trailing text";
  *s = p;
  return why;
}

/* Parses every argument of note n, into an array of their number (a
 * file may have many notes); records the first problem. */
static void parse_args(SymIndex *syms, uint64_t pc_vaddr, UsdtNote *n) {
  UsdtArg args[USDT_MAX_ARGS];
  const char *p = n->args_text;
  while (isspace((unsigned char)*p)) p++;
  while (*p) {
    const char *start = p, *why;
    if (n->nargs == USDT_MAX_ARGS)
      why = "has more than 12 arguments";
    else
      why = parse_arg(syms, pc_vaddr, &p, &args[n->nargs]);
    if (why) {
      size_t len = strcspn(start, SPEC_SPACE);
      char buf[512];
      snprintf(buf, sizeof buf, "argument spec '%.*s' %s", (int)len, start,
               why);
      n->args_error = strdup(buf);
      n->nargs = 0;
      return;
    }
    n->nargs++;
    while (isspace((unsigned char)*p)) p++;
  }
  if (n->nargs == 0) return;
  n->args = malloc(n->nargs * sizeof *n->args);
  if (!n->args) abort();
  memcpy(n->args, args, n->nargs * sizeof *n->args);
}

int usdt_arg_cmp(const UsdtArg *a, const UsdtArg *b) {
  const int64_t x[] = {a->kind, a->size, a->is_signed, a->reg, a->reg_shift,
                       a->index_reg, a->scale, a->value};
  const int64_t y[] = {b->kind, b->size, b->is_signed, b->reg, b->reg_shift,
                       b->index_reg, b->scale, b->value};
  for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
    if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
  return 0;
}

bool usdt_arg_same(const UsdtArg *a, const UsdtArg *b) {
  return usdt_arg_cmp(a, b) == 0;
}

/* ---- the notes --------------------------------------------------------- */

/* A new note at the end of l; NULL once l holds USDT_MAX_NOTES. */
static UsdtNote *notes_add(UsdtNotes *l) {
  if (l->n == USDT_MAX_NOTES) {
    l->too_many = true;
    return NULL;
  }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 16;
    l->notes = realloc(l->notes, l->cap * sizeof(UsdtNote));
    if (!l->notes) abort();
  }
  UsdtNote *n = &l->notes[l->n++];
  memset(n, 0, sizeof *n);
  return n;
}

void stapsdt_free(UsdtNotes *l) {
  for (int i = 0; i < l->n; i++) {
    free(l->notes[i].provider);
    free(l->notes[i].name);
    free(l->notes[i].args_text);
    free(l->notes[i].args_error);
    free(l->notes[i].args);
  }
  free(l->notes);
  free(l->by_probe);
  free(l->probes);
  l->notes = NULL;
  l->by_probe = NULL;
  l->probes = NULL;
  l->n = l->cap = l->nprobes = 0;
}

/* The address of .stapsdt.base now (0 if the file has none). */
static uint64_t stapsdt_base(Elf *e) {
  size_t shstrndx;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) return 0;
  for (Elf_Scn *scn = elf_nextscn(e, NULL); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    const char *name;
    if (gelf_getshdr(scn, &sh) &&
        (name = elf_strptr(e, shstrndx, sh.sh_name)) &&
        !strcmp(name, ".stapsdt.base"))
      return sh.sh_addr;
  }
  return 0;
}

void stapsdt_parse_args(Elf *e, uint64_t pc_vaddr, UsdtNote *n) {
  SymIndex syms = {.e = e};
  parse_args(&syms, pc_vaddr, n);
  free(syms.syms);
}

/* One note's descriptor: addresses (of the file's word size), then the
 * three strings. */
static void read_note(SymIndex *syms, const char *desc, size_t size,
                      uint64_t base, UsdtNotes *out) {
  Elf *e = syms->e;
  int word = gelf_getclass(e) == ELFCLASS32 ? 4 : 8;
  if (size < (size_t)word * 3 + 3) return;
  uint64_t addr[3] = {0};
  for (int i = 0; i < 3; i++) memcpy(&addr[i], desc + i * word, word);
  const char *s = desc + word * 3, *end = desc + size;
  const char *strs[3];
  for (int i = 0; i < 3; i++) {
    const char *nul = memchr(s, '\0', (size_t)(end - s));
    if (!nul) return;
    strs[i] = s;
    s = nul + 1;
  }
  uint64_t pc = addr[0], sema = addr[2];
  if (base && addr[1]) {   /* prelinked: move with .stapsdt.base */
    pc += base - addr[1];
    if (sema) sema += base - addr[1];
  }
  UsdtNote *n = notes_add(out);
  if (!n) return;
  n->provider = strdup(strs[0]);
  n->name = strdup(strs[1]);
  n->args_text = strdup(strs[2]);
  if (!elf_vaddr_to_offset(e, pc, &n->pc) ||
      (sema && !elf_vaddr_to_offset(e, sema, &n->semaphore))) {
    n->pc = 0;   /* not in the file's image: unusable */
    n->args_error = strdup("probe address outside the file's segments");
  }
  if (!n->args_error) parse_args(syms, pc, n);
}

static void read_notes(Elf *e, UsdtNotes *out) {
  uint64_t base = stapsdt_base(e);
  SymIndex syms = {.e = e};
  for (Elf_Scn *scn = elf_nextscn(e, NULL); scn && !out->too_many;
       scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data *data = elf_getdata(scn, NULL);
    if (!data) continue;
    GElf_Nhdr nh;
    size_t off = 0, name_off, desc_off;
    while (!out->too_many &&
           (off = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
      const char *d = data->d_buf;
      if (nh.n_type == NT_STAPSDT && nh.n_namesz == 8 &&
          !memcmp(d + name_off, "stapsdt", 8))
        read_note(&syms, d + desc_off, nh.n_descsz, base, out);
    }
  }
  free(syms.syms);
}

/* ---- grouping by probe ------------------------------------------------- */

/* Notes by provider, then name, then file order (qsort_r's context: the
 * notes). */
static int note_order_cmp(const void *a, const void *b, void *arg) {
  const UsdtNote *notes = arg;
  int i = *(const int *)a, k = *(const int *)b;
  int c = strcmp(notes[i].provider, notes[k].provider);
  if (!c) c = strcmp(notes[i].name, notes[k].name);
  return c ? c : (i > k) - (i < k);
}

static int probe_first_cmp(const void *a, const void *b, void *arg) {
  const int *by_probe = arg;
  int i = by_probe[((const UsdtProbeNotes *)a)->start],
      k = by_probe[((const UsdtProbeNotes *)b)->start];
  return (i > k) - (i < k);
}

/* Sorts instead of comparing each note with the ones before it: a file
 * may hold tens of thousands of notes. */
static void group_notes(UsdtNotes *l) {
  if (l->n == 0) return;
  l->by_probe = malloc(l->n * sizeof *l->by_probe);
  l->probes = malloc(l->n * sizeof *l->probes);
  if (!l->by_probe || !l->probes) abort();
  for (int i = 0; i < l->n; i++) l->by_probe[i] = i;
  qsort_r(l->by_probe, l->n, sizeof *l->by_probe, note_order_cmp, l->notes);
  for (int i = 0; i < l->n; i++) {
    const UsdtNote *n = &l->notes[l->by_probe[i]];
    UsdtProbeNotes *last = l->nprobes ? &l->probes[l->nprobes - 1] : NULL;
    const UsdtNote *prev = last ? &l->notes[l->by_probe[last->start]] : NULL;
    if (prev && !strcmp(prev->provider, n->provider) &&
        !strcmp(prev->name, n->name))
      last->count++;
    else
      l->probes[l->nprobes++] = (UsdtProbeNotes){i, 1};
  }
  qsort_r(l->probes, l->nprobes, sizeof *l->probes, probe_first_cmp,
          l->by_probe);
}

int stapsdt_read(const char *path, UsdtNotes *out, char *err,
                 size_t errlen) {
  int fd;
  Elf *e = elf_open_file(path, "usdt", &fd, err, errlen);
  if (!e) return -1;
  read_notes(e, out);
  elf_end(e);
  close(fd);
  if (out->too_many) {   /* none of them: a probe must not lose places */
    stapsdt_free(out);
    out->too_many = true;
  }
  group_notes(out);
  return 0;
}
