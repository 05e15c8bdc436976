/* sysheader: the constants of the system headers a script includes.
 *
 * bpftrace hands "#include <linux/icmp.h>" to clang, so ICMP_ECHO means 8
 * in the script. loupe takes types from BTF and does not compile C, but
 * it reads the constants: a <header> is found in the -I directories, then
 * in the system include path (/usr/local/include, the multiarch directory,
 * /usr/include, the running kernel's headers if installed), and scanned
 * for directives only, following its own includes: object-like #defines
 * are recorded (the first definition wins, #undef is honoured),
 * function-like ones are recorded as such (a constant that needs one is
 * an error that says so), and the enumerators "NAME = number" of its enum
 * definitions are recorded too (<dirent.h> defines DT_REG as an
 * enumerator, then "#define DT_REG DT_REG").
 *
 * Conditionals are evaluated as cpp would (undefined names are 0;
 * __KERNEL__ is not defined; a few of the compiler's own macros are:
 * __linux__, the architecture's, __LP64__, __BYTE_ORDER__). A condition
 * that cannot be evaluated (a function-like macro such as
 * __GNUC_PREREQ (4, 3), __has_include) takes no branch of its group, so
 * what it guards is not defined rather than perhaps wrong.
 *
 * Every file is read once, with safe_read_file (regular files only, at
 * most SYSHEADER_MAX_FILE_BYTES: another is an error), nested at most
 * SYSHEADER_MAX_DEPTH deep; past SYSHEADER_MAX_FILES files or
 * SYSHEADER_MAX_BYTES in all the rest is left unread (a kernel header
 * pulls in hundreds). Nothing is read for a script that includes no
 * <header>. */
#ifndef LOUPE_SYSHEADER_H
#define LOUPE_SYSHEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYSHEADER_MAX_FILES 1024
#define SYSHEADER_MAX_DEPTH 64
#define SYSHEADER_MAX_FILE_BYTES (1 << 20)
#define SYSHEADER_MAX_BYTES (48 << 20)

typedef struct SysHeaders SysHeaders;

/* -I DIR directories, searched first (Settings.include_dirs). */
SysHeaders *sysheaders_new(const char **include_dirs, int ninclude_dirs);

/* Reads #include <name> (nlen bytes) and what it includes. 1 if found
 * and read, 0 if no directory has it (bpftrace scripts include kernel
 * headers that are seldom installed: their types come from BTF), -1 with
 * the reason in `why` if a file cannot be read. */
int sysheaders_include(SysHeaders *h, const char *name, int nlen, char *why,
                       size_t whylen);

/* Whether a header read so far defines macro `name` (for the script's
 * own #ifdef). */
bool sysheaders_defined(const SysHeaders *h, const char *name, int len);

/* The value of `name` as the headers define it: 1 with *value (and
 * *is_unsigned for a value above INT64_MAX); 0 if no header defines it;
 * -1 with the reason in `why` if it is not a constant loupe can evaluate
 * (a function-like macro, a string, a cycle...). */
int sysheaders_constant(const SysHeaders *h, const char *name,
                        int64_t *value, bool *is_unsigned, char *why,
                        size_t whylen);

/* The headers the script included that were found (or, if !found, those
 * found nowhere), for messages: "<linux/icmp.h>", "<a.h>, <b.h>";
 * *count is how many. */
void sysheaders_describe(const SysHeaders *h, bool found, char *out,
                         size_t size, int *count);

#endif
