/* ast: the parsed script. Every node carries its source span; the checker
 * fills in types and the symbols nodes refer to. */
#ifndef LOUPE_AST_H
#define LOUPE_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/diag.h"
#include "settings.h"

/* ---- types (filled in by check) ------------------------------------- */

typedef enum TypeKind {
  TY_NONE,   /* not yet known */
  TY_VOID,   /* statements, functions returning nothing */
  TY_INT,    /* integer of `size` bytes (1,2,4,8), signed or not */
  TY_STR,    /* NUL-padded string buffer of `size` bytes */
  TY_AGG,    /* an aggregation value: count(), sum(), ... (map values only) */
  TY_ARGS,   /* the `args` record of a tracepoint */
  TY_TUPLE,  /* (a, b, ...): elements in Type.tuple, packed as in a map key */
  TY_BUF,    /* buf(p, n): an 8-byte length then `size` data bytes */
  TY_RECORD, /* a C struct/union in kernel (or user) memory; the value in
                codegen is its address. Type.ctype describes it. */
  TY_CVAL,   /* a copy of a C struct, union or array (Type.ctype): its
                bytes in a buffer of `size` rounded up to 8, zero-padded;
                what a TY_RECORD becomes when stored */
} TypeKind;

typedef enum AggKind {
  AGG_NONE,
  AGG_COUNT,
  AGG_SUM,
  AGG_MIN,
  AGG_MAX,
  AGG_AVG,
  AGG_HIST,   /* hist(v[, bits]) */
  AGG_LHIST,  /* lhist(v, min, max, step) */
  AGG_STATS,  /* stats(v) */
  AGG_TSERIES,  /* tseries(v, interval, n[, agg]) */
} AggKind;

/* Integers that user space prints as names (Type.named). */
enum { NAMED_NONE, NAMED_ERRNO, NAMED_SIGNAL,
       NAMED_INET,    /* TY_BUF of ntop(): family, then the address */
       NAMED_MAC,     /* TY_BUF of macaddr(): six bytes */
       NAMED_USER,    /* username: a uid */
       NAMED_CGROUP,  /* cgroup_path(): a cgroup id */
       NAMED_KSTACK,   /* kstack: a stack id (builtins/stack.c) */
       NAMED_USTACK,   /* ustack: a stack id and the process's pid */
       NAMED_KSYM,     /* ksym(addr): a kernel address, printed as name */
       NAMED_USYM,     /* usym(addr): a user address and its pid */
       NAMED_SYSCALL };  /* syscall_name(nr): an x86-64 syscall number */

/* How kstack and ustack values print (Type.stack_mode). */
typedef enum StackMode {
  STACK_BPFTRACE, STACK_PERF, STACK_RAW, STACK_BUILD_ID,
  STACK_BPFTRACE_LINES,   /* bpftrace, user frames with @file:line and
                             the functions inlined there (config
                             show_debug_info, on by default) */
  STACK_PERF_INLINED,     /* perf, user frames with the functions inlined
                             there (show_debug_info) */
} StackMode;

/* Where a pointer-valued integer points; decides probe_read_user vs kernel. */
typedef enum AddrSpace { AS_NONE, AS_KERNEL, AS_USER } AddrSpace;

typedef struct Type {
  TypeKind kind;
  int size;          /* bytes: TY_INT 1..8, TY_STR buffer size */
  bool is_signed;    /* TY_INT */
  bool is_pointer;   /* TY_INT holding an address (e.g. a `char *` field) */
  bool is_bool;      /* TY_INT of size 1 that prints as true / false */
  bool whole;        /* TY_STR never cut at max_strlen (path()): no
                        trailer however long it is */
  const char *time_fmt;  /* TY_INT from strftime(): nanoseconds since
                            boot, printed as a time in this format */
  uint8_t named;     /* TY_INT printed as a name in user space: NAMED_ERRNO
                        (strerror), NAMED_SIGNAL (signal_name), stacks */
  uint8_t stack_mode;    /* NAMED_KSTACK, NAMED_USTACK: a StackMode */
  uint16_t stack_limit;  /* NAMED_KSTACK, NAMED_USTACK: frames kept */
  AddrSpace as;      /* for pointers */
  AggKind agg;       /* TY_AGG: which aggregation */
  struct TupleType *tuple;     /* TY_TUPLE */
  const struct CType *ctype;   /* TY_RECORD: the struct; TY_INT pointers:
                                  what they point to (NULL: unknown) */
  const struct EnumDef *enum_def;  /* TY_INT of an enum type: prints as
                                      the name of its enumerator (ONE) */
  const char *name_filter;  /* NAMED_CGROUP: the hierarchies to name it
                               in (a glob), NULL for all */
  const struct Type *pointee;  /* &$x of an integer that prints in a way
                                  of its own (username, an enum, a bool):
                                  $x's type, which *p reads back */
} Type;

/* A tuple's elements, each at an 8-byte aligned offset: integers take 8
 * bytes, strings their buffer rounded up to 8. */
typedef struct TupleType {
  int n;
  char **names;   /* a record (a=1, b="x"): its field names; NULL for a
                     tuple */
  Type *elems;
  int *offs;
  int size;
  int c_size, c_align;  /* as a C struct of its elements as written (what
                           sizeof gives); 0 when not worked out */
} TupleType;

/* The bytes a value takes in a map, a printf record or a scratch buffer:
 * integers 8, strings their size rounded up to 8, buffers 8 more for
 * their length, tuples their packed size (lang/types.c). */
int value_cap(Type t);

/* Where element i of tuple type `from` goes in `to`: the field of the same
 * name in a record, the same position in a tuple; -1 if there is none. */
int tuple_slot(const TupleType *to, const TupleType *from, int i);

/* ---- expressions and statements ------------------------------------- */

typedef enum NodeKind {
  /* expressions */
  N_INT,        /* ival */
  N_STR,        /* sval/slen: literal, escapes already decoded */
  N_BUILTIN,    /* name: pid tid uid gid comm nsecs elapsed cpu probe args ... */
  N_VAR,        /* name: "$x" with the dollar */
  N_MAP,        /* name: "@x" or "@"; keys: list of key expressions or NULL */
  N_CALL,       /* name: function; args: list */
  N_BINOP,      /* op, lhs, rhs */
  N_UNOP,       /* op ('-', '!', '~', '*' for a dereference), lhs */
  N_FIELD,      /* lhs->name or lhs.name (lhs is normally `args`) */
  N_TERNARY,    /* cond ? then : els */
  /* statements */
  N_EXPR_STMT,  /* lhs: a call or other expression evaluated for effect */
  N_ASSIGN,     /* lhs (N_VAR or N_MAP) op rhs; op is '=' or the binary op of
                   a compound assignment ('+' for +=, ...) */
  N_INCDEC,     /* lhs (N_VAR or N_MAP); op is OP_INC or OP_DEC; ival 1 if
                   prefix form */
  N_IF,         /* cond, then (N_BLOCK), els (N_BLOCK, N_IF or NULL) */
  N_BLOCK,      /* body: statement list; as an expression ({ a; b; v }, a
                   macro's expansion) lhs is its value, computed after
                   the statements; NULL in a statement block */
  /* added after the core set */
  N_WHILE,      /* while (cond) then (N_BLOCK) */
  N_UNROLL,     /* unroll (lhs) then (N_BLOCK); lhs is the count expression */
  N_RETURN,     /* return [lhs] */
  N_BREAK,      /* break */
  N_CONTINUE,   /* continue */
  N_INDEX,      /* lhs[rhs] on something other than a map (array, pointer) */
  N_CAST,       /* (name) lhs; name is the type as written, normalised:
                   "uint8", "struct sock *"; (typeof(...)) lhs: rhs is
                   the N_TYPEOF */
  N_TUPLE,      /* (a, b, ...); args: the elements; a record
                   (x=a, y=b, ...) also has fields, their names */
  N_SIZEOF,     /* sizeof(TYPE): name is the type text, normalised as for
                   N_CAST; sizeof(expr): name NULL, lhs the expression */
  N_OFFSETOF,   /* offsetof(TYPE, field[.field...]): name is the type text,
                   sval the member path as written ("a.b") */
  N_FOR,        /* for ($v : @map) or for ($v : a..b): lhs the variable,
                   args the map (rhs NULL) or the range start (rhs its
                   end, exclusive), then the body */
  N_LET,        /* let $x [: type] [= value]: lhs the N_VAR, cond the type
                   (an N_CAST without operand: name the type text, span
                   where it is written) or NULL, rhs the value or NULL;
                   part_span the '=' */
  N_TYPEOF,     /* typeof(TYPE): name the type text; typeof(expr): lhs.
                   A type given to a macro, sizeof() or a let, no value */
} NodeKind;

/* Operators: single characters stand for themselves ('+', '<', '!', ...);
 * two-character ones have names. */
enum {
  OP_EQ = 256,  /* == */
  OP_NE,        /* != */
  OP_LE,        /* <= */
  OP_GE,        /* >= */
  OP_AND,       /* && */
  OP_OR,        /* || */
  OP_SHL,       /* << */
  OP_SHR,       /* >> */
  OP_INC,       /* ++ */
  OP_DEC,       /* -- */
};

struct MapSym;
struct VarSym;
struct Builtin;

typedef struct Node Node;
struct Node {
  NodeKind kind;
  Span span;
  Type type;          /* filled in by check */
  Node *next;         /* next in a list (statements, arguments, keys) */

  int op;
  Node *lhs, *rhs;
  Node *cond, *then, *els;
  Node *args;         /* N_CALL arguments; N_MAP keys; N_TUPLE elements */
  char **fields;      /* N_TUPLE of a record (a=1, b=2): the field names */
  Node *body;         /* N_BLOCK statements */

  char *name;         /* identifier text (see kinds above) */
  int64_t ival;
  char *sval;         /* N_STR bytes (NUL-terminated as well) */
  int slen;           /* N_STR length without the NUL */
  Span part_span;     /* N_ASSIGN, N_BINOP: the operator; N_CAST: the type
                         with its parentheses; where bpftrace points */

  /* check annotations */
  struct MapSym *map;        /* N_MAP */
  struct VarSym *var;        /* N_VAR */
  int field_offset;          /* N_FIELD: byte offset in the context or the
                                struct */
  int bit_offset, bit_size;  /* N_FIELD of a C bitfield (bit_size > 0) */
  bool field_data_loc;       /* N_FIELD: __data_loc string */
  int printf_id;             /* N_CALL printf: index in Compiled.printfs */
  const struct Builtin *builtin;  /* N_BUILTIN, N_CALL: its record
                                     (builtins/builtin.h) */
  int scope;          /* N_VAR: 0 for the probe's own variables, k for those
                         of the k-th macro expansion (lang/macro.c), so a
                         macro's $y is not its caller's $y */
};

/* ---- probes --------------------------------------------------------- */

/* One concrete thing to attach to, produced by expand. */
typedef struct Target {
  struct Target *next;
  char *name;        /* full name as the `probe` builtin prints it,
                        e.g. "tracepoint:syscalls:sys_enter_openat" */
  char *category;    /* tracepoint: "syscalls" */
  char *event;       /* tracepoint: "sys_enter_openat"; software: the
                        event's canonical name ("page-faults"); kprobe,
                        kretprobe: the function ("vfs_read"); uprobe,
                        uretprobe: the symbol ("readline") */
  uint64_t period;   /* interval, profile: nanoseconds between firings;
                        software: events between firings */
  uint64_t freq;     /* interval hz: firings per second (0 if period used) */
  struct TpFormat *format;   /* tracepoint: fields (owned by the provider) */
  char *binary;      /* uprobe, uretprobe: the ELF file's path as opened */
  uint64_t offset;   /* uprobe, uretprobe: the function's file offset;
                        watchpoint: the address watched */
  const struct CType *args_record;   /* `args` as one value, once built */
  void *data;        /* what only its provider knows of it, in the
                        provider's own type (usdt: its locations and
                        arguments; watchpoint: the breakpoint's length and
                        type; kprobe: whether `offset` is an address;
                        fentry, fexit, iter, rawtracepoint: the BTF type
                        its program loads for) */
  uint32_t name_slot;  /* 1 + its entry in the names a program serving
                          many targets reads `probe` and `func` from (its
                          BPF cookie is the entry); 0: none */
} Target;

/* An attach point as written: "tracepoint:syscalls:sys_enter_*". */
typedef struct AttachPoint {
  struct AttachPoint *next;
  Span span;
  char *text;        /* the whole spec as written */
  char *provider;    /* canonical provider name ("tracepoint", "BEGIN", ...) */
  char *parts[4];    /* the ':'-separated parts after the provider */
  int nparts;
  const struct Provider *prov;  /* set by expand */
  Target *targets;   /* set by expand */
  Target **targets_end;  /* where ap_add_target appends */
  int ntargets;
  unsigned raw_syscalls;  /* set by codegen: the groups of its syscall
                             tracepoints that one raw tracepoint program
                             each serves (probes/syscalls.h) */
} AttachPoint;

typedef struct Probe {
  struct Probe *next;
  Span span;
  AttachPoint *aps;
  Node *pred;        /* predicate expression or NULL */
  Node *body;        /* N_BLOCK */
  int index;         /* position in the script, from 0 */
  bool uses_args;    /* set by check: body or predicate reads `args` */
  bool uses_probe;   /* set by check: body or predicate reads what makes
                        one program per target (usdt arguments, ...) */
  bool uses_target_name;  /* set by check: reads `probe` or `func`, which
                             makes one program per target, unless the
                             provider says names_by_cookie */
  bool uses_ctx;     /* set by check: reads the program's context (`args`,
                        `arg0`..`arg5`, `retval`) */
  bool wants_tracing;  /* set by check: calls what the kernel allows only
                          tracing programs (socket_cookie, kfuncs): its raw
                          tracepoints load as BTF ones (tp_btf), one
                          program per tracepoint */
  struct VarSym *vars;  /* set by check: the probe's scratch variables */
  struct WideVar {      /* check: variables read after the block they were
                           assigned in (VarSym.probe_wide), with where */
    const char *name;
    int scope;
    Span first_read;
  } *wide;
  int nwide;
} Probe;

/* A member of a struct the script defines: "char name[16];". */
typedef struct StructField {
  struct StructField *next;
  Span span;         /* the member's name */
  Span type_span;    /* its type as written */
  char *type;        /* the type text normalised as for N_CAST:
                        "struct Bar *", "unsigned long", "uint64" */
  char *name;
  int array_len;     /* 0 unless an array: "char b[10]" gives 10 */
  int dims[4];       /* every dimension: "int y[2][3]" gives 2, 3 */
  int ndims;
  struct StructDef *inline_def;  /* "struct { int x; } bar": its members
                                    (type is then "struct") */
  int bits;          /* a bitfield "int a:4": its width; else 0 */
} StructField;

/* struct Foo { ... } or union Foo { ... } at the top level of a script. */
typedef struct StructDef {
  struct StructDef *next;
  Span span;         /* "struct Foo" */
  bool is_union;
  bool packed;       /* __attribute__((packed)): no padding */
  char *name;        /* "Foo", without the keyword */
  StructField *fields;
} StructDef;

/* An enumerator: "ONE = 1", or "TWO", one more than the one before. */
typedef struct Enumerator {
  struct Enumerator *next;
  Span span;         /* its name */
  char *name;
  Node *expr;        /* the value as written, or NULL */
  int64_t value;     /* set by check (lang/enums.c) */
} Enumerator;

/* An enum: one a script defines at top level (enum Foo { ... } or the
 * anonymous enum { ... }), or a kernel one from BTF (lang/ctype.c). */
typedef struct EnumDef {
  struct EnumDef *next;
  Span span;         /* "enum Foo", or "enum" when anonymous */
  char *name;        /* "Foo" without the keyword; NULL when anonymous */
  Enumerator *items; /* in order */
} EnumDef;

/* The name of e's first enumerator of value v, or NULL if none has it. */
const char *enum_value_name(const EnumDef *e, int64_t v);

/* One `KEY = value` of the script's `config = { ... }` block. */
typedef struct ConfigItem {
  struct ConfigItem *next;
  Span span;
  char *key;
  Node *value;       /* N_INT, N_STR or N_BUILTIN (a bare word) */
} ConfigItem;

/* macro NAME(params) { statements; [value] } at the top level. */
typedef struct MacroDef {
  struct MacroDef *next;
  Span span;         /* the name */
  char *name;
  Node *params;      /* list: N_VAR "$x" (a variable of the caller's, by
                        reference), N_MAP "@m" (a map) or N_BUILTIN "x" (an
                        expression, copied in at each use) */
  int nparams;
  Node *body;        /* N_BLOCK; lhs: its value, NULL if it has none */
} MacroDef;

/* let @name = KIND(N); at the top level: the map's BPF type and size. */
typedef struct MapDecl {
  struct MapDecl *next;
  Span span;         /* the whole declaration */
  Span name_span;    /* @name */
  Span kind_span;    /* KIND */
  char *name;        /* "@name" */
  char *kind;        /* "hash", "lruhash", "percpuhash", "percpulruhash" */
  uint64_t max_entries;
  bool used;         /* set by check when the map is used */
} MapDecl;

typedef struct Script {
  const Source *src;
  Probe *probes;
  int nprobes;
  Probe *dropped;      /* probes missing_probes removed (no attach point
                          matched): checked in the quiet first pass only,
                          so that maps only they use keep their types */
  ConfigItem *config;  /* NULL without a config block */
  Settings *settings;  /* the command line's, then the config block's
                          (lang/config.c): what the user says about the run */
  char **params;       /* positional parameters $1..: settings->params
                          without the options, once split (options_split) */
  int nparams;
  struct ProgramOption *options;  /* --name[=value] words after "--", for
                                     getopt(); split from params by check */
  int noptions;
  const char **getopt_names;      /* the names getopt() asks for, once each */
  char **getopt_help;             /* for each: "--name: description", as
                                     the hint for --help shows it */
  int ngetopt_names;
  StructDef *structs;  /* struct/union definitions, in script order */
  EnumDef *enums;      /* enum definitions, in script order */
  MapDecl *map_decls; /* let @m = hash(N); declarations, in script order */
  MacroDef *macros;    /* macro definitions, in script order; expanded
                          away by lang/macro.c before check */
  struct SysHeaders *sysheaders;  /* the constants of the #include <headers>
                                     (lang/sysheader.h); NULL if none */
} Script;

/* Allocation helpers used by parser and later stages; memory is never
 * freed individually (the process is short-lived and the AST small). */
Node *node_new(NodeKind kind, Span span);
/* Whether n is a positional parameter ($1, $#), before or after the
 * checker made it its value (which keeps the name). */
bool node_is_positional(const Node *n);

/* ---- walking the tree ------------------------------------------------ */

/* A node's children are the lists in its child slots, in this order: lhs,
 * rhs, cond, then, els, args, body (lhs to els hold one node, args and
 * body any number, linked by `next`). Which slots a kind uses is said at
 * NodeKind; a pass that visits every child goes through these, whatever
 * the kind, rather than listing them itself. */
#define AST_SLOTS 7

/* The address of n's slot i (0 <= i < AST_SLOTS), to read or replace the
 * list it holds. */
Node **ast_slot(Node *n, int i);

/* What a visitor tells the walk after seeing a node: go on into its
 * children, skip them (and go on after it), or stop the whole walk. */
typedef enum AstStep { AST_ENTER, AST_SKIP, AST_STOP } AstStep;
typedef AstStep (*AstVisit)(Node *n, void *ctx);

/* Visits every node of the list n (n, then the nodes after it), each
 * before its children, depth first in slot order. True if a visitor
 * stopped the walk. */
bool ast_walk(Node *n, AstVisit visit, void *ctx);

/* The same for the children of n, not n itself. */
bool ast_walk_children(Node *n, AstVisit visit, void *ctx);

#endif
