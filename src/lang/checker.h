/* checker: the type checker's working state and the helpers its parts
 * share — the expression and statement checks in lang/, and the builtins'
 * check hooks in builtins/. Not for later stages: they see check.h. */
#ifndef LOUPE_LANG_CHECKER_H
#define LOUPE_LANG_CHECKER_H

#include <stdbool.h>
#include <stddef.h>

#include "model/program.h"

typedef struct Checker {
  Diag *d;
  Compiled *out;
  Script *script;
  Probe *probe;        /* the probe being checked */
  int pass;            /* 1: learn map types quietly; 2: check and report */
  VarSym *learnt_vars; /* the probe's variables as pass 1 left them */
  bool in_assign_rhs;  /* aggregation calls are only valid there */
  const char *assign_map;  /* @m = ...: the map whose value is being
                              computed (a read of it before it has a type
                              is an absent value, zero) */
  int loop_depth;      /* while loops around the statement being checked */
  int frame;           /* 0, or the for-over-map body being checked */
  int frame_parent[64];  /* the frame each for-over-map body is in */
  int nframes;         /* for-over-map bodies seen in this probe */
  int strlen;          /* str() buffer size: BPFTRACE_STRLEN or config */
  int map_keys;        /* max entries of a map: BPFTRACE_MAP_KEYS_MAX ... */
  bool positional_as_string;  /* inside str(): $1 is its text */
  bool args_not_whole; /* the `args` being checked is read by field
                          (args.NAME) or not at all (`args;`) */
  int nblocks;         /* blocks seen in this probe: their scope ids */
  int open[256];       /* the scope ids of the blocks being checked */
  int nopen;
} Checker;

/* ---- types (types.c) ------------------------------------------------ */

Type ty_int(int size, bool is_signed);
Type agg_read_type(int agg);
Type ty_str(int size);
Type ty_void(void);
/* true / false: a 1-byte integer that prints as a word. */
Type ty_bool(void);
/* How an integer of type t is kept in a map, a variable or a tuple: 8
 * bytes, with its signedness, and still a bool, a time, or a pointer to
 * the same type in the same address space (a $p holding a user pointer
 * still reads user memory). */
Type ty_widened(Type t);
/* t as a variable or a map holds it: ty_widened for integers, anything
 * else as it is. */
Type ty_stored(Type t);
/* The bytes p + 1 or p++ moves p by: the size of what it points to; 1
 * for plain integers and pointers to something of unknown size. */
int pointer_step(Type t);
Type ty_agg(AggKind agg);
const char *agg_name(AggKind a);
/* The name bpftrace users know a type by: int64, unsigned int32,
 * string[16], (int64,string[2]). */
const char *type_name(Type t, char *buf, size_t len);
#define TYPE_NAME(t) type_name((t), (char[200]){0}, 200)
/* A C type as bpftrace names it: integers by size ("unsigned int8"),
 * pointers by what they point to ("unsigned int8 *"). */
const char *c_type_name(const struct CType *ct, char *buf, size_t len);
/* The kind of a type as bpftrace's argument messages name it: "integer",
 * "string", "tuple", ... */
const char *kind_name(Type t);
/* kstack and ustack values (Type.named): whether t is one, and whether
 * a and b are the same kind of value (both not stacks, or stacks of the
 * same kind, mode and frame limit). */
bool ty_is_stack(Type t);
bool same_stack(Type a, Type b);
/* Whether two tuple or buffer types have the same layout. */
bool same_layout(Type a, Type b);
/* The tuple type both tuple types a and b widen to (lang/types.c). */
bool tuple_union(Type a, Type b, Type *out);

/* ---- reporting and symbols (check.c) -------------------------------- */

/* Errors are reported in the second pass only; the first is a dry run. */
void error_at(Checker *c, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
MapSym *map_find(Compiled *out, const char *name);
/* The scratch variable that N_VAR var names in the frame being checked,
 * or NULL. */
VarSym *var_find(Checker *c, const Node *var);
/* A new variable, in the innermost block being checked. */
VarSym *var_new(Checker *c, const Node *var);
VarSym *var_note_wide(Checker *c, const Node *var);
/* Variables keep integers in 64 bits, extended by their type; reads of
 * one that only ever held narrower integers of its sign have that width
 * where it shows, in unary operators, as in bpftrace (check_decl.c):
 * var_holds notes a value stored in v (TY_NONE: one of unknown width),
 * int_operand_type is the type of integer expression n so narrowed. */
void var_holds(VarSym *v, Type t);
Type int_operand_type(Checker *c, const Node *n);
/* The type a cast or a declaration names; reports at `at` if none. */
bool type_named(Checker *c, const char *name, Span at, Type *out);
/* The type a let's annotation or typeof() gives: named by name, else
 * expr's (typeof(...), a lone type word, or an expression, checked). */
bool type_given(Checker *c, const char *name, Node *expr, Span at,
                Type *out);
/* let $x [: type] [= value] (check_decl.c) */
void check_let(Checker *c, Node *n);
/* x = v, also for let with a value; check_assigned once v is checked
 * (check_stmt.c, as is check_block) */
void check_assign(Checker *c, Node *n);
void check_assigned(Checker *c, Node *n);
/* x++, --x: a $variable, or a @map, which it defines as an integer if
 * nothing did before (it starts from 0). */
void check_incdec(Checker *c, Node *n);
/* The map n names, created on first sight. */
MapSym *map_get(Checker *c, Node *n);
/* Checks the keys of @m[k...] and unifies them with earlier uses. */
void check_map_keys(Checker *c, Node *n);
/* Records that m holds values of type t, from an assignment to the map
 * at `at` whose operator is at op (where tuple mismatches point). */
void map_set_value(Checker *c, MapSym *m, Type t, Span at, Span op);
/* Adds a PrintfDef (second pass only) and returns its id, or -1. */
int add_printf_def(Checker *c, PrintfDef def);

/* ---- the probe being checked (check.c) ------------------------------ */

/* Checks n (`args.NAME`, or with want_return the `retval` of fexit) as
 * the field n->name of every target's arguments: sets its type and
 * offset, or reports why it cannot be read. */
void check_target_field(Checker *c, Node *n, bool want_return);
/* `args` (n) as one value in a tracepoint, raw tracepoint, fentry or
 * fexit probe: a struct of its fields, the same for every target. */
void check_args_record(Checker *c, Node *n);
/* Longest `probe` name among the probe's targets, for the string size. */
int probe_name_size(Probe *p);
/* Longest function name among the probe's targets, for `func`. */
int func_name_size(Probe *p);

/* ---- arguments of calls (check.c) ----------------------------------- */

int count_args(Node *n);
/* Between min and max arguments (max < 0: no upper bound), else an error. */
bool want_args(Checker *c, Node *n, int min, int max);
/* An integer argument of the call n. */
bool want_int(Checker *c, Node *n, Node *arg);
/* A map argument: @m, or @m[k] if keys_allowed. */
bool want_map(Checker *c, Node *call, Node *arg, bool keys_allowed);
/* A literal integer, possibly negated. */
bool const_int(Node *n, int64_t *v);
/* A literal integer argument in lo..hi, named `what` in messages. */
bool want_const(Checker *c, Node *arg, const char *fn, const char *what,
                int64_t lo, int64_t hi, int64_t *v);
/* Whether --unsafe was given; reports the call if not. */
bool want_unsafe(Checker *c, Node *n);
/* Whether the probe is fentry, fexit or iter, the programs the kernel
 * lets call `helper` (bpf_d_path, ...), or with raw_tp_too a raw
 * tracepoint one, which then loads as a tracing program (tp_btf);
 * reports the call n if not. */
bool want_tracing_probe(Checker *c, Node *n, const char *helper,
                        bool raw_tp_too);

/* ---- enums (enums.c) ------------------------------------------------ */

/* Works out the values of the script's enumerators (Enumerator.value)
 * and reports those that are not constants, defined twice or named like a
 * builtin; returns the number of errors. */
int check_script_enums(Script *s, Diag *d);
/* If the identifier n names an enumerator (the script's before the
 * kernel's), turns n into that constant, typed by its enum. */
bool enum_constant(Checker *c, Node *n);

/* ---- program options (options.c) ------------------------------------ */

/* A --name[=value] word of the command line, for getopt(). */
typedef struct ProgramOption {
  char *name;        /* without the dashes */
  char *value;       /* NULL for a bare --name */
  bool used;         /* some getopt() asked for it */
} ProgramOption;

/* Splits the command line's words (settings->params) into the
 * --name[=value] options and the script's positional parameters
 * (Script.params), numbered without the options. */
void options_split(Script *s);
/* Records a name getopt() asks for, with its description (or NULL), for
 * the hint below. */
void script_add_getopt_name(Script *s, const char *name,
                            const char *description);
/* Reports --name words no getopt() asked for, with a hint naming the
 * options the script takes; the number reported. */
int options_report_unused(const Script *s, Diag *d);

/* ---- the walk (check_stmt.c, check_expr.c) -------------------------- */

void check_expr(Checker *c, Node *n);
/* An operator as written: "==", "++", "+". */
const char *op_text(int op);
void check_block(Checker *c, Node *n);

/* check_field.c: x.name and x->name; t.N of a tuple (also t[N]). */
void check_field(Checker *c, Node *n);
void check_tuple_field(Checker *c, Node *n);
/* The address space a pointer made from, or read through, a value of
 * type t points into. */
AddrSpace space_of(Checker *c, Type t);
/* The loupe type of a value of C type ct found in memory of `as`. */
bool type_of_ctype(const struct CType *ct, AddrSpace as, Type *out);

/* check_call.c: a builtin word or a constant's name; a call. */
void check_builtin(Checker *c, Node *n);
void check_call(Checker *c, Node *n);

/* check_decl.c: map declarations. Kind, size and uniqueness (returns the
 * number of errors), then, once the maps are laid out, their BPF types. */
int check_map_decls(Script *s, Diag *d);
void apply_map_decls(Script *s, Compiled *out, Diag *d);

#endif
