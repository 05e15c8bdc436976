/* value: what loupe prints, decoded once and free of any format.
 *
 * A map entry's keys and value, a print(value), a printf's message: each
 * is read out of its bytes (output/decode.c, and the aggregations' own
 * AggOps.decode), symbolized (stack frames, symbols, errno and signal
 * names, times) and handed as a Value to the encoders (output/encoder.h),
 * which alone know how text, JSON or folded stacks write it.
 *
 * Values, and every string and array they point to, live in a
 * ValueArena, freed at once when the output is written. */
#ifndef LOUPE_OUTPUT_VALUE_H
#define LOUPE_OUTPUT_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ValueKind {
  VAL_NONE,     /* nothing to show (a float member of a C struct) */
  VAL_INT,      /* num, is_signed, hint, text */
  VAL_STR,      /* bytes, len: text (no NUL in it) */
  VAL_BUF,      /* bytes, len: raw bytes (buf()); text: an address (ntop,
                   macaddr) */
  VAL_TUPLE,    /* elems: (1, "a") */
  VAL_RECORD,   /* elems and names: a record (a=1) or a C struct, union */
  VAL_ARRAY,    /* elems: a C array */
  VAL_STACK,    /* text, frames: kstack, ustack */
  VAL_HIST,     /* hist: hist(), lhist() */
  VAL_STATS,    /* stats: stats(), avg() */
  VAL_TSERIES,  /* ts: tseries() */
} ValueKind;

/* What an integer stands for besides its number. */
typedef enum IntHint {
  INT_PLAIN,
  INT_BOOL,      /* true / false */
  INT_POINTER,   /* an address; text: in hex */
  INT_ENUM,      /* an enumerator; text: its name */
  INT_NAMED,     /* a time, a symbol, an errno, a signal, a user, a
                    cgroup, a syscall; text: how it reads */
} IntHint;

/* One bucket of a histogram: [lo, hi), or (..., hi) below the first and
 * [lo, ...) above the last. count: as counted (print()'s div not
 * applied). */
typedef struct HistBucket {
  bool below, above;
  __int128 lo, hi;
  uint64_t count;
} HistBucket;

typedef struct Hist {
  HistBucket *buckets;   /* from the first non-empty bucket to the last */
  int n;
  uint64_t peak;         /* the largest count */
  uint64_t div;          /* print()'s divisor of the counts (1: none) */
  bool linear;           /* lhist(): bounds in steps, not powers of 2 */
  bool has_sum;          /* the map keeps the sum of the values counted */
  int64_t sum;
} Hist;

typedef struct Stats {
  int64_t count, total, average;
  bool average_only;     /* avg(): the value is the average (divided by
                            print()'s div); count and total are what it
                            was computed from */
} Stats;

/* One interval of a time series. */
typedef struct TsPoint {
  uint64_t start_ns;     /* since the Unix epoch */
  bool present;          /* it holds a value */
  int64_t value;
} TsPoint;

typedef struct Value {
  ValueKind kind;
  /* VAL_INT: the number (narrowed to its type, print()'s div applied) */
  uint64_t num;
  bool is_signed;
  IntHint hint;
  /* VAL_INT: how it reads when it is not a number (NULL: the number);
   * VAL_BUF: an address as text; VAL_STACK: bpftrace's lines */
  const char *text;
  /* VAL_STR, VAL_BUF */
  const char *bytes;
  size_t len;
  /* VAL_TUPLE, VAL_RECORD, VAL_ARRAY */
  int n;
  struct Value *elems;
  const char *const *names;   /* VAL_RECORD */
  /* VAL_STACK: the frames' function names, leaf first (only when the
   * decoding asked for them); user: a user stack */
  char **frames;
  int nframes;
  bool user;
  Hist hist;                  /* VAL_HIST */
  Stats stats;                /* VAL_STATS */
  TsPoint *points;            /* VAL_TSERIES: n of them */
} Value;

/* Blocks of memory freed together. */
typedef struct ValueArena {
  struct ArenaBlock *blocks;
} ValueArena;

/* Zeroed memory that lives until value_arena_free; NULL when out of
 * memory. */
void *value_alloc(ValueArena *a, size_t size);
/* A copy of len bytes of s, NUL-terminated. */
char *value_strndup(ValueArena *a, const char *s, size_t len);
void value_arena_free(ValueArena *a);

/* Shorthands for the decoders. */
void value_int(Value *v, uint64_t num, bool is_signed);
void value_str(ValueArena *a, Value *v, const char *s, size_t len);
/* v as n elements of `kind` (VAL_TUPLE, VAL_RECORD, VAL_ARRAY); false
 * when out of memory. */
bool value_elems(ValueArena *a, Value *v, ValueKind kind, int n);

#endif
