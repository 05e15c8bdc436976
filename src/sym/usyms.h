/* usyms: names of user-space addresses, for ustack and usym (libdwfl).
 *
 * A process's files are learned from its /proc/PID/maps the first time
 * one of its addresses is asked for (or usyms_remember is called), and
 * those maps are kept, so addresses of a process that has exited since
 * still resolve: for the last 4096 processes, with libdwfl sessions open
 * for the 64 most recently looked up and made again from the maps kept
 * for the others. For a process loupe never saw alive, addresses are
 * looked up in the binaries the script probes, as they are laid out in
 * their files (right for executables that are not position-independent,
 * or run without ASLR). */
#ifndef LOUPE_SYM_USYMS_H
#define LOUPE_SYM_USYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USYM_MAX_INLINED 8

/* What is known of one address. */
typedef struct USym {
  const char *name;     /* the symbol holding it, or NULL */
  uint64_t offset;      /* from the symbol's start */
  const char *module;   /* the file it is in, or NULL */
  uint64_t file_offset; /* its offset in that file (build_id mode) */
  const uint8_t *build_id;   /* that file's GNU build id, or NULL */
  int build_id_len;
  const char *src_file;  /* with want_line: its source file, or NULL: for
                            code inlined there, where the function (name)
                            calls the outermost inlined one */
  int src_line;
  int ninlined;          /* with want_line: the functions inlined at the
                            address, innermost first, each with where in
                            it the address is (the next one's call) */
  struct {
    const char *name, *file;
    int line;
  } inlined[USYM_MAX_INLINED];
} USym;

/* The C++ name of a mangled symbol ("_ZN5MyApp6Server5closeEv" ->
 * "MyApp::Server::close()", or without the parameter list
 * "MyApp::Server::close"), malloc'd; NULL if name is not a mangled C++
 * name. */
char *usyms_demangle(const char *name, bool with_params);
/* Looks up addr in process pid (0: unknown), with its source file and
 * line from the DWARF line table if want_line. False if no file holds
 * it. The strings of *out stay valid until the next lookup. */
bool usyms_lookup(int pid, uint64_t addr, bool want_line, USym *out);

/* Reads pid's maps now, while it lives (before its addresses are
 * printed); does nothing if they are known already. */
void usyms_remember(int pid);

/* A binary the script probes, for processes loupe never saw alive. */
void usyms_add_binary(const char *path);

/* Forgets the probed binaries (usyms_add_binary), closing their files,
 * and the names their symbols had. For the fuzzer (tests/fuzz/fuzz_elf.c),
 * which reads a new file under the same name for each input. */
void usyms_forget_binaries(void);

/* The address and size of symbol `name` (a function or an object) in the
 * ELF file at path, as the file lays it out; *relocatable tells whether
 * the file is position-independent (a PIE or a library: a process adds
 * its load address). False, with a message in err, if it has none. */
bool usyms_symbol_address(const char *path, const char *name,
                          uint64_t *addr, uint64_t *size, bool *relocatable,
                          char *err, size_t errlen);

/* The address the ELF file at path gives to its byte at file offset
 * `offset` (from its PT_LOAD segments). */
bool usyms_offset_to_vaddr(const char *path, uint64_t offset,
                           uint64_t *vaddr);

#endif
