/* print_cvalue: struct, union and array values (copies of C memory) as
 * bpftrace prints them — "{ .m = 2, .n = 3 }" and "[1,2,3]" in text,
 * {"m": 2, "n": 3} and [1,2,3] in JSON — walking their C type. */
#include <inttypes.h>
#include <string.h>

#include "lang/ctype.h"
#include "runtime/print.h"

/* A little-endian integer of `size` bytes at p. */
static uint64_t load(const uint8_t *p, int size) {
  uint64_t v = 0;
  for (int i = size - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static void put_number(uint64_t v, int bits, bool is_signed, FILE *out) {
  if (bits <= 0) {
    v = 0;   /* an integer of no bytes, as only lying DWARF describes */
  } else if (bits < 64) {
    v &= (UINT64_C(1) << bits) - 1;
    if (is_signed && v >> (bits - 1)) v |= ~UINT64_C(0) << bits;
  }
  if (is_signed)
    fprintf(out, "%" PRId64, (int64_t)v);
  else
    fprintf(out, "%" PRIu64, v);
}

static void put_cval(const CType *ct, const uint8_t *p, bool json, FILE *out);

/* A char array: a string up to its first NUL. An array of int8 or uint8
 * (a cast such as (int8[])"abc", pton()'s bytes) prints its numbers. */
static bool put_chars(const CType *ct, const uint8_t *p, bool json,
                      FILE *out) {
  const CType *e = ct->target;
  if (!e || e->kind != C_INT || e->size != 1 || ct->nelems <= 0 ||
      e->is_bool || !e->is_char)
    return false;
  size_t len = strnlen((const char *)p, ct->nelems);
  if (json)
    print_json_string((const char *)p, len, out);
  else
    fwrite(p, 1, len, out);
  return true;
}

static void put_array(const CType *ct, const uint8_t *p, bool json,
                      FILE *out) {
  if (put_chars(ct, p, json, out)) return;
  fputc('[', out);
  int step = ct->target ? ct->target->size : 0;
  for (int i = 0; i < ct->nelems && step > 0; i++) {
    if (i) fputc(',', out);
    put_cval(ct->target, p + i * step, json, out);
  }
  fputc(']', out);
}

/* The members of a struct or union; anonymous members' own members are
 * shown as if they were the outer one's. Returns the count shown. */
static int put_members(const CType *ct, const uint8_t *p, bool json,
                       int shown, FILE *out) {
  const CField *fs;
  int n = ctype_fields(ct, &fs);
  for (int i = 0; i < n; i++) {
    const CField *f = &fs[i];
    if (!f->name) {
      shown = put_members(f->type, p + f->offset, json, shown, out);
      continue;
    }
    if (shown++) fputs(", ", out);
    if (json)
      fprintf(out, "\"%s\": ", f->name);
    else
      fprintf(out, ".%s = ", f->name);
    if (f->bit_size > 0) {
      uint64_t v = load(p + f->offset, f->type->size) >> f->bit_offset;
      put_number(v, f->bit_size, f->type->is_signed, out);
    } else {
      put_cval(f->type, p + f->offset, json, out);
    }
  }
  return shown;
}

static void put_cval(const CType *ct, const uint8_t *p, bool json,
                     FILE *out) {
  switch (ct->kind) {
  case C_INT:
  case C_ENUM:
    if (ct->is_bool) {
      fputs(p[0] ? "true" : "false", out);
      break;
    }
    put_number(load(p, ct->size), ct->size >= 8 ? 64 : ct->size * 8,
               ct->is_signed, out);
    break;
  case C_PTR:
    fprintf(out, json ? "%" PRIu64 : "0x%" PRIx64, load(p, 8));
    break;
  case C_ARRAY:
    put_array(ct, p, json, out);
    break;
  case C_STRUCT:
  case C_UNION:
    if (json) {
      fputc('{', out);
      put_members(ct, p, json, 0, out);
      fputc('}', out);
    } else {
      fputs("{ ", out);
      put_members(ct, p, json, 0, out);
      fputs(" }", out);
    }
    break;
  default:
    fputs(json ? "null" : "", out);   /* float, double: not shown */
    break;
  }
}

void print_cvalue(const CType *ct, const void *p, bool json, FILE *out) {
  put_cval(ct, p, json, out);
}
