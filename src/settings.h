/* settings: everything the user says about one run, in one record. main
 * fills it from the command line, then lang/config.c from the script's
 * `config = { ... }` block and the BPFTRACE_* environment. A stage that
 * acts on a setting reads it from the record it is handed: the compile
 * stages as Script.settings (code generation as Gen.st), the providers as
 * their hooks' argument, attach_all as its own. (The config values the
 * runtime acts on after loading are copied into Compiled by check.) */
#ifndef LOUPE_SETTINGS_H
#define LOUPE_SETTINGS_H

#include <stdbool.h>

/* --mode: in bench mode bench probes have targets, in test mode test
 * probes do; otherwise they are left out (probes/special.c). */
typedef enum RunMode { MODE_RUN, MODE_BENCH, MODE_TEST } RunMode;

/* config missing_probes: what an attach point that matches nothing is. */
typedef enum { MISSING_ERROR, MISSING_WARN, MISSING_IGNORE } MissingProbes;

/* config metrics_max_series: the series of one map in its metrics */
#define METRICS_MAX_SERIES_DEFAULT 10000

typedef struct Settings {
  /* ---- the command line (main.c) ---- */
  char **params;        /* the words after the program: positional
                           parameters $1.., and --name[=value] options for
                           getopt() (lang/options.c splits them) */
  int nparams;
  bool unsafe;          /* --unsafe: functions that act on the system;
                           uprobes where loupe cannot check the bounds
                           (symbols of size 0), kprobes on functions that
                           can stall the kernel or that the list of
                           traceable functions leaves out */
  bool has_command;     /* -c COMMAND was given */
  int cpid;             /* its pid, once started (0: not started, as in a
                           dry run); usdt probes attach to it alone */
  int target_pid;       /* -p PID: probes other than BEGIN and END act
                           only in this process, uprobes attach to it
                           alone; 0: every process */
  RunMode mode;         /* --mode */
  const char *probe_filter;  /* --probe-filter REGEX, or NULL */
  bool helper_errors;   /* -k: report helpers that fail while probes run */
  bool metrics;         /* the maps are read as metrics (--metrics,
                           --metrics-push, -f prometheus|openmetrics):
                           histograms also keep the sum of their values */
  bool list_verbose;    /* -lv: listings also print each probe's arguments,
                           one per line, indented ("    struct sk_buff *
                           skb") */
  const char *traceable_functions;  /* --traceable-functions FILE: the
                           kernel functions kprobes may match, one "name"
                           or "name [module]" a line, instead of ftrace's
                           available_filter_functions; NULL: ftrace's */
  const char **pre_includes;  /* --include FILE, in order: read as if the
                                 script began with #include "FILE" */
  int npre_includes;
  const char **include_dirs;  /* -I DIR: where #include and --include also
                                 look for headers, in order */
  int ninclude_dirs;
  bool no_file_includes;  /* #include "file" and import are errors and
                             #include <h> reads nothing (the fuzzing
                             harness: its inputs must not read what lies
                             around) */
  bool (*comm_padded)(void);  /* asked, once a script uses comm, whether
                                 the kernel's bpf_get_current_comm
                                 zero-fills its buffer (kernel_pads_comm);
                                 NULL: assume not */

  /* ---- the config block and the environment (lang/config.c) ---- */
  int max_strlen;           /* str() and buf() size */
  int max_map_keys;         /* entries of each map */
  bool print_maps_on_exit;  /* false: maps are not printed at exit */
  MissingProbes missing_probes;
  const char *license;      /* the license programs are loaded under */
  int perf_rb_pages;        /* ring buffer pages; 0: loupe's default */
  int max_cat_bytes;        /* bytes cat() prints; 0: the default */
  int metrics_max_series;   /* series of one map in the metrics */
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
#define CONFIG_NKEYS 21
  long long value[CONFIG_NKEYS];   /* integers and booleans */
  const char *word[CONFIG_NKEYS];  /* words and strings */
} Settings;

#endif
