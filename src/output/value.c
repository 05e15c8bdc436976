/* value: the arena decoded values live in, and their shorthands. */
#include "output/value.h"

#include <stdlib.h>
#include <string.h>

typedef struct ArenaBlock {
  struct ArenaBlock *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} ArenaBlock;

#define ARENA_BLOCK 16384

void *value_alloc(ValueArena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  ArenaBlock *b = a->blocks;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > ARENA_BLOCK ? size : ARENA_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    b->next = a->blocks;
    a->blocks = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *value_strndup(ValueArena *a, const char *s, size_t len) {
  char *p = value_alloc(a, len + 1);
  if (p && len) memcpy(p, s, len);
  return p;
}

void value_arena_free(ValueArena *a) {
  for (ArenaBlock *b = a->blocks, *next; b; b = next) {
    next = b->next;
    free(b);
  }
  a->blocks = NULL;
}

void value_int(Value *v, uint64_t num, bool is_signed) {
  memset(v, 0, sizeof *v);
  v->kind = VAL_INT;
  v->num = num;
  v->is_signed = is_signed;
}

void value_str(ValueArena *a, Value *v, const char *s, size_t len) {
  memset(v, 0, sizeof *v);
  v->kind = VAL_STR;
  v->bytes = value_strndup(a, s, len);
  v->len = v->bytes ? len : 0;
  if (!v->bytes) v->bytes = "";
}

bool value_elems(ValueArena *a, Value *v, ValueKind kind, int n) {
  memset(v, 0, sizeof *v);
  v->kind = kind;
  v->elems = n > 0 ? value_alloc(a, sizeof(Value) * (size_t)n) : NULL;
  if (n > 0 && !v->elems) return false;
  v->n = n;
  return true;
}
