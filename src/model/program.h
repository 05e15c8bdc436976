/* program: what check, plan and codegen produce and what load, attach,
 * run and print consume — maps (their layouts: model/map.h), printf
 * formats, and one BPF program per attach unit. Nothing changes it once
 * codegen is done: what the runtime opens and counts while the program
 * runs is kept apart (runtime/state.h). */
#ifndef LOUPE_PROGRAM_H
#define LOUPE_PROGRAM_H

#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>

#include "lang/ast.h"
#include "model/map.h"

#define MAX_PRINTF_ARGS 16
#define DEFAULT_STRLEN 64      /* BPFTRACE_STRLEN default */
/* Strings live in the scratch area, which programs address within 64 KiB:
 * a larger max_strlen (or string[N]) is taken, and a probe whose buffers
 * do not fit is refused where it is generated. */
#define MAX_STRLEN_LIMIT (1 << 20)
#define COMM_SIZE 16
/* Buffers larger than this are zeroed (from the zero map) and copied by
 * helper calls, not word by word. */
#define BIG_BUFFER 256

/* The internal map holding the time `elapsed` counts from (u64 ns of
 * CLOCK_MONOTONIC, i.e. bpf_ktime_get_ns), written by main after load. */
#define ELAPSED_MAP_NAME "@@elapsed_base"
/* The internal one-slot array exit() sets to 1 in the kernel; every
 * program but END's returns at once when it is set. */
#define EXITED_MAP_NAME "@@exited"
/* An internal one-slot array that is never written: zeroes to insert new
 * histogram entries from, and to clear big strings with. */
#define ZERO_MAP_NAME "@@zero"
/* An internal one-slot array of LOG2_TABLE_SIZE bytes, byte i holding
 * floor(log2 i), never written by a program: hist() takes the last steps
 * of its log2 from it. */
#define LOG2_MAP_NAME "@@log2"
#define LOG2_TABLE_SIZE 256

/* A scratch variable `$x`; its storage is decided by codegen per probe. */
typedef struct VarSym {
  char *name;
  Type type;
  struct VarSym *next;
  int stack_off;   /* codegen: frame offset (negative), 0 if unassigned */
  int frame;       /* 0: the probe's; k: the body of the k-th for loop over
                      a map, which runs as a callback with its own frame */
  int scope;       /* Node.scope: 0, or the macro expansion it belongs to */
  int block;       /* check: the block it was declared in (a scope id);
                      visible there and in the blocks nested in it */
  Type decl;       /* `let $x: uint8`: the integer type it wraps at, else
                      kind TY_NONE */
  struct Node *let;  /* check: its let statement, or NULL */
  int int_width;   /* check: the width in bytes of every integer stored in
                      it, when all were of its signedness and narrower than
                      64 bits; 8 otherwise, 0 before the first (var_holds) */
  struct VarSym *outer;  /* in a for-over-map body: the variable of the
                            enclosing frame this one stands for (copied in
                            when the body starts, back when it returns) */
  int ctx_off;     /* codegen, with outer: its place in the loop's context */
  bool known;      /* codegen: the variable holds `value` at this point */
  int64_t value;
  bool probe_wide;  /* check: read after the block it was assigned in, as
                       bpftrace 0.17 allows: one variable for the probe,
                       zeroed when the probe starts (codegen) */
  bool broken;      /* check: assigned a value whose check failed; reads of
                       it report nothing more */
} VarSym;

/* Records sent to user space through the ring buffer start with this. */
typedef struct EventHeader {
  uint32_t kind;    /* EventKind */
  uint32_t index;   /* printf id or map id */
} EventHeader;

typedef enum EventKind {
  EV_PRINTF = 1,    /* index: printf id; payload laid out by PrintfDef */
  EV_EXIT,          /* exit() was called */
  EV_PRINT_MAP,     /* print(@m[, top[, div]]): index is the map id; payload
                       { int64 top; int64 div; } (0 when not given) */
  EV_CLEAR_MAP,     /* clear(@m) */
  EV_ZERO_MAP,      /* zero(@m) */
  EV_TIME,          /* time(fmt): index is a printf id whose fmt is the
                       strftime format; no payload */
  EV_SYSTEM,        /* system(fmt, ...): index is a printf id; format like
                       printf, then run the command with /bin/sh */
  EV_CAT,           /* cat(fmt, ...): index is a printf id; format the path
                       like printf, then print the file's contents */
  EV_JOIN,          /* join(argv[, delim]): index is a printf id whose fmt is
                       the delimiter; payload: JOIN_MAX_ARGS slots of
                       JOIN_ARG_SIZE bytes, NUL-padded; an empty slot ends
                       the list */
  EV_PRINT_VALUE,   /* print(value): index is a printf id without a format
                       whose one argument is the value */
  EV_ERRORF,        /* errorf(fmt, ...), warnf(fmt, ...): like printf, */
  EV_WARNF,         /* printed on stderr after PrintfDef.prefix */
  EV_PROCESS_SEEN,  /* ustack met a process for the first time: index is
                       its pid; user space reads its maps while it lives */
  EV_HELPER_ERROR,  /* -k: a helper failed; index: the HelperSite;
                       payload: { int64 retcode; } */
  EV_UNWATCH,       /* unwatch(addr): payload { uint64 addr; } */
} EventKind;

#define JOIN_MAX_ARGS 16
#define JOIN_ARG_SIZE 64

typedef struct FmtArg {
  Type type;        /* TY_INT (8 bytes, as type.is_signed), TY_STR, or TY_BUF
                       (u64 length, then type.size bytes; for %r and %rx) */
  int offset;       /* from the start of the record (after the header) */
} FmtArg;

/* One printf call site: its format and the layout of its record. */
typedef struct PrintfDef {
  char *fmt;        /* escapes decoded */
  int fmt_len;      /* its length when it holds NUL bytes ("a\0b"), else 0 */
  int nargs;
  FmtArg args[MAX_PRINTF_ARGS];
  int size;         /* payload bytes after the EventHeader */
  Span span;
  char *prefix;     /* errorf, warnf: "stdin:1:9-62: ERROR: " */
  char *expansions; /* errorf, warnf in a macro: where it was expanded
                       from (diag_expansions), or NULL */
  bool once;        /* a warning said the first time only (a discarded
                       delete() that found no entry: runqlat-style tools
                       do it for most events); how often it came is
                       counted (Loaded.warn_repeats, runtime/state.h) and
                       said at exit */
} PrintfDef;

/* -k: a place in the script where a helper's failure is reported (a read
 * of memory that faults, a read of a map entry that does not exist). */
typedef struct HelperSite {
  int helper;       /* BPF_FUNC_* */
  Span span;
  char *prefix;     /* "stdin:1:9-20: WARNING: " */
  char *context;    /* the source line and its underline, as diag shows
                       them (each line ends with a newline) */
  const char *file; /* the script's name ("stdin" for -e) */
} HelperSite;

/* One BPF program to load. A probe block whose body does not depend on the
 * attach point (no `args`, no `probe`) gets one program attached to every
 * target of every attach point; otherwise there is one per target. */
typedef struct BpfProg {
  Probe *probe;
  AttachPoint *ap;         /* NULL: all attach points of the probe */
  Target *target;          /* NULL: all targets of ap (or of the probe) */
  uint32_t prog_type;      /* BPF_PROG_TYPE_* */
  uint32_t expected_attach_type;  /* BPF_* attach type it loads for, or 0 */
  uint32_t attach_btf_id;  /* fentry, fexit: the function it is for, in */
  const char *attach_btf_module;  /* this module's BTF (NULL: vmlinux's) */
  uint32_t attach_prog_id;        /* fentry:bpf: the BPF program whose BTF
                                     holds attach_btf_id */
  struct bpf_insn *insns;  /* map loads carry the map id in imm until load */
  Span *insn_span;         /* source span each instruction came from */
  int ninsns;
  int nmain;               /* instructions before the shared subprograms */
  int *globals;            /* where the global subprograms start, which
                              the verifier checks once, not at every call:
                              BTF types them long f(long[, long])
                              (prog_btf.c) */
  int *global_args;        /* how many arguments each takes (1 or 2) */
  int nglobals;
  int *var_starts;         /* codegen's own, for its last passes: where
                              each frame with variables starts (the
                              probe's code, each callback) */
  uint64_t *var_slots;     /* and the stack slots of its scalar variables:
                              bit k is the 8 bytes at r10 - 8 * (k + 1) */
  int nvar_frames;
  int cap;
  char name[16];           /* kernel-visible name, e.g. "tp_sys_enter_ope" */
  int syscall_group;       /* SYSCALL_ENTER or SYSCALL_EXIT: a raw
                              tracepoint program serving that group of ap's
                              targets (probes/syscalls.h); else 0 */
} BpfProg;

/* The name the user knows the program by: its probe as written. */
static inline const char *prog_probe_name(const BpfProg *p) {
  if (p->target) return p->target->name;
  if (p->ap) return p->ap->text;
  if (p->probe && p->probe->aps) return p->probe->aps->text;
  return p->name;
}

typedef struct Compiled {
  MapSym **maps;
  int nmaps;
  PrintfDef *printfs;
  int nprintfs;
  BpfProg *progs;
  int nprogs;
  int ncounts;             /* slots of loupe_counts (MAP_ID_COUNTS):
                              the events the ring refused (slot 0), the
                              updates each full map refused (the map's
                              full_slot) */
  uint32_t scratch_size;   /* bytes per CPU of the scratch area */
  uint32_t big_scratch_size;  /* an array with one slot per CPU, for
                                 programs whose buffers outgrow a per-CPU
                                 slot (MAP_ID_BIG_SCRATCH); 0: none */
  uint32_t ringbuf_size;   /* 0: the default */
  const char *license;     /* NULL: GPL */
  bool no_exit_print;      /* print_maps_on_exit = false */
  int max_cat_bytes;       /* cat() prints at most this; 0: the default */
  bool stacks_counted;     /* some len() asks for a stack's depth: every
                              kstack and ustack then counts its frames
                              too (bpf_get_stack), a second walk of the
                              stack (builtins/stack.c) */
  int max_strlen;          /* a string of max_strlen bytes was cut   */
  const char *str_trailer; /* printed after such a string */
  HelperSite *helper_sites;
  int nhelper_sites;
  struct SkbOutput {       /* skboutput() calls: the pcap file each writes */
    const char *path;
    int offset;            /* bytes of the packet left out at its front */
  } *skb_outputs;
  int nskb_outputs;        /* they send through MAP_ID_SKB_OUTPUT */
  int perf_rb_pages;       /* its pages, all CPUs' together; 0: the
                              default */
} Compiled;

/* Pseudo map ids used in LD_IMM64 map loads for the internal maps. */
#define MAP_ID_RINGBUF  (-1)
#define MAP_ID_SCRATCH  (-2)
#define MAP_ID_BIG_SCRATCH (-3)
#define MAP_ID_COUNTS   (-4)
/* One 8-byte slot, the flags of bpf_ringbuf_output: 0 (the kernel wakes
 * the reader when it has caught up) while user space waits for records,
 * BPF_RB_NO_WAKEUP while it polls for them (runtime/run.c). */
#define MAP_ID_WAKE     (-5)
#define MAP_ID_SKB_OUTPUT (-6)
/* What a program sends with each packet (bpf_skb_output's meta data):
 * the skboutput() call (Compiled.skb_outputs), the time (bpf_ktime_get_ns)
 * and the bytes it asked for (the packet's follow). */
typedef struct SkbMeta {
  uint64_t id;
  uint64_t ns;
  uint64_t len;
} SkbMeta;
#define COUNT_SLOT_LOST 0
/* Not a counter: holds 1, written by user space before programs load,
 * never by a program. An 8-byte value of 1 for map updates (a count's
 * first event on a CPU) is addressed there rather than stored first. */
#define COUNT_SLOT_ONE 1
/* The slots of loupe_counts: those check counted, and never fewer than
 * the two above. */
static inline int count_slots(const Compiled *c) {
  return c->ncounts > COUNT_SLOT_ONE ? c->ncounts : COUNT_SLOT_ONE + 1;
}

/* The scratch area: a per-CPU array slot holds up to SCRATCH_SLOT bytes;
 * beyond, a program takes its CPU's slot of a plain array, addressed from
 * its middle (instruction offsets are 16-bit), up to SCRATCH_MAX bytes. */
#define SCRATCH_SLOT 32768
#define SCRATCH_MAX 65536

#endif
