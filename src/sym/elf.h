/* elf: the user-space files loupe probes — finding a binary or a library
 * by name, and reading the function symbols of an ELF file (libelf). */
#ifndef LOUPE_SYM_ELF_H
#define LOUPE_SYM_ELF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libelf.h>

typedef struct Func {
  char *name;
  uint64_t offset;   /* in the file */
  uint64_t vaddr;    /* the symbol's value: its address as linked */
  uint64_t size;     /* bytes of code, 0 if the symbol does not say */
} Func;

typedef struct FuncList {
  Func *funcs;
  int n, cap;
} FuncList;

/* Finds the file BINARY names: a path as it is, a bare name in the first
 * PATH directory holding an executable of that name, or else a shared
 * library of that name (NAME.so or NAME.so.N in the usual library
 * directories). The path found goes to out; false if there is none. */
bool elf_find_binary(const char *binary, char *out, size_t outlen);

/* For -p: the file process pid has mapped whose base name is NAME, or
 * NAME.so, NAME.so.N for a library ("libc" → .../libc.so.6): out gets
 * its path as the process names it (its /proc/PID/maps path), and the
 * path to open it by (procfs_mapped_file: the mapped file itself) is
 * returned. NULL if it maps none (err empty), or if its maps or that
 * file cannot be read (err says why). */
const char *elf_find_in_maps(int pid, const char *name, char *out,
                             size_t outlen, char *err, size_t errlen);

/* Reads the defined function symbols of the ELF file at path (.symtab and
 * .dynsym) into l, with file offsets, sorted by name, one of each name.
 * Returns 0, or -1 with a message in err. */
int elf_read_functions(const char *path, FuncList *l, char *err,
                       size_t errlen);
void elf_funcs_free(FuncList *l);

/* The file offset of virtual address vaddr of the open ELF file e, through
 * the PT_LOAD segment whose file image holds it; false if none does. */
typedef struct Elf Elf;
bool elf_vaddr_to_offset(Elf *e, uint64_t vaddr, uint64_t *offset);

/* Opens path as an ELF file (libelf set up): the Elf handle, with its
 * file descriptor in *fd (elf_end, then close), or NULL with a message in
 * err naming it a `kind` ("uprobe", "usdt") target file. */
Elf *elf_open_file(const char *path, const char *kind, int *fd, char *err,
                   size_t errlen);

#endif
