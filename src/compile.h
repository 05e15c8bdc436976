/* compile: the whole front end and code generator in one call — parse,
 * config block, attach-point parameters, macros, probe expansion, checks,
 * loupe's own maps (plan), code generation. Shared by main and the fuzzing
 * harness (tests/fuzz). */
#ifndef LOUPE_COMPILE_H
#define LOUPE_COMPILE_H

#include <stdbool.h>

#include "lang/ast.h"
#include "lang/diag.h"
#include "model/program.h"

/* What the command line tells the compiler about this run. */
typedef struct CompileSettings {
  char **params;     /* positional parameters $1.. */
  int nparams;
  bool unsafe;       /* --unsafe */
  bool has_command;  /* -c COMMAND given */
  int cpid;          /* the command's pid (0 if none yet) */
  int target_pid;    /* -p PID (0: none) */
  const char *probe_filter;  /* --probe-filter REGEX, or NULL */
  bool helper_errors;  /* -k: report helpers that fail while probes run */
  bool (*comm_padded)(void);  /* asked, once a script uses comm, whether the
                                 kernel's bpf_get_current_comm zero-fills its
                                 buffer (kernel_pads_comm); NULL: assume not */
} CompileSettings;

/* The front half: parse, config block, attach-point parameters, macros and
 * probe expansion, as compile_script does them (for -l of a script).
 * Returns 0, or -1 once a stage has reported errors through d. */
int compile_front(const Source *src, const CompileSettings *cs,
                  Script **script, Diag *d);

/* Compiles src into c. *script receives the AST (also on failure, when
 * parsing got that far); it points into src->text and is never freed.
 * Returns 0, or -1 once a stage has reported errors through d. */
int compile_script(const Source *src, const CompileSettings *cs,
                   Script **script, Compiled *c, Diag *d);

#endif
