/* maps: the builtins that act on a whole map or one of its entries —
 * print(), clear(), zero(), delete(), has_key() and len(). Those on the
 * whole map (print, clear, zero) are done by user space on a record from
 * the probe; the others are map helpers in the kernel. */
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "output/encoder.h"
#include "runtime/print.h"

/* ---- checks ---------------------------------------------------------- */

/* The whole-map argument of print(), clear(), zero() and len(): NULL
 * when it is not a map; a map not known yet is reported. */
static MapSym *whole_map(Checker *c, Node *n) {
  if (!want_map(c, n, n->args, false)) return NULL;
  MapSym *m = map_get(c, n->args);
  n->args->map = m;
  if (m->value_type.kind == TY_NONE)
    error_at(c, n->args->span, "Undefined map: %s", m->name);
  return m;
}

/* print(value): any value but a whole map, printed as its type says. */
static void check_print_value(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->next) {
    error_at(c, n->span, "print() of a value takes one argument (%d "
             "provided)", count_args(n));
    return;
  }
  check_expr(c, a);
  Type t = ty_stored(a->type);
  if (t.kind == TY_NONE) return;
  if (t.kind != TY_INT && t.kind != TY_STR && t.kind != TY_TUPLE &&
      t.kind != TY_BUF && t.kind != TY_CVAL) {
    error_at(c, a->span, "print() can not print %s yet", TYPE_NAME(t));
    return;
  }
  PrintfDef def = {.nargs = 1, .span = n->span, .size = value_cap(t)};
  def.args[0].type = t.kind == TY_INT ? ty_widened(t) : t;
  def.args[0].type.is_pointer = t.is_pointer;
  n->printf_id = add_printf_def(c, def);
}

/* print(@m[, top[, div]]) prints a whole map; anything else is a value. */
static void check_print(Checker *c, Node *n) {
  if (n->args->kind != N_MAP || n->args->args) {
    n->ival = 1;   /* a value */
    check_print_value(c, n);
    return;
  }
  if (!whole_map(c, n)) return;
  int64_t v;
  Node *top = n->args->next;
  if (top && !want_const(c, top, n->name, "top", 0, INT32_MAX, &v)) return;
  if (top && top->next)
    want_const(c, top->next, n->name, "div", 1, INT32_MAX, &v);
}

static void check_clear(Checker *c, Node *n) { whole_map(c, n); }

static void check_len(Checker *c, Node *n) {
  if (stack_check_len(c, n)) return;
  MapSym *m = whole_map(c, n);
  if (m && m->nkeys == 0) {
    error_at(c, n->span, "call to len() expects a map with explicit keys "
             "(non-scalar map); %s holds one value", m->name);
    return;
  }
  if (m && m->value_type.kind != TY_NONE) n->type = ty_int(8, false);
}

/* delete(@m, k) and has_key(@m, k), today's spelling, become the
 * delete(@m[k]) form; a tuple (k1, k2) names the keys of a map with
 * several. */
static void key_into_map(Node *n) {
  Node *m = n->args, *k = m->next;
  if (!k || m->kind != N_MAP || m->args) return;
  Node *keyed = node_new(N_MAP, m->span);
  keyed->name = m->name;
  keyed->span.end_col = k->span.end_col;
  keyed->args = k->kind == N_TUPLE ? k->args : k;
  if (k->kind != N_TUPLE) k->next = NULL;
  n->args = keyed;
}

/* delete(@m[k]) and has_key(@m[k]): one entry. False when the argument
 * is not a map; a map not known yet is reported. */
static bool want_entry(Checker *c, Node *n) {
  key_into_map(n);
  if (!want_map(c, n, n->args, true)) return false;
  MapSym *known = map_find(c->out, n->args->name);
  if (known && known->nkeys == 0 && n->args->args) {
    error_at(c, n->span, "call to %s() expects a map with explicit keys "
             "(non-scalar map); %s holds one value", n->name, known->name);
    n->type = ty_bool();   /* one error is enough */
    return false;
  }
  if (n->args->next) {
    error_at(c, n->args->next->span, "%s() takes a map and a key",
             n->name);
    return false;
  }
  check_map_keys(c, n->args);
  if (n->args->map->value_type.kind == TY_NONE)
    error_at(c, n->args->span, "Undefined map: %s", n->args->map->name);
  return true;
}

/* delete(): true if the entry was there (and is now gone). Where its
 * value is not used, a key that was not there is warned of at run time,
 * as bpftrace's reference says (n->ival: the warning's PrintfDef is
 * n->printf_id): once for each place, and how many more at exit, since
 * the tools written before delete() had a value (runqlat.bt) delete
 * absent keys on most events (-k reports each). */
static void check_delete(Checker *c, Node *n) {
  n->ival = 0;
  if (!want_entry(c, n)) return;
  n->type = ty_bool();
  n->args->map->may_miss = true;   /* so it stays a hash (map_layout) */
  if (c->pass != 2 || c->d->no_warnings) return;
  PrintfDef def = {.fmt = "Can't delete map element because it does not "
                          "exist.\n",
                   .span = n->span};
  def.prefix = diag_prefix(c->d, n->span, "WARNING");
  def.once = true;
  n->printf_id = add_printf_def(c, def);
  n->ival = n->printf_id >= 0;
}

static void check_has_key(Checker *c, Node *n) {
  if (n->args->kind == N_MAP && !n->args->args && !n->args->next) {
    /* has_key(@m): a map without keys always has its one value */
    error_at(c, n->span, "call to has_key() expects a map with explicit "
             "keys (non-scalar map); %s holds one value", n->args->name);
    n->type = ty_bool();
    return;
  }
  if (!want_entry(c, n)) return;
  n->type = ty_bool();
  n->args->map->may_miss = true;
}

/* ---- code ------------------------------------------------------------ */

/* print(@m[, top[, div]]): user space prints; the record says how.
 * print(value): the value goes out in a record of its own. */
static bool emit_print(Gen *g, Node *n) {
  if (n->ival) {
    emit_record(g, n, n->args, EV_PRINT_VALUE);
    return false;
  }
  Node *top = n->args->next;
  Node *div = top ? top->next : NULL;
  OutRec r = record_begin(g, (int)sizeof(EventHeader) + 16, true, false);
  emit_header_at(g, r.base, r.off, EV_PRINT_MAP, (uint32_t)n->args->map->id);
  int payload = r.off + (int)sizeof(EventHeader);
  emit(g, I_ST(BPF_DW, r.base, payload, top ? (int32_t)top->ival : 0));
  emit(g, I_ST(BPF_DW, r.base, payload + 8, div ? (int32_t)div->ival : 0));
  record_end(g, &r);
  return false;
}

static bool emit_clear(Gen *g, Node *n) {
  emit_event(g, EV_CLEAR_MAP, (uint32_t)n->args->map->id);
  return false;
}

static bool emit_zero_map(Gen *g, Node *n) {
  emit_event(g, EV_ZERO_MAP, (uint32_t)n->args->map->id);
  return false;
}

static void emit_delete_call(Gen *g, Node *n) {
  int key = gen_key(g, n->args);
  emit_map(g, BPF_REG_1, n->args->map->id);
  emit_scratch(g, BPF_REG_2, key);
  emit_call(g, BPF_FUNC_map_delete_elem);
}

/* delete() as a statement: a key that was not there is warned of (with
 * -k the helper's failure is reported instead). */
static bool emit_delete(Gen *g, Node *n) {
  emit_delete_call(g, n);
  if (!n->ival && !g->st->helper_errors) return false;
  int deleted = emit_jump(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 0));
  if (g->st->helper_errors)
    emit_helper_error(g, BPF_FUNC_map_delete_elem);
  else
    emit_event(g, EV_WARNF, (uint32_t)n->printf_id);
  patch_here(g, deleted);
  return false;
}

/* delete() as a value: the helper returns 0 once the entry is deleted. */
static int emit_delete_value(Gen *g, Node *n) {
  emit_delete_call(g, n);
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 0));
  emit(g, I_JMP_IMM(BPF_JNE, BPF_REG_0, 0, 1));
  emit(g, I_MOV64_IMM(r, 1));
  return r;
}

static int emit_has_key(Gen *g, Node *n) {
  int key = gen_key(g, n->args);
  emit_lookup(g, n->args->map, key);
  int r = reg_alloc(g);
  emit(g, I_MOV64_IMM(r, 0));
  emit(g, I_JMP_IMM(BPF_JEQ, BPF_REG_0, 0, 1));
  emit(g, I_MOV64_IMM(r, 1));
  return r;
}

/* len(@m): the entries counted by a callback over the map (SUB_COUNT). */
static int emit_len(Gen *g, Node *n) {
  if (n->args->type.named == NAMED_KSTACK ||
      n->args->type.named == NAMED_USTACK)
    return stack_emit_len(g, n);
  int slot = stack_alloc(g, 8);
  emit(g, I_ST(BPF_DW, BPF_REG_10, slot, 0));
  emit_map(g, BPF_REG_1, n->args->map->id);
  int at = emit(g, I_LD_IMM64_LO(BPF_REG_2, BPF_PSEUDO_FUNC, 0));
  emit(g, I_LD_IMM64_HI(0));
  int *cnt = &g->nsubcalls[SUB_COUNT];
  g->subcalls[SUB_COUNT] =
      realloc(g->subcalls[SUB_COUNT], sizeof(int) * (*cnt + 1));
  g->subcalls[SUB_COUNT][(*cnt)++] = at;
  emit(g, I_MOV64_REG(BPF_REG_3, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_3, slot));
  emit(g, I_MOV64_IMM(BPF_REG_4, 0));
  emit_call(g, BPF_FUNC_for_each_map_elem);
  int r = reg_alloc(g);
  emit(g, I_LDX(BPF_DW, r, BPF_REG_10, slot));
  return r;
}

/* ---- user space ------------------------------------------------------ */

static const MapSym *record_map(const EventCtx *e, uint32_t index) {
  return index < (uint32_t)e->c->nmaps ? e->c->maps[index] : NULL;
}

/* The payload holds { int64 top; int64 div }. */
static void on_print(const EventCtx *e, uint32_t index,
                     const uint8_t *payload, size_t size) {
  const MapSym *m = record_map(e, index);
  if (!m) return;
  int64_t top = 0, div = 0;
  if (size >= 16) {
    memcpy(&top, payload, 8);
    memcpy(&div, payload + 8, 8);
  }
  output_map(e->output, m, &e->l->maps[index], top, div);
}

/* The value, on a line of its own. */
static void on_print_value(const EventCtx *e, uint32_t index,
                           const uint8_t *payload, size_t size) {
  if (index >= (uint32_t)e->c->nprintfs) return;
  const PrintfDef *p = &e->c->printfs[index];
  /* print()'s definitions alone hold one value and no format */
  if (size < (size_t)p->size || p->fmt || p->nargs != 1) return;
  ValueArena a = {0};
  Value v;
  decode_value(&a, &p->args[0].type, payload, p->size, 1, &v);
  output_event(e->output, "value", &v, true);
  value_arena_free(&a);
}

static void on_clear(const EventCtx *e, uint32_t index,
                     const uint8_t *payload, size_t size) {
  const MapSym *m = record_map(e, index);
  if (m) map_clear(m, &e->l->maps[index]);
}

static void on_zero(const EventCtx *e, uint32_t index,
                    const uint8_t *payload, size_t size) {
  const MapSym *m = record_map(e, index);
  if (m) map_zero(m, &e->l->maps[index]);
}

const Builtin builtins_maps[] = {
    {.name = "print", .form = BI_CALL, .min_args = 1, .max_args = 3,
     .check = check_print, .emit_stmt = emit_print, .event = EV_PRINT_MAP,
     .on_event = on_print},
    /* the records print(value) sends: a name no script can call */
    {.name = "print value", .form = BI_CALL, .min_args = 1, .max_args = 3,
     .event = EV_PRINT_VALUE, .on_event = on_print_value},
    {.name = "clear", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_clear, .emit_stmt = emit_clear, .event = EV_CLEAR_MAP,
     .on_event = on_clear},
    {.name = "zero", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .check = check_clear, .emit_stmt = emit_zero_map, .event = EV_ZERO_MAP,
     .on_event = on_zero},
    {.name = "delete", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_delete, .emit_int = emit_delete_value,
     .emit_stmt = emit_delete, .effects = true},
    {.name = "has_key", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .check = check_has_key, .emit_int = emit_has_key},
    {.name = "len", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_len, .emit_int = emit_len},
    {0},
};
