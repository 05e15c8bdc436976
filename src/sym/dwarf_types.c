/* dwarf_types: DWARF type DIEs as loupe's C types, and as the text
 * bpftrace lists them with.
 *
 * Each DIE is converted once (a table keyed by its debug file and offset
 * remembers the result); a struct is entered in the table before its
 * members are converted, so types that point to themselves terminate. */
#include <dwarf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/dwarf_int.h"

/* ---- the table of converted DIEs ------------------------------------ */

typedef struct Converted {
  struct Converted *next;
  Dwarf *dbg;
  Dwarf_Off offset;
  const CType *type;
} Converted;

#define NBUCKETS 1024
static Converted *converted[NBUCKETS];

static Converted **bucket(Dwarf *dbg, Dwarf_Off off) {
  uintptr_t h = ((uintptr_t)dbg >> 4) ^ (uintptr_t)off;
  return &converted[(h ^ (h >> 10)) % NBUCKETS];
}

static const CType *converted_before(Dwarf_Die *die) {
  Dwarf *dbg = dwarf_cu_getdwarf(die->cu);
  Dwarf_Off off = dwarf_dieoffset(die);
  for (Converted *c = *bucket(dbg, off); c; c = c->next)
    if (c->dbg == dbg && c->offset == off) return c->type;
  return NULL;
}

static const CType *remember(Dwarf_Die *die, const CType *t) {
  Converted *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->dbg = dwarf_cu_getdwarf(die->cu);
  c->offset = dwarf_dieoffset(die);
  c->type = t;
  Converted **b = bucket(c->dbg, c->offset);
  c->next = *b;
  *b = c;
  return t;
}

/* ---- attributes ------------------------------------------------------ */

bool dwinfo_type_die(Dwarf_Die *die, Dwarf_Die *out) {
  Dwarf_Attribute a;
  return dwarf_attr_integrate(die, DW_AT_type, &a) &&
         dwarf_formref_die(&a, out) != NULL;
}

static bool uattr(Dwarf_Die *die, int name, Dwarf_Word *v) {
  Dwarf_Attribute a;
  return dwarf_attr_integrate(die, name, &a) && dwarf_formudata(&a, v) == 0;
}

static bool is_declaration(Dwarf_Die *die) {
  return dwarf_hasattr(die, DW_AT_declaration);
}

static const CType *type_of_member(Dwarf_Die *die) {
  Dwarf_Die t;
  return dwinfo_type_die(die, &t) ? dwinfo_type_of_die(&t) : ctype_void();
}

/* ---- conversion ------------------------------------------------------- */

static const CType *base_type(Dwarf_Die *die) {
  Dwarf_Word enc = 0;
  int size = dwarf_bytesize(die);
  uattr(die, DW_AT_encoding, &enc);
  const char *name = dwarf_diename(die);
  switch (enc) {
  case DW_ATE_boolean:
    if (size == 1) return ctype_bool();
    break;
  case DW_ATE_signed_char:
  case DW_ATE_unsigned_char:
    if (size == 1)
      return ctype_char(name && !strcmp(name, "char"),
                        enc == DW_ATE_signed_char);
    break;
  case DW_ATE_float:
  case DW_ATE_complex_float:
    return ctype_new(C_FLOAT, name, size > 0 ? size : 0,
                     size >= 16 ? 16 : size > 0 ? size : 1);
  default:
    break;
  }
  if (size >= 1 && size <= 8 && !(size & (size - 1)))
    return ctype_int(size, enc == DW_ATE_signed || enc == DW_ATE_signed_char);
  /* __int128 and other widths: sized, named, not computed with */
  CType *t = ctype_new(C_INT, name, size > 0 ? size : 0,
                       size >= 16 ? 16 : size > 0 ? size : 1);
  t->is_signed = enc == DW_ATE_signed;
  return t;
}

/* Where a member starts, in bits from the start of its record (64 bits
 * wide, so that no offset a file claims overflows), and its width in bits
 * if it is a bitfield (else 0). */
static Dwarf_Word member_bit_offset(Dwarf_Die *m, const CType *type,
                                    Dwarf_Word *bits) {
  Dwarf_Word loc = 0, v;
  uattr(m, DW_AT_data_member_location, &loc);
  *bits = uattr(m, DW_AT_bit_size, &v) ? v : 0;
  if (loc > UINT32_MAX) return UINT64_MAX;   /* past any record */
  if (!*bits) return loc * 8;
  if (uattr(m, DW_AT_data_bit_offset, &v)) return v;
  /* DWARF 2/3: DW_AT_bit_offset counts from the most significant bit of
   * a storage unit of DW_AT_byte_size (or the type's size) bytes */
  Dwarf_Word unit = (Dwarf_Word)type->size, from_msb = 0;
  uattr(m, DW_AT_byte_size, &unit);
  uattr(m, DW_AT_bit_offset, &from_msb);
  if (unit > UINT32_MAX || from_msb + *bits > unit * 8) return UINT64_MAX;
  return loc * 8 + unit * 8 - from_msb - *bits;
}

/* Places member f of a record of rec_size bytes at bitoff (bits bits
 * wide, 0: not a bitfield); false if it does not lie wholly inside the
 * record, as only a lying file says: printing a value reads each member
 * from the record's own bytes. */
static bool place_member(CField *f, Dwarf_Word bitoff, Dwarf_Word bits,
                         int rec_size) {
  Dwarf_Word end_bits = (Dwarf_Word)rec_size * 8;
  if (bitoff > end_bits) return false;
  if (!bits) {
    if (bitoff % 8 || (Dwarf_Word)f->type->size > end_bits / 8 - bitoff / 8)
      return false;
    f->offset = (int)(bitoff / 8);
    return true;
  }
  /* a bitfield is read as an integer of its type's size */
  if ((f->type->kind != C_INT && f->type->kind != C_ENUM) ||
      f->type->size < 1 || f->type->size > 8 ||
      bits > (Dwarf_Word)f->type->size * 8 || bits > end_bits - bitoff)
    return false;
  ctype_place_bitfield(f, (int)bitoff, (int)bits);
  return f->offset + f->type->size <= rec_size;
}

static void record_members(Dwarf_Die *die, CType *t) {
  Dwarf_Die child;
  int n = 0, align = 1;
  if (dwarf_child(die, &child) == 0) do {
      if (dwarf_tag(&child) == DW_TAG_member) n++;
    } while (dwarf_siblingof(&child, &child) == 0);
  CField *fields = calloc((size_t)(n ? n : 1), sizeof *fields);
  if (!fields) abort();
  int k = 0;
  if (n && dwarf_child(die, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_member) continue;
      CField *f = &fields[k];
      memset(f, 0, sizeof *f);
      f->type = type_of_member(&child);
      Dwarf_Word bits, bitoff = member_bit_offset(&child, f->type, &bits);
      if (!place_member(f, bitoff, bits, t->size)) continue;
      const char *name = dwarf_diename(&child);
      f->name = name ? strdup(name) : NULL;
      k++;
      if (f->type->align > align) align = f->type->align;
    } while (dwarf_siblingof(&child, &child) == 0);
  t->align = align;
  ctype_set_fields(t, fields, k);
}

static const CType *record_type(Dwarf_Die *die) {
  int tag = dwarf_tag(die);
  CKind kind = tag == DW_TAG_union_type ? C_UNION : C_STRUCT;
  const char *name = dwarf_diename(die);
  if (is_declaration(die)) {
    /* the definition may be in another compilation unit */
    Dwarf_Die full;
    if (name && dwinfo_find_named_die(name, kind, &full))
      return dwinfo_type_of_die(&full);
    CType *t = ctype_new(kind, name, 0, 1);
    t->incomplete = true;
    ctype_set_fields(t, NULL, 0);
    return remember(die, t);
  }
  int size = dwarf_bytesize(die);
  CType *t = ctype_new(kind, name, size > 0 ? size : 0, 1);
  remember(die, t);
  record_members(die, t);
  return t;
}

static const CType *enum_type(Dwarf_Die *die) {
  int size = dwarf_bytesize(die);
  CType *t = ctype_new(C_ENUM, dwarf_diename(die), size > 0 ? size : 4,
                       size > 0 ? size : 4);
  EnumDef *def = calloc(1, sizeof *def);
  if (!def) abort();
  def->name = t->name ? strdup(t->name) : NULL;
  Enumerator **last = &def->items;
  Dwarf_Die child;
  if (dwarf_child(die, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_enumerator) continue;
      Enumerator *e = calloc(1, sizeof *e);
      if (!e) abort();
      const char *name = dwarf_diename(&child);
      e->name = strdup(name ? name : "");
      Dwarf_Attribute a;
      Dwarf_Sword v = 0;
      if (dwarf_attr(&child, DW_AT_const_value, &a)) dwarf_formsdata(&a, &v);
      e->value = v;
      if (v < 0) t->is_signed = true;
      *last = e;
      last = &e->next;
    } while (dwarf_siblingof(&child, &child) == 0);
  t->enumdef = def;
  return t;
}

/* T name[a][b]: an array of a arrays of b Ts, from the subranges. A
 * bound whose array would not fit in an int of bytes (only a lying file
 * has one) makes an array of unknown size, as `T name[]`. */
static const CType *array_type(Dwarf_Die *die) {
  const CType *elem = type_of_member(die);
  int dims[8], ndims = 0;
  Dwarf_Die child;
  if (dwarf_child(die, &child) == 0) do {
      if (dwarf_tag(&child) != DW_TAG_subrange_type || ndims == 8) continue;
      Dwarf_Word count = 0, upper;
      if (!uattr(&child, DW_AT_count, &count) &&
          uattr(&child, DW_AT_upper_bound, &upper))
        count = upper + 1;
      dims[ndims++] = count > INT32_MAX ? 0 : (int)count;
    } while (dwarf_siblingof(&child, &child) == 0);
  if (ndims == 0) dims[ndims++] = 0;
  const CType *t = elem;
  for (int i = ndims - 1; i >= 0; i--) {
    int64_t size = (int64_t)(t->size > 0 ? t->size : 0) * dims[i];
    int nelems = size > INT32_MAX ? 0 : dims[i];
    CType *arr = ctype_new(C_ARRAY, NULL, nelems ? (int)size : 0, t->align);
    arr->target = t;
    arr->nelems = nelems;
    t = arr;
  }
  return t;
}

static const CType *convert(Dwarf_Die *die) {
  switch (dwarf_tag(die)) {
  case DW_TAG_base_type: return base_type(die);
  case DW_TAG_pointer_type:
  case DW_TAG_reference_type:
  case DW_TAG_rvalue_reference_type:
    return ctype_pointer_to(type_of_member(die));
  case DW_TAG_structure_type:
  case DW_TAG_class_type:
  case DW_TAG_union_type: return record_type(die);
  case DW_TAG_enumeration_type: return enum_type(die);
  case DW_TAG_array_type: return array_type(die);
  case DW_TAG_subroutine_type: {
    CType *t = ctype_new(C_FUNC, NULL, 0, 1);
    t->target = type_of_member(die);
    return t;
  }
  case DW_TAG_typedef:
  case DW_TAG_const_type:
  case DW_TAG_volatile_type:
  case DW_TAG_restrict_type:
  case DW_TAG_atomic_type:
    return type_of_member(die);
  default:
    return ctype_void();
  }
}

/* The DIEs being converted, outermost first. Records are remembered
 * before their members, so a struct that points to itself terminates,
 * through a pointer DIE that the members may share with the outside. A
 * typedef, qualifier, pointer or array that refers to itself with no
 * record in between, as only a lying file has, is void where it comes
 * round again. And the nesting is bounded, so that no chain of types
 * exhausts the stack: beyond it a type is void. */
#define MAX_NESTING 1024
static struct {
  Dwarf *dbg;
  Dwarf_Off off;
  bool is_record;
} converting[MAX_NESTING];
static int nconverting;

static bool is_record_tag(int tag) {
  return tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
         tag == DW_TAG_union_type;
}

/* Whether converting the DIE would come round to itself. */
static bool in_cycle(Dwarf *dbg, Dwarf_Off off) {
  for (int i = nconverting - 1; i >= 0 && !converting[i].is_record; i--)
    if (converting[i].off == off && converting[i].dbg == dbg) return true;
  return false;
}

const CType *dwinfo_type_of_die(Dwarf_Die *die) {
  if (!die) return ctype_void();
  const CType *t = converted_before(die);
  if (t) return t;
  Dwarf *dbg = dwarf_cu_getdwarf(die->cu);
  Dwarf_Off off = dwarf_dieoffset(die);
  if (nconverting == MAX_NESTING || in_cycle(dbg, off)) return ctype_void();
  converting[nconverting].dbg = dbg;
  converting[nconverting].off = off;
  converting[nconverting++].is_record = is_record_tag(dwarf_tag(die));
  t = convert(die);
  nconverting--;
  /* records remember themselves before their members */
  if (!converted_before(die)) remember(die, t);
  return t;
}

void dwinfo_types_forget(void) {
  for (int i = 0; i < NBUCKETS; i++)
    while (converted[i]) {
      Converted *c = converted[i];
      converted[i] = c->next;
      free(c);
    }
}

/* ---- type text --------------------------------------------------------- */

static void text_into(Dwarf_Die *die, char *buf, size_t len, int depth);

/* The inner type's text, then suffix ("*" for pointers). */
static void text_then(Dwarf_Die *inner, char *buf, size_t len, int depth,
                      const char *suffix) {
  text_into(inner, buf, len, depth + 1);
  size_t used = strlen(buf);
  snprintf(buf + used, len - used, "%s", suffix);
}

static void text_into(Dwarf_Die *die, char *buf, size_t len, int depth) {
  size_t used = strlen(buf);
  if (used + 1 >= len) return;
  char *at = buf + used;
  size_t room = len - used;
  if (!die) {
    snprintf(at, room, "void");
    return;
  }
  Dwarf_Die inner;
  bool has_inner = depth < 16 && dwinfo_type_die(die, &inner);
  const char *name = dwarf_diename(die);
  switch (dwarf_tag(die)) {
  case DW_TAG_structure_type:
  case DW_TAG_class_type:
    snprintf(at, room, "struct %s", name ? name : "(anonymous)");
    break;
  case DW_TAG_union_type:
    snprintf(at, room, "union %s", name ? name : "(anonymous)");
    break;
  case DW_TAG_enumeration_type:
    snprintf(at, room, "enum %s", name ? name : "(anonymous)");
    break;
  case DW_TAG_pointer_type:
  case DW_TAG_reference_type:
  case DW_TAG_rvalue_reference_type:
    text_then(has_inner ? &inner : NULL, buf, len, depth, "*");
    break;
  case DW_TAG_const_type:
  case DW_TAG_volatile_type:
    snprintf(at, room, "%s ",
             dwarf_tag(die) == DW_TAG_const_type ? "const" : "volatile");
    text_into(has_inner ? &inner : NULL, buf, len, depth + 1);
    break;
  case DW_TAG_array_type: {
    text_into(has_inner ? &inner : NULL, buf, len, depth + 1);
    const CType *t = dwinfo_type_of_die(die);
    for (; t->kind == C_ARRAY; t = t->target) {
      used = strlen(buf);
      snprintf(buf + used, len - used, "[%d]", t->nelems);
    }
    break;
  }
  case DW_TAG_subroutine_type:
    text_then(has_inner ? &inner : NULL, buf, len, depth, "(*)()");
    break;
  case DW_TAG_restrict_type:
  case DW_TAG_atomic_type:
    text_into(has_inner ? &inner : NULL, buf, len, depth + 1);
    break;
  default:   /* base types and typedefs go by their names */
    snprintf(at, room, "%s", name ? name : "?");
  }
}

void dwinfo_type_text(Dwarf_Die *die, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  text_into(die, buf, len, 0);
}
