/* ctype: C types as scripts name them — the kernel's, read from BTF, and
 * the structs a script defines itself — with their sizes and member
 * layouts.
 *
 * Types live for the whole process and are shared: the same name always
 * gives the same CType pointer. Kernel BTF is loaded only when a name is
 * not one of the built-in integer names or a script-defined struct, so
 * scripts that use no kernel types never pay for it. */
#ifndef LOUPE_CTYPE_H
#define LOUPE_CTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/ast.h"
#include "lang/diag.h"

typedef enum CKind {
  C_VOID,
  C_INT,     /* also bool and char; see is_bool, is_char */
  C_PTR,
  C_STRUCT,
  C_UNION,
  C_ARRAY,
  C_ENUM,
  C_FUNC,    /* a function prototype; target is the return type */
  C_FLOAT,   /* float/double: sized, never computed with */
} CKind;

struct CField;

typedef struct CType {
  CKind kind;
  const char *name;   /* "task_struct", "long unsigned int"; NULL when
                         anonymous or derived (pointers, arrays) */
  int size;           /* bytes; C_VOID and C_FUNC 0; pointers 8 */
  int align;          /* bytes */
  bool is_signed;     /* C_INT, C_ENUM */
  bool is_bool;       /* C_INT: _Bool */
  bool is_char;       /* C_INT: plain char (not signed or unsigned char),
                         whose arrays are strings */
  const struct CType *target;  /* C_PTR: pointee; C_ARRAY: element;
                                  C_FUNC: return type */
  int nelems;         /* C_ARRAY: number of elements (0: flexible) */
  bool from_script;   /* C_STRUCT/C_UNION/C_ENUM defined by the script */
  const EnumDef *enumdef;  /* C_ENUM: its enumerators */
  bool incomplete;    /* C_STRUCT/C_UNION declared but never defined */

  /* Private to ctype.c: kernel struct members are converted on first use,
   * so read them through ctype_fields() or ctype_field(). */
  struct CField *fields_;
  int nfields_;
  bool fields_done_;
  int btf_id_;
  struct CType *pointer_;   /* the cached "pointer to this" type */
} CType;

/* A member of a struct or union.
 *
 * Ordinary members: `offset` is the byte offset, bit_size is 0.
 * Bitfields (bit_size > 0): load type->size bytes (little-endian) at
 * `offset`, shift right by bit_offset and keep the low bit_size bits
 * (sign-extending when type->is_signed). `offset` is the start of the
 * naturally aligned type->size unit holding the field; only for packed
 * layouts where no such unit holds it is `offset` the byte holding its
 * first bit (bit_offset < 8), and then the field may span more than
 * type->size bytes. */
typedef struct CField {
  const char *name;   /* NULL for an anonymous struct/union member */
  int offset;
  int bit_offset;
  int bit_size;
  const CType *type;  /* typedefs and const/volatile resolved through */
} CField;

/* Resolves a type as a script writes it: "struct task_struct",
 * "task_struct" (a struct of that name), "int", "unsigned long",
 * "uint8".."uint64", "int8".."int64", "u32", "char", "bool", "void",
 * typedefs such as "pid_t" (resolved through to what they name), and
 * pointers to any of these: "struct file *", "int8 *", "char **".
 * const/volatile are ignored. Structs the script defines take precedence
 * over the kernel's. Returns NULL with a message in err if unknown. */
const CType *ctype_parse(const char *text, char *err, size_t errlen);

/* The member `name` of a struct or union, looking through anonymous
 * struct/union members; out->offset is from the start of t. False if t is
 * not a struct/union or has no such member. */
bool ctype_field(const CType *t, const char *name, CField *out);

/* A member path "a.b.c" through embedded structs/unions (not through
 * pointers), as offsetof() takes it; out->offset is the total. */
bool ctype_field_path(const CType *t, const char *path, CField *out);

/* The direct members of a struct or union in declaration order (anonymous
 * ones included, unexpanded); the count is returned. 0 for other kinds. */
int ctype_fields(const CType *t, const CField **fields);

/* Whether two structs have the same size and the same members (names,
 * offsets and type names): the argument records of two functions. */
bool ctype_same_members(const CType *a, const CType *b);

/* The type "pointer to t". */
const CType *ctype_pointer_to(const CType *t);
/* An array of n elems. */
const CType *ctype_array_of(const CType *elem, int n);

/* The value of an enumerator of the kernel's BTF, e.g. BPF_MAP_TYPE_HASH,
 * and its enum type in *type (if type is not NULL). False if there is
 * none (or no BTF). */
bool ctype_enum_value(const char *name, int64_t *value, const CType **type);

/* How messages name a type: "struct task_struct", "int64", "uint8 *",
 * "int8[16]", "bool", "union <anonymous>". Returns buf. */
const char *ctype_name(const CType *t, char *buf, size_t len);

/* Registers the enum, struct and union definitions of a script
 * (Script.enums, Script.structs) in order, replacing those of any script
 * registered before; "enum Foo" then names the script's enum. Reports
 * mistakes (unknown member types, duplicate names or members) through d
 * with the culprit's span; returns the number of errors. */
int ctype_define_script_structs(Script *s, Diag *d);

/* ---- other sources of types (the DWARF of user programs) ----
 * Such a source builds its types with these and answers names through a
 * lookup, asked after the script's own structs and before kernel BTF. */

/* The struct, union or enum (kind) or, for kind C_VOID, the typedef named
 * `name`; NULL if the source has none. */
typedef const CType *(*CTypeLookup)(const char *name, CKind kind);
void ctype_set_user_lookup(CTypeLookup lookup);

/* A new type, to be completed by its source. */
CType *ctype_new(CKind kind, const char *name, int size, int align);
/* Gives a struct or union its members (the array is kept). */
void ctype_set_fields(CType *t, CField *fields, int n);
/* Sets f's offset, bit_offset and bit_size for a bitfield of `bits` bits
 * `bitoff` bits into its record; f->type must be set. */
void ctype_place_bitfield(CField *f, int bitoff, int bits);
/* The shared integer types: size 1, 2, 4 or 8 (else NULL); char (plain
 * char, or signed or unsigned char); bool; void. */
const CType *ctype_int(int size, bool is_signed);
const CType *ctype_char(bool plain, bool is_signed);
const CType *ctype_bool(void);
const CType *ctype_void(void);
/* The BTF id of the kernel's per-CPU variable `name` (a VAR in the
 * .data..percpu section of vmlinux BTF): > 0; 0 if there is no such
 * variable (or no BTF), -1 if the variable is not per-CPU. */
int ctype_percpu_var_id(const char *name);

/* The BTF id of the kernel function `name` (a FUNC of vmlinux BTF), which
 * a program calls as a kfunc: > 0, or 0 if there is none (or no BTF). */
int ctype_kernel_func_id(const char *name);
/* Whether the kernel has a kfunc `name`: a function of vmlinux BTF that
 * BTF tags as a kfunc (any function, if BTF tags none). */
bool ctype_is_kfunc(const char *name);
/* The name of the kernel function with BTF id `id`, if BTF is loaded
 * already (for listings); NULL otherwise. */
const char *ctype_kernel_func_name(int id);

/* True once kernel BTF has been loaded (tests and start-up measurements). */
bool ctype_btf_loaded(void);

/* The kernel's BTF (vmlinux), loaded on first use and shared with the
 * probe providers that read it (raw tracepoints); NULL if there is none. */
struct btf;
struct btf *ctype_kernel_btf(void);

#endif
