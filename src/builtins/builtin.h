/* builtin: one record per builtin of the language — the bare words (pid,
 * comm, args, ...) and the functions (printf, str, count, hist, ...). A
 * record holds everything about its builtin: how it is type-checked, the
 * code it generates, the events it sends to user space and how they are
 * handled, and for aggregations how their map values are combined over
 * CPUs and decoded for the output formats (output/), which alone write
 * them. The passes find a record by name once (check stores
 * it in Node.builtin) and call its hooks; they never name a builtin.
 *
 * The records live in builtins/<group>.c, one array per group, and
 * registry.c lists the groups. Adding a builtin means adding a record to
 * its group's array. */
#ifndef LOUPE_BUILTINS_BUILTIN_H
#define LOUPE_BUILTINS_BUILTIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "codegen/gen.h"
#include "lang/checker.h"
#include "output/value.h"
#include "runtime/state.h"

typedef enum BuiltinForm {
  BI_WORD,   /* a bare identifier: pid, comm, args, arg0 */
  BI_CALL,   /* a function call: printf(...), count() */
} BuiltinForm;

struct AggOps;

typedef struct Builtin {
  const char *name;
  BuiltinForm form;
  /* BI_CALL: the number of arguments, checked (with bpftrace's message)
   * before `check` runs. max_args < 0: `check` counts them itself. */
  int min_args, max_args;
  /* BI_CALL: the call has a value (its type starts as "none", so that a
   * wrong argument is not also reported as a use of a value-less call). */
  bool has_value;
  /* Types n (sets n->type) and reports misuse. NULL: loupe does not
   * support this builtin yet, which the user is told. */
  void (*check)(Checker *c, Node *n);
  /* Code, by the kind of use; NULL where that use cannot occur. */
  int (*emit_int)(Gen *g, Node *n);           /* value into a register */
  void (*emit_buf)(Gen *g, Node *n, int dst, int cap);  /* into a buffer */
  /* A string straight into memory at register base + off, of `cap`
   * bytes: a record reserved in the ring buffer, whose reader reads the
   * string up to its NUL, so nothing after the NUL is written (no zero
   * padding). NULL, or buf_at_ok false for n, where the builtin cannot
   * (the record is then built on the stack: emit_record). */
  void (*emit_buf_at)(Gen *g, Node *n, int base, int off, int cap);
  bool (*buf_at_ok)(const Node *n);
  /* Its value's code does more than read: it writes memory or a map, or
   * sends a record of its own (delete, write_user, skboutput, ustack's
   * first sight of a process). An output record reserves its place in
   * the ring buffer only after such an argument is evaluated (see
   * emit_record); a builtin with emit_stmt counts as one too. */
  bool effects;
  /* As a statement; returns true when control never continues after it
   * (exit()). */
  bool (*emit_stmt)(Gen *g, Node *n);
  /* Aggregations (values of per-CPU maps): count(), hist(), ... */
  const struct AggOps *agg;
  /* The EventKind (model/program.h) of the records it sends, and their
   * handler in user space (index: EventHeader.index). */
  uint32_t event;
  void (*on_event)(const EventCtx *e, uint32_t index, const uint8_t *payload,
                   size_t size);
  /* The one-slot array of loupe's own (8 bytes) that its code reads
   * (ELAPSED_MAP_NAME, EXITED_MAP_NAME), which lang/plan.c adds to the
   * program of a script that uses the builtin; NULL if none. */
  const char *own_map;
} Builtin;

/* What the decoding of each value of a map needs to know about all the
 * values shown with it: a tseries, the latest interval holding a value
 * (every entry's plot ends there). */
typedef struct AggScope {
  bool any;
  uint64_t latest;
} AggScope;

/* How an aggregation lives in its per-CPU map (layouts in program.h),
 * how CPUs combine and sort, and what its values decode to. */
typedef struct AggOps {
  AggKind kind;
  /* check: the map's parameters from a call feeding it (hist bits, lhist
   * bounds), which every call must agree on; NULL if it has none. */
  void (*check_map)(Checker *c, MapSym *m, Node *call);
  /* Bytes of one CPU's value. */
  int (*value_size)(const MapSym *m);
  /* In the kernel: @m[k] = f(v) on this CPU's slot. */
  void (*emit_update)(Gen *g, Node *mapnode, Node *call);
  /* Bytes of an entry's value once reduced over CPUs. */
  int (*reduced_size)(const MapSym *m);
  /* Combines `slots` per-CPU values (slot_size bytes apart) into out. */
  void (*reduce)(const MapSym *m, const uint8_t *buf, int slots,
                 int slot_size, uint8_t *out);
  /* The number entries sort by when a map is printed, and whether it is
   * signed. */
  uint64_t (*sort_number)(const MapSym *m, const uint8_t *val);
  bool (*sorts_signed)(const MapSym *m);
  /* What a reduced value decodes to, for the formats (output/value.h):
   * VAL_INT, VAL_STATS, VAL_HIST or VAL_TSERIES. */
  ValueKind value_kind;
  /* Decodes a reduced value, numbers divided by div (print(@m, top,
   * div)) where the aggregation divides them; `scope` is what
   * decode_begin found. */
  void (*decode)(const MapSym *m, const uint8_t *val, int64_t div,
                 const AggScope *scope, ValueArena *a, Value *out);
  /* Before a map's entries decode: their reduced values (a tseries
   * learns the latest interval of them all); NULL if not needed. */
  void (*decode_begin)(const MapSym *m, const uint8_t *const *vals, int n,
                       AggScope *scope);
  bool ignores_top;         /* print(@m, top) prints every entry */
  bool zero_when_empty;     /* keyless and empty, it still prints 0 */
} AggOps;

/* The value of the call's first argument: for builtins whose value is it,
 * marked with another type (kptr, uptr, strerror, signal_name). */
int emit_first_argument(Gen *g, Node *n);

/* A record of EventKind `kind` laid out by the PrintfDef of n->printf_id,
 * holding the values of the argument list that starts at `first`
 * (printf, system, cat: after the format; print(value): the value). */
void emit_record(Gen *g, Node *n, Node *first, uint32_t kind);

/* Shared by the aggregation groups (aggregation.c, histogram.c). */
/* The check of every aggregation call: assigned to a map, min..max
 * arguments, the first an integer. False if it failed. */
bool check_aggregation(Checker *c, Node *n, int min, int max);
int64_t agg_read_s64(const uint8_t *p);
/* r0 = this CPU's value of @m[scratch + key]; a missing entry is first
 * inserted from the zero map (values too big to build on the stack).
 * Adds to `none` the jumps taken when there is no entry after all. */
void agg_lookup_or_insert(Gen *g, MapSym *m, int key, Jumps *none);
/* Adds every 8-byte word of the per-CPU values (count, sum, avg, ...). */
void agg_reduce_sum(const MapSym *m, const uint8_t *buf, int slots,
                    int slot_size, uint8_t *out);

/* The current task's pid (want_pid) or tid into a new register, as loupe's
 * PID namespace numbers it (init_ns: as the initial one does); the builtin
 * pid, and -p's check in every program's prologue. */
int emit_task_id(Gen *g, bool want_pid, bool init_ns);

/* `args` in uprobes: the probed function's parameters, by name, from the
 * binary's debug information (uprobe_args.c). */
void check_uprobe_args(Checker *c, Node *n);
/* args.name (n) in a uprobe: true after reporting a name that is not a
 * readable parameter. */
bool check_uprobe_args_field(Checker *c, Node *n);
void emit_uprobe_args(Gen *g, Node *n, int dst, int cap);

/* The record for name used as `form`, or NULL. */
const Builtin *builtin_find(const char *name, BuiltinForm form);
/* The i-th record of all, in the groups' order; NULL past the last. */
const Builtin *builtin_at(int i);
/* The record that handles records of EventKind `kind`, or NULL. */
const Builtin *builtin_for_event(uint32_t kind);
/* The aggregation of a map's values (NULL unless TY_AGG). */
const AggOps *agg_ops(AggKind kind);

/* The groups (registry.c lists them), each ended by an empty record. */
extern const Builtin builtins_context[];     /* context.c */
extern const Builtin builtins_output[];      /* output.c */
extern const Builtin builtins_maps[];        /* maps.c */
extern const Builtin builtins_strings[];     /* strings.c */
extern const Builtin builtins_aggregation[]; /* aggregation.c */
extern const Builtin builtins_histogram[];   /* histogram.c */
extern const Builtin builtins_kernel[];      /* kernel.c */
extern const Builtin builtins_net[];         /* net.c */
extern const Builtin builtins_system[];      /* system.c */
extern const Builtin builtins_tseries[];     /* tseries.c */
extern const Builtin builtins_debug[];       /* debug.c */
extern const Builtin builtins_stack[];       /* stack.c */

/* len() of a kstack or ustack value (stack.c): check returns false if the
 * argument is not a stack (len(@map) then). */
bool stack_check_len(Checker *c, Node *n);
int stack_emit_len(Gen *g, Node *n);

#endif
