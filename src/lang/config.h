/* config: the settings of bpftrace's config variables, from the script's
 * `config = { ... }` block and the BPFTRACE_* environment variables. */
#ifndef LOUPE_CONFIG_H
#define LOUPE_CONFIG_H

#include <stdbool.h>

#include "lang/diag.h"

typedef enum { MISSING_ERROR, MISSING_WARN, MISSING_IGNORE } MissingProbes;

typedef struct Settings {
  int max_strlen;           /* str() and buf() size */
  int max_map_keys;         /* entries of each map */
  bool print_maps_on_exit;  /* false: maps are not printed at exit */
  MissingProbes missing_probes;
  const char *license;      /* the license programs are loaded under */
  int perf_rb_pages;        /* ring buffer pages; 0: loupe's default */
  int max_cat_bytes;        /* bytes cat() prints; 0: the default */
  int max_bpf_progs;        /* the most programs a script may make */
  int max_probes;           /* the most places a script may attach to */
  int stack_mode;           /* kstack/ustack without a mode: a StackMode */
  bool show_debug_info;     /* user frames: @file:line (bpftrace mode) and
                               inlined functions (bpftrace, perf modes) */
  const char *str_trunc_trailer;  /* printed after a string cut at
                                     max_strlen */
  bool forbid_map_decl;     /* unstable_map_decl = error */
  bool forbid_tseries;      /* unstable_tseries = error */
  /* every key's value, whether loupe acts on it or not, in config.c's
   * order: for config() */
#define CONFIG_NKEYS 20
  long long value[CONFIG_NKEYS];   /* integers and booleans */
  const char *word[CONFIG_NKEYS];  /* words and strings */
} Settings;

struct Script;
struct Diag;

/* Fills s->settings: defaults, then the config block, then the
 * environment (which bpftrace lets win). Bad keys and values are located
 * errors; keys loupe does not act on are warnings. Returns the number of
 * errors. */
int config_read(struct Script *s, struct Diag *d);

/* config() (and `config`): a record of every setting's value, as literal
 * nodes located at `at`, for the checker to type. */
struct Node *config_record(const struct Script *s, Span at);

#endif
