/* sysheader's internals, shared by the scanner (sysheader.c) and the
 * evaluator of constant expressions (sysheader_eval.c). */
#ifndef LOUPE_SYSHEADER_INT_H
#define LOUPE_SYSHEADER_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "lang/sysheader.h"

/* A macro (its body, or function_like) or an enumerator (its value). */
typedef struct HEntry {
  char *name;
  char *body;
  const char *file;   /* where it is defined, for messages */
  int line;
  bool function_like;
  bool removed;       /* #undef'd */
  int64_t value;      /* an enumerator's */
} HEntry;

/* Names to entries: an open-addressing hash over an array. */
typedef struct HTable {
  HEntry *v;
  int n, cap;
  int *slots;   /* index + 1 into v; 0: empty */
  int nslots;
} HTable;

struct SysHeaders {
  HTable macros, enums;
  /* Names a branch of a condition loupe could not evaluate defines or
   * #undefs: what they stand for is not known. */
  HTable uncertain;
  const char **dirs;   /* -I directories, then the system include path */
  int ndirs;
  char **asked;        /* the <names> the script included, in order */
  bool *found;         /* for each, whether a directory has it */
  int nasked;
  HTable read;         /* the paths of the files read (each once) */
  size_t bytes;
};

const HEntry *htable_find(const HTable *t, const char *name, int len);

/* A value as C computes it: its bits, whether unsigned, 32 or 64 wide. */
typedef struct CVal {
  uint64_t v;
  bool uns;
  int bits;
} CVal;

typedef enum { EVAL_OK, EVAL_UNKNOWN, EVAL_ERROR } EvalStatus;

/* A #if condition: EVAL_OK with *truth, or EVAL_UNKNOWN (what cpp would
 * need a function-like macro or an extension for). */
EvalStatus sh_eval_if(const SysHeaders *h, const char *text, bool *truth);

/* The constant expression `text` (the body of macro `from`, or of an
 * enumerator when from is NULL): EVAL_OK with *out, else EVAL_ERROR with
 * the reason in why. */
EvalStatus sh_eval_const(const SysHeaders *h, const char *text,
                         const HEntry *from, CVal *out, char *why,
                         size_t whylen);

#endif
