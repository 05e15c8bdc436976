/* dwarf_int: what sym/dwarf.c (files, functions, names) and
 * sym/dwarf_types.c (type conversion) share; not for other modules. */
#ifndef LOUPE_SYM_DWARF_INT_H
#define LOUPE_SYM_DWARF_INT_H

#include <elfutils/libdw.h>

#include "sym/dwarf.h"

/* The C type of a type DIE (NULL: void), converted once and cached. */
const CType *dwinfo_type_of_die(Dwarf_Die *die);
/* Forgets every DIE converted (dwinfo_forget_binaries). */
void dwinfo_types_forget(void);
/* The type text of a type DIE (NULL: void) as bpftrace lists it. */
void dwinfo_type_text(Dwarf_Die *die, char *buf, size_t len);
/* The DIE a DIE's DW_AT_type names (through abstract origins); false for
 * none (void). */
bool dwinfo_type_die(Dwarf_Die *die, Dwarf_Die *out);
/* The complete struct/union/enum (kind) or typedef (C_VOID) of that name
 * in the noted binaries' debug information, as a DIE; false if none. */
bool dwinfo_find_named_die(const char *name, CKind kind, Dwarf_Die *out);
/* The same as a C type: ctype_parse's lookup into user programs. */
const CType *dwinfo_lookup_named(const char *name, CKind kind);

#endif
