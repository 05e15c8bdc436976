/* main: the loupe command line. Reads the options (bpftrace's, where loupe
 * has the feature), then drives the pipeline
 *
 *   parse → expand → check → codegen → (-d: print, stop) → load → attach
 *   → run → detach → unload
 *
 * and makes sure that whichever stage fails, everything created before it
 * is closed again before exiting.
 */
#include <errno.h>
#include <getopt.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compile.h"
#include "codegen/codegen.h"
#include "probes/expand.h"
#include "probes/list.h"
#include "output/encoder.h"
#include "output/flamegraph.h"
#include "output/metrics.h"
#include "runtime/http.h"
#include "runtime/info.h"
#include "runtime/load.h"
#include "probes/provider.h"
#include "runtime/print.h"
#include "runtime/run.h"
#include "lang/lex.h"
#include "util/safe_file.h"

#ifndef LOUPE_VERSION
#define LOUPE_VERSION "0.0.0"
#endif

/* Set by SIGINT/SIGTERM/SIGHUP from loading on (on_stop_signal) and by
 * run.c's own handlers; the run treats it as a stop request (see run.h). */
volatile sig_atomic_t loupe_stop_requested;
volatile sig_atomic_t loupe_output_closed;

static const char usage_text[] =
    "USAGE:\n"
    "    loupe [options] FILE [ARG...]\n"
    "    loupe [options] - [ARG...]          (program read from stdin)\n"
    "    loupe [options] -e 'PROGRAM' [ARG...]\n"
    "    loupe -l [-v] [PATTERN | FILE | -e 'PROGRAM']\n"
    "\n"
    "loupe compiles a bpftrace script to eBPF, attaches it to its probes\n"
    "and prints what they report until the script calls exit() or it is\n"
    "interrupted (Ctrl-C, SIGTERM, SIGHUP); then it runs the END probes and prints\n"
    "every non-empty map. A script whose only probes are BEGIN and END\n"
    "ends by itself once BEGIN has run. Loading needs root; -d, --dry-run\n"
    "and -l only need to read tracefs for tracepoints, which is usually\n"
    "root-only too.\n"
    "\n"
    "OPTIONS:\n"
    "    -e 'PROGRAM'   run PROGRAM, given on the command line (messages\n"
    "                   call it \"stdin\")\n"
    "    -l, --list [PATTERN]\n"
    "                   list the probes whose names match PATTERN, a glob\n"
    "                   with '*' and '?' ('tracepoint:sched:*', 't:sched:*',\n"
    "                   '*ware:*', '*sleep*'); a plain tracepoint event name\n"
    "                   matches too; several patterns are separated by\n"
    "                   commas; 'struct NAME' prints the kernel's struct;\n"
    "                   with -e, or a PATTERN that names a file, list that\n"
    "                   script's probes; without PATTERN, list every probe;\n"
    "                   -lv adds each probe's arguments\n"
    "    -o, --output FILE\n"
    "                   write printf and map output to FILE, not stdout\n"
    "    -c, --cmd 'COMMAND'\n"
    "                   run COMMAND (split at blanks, no shell) once the\n"
    "                   probes are attached, and stop when it exits; the\n"
    "                   builtin cpid is its pid; usdt probes attach to it\n"
    "                   alone\n"
    "    -p, --pid PID  trace only process PID: every probe but BEGIN and\n"
    "                   END acts only in it, uprobes attach to it alone\n"
    "                   (a bare library name is looked up in its maps),\n"
    "                   and loupe stops when it exits; with -l, list the\n"
    "                   uprobes and usdt probes of the files it maps\n"
    "    -B MODE        output buffering: 'line' (default), 'full', 'none'\n"
    "    -f FORMAT      output format: 'text' (default), 'json' (one\n"
    "                   JSON record per line, as bpftrace -f json) or\n"
    "                   'folded': maps keyed by kstack or ustack as folded\n"
    "                   stacks (\"root;...;leaf COUNT\", for flamegraph.pl,\n"
    "                   speedscope), their other keys as root frames; at\n"
    "                   exit the other maps print as text on stderr\n"
    "    --flamegraph FILE.svg\n"
    "                   at exit, also write the maps keyed by a stack as an\n"
    "                   interactive SVG flame graph (hover: samples; click:\n"
    "                   zoom; search box)\n"
    "    --metrics [ADDR:]PORT\n"
    "                   serve every map at http://ADDR:PORT/metrics for\n"
    "                   Prometheus (OpenMetrics or its text format, as the\n"
    "                   scraper asks), read from the kernel at each scrape;\n"
    "                   ADDR 127.0.0.1 unless given ([::1] for IPv6)\n"
    "    --metrics-push URL\n"
    "                   at the end, push every map to the Prometheus\n"
    "                   Pushgateway at URL (http://HOST:9091), in the group\n"
    "                   job=loupe, script=SCRIPT and the --metrics-labels\n"
    "    --interval SECONDS\n"
    "                   with -f prometheus|openmetrics -o FILE: rewrite FILE\n"
    "                   every SECONDS while the script runs, not only at the\n"
    "                   end\n"
    "    --metrics-label NAME=VALUE\n"
    "                   a label every metric carries (host=db1); repeatable\n"
    "    -q             quiet: do not print the \"Attached N probes\" line\n"
    "    -d [STAGE]     dry run: print the generated BPF programs as\n"
    "                   assembly, under the script lines they come from,\n"
    "                   and exit without loading anything (STAGE: asm,\n"
    "                   or bpftrace's codegen, codegen-opt, dis, all)\n"
    "    -v             verbose: print the programs as -d does, then run,\n"
    "                   printing the verifier's statistics of each program\n"
    "                   as it loads (with -l: list each probe's arguments)\n"
    "    --dry-run      compile and check the script, then exit without\n"
    "                   loading or running anything (no BEGIN, no maps)\n"
    "    --no-warnings  do not print warnings (\"WARNING: ...\")\n"
    "    -k             report each failed read of memory (probe_read\n"
    "                   helpers) and each read of a map entry that does\n"
    "                   not exist, as a warning with its place in the\n"
    "                   script (with -f json, a helper_error record)\n"
    "    --mode MODE    'run' (default); 'bench': run BEGIN, then each\n"
    "                   bench:NAME probe many times, print the average time\n"
    "                   of one run (with the system call that runs it),\n"
    "                   then run END; 'test': run BEGIN, then each\n"
    "                   test:NAME probe once, print PASS or FAIL for each\n"
    "                   (a test fails if it returns non-zero, reports an\n"
    "                   error or calls exit() with a non-zero code; only a\n"
    "                   failed test's output is shown) and exit with 1 if\n"
    "                   any failed; bench and test probes are ignored in\n"
    "                   the other modes\n"
    "    --bench        the same as --mode bench\n"
    "    --test         the same as --mode test\n"
    "    --probe-filter REGEX\n"
    "                   attach only the probes whose full names\n"
    "                   (\"interval:ms:200\", \"tracepoint:sched:sched_switch\")\n"
    "                   the extended regex REGEX finds a match in; BEGIN\n"
    "                   and END always run\n"
    "    --unsafe       allow functions that act on the system: system(),\n"
    "                   signal(), write_user(), override(); uprobes on\n"
    "                   symbols of size 0 and at offsets that do not start\n"
    "                   an instruction; kprobes on\n"
    "                   RCU and idle functions (rcu_*, default_idle), which\n"
    "                   can stall the kernel, or that the list of traceable\n"
    "                   functions leaves out\n"
    "    --traceable-functions FILE\n"
    "                   the kernel functions kprobes may match, a name (and\n"
    "                   [module]) a line, instead of ftrace's\n"
    "                   available_filter_functions\n"
    "    --include HEADER\n"
    "                   as if the script began with #include \"HEADER\"\n"
    "                   when HEADER is a file here or in a -I DIR (its\n"
    "                   struct, union and enum definitions and #defines);\n"
    "                   a system header is ignored, as #include <HEADER>\n"
    "                   is when no -I DIR has it\n"
    "    -I DIR         look for the headers of #include <h>, #include \"h\"\n"
    "                   (after the script's own directory) and --include\n"
    "                   in DIR; may be given several times\n"
    "    --usdt-file-activation\n"
    "                   accepted for bpftrace's sake: usdt semaphores are\n"
    "                   always set in every process running the file\n"
    "    -h, --help     show this help and exit\n"
    "    -V, --version  print loupe's version and exit\n"
    "    --info         print the system and the kernel's BPF features\n"
    "                   (probed by loading small programs) and exit\n"
    "    --             end of options: every word after it is FILE or an\n"
    "                   ARG, even if it starts with '-'\n"
    "\n"
    "ARGs after the program are kept as the script's positional\n"
    "parameters ($1, $2, ...). Options may come before or after FILE.\n"
    "\n"
    "A script file that starts with the line '#!/usr/bin/env loupe' can be\n"
    "made executable and run directly.\n"
    "\n"
    "EXIT STATUS:\n"
    "    0 when the script ends normally (exit(), Ctrl-C, SIGTERM) or a\n"
    "    listing or dry run succeeds; 1 on a bad command line, an error in\n"
    "    the script, or a failure to load or attach a program.\n"
    "\n"
    "EXAMPLES:\n"
    "loupe -l 'tracepoint:syscalls:sys_enter_open*'\n"
    "    list the tracepoints of the open system calls\n"
    "loupe -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }'\n"
    "    count system calls by process name until Ctrl-C\n"
    "loupe -e 'tracepoint:syscalls:sys_enter_openat "
    "{ printf(\"%s %s\\n\", comm, str(args.filename)); }'\n"
    "    show which process opens which file\n"
    "loupe -d script.bt\n"
    "    show the BPF programs script.bt compiles to\n";

static void usage_hint(void) {
  fputs("Try 'loupe --help' for more information.\n", stderr);
}

/* ---- options -------------------------------------------------------- */

/* What the command line says that only main acts on; the rest goes to the
 * run's Settings (settings.h). */
typedef struct Options {
  const char *program;     /* -e */
  const char *script_path; /* FILE, or "-" for stdin */
  const char *out_path;    /* -o */
  int buffering;           /* _IOLBF, _IOFBF or _IONBF */
  bool list;               /* -l */
  const char *list_pattern;
  bool quiet;
  int format;              /* -f: OUT_TEXT, OUT_JSON or OUT_FOLDED */
  const char *flamegraph;  /* --flamegraph FILE.svg */
  const char *metrics;     /* --metrics [ADDR:]PORT */
  const char *metrics_push;  /* --metrics-push URL */
  int interval_s;          /* --interval SECONDS: -f prometheus|openmetrics
                              -o FILE rewritten that often */
  enum { METRICS_NONE, METRICS_TEXT, METRICS_OM } metrics_format;  /* -f */
  const char *metrics_labels[METRICS_LABELS_MAX];  /* --metrics-label */
  int nmetrics_labels;
  bool dry_run;            /* -d, --dry-run: compile only, load nothing */
  bool show_programs;      /* -d, -v: print the programs as assembly */
  bool no_warnings;        /* --no-warnings */
  const char *command;     /* -c: run this, trace until it exits */
} Options;

/* -c COMMAND: the command runs in a child that loupe starts before
 * compiling (so the script can use its pid as `cpid`) but that waits on a
 * pipe until every probe is attached and BEGIN has run. */
typedef struct Child {
  pid_t pid;
  int go_fd;    /* writing a byte releases the child; closing it ends it */
} Child;

static Child child = {-1, -1};

static int parse_buffering(const char *mode, int *out) {
  if (!strcmp(mode, "line")) *out = _IOLBF;
  else if (!strcmp(mode, "full")) *out = _IOFBF;
  else if (!strcmp(mode, "none")) *out = _IONBF;
  else return -1;
  return 0;
}

/* Reports the option getopt stopped at: a long one is argv[optind - 1];
 * a short one is optopt (it may sit inside a group like "-qe"). */
static void report_bad_option(int c, char **argv) {
  const char *arg = argv[optind - 1];
  bool is_long = !strncmp(arg, "--", 2);
  if (c == ':' && !is_long)
    fprintf(stderr, "loupe: option '-%c' needs an argument\n", optopt);
  else if (c == ':')
    fprintf(stderr, "loupe: option '%s' needs an argument\n", arg);
  else if (!is_long)
    fprintf(stderr, "loupe: unknown option '-%c'\n", optopt);
  else
    fprintf(stderr, "loupe: unknown option '%s'\n", arg);
  /* As bpftrace does, the usage follows, so the user sees what exists. */
  fputs(usage_text, stderr);
}

/* The largest pid the kernel hands out, as bpftrace bounds -p. */
static long pid_max(void) {
  long max = 4194304;   /* PID_MAX_LIMIT on 64-bit kernels */
  FILE *f = fopen("/proc/sys/kernel/pid_max", "r");
  if (f) {
    long v;
    if (fscanf(f, "%ld", &v) == 1 && v > 0) max = v;
    fclose(f);
  }
  return max;
}

/* -p PID: a number in 1..pid_max naming a live process, or exit 1 with
 * bpftrace's words. */
static int parse_pid(const char *arg) {
  char *end;
  errno = 0;
  long long v = strtoll(arg, &end, 10);
  if (end == arg || !(*arg >= '0' && *arg <= '9')) {
    fprintf(stderr, "ERROR: Failed to parse pid: invalid integer: %s\n", arg);
    exit(1);
  }
  if (*end) {
    fprintf(stderr, "ERROR: Failed to parse pid: invalid trailing bytes: "
            "%s\n", arg);
    exit(1);
  }
  if (errno == ERANGE || v < 1 || v > pid_max()) {
    fprintf(stderr, "ERROR: Pid out of range: %s\n", arg);
    exit(1);
  }
  if (kill((pid_t)v, 0) < 0 && errno == ESRCH) {
    fprintf(stderr, "ERROR: No such process: %s\n", arg);
    exit(1);
  }
  return (int)v;
}

/* Long options without a short form, beyond every char value. */
enum { OPT_DRY_RUN = 256, OPT_NO_WARNINGS, OPT_PROBE_FILTER, OPT_MODE, OPT_BENCH, OPT_TEST, OPT_INFO,
       OPT_USDT_FILE_ACTIVATION, OPT_FLAMEGRAPH, OPT_INCLUDE,
       OPT_TRACEABLE_FUNCTIONS, OPT_METRICS, OPT_METRICS_LABEL, OPT_METRICS_PUSH, OPT_INTERVAL };

/* -d's optional stage: comma-separated names of bpftrace's -d STAGE whose
 * output is the generated code, which loupe shows as assembly. */
static bool is_debug_stage(const char *arg) {
  static const char *const stages[] = {"asm", "codegen", "codegen-opt",
                                       "dis", "all"};
  const char *p = arg;
  while (*p) {
    size_t len = strcspn(p, ",");
    bool known = false;
    for (size_t i = 0; i < sizeof stages / sizeof stages[0]; i++)
      if (strlen(stages[i]) == len && !strncmp(stages[i], p, len)) known = true;
    if (!known) return false;
    p += len;
    if (*p == ',') p++;
  }
  return *arg != '\0';
}

/* Fills o and st from argv. Exits for --help, --version and bad usage. */
static void parse_options(int argc, char **argv, Options *o, Settings *st) {
  static const struct option long_opts[] = {
      {"help", no_argument, NULL, 'h'},
      {"list", no_argument, NULL, 'l'},
      {"version", no_argument, NULL, 'V'},
      {"unsafe", no_argument, NULL, 'U'},
      {"dry-run", no_argument, NULL, OPT_DRY_RUN},
      {"no-warnings", no_argument, NULL, OPT_NO_WARNINGS},
      {"probe-filter", required_argument, NULL, OPT_PROBE_FILTER},
      {"mode", required_argument, NULL, OPT_MODE},
      {"bench", no_argument, NULL, OPT_BENCH},
      {"test", no_argument, NULL, OPT_TEST},
      {"pid", required_argument, NULL, 'p'},
      {"cmd", required_argument, NULL, 'c'},
      {"output", required_argument, NULL, 'o'},
      {"info", no_argument, NULL, OPT_INFO},
      {"usdt-file-activation", no_argument, NULL, OPT_USDT_FILE_ACTIVATION},
      {"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
      {"metrics", required_argument, NULL, OPT_METRICS},
      {"metrics-label", required_argument, NULL, OPT_METRICS_LABEL},
      {"metrics-push", required_argument, NULL, OPT_METRICS_PUSH},
      {"interval", required_argument, NULL, OPT_INTERVAL},
      {"include", required_argument, NULL, OPT_INCLUDE},
      {"traceable-functions", required_argument, NULL,
       OPT_TRACEABLE_FUNCTIONS},
      {NULL, 0, NULL, 0},
  };
  memset(o, 0, sizeof(*o));
  memset(st, 0, sizeof(*st));
  o->buffering = _IOLBF;
  opterr = 0;
  /* Options may follow the script, as with bpftrace; script arguments
   * that start with '-' go after "--". The leading ':' reports a missing
   * argument as ':' rather than '?'. */
  int c;
  while ((c = getopt_long(argc, argv, ":e:o:B:f:c:p:I:lqdvkhV", long_opts, NULL)) !=
         -1) {
    switch (c) {
    case 'e': o->program = optarg; break;
    case 'o': o->out_path = optarg; break;
    case 'c': o->command = optarg; break;
    case 'p': st->target_pid = parse_pid(optarg); break;
    case 'B':
      if (parse_buffering(optarg, &o->buffering) < 0) {
        fprintf(stderr,
                "loupe: -B must be 'line', 'full' or 'none', not '%s'\n",
                optarg);
        exit(1);
      }
      break;
    case 'l': o->list = true; break;
    case 'f':
      /* the metrics formats write every map at the end, to -o FILE
       * (node_exporter's textfile collector) or stdout, the printf
       * output going to stderr */
      o->metrics_format = !strcmp(optarg, "openmetrics") ? METRICS_OM
                          : !strcmp(optarg, "prometheus") ? METRICS_TEXT
                                                          : METRICS_NONE;
      if (o->metrics_format != METRICS_NONE) {
        o->format = OUT_TEXT;
        break;
      }
      if ((o->format = output_format_named(optarg)) < 0) {
        /* bpftrace's words: scripts' wrappers may look for them. */
        fprintf(stderr, "ERROR: Invalid output format \"%s\"\n"
                "Valid formats: ", optarg);
        output_put_format_names(stderr);
        fputs(", 'prometheus', 'openmetrics'\n", stderr);
        exit(1);
      }
      break;
    case 'q': o->quiet = true; break;
    case 'd':
      o->dry_run = o->show_programs = true;
      /* bpftrace's -d STAGE: the stage names that mean generated code
       * (asm, loupe's own; codegen, codegen-opt, dis, all) are taken as
       * the argument; any other word, or a file of that name, is the
       * script, as before */
      if (optind < argc && is_debug_stage(argv[optind]) &&
          access(argv[optind], F_OK) != 0)   /* a script named "all" */
        optind++;
      break;
    case 'v': o->show_programs = true; break;
    case 'k': st->helper_errors = true; break;
    case OPT_DRY_RUN: o->dry_run = true; break;
    case OPT_NO_WARNINGS: o->no_warnings = true; break;
    case OPT_PROBE_FILTER: st->probe_filter = optarg; break;
    case OPT_FLAMEGRAPH: o->flamegraph = optarg; break;
    case OPT_METRICS: o->metrics = optarg; break;
    case OPT_METRICS_PUSH: o->metrics_push = optarg; break;
    case OPT_INTERVAL: {
      char *end;
      long v = strtol(optarg, &end, 10);
      if (*end || end == optarg || v < 1 || v > 86400) {
        fprintf(stderr, "loupe: --interval '%s': seconds from 1 to 86400\n",
                optarg);
        exit(1);
      }
      o->interval_s = (int)v;
      break;
    }
    case OPT_METRICS_LABEL: {
      char why[256];
      if (!metrics_label_ok(optarg, why, sizeof why)) {
        fprintf(stderr, "loupe: %s\n", why);
        exit(1);
      }
      if (o->nmetrics_labels == METRICS_LABELS_MAX) {
        fprintf(stderr, "loupe: at most %d --metrics-label\n",
                METRICS_LABELS_MAX);
        exit(1);
      }
      o->metrics_labels[o->nmetrics_labels++] = optarg;
      break;
    }
    case OPT_TRACEABLE_FUNCTIONS:
      if (access(optarg, R_OK) != 0) {
        fprintf(stderr, "ERROR: --traceable-functions: cannot read %s: %s\n",
                optarg, strerror(errno));
        exit(1);
      }
      st->traceable_functions = optarg;
      break;
    /* bpftrace hands it to clang as #include <FILE>: a system header,
     * which loupe does not need (types come from BTF), as it ignores
     * #include <...> lines; a file of the user's own is read as
     * #include "FILE" would read it */
    case OPT_INCLUDE:   /* found here or in a -I DIR, else ignored */
      st->pre_includes = realloc(st->pre_includes,
                                 sizeof(char *) *
                                 (size_t)(st->npre_includes + 1));
      if (!st->pre_includes) abort();
      st->pre_includes[st->npre_includes++] = optarg;
      break;
    case 'I': {   /* where #include and --include look for headers */
      struct stat dir;
      if (stat(optarg, &dir) != 0 || !S_ISDIR(dir.st_mode)) {
        fprintf(stderr, "ERROR: -I: %s is not a directory\n", optarg);
        exit(1);
      }
      st->include_dirs = realloc(st->include_dirs,
                                 sizeof(char *) *
                                 (size_t)(st->ninclude_dirs + 1));
      if (!st->include_dirs) abort();
      st->include_dirs[st->ninclude_dirs++] = optarg;
      break;
    }
    case OPT_MODE:
      if (strcmp(optarg, "run") && strcmp(optarg, "bench") &&
          strcmp(optarg, "test")) {
        fprintf(stderr, "loupe: --mode must be 'run', 'bench' or 'test', "
                "not '%s'\n", optarg);
        exit(1);
      }
      st->mode = !strcmp(optarg, "bench")  ? MODE_BENCH
                 : !strcmp(optarg, "test") ? MODE_TEST
                                           : MODE_RUN;
      break;
    /* the reference's spellings */
    case OPT_BENCH: st->mode = MODE_BENCH; break;
    case OPT_TEST: st->mode = MODE_TEST; break;
    /* the kernel raises usdt semaphores in every process (uprobe reference
     * counters), which is what this asks bpftrace to do by hand */
    case OPT_USDT_FILE_ACTIVATION: break;
    case 'U': st->unsafe = true; break;
    case 'h': fputs(usage_text, stdout); exit(0);
    case 'V': printf("loupe v%s\n", LOUPE_VERSION); exit(0);
    case OPT_INFO: exit(print_info(stdout, LOUPE_VERSION));
    default: report_bad_option(c, argv); exit(1);
    }
  }
  char **rest = argv + optind;
  int nrest = argc - optind;
  st->has_command = o->command != NULL;
  if (o->command && st->target_pid) {
    fputs("ERROR: -p and -c cannot be used together\n", stderr);
    usage_hint();
    exit(1);
  }
  if (o->list) {
    if (nrest > (o->program ? 0 : 1)) {
      fputs("loupe: -l takes at most one PATTERN\n", stderr);
      usage_hint();
      exit(1);
    }
    o->list_pattern = nrest ? rest[0] : NULL;
    return;
  }
  /* With -e every word left is an argument; otherwise the first is the
   * script file. */
  if (!o->program) {
    if (nrest == 0) {
      fputs(usage_text, stderr);
      exit(1);
    }
    o->script_path = rest[0];
    rest++;
    nrest--;
  }
  st->params = rest;
  st->nparams = nrest;
}

/* ---- the script ----------------------------------------------------- */

/* What this run compiles, and with which settings. It lives until the
 * process exits and nothing in it is freed piece by piece; holding it here
 * (not in main's frame) also keeps it reachable for leak checkers such as
 * ASan's. */
static Settings settings;
static Source source;
static Script *script;
static Compiled compiled;
static Loaded loaded;   /* compiled as load_all loaded it */

/* Reads all of f into a NUL-terminated buffer; NULL (errno set) on error. */
static char *read_all(FILE *f) {
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) return NULL;
  for (;;) {
    if (len + 1 == cap) {
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        return NULL;
      }
      buf = bigger;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - 1 - len, f);
    len += n;
    if (n == 0) break;
  }
  if (ferror(f)) {
    int err = errno;
    free(buf);
    errno = err ? err : EIO;
    return NULL;
  }
  buf[len] = '\0';
  return buf;
}

/* Fills src from -e, stdin ("-") or the script file. Returns 0, or -1 after
 * saying why. The text is never freed: the AST points into it. */
static int read_source(const Options *o, Source *src) {
  if (o->program) {
    src->name = "stdin";
    src->text = o->program;
    return 0;
  }
  bool from_stdin = !strcmp(o->script_path, "-");
  FILE *f = from_stdin ? stdin : fopen(o->script_path, "r");
  if (!f) {
    fprintf(stderr, "ERROR: failed to open file '%s': %s\n",
            o->script_path, strerror(errno));
    return -1;
  }
  errno = 0;
  char *text = read_all(f);
  int err = errno;
  if (!from_stdin) fclose(f);
  if (!text) {
    fprintf(stderr, "loupe: cannot read '%s': %s\n", o->script_path,
            strerror(err));
    return -1;
  }
  src->name = from_stdin ? "stdin" : o->script_path;
  src->text = text;
  return 0;
}

/* Compiles the script with the run's settings. */
static int compile(const Source *src, Settings *st, Compiled *c, Diag *d) {
  if (compile_script(src, st, &script, c, d) < 0) return -1;
  print_set_truncation(c->max_strlen, c->str_trailer);
  return 0;
}

/* ---- -l with a script ----------------------------------------------- */

/* Lists the probes of the script (-e, or the FILE given to -l) as they
 * expand: parse → macros → expand, and every target's name (with -v its
 * arguments). Returns the exit status. */
static int list_script(const Options *o, Settings *st) {
  if (read_source(o, &source) < 0) return 1;
  Diag d;
  diag_init(&d, &source);
  d.no_warnings = o->no_warnings;
  if (compile_front(&source, st, &script, &d) < 0) return 1;
  if (st->probe_filter && expand_filter(script, st->probe_filter) < 0)
    return 1;
  for (Probe *p = script->probes; p; p = p->next)
    for (AttachPoint *ap = p->aps; ap; ap = ap->next)
      for (Target *t = ap->targets; t; t = t->next) {
        /* timers and perf events as -l lists them, without the count:
         * "interval:ms:1000" is an "interval:ms:" probe */
        const char *colon = strchr(t->name, ':');
        colon = colon ? strchr(colon + 1, ':') : NULL;
        bool counted = (t->period || t->freq) && colon;
        printf("%.*s\n", counted ? (int)(colon + 1 - t->name)
                                  : (int)strlen(t->name), t->name);
        if (st->list_verbose) list_fields(t->format, stdout);
      }
  return 0;
}

/* -l: a script's probes (-e, or a PATTERN naming a file), else the probes
 * matching PATTERN. */
static int run_list(Options *o, Settings *st) {
  const char *pattern = o->list_pattern;
  if (!o->program && pattern && access(pattern, F_OK) == 0 &&
      !has_wildcard(pattern)) {
    o->script_path = pattern;
    return list_script(o, st);
  }
  if (o->program) return list_script(o, st);
  size_t len = pattern ? strlen(pattern) : 0;
  if (!o->no_warnings && len > 3 && !strcmp(pattern + len - 3, ".bt") &&
      !strchr(pattern, ':'))
    fprintf(stderr, "WARNING: It appears that '%s' is a filename but the "
            "file does not exist. Treating '%s' as a search pattern.\n",
            pattern, pattern);
  return list_probes(pattern, st, stdout);
}

static void print_programs(const Compiled *c, const Source *src, FILE *out) {
  for (int i = 0; i < c->nprogs; i++) {
    if (i > 0) fputc('\n', out);
    disasm_print(&c->progs[i], c, src, out);
  }
  fflush(out);
}

/* ---- running -------------------------------------------------------- */

/* Set once loading begins. Before that nothing is in the kernel and no
 * probe has run, so a stop signal ends loupe at once: compiling may be
 * stuck on a file a traced process controls, and Ctrl-C must still work.
 * From then on the first one asks the run to stop (END runs, the maps
 * print); a second one that comes before the run takes over (run.c
 * handles its own) ends loupe at once: the kernel frees what it holds. */
static volatile sig_atomic_t stop_is_request;

static void on_stop_signal(int sig) {
  if (stop_is_request && !loupe_stop_requested) {
    loupe_stop_requested = 1;
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* A write to a pipe nobody reads then fails with EPIPE, which run notices,
 * rather than killing loupe before it detached and ended the -c command.
 * A handler, not SIG_IGN, so the commands loupe starts get the default. */
static void on_broken_pipe(int sig) { (void)sig; }

/* SIGINT, SIGTERM and SIGHUP (a closed terminal) stop loupe as above.
 * Installed before compiling, so that one sent early is not lost to a
 * shell that started loupe with SIGINT ignored. */
static void catch_stop_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  sa.sa_handler = on_broken_pipe;
  sigaction(SIGPIPE, &sa, NULL);
}

static FILE *open_output(const Options *o) {
  FILE *out = stdout;
  /* -f prometheus|openmetrics -o FILE: FILE gets the metrics at the end,
   * written whole (write_metrics_at_end); printf output goes to stdout */
  if (o->out_path && o->metrics_format == METRICS_NONE) {
    char why[SAFE_WHY_MAX];
    out = safe_fopen_write(o->out_path, why, sizeof why);
    if (!out) {
      fprintf(stderr, "loupe: cannot open '%s': %s\n", o->out_path, why);
      return NULL;
    }
  }
  setvbuf(out, NULL, o->buffering, 0);
  return out;
}

/* Closes the -o file (flushes stdout); a failure the run did not already
 * report (status 0) is reported here and makes the status 1. */
static int close_output(FILE *out, const Options *o, int status) {
  bool failed = out != stdout ? fclose(out) == EOF : fflush(out) == EOF;
  if (failed && status == 0 && !loupe_output_closed) {
    fprintf(stderr, "loupe: write to %s: %s\n",
            o->out_path ? o->out_path : "stdout", strerror(errno));
    status = 1;
  }
  return status;
}

/* Test harnesses (bpftrace's runtime test engine among them) set this
 * variable and wait for the line of the same name on stdout before they
 * start their workload; what the tracer printed before it they ignore.
 * It comes after the attached_probes record and before BEGIN runs, so
 * BEGIN's output follows it. */
#define NOTIFY_ATTACHED_ENV "__BPFTRACE_NOTIFY_PROBES_ATTACHED"

static void notify_attached(FILE *out) {
  if (!getenv(NOTIFY_ATTACHED_ENV)) return;
  fflush(out);
  fputs(NOTIFY_ATTACHED_ENV "\n", stdout);
  fflush(stdout);
}

/* What --metrics serves: the maps of c as loaded in l. */
typedef struct MetricsSource {
  const Compiled *c;
  const Loaded *l;
  MetricsLabels labels;
  const char *file;   /* -f prometheus|openmetrics -o FILE, or NULL */
  bool openmetrics;
} MetricsSource;

static char *metrics_serve(void *arg, bool openmetrics, size_t *len) {
  const MetricsSource *m = arg;
  return metrics_render(m->c, m->l, &m->labels, openmetrics, len);
}

/* The script label: the script file's name without its directory and
 * ".bt", or "stdin" for -e and -. */
static const char *metrics_script_name(const Options *o) {
  static char name[256];
  const char *path = o->script_path && strcmp(o->script_path, "-")
                         ? o->script_path : "stdin";
  const char *base = strrchr(path, '/');
  snprintf(name, sizeof name, "%s", base ? base + 1 : path);
  size_t n = strlen(name);
  if (n > 3 && !strcmp(name + n - 3, ".bt")) name[n - 3] = 0;
  return name;
}

/* --interval: the metrics file rewritten while the script runs. */
static void metrics_file_every(void *arg) {
  const MetricsSource *m = arg;
  char why[512];
  if (m->file && metrics_write_file(m->file, m->c, m->l, &m->labels,
                                    m->openmetrics, why, sizeof why) < 0)
    fprintf(stderr, "loupe: %s\n", why);
}

/* BEGIN → attach → run → detach, with the programs loaded. BEGIN runs
 * before the other probes are attached, as bpftrace documents, so what it
 * sets up is there when the first event comes. Returns the exit status;
 * nothing stays attached when it returns. */
static int attach_and_run(const Compiled *c, Loaded *l, const Options *o,
                          const Settings *st, FILE *out, HttpServer *http,
                          MetricsSource *metrics, Diag *d) {
  LinkSet links = {0};
  /* With -f json, bpftrace's attached_probes record goes to the output,
   * before BEGIN's, as bpftrace announces its probes before attaching.
   * The count is in "data" for bpftrace 0.17's readers and at the top,
   * where current bpftrace puts it, for today's. */
  if (!o->quiet && o->format == OUT_JSON) {
    int probes = attach_all(c, l, st, NULL, d);
    fprintf(out, "{\"type\": \"attached_probes\", \"count\": %d, "
            "\"data\": {\"probes\": %d}}\n", probes, probes);
  }
  RunOptions run_opts = {.out = out, .out_name = o->out_path,
                         .timeout_ms = 0, .format = o->format,
                         .child_pid = child.pid, .child_go_fd = child.go_fd,
                         .target_pid = st->target_pid, .mode = st->mode,
                         .no_warnings = o->no_warnings, .http = http,
                         .maps_elsewhere = o->metrics_format != METRICS_NONE,
                         .every = metrics_file_every, .every_arg = metrics,
                         .every_ms = o->metrics_format != METRICS_NONE &&
                                             o->out_path
                                         ? o->interval_s * 1000
                                         : 0};
  child.go_fd = -1;   /* the run releases (and closes) it */
  Run *run = run_begin(c, l, &run_opts);
  if (!run) return 1;
  /* Stopped while loading or in BEGIN (exit()): attach nothing more, but
   * still run END and print the maps, as an early Ctrl-C would. The lines
   * that say what is attached come either way, for whoever waits on them. */
  int nattached = special_probe_count(c);
  if (!run_stopping(run)) {
    nattached = attach_all(c, l, st, &links, d);
    if (nattached < 0) {
      run_abandon(run);
      return 1;
    }
  }
  if (!o->quiet)
    fprintf(stderr, "Attached %d probe%s\n", nattached,
            nattached == 1 ? "" : "s");
  notify_attached(out);
  run_wait(run);
  /* END runs after all the other probes are detached (bpftrace's
   * documentation): what they still send cannot crowd out END's output */
  links_close_all(&links);
  return run_finish(run);
}

/* ---- -c COMMAND ----------------------------------------------------- */

/* Whether a program named `name` (a path, or a name on PATH) can run. */
static bool can_execute(const char *name) {
  if (strchr(name, '/')) return access(name, X_OK) == 0;
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  char full[4096];
  while (*path) {
    size_t len = strcspn(path, ":");
    snprintf(full, sizeof(full), "%.*s/%s", (int)len, path, name);
    if (len && access(full, X_OK) == 0) return true;
    path += len;
    if (*path == ':') path++;
  }
  return false;
}

/* COMMAND's words, split at runs of blanks and nothing else, as bpftrace
 * splits it: quotes, backslashes and $ reach the program as they are
 * (-c "echo 'A'" passes 'A'). One allocation: the pointers, then the
 * words. NULL if there is no word. */
static char **command_words(const char *command) {
  size_t len = strlen(command), nptrs = len / 2 + 2;
  char **argv = malloc(nptrs * sizeof *argv + len + 1);
  if (!argv) return NULL;
  char *text = memcpy((char *)(argv + nptrs), command, len + 1);
  size_t n = 0;
  for (char *p = text; *p;) {
    while (*p == ' ' || *p == '\t' || *p == '\n') *p++ = 0;
    if (!*p) break;
    argv[n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\n') p++;
  }
  argv[n] = NULL;
  if (n == 0) {
    free(argv);
    return NULL;
  }
  return argv;
}

static int child_spawn(const char *command, Child *ch) {
  char **argv = command_words(command);
  if (!argv) {
    fprintf(stderr, "loupe: the -c command '%s' is empty\n", command);
    return -1;
  }
  if (!can_execute(argv[0])) {
    fprintf(stderr, "loupe: cannot run '%s': no such program\n", argv[0]);
    free(argv);
    return -1;
  }
  int go[2];
  if (pipe(go) < 0 || fcntl(go[1], F_SETFD, FD_CLOEXEC) < 0 ||
      fcntl(go[0], F_SETFD, FD_CLOEXEC) < 0) {
    perror("loupe: pipe");
    free(argv);
    return -1;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("loupe: fork");
    free(argv);
    return -1;
  }
  if (pid == 0) {
    close(go[1]);
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(126);   /* loupe gave up */
    execvp(argv[0], argv);
    fprintf(stderr, "loupe: cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  free(argv);
  close(go[0]);
  ch->pid = pid;
  ch->go_fd = go[1];
  return 0;
}

/* Called on the way out: a child never released ends without running;
 * one still running when the script stops gets SIGTERM. */
static void child_finish(Child *ch) {
  if (ch->pid <= 0) return;
  if (ch->go_fd >= 0) close(ch->go_fd);
  int status;
  if (waitpid(ch->pid, &status, WNOHANG) == 0) {
    kill(ch->pid, SIGTERM);
    waitpid(ch->pid, &status, 0);
  }
  ch->pid = -1;
  ch->go_fd = -1;
}

/* -f prometheus|openmetrics and --metrics-push: the maps as metrics once
 * the run ended, before they are unloaded. -1 after saying why. */
static int write_metrics_at_end(const Options *o, const MetricsSource *m) {
  int status = 0;
  char why[512];
  if (o->metrics_format != METRICS_NONE) {
    bool om = o->metrics_format == METRICS_OM;
    if (o->out_path) {
      if (metrics_write_file(o->out_path, m->c, m->l, &m->labels, om, why,
                             sizeof why) < 0) {
        fprintf(stderr, "loupe: %s\n", why);
        status = -1;
      }
    } else if (metrics_write(stdout, m->c, m->l, &m->labels, om) < 0) {
      fputs("loupe: reading the maps for the metrics failed\n", stderr);
      status = -1;
    }
  }
  if (o->metrics_push) {
    if (metrics_push(o->metrics_push, m->c, m->l, &m->labels, why,
                     sizeof why) < 0) {
      fprintf(stderr, "loupe: %s\n", why);
      status = -1;
    }
  }
  return status;
}

/* load → attach → run → detach → unload. Returns the exit status. */
static int load_and_run(const Compiled *c, Loaded *l, const Options *o,
                        const Settings *st, Diag *d) {
  FILE *svg = NULL;
  if (o->metrics || o->metrics_push || o->metrics_format != METRICS_NONE) {
    char why[512];
    if (!metrics_names_ok(c, why, sizeof why)) {
      fprintf(stderr, "loupe: %s\n", why);
      return 1;
    }
  }
  if (o->flamegraph && !(svg = flamegraph_open(c, o->flamegraph)))
    return 1;
  FILE *out = open_output(o);
  if (!out) {
    if (svg) fclose(svg);
    return 1;
  }
  /* --metrics listens before anything loads, so that a port in use
   * fails the run with nothing attached */
  MetricsSource metrics = {.c = c, .l = l,
                           .labels = {.script = metrics_script_name(o),
                                      .kv = o->metrics_labels,
                                      .nkv = o->nmetrics_labels,
                                      .max_series = st->metrics_max_series},
                           .file = o->out_path,
                           .openmetrics = o->metrics_format == METRICS_OM};
  HttpServer *http = NULL;
  if (o->metrics) {
    char why[512];
    http = http_serve(o->metrics, metrics_serve, &metrics, why, sizeof why);
    if (!http) {
      fprintf(stderr, "loupe: %s\n", why);
      if (svg) fclose(svg);
      if (svg) unlink(o->flamegraph);
      return close_output(out, o, 1);
    }
    metrics_left_out(c, stderr);
  }
  stop_is_request = 1;
  int status = 1;
  if (load_all(c, l, o->show_programs, d) == 0) {
    status = attach_and_run(c, l, o, st, out, http, &metrics, d);
    if (write_metrics_at_end(o, &metrics) < 0) status = 1;
    if (svg && flamegraph_write(c, l, svg, o->flamegraph) < 0) status = 1;
    svg = NULL;
    unload_all(l);
  }
  http_stop(http);
  if (svg) {   /* nothing ran: no half-written flame graph stays */
    fclose(svg);
    unlink(o->flamegraph);
  }
  return close_output(out, o, status);
}

/* compile → (print) → load and run; the exit status. */
static int run_main(const Options *o, Settings *st, Diag *d) {
  if (compile(&source, st, &compiled, d) < 0) return 1;
  if (o->show_programs) print_programs(&compiled, &source, stdout);
  if (o->dry_run) return 0;
  if (geteuid() != 0) {
    fputs("ERROR: loupe needs root to load BPF programs (run it with sudo)\n",
          stderr);
    return 1;
  }
  return load_and_run(&compiled, &loaded, o, st, d);
}

int main(int argc, char **argv) {
  Options o;
  parse_options(argc, argv, &o, &settings);
  settings.comm_padded = geteuid() == 0 ? kernel_pads_comm : NULL;
  if (o.interval_s && !(o.metrics_format != METRICS_NONE && o.out_path)) {
    fputs("loupe: --interval rewrites the file of -f prometheus|openmetrics "
          "-o FILE: give both\n", stderr);
    return 1;
  }
  settings.metrics = o.metrics || o.metrics_push ||
                     o.metrics_format != METRICS_NONE;
  /* -l -p PID: the process's probes, its uprobes */
  if (o.list && settings.target_pid && !o.list_pattern)
    o.list_pattern = "uprobe:*:*,usdt:*";
  settings.list_verbose = o.list && o.show_programs;   /* -lv */
  if (o.list) return run_list(&o, &settings);

  catch_stop_signals();
  if (read_source(&o, &source) < 0) return 1;
  Diag d;
  diag_init(&d, &source);
  d.no_warnings = o.no_warnings;
  if (o.command && !o.dry_run && geteuid() == 0 &&
      child_spawn(o.command, &child) < 0)
    return 1;
  settings.cpid = child.pid > 0 ? child.pid : 0;
  int status = run_main(&o, &settings, &d);
  child_finish(&child);
  if (loupe_output_closed) {
    signal(SIGPIPE, SIG_DFL);
    raise(SIGPIPE);
  }
  return status;
}
