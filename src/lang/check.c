/* check: gives every expression a type, creates the maps and printf record
 * layouts, and reports every user mistake before anything touches the
 * kernel.
 *
 * The script is walked twice. Maps are global and may be read in one probe
 * before the probe that assigns them, so the first pass only learns map
 * value types (quietly); the second pass checks everything and reports. */
#include "lang/check.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lang/ctype.h"
#include "sym/kallsyms.h"
#include "runtime/print.h"
#include "probes/provider.h"

typedef struct Checker {
  Diag *d;
  Compiled *out;
  Script *script;
  Probe *probe;        /* the probe being checked */
  int pass;            /* 1: learn map types quietly; 2: check and report */
  bool in_assign_rhs;  /* aggregation calls are only valid there */
  int loop_depth;      /* while loops around the statement being checked */
  int frame;           /* 0, or the for-over-map body being checked */
  int nframes;         /* for-over-map bodies seen in this probe */
  int strlen;          /* str() buffer size: BPFTRACE_STRLEN or config */
  int map_keys;        /* max entries of a map: BPFTRACE_MAP_KEYS_MAX ... */
  bool positional_as_string;  /* inside str(): $1 is its text */
} Checker;

static void check_expr(Checker *c, Node *n);
static void check_block(Checker *c, Node *n);
static bool want_args(Checker *c, Node *n, int min, int max);
static bool same_layout(Type a, Type b);
static int value_cap(Type t);

/* ---- types ---------------------------------------------------------- */

static Type ty_int(int size, bool is_signed) {
  Type t = {.kind = TY_INT, .size = size, .is_signed = is_signed};
  return t;
}

static Type ty_str(int size) {
  Type t = {.kind = TY_STR, .size = size};
  return t;
}

static Type ty_void(void) {
  Type t = {.kind = TY_VOID};
  return t;
}

static Type ty_agg(AggKind agg) {
  Type t = {.kind = TY_AGG, .size = 8, .is_signed = agg != AGG_COUNT,
            .agg = agg};
  return t;
}

static const char *agg_name(AggKind a) {
  switch (a) {
  case AGG_COUNT: return "count";
  case AGG_SUM: return "sum";
  case AGG_MIN: return "min";
  case AGG_MAX: return "max";
  case AGG_AVG: return "avg";
  case AGG_HIST: return "hist";
  case AGG_LHIST: return "lhist";
  case AGG_STATS: return "stats";
  default: return "none";
  }
}

/* Appends '*' to a type name: "int8 *", "char **". */
static void add_star(char *buf, size_t len) {
  size_t n = strlen(buf);
  if (n == 0 || n + 3 > len) return;
  if (buf[n - 1] != '*') buf[n++] = ' ';
  buf[n++] = '*';
  buf[n] = 0;
}

/* A C type as bpftrace names it: integers by size ("unsigned int8"),
 * pointers by what they point to ("unsigned int8 *"). */
static const char *c_type_name(const CType *ct, char *buf, size_t len) {
  if (ct->kind == C_INT && !ct->is_bool) {
    snprintf(buf, len, "%sint%d", ct->is_signed ? "" : "unsigned ",
             ct->size * 8);
  } else if (ct->kind == C_PTR && ct->target) {
    c_type_name(ct->target, buf, len);
    add_star(buf, len);
  } else {
    ctype_name(ct, buf, len);
  }
  return buf;
}

/* The name bpftrace users know a type by: int64, unsigned int32,
 * string[16], (int64,string[2]). */
static const char *type_name(Type t, char *buf, size_t len) {
  switch (t.kind) {
  case TY_INT:
    if (t.is_pointer && t.ctype) {
      c_type_name(t.ctype, buf, len);
      add_star(buf, len);
      break;
    }
    snprintf(buf, len, "%sint%d", t.is_signed ? "" : "unsigned ",
             t.size * 8);
    break;
  case TY_TUPLE: {
    size_t used = snprintf(buf, len, "(");
    for (int i = 0; i < t.tuple->n && used < len; i++) {
      char elem[120];
      used += snprintf(buf + used, len - used, "%s%s", i ? "," : "",
                       type_name(t.tuple->elems[i], elem, sizeof(elem)));
    }
    if (used < len) snprintf(buf + used, len - used, ")");
    break;
  }
  case TY_BUF: snprintf(buf, len, "buffer[%d]", t.size); break;
  case TY_RECORD:
    ctype_name(t.ctype, buf, len);
    break;
  case TY_STR: snprintf(buf, len, "string[%d]", t.size); break;
  case TY_AGG: snprintf(buf, len, "%s_t", agg_name(t.agg)); break;
  case TY_ARGS: snprintf(buf, len, "args"); break;
  case TY_VOID: snprintf(buf, len, "void"); break;
  default: snprintf(buf, len, "none"); break;
  }
  return buf;
}

#define TYPE_NAME(t) type_name((t), (char[200]){0}, 200)

/* The kind of a type as bpftrace's argument messages name it: "integer",
 * "string", "tuple", ... */
static const char *kind_name(Type t) {
  switch (t.kind) {
  case TY_INT: return t.is_pointer ? "pointer" : "integer";
  case TY_STR: return "string";
  case TY_AGG: return agg_name(t.agg);
  case TY_ARGS: return "record";
  case TY_TUPLE: return "tuple";
  case TY_BUF: return "buffer";
  case TY_RECORD:
    return t.ctype && t.ctype->kind == C_ARRAY ? "array" : "record";
  case TY_VOID: return "void";
  default: return "none";
  }
}

/* ---- reporting ------------------------------------------------------ */

/* Errors are reported in the second pass only; the first is a dry run. */
static void error_at(Checker *c, Span at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void error_at(Checker *c, Span at, const char *fmt, ...) {
  if (c->pass != 2) return;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(c->d, at, fmt, ap);
  va_end(ap);
}

/* ---- symbols -------------------------------------------------------- */

static MapSym *map_find(Compiled *out, const char *name) {
  for (int i = 0; i < out->nmaps; i++)
    if (strcmp(out->maps[i]->name, name) == 0) return out->maps[i];
  return NULL;
}

static MapSym *map_get(Checker *c, Node *n) {
  MapSym *m = map_find(c->out, n->name);
  if (m) return m;
  m = calloc(1, sizeof(*m));
  m->name = strdup(n->name);
  m->id = c->out->nmaps;
  m->first_use = n->span;
  m->nkeys = -1; /* not known until first used */
  m->fd = -1;
  m->max_entries = (uint32_t)c->map_keys;
  c->out->maps = realloc(c->out->maps, sizeof(MapSym *) * (c->out->nmaps + 1));
  c->out->maps[c->out->nmaps++] = m;
  return m;
}

/* Variables are seen within their frame: a for loop over a map runs its
 * body as a separate function, which sees only its own variables. */
static VarSym *var_find(Checker *c, const char *name) {
  for (VarSym *v = c->probe->vars; v; v = v->next)
    if (strcmp(v->name, name) == 0 && v->frame == c->frame) return v;
  return NULL;
}

static VarSym *var_new(Checker *c, const char *name) {
  VarSym *v = calloc(1, sizeof(*v));
  v->name = strdup(name);
  v->frame = c->frame;
  v->next = c->probe->vars;
  c->probe->vars = v;
  return v;
}

/* ---- probe context -------------------------------------------------- */

static bool probe_is_tracepoint(Probe *p) {
  for (AttachPoint *ap = p->aps; ap; ap = ap->next)
    if (strcmp(ap->provider, "tracepoint") != 0) return false;
  return true;
}

/* Longest `probe` name among the probe's targets, for the string size. */
static int probe_name_size(Probe *p) {
  int size = 1;
  for (AttachPoint *ap = p->aps; ap; ap = ap->next) {
    int len = (int)strlen(ap->text) + 1;
    if (len > size) size = len;
    for (Target *t = ap->targets; t; t = t->next) {
      len = (int)strlen(t->name) + 1;
      if (len > size) size = len;
    }
  }
  return size;
}

static Type field_type(const TpField *f, const char *category, int strlen) {
  if (f->is_string)
    return ty_str(f->data_loc ? strlen : f->size);
  if (f->is_pointer) {
    Type t = ty_int(8, false);
    t.is_pointer = true;
    /* Syscall arguments are user addresses; other tracepoints record
     * kernel ones. */
    t.as = strcmp(category, "syscalls") == 0 ? AS_USER : AS_KERNEL;
    /* what it points to, when the type reads as one loupe knows */
    char err[160];
    const CType *ct = ctype_parse(f->type_text, err, sizeof(err));
    if (ct && ct->kind == C_PTR) t.ctype = ct->target;
    return t;
  }
  return ty_int(f->size, f->is_signed);
}

/* The loupe type of a value of C type ct found in memory of `as`. */
static bool type_of_ctype(const CType *ct, AddrSpace as, Type *out) {
  Type t = {0};
  switch (ct->kind) {
  case C_INT:
  case C_ENUM:
    if (ct->size != 1 && ct->size != 2 && ct->size != 4 && ct->size != 8)
      return false;
    t = ty_int(ct->size, ct->is_signed);
    break;
  case C_PTR:
    t = ty_int(8, false);
    t.is_pointer = true;
    t.ctype = ct->target;
    t.as = as;
    break;
  case C_STRUCT:
  case C_UNION:
    t.kind = TY_RECORD;
    t.ctype = ct;
    t.size = ct->size;
    t.as = as;
    break;
  case C_ARRAY:
    if (ct->target && ct->target->kind == C_INT && ct->target->size == 1) {
      t = ty_str(ct->nelems > 0 ? ct->nelems : 1);   /* char name[N] */
      t.as = as;
    } else {
      t.kind = TY_RECORD;     /* indexable with [] */
      t.ctype = ct;
      t.size = ct->size;
      t.as = as;
    }
    break;
  default:
    return false;
  }
  *out = t;
  return true;
}

/* p->name and r.name on kernel (or script) structs. */
static void check_struct_field(Checker *c, Node *n) {
  Type lt = n->lhs->type;
  const CType *st = lt.ctype;
  if (!st || (st->kind != C_STRUCT && st->kind != C_UNION)) {
    /* bpftrace names what a pointer points to: p->x reads through it */
    char name[120];
    error_at(c, n->span, "Can not access field '%s' on expression of type "
             "'%s'", n->name, lt.kind == TY_INT && st
                                  ? c_type_name(st, name, sizeof(name))
                                  : TYPE_NAME(lt));
    return;
  }
  CField f;
  if (!ctype_field(st, n->name, &f)) {
    char name[120];
    error_at(c, n->span, "Struct/union of type '%s' does not contain a field "
             "named '%s'", ctype_name(st, name, sizeof(name)), n->name);
    return;
  }
  Type t;
  if (!type_of_ctype(f.type, lt.as ? lt.as : AS_KERNEL, &t)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read field '%s' of type '%s' yet",
             n->name, ctype_name(f.type, name, sizeof(name)));
    return;
  }
  n->field_offset = f.offset;
  n->bit_offset = f.bit_offset;
  n->bit_size = f.bit_size;
  n->type = t;
}

/* args->name: the field must exist, with one type, in every target. */
static void check_tuple_field(Checker *c, Node *n) {
  TupleType *t = n->lhs->type.tuple;
  char *end;
  long i = strtol(n->name, &end, 10);
  if (*end || i < 0) {
    error_at(c, n->span, "Tuples must be indexed with a constant and "
             "non-negative integer");
    return;
  }
  if (i >= t->n) {
    error_at(c, n->span, "Invalid tuple index: %s. Found %d elements in "
             "tuple.", n->name, t->n);
    return;
  }
  n->ival = i;
  n->type = t->elems[i];
}

static void check_field(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  if (n->lhs->type.kind == TY_TUPLE) {
    check_tuple_field(c, n);
    return;
  }
  if (n->lhs->type.kind == TY_RECORD ||
      (n->lhs->type.kind == TY_INT && n->lhs->type.is_pointer &&
       n->lhs->type.ctype)) {
    check_struct_field(c, n);
    return;
  }
  if (n->lhs->type.kind != TY_ARGS) {
    if (n->lhs->type.kind != TY_NONE)
      error_at(c, n->span, "Can not access field '%s' on expression of type "
               "'%s'", n->name, TYPE_NAME(n->lhs->type));
    return;
  }
  bool first = true;
  for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next) {
    for (Target *t = ap->targets; t; t = t->next) {
      const TpField *f = t->format ? tp_field(t->format, n->name) : NULL;
      if (!f) {
        error_at(c, n->span, "tracepoint %s:%s has no field named '%s'",
                 t->category, t->event, n->name);
        return;
      }
      if (f->is_array && !f->is_string) {
        error_at(c, n->span,
                 "field '%s' of tracepoint %s:%s is an array (%s); loupe "
                 "cannot read array fields yet",
                 n->name, t->category, t->event, f->type_text);
        return;
      }
      Type ft = field_type(f, t->category, c->strlen);
      if (first) {
        n->type = ft;
        n->field_offset = f->offset;
        n->field_data_loc = f->data_loc;
        first = false;
      } else if (ft.kind != n->type.kind) {
        error_at(c, n->span,
                 "field '%s' has different types in the probe's tracepoints",
                 n->name);
        return;
      } else if (ft.kind == TY_STR && ft.size > n->type.size) {
        n->type.size = ft.size;
      }
    }
  }
}

/* ---- builtins ------------------------------------------------------- */

/* Whether provider is uprobe or uretprobe: probes on user code. */
static bool is_uprobe_provider(const char *provider) {
  return !strcmp(provider, "uprobe") || !strcmp(provider, "uretprobe");
}

/* The first provider of the probe that is not kprobe or uprobe (nor their
 * return probes, if allowed), or NULL if there is none. */
static const char *probe_not_kprobe(Probe *p, bool kretprobe_too) {
  for (AttachPoint *ap = p->aps; ap; ap = ap->next)
    if (strcmp(ap->provider, "kprobe") && strcmp(ap->provider, "uprobe") &&
        !(kretprobe_too && (!strcmp(ap->provider, "kretprobe") ||
                            !strcmp(ap->provider, "uretprobe"))))
      return ap->provider;
  return NULL;
}

/* Whether every attach point of the probe is in user code, where argN
 * and retval hold user addresses when they hold addresses at all. */
static bool probe_is_uprobe(Probe *p) {
  for (AttachPoint *ap = p->aps; ap; ap = ap->next)
    if (!is_uprobe_provider(ap->provider)) return false;
  return true;
}

/* Longest function name among the probe's targets, for `func`. */
static int func_name_size(Probe *p) {
  int size = 1;
  for (AttachPoint *ap = p->aps; ap; ap = ap->next)
    for (Target *t = ap->targets; t; t = t->next)
      if (t->event && (int)strlen(t->event) + 1 > size)
        size = (int)strlen(t->event) + 1;
  return size;
}

/* arg0 .. arg5: the arguments passed in registers. */
static bool is_reg_arg(const char *s) {
  return s[0] == 'a' && s[1] == 'r' && s[2] == 'g' && s[3] >= '0' &&
         s[3] <= '5' && !s[4];
}

/* argN and retval read the probed function's registers from the context. */
static void check_reg_builtin(Checker *c, Node *n) {
  const char *s = n->name;
  bool is_retval = !strcmp(s, "retval");
  if (!is_retval && probe_not_kprobe(c->probe, false)) {
    error_at(c, n->span, "The %s builtin can only be used with 'kprobes', "
             "'uprobes' and 'usdt' probes", s);
    return;
  }
  if (is_retval) {
    for (AttachPoint *ap = c->probe->aps; ap; ap = ap->next)
      if (strcmp(ap->provider, "kretprobe") &&
          strcmp(ap->provider, "uretprobe")) {
        error_at(c, n->span, "The retval builtin can only be used with "
                 "'kretprobe' and 'uretprobe' and 'kfunc' probes (try to "
                 "use args->ret instead)");
        return;
      }
  }
  if (c->frame != 0) {
    error_at(c, n->span, "%s can not be used inside a for loop over a map "
             "(its body runs as a separate function); copy it into a "
             "variable first", s);
    return;
  }
  c->probe->uses_ctx = true;
  n->type = ty_int(8, false);
  /* Not a pointer type (it prints as a number), but str() of it reads
   * user memory in uprobes. */
  if (probe_is_uprobe(c->probe)) n->type.as = AS_USER;
}

static void check_builtin(Checker *c, Node *n) {
  const char *s = n->name;
  if (!strcmp(s, "pid") || !strcmp(s, "tid") || !strcmp(s, "uid") ||
      !strcmp(s, "gid") || !strcmp(s, "cpu")) {
    n->type = ty_int(4, false);
  } else if (!strcmp(s, "nsecs") || !strcmp(s, "elapsed") ||
             !strcmp(s, "cgroup")) {
    n->type = ty_int(8, false);
  } else if (!strcmp(s, "rand")) {
    n->type = ty_int(4, false);
  } else if (!strcmp(s, "cpid")) {
    if (!c->script->has_command) {
      error_at(c, n->span, "cpid cannot be used without child command");
      return;
    }
    n->kind = N_INT;   /* the child exists before the script is compiled */
    n->ival = c->script->cpid;
    n->type = ty_int(4, false);
  } else if (!strcmp(s, "curtask")) {
    char err[200];
    const CType *task = ctype_parse("struct task_struct", err, sizeof(err));
    n->type = ty_int(8, false);
    n->type.is_pointer = true;
    n->type.as = AS_KERNEL;
    n->type.ctype = task;   /* NULL without BTF: a plain address */
  } else if (!strcmp(s, "comm")) {
    n->type = ty_str(COMM_SIZE);
  } else if (!strcmp(s, "probe")) {
    c->probe->uses_probe = true;
    n->type = ty_str(probe_name_size(c->probe));
  } else if (!strcmp(s, "args")) {
    if (c->frame != 0) {
      error_at(c, n->span, "args can not be used inside a for loop over a "
               "map (its body runs as a separate function); copy what you "
               "need into a map first");
      return;
    }
    if (!probe_is_tracepoint(c->probe)) {
      error_at(c, n->span,
               "The args builtin can only be used with tracepoint probes");
      return;
    }
    c->probe->uses_args = c->probe->uses_ctx = true;
    n->type.kind = TY_ARGS;
  } else if (is_reg_arg(s) || !strcmp(s, "retval")) {
    check_reg_builtin(c, n);
  } else if (!strcmp(s, "func")) {
    const char *other = probe_not_kprobe(c->probe, true);
    if (other) {
      error_at(c, n->span, "The func builtin can not be used with '%s' "
               "probes", other);
      return;
    }
    /* Like `probe`, the name is a constant of each target's program. */
    c->probe->uses_probe = true;
    n->type = ty_str(func_name_size(c->probe));
  } else if (!strcmp(s, "kstack") || !strcmp(s, "ustack") ||
             !strncmp(s, "arg", 3) ||
             !strcmp(s, "username") || !strcmp(s, "sarg0")) {
    error_at(c, n->span, "loupe does not support the builtin '%s' yet", s);
  } else {
    /* an enumerator of the kernel's (from BTF) is a constant */
    int64_t v;
    if (ctype_enum_value(s, &v)) {
      n->kind = N_INT;
      n->ival = v;
      n->type = ty_int(8, true);
      return;
    }
    error_at(c, n->span, "Unknown identifier: '%s'", s);
  }
}

/* kaddr("sym"): the address of a kernel symbol, from /proc/kallsyms. */
static void check_kaddr(Checker *c, Node *n) {
  Node *a = n->args;
  n->type = ty_int(8, false);
  if (!want_args(c, n, 1, 1)) return;
  if (a->kind != N_STR) {
    error_at(c, n->span, "kaddr() expects a string literal");
    return;
  }
  uint64_t addr = 0;
  bool found = kallsyms_address(a->sval, &addr);
  if (!found) {
    error_at(c, n->span, "Failed to resolve kernel symbol: %s", a->sval);
    return;
  }
  if (addr == 0) {
    error_at(c, n->span, "kaddr(\"%s\"): /proc/kallsyms shows address 0; "
             "kernel addresses are hidden (kptr_restrict) or loupe is not "
             "root", a->sval);
    return;
  }
  n->kind = N_INT;
  n->ival = (int64_t)addr;
  n->type.is_pointer = true;
  n->type.as = AS_KERNEL;
}

/* ---- maps ----------------------------------------------------------- */

static const char *key_list_name(Type *types, int n, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = 0;
  used += snprintf(buf + used, len - used, "[");
  for (int i = 0; i < n && used < len; i++)
    used += snprintf(buf + used, len - used, "%s%s", i ? ", " : "",
                     TYPE_NAME(types[i]));
  if (used < len) snprintf(buf + used, len - used, "]");
  return buf;
}

/* Checks the keys of @m[k...] and unifies them with earlier uses. */
static void check_map_keys(Checker *c, Node *n) {
  MapSym *m = map_get(c, n);
  n->map = m;
  Type keys[MAX_MAP_KEYS];
  int nkeys = 0;
  for (Node *k = n->args; k; k = k->next) {
    check_expr(c, k);
    if (nkeys == MAX_MAP_KEYS) {
      error_at(c, k->span, "a map key can have at most %d parts",
               MAX_MAP_KEYS);
      return;
    }
    if (k->type.kind != TY_INT && k->type.kind != TY_STR &&
        k->type.kind != TY_BUF && k->type.kind != TY_TUPLE) {
      if (k->type.kind != TY_NONE)
        error_at(c, k->span, "%s can not be used as a map key",
                 TYPE_NAME(k->type));
      return;
    }
    keys[nkeys++] = k->type;
  }
  if (m->nkeys < 0) {
    m->nkeys = nkeys;
    memcpy(m->key_types, keys, sizeof(Type) * nkeys);
    for (int i = 0; i < nkeys; i++)
      if (keys[i].kind == TY_INT) m->key_types[i] = ty_int(8, keys[i].is_signed);
    return;
  }
  bool same = m->nkeys == nkeys;
  for (int i = 0; same && i < nkeys; i++)
    same = m->key_types[i].kind == keys[i].kind &&
           (keys[i].kind == TY_STR || keys[i].kind == TY_INT ||
            same_layout(keys[i], m->key_types[i]));
  if (!same) {
    char want[200], got[200];
    error_at(c, n->span,
             "Argument mismatch for %s: trying to access with arguments: %s "
             "when map expects arguments: %s",
             m->name, key_list_name(keys, nkeys, got, sizeof(got)),
             key_list_name(m->key_types, m->nkeys, want, sizeof(want)));
    return;
  }
  for (int i = 0; i < nkeys; i++)
    if (keys[i].kind == TY_STR && keys[i].size > m->key_types[i].size)
      m->key_types[i].size = keys[i].size;
}

/* Records that m holds values of type t, from an assignment to the map
 * at `at` whose operator is at op (where tuple mismatches point). */
static void map_set_value(Checker *c, MapSym *m, Type t, Span at, Span op) {
  if (t.kind == TY_NONE) return;
  if (t.kind != TY_INT && t.kind != TY_STR && t.kind != TY_AGG &&
      t.kind != TY_TUPLE && t.kind != TY_BUF) {
    error_at(c, at, "%s can not be stored in a map", TYPE_NAME(t));
    return;
  }
  if (t.kind == TY_INT) t = ty_int(8, t.is_signed);
  Type *v = &m->value_type;
  if (v->kind == TY_NONE) {
    *v = t;
    return;
  }
  if (v->kind == TY_TUPLE && t.kind == TY_TUPLE && !same_layout(*v, t)) {
    error_at(c, op, "Tuple type mismatch: %s != %s.", TYPE_NAME(*v),
             TYPE_NAME(t));
    return;
  }
  bool same = v->kind == t.kind && (t.kind != TY_AGG || v->agg == t.agg) &&
              (t.kind != TY_BUF || same_layout(*v, t));
  if (!same) {
    error_at(c, at, "Type mismatch for %s: trying to assign value of type "
             "'%s' when map already contains a value of type '%s'",
             m->name, TYPE_NAME(t), TYPE_NAME(*v));
    return;
  }
  /* integers keep the signedness of their first assignment, as in
   * bpftrace: @x = -1 then @x = elapsed stays signed */
  if (t.kind == TY_STR && t.size > v->size) v->size = t.size;
}

static void check_map_read(Checker *c, Node *n) {
  check_map_keys(c, n);
  MapSym *m = n->map;
  if (m->value_type.kind == TY_NONE) {
    error_at(c, n->span, "Undefined map: %s", m->name);
    return;
  }
  n->type = m->value_type;
  if (n->type.kind == TY_AGG) {
    /* Reading an aggregation gives this CPU's share as an integer. */
    n->type = ty_int(8, n->type.agg != AGG_COUNT);
  }
}

/* ---- calls ---------------------------------------------------------- */

static int count_args(Node *n) {
  int k = 0;
  for (Node *a = n->args; a; a = a->next) k++;
  return k;
}

/* "no arguments", "one argument", "3 arguments". */
static const char *arg_count_words(int k, char *buf, size_t len) {
  if (k == 0) return "no arguments";
  if (k == 1) return "one argument";
  snprintf(buf, len, "%d arguments", k);
  return buf;
}

static bool want_args(Checker *c, Node *n, int min, int max) {
  int k = count_args(n);
  if (k >= min && k <= max) return true;
  char words[40];
  if (min == max)
    error_at(c, n->span, "%s() requires %s (%d provided)", n->name,
             arg_count_words(min, words, sizeof(words)), k);
  else if (k < min)
    error_at(c, n->span, "%s() requires at least %s (%d provided)", n->name,
             arg_count_words(min, words, sizeof(words)), k);
  else
    error_at(c, n->span, "%s() takes up to %s (%d provided)", n->name,
             arg_count_words(max, words, sizeof(words)), k);
  return false;
}

/* An integer argument of the call n. */
static bool want_int(Checker *c, Node *n, Node *arg) {
  if (arg->type.kind == TY_INT || arg->type.kind == TY_NONE) return true;
  error_at(c, n->span, "%s() only supports integer arguments (%s provided)",
           n->name, kind_name(arg->type));
  return false;
}

static bool want_map(Checker *c, Node *call, Node *arg, bool keys_allowed) {
  if (!arg || arg->kind != N_MAP) {
    error_at(c, arg ? arg->span : call->span, "%s() expects a map argument",
             call->name);
    return false;
  }
  if (!keys_allowed && arg->args) {
    error_at(c, arg->span, "%s() expects a whole map, not a map element",
             call->name);
    return false;
  }
  return true;
}

static int align8(int n) { return (n + 7) & ~7; }

/* Adds a PrintfDef (second pass only) and returns its id, or -1. */
static int add_printf_def(Checker *c, PrintfDef def) {
  if (c->pass != 2) return -1;
  c->out->printfs = realloc(c->out->printfs,
                            sizeof(PrintfDef) * (c->out->nprintfs + 1));
  c->out->printfs[c->out->nprintfs] = def;
  return c->out->nprintfs++;
}

/* The record size a value takes in a printf record or a scratch buffer. */
static int value_cap(Type t) {
  switch (t.kind) {
  case TY_STR: return align8(t.size);
  case TY_BUF: return 8 + align8(t.size);
  case TY_TUPLE: return t.tuple->size;
  default: return 8;
  }
}

/* printf(fmt, ...), and system() and cat(), which format the same way. */
static void check_printf(Checker *c, Node *n) {
  Node *fmt = n->args;
  if (!fmt) {
    error_at(c, n->span, "%s() requires at least one argument (0 provided)",
             n->name);
    return;
  }
  if (fmt->kind != N_STR) {
    error_at(c, fmt->span, "%s() expects a string literal as format",
             n->name);
    return;
  }
  for (Node *a = fmt->next; a; a = a->next) check_expr(c, a);
  char conv[MAX_PRINTF_ARGS + 1];
  char err[200];
  int nconv = printf_parse(fmt->sval, conv, MAX_PRINTF_ARGS, err, sizeof(err));
  if (nconv < 0) {
    error_at(c, fmt->span, "%s", err);
    return;
  }
  int nargs = count_args(n) - 1;
  if (nargs != nconv) {
    error_at(c, n->span,
             "%s: Expected %d argument%s for the format, got %d", n->name,
             nconv, nconv == 1 ? "" : "s", nargs);
    return;
  }
  if (c->pass != 2) return;
  PrintfDef def = {.fmt = fmt->sval, .nargs = nargs, .span = n->span};
  int off = 0, i = 0;
  for (Node *a = fmt->next; a; a = a->next, i++) {
    TypeKind want = conv[i] == 's' ? TY_STR
                    : (conv[i] == 'r' || conv[i] == 'R') ? TY_BUF : TY_INT;
    if (a->type.kind == TY_NONE) return;
    bool ok = a->type.kind == want ||
              (want == TY_BUF && a->type.kind == TY_STR);
    if (!ok) {
      const char *what = want == TY_STR ? "a string"
                         : want == TY_BUF ? "a buffer" : "an integer";
      error_at(c, a->span, "%s: %%%c specifier expects %s, got %s", n->name,
               conv[i] == 'R' ? 'r' : conv[i], what, TYPE_NAME(a->type));
      return;
    }
    def.args[i].type = a->type.kind == TY_INT
                           ? ty_int(8, a->type.is_signed) : a->type;
    def.args[i].offset = off;
    off += value_cap(a->type);
  }
  def.size = off;
  n->printf_id = add_printf_def(c, def);
}

/* A literal integer, possibly negated. */
static bool const_int(Node *n, int64_t *v) {
  if (n->kind == N_INT) {
    *v = n->ival;
    return true;
  }
  if (n->kind == N_UNOP && n->op == '-' && n->lhs->kind == N_INT) {
    *v = -n->lhs->ival;
    return true;
  }
  return false;
}

static bool want_const(Checker *c, Node *arg, const char *fn, const char *what,
                       int64_t lo, int64_t hi, int64_t *v) {
  if (!const_int(arg, v)) {
    error_at(c, arg->span, "%s(): %s must be an integer literal", fn, what);
    return false;
  }
  if (*v < lo || *v > hi) {
    error_at(c, arg->span, "%s(): %s must be between %lld and %lld", fn, what,
             (long long)lo, (long long)hi);
    return false;
  }
  return true;
}

/* lhist(v, min, max, step): integer literals making at most 1000
 * buckets. Negative bounds, which bpftrace 0.17 refuses, are fine. */
static void check_lhist_bounds(Checker *c, Node *n) {
  static const char *const names[] = {"min", "max", "step"};
  int64_t b[3];
  Node *a = n->args->next;
  for (int i = 0; i < 3; i++, a = a->next) {
    check_expr(c, a);
    if (a->type.kind == TY_NONE) return;
    if (!const_int(a, &b[i])) {
      error_at(c, n->span, "lhist() expects a integer literal (%s provided)",
               kind_name(a->type));
      return;
    }
    if (b[i] < INT32_MIN || b[i] > INT32_MAX) {
      error_at(c, a->span, "lhist(): %s must be between %d and %d", names[i],
               INT32_MIN, INT32_MAX);
      return;
    }
  }
  int64_t lo = b[0], hi = b[1], step = b[2];
  if (step < 1)
    error_at(c, n->span, "lhist() step must be >= 1 (%lld provided)",
             (long long)step);
  else if (lo > hi)
    error_at(c, n->span, "lhist() min must be less than max (provided min "
             "%lld and max %lld)", (long long)lo, (long long)hi);
  else if (lo == hi)
    error_at(c, n->span, "lhist() step is too large for the given range "
             "(provided step %lld for range 0)", (long long)step);
  else if ((hi - lo) / step > 1000)
    error_at(c, n->span, "lhist() too many buckets, must be <= 1000 (would "
             "need %lld)", (long long)((hi - lo) / step));
}

static bool want_unsafe(Checker *c, Node *n) {
  if (c->script->unsafe) return true;
  error_at(c, n->span, "%s() is an unsafe function; run loupe with --unsafe "
           "to allow it", n->name);
  return false;
}

static int signal_number(const char *name) {
  static const char *const names[] = {
      "", "HUP", "INT", "QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "KILL",
      "USR1", "SEGV", "USR2", "PIPE", "ALRM", "TERM", "STKFLT", "CHLD",
      "CONT", "STOP", "TSTP", "TTIN", "TTOU", "URG", "XCPU", "XFSZ",
      "VTALRM", "PROF", "WINCH", "IO", "PWR", "SYS"};
  if (!strncmp(name, "SIG", 3)) name += 3;
  for (int i = 1; i < (int)(sizeof(names) / sizeof(names[0])); i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

static AggKind agg_of(const char *name);

static void check_format_calls(Checker *c, Node *n);

static AggKind agg_of(const char *name) {
  if (!strcmp(name, "count")) return AGG_COUNT;
  if (!strcmp(name, "sum")) return AGG_SUM;
  if (!strcmp(name, "min")) return AGG_MIN;
  if (!strcmp(name, "max")) return AGG_MAX;
  if (!strcmp(name, "avg")) return AGG_AVG;
  if (!strcmp(name, "hist")) return AGG_HIST;
  if (!strcmp(name, "lhist")) return AGG_LHIST;
  if (!strcmp(name, "stats")) return AGG_STATS;
  return AGG_NONE;
}

static void check_call(Checker *c, Node *n) {
  const char *f = n->name;
  AggKind agg = agg_of(f);
  n->type = ty_void();
  if (agg != AGG_NONE) {
    if (!c->in_assign_rhs) {
      error_at(c, n->span, "%s() should be directly assigned to a map", f);
      return;
    }
    int min = agg == AGG_COUNT ? 0 : agg == AGG_LHIST ? 4 : 1;
    int max = agg == AGG_COUNT ? 0 : agg == AGG_LHIST ? 4 : 1;
    /* hist(v, bits) as later bpftrace versions take it; without an
     * argument the message is bpftrace 0.17's "requires one argument" */
    if (agg == AGG_HIST && n->args) max = 2;
    n->type = ty_agg(agg);
    if (!want_args(c, n, min, max)) return;
    if (agg == AGG_COUNT) return;
    check_expr(c, n->args);
    if (!want_int(c, n, n->args)) return;
    int64_t v;
    Node *a = n->args->next;
    if (agg == AGG_HIST && a && want_const(c, a, f, "bits", 0, 5, &v))
      n->ival = v;
    if (agg == AGG_LHIST) check_lhist_bounds(c, n);
    return;
  }
  if (!strcmp(f, "printf")) {
    check_printf(c, n);
  } else if (!strcmp(f, "kaddr")) {
    check_kaddr(c, n);
  } else if (!strcmp(f, "system") || !strcmp(f, "cat") ||
             !strcmp(f, "time") || !strcmp(f, "join") ||
             !strcmp(f, "signal") || !strcmp(f, "strncmp") ||
             !strcmp(f, "buf") || !strcmp(f, "has_key") ||
             !strcmp(f, "strcontains") || !strcmp(f, "len")) {
    check_format_calls(c, n);
  } else if (!strcmp(f, "str")) {
    /* a value once checked: no "has no value" after an error here */
    n->type.kind = TY_NONE;
    if (!want_args(c, n, 1, 2)) return;
    Node *p = n->args;
    c->positional_as_string = true;   /* str($1) is the word as given */
    check_expr(c, p);
    c->positional_as_string = false;
    int size = c->strlen;
    if (p->next) {
      Node *len = p->next;
      check_expr(c, len);
      if (!want_int(c, n, len)) return;
      if (len->kind != N_INT || len->ival < 1) {
        error_at(c, len->span, "str(): the length must be a positive integer "
                 "literal");
        return;
      }
      if (len->ival < size) size = (int)len->ival + 1;
    }
    /* str() of a string is fine, as in later bpftrace versions */
    if (p->type.kind == TY_STR) {
      n->type = ty_str(p->type.size < size ? p->type.size : size);
    } else if (p->type.kind == TY_INT) {
      n->type = ty_str(size);
    } else if (p->type.kind != TY_NONE) {
      error_at(c, n->span, "str() expects an integer or a pointer type as "
               "first argument (%s provided)", TYPE_NAME(p->type));
    }
  } else if (!strcmp(f, "exit")) {
    want_args(c, n, 0, 0);
  } else if (!strcmp(f, "print")) {
    if (!want_args(c, n, 1, 3) || !want_map(c, n, n->args, false)) return;
    MapSym *m = map_get(c, n->args);
    n->args->map = m;
    if (m->value_type.kind == TY_NONE)
      error_at(c, n->args->span, "Undefined map: %s", m->name);
    int64_t v;
    Node *top = n->args->next;
    if (top && !want_const(c, top, f, "top", 0, INT32_MAX, &v)) return;
    if (top && top->next &&
        !want_const(c, top->next, f, "div", 1, INT32_MAX, &v))
      return;
  } else if (!strcmp(f, "clear") || !strcmp(f, "zero")) {
    if (!want_args(c, n, 1, 1) || !want_map(c, n, n->args, false)) return;
    MapSym *m = map_get(c, n->args);
    n->args->map = m;
    if (m->value_type.kind == TY_NONE)
      error_at(c, n->args->span, "Undefined map: %s", m->name);
  } else if (!strcmp(f, "delete")) {
    if (!want_args(c, n, 1, 1) || !want_map(c, n, n->args, true)) return;
    check_map_keys(c, n->args);
    if (n->args->map->value_type.kind == TY_NONE)
      error_at(c, n->args->span, "Undefined map: %s", n->args->map->name);
  } else if (!strcmp(f, "kstack") ||
             !strcmp(f, "ustack") || !strcmp(f, "ksym") ||
             !strcmp(f, "usym") || !strcmp(f, "ntop") ||
             !strcmp(f, "sizeof") || !strcmp(f, "reg") ||
             !strcmp(f, "uaddr") ||
             !strcmp(f, "cgroupid") || !strcmp(f, "override") ||
             !strcmp(f, "strftime") ||
             !strcmp(f, "macaddr") ||
             !strcmp(f, "path")) {
    error_at(c, n->span, "loupe does not support the function '%s' yet", f);
  } else {
    error_at(c, n->span, "Unknown function: '%s'", f);
  }
}

/* system(), cat(), time(), join(), signal(), strncmp(), buf(), has_key(). */
static void check_format_calls(Checker *c, Node *n) {
  const char *f = n->name;
  Node *a = n->args;
  int64_t v;
  n->type = ty_void();
  if (!strcmp(f, "system") || !strcmp(f, "cat")) {
    if (f[0] == 's' && !want_unsafe(c, n)) return;
    check_printf(c, n);
  } else if (!strcmp(f, "time")) {
    if (!want_args(c, n, 0, 1)) return;
    if (a && a->kind != N_STR) {
      error_at(c, a->span, "time() expects a string literal as format");
      return;
    }
    PrintfDef def = {.fmt = a ? a->sval : "%H:%M:%S\n", .span = n->span};
    n->printf_id = add_printf_def(c, def);
  } else if (!strcmp(f, "join")) {
    if (!want_args(c, n, 1, 2)) return;
    check_expr(c, a);
    if (a->type.kind != TY_INT && a->type.kind != TY_NONE) {
      error_at(c, a->span, "join() expects an array of strings (char **), "
               "got %s", TYPE_NAME(a->type));
      return;
    }
    if (a->next && a->next->kind != N_STR) {
      error_at(c, a->next->span, "join() expects a string literal as "
               "delimiter");
      return;
    }
    PrintfDef def = {.fmt = a->next ? a->next->sval : " ", .span = n->span};
    n->printf_id = add_printf_def(c, def);
  } else if (!strcmp(f, "signal")) {
    if (!want_args(c, n, 1, 1) || !want_unsafe(c, n)) return;
    if (a->kind == N_STR) {
      int sig = signal_number(a->sval);
      if (sig < 0) {
        error_at(c, a->span, "signal(): unknown signal %s", a->sval);
        return;
      }
      n->ival = sig;
    } else if (want_const(c, a, f, "the signal", 1, 64, &v)) {
      n->ival = v;
    }
  } else if (!strcmp(f, "len")) {
    n->type.kind = TY_NONE;
    if (!want_args(c, n, 1, 1) || !want_map(c, n, a, false)) return;
    MapSym *m = map_get(c, a);
    a->map = m;
    if (m->value_type.kind == TY_NONE) {
      error_at(c, a->span, "Undefined map: %s", m->name);
      return;
    }
    n->type = ty_int(8, false);
  } else if (!strcmp(f, "strcontains")) {
    n->type.kind = TY_NONE;
    if (!want_args(c, n, 2, 2)) return;
    check_expr(c, a);
    check_expr(c, a->next);
    for (Node *s = a; s; s = s->next)
      if (s->type.kind != TY_STR && s->type.kind != TY_NONE) {
        error_at(c, n->span, "strcontains() only supports string arguments "
                 "(%s provided)", kind_name(s->type));
        return;
      }
    n->type = ty_int(1, false);
  } else if (!strcmp(f, "strncmp")) {
    n->type.kind = TY_NONE;   /* a value: no "has no value" after errors */
    if (!want_args(c, n, 3, 3)) return;
    check_expr(c, a);
    check_expr(c, a->next);
    for (Node *s = a; s != a->next->next; s = s->next)
      if (s->type.kind != TY_STR && s->type.kind != TY_NONE) {
        error_at(c, n->span, "strncmp() only supports string arguments (%s "
                 "provided)", kind_name(s->type));
        return;
      }
    Node *len = a->next->next;
    check_expr(c, len);
    if (len->type.kind == TY_NONE) return;
    if (!const_int(len, &v)) {
      error_at(c, n->span, "strncmp() expects a integer literal (%s "
               "provided)", kind_name(len->type));
      return;
    }
    if (v < 0) {
      error_at(c, n->span, "Builtin strncmp requires a non-negative size");
      return;
    }
    if (!want_const(c, len, f, "the length", 0, 4096, &v)) return;
    n->ival = v;
    n->type = ty_int(8, false);
  } else if (!strcmp(f, "buf")) {
    if (!want_args(c, n, 1, 2)) return;
    check_expr(c, a);
    int size = c->strlen;
    if (a->next) {
      if (!want_const(c, a->next, f, "the length", 1, 1024, &v)) return;
      size = (int)v;
    } else if (a->type.kind == TY_INT) {
      error_at(c, n->span, "buf() of a pointer needs a length: buf(p, n)");
      return;
    }
    if (a->type.kind == TY_STR) {
      if (a->type.size < size) size = a->type.size;
    } else if (a->type.kind != TY_INT && a->type.kind != TY_NONE) {
      error_at(c, a->span, "buf() expects a pointer or an array, got %s",
               TYPE_NAME(a->type));
      return;
    }
    n->type.kind = TY_BUF;
    n->type.size = size;
  } else if (!strcmp(f, "has_key")) {
    if (!want_args(c, n, 1, 1) || !want_map(c, n, a, true)) return;
    check_map_keys(c, a);
    if (a->map->value_type.kind == TY_NONE)
      error_at(c, a->span, "Undefined map: %s", a->map->name);
    n->type = ty_int(1, false);
  }
}

/* (a, b, ...): each element laid out as in a map key. */
static void check_tuple(Checker *c, Node *n) {
  int k = 0;
  for (Node *e = n->args; e; e = e->next) {
    check_expr(c, e);
    if (e->type.kind != TY_INT && e->type.kind != TY_STR &&
        e->type.kind != TY_TUPLE && e->type.kind != TY_BUF) {
      if (e->type.kind != TY_NONE)
        error_at(c, e->span, "%s can not be part of a tuple",
                 TYPE_NAME(e->type));
      return;
    }
    k++;
  }
  TupleType *t = calloc(1, sizeof(*t));
  t->n = k;
  t->elems = calloc(k, sizeof(Type));
  t->offs = calloc(k, sizeof(int));
  int i = 0;
  for (Node *e = n->args; e; e = e->next, i++) {
    t->elems[i] = e->type.kind == TY_INT ? ty_int(8, e->type.is_signed)
                                          : e->type;
    t->offs[i] = t->size;
    t->size += value_cap(t->elems[i]);
  }
  n->type.kind = TY_TUPLE;
  n->type.tuple = t;
  n->type.size = t->size;
}

/* Tuples are compatible when their elements are of the same kinds and
 * sizes (the layouts then agree). */
static bool same_layout(Type a, Type b) {
  if (a.kind != b.kind) return false;
  if (a.kind == TY_STR || a.kind == TY_BUF) return a.size == b.size;
  if (a.kind != TY_TUPLE) return true;
  if (a.tuple->n != b.tuple->n) return false;
  for (int i = 0; i < a.tuple->n; i++)
    if (!same_layout(a.tuple->elems[i], b.tuple->elems[i])) return false;
  return true;
}

/* Integer casts: (uint8)x ... (int64)x, (bool)x. */
static bool int_type_named(const char *name, Type *out) {
  static const struct { const char *name; int size; bool is_signed; } ints[] = {
      {"int8", 1, true},   {"uint8", 1, false},  {"int16", 2, true},
      {"uint16", 2, false}, {"int32", 4, true},  {"uint32", 4, false},
      {"int64", 8, true},  {"uint64", 8, false}, {"bool", 1, false},
      {"char", 1, true},   {"int", 4, true},     {"unsigned int", 4, false},
      {"short", 2, true},  {"unsigned short", 2, false}, {"long", 8, true},
      {"unsigned long", 8, false}, {"unsigned char", 1, false},
      {"long long", 8, true}, {"unsigned long long", 8, false},
  };
  for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
    if (!strcmp(ints[i].name, name)) {
      *out = ty_int(ints[i].size, ints[i].is_signed);
      return true;
    }
  return false;
}

/* (type)x. Errors about the type point at "(type)", as bpftrace's do. */
static void check_cast(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  Type t;
  if (!int_type_named(n->name, &t)) {
    char err[200];
    const CType *ct = ctype_parse(n->name, err, sizeof(err));
    if (!ct) {
      /* bpftrace takes any unknown name in a cast for a struct's */
      if (!strncmp(err, "Unknown type: ", 14))
        error_at(c, n->part_span, "Unknown struct/union: %s", err + 14);
      else
        error_at(c, n->part_span, "%s", err);
      return;
    }
    if (ct->kind == C_STRUCT || ct->kind == C_UNION) {
      error_at(c, n->span, "Cannot cast to struct type \"%s\"", n->name);
      return;
    }
    AddrSpace as = n->lhs->type.is_pointer ? n->lhs->type.as : AS_KERNEL;
    if ((ct->kind != C_PTR && ct->kind != C_INT && ct->kind != C_ENUM) ||
        !type_of_ctype(ct, as ? as : AS_KERNEL, &t)) {
      error_at(c, n->span, "Cannot cast to \"%s\": only integer and "
               "pointer casts are possible", n->name);
      return;
    }
  }
  if (n->lhs->type.kind != TY_INT && n->lhs->type.kind != TY_NONE) {
    error_at(c, n->part_span, "Casts are not supported for type: \"%s\"",
             TYPE_NAME(n->lhs->type));
    return;
  }
  n->type = t;
}

/* $1, $2 ...: the command line's words, as integers when they read as
 * one, else as strings; $# is their count. Rewritten into literals. */
static bool check_positional(Checker *c, Node *n) {
  const char *name = n->name + 1;
  if (!strcmp(name, "#")) {
    n->kind = N_INT;
    n->ival = c->script->nparams;
    n->type = ty_int(8, true);
    return true;
  }
  char *end;
  long i = strtol(name, &end, 10);
  if (*end || i < 1) return false;
  const char *text = i <= c->script->nparams ? c->script->params[i - 1] : "";
  long long v = strtoll(text, &end, 0);
  if (!*text && !c->positional_as_string) {
    /* a missing parameter reads as 0 (and as "" inside str()) */
    n->kind = N_INT;
    n->ival = 0;
    n->type = ty_int(8, true);
  } else if (*text && !*end && !c->positional_as_string) {
    n->kind = N_INT;
    n->ival = v;
    n->type = ty_int(8, true);
  } else {
    n->kind = N_STR;
    n->sval = (char *)text;
    n->slen = (int)strlen(text);
    n->type = ty_str(n->slen + 1);
  }
  return true;
}

/* ---- expressions ---------------------------------------------------- */

static const char *op_text(int op) {
  static char one[2];
  switch (op) {
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_LE: return "<=";
  case OP_GE: return ">=";
  case OP_AND: return "&&";
  case OP_OR: return "||";
  case OP_SHL: return "<<";
  case OP_SHR: return ">>";
  case OP_INC: return "++";
  case OP_DEC: return "--";
  default: one[0] = (char)op; one[1] = 0; return one;
  }
}

static bool is_comparison(int op) {
  return op == OP_EQ || op == OP_NE || op == '<' || op == '>' ||
         op == OP_LE || op == OP_GE;
}

/* Integer results follow C's usual conversions on 64-bit values: the
 * result is unsigned if either side is a 64-bit unsigned integer. */
static bool result_signed(Type a, Type b) {
  bool a_unsigned = !a.is_signed && a.size == 8;
  bool b_unsigned = !b.is_signed && b.size == 8;
  return !(a_unsigned || b_unsigned);
}

static void check_binop(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  check_expr(c, n->rhs);
  Type l = n->lhs->type, r = n->rhs->type;
  if (l.kind == TY_NONE || r.kind == TY_NONE) return;
  if (l.kind == TY_STR && r.kind == TY_STR &&
      (n->op == OP_EQ || n->op == OP_NE)) {
    n->type = ty_int(8, false);
    return;
  }
  if (l.kind != TY_INT || r.kind != TY_INT) {
    error_at(c, n->span, "Type mismatch for '%s': comparing '%s' with '%s'",
             op_text(n->op), TYPE_NAME(l), TYPE_NAME(r));
    return;
  }
  if (is_comparison(n->op) || n->op == OP_AND || n->op == OP_OR) {
    n->type = ty_int(8, false);
  } else if (l.is_pointer && !r.is_pointer && (n->op == '+' || n->op == '-')) {
    /* p + i moves by whole elements, as in C */
    n->type = l;
    n->field_offset = l.ctype && l.ctype->size > 1 ? l.ctype->size : 1;
  } else {
    n->type = ty_int(8, result_signed(l, r));
  }
}

/* *p: what p points to, read from memory (a struct stays in memory). */
static void check_deref(Checker *c, Node *n) {
  Type t = n->lhs->type;
  if (t.kind != TY_INT || !t.is_pointer) {
    error_at(c, n->span, "Can not dereference type '%s': it is not a "
             "pointer", TYPE_NAME(t));
    return;
  }
  if (!t.ctype || t.ctype->kind == C_VOID) {
    error_at(c, n->span, "Can not dereference '%s': what it points to is "
             "unknown; cast it first, e.g. *(uint8 *)p", TYPE_NAME(t));
    return;
  }
  if (!type_of_ctype(t.ctype, t.as ? t.as : AS_KERNEL, &n->type)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read a value of type '%s' yet",
             ctype_name(t.ctype, name, sizeof(name)));
  }
}

/* p[i] on a pointer, or a[i] on an array in memory. */
static void check_index(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  check_expr(c, n->rhs);
  Type t = n->lhs->type;
  if (t.kind == TY_NONE) return;
  const CType *elem = NULL;
  if (t.kind == TY_INT && t.is_pointer && t.ctype)
    elem = t.ctype;
  else if (t.kind == TY_RECORD && t.ctype->kind == C_ARRAY)
    elem = t.ctype->target;
  if (!elem || elem->size <= 0) {
    error_at(c, n->span, "The array index operator [] can not be used on "
             "expressions of type '%s'", TYPE_NAME(t));
    return;
  }
  if (n->rhs->type.kind != TY_INT) {
    error_at(c, n->rhs->span, "an index must be an integer, not %s",
             TYPE_NAME(n->rhs->type));
    return;
  }
  n->field_offset = elem->size;   /* the element size, for codegen */
  if (!type_of_ctype(elem, t.as ? t.as : AS_KERNEL, &n->type)) {
    char name[120];
    error_at(c, n->span, "loupe cannot read a value of type '%s' yet",
             ctype_name(elem, name, sizeof(name)));
  }
}

/* sizeof(TYPE), sizeof(expr), offsetof(TYPE, field): integer constants. */
static void check_sizeof(Checker *c, Node *n) {
  int64_t value = 0;
  char err[200];
  if (n->kind == N_SIZEOF && !n->name) {
    check_expr(c, n->lhs);
    Type t = n->lhs->type;
    value = t.kind == TY_INT ? (t.is_pointer ? 8 : t.size)
            : t.kind == TY_RECORD ? t.size : value_cap(t);
  } else {
    const CType *ct = ctype_parse(n->name, err, sizeof(err));
    if (!ct) {
      error_at(c, n->span, "%s", err);
      return;
    }
    if (n->kind == N_SIZEOF) {
      value = ct->size;
    } else {
      CField f;
      if (!ctype_field_path(ct, n->sval, &f)) {
        error_at(c, n->span, "'%s' has no field '%s'", n->name, n->sval);
        return;
      }
      value = f.offset;
    }
  }
  n->kind = N_INT;
  n->ival = value;
  n->type = ty_int(8, false);
}

static void check_unop(Checker *c, Node *n) {
  check_expr(c, n->lhs);
  Type t = n->lhs->type;
  if (t.kind == TY_NONE) return;
  if (n->op == '*') {
    check_deref(c, n);
    return;
  }
  if (t.kind != TY_INT) {
    error_at(c, n->span, "Invalid operand to unary '%s': %s", op_text(n->op),
             TYPE_NAME(t));
    return;
  }
  if (n->op == '!')
    n->type = ty_int(8, false);
  else
    n->type = ty_int(8, n->op == '-' ? true : t.is_signed);
}

/* cond ? a : b: both integers or both strings. */
static void check_ternary(Checker *c, Node *n) {
  check_expr(c, n->cond);
  check_expr(c, n->then);
  check_expr(c, n->els);
  Type a = n->then->type, b = n->els->type;
  if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE) {
    error_at(c, n->span, "Invalid condition in ternary: %s",
             kind_name(n->cond->type));
    return;
  }
  if (a.kind == TY_NONE || b.kind == TY_NONE) return;
  if (a.kind != TY_INT && a.kind != TY_STR) {
    error_at(c, n->span, "Ternary return type unsupported %s", kind_name(a));
  } else if (a.kind != b.kind) {
    error_at(c, n->span, "Ternary operator must return the same type: have "
             "'%s' and '%s'", kind_name(a), kind_name(b));
  } else if (a.kind == TY_INT) {
    n->type = ty_int(8, result_signed(a, b));
  } else {
    n->type = ty_str(a.size > b.size ? a.size : b.size);
  }
}

static void check_expr(Checker *c, Node *n) {
  switch (n->kind) {
  case N_INT:
    n->type = ty_int(8, true);
    break;
  case N_STR:
    /* a string literal must fit the string buffers (formats need not);
     * a positional parameter made into a string (it keeps its name "$1")
     * is cut to size instead */
    if (!n->name && n->slen + 1 > c->strlen)
      error_at(c, n->span, "String is too long (over %d bytes): %s",
               c->strlen, n->sval);
    n->type = ty_str(n->slen + 1);
    break;
  case N_BUILTIN:
    check_builtin(c, n);
    break;
  case N_VAR: {
    if (check_positional(c, n)) break;
    VarSym *v = var_find(c, n->name);
    if (!v || v->type.kind == TY_NONE) {
      error_at(c, n->span, "Undefined or undeclared variable: %s", n->name);
      return;
    }
    n->var = v;
    n->type = v->type;
    break;
  }
  case N_MAP:
    check_map_read(c, n);
    break;
  case N_CALL:
    check_call(c, n);
    if (n->type.kind == TY_VOID && agg_of(n->name) == AGG_NONE &&
        strcmp(n->name, "str") != 0) {
      /* printf(), exit() ... have no value; fine only as statements. */
    }
    break;
  case N_BINOP:
    check_binop(c, n);
    break;
  case N_UNOP:
    check_unop(c, n);
    break;
  case N_FIELD:
    check_field(c, n);
    break;
  case N_TERNARY:
    check_ternary(c, n);
    break;
  case N_TUPLE:
    check_tuple(c, n);
    break;
  case N_CAST:
    check_cast(c, n);
    break;
  case N_INDEX:
    check_index(c, n);
    break;
  case N_SIZEOF:
  case N_OFFSETOF:
    check_sizeof(c, n);
    break;
  case N_INCDEC:
    /* as an expression: x++ yields an integer */
    check_expr(c, n->lhs);
    if (n->lhs->type.kind != TY_INT && n->lhs->type.kind != TY_NONE)
      error_at(c, n->span, "The %s operator can not be used on expressions "
               "of type '%s'", op_text(n->op), TYPE_NAME(n->lhs->type));
    n->type = ty_int(8, true);
    break;
  default:
    error_at(c, n->span, "this is not an expression");
    break;
  }
}

/* ---- statements ----------------------------------------------------- */

/* hist() bits and lhist() bounds belong to the map: every call that
 * feeds it must agree. */
static void map_set_agg_params(Checker *c, MapSym *m, Node *call) {
  if (call->kind != N_CALL || c->pass != 2) return;
  if (call->type.agg == AGG_HIST) {
    int bits = (int)call->ival;
    if (m->agg_params_set && m->hist_bits != bits)
      error_at(c, call->span, "%s is used with hist() of %d and of %d bits",
               m->name, m->hist_bits, bits);
    m->hist_bits = bits;
    m->agg_params_set = true;
  } else if (call->type.agg == AGG_LHIST) {
    Node *a = call->args ? call->args->next : NULL;
    int64_t lo = 0, hi = 0, step = 0;
    if (count_args(call) != 4 || !const_int(a, &lo) ||
        !const_int(a->next, &hi) || !const_int(a->next->next, &step) ||
        step < 1 || hi < lo)
      return;   /* reported by check_lhist_bounds */
    if (m->agg_params_set && (m->lhist_min != lo || m->lhist_max != hi ||
                              m->lhist_step != step))
      error_at(c, call->span, "%s is used with lhist() of different bounds",
               m->name);
    m->lhist_min = lo;
    m->lhist_max = hi;
    m->lhist_step = step;
    m->agg_params_set = true;
  }
}

/* The value x op= v combines with: what the variable or map holds. */
static Type compound_target_type(Checker *c, Node *lhs) {
  Type t = ty_int(8, true);
  if (lhs->kind == N_VAR) {
    VarSym *v = var_find(c, lhs->name);
    if (v && v->type.kind != TY_NONE) t = v->type;
  } else if (lhs->kind == N_MAP) {
    MapSym *m = map_find(c->out, lhs->name);
    if (m && m->value_type.kind != TY_NONE && m->value_type.kind != TY_AGG)
      t = m->value_type;
  }
  return t;
}

static void check_assign(Checker *c, Node *n) {
  Node *lhs = n->lhs;
  c->in_assign_rhs = n->op == '=' && lhs->kind == N_MAP;
  check_expr(c, n->rhs);
  c->in_assign_rhs = false;
  Type t = n->rhs->type;
  if (t.kind == TY_VOID) {
    error_at(c, n->rhs->span, "%s() has no value to assign", n->rhs->name);
    return;
  }
  if (n->op != '=' && t.kind != TY_INT && t.kind != TY_NONE) {
    /* x op= v is x = x op v, and fails as that binary operation does */
    error_at(c, n->span, "Type mismatch for '%s': comparing '%s' with '%s'",
             op_text(n->op), TYPE_NAME(compound_target_type(c, lhs)),
             TYPE_NAME(t));
    return;
  }
  if (lhs->kind == N_VAR) {
    VarSym *v = var_find(c, lhs->name);
    if (n->op != '=') {
      if (!v || v->type.kind == TY_NONE) {
        error_at(c, lhs->span, "Undefined or undeclared variable: %s",
                 lhs->name);
        return;
      }
    } else if (!v) {
      v = var_new(c, lhs->name);
    }
    lhs->var = v;
    if (t.kind == TY_NONE) return;
    if (t.kind == TY_RECORD || t.kind == TY_ARGS) {
      error_at(c, n->rhs->span, "a variable can not hold %s; keep a pointer "
               "to it instead", TYPE_NAME(t));
      return;
    }
    if (t.kind == TY_INT && !t.is_pointer) t = ty_int(8, t.is_signed);
    /* bpftrace points at the '=' of a plain assignment */
    Span at = n->op == '=' ? n->part_span : n->span;
    if (v->type.kind == TY_NONE) {
      v->type = t;
    } else if (v->type.kind == TY_TUPLE && t.kind == TY_TUPLE &&
               !same_layout(v->type, t)) {
      error_at(c, at, "Tuple type mismatch: %s != %s.", TYPE_NAME(v->type),
               TYPE_NAME(t));
      return;
    } else if (v->type.kind != t.kind ||
               (t.kind == TY_BUF && !same_layout(v->type, t))) {
      error_at(c, at, "Type mismatch for %s: trying to assign value of "
               "type '%s' when variable already contains a value of type "
               "'%s'", lhs->name, TYPE_NAME(t), TYPE_NAME(v->type));
      return;
    } else if (t.kind == TY_STR && t.size > v->type.size) {
      v->type.size = t.size;
    }
    lhs->type = v->type;
    return;
  }
  if (lhs->kind != N_MAP) {
    error_at(c, lhs->span, "can only assign to a $variable or a @map");
    return;
  }
  check_map_keys(c, lhs);
  if (n->op != '=') {
    /* @m[k] op= v: the map holds plain integers (or already sums). */
    MapSym *m = lhs->map;
    if (m->value_type.kind == TY_AGG) {
      error_at(c, n->span, "%s holds %s() values; it can not be changed "
               "with '%s='", m->name, agg_name(m->value_type.agg),
               op_text(n->op));
      return;
    }
    map_set_value(c, m, ty_int(8, true), lhs->span, n->span);
  } else {
    map_set_value(c, lhs->map, t, lhs->span, n->part_span);
    if (t.kind == TY_AGG) map_set_agg_params(c, lhs->map, n->rhs);
  }
  lhs->type = lhs->map->value_type;
}

static void check_incdec(Checker *c, Node *n) {
  Node *lhs = n->lhs;
  if (lhs->kind == N_VAR) {
    check_expr(c, lhs);
    if (lhs->type.kind != TY_INT && lhs->type.kind != TY_NONE)
      error_at(c, n->span, "The %s operator can not be used on expressions "
               "of type '%s'", op_text(n->op), TYPE_NAME(lhs->type));
    return;
  }
  if (lhs->kind != N_MAP) {
    error_at(c, lhs->span, "%s needs a $variable or a @map",
             op_text(n->op));
    return;
  }
  check_map_keys(c, lhs);
  MapSym *m = lhs->map;
  Type v = m->value_type;
  if (v.kind != TY_INT && v.kind != TY_NONE) {
    error_at(c, n->span, "The %s operator can not be used on expressions "
             "of type '%s'", op_text(n->op),
             v.kind == TY_AGG ? agg_name(v.agg) : TYPE_NAME(v));
    return;
  }
  map_set_value(c, m, ty_int(8, true), lhs->span, n->span);
  lhs->type = m->value_type;
}

/* The loop variable of a for: declared by it, an error if it exists. */
static VarSym *for_variable(Checker *c, Node *var, Type t) {
  VarSym *v = var_find(c, var->name);
  if (v && v->type.kind != TY_NONE && !same_layout(v->type, t)) {
    error_at(c, var->span, "Type mismatch for %s: the loop gives it type "
             "'%s' but it already holds '%s'", var->name, TYPE_NAME(t),
             TYPE_NAME(v->type));
    return NULL;
  }
  if (!v) v = var_new(c, var->name);
  v->type = t;
  var->var = v;
  var->type = t;
  return v;
}

/* for ($i : a..b) counts from a up to b - 1; for ($kv : @m) visits each
 * entry with $kv = (key, value). */
static void check_for(Checker *c, Node *n) {
  Node *src = n->args;
  if (n->lhs->kind != N_VAR || n->lhs->name[1] == '#' ||
      (n->lhs->name[1] >= '0' && n->lhs->name[1] <= '9')) {
    error_at(c, n->lhs->span, "a for loop needs a $variable");
    return;
  }
  if (n->rhs) {
    check_expr(c, src);
    check_expr(c, n->rhs);
    for (Node *e = src; e; e = e == src ? n->rhs : NULL)
      if (e->type.kind != TY_INT && e->type.kind != TY_NONE) {
        error_at(c, e->span, "a range's bounds must be integers, not %s",
                 TYPE_NAME(e->type));
        return;
      }
    for_variable(c, n->lhs, ty_int(8, true));
    c->loop_depth++;
    check_block(c, n->then);
    c->loop_depth--;
    return;
  }
  MapSym *m = map_get(c, src);
  src->map = m;
  if (m->value_type.kind == TY_NONE) {
    error_at(c, src->span, "Undefined map: %s", m->name);
    return;
  }
  if (m->value_type.kind == TY_AGG || m->nkeys <= 0) {
    error_at(c, src->span, "loupe can loop over maps of keys and plain "
             "values only; %s holds %s", m->name,
             m->nkeys <= 0 ? "no keys" : TYPE_NAME(m->value_type));
    return;
  }
  /* the body runs in its own frame: $kv and what it declares */
  int outer = c->frame, outer_depth = c->loop_depth;
  c->frame = ++c->nframes;
  n->ival = c->frame;
  TupleType *kv = calloc(1, sizeof(*kv));
  kv->n = 2;
  kv->elems = calloc(2, sizeof(Type));
  kv->offs = calloc(2, sizeof(int));
  if (m->nkeys == 1) {
    kv->elems[0] = m->key_types[0];
  } else {
    TupleType *keys = calloc(1, sizeof(*keys));
    keys->n = m->nkeys;
    keys->elems = calloc(m->nkeys, sizeof(Type));
    keys->offs = calloc(m->nkeys, sizeof(int));
    for (int i = 0; i < m->nkeys; i++) {
      keys->elems[i] = m->key_types[i];
      keys->offs[i] = keys->size;
      keys->size += value_cap(m->key_types[i]);
    }
    kv->elems[0].kind = TY_TUPLE;
    kv->elems[0].tuple = keys;
    kv->elems[0].size = keys->size;
  }
  kv->elems[1] = m->value_type;
  kv->offs[1] = value_cap(kv->elems[0]);
  kv->size = kv->offs[1] + value_cap(kv->elems[1]);
  Type t = {.kind = TY_TUPLE, .tuple = kv, .size = kv->size};
  for_variable(c, n->lhs, t);
  c->loop_depth = 1;
  check_block(c, n->then);
  c->loop_depth = outer_depth;
  c->frame = outer;
}

static void check_stmt(Checker *c, Node *n) {
  switch (n->kind) {
  case N_EXPR_STMT:
    check_expr(c, n->lhs);
    break;
  case N_ASSIGN:
    check_assign(c, n);
    break;
  case N_INCDEC:
    check_incdec(c, n);
    break;
  case N_IF:
    check_expr(c, n->cond);
    if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE)
      error_at(c, n->cond->span, "an if condition must be an integer, not %s",
               TYPE_NAME(n->cond->type));
    check_block(c, n->then);
    if (n->els) check_stmt(c, n->els);
    break;
  case N_BLOCK:
    check_block(c, n);
    break;
  case N_WHILE:
    check_expr(c, n->cond);
    if (n->cond->type.kind != TY_INT && n->cond->type.kind != TY_NONE)
      error_at(c, n->cond->span, "a while condition must be an integer, "
               "not %s", TYPE_NAME(n->cond->type));
    c->loop_depth++;
    check_block(c, n->then);
    c->loop_depth--;
    break;
  case N_UNROLL: {
    int64_t v = 0;
    if (!const_int(n->lhs, &v)) {
      error_at(c, n->lhs->span, "unroll needs an integer literal count");
    } else if (v > 100) {
      error_at(c, n->span, "unroll maximum value is 100");
    } else if (v < 1) {
      error_at(c, n->span, "unroll minimum value is 1");
    }
    n->ival = v;
    check_block(c, n->then);
    break;
  }
  case N_BREAK:
  case N_CONTINUE:
    if (c->loop_depth == 0)
      error_at(c, n->span, "%s used outside of a loop",
               n->kind == N_BREAK ? "break" : "continue");
    break;
  case N_RETURN:
    if (n->lhs)
      error_at(c, n->lhs->span, "a probe's return takes no value");
    break;
  case N_FOR:
    check_for(c, n);
    break;
  default:
    error_at(c, n->span, "loupe does not support this statement yet");
    break;
  }
}

static void check_block(Checker *c, Node *n) {
  for (Node *s = n->body; s; s = s->next) check_stmt(c, s);
}

static void check_probe(Checker *c, Probe *p) {
  c->probe = p;
  c->frame = c->nframes = 0;
  p->vars = NULL;
  if (p->pred) {
    check_expr(c, p->pred);
    if (p->pred->type.kind != TY_INT && p->pred->type.kind != TY_NONE)
      error_at(c, p->pred->span, "a predicate must be an integer, got %s",
               TYPE_NAME(p->pred->type));
  }
  check_block(c, p->body);
}

/* Key offsets and value sizes, once every use has been seen. */
static void map_layout(MapSym *m) {
  if (m->nkeys <= 0) {
    m->nkeys = 0;
    m->key_size = 8;
  } else {
    int off = 0;
    for (int i = 0; i < m->nkeys; i++) {
      m->key_off[i] = off;
      off += value_cap(m->key_types[i]);
    }
    m->key_size = off;
  }
  Type v = m->value_type;
  if (v.kind == TY_AGG) {
    m->bpf_type = BPF_MAP_TYPE_PERCPU_HASH;
    switch (v.agg) {
    case AGG_MIN: case AGG_MAX: case AGG_AVG: case AGG_STATS:
      m->value_size = 16;
      break;
    case AGG_HIST:
      m->value_size = 8 * hist_buckets(m->hist_bits);
      break;
    case AGG_LHIST:
      /* no step after an error in its bounds: the script is not run */
      m->value_size = m->agg_params_set ? 8 * lhist_buckets(m) : 8;
      break;
    default:
      m->value_size = 8;
    }
  } else {
    m->bpf_type = BPF_MAP_TYPE_HASH;
    m->value_size = value_cap(v);
  }
}

/* `elapsed` counts from the time loupe started: user space writes that
 * base into a one-slot array map before anything runs. */
static void add_elapsed_base(Compiled *out) {
  MapSym *m = calloc(1, sizeof(*m));
  m->name = strdup(ELAPSED_MAP_NAME);
  m->id = out->nmaps;
  m->nkeys = 0;
  m->key_size = 4;
  m->value_type = ty_int(8, false);
  m->value_size = 8;
  m->bpf_type = BPF_MAP_TYPE_ARRAY;
  m->max_entries = 1;
  m->fd = -1;
  m->internal = true;
  out->maps = realloc(out->maps, sizeof(MapSym *) * (out->nmaps + 1));
  out->maps[out->nmaps++] = m;
}

/* Histogram slots are too large to build on the stack: a new entry is
 * inserted from this never-written array slot of zeroes. */
static void add_zero_map(Compiled *out) {
  int size = 0;
  for (int i = 0; i < out->nmaps; i++) {
    MapSym *m = out->maps[i];
    if (m->value_type.kind == TY_AGG && m->value_size > size)
      size = m->value_size;
  }
  MapSym *m = calloc(1, sizeof(*m));
  m->name = strdup(ZERO_MAP_NAME);
  m->id = out->nmaps;
  m->key_size = 4;
  m->value_type = ty_int(8, false);
  m->value_size = size;
  m->bpf_type = BPF_MAP_TYPE_ARRAY;
  m->max_entries = 1;
  m->fd = -1;
  m->internal = true;
  out->maps = realloc(out->maps, sizeof(MapSym *) * (out->nmaps + 1));
  out->maps[out->nmaps++] = m;
}

/* Whether any expression of the script reads `name`. */
static bool uses_builtin(Node *n, const char *name) {
  for (; n; n = n->next) {
    if (n->kind == N_BUILTIN && strcmp(n->name, name) == 0) return true;
    if (uses_builtin(n->lhs, name) || uses_builtin(n->rhs, name) ||
        uses_builtin(n->cond, name) || uses_builtin(n->then, name) ||
        uses_builtin(n->els, name) || uses_builtin(n->args, name) ||
        uses_builtin(n->body, name))
      return true;
  }
  return false;
}

/* A setting from the config block, else the environment, else `dflt`;
 * each setting has the names bpftrace's versions have used. */
static int64_t setting(Checker *c, const char *const names[], int64_t dflt,
                       int64_t lo, int64_t hi) {
  int64_t v = dflt;
  for (int i = 0; names[i]; i++) {
    const char *env = getenv(names[i]);
    if (env && *env) v = strtoll(env, NULL, 0);
  }
  for (ConfigItem *it = c->script->config; it; it = it->next)
    for (int i = 0; names[i]; i++)
      if (!strcasecmp(it->key, names[i])) {
        if (it->value->kind != N_INT) {
          diag_error(c->d, it->value->span, "%s must be an integer",
                     it->key);
        } else {
          v = it->value->ival;
        }
      }
  if (v < lo || v > hi) {
    diag_error(c->d, (Span){0}, "%s must be between %lld and %lld (it is "
               "%lld)", names[0], (long long)lo, (long long)hi,
               (long long)v);
    v = dflt;
  }
  return v;
}

static void read_settings(Checker *c) {
  static const char *const strlen_names[] = {
      "BPFTRACE_STRLEN", "BPFTRACE_MAX_STRLEN", "max_strlen", NULL};
  static const char *const keys_names[] = {
      "BPFTRACE_MAP_KEYS_MAX", "BPFTRACE_MAX_MAP_KEYS", "max_map_keys", NULL};
  c->strlen = (int)setting(c, strlen_names, DEFAULT_STRLEN, 1, 1024);
  c->map_keys = (int)setting(c, keys_names, DEFAULT_MAP_KEYS, 1, 1 << 24);
  for (ConfigItem *it = c->script->config; it; it = it->next) {
    bool known = false;
    for (int i = 0; strlen_names[i]; i++)
      known |= !strcasecmp(it->key, strlen_names[i]) ||
               !strcasecmp(it->key, keys_names[i]);
    if (!known)
      diag_warning(c->d, it->span, "loupe ignores the config setting %s",
                   it->key);
  }
}

int check_script(Script *s, Compiled *out, Diag *d) {
  Checker c = {.d = d, .out = out, .script = s};
  read_settings(&c);
  if (ctype_define_script_structs(s, d) > 0) return -1;
  int errors_before = d->errors;
  for (c.pass = 1; c.pass <= 2; c.pass++) {
    for (Probe *p = s->probes; p; p = p->next) {
      p->uses_args = p->uses_probe = p->uses_ctx = false;
      check_probe(&c, p);
    }
  }
  for (int i = 0; i < out->nmaps; i++) {
    MapSym *m = out->maps[i];
    if (m->value_type.kind == TY_NONE && d->errors == errors_before)
      diag_error(d, m->first_use, "Undefined map: %s", m->name);
    map_layout(m);
  }
  bool big_values = false;
  for (int i = 0; i < out->nmaps; i++)
    big_values |= out->maps[i]->value_type.kind == TY_AGG &&
                  out->maps[i]->value_size > 16;
  if (big_values) add_zero_map(out);
  for (Probe *p = s->probes; p; p = p->next)
    if (uses_builtin(p->pred, "elapsed") || uses_builtin(p->body, "elapsed")) {
      add_elapsed_base(out);
      break;
    }
  return d->errors > errors_before ? -1 : 0;
}
