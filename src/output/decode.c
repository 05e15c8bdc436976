/* decode: maps and stored values as Values (see decode.h).
 *
 * Integers are narrowed to their type and divided by print()'s div; an
 * integer that reads as a name (a time, a symbol, an errno, an enum) gets
 * that text too; a string gets the trailer of a string str() cut. Keys
 * are decoded as stored: widened to 8 bytes, not narrowed, and a stack
 * key's frames are indented by 4 (a value's by 8), as bpftrace does. */
#include "output/decode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"
#include "runtime/map_read.h"
#include "runtime/print.h"
#include "runtime/print_stack.h"

/* Keeps the low `bits` bits of v (none: 0), sign-extending them when
 * `sign`. */
static uint64_t narrow_bits(uint64_t v, int bits, bool sign) {
  if (bits <= 0) return 0;
  if (bits >= 64) return v;
  v &= (UINT64_C(1) << bits) - 1;
  if (sign && v >> (bits - 1)) v |= ~UINT64_C(0) << bits;
  return v;
}

static bool is_stack(const Type *t) {
  return t->named == NAMED_KSTACK || t->named == NAMED_USTACK;
}

/* A stack value: bpftrace's lines (frames indented by `indent`), and the
 * frames' names when asked. */
static void decode_stack(ValueArena *a, const Type *t, uint64_t raw,
                         int indent, bool frames, Value *v) {
  memset(v, 0, sizeof *v);
  v->kind = VAL_STACK;
  v->user = t->named == NAMED_USTACK;
  const char *text = stack_text(t, raw, indent);
  v->text = value_strndup(a, text, strlen(text));
  if (!frames) return;
  char **names;
  int k = stack_frame_names(t, raw, &names);
  v->frames = k ? value_alloc(a, sizeof(char *) * (size_t)k) : NULL;
  for (int i = 0; i < k; i++) {
    if (v->frames) v->frames[i] = value_strndup(a, names[i], strlen(names[i]));
    free(names[i]);
  }
  free(names);
  v->nframes = v->frames ? k : 0;
}

/* ---- C values: structs, unions, arrays ---------------------------------- */

/* A little-endian integer of `size` bytes at p. */
static uint64_t load(const uint8_t *p, int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}


/* The named members of a struct or union, anonymous members' own ones as
 * if they were the outer one's. Counts them when v is NULL, else fills
 * v's elements from *at on. */
static int cval_members(ValueArena *a, const CType *ct, const uint8_t *p,
                        Value *v, const char **names, int at) {
  const CField *fs;
  int n = ctype_fields(ct, &fs);
  for (int i = 0; i < n; i++) {
    const CField *f = &fs[i];
    if (!f->name) {
      at = cval_members(a, f->type, p + f->offset, v, names, at);
      continue;
    }
    if (v) {
      names[at] = f->name;
      if (f->bit_size > 0) {
        uint64_t raw = load(p + f->offset, f->type->size) >> f->bit_offset;
        value_int(&v->elems[at],
                  narrow_bits(raw, f->bit_size, f->type->is_signed),
                  f->type->is_signed);
      } else {
        decode_cvalue(a, f->type, p + f->offset, &v->elems[at]);
      }
    }
    at++;
  }
  return at;
}

void decode_cvalue(ValueArena *a, const CType *ct, const void *mem,
                   Value *v) {
  const uint8_t *p = mem;
  memset(v, 0, sizeof *v);
  switch (ct->kind) {
  case C_INT:
  case C_ENUM:
    if (ct->is_bool) {
      value_int(v, p[0] != 0, false);
      v->hint = INT_BOOL;
      break;
    }
    value_int(v, narrow_bits(load(p, ct->size),
                             ct->size >= 8 ? 64 : ct->size * 8, ct->is_signed),
              ct->is_signed);
    break;
  case C_PTR: {
    char hex[24];
    uint64_t addr = load(p, 8);
    value_int(v, addr, false);
    v->hint = INT_POINTER;
    snprintf(hex, sizeof hex, "0x%" PRIx64, addr);
    v->text = value_strndup(a, hex, strlen(hex));
    break;
  }
  case C_ARRAY: {
    const CType *e = ct->target;
    /* a char array is a string up to its first NUL; an array of int8 or
     * uint8 (a cast such as (int8[])"abc", pton()'s bytes) its numbers */
    if (e && e->kind == C_INT && e->size == 1 && ct->nelems > 0 &&
        !e->is_bool && e->is_char) {
      value_str(a, v, (const char *)p, strnlen((const char *)p, ct->nelems));
      break;
    }
    int step = e ? e->size : 0;
    int n = step > 0 && ct->nelems > 0 ? ct->nelems : 0;
    if (!value_elems(a, v, VAL_ARRAY, n)) break;
    for (int i = 0; i < n; i++)
      decode_cvalue(a, e, p + i * step, &v->elems[i]);
    break;
  }
  case C_STRUCT:
  case C_UNION: {
    int n = cval_members(a, ct, p, NULL, NULL, 0);
    const char **names = value_alloc(a, sizeof(char *) * (size_t)(n + 1));
    if (!names || !value_elems(a, v, VAL_RECORD, n)) break;
    cval_members(a, ct, p, v, names, 0);
    v->names = names;
    break;
  }
  default:
    v->kind = VAL_NONE;   /* float, double: not shown */
    break;
  }
}

/* ---- values of script types --------------------------------------------- */

static void decode_typed(ValueArena *a, const Type *t, const uint8_t *p,
                         int stored, int64_t div, bool frames, Value *v);

static void decode_tuple(ValueArena *a, const TupleType *tt,
                         const uint8_t *p, int64_t div, bool frames,
                         Value *v) {
  if (!value_elems(a, v, tt->names ? VAL_RECORD : VAL_TUPLE, tt->n)) return;
  v->names = (const char *const *)tt->names;
  for (int i = 0; i < tt->n; i++) {
    int end = i + 1 < tt->n ? tt->offs[i + 1] : tt->size;
    decode_typed(a, &tt->elems[i], p + tt->offs[i], end - tt->offs[i], div,
                 frames, &v->elems[i]);
  }
}

/* An integer stored widened to 8 bytes (or `stored` bytes). */
static void decode_int(ValueArena *a, const Type *t, const uint8_t *p,
                       int stored, int64_t div, bool frames, Value *v) {
  char text[512];
  const char *s = NULL;
  if (t->kind == TY_INT) {
    uint64_t raw = (uint64_t)read_s64(p);
    if (is_stack(t)) {
      decode_stack(a, t, raw, 8, frames, v);
      return;
    }
    s = print_int_text(t, raw, text, sizeof text);
  }
  uint64_t n = read_int(p, stored >= 8 ? 8 : stored, t->is_signed);
  IntHint hint = s ? (t->enum_def ? INT_ENUM : INT_NAMED)
                 : t->is_bool ? INT_BOOL
                 : t->is_pointer ? INT_POINTER : INT_PLAIN;
  if (hint == INT_BOOL) {
    value_int(v, n != 0, false);
    v->hint = hint;
    return;
  }
  if (hint == INT_POINTER) {
    snprintf(text, sizeof text, "0x%" PRIx64, n);
    s = text;
  }
  n = narrow_bits(n, t->size > 0 && t->size < 8 ? t->size * 8 : 64,
                  t->is_signed);
  if (t->is_signed)
    n = (uint64_t)((int64_t)n / div);
  else
    n /= (uint64_t)div;
  value_int(v, n, t->is_signed);
  v->hint = hint;
  if (s) v->text = value_strndup(a, s, strlen(s));
}

static void decode_typed(ValueArena *a, const Type *t, const uint8_t *p,
                         int stored, int64_t div, bool frames, Value *v) {
  memset(v, 0, sizeof *v);
  switch (t->kind) {
  case TY_STR: {
    int max = t->size > 0 && t->size < stored ? t->size : stored;
    size_t len = strnlen((const char *)p, max);
    const char *trailer = print_str_trailer(t, max, len);
    size_t tlen = strlen(trailer);
    char *s = value_alloc(a, len + tlen + 1);
    if (s) {
      memcpy(s, p, len);
      memcpy(s + len, trailer, tlen);
    }
    v->kind = VAL_STR;
    v->bytes = s ? s : "";
    v->len = s ? len + tlen : 0;
    break;
  }
  case TY_TUPLE:
    if (t->tuple) decode_tuple(a, t->tuple, p, div, frames, v);
    else v->kind = VAL_NONE;
    break;
  case TY_CVAL:
    decode_cvalue(a, t->ctype, p, v);
    break;
  case TY_BUF: {
    uint64_t len;
    memcpy(&len, p, 8);
    if (len > (uint64_t)t->size) len = t->size;
    v->kind = VAL_BUF;
    v->bytes = (const char *)value_strndup(a, (const char *)p + 8, len);
    v->len = v->bytes ? len : 0;
    char text[64];
    if (t->named && named_buf_text(t, p, text, sizeof text))
      v->text = value_strndup(a, text, strlen(text));
    break;
  }
  default:
    decode_int(a, t, p, stored, div, frames, v);
    break;
  }
}

void decode_value(ValueArena *a, const Type *t, const uint8_t *p, int stored,
                  int64_t div, Value *out) {
  decode_typed(a, t, p, stored, div > 0 ? div : 1, false, out);
}

/* Key i of a map entry: integers as stored, stacks indented by 4. */
static void decode_key(ValueArena *a, const MapSym *m, int i,
                       const uint8_t *key, bool frames, Value *v) {
  const uint8_t *k = key + m->key_off[i];
  const Type *t = &m->key_types[i];
  int end = i + 1 < m->nkeys ? m->key_off[i + 1] : m->key_size;
  if (is_stack(t)) {
    decode_stack(a, t, (uint64_t)read_s64(k), 4, frames, v);
  } else if (t->kind == TY_INT && !t->is_bool && !t->is_pointer &&
             !t->time_fmt && !t->named) {
    value_int(v, (uint64_t)read_s64(k), t->is_signed);
    char text[24];
    if (t->enum_def) {
      const char *s = print_int_text(t, (uint64_t)read_s64(k), text,
                                     sizeof text);
      v->hint = INT_ENUM;
      v->text = value_strndup(a, s, strlen(s));
    }
  } else {
    decode_typed(a, t, k, end - m->key_off[i], 1, frames, v);
  }
}

/* ---- maps ------------------------------------------------------------------ */

/* A keyless count() prints 0 when empty (see AggOps.zero_when_empty),
 * as bpftrace's does, unless clear() emptied it: a per-CPU array always
 * has its slot. (With delete(@) in the script it is a hash, whose
 * entry, once deleted, is gone.) */
static bool prints_zero_when_empty(const MapSym *m, const MapState *st) {
  return m->nkeys == 0 && agg_of(m) && agg_of(m)->zero_when_empty &&
         m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY && !st->cleared;
}

bool map_has_stack_key(const MapSym *m) {
  for (int i = 0; i < m->nkeys; i++)
    if (is_stack(&m->key_types[i])) return true;
  return false;
}

int decode_map(const MapSym *m, const MapState *st, int64_t top,
               int64_t div, const DecodeOpts *o, DecodedMap *out) {
  const AggOps *agg = agg_of(m);
  memset(out, 0, sizeof *out);
  out->name = m->name;
  out->nkeys = m->nkeys;
  out->agg = agg ? agg->value_kind : VAL_NONE;
  out->zero_when_empty = prints_zero_when_empty(m, st);
  out->has_stack_key = map_has_stack_key(m);
  out->weight_signed = value_is_signed(m);
  out->top = top > 0 ? top : 0;
  out->div = div > 0 ? div : 1;
  MapDump d;
  int err = map_dump(m, st, &d);
  if (err) {
    map_dump_free(&d);
    return err;
  }
  sort_entries(&d);
  /* The top N are the last N in bpftrace's order; stats() ignores top. */
  int first = 0;
  if (top > 0 && top < d.n && !(agg && agg->ignores_top))
    first = d.n - (int)top;
  int n = d.n - first;
  AggScope scope = {0};
  if (agg && agg->decode_begin) {
    const uint8_t **vals = malloc(sizeof *vals * (n + 1));
    for (int i = 0; vals && i < n; i++) vals[i] = d.entries[first + i].val;
    if (vals) agg->decode_begin(m, vals, n, &scope);
    free(vals);
  }
  out->entries = value_alloc(&out->arena, sizeof(DecodedEntry) * (n + 1));
  if (!out->entries) err = -ENOMEM;
  for (int i = 0; !err && i < n; i++) {
    const Entry *e = &d.entries[first + i];
    DecodedEntry *de = &out->entries[i];
    de->weight = e->order;
    if (value_elems(&out->arena, &de->keys, VAL_TUPLE, m->nkeys))
      for (int k = 0; k < m->nkeys; k++)
        decode_key(&out->arena, m, k, e->key, o && o->frames,
                   &de->keys.elems[k]);
    if (agg)
      agg->decode(m, e->val, out->div, &scope, &out->arena, &de->value);
    else
      decode_typed(&out->arena, &m->value_type, e->val, m->value_size,
                   out->div, o && o->frames, &de->value);
    out->n++;
  }
  map_dump_free(&d);
  return err;
}

void decoded_map_free(DecodedMap *d) { value_arena_free(&d->arena); }
