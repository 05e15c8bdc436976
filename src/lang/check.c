/* check: gives every expression a type, creates the maps and printf record
 * layouts, and reports every user mistake before anything touches the
 * kernel.
 *
 * The script is walked twice. Maps are global and may be read in one probe
 * before the probe that assigns them, so the first pass only learns map
 * value types (quietly); the second pass checks everything and reports. */
#include "lang/check.h"
#include "lang/checker.h"
#include "builtins/builtin.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "lang/ctype.h"
#include "probes/provider.h"

/* ---- reporting ------------------------------------------------------ */

/* Errors are reported in the second pass only; the first is a dry run. */
void error_at(Checker *c, Span at, const char *fmt, ...) {
  if (c->pass != 2) return;
  va_list ap;
  va_start(ap, fmt);
  diag_verror(c->d, at, fmt, ap);
  va_end(ap);
}

/* ---- symbols -------------------------------------------------------- */

MapSym *map_find(Compiled *out, const char *name) {
  for (int i = 0; i < out->nmaps; i++)
    if (strcmp(out->maps[i]->name, name) == 0) return out->maps[i];
  return NULL;
}

MapSym *map_get(Checker *c, Node *n) {
  MapSym *m = map_find(c->out, n->name);
  if (m) return m;
  m = calloc(1, sizeof(*m));
  m->name = strdup(n->name);
  m->id = c->out->nmaps;
  m->first_use = n->span;
  m->nkeys = -1; /* not known until first used */
  m->max_entries = (uint32_t)c->map_keys;
  c->out->maps = realloc(c->out->maps, sizeof(MapSym *) * (c->out->nmaps + 1));
  c->out->maps[c->out->nmaps++] = m;
  return m;
}

/* Variables are seen within their frame: a for loop over a map runs its
 * body as a separate function, which sees only its own variables. Those
 * of a macro's expansion are its own too (Node.scope). */
static bool block_open(Checker *c, int block) {
  for (int i = 0; i < c->nopen; i++)
    if (c->open[i] == block) return true;
  return block == 0;
}

/* A variable is seen in the block it was declared in (by let or its first
 * assignment) and the blocks nested in it, as bpftrace scopes them. */
static VarSym *var_in_frame(Checker *c, const Node *var, int frame) {
  for (VarSym *v = c->probe->vars; v; v = v->next)
    if (strcmp(v->name, var->name) == 0 && v->frame == frame &&
        v->scope == var->scope && block_open(c, v->block))
      return v;
  return NULL;
}

/* A for-over-map body sees the variables of the frames around it through
 * a variable of its own that stands for each (VarSym.outer). */
static VarSym *var_captured(Checker *c, const Node *var, int frame) {
  VarSym *v = var_in_frame(c, var, frame);
  int max = (int)(sizeof c->frame_parent / sizeof c->frame_parent[0]);
  if (v || frame == 0 || frame >= max) return v;
  VarSym *outer = var_captured(c, var, c->frame_parent[frame]);
  if (!outer) return NULL;
  v = calloc(1, sizeof(*v));
  v->name = strdup(var->name);
  v->scope = var->scope;
  v->frame = frame;
  v->type = outer->type;
  v->decl = outer->decl;
  v->int_width = outer->int_width;
  v->outer = outer;
  v->next = c->probe->vars;
  c->probe->vars = v;
  return v;
}

VarSym *var_find(Checker *c, const Node *var) {
  return var_captured(c, var, c->frame);
}

/* A variable and the ones standing for it in loop bodies have one type:
 * the longest string, or the widest tuple, any of them holds (their
 * copies between frames have one size). */
static void var_unify_captured(Probe *p) {
  for (bool changed = true; changed;) {
    changed = false;
    for (VarSym *v = p->vars; v; v = v->next) {
      VarSym *o = v->outer;
      if (!o) continue;
      Type *from = NULL, *to = NULL;
      if (o->type.kind == TY_NONE && v->type.kind != TY_NONE)
        from = &v->type, to = &o->type;
      else if (v->type.kind == TY_NONE && o->type.kind != TY_NONE)
        from = &o->type, to = &v->type;
      else if (v->type.kind == TY_STR && o->type.kind == TY_STR &&
               v->type.size != o->type.size)
        from = v->type.size > o->type.size ? &v->type : &o->type,
        to = from == &v->type ? &o->type : &v->type;
      else if (v->type.kind == TY_TUPLE && o->type.kind == TY_TUPLE &&
               !same_layout(v->type, o->type) &&
               tuple_union(v->type, o->type, &o->type))
        from = &o->type, to = &v->type;
      if (!from) continue;
      *to = *from;
      changed = true;
    }
  }
}

/* Whether $name (of macro scope `scope`) is one the first pass found read
 * after the block it was assigned in (Probe.wide). */
static bool var_is_wide(Checker *c, const char *name, int scope) {
  for (int i = 0; i < c->probe->nwide; i++)
    if (!strcmp(c->probe->wide[i].name, name) && c->probe->wide[i].scope == scope)
      return true;
  return false;
}

/* A read of $x that no visible variable answers, in the first pass: if an
 * assignment (never a let) made $x in a block that has ended, bpftrace
 * 0.17, whose variables belong to the whole probe, reads that variable.
 * The name is noted, and in the second pass it is one variable for the
 * whole probe, with a warning. Returns the variable the block made (whose
 * type the dry run goes on with), or NULL. */
VarSym *var_note_wide(Checker *c, const Node *var) {
  if (c->frame != 0) return NULL;
  VarSym *assigned = NULL;
  for (VarSym *v = c->probe->vars; v; v = v->next) {
    if (strcmp(v->name, var->name) || v->scope != var->scope) continue;
    if (v->let) return NULL;   /* declared with let: scoped on purpose */
    if (v->frame == 0 && !assigned) assigned = v;
  }
  if (!assigned || var_is_wide(c, var->name, var->scope)) return assigned;
  Probe *p = c->probe;
  p->wide = realloc(p->wide, sizeof(*p->wide) * (p->nwide + 1));
  p->wide[p->nwide++] = (struct WideVar){var->name, var->scope, var->span};
  return assigned;
}

VarSym *var_new(Checker *c, const Node *var) {
  VarSym *v = calloc(1, sizeof(*v));
  v->block = c->nopen ? c->open[c->nopen - 1] : 0;
  if (c->frame == 0 && var_is_wide(c, var->name, var->scope)) {
    v->block = 0;
    v->probe_wide = true;
  }
  v->name = strdup(var->name);
  v->scope = var->scope;
  v->frame = c->frame;
  v->next = c->probe->vars;
  c->probe->vars = v;
  /* a tuple variable holds the widest tuple assigned to it anywhere, and
   * reads before the widening assignment see that type too */
  for (VarSym *l = c->learnt_vars; l; l = l->next)
    if (l->type.kind == TY_TUPLE && !strcmp(l->name, v->name) &&
        l->frame == v->frame && l->scope == v->scope && l->block == v->block)
      v->type = l->type;
  return v;
}

/* ---- probe context -------------------------------------------------- */

/* Longest `probe` name among the probe's targets, for the string size. */
int probe_name_size(Probe *p) {
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

/* Longest function name among the probe's targets, for `func`. */
int func_name_size(Probe *p) {
  int size = 1;
  for (AttachPoint *ap = p->aps; ap; ap = ap->next)
    for (Target *t = ap->targets; t; t = t->next)
      if (t->event && (int)strlen(t->event) + 1 > size)
        size = (int)strlen(t->event) + 1;
  return size;
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

/* What a key expression is called, for the labels of metrics: a builtin
 * (comm), a field (args.filename), or str() of either; else NULL. */
static const char *key_expr_name(const Node *k) {
  if (k->kind == N_CALL && !strcmp(k->name, "str") && k->args &&
      !k->args->next)
    k = k->args;
  return k->kind == N_BUILTIN || k->kind == N_FIELD ? k->name : NULL;
}

/* The names of a tuple key's parts, where it is written out: (comm, pid). */
static void tuple_key_names(const Node *tuple, const char **names) {
  int i = 0;
  for (const Node *e = tuple->kind == N_TUPLE ? tuple->args : NULL;
       e && i < MAX_MAP_KEYS; e = e->next)
    names[i++] = key_expr_name(e);
  if (tuple->kind != N_TUPLE) names[0] = NULL;
}

/* A key position whose expressions are named differently at two uses. */
static const char KEY_NAMES_DIFFER[] = "";

/* Records the names of a use's keys (names[i], NULL: unnamed) in m: a
 * position keeps its name while every use gives it the same. */
static void map_key_names(MapSym *m, const char **names, int n, bool first) {
  for (int i = 0; i < n; i++) {
    const char *had = m->key_names[i];
    if (first)
      m->key_names[i] = names[i];
    else if (had != KEY_NAMES_DIFFER &&
             (!had || !names[i] || strcmp(had, names[i])))
      m->key_names[i] = KEY_NAMES_DIFFER;
  }
}

/* Checks the keys of @m[k...] and unifies them with earlier uses. */
void check_map_keys(Checker *c, Node *n) {
  MapSym *m = map_get(c, n);
  n->map = m;
  Type keys[MAX_MAP_KEYS];
  const char *names[MAX_MAP_KEYS] = {NULL};
  int nkeys = 0;
  for (Node *k = n->args; k; k = k->next) {
    check_expr(c, k);
    if (nkeys == MAX_MAP_KEYS) {
      error_at(c, k->span, "a map key can have at most %d parts",
               MAX_MAP_KEYS);
      return;
    }
    /* a struct in memory is copied into the key */
    Type kt = k->type.kind == TY_RECORD ? ty_stored(k->type) : k->type;
    if (kt.kind != TY_INT && kt.kind != TY_STR && kt.kind != TY_BUF &&
        kt.kind != TY_TUPLE && kt.kind != TY_CVAL) {
      if (kt.kind != TY_NONE)
        error_at(c, k->span, "%s can not be used as a map key",
                 TYPE_NAME(kt));
      return;
    }
    names[nkeys] = key_expr_name(k);
    keys[nkeys++] = kt;
  }

  /* @m[(a, b)] is @m[a, b]: a map first keyed by one tuple takes its
   * parts as its keys, so that both spellings name the same entry */
  if (m->nkeys < 0 && nkeys == 1 && keys[0].kind == TY_TUPLE &&
      !keys[0].tuple->names && keys[0].tuple->n > 1 &&
      keys[0].tuple->n <= MAX_MAP_KEYS) {
    nkeys = keys[0].tuple->n;
    memcpy(keys, keys[0].tuple->elems, sizeof(Type) * nkeys);
    n->ival = 1;   /* codegen: one tuple gives all the keys */
    tuple_key_names(n->args, names);
  }
  if (m->nkeys < 0) {
    m->nkeys = nkeys;
    map_key_names(m, names, nkeys, true);
    memcpy(m->key_types, keys, sizeof(Type) * nkeys);
    for (int i = 0; i < nkeys; i++)
      if (keys[i].kind == TY_INT) m->key_types[i] = ty_widened(keys[i]);
    return;
  }
  /* @m[a, b] and @m[$t] with $t = (a, b) name the same entry */
  if (nkeys == 1 && keys[0].kind == TY_TUPLE && m->nkeys > 1 &&
      keys[0].tuple->n == m->nkeys && !keys[0].tuple->names) {
    nkeys = m->nkeys;
    memcpy(keys, keys[0].tuple->elems, sizeof(Type) * nkeys);
    n->ival = 1;   /* codegen: one tuple gives all the keys */
    tuple_key_names(n->args, names);
  }
  bool same = m->nkeys == nkeys;
  for (int i = 0; same && i < nkeys; i++) {
    same = m->key_types[i].kind == keys[i].kind &&
           (keys[i].kind == TY_STR || keys[i].kind == TY_INT ||
            same_layout(keys[i], m->key_types[i]) ||
            tuple_union(m->key_types[i], keys[i], &keys[i])) &&
           same_stack(keys[i], m->key_types[i]);
  }
  if (!same) {
    char want[200], got[200];
    error_at(c, n->span,
             "Argument mismatch for %s: trying to access with arguments: %s "
             "when map expects arguments: %s",
             m->name, key_list_name(keys, nkeys, got, sizeof(got)),
             key_list_name(m->key_types, m->nkeys, want, sizeof(want)));
    return;
  }
  map_key_names(m, names, nkeys, false);
  for (int i = 0; i < nkeys; i++)
    if ((keys[i].kind == TY_STR && keys[i].size > m->key_types[i].size) ||
        keys[i].kind == TY_TUPLE)
      m->key_types[i] = keys[i];
}

/* Records that m holds values of type t, from an assignment to the map
 * at `at` whose operator is at op (where tuple mismatches point). */
void map_set_value(Checker *c, MapSym *m, Type t, Span at, Span op) {
  if (t.kind == TY_NONE) return;
  t = ty_stored(t);
  if (t.kind != TY_INT && t.kind != TY_STR && t.kind != TY_AGG &&
      t.kind != TY_TUPLE && t.kind != TY_BUF && t.kind != TY_CVAL) {
    error_at(c, at, "%s can not be stored in a map", TYPE_NAME(t));
    return;
  }
  Type *v = &m->value_type;
  if (v->kind == TY_NONE) {
    *v = t;
    return;
  }
  if (v->kind == TY_TUPLE && t.kind == TY_TUPLE && !same_layout(*v, t)) {
    if (!tuple_union(*v, t, v))
      error_at(c, op, "Tuple type mismatch: %s != %s.", TYPE_NAME(*v),
               TYPE_NAME(t));
    return;
  }
  bool same = v->kind == t.kind && (t.kind != TY_AGG || v->agg == t.agg) &&
              ((t.kind != TY_BUF && t.kind != TY_CVAL) ||
               same_layout(*v, t)) && same_stack(*v, t);
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

/* ---- calls ---------------------------------------------------------- */

int count_args(Node *n) {
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

bool want_args(Checker *c, Node *n, int min, int max) {
  int k = count_args(n);
  if (k >= min && (max < 0 || k <= max)) return true;
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
bool want_int(Checker *c, Node *n, Node *arg) {
  if (arg->type.kind == TY_INT || arg->type.kind == TY_NONE) return true;
  error_at(c, n->span, "%s() only supports integer arguments (%s provided)",
           n->name, kind_name(arg->type));
  return false;
}

bool want_map(Checker *c, Node *call, Node *arg, bool keys_allowed) {
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

/* Adds a PrintfDef (second pass only) and returns its id, or -1. */
int add_printf_def(Checker *c, PrintfDef def) {
  if (c->pass != 2) return -1;
  c->out->printfs = realloc(c->out->printfs,
                            sizeof(PrintfDef) * (c->out->nprintfs + 1));
  c->out->printfs[c->out->nprintfs] = def;
  return c->out->nprintfs++;
}

/* A literal integer, possibly negated. */
bool const_int(Node *n, int64_t *v) {
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

bool want_const(Checker *c, Node *arg, const char *fn, const char *what,
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

bool want_unsafe(Checker *c, Node *n) {
  if (c->script->settings->unsafe) return true;
  error_at(c, n->span, "%s() is an unsafe function; run loupe with --unsafe "
           "to allow it", n->name);
  return false;
}

bool want_tracing_probe(Checker *c, Node *n, const char *helper,
                        bool raw_tp_too) {
  const AttachPoint *first = c->probe->aps;
  const Provider *prov = first ? ap_provider(first) : NULL;
  /* an iterator's probe (its context is its args): its other attach
   * points, BEGIN and END, do not stop it */
  if (PROBE_ALL(c->probe, tracing_helpers, true) ||
      (prov && prov->ctx_is_args))
    return true;
  if (raw_tp_too && PROBE_ALL(c->probe, tracing_on_demand, true)) {
    c->probe->wants_tracing = true;   /* loaded as tp_btf */
    return true;
  }
  error_at(c, n->span, "%s() can only be used in fentry, fexit%s and iter "
           "probes (the kernel allows its %s helper in those alone)",
           n->name, raw_tp_too ? ", rawtracepoint" : "", helper);
  return false;
}

/* ---- probes and the script ------------------------------------------ */

static void check_probe(Checker *c, Probe *p) {
  c->probe = p;
  c->frame = c->nframes = 0;
  c->nblocks = c->nopen = 0;
  c->learnt_vars = c->pass == 2 ? p->vars : NULL;
  p->vars = NULL;
  if (c->pass == 1) p->nwide = 0;
  for (int i = 0; c->pass == 2 && i < p->nwide; i++)
    diag_warning(c->d, p->wide[i].first_read,
                 "%s is read after the block it was assigned in: as bpftrace "
                 "0.17 does, loupe makes it one variable for the whole "
                 "probe, 0 until assigned (current bpftrace refuses this; "
                 "declare it with let before the block)", p->wide[i].name);
  if (p->pred) {
    check_expr(c, p->pred);
    if (p->pred->type.kind != TY_INT && p->pred->type.kind != TY_NONE)
      error_at(c, p->pred->span, "a predicate must be an integer, got %s",
               TYPE_NAME(p->pred->type));
  }
  check_block(c, p->body);
  var_unify_captured(p);
  /* what a bare `let $x;` holds is learnt from later assignments: the
   * second pass starts from it */
  for (VarSym *v = p->vars; v; v = v->next)
    if (v->let && v->type.kind != TY_NONE) v->let->type = v->type;
}

/* Whether keyless aggregation m lives in a one-slot per-CPU array, not a
 * per-CPU hash: the verifier inlines an array's lookup, which never
 * misses, so an update needs no insertion path. An all-zero slot is no
 * value (runtime/map_read.c): right for a count, a min or max, an
 * average or stats (a count of their values) and a histogram, wrong for a
 * sum, which may be 0; and an array cannot delete. */
static bool keyless_array(const MapSym *m) {
  if (m->nkeys != 0 || m->may_miss) return false;
  switch (m->value_type.agg) {
  case AGG_COUNT: case AGG_MIN: case AGG_MAX: case AGG_AVG: case AGG_STATS:
  case AGG_HIST: case AGG_LHIST:
    return true;
  default:
    return false;
  }
}

/* Whether plain keyless map m lives in a one-slot array that programs
 * address directly, with no lookup and no update call: it must hold an
 * integer, never miss (no delete() or has_key()), and not report missing
 * entries (-k). A flag after the value says whether it was ever set. */
static bool keyless_direct(const Checker *c, const MapSym *m) {
  return m->nkeys == 0 && !m->may_miss && m->value_type.kind == TY_INT &&
         !c->script->settings->helper_errors;
}

/* Key offsets and value sizes, once every use has been seen. */
static void map_layout(const Checker *c, MapSym *m) {
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
    m->value_size = agg_ops(v.agg)->value_size(m);
    if (keyless_array(m)) {
      m->bpf_type = BPF_MAP_TYPE_PERCPU_ARRAY;
      m->key_size = 4;
    }
  } else if (keyless_direct(c, m)) {
    m->bpf_type = BPF_MAP_TYPE_ARRAY;
    m->key_size = 4;
    m->value_size = 16;
    m->direct = true;
  } else {
    m->bpf_type = BPF_MAP_TYPE_HASH;
    m->value_size = value_cap(v);
  }
}

/* The settings lang/config.c read that check and the runtime act on. */
static void read_settings(Checker *c) {
  const Settings *st = c->script->settings;
  c->strlen = st->max_strlen;
  c->map_keys = st->max_map_keys;
  c->out->license = st->license;
  c->out->no_exit_print = !st->print_maps_on_exit;
  c->out->max_cat_bytes = st->max_cat_bytes;
  c->out->max_strlen = st->max_strlen;
  c->out->str_trailer = st->str_trunc_trailer;
  c->out->perf_rb_pages = st->perf_rb_pages;
  if (st->perf_rb_pages > 0)
    c->out->ringbuf_size = (uint32_t)st->perf_rb_pages *
                           (uint32_t)sysconf(_SC_PAGESIZE);
}

/* A hash map that is full refuses new keys (an LRU one evicts): each
 * gets a counter of the updates it refused, which user space turns into
 * a warning, as bpftrace warns. A keyless map, with its one key, is
 * never full. A stack map that has no room for a new stack (its bucket
 * holds another) gets one too: the stack would print empty, silently.
 * Slot 0 counts lost events; slot 1 holds the constant 1. */
static void add_map_full_counters(Checker *c) {
  c->out->ncounts = COUNT_SLOT_ONE + 1;
  if (c->d->no_warnings) return;
  for (int i = 0; i < c->out->nmaps; i++) {
    MapSym *m = c->out->maps[i];
    bool stacks = m->internal && m->bpf_type == BPF_MAP_TYPE_STACK_TRACE;
    if (!stacks && (m->internal || m->nkeys == 0 ||
                    (m->bpf_type != BPF_MAP_TYPE_HASH &&
                     m->bpf_type != BPF_MAP_TYPE_PERCPU_HASH)))
      continue;
    m->full_slot = c->out->ncounts++;
  }
}

int check_script(Script *s, Compiled *out, Diag *d) {
  Checker c = {.d = d, .out = out, .script = s};
  options_split(s);
  read_settings(&c);
  /* enum values first: they size the enum types */
  int type_errors = check_script_enums(s, d);
  type_errors += check_map_decls(s, d);
  if (ctype_define_script_structs(s, d) + type_errors > 0) return -1;
  int errors_before = d->errors;
  for (c.pass = 1; c.pass <= 2; c.pass++) {
    for (Probe *p = s->probes; p; p = p->next) {
      p->uses_args = p->uses_probe = p->uses_ctx = false;
      p->uses_target_name = false;
      check_probe(&c, p);
    }
    /* probes missing_probes removed: only the maps they use */
    for (Probe *p = s->dropped; p && c.pass == 1; p = p->next)
      check_probe(&c, p);
  }
  if (d->errors == errors_before) options_report_unused(s, d);
  for (int i = 0; i < out->nmaps; i++) {
    MapSym *m = out->maps[i];
    if (m->internal) continue;   /* laid out when made (stack maps) */
    if (m->value_type.kind == TY_NONE && d->errors == errors_before)
      diag_error(d, m->first_use, "Undefined map: %s", m->name);
    map_layout(&c, m);
    /* A keyless map holds one entry: the kernel preallocates max_entries
     * of them as it creates a hash map (0.6 ms for 4096), so ask for one
     * (a declaration still sets its own size). */
    if (m->nkeys == 0) m->max_entries = 1;
  }
  if (d->errors == errors_before) apply_map_decls(s, out, d);
  if (d->errors == errors_before) add_map_full_counters(&c);
  return d->errors > errors_before ? -1 : 0;
}
