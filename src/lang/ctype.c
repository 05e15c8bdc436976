/* ctype: a small model of C types, filled from three places in order of
 * precedence: the structs a script defines, a table of integer names that
 * need no kernel knowledge, and the kernel's BTF (through libbpf).
 *
 * BTF is loaded on the first name only it can answer, and converted type
 * by type as names are asked for: a struct's members are converted when
 * first looked at, so naming task_struct does not convert the thousands
 * of types reachable from it. */
#include "lang/ctype.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/btf.h>

/* ---- the registry ----------------------------------------------------- */

/* Everything this module knows, owned here for the life of the process. */
static struct {
  CType **script;       /* the current script's structs, unions, enums */
  int nscript;
  struct btf *btf;      /* kernel BTF, NULL until first needed */
  bool btf_tried;       /* loading was attempted (and maybe failed) */
  char btf_error[128];
  CType **by_id;        /* converted kernel types, indexed by BTF id */
  int ntypes;
  /* Texts already resolved by ctype_parse: BTF finds names by a linear
   * scan, so each text is looked up once, those it does not name too (the
   * error is kept instead of the type). Emptied when script structs or
   * the user lookup change, since they take precedence. */
  struct { char *text; const CType *type; char *err; } *parsed;
  int nparsed, capparsed;
  CTypeLookup user;     /* types of probed user programs (DWARF), or NULL */
  /* The kernel's enumerators by name, built on the first lookup: an open
   * addressing table of (BTF id, index) pairs, 0 marking a free slot.
   * Where two enums share a name the lowest id wins, as a scan would. */
  struct { uint32_t id, index; } *enumerators;
  uint32_t enum_mask;
} reg;

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n, size);
  if (!p) abort();
  return p;
}

static char *xstrdup(const char *s) {
  char *p = strdup(s);
  if (!p) abort();
  return p;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

static CType *new_type(CKind kind, const char *name, int size, int align) {
  CType *t = xcalloc(1, sizeof *t);
  t->kind = kind;
  t->name = name ? xstrdup(name) : NULL;
  t->size = size;
  t->align = align > 0 ? align : 1;
  return t;
}

bool ctype_btf_loaded(void) { return reg.btf != NULL; }

/* Kernels since 6.16 let /sys/kernel/btf/vmlinux be mapped: parsing the
 * mapping takes half the time of libbpf's read() of the file (about 7 ms
 * against 15 for 5 MB). btf__new copies the data, so the mapping goes. */
static struct btf *map_sysfs_btf(void) {
  int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  struct stat st;
  struct btf *btf = NULL;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      btf = btf__new(data, (__u32)st.st_size);
      munmap(data, (size_t)st.st_size);
    }
  }
  close(fd);
  return btf;
}

static struct btf *kernel_btf(void) {
  if (reg.btf_tried) return reg.btf;
  reg.btf_tried = true;
  struct btf *btf = map_sysfs_btf();
  /* Older kernels, or BTF only in a vmlinux file: libbpf knows where. */
  if (!btf) btf = btf__load_vmlinux_btf();
  if (!btf) {
    snprintf(reg.btf_error, sizeof reg.btf_error,
             "kernel BTF is not available (%s)", strerror(errno));
    return NULL;
  }
  reg.btf = btf;
  reg.ntypes = (int)btf__type_cnt(btf);
  reg.by_id = xcalloc((size_t)reg.ntypes, sizeof *reg.by_id);
  return btf;
}

struct btf *ctype_kernel_btf(void) { return kernel_btf(); }

/* ---- built-in names ----------------------------------------------------- */

/* The integer names a script can use without BTF: bpftrace's own, the
 * kernel's short ones and <stdint.h>'s. */
static const struct {
  const char *name;
  int size;
  bool is_signed;
} int_names[] = {
    {"int8", 1, true},     {"int16", 2, true},     {"int32", 4, true},
    {"int64", 8, true},    {"uint8", 1, false},    {"uint16", 2, false},
    {"uint32", 4, false},  {"uint64", 8, false},   {"s8", 1, true},
    {"s16", 2, true},      {"s32", 4, true},       {"s64", 8, true},
    {"u8", 1, false},      {"u16", 2, false},      {"u32", 4, false},
    {"u64", 8, false},     {"__s8", 1, true},      {"__s16", 2, true},
    {"__s32", 4, true},    {"__s64", 8, true},     {"__u8", 1, false},
    {"__u16", 2, false},   {"__u32", 4, false},    {"__u64", 8, false},
    {"int8_t", 1, true},   {"int16_t", 2, true},   {"int32_t", 4, true},
    {"int64_t", 8, true},  {"uint8_t", 1, false},  {"uint16_t", 2, false},
    {"uint32_t", 4, false}, {"uint64_t", 8, false}, {"size_t", 8, false},
    {"ssize_t", 8, true},  {"uintptr_t", 8, false}, {"intptr_t", 8, true},
};

static CType *int_type(int size, bool is_signed) {
  static CType *cache[2][9];
  CType **slot = &cache[is_signed][size];
  if (!*slot) {
    *slot = new_type(C_INT, NULL, size, size);
    (*slot)->is_signed = is_signed;
  }
  return *slot;
}

static const CType *void_type(void) {
  static CType *t;
  if (!t) t = new_type(C_VOID, "void", 0, 1);
  return t;
}

static const CType *bool_type(void) {
  static CType *t;
  if (!t) {
    t = new_type(C_INT, "bool", 1, 1);
    t->is_bool = true;
  }
  return t;
}

/* C's three character types. Plain `char` is what bpftrace reads as
 * text: an array of it is a string (char comm[16]). `signed char` and
 * `unsigned char` (int8_t, uint8_t) are small integers, and arrays of them
 * arrays of numbers, as in bpftrace. */
static const CType *char_type(bool plain, bool is_signed) {
  static CType *t[2][2];
  CType **slot = &t[plain][is_signed];
  if (!*slot) {
    *slot = new_type(C_INT,
                     plain       ? "char"
                     : is_signed ? "signed char"
                                 : "unsigned char",
                     1, 1);
    (*slot)->is_signed = is_signed;
    (*slot)->is_char = plain;
  }
  return *slot;
}

static const CType *builtin_named(const char *name) {
  for (size_t i = 0; i < sizeof int_names / sizeof int_names[0]; i++)
    if (!strcmp(name, int_names[i].name))
      return int_type(int_names[i].size, int_names[i].is_signed);
  if (!strcmp(name, "bool") || !strcmp(name, "_Bool")) return bool_type();
  if (!strcmp(name, "void")) return void_type();
  /* floating point members: sized for layouts, never computed with */
  static CType *fp[2];
  bool dbl = !strcmp(name, "double");
  if (dbl || !strcmp(name, "float")) {
    if (!fp[dbl]) fp[dbl] = new_type(C_FLOAT, name, dbl ? 8 : 4, dbl ? 8 : 4);
    return fp[dbl];
  }
  return NULL;
}

/* C's multi-word integer spellings: any order of signed/unsigned, char,
 * short, int, long, long long. NULL if the words are not all such. */
static const CType *c_integer(char **words, int n) {
  int nsigned = 0, nunsigned = 0, nchar = 0, nshort = 0, nint = 0, nlong = 0;
  for (int i = 0; i < n; i++) {
    const char *w = words[i];
    if (!strcmp(w, "signed")) nsigned++;
    else if (!strcmp(w, "unsigned")) nunsigned++;
    else if (!strcmp(w, "char")) nchar++;
    else if (!strcmp(w, "short")) nshort++;
    else if (!strcmp(w, "int")) nint++;
    else if (!strcmp(w, "long")) nlong++;
    else return NULL;
  }
  if (nsigned + nunsigned > 1 || nchar + nshort + (nlong > 0) > 1 ||
      nint > 1 || nlong > 2 || (nchar && nint))
    return NULL;
  if (nchar) return char_type(!nsigned && !nunsigned, !nunsigned);
  int size = nshort ? 2 : nlong ? 8 : 4;
  return int_type(size, !nunsigned);
}

/* ---- kernel types ------------------------------------------------------- */

static const CType *from_btf(int id);

static const char *btf_name(const struct btf_type *bt) {
  const char *name = btf__name_by_offset(reg.btf, bt->name_off);
  return name && *name ? name : NULL;
}

static CType *btf_int(const struct btf_type *bt) {
  const char *name = btf_name(bt);
  int enc = btf_int_encoding(bt);
  CType *t = new_type(C_INT, name, (int)bt->size, (int)bt->size);
  t->is_signed = (enc & BTF_INT_SIGNED) != 0;
  t->is_bool = (enc & BTF_INT_BOOL) != 0;
  t->is_char = name && !strcmp(name, "char");   /* not signed/unsigned */
  return t;
}

static CType *btf_record(int id, const struct btf_type *bt) {
  CType *t = new_type(btf_is_union(bt) ? C_UNION : C_STRUCT, btf_name(bt),
                      (int)bt->size, btf__align_of(reg.btf, (__u32)id));
  t->btf_id_ = id;
  return t;
}

/* A forward declaration: the full definition if BTF has one. */
static const CType *btf_forward(const struct btf_type *bt) {
  bool is_union = btf_kflag(bt);
  const char *name = btf_name(bt);
  if (name) {
    int full = btf__find_by_name_kind(reg.btf, name,
                                      is_union ? BTF_KIND_UNION
                                               : BTF_KIND_STRUCT);
    if (full > 0) return from_btf(full);
  }
  CType *t = new_type(is_union ? C_UNION : C_STRUCT, name, 0, 1);
  t->incomplete = true;
  t->fields_done_ = true;
  return t;
}

/* The value of enumerator i of a BTF enum or enum64, as loaded from
 * memory: sign-extended if the enum is signed. */
static int64_t btf_enumerator(const struct btf_type *bt, int i,
                              const char **name) {
  if (btf_is_enum64(bt)) {
    const struct btf_enum64 *e = btf_enum64(bt);
    *name = btf__name_by_offset(reg.btf, e[i].name_off);
    return (int64_t)btf_enum64_value(&e[i]);
  }
  const struct btf_enum *e = btf_enum(bt);
  *name = btf__name_by_offset(reg.btf, e[i].name_off);
  return btf_kflag(bt) ? (int64_t)e[i].val : (int64_t)(uint32_t)e[i].val;
}

/* A kernel enum with its enumerators, which name its values in output. */
static CType *btf_enum_type(const struct btf_type *bt) {
  CType *t = new_type(C_ENUM, btf_name(bt), (int)bt->size, (int)bt->size);
  t->is_signed = btf_kflag(bt);
  EnumDef *def = xcalloc(1, sizeof *def);
  def->name = t->name ? xstrdup(t->name) : NULL;
  Enumerator **last = &def->items;
  for (int i = 0; i < btf_vlen(bt); i++) {
    Enumerator *e = xcalloc(1, sizeof *e);
    const char *name;
    e->value = btf_enumerator(bt, i, &name);
    e->name = xstrdup(name ? name : "");
    *last = e;
    last = &e->next;
  }
  t->enumdef = def;
  return t;
}

/* Converts kernel type `id` without caching; modifiers and typedefs are
 * resolved through. Records are created without members. */
static const CType *convert_btf(int id) {
  const struct btf_type *bt = btf__type_by_id(reg.btf, (__u32)id);
  if (!bt) return void_type();
  switch (btf_kind(bt)) {
  case BTF_KIND_INT: return btf_int(bt);
  case BTF_KIND_PTR: return ctype_pointer_to(from_btf((int)bt->type));
  case BTF_KIND_ARRAY: {
    const struct btf_array *arr = btf_array(bt);
    const CType *elem = from_btf((int)arr->type);
    CType *t = new_type(C_ARRAY, NULL, elem->size * (int)arr->nelems,
                        elem->align);
    t->target = elem;
    t->nelems = (int)arr->nelems;
    return t;
  }
  case BTF_KIND_STRUCT:
  case BTF_KIND_UNION: return btf_record(id, bt);
  case BTF_KIND_ENUM:
  case BTF_KIND_ENUM64: return btf_enum_type(bt);
  case BTF_KIND_FWD: return btf_forward(bt);
  case BTF_KIND_TYPEDEF:
  case BTF_KIND_VOLATILE:
  case BTF_KIND_CONST:
  case BTF_KIND_RESTRICT:
  case BTF_KIND_TYPE_TAG: return from_btf((int)bt->type);
  case BTF_KIND_FUNC: return from_btf((int)bt->type);  /* its prototype */
  case BTF_KIND_FUNC_PROTO: {
    CType *t = new_type(C_FUNC, NULL, 0, 1);
    t->target = from_btf((int)bt->type);
    return t;
  }
  case BTF_KIND_FLOAT:
    return new_type(C_FLOAT, btf_name(bt), (int)bt->size, (int)bt->size);
  default: return void_type();
  }
}

/* The converted kernel type `id`, cached. A record is cached before
 * anything it refers to is converted, so self-references terminate. */
static const CType *from_btf(int id) {
  if (id <= 0 || id >= reg.ntypes) return void_type();
  if (reg.by_id[id]) return reg.by_id[id];
  const CType *t = convert_btf(id);
  reg.by_id[id] = (CType *)t;
  return t;
}

/* Where a bitfield of `bits` bits starting `bitoff` bits into its record
 * is loaded from; see CField in ctype.h. */
static void place_bitfield(CField *f, int bitoff, int bits) {
  int unit = f->type->size > 0 ? f->type->size * 8 : 8;
  int start = bitoff / unit * unit;
  f->bit_size = bits;
  if (bitoff - start + bits <= unit) {
    f->offset = start / 8;
    f->bit_offset = bitoff - start;
  } else {
    f->offset = bitoff / 8;
    f->bit_offset = bitoff % 8;
  }
}

static void load_btf_fields(CType *t) {
  const struct btf_type *bt = btf__type_by_id(reg.btf, (__u32)t->btf_id_);
  int n = btf_vlen(bt);
  const struct btf_member *m = btf_members(bt);
  t->fields_ = xcalloc((size_t)(n ? n : 1), sizeof *t->fields_);
  t->nfields_ = n;
  for (int i = 0; i < n; i++) {
    CField *f = &t->fields_[i];
    f->name = btf__name_by_offset(reg.btf, m[i].name_off);
    if (f->name && !*f->name) f->name = NULL;
    f->type = from_btf((int)m[i].type);
    int bitoff = (int)btf_member_bit_offset(bt, (__u32)i);
    int bits = (int)btf_member_bitfield_size(bt, (__u32)i);
    if (bits)
      place_bitfield(f, bitoff, bits);
    else
      f->offset = bitoff / 8;
  }
}

int ctype_fields(const CType *ct, const CField **fields) {
  CType *t = (CType *)ct;
  *fields = NULL;
  if (!t || (t->kind != C_STRUCT && t->kind != C_UNION)) return 0;
  /* Script structs are marked done by lay_out once complete. */
  if (!t->fields_done_ && t->btf_id_ && reg.btf) {
    t->fields_done_ = true;
    load_btf_fields(t);
  }
  *fields = t->fields_;
  return t->nfields_;
}

bool ctype_field(const CType *t, const char *name, CField *out) {
  const CField *fields;
  int n = ctype_fields(t, &fields);
  for (int i = 0; i < n; i++)
    if (fields[i].name && !strcmp(fields[i].name, name)) {
      *out = fields[i];
      return true;
    }
  /* C11 anonymous members: their members belong to the enclosing record. */
  for (int i = 0; i < n; i++) {
    if (fields[i].name) continue;
    CField inner;
    if (ctype_field(fields[i].type, name, &inner)) {
      *out = inner;
      out->offset += fields[i].offset;
      return true;
    }
  }
  return false;
}

bool ctype_field_path(const CType *t, const char *path, CField *out) {
  char name[256];
  int offset = 0;
  for (const char *p = path;;) {
    const char *dot = strchr(p, '.');
    size_t len = dot ? (size_t)(dot - p) : strlen(p);
    if (len == 0 || len >= sizeof name) return false;
    memcpy(name, p, len);
    name[len] = 0;
    if (!ctype_field(t, name, out)) return false;
    offset += out->offset;
    if (!dot) break;
    t = out->type;
    p = dot + 1;
  }
  out->offset = offset;
  return true;
}

const CType *ctype_array_of(const CType *elem, int n) {
  CType *arr = new_type(C_ARRAY, NULL, elem->size * n, elem->align);
  arr->target = elem;
  arr->nelems = n;
  return arr;
}

bool ctype_same_members(const CType *a, const CType *b) {
  const CField *fa, *fb;
  int n = ctype_fields(a, &fa);
  if (a->size != b->size || ctype_fields(b, &fb) != n) return false;
  for (int i = 0; i < n; i++) {
    char ta[200], tb[200];
    if (strcmp(fa[i].name, fb[i].name) || fa[i].offset != fb[i].offset ||
        strcmp(ctype_name(fa[i].type, ta, sizeof ta),
               ctype_name(fb[i].type, tb, sizeof tb)))
      return false;
  }
  return true;
}

const CType *ctype_pointer_to(const CType *ct) {
  CType *t = (CType *)ct;
  if (!t->pointer_) {
    t->pointer_ = new_type(C_PTR, NULL, 8, 8);
    t->pointer_->target = t;
  }
  return t->pointer_;
}

/* A kernel type by name and BTF kind, or NULL. Loads BTF. */
static const CType *btf_named(const char *name, int kind) {
  if (!kernel_btf()) return NULL;
  int id = btf__find_by_name_kind(reg.btf, name, (__u32)kind);
  if (id <= 0 && kind == BTF_KIND_ENUM)
    id = btf__find_by_name_kind(reg.btf, name, BTF_KIND_ENUM64);
  return id > 0 ? from_btf(id) : NULL;
}

/* A linear scan: enumerators are not indexed by BTF, and scripts name
 * only a few of them. */
static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u;              /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* The slot of `name` in the enumerator table: the one holding it, or the
 * free slot where it would go. */
static uint32_t enum_slot(const char *name) {
  uint32_t h = name_hash(name) & reg.enum_mask;
  for (;; h = (h + 1) & reg.enum_mask) {
    if (!reg.enumerators[h].id) return h;
    const char *e;
    btf_enumerator(btf__type_by_id(reg.btf, reg.enumerators[h].id),
                   (int)reg.enumerators[h].index, &e);
    if (!strcmp(e, name)) return h;
  }
}

static void index_enumerators(void) {
  uint32_t count = 0, size = 64;
  for (int id = 1; id < reg.ntypes; id++) {
    const struct btf_type *bt = btf__type_by_id(reg.btf, (__u32)id);
    if (btf_is_enum(bt) || btf_is_enum64(bt)) count += btf_vlen(bt);
  }
  while (size < 2 * count) size *= 2;
  reg.enumerators = xcalloc(size, sizeof *reg.enumerators);
  reg.enum_mask = size - 1;
  for (int id = 1; id < reg.ntypes; id++) {
    const struct btf_type *bt = btf__type_by_id(reg.btf, (__u32)id);
    if (!btf_is_enum(bt) && !btf_is_enum64(bt)) continue;
    for (int i = 0; i < btf_vlen(bt); i++) {
      const char *e;
      btf_enumerator(bt, i, &e);
      uint32_t h = enum_slot(e);
      if (reg.enumerators[h].id) continue;   /* an earlier enum has it */
      reg.enumerators[h].id = (uint32_t)id;
      reg.enumerators[h].index = (uint32_t)i;
    }
  }
}

bool ctype_enum_value(const char *name, int64_t *value, const CType **type) {
  if (!kernel_btf()) return false;
  if (!reg.enumerators) index_enumerators();
  uint32_t h = enum_slot(name);
  if (!reg.enumerators[h].id) return false;
  const char *e;
  *value = btf_enumerator(btf__type_by_id(reg.btf, reg.enumerators[h].id),
                          (int)reg.enumerators[h].index, &e);
  if (type) *type = from_btf((int)reg.enumerators[h].id);
  return true;
}

/* ---- script structs ----------------------------------------------------- */

static CType *script_named(const char *name, CKind kind) {
  for (int i = 0; i < reg.nscript; i++)
    if (reg.script[i]->kind == kind && !strcmp(reg.script[i]->name, name))
      return reg.script[i];
  return NULL;
}

/* ---- parsing type text ---------------------------------------------------- */

#define MAX_TYPE_WORDS 8

static bool is_qualifier(const char *w) {
  return !strcmp(w, "const") || !strcmp(w, "volatile") ||
         !strcmp(w, "restrict") || !strcmp(w, "__restrict");
}

#define MAX_TYPE_MODS 16

/* Splits "struct file **" or "int32[4] *" into words (copied into buf),
 * dropping qualifiers, and the modifiers after them, in order, each '*'
 * as -1 and each "[N]" as N (N > 0): bpftrace's postfix type syntax, read
 * left to right ("int32 *[4]" is an array of 4 pointers, "int32[4] *" a
 * pointer to an array of 4; with_mods). False if the text is not of that
 * shape. */
static bool split_type_text(const char *text, char *buf, size_t buflen,
                            char **words, int *nwords, int *mods,
                            int *nmods) {
  size_t used = 0;
  *nwords = *nmods = 0;
  for (const char *p = text; *p;) {
    if (isspace((unsigned char)*p)) {
      p++;
    } else if (*p == '*' || *p == '[') {
      if (*nmods == MAX_TYPE_MODS) return false;
      if (*p == '*') {
        mods[(*nmods)++] = -1;
        p++;
        continue;
      }
      char *end;
      long n = strtol(p + 1, &end, 10);
      if (end == p + 1 || *end != ']' || n <= 0 || n > (1 << 20))
        return false;
      mods[(*nmods)++] = (int)n;
      p = end + 1;
    } else if (isalnum((unsigned char)*p) || *p == '_') {
      const char *start = p;
      while (isalnum((unsigned char)*p) || *p == '_') p++;
      size_t n = (size_t)(p - start);
      if (*nmods || *nwords == MAX_TYPE_WORDS || used + n + 1 > buflen)
        return false;
      char *w = buf + used;
      memcpy(w, start, n);
      w[n] = 0;
      used += n + 1;
      if (!is_qualifier(w)) words[(*nwords)++] = w;
    } else {
      return false;
    }
  }
  return *nwords > 0;
}

/* t with the modifiers split_type_text found applied, left to right; a
 * run of sizes is one C array declarator, "[2][3]" two arrays of 3. */
static const CType *with_mods(const CType *t, const int *mods, int nmods) {
  for (int i = 0; i < nmods;) {
    if (mods[i] < 0) {
      t = ctype_pointer_to(t);
      i++;
      continue;
    }
    int end = i;
    while (end < nmods && mods[end] > 0) end++;
    for (int k = end - 1; k >= i; k--) t = ctype_array_of(t, mods[k]);
    i = end;
  }
  return t;
}

static const CType *tagged(const char *tag, const char *name, char *err,
                           size_t errlen) {
  CKind kind = !strcmp(tag, "union") ? C_UNION
               : !strcmp(tag, "enum") ? C_ENUM : C_STRUCT;
  const CType *t = script_named(name, kind);
  if (t) return t;
  if (reg.user && (t = reg.user(name, kind)) != NULL) return t;
  t = btf_named(name, kind == C_UNION    ? BTF_KIND_UNION
                      : kind == C_ENUM ? BTF_KIND_ENUM
                                       : BTF_KIND_STRUCT);
  if (t) return t;
  if (kind == C_ENUM)
    set_err(err, errlen, "Unknown enum: 'enum %s'", name);
  else
    set_err(err, errlen, "Unknown struct/union: '%s %s'", tag, name);
  return NULL;
}

/* A one-word name: built-in, then a script struct, then a user program's
 * typedef, struct, union or enum, then the kernel's
 * typedefs, structs, unions and enums. */
static const CType *plain_named(const char *name, char *err, size_t errlen) {
  const CType *t = builtin_named(name);
  if (!t) t = script_named(name, C_STRUCT);
  if (!t) t = script_named(name, C_UNION);
  if (!t && reg.user) t = reg.user(name, C_VOID);
  if (!t) t = btf_named(name, BTF_KIND_TYPEDEF);
  if (!t) t = btf_named(name, BTF_KIND_STRUCT);
  if (!t) t = btf_named(name, BTF_KIND_UNION);
  if (!t) t = btf_named(name, BTF_KIND_ENUM);
  if (!t) set_err(err, errlen, "Unknown type: '%s'", name);
  return t;
}

static int parsed_before(const char *text) {
  for (int i = 0; i < reg.nparsed; i++)
    if (!strcmp(reg.parsed[i].text, text)) return i;
  return -1;
}

/* `err` is the message of a text that names no type (t NULL). */
static void remember_parsed(const char *text, const CType *t,
                            const char *err) {
  if (reg.nparsed == reg.capparsed) {
    reg.capparsed = reg.capparsed ? 2 * reg.capparsed : 16;
    reg.parsed = realloc(reg.parsed, sizeof *reg.parsed * (size_t)reg.capparsed);
    if (!reg.parsed) abort();
  }
  reg.parsed[reg.nparsed].text = xstrdup(text);
  reg.parsed[reg.nparsed].err = t ? NULL : xstrdup(err);
  reg.parsed[reg.nparsed++].type = t;
}

static void forget_parsed(void) {
  for (int i = 0; i < reg.nparsed; i++) {
    free(reg.parsed[i].text);
    free(reg.parsed[i].err);
  }
  reg.nparsed = 0;
}

static const CType *parse_uncached(const char *text, char *err,
                                   size_t errlen);

const CType *ctype_parse(const char *text, char *err, size_t errlen) {
  int i = parsed_before(text);
  if (i >= 0) {
    if (!reg.parsed[i].type) set_err(err, errlen, "%s", reg.parsed[i].err);
    return reg.parsed[i].type;
  }
  char msg[512] = "";
  const CType *t = parse_uncached(text, msg, sizeof msg);
  if (!t) set_err(err, errlen, "%s", msg);
  remember_parsed(text, t, msg);
  return t;
}

static const CType *parse_uncached(const char *text, char *err,
                                   size_t errlen) {
  char buf[256];
  char *words[MAX_TYPE_WORDS];
  int nwords, mods[MAX_TYPE_MODS], nmods;
  if (!split_type_text(text, buf, sizeof buf, words, &nwords, mods,
                       &nmods)) {
    set_err(err, errlen, "Invalid type: '%s'", text);
    return NULL;
  }
  const CType *t = NULL;
  bool tag = !strcmp(words[0], "struct") || !strcmp(words[0], "union") ||
             !strcmp(words[0], "enum");
  if (tag && nwords == 2)
    t = tagged(words[0], words[1], err, errlen);
  else if (!tag && (t = c_integer(words, nwords)) != NULL)
    ;
  else if (!tag && nwords == 1)
    t = plain_named(words[0], err, errlen);
  else
    set_err(err, errlen, "Invalid type: '%s'", text);
  if (!t && !reg.btf && reg.btf_tried && err && errlen) {
    size_t used = strlen(err);
    snprintf(err + used, errlen - used, " (%s)", reg.btf_error);
  }
  return t ? with_mods(t, mods, nmods) : NULL;
}

/* ---- names for messages ----------------------------------------------- */

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void append(char *buf, size_t len, const char *fmt, ...) {
  size_t used = strlen(buf);
  if (used >= len) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + used, len - used, fmt, ap);
  va_end(ap);
}

static void name_into(const CType *t, char *buf, size_t len) {
  const char *anon = "<anonymous>";
  switch (t->kind) {
  case C_VOID: append(buf, len, "void"); break;
  case C_INT:
    if (t->is_bool)
      append(buf, len, "bool");
    else
      append(buf, len, "%sint%d", t->is_signed ? "" : "u", t->size * 8);
    break;
  case C_FLOAT: append(buf, len, "%s", t->name ? t->name : "float"); break;
  case C_PTR:
    name_into(t->target, buf, len);
    append(buf, len, t->target->kind == C_PTR ? "*" : " *");
    break;
  case C_STRUCT: append(buf, len, "struct %s", t->name ? t->name : anon); break;
  case C_UNION: append(buf, len, "union %s", t->name ? t->name : anon); break;
  case C_ENUM: append(buf, len, "enum %s", t->name ? t->name : anon); break;
  case C_ARRAY:
    name_into(t->target, buf, len);
    append(buf, len, "[%d]", t->nelems);
    break;
  case C_FUNC: append(buf, len, "function"); break;
  }
}

const char *ctype_name(const CType *t, char *buf, size_t len) {
  if (!len) return buf;
  buf[0] = 0;
  if (t) name_into(t, buf, len);
  return buf;
}

/* ---- types from other sources ------------------------------------------ */

void ctype_set_user_lookup(CTypeLookup lookup) {
  reg.user = lookup;
  forget_parsed();
}

CType *ctype_new(CKind kind, const char *name, int size, int align) {
  return new_type(kind, name, size, align);
}

void ctype_set_fields(CType *t, CField *fields, int n) {
  t->fields_ = fields;
  t->nfields_ = n;
  t->fields_done_ = true;
}

void ctype_place_bitfield(CField *f, int bitoff, int bits) {
  place_bitfield(f, bitoff, bits);
}

const CType *ctype_int(int size, bool is_signed) {
  return size >= 1 && size <= 8 ? int_type(size, is_signed) : NULL;
}

const CType *ctype_char(bool plain, bool is_signed) {
  return char_type(plain, is_signed);
}
const CType *ctype_bool(void) { return bool_type(); }
const CType *ctype_void(void) { return void_type(); }

/* ---- script struct layout ------------------------------------------------ */

static int align_up(int n, int align) { return (n + align - 1) / align * align; }

/* The type of one member as declared, or NULL after reporting why. */
static void lay_out(CType *t, const StructDef *def, Diag *d);

/* An array of t for each of the member's dimensions, innermost first. */
static const CType *member_array(const StructField *sf, const CType *t) {
  for (int i = sf->ndims - 1; i >= 0; i--) t = ctype_array_of(t, sf->dims[i]);
  return t;
}

static const CType *member_type(const StructField *sf, Diag *d) {
  char err[256];
  if (sf->inline_def) {
    /* struct { ... } name: laid out as its own anonymous type */
    CType *inner = new_type(sf->inline_def->is_union ? C_UNION : C_STRUCT,
                            NULL, 0, 1);
    inner->from_script = true;
    lay_out(inner, sf->inline_def, d);
    return member_array(sf, inner);
  }
  const CType *t = ctype_parse(sf->type, err, sizeof err);
  if (!t) {
    /* C allows pointers to structs declared nowhere; they stay opaque. */
    char buf[256], *words[MAX_TYPE_WORDS];
    int nwords, mods[MAX_TYPE_MODS], nstars;
    if (split_type_text(sf->type, buf, sizeof buf, words, &nwords, mods,
                        &nstars) &&
        nstars > 0 && mods[0] < 0 && nwords == 2 &&
        (!strcmp(words[0], "struct") || !strcmp(words[0], "union"))) {
      CType *opaque = new_type(!strcmp(words[0], "union") ? C_UNION : C_STRUCT,
                               words[1], 0, 1);
      opaque->incomplete = true;
      opaque->fields_done_ = true;
      t = opaque;
      return with_mods(opaque, mods, nstars);
    }
    diag_error(d, sf->type_span, "%s", err);
    return NULL;
  }
  if (t->kind == C_VOID || t->kind == C_FUNC || t->incomplete ||
      ((t->kind == C_STRUCT || t->kind == C_UNION) && t->from_script &&
       !t->fields_done_)) {
    diag_error(d, sf->type_span, "Member '%s' has incomplete type '%s'",
               sf->name, sf->type);
    return NULL;
  }
  return member_array(sf, t);
}

/* Lays out one script struct: each member at the next multiple of its
 * alignment (at 0 in a union; anywhere when packed), the size rounded up
 * to the largest. A bitfield goes on in the unit of its type the bits
 * before it are in if it fits there, else starts the next one. */
static void lay_out(CType *t, const StructDef *def, Diag *d) {
  int n = 0;
  for (const StructField *sf = def->fields; sf; sf = sf->next) n++;
  t->fields_ = xcalloc((size_t)(n ? n : 1), sizeof *t->fields_);
  int end = 0, align = 1, bit_end = 0;
  for (const StructField *sf = def->fields; sf; sf = sf->next) {
    CField dup;
    if (ctype_field(t, sf->name, &dup)) {
      diag_error(d, sf->span, "Duplicate member '%s' in %s %s", sf->name,
                 def->is_union ? "union" : "struct", def->name);
      continue;
    }
    const CType *mt = member_type(sf, d);
    if (!mt) continue;
    if (sf->bits && (mt->kind != C_INT || sf->bits > mt->size * 8)) {
      diag_error(d, sf->span, "bitfield '%s' needs an integer type of at "
                 "least %d bits", sf->name, sf->bits);
      continue;
    }
    if (sf->bits && mt->is_signed) {
      /* bpftrace reads a bitfield's bits as an unsigned value */
      CType *u = new_type(C_INT, mt->name, mt->size, mt->align);
      u->is_char = mt->is_char;
      mt = u;
    }
    CField *f = &t->fields_[t->nfields_++];
    f->name = sf->name;
    f->type = mt;
    int member_align = def->packed ? 1 : mt->align;
    if (sf->bits) {
      int unit = mt->size * 8, at = t->kind == C_UNION ? 0 : bit_end;
      if (!def->packed && at / unit != (at + sf->bits - 1) / unit)
        at = align_up(at, unit);
      place_bitfield(f, at, sf->bits);
      bit_end = at + sf->bits;
      if ((bit_end + 7) / 8 > end) end = (bit_end + 7) / 8;
    } else {
      f->offset = t->kind == C_UNION ? 0 : align_up(end, member_align);
      if (f->offset + mt->size > end) end = f->offset + mt->size;
      bit_end = end * 8;
    }
    if (member_align > align) align = member_align;
  }
  t->align = align;
  t->size = align_up(end, align);
  t->fields_done_ = true;
}

/* A script enum as C would lay it out: an int if its values fit one (or
 * an unsigned int), else 8 bytes; signed if any value is negative. */
static void define_script_enum(const EnumDef *def, Diag *d) {
  if (!def->name) return;
  if (script_named(def->name, C_ENUM)) {
    diag_error(d, def->span, "Redefinition of 'enum %s'", def->name);
    return;
  }
  int64_t lo = 0, hi = 0;
  for (const Enumerator *e = def->items; e; e = e->next) {
    if (e->value < lo) lo = e->value;
    if (e->value > hi) hi = e->value;
  }
  bool negative = lo < 0;
  bool wide = negative ? lo < INT32_MIN || hi > INT32_MAX
                       : hi > (int64_t)UINT32_MAX;
  CType *t = new_type(C_ENUM, def->name, wide ? 8 : 4, wide ? 8 : 4);
  t->is_signed = negative;
  t->from_script = true;
  t->enumdef = def;
  reg.script[reg.nscript++] = t;
}

int ctype_define_script_structs(Script *s, Diag *d) {
  int errors_before = d->errors;
  forget_parsed();
  reg.nscript = 0;
  int n = 0;
  for (StructDef *def = s->structs; def; def = def->next) n++;
  for (EnumDef *def = s->enums; def; def = def->next) n++;
  free(reg.script);
  reg.script = xcalloc((size_t)(n ? n : 1), sizeof *reg.script);
  /* Enums first: struct members may have their types. */
  for (EnumDef *def = s->enums; def; def = def->next)
    define_script_enum(def, d);
  /* Every name first, so members may point to structs defined later. */
  for (StructDef *def = s->structs; def; def = def->next) {
    CKind kind = def->is_union ? C_UNION : C_STRUCT;
    if (script_named(def->name, kind)) {
      diag_error(d, def->span, "Redefinition of '%s %s'",
                 def->is_union ? "union" : "struct", def->name);
      continue;
    }
    CType *t = new_type(kind, def->name, 0, 1);
    t->from_script = true;
    reg.script[reg.nscript++] = t;
  }
  for (StructDef *def = s->structs; def; def = def->next) {
    CType *t = script_named(def->name, def->is_union ? C_UNION : C_STRUCT);
    if (t && !t->fields_done_) lay_out(t, def, d);
  }
  return d->errors - errors_before;
}
