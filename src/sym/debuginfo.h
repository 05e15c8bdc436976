/* debuginfo: where libdwfl may look for a binary's separate debug file.
 *
 * A binary's .gnu_debuglink names its debug file, and libdwfl's standard
 * search joins that name to directories as it is: a traced program whose
 * debug link read "../../../tmp/fifo" had loupe open a FIFO and wait on
 * it forever. This search keeps to the debug directories instead. */
#ifndef LOUPE_SYM_DEBUGINFO_H
#define LOUPE_SYM_DEBUGINFO_H

#include <elfutils/libdwfl.h>

/* Dwfl_Callbacks.find_debuginfo: the debug file of mod, opened
 * non-blocking, a regular file only, whose build id (or, for a file
 * without one, the debug link's CRC) matches; its name (malloc'd) in
 * *debuginfo_file_name. Looked for, in order:
 *   /usr/lib/debug/.build-id/xx/yyyy.debug  by the binary's build id;
 *   DIR/NAME, DIR/.debug/NAME, /usr/lib/debug/DIR/NAME  for the debug
 *     link NAME (no '/', not "." or "..") of the binary in DIR.
 * A debug file's link to the file dwz made it share is followed by that
 * file's build id, or to its path if under /usr/lib/debug/ (libdw is
 * then kept from looking itself). Never asks debuginfod. -1 if none. */
int debuginfo_find(Dwfl_Module *mod, void **userdata, const char *modname,
                   Dwarf_Addr base, const char *file_name,
                   const char *debuglink_file, GElf_Word debuglink_crc,
                   char **debuginfo_file_name);

#endif
