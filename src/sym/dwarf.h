/* dwarf: the debug information (DWARF, read with elfutils' libdw) of the
 * user programs uprobes probe — the parameters of their functions, and
 * their types as loupe's C types (lang/ctype.h), so that a uprobe can read
 * `args.name` and a script can cast to a program's own `struct Foo *`.
 *
 * The debug information is found as elfutils finds it: in the file
 * itself, or in a separate file named by its build-id or .gnu_debuglink
 * (/usr/lib/debug/...), split DWARF (.dwo, .dwp) included. Functions here
 * are named dwinfo_ so as not to meet libdw's own dwarf_ names. */
#ifndef LOUPE_SYM_DWARF_H
#define LOUPE_SYM_DWARF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lang/ctype.h"

/* One formal parameter of a function. */
typedef struct DwParam {
  char *name;          /* NULL when unnamed */
  const CType *type;
  char *type_text;     /* as bpftrace lists it: "int*", "struct Foo*",
                          "const char*" */
} DwParam;

/* Notes that the ELF file at path is probed: from now on ctype_parse also
 * finds the structs, unions, enums and typedefs of its debug information
 * (after the script's own, before the kernel's). Its DWARF is read only
 * when a name is first asked for. */
void dwinfo_note_binary(const char *path);

/* Whether the ELF file at path has debug information. */
bool dwinfo_available(const char *path);

/* The parameters of function `func` in the ELF file at path (the array
 * lives as long as the process). Returns their count, or -1 with a
 * message in err: no debug information, or no such function in it. */
int dwinfo_func_params(const char *path, const char *func,
                       const DwParam **params, char *err, size_t errlen);

/* The record of a uprobe's arguments as they arrive in registers on
 * x86-64 (System V ABI): a struct whose member for each parameter passed
 * in general-purpose registers sits at 8 * (the index of its first
 * register: rdi 0, rsi 1, rdx 2, rcx 3, r8 4, r9 5). Parameters passed
 * elsewhere (floating point, large structs, past the sixth register) are
 * left out. Cached; NULL with a message in err as dwinfo_func_params. */
const CType *dwinfo_args_record(const char *path, const char *func,
                                char *err, size_t errlen);

/* Whether the parameter `name` of func was left out of its arguments
 * record (not passed in general-purpose registers). */
bool dwinfo_param_not_in_registers(const char *path, const char *func,
                                   const char *name);

/* The offset in the ELF file at path of the first statement of source
 * line `line` of `file` ("uprobe_test.c", or a longer tail of its path),
 * the lowest where the line has several, and the name of the function
 * it is in (NULL if none is known). False with a message in err if there
 * is no debug information or no code at that line. */
bool dwinfo_line_offset(const char *path, const char *file, int line,
                        uint64_t *offset, const char **func, char *err,
                        size_t errlen);

/* Forgets every binary noted and read, closing their files; the types
 * made of them stay valid. For the fuzzer (tests/fuzz/fuzz_elf.c), which
 * reads a new file under the same name for each input. */
void dwinfo_forget_binaries(void);

#endif
