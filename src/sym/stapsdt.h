/* stapsdt: the USDT probes of an ELF file — SystemTap's `.note.stapsdt`
 * notes (sys/sdt.h), with their argument specs parsed for x86-64. */
#ifndef LOUPE_SYM_STAPSDT_H
#define LOUPE_SYM_STAPSDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sys/sdt.h allows at most 12 arguments. */
#define USDT_MAX_ARGS 12

typedef enum UsdtArgKind {
  USDT_ARG_CONST,   /* N@$value */
  USDT_ARG_REG,     /* N@%reg */
  USDT_ARG_MEM,     /* N@disp(%base,%index,scale), N@sym(%rip) */
} UsdtArgKind;

/* Where one argument is at the probe: registers as offsets into x86-64's
 * struct pt_regs, which a uprobe program gets as its context. */
typedef struct UsdtArg {
  UsdtArgKind kind;
  int size;          /* 1, 2, 4 or 8 bytes */
  bool is_signed;
  int reg;           /* REG, MEM: pt_regs offset of the (base) register;
                        MEM: -1 if there is none */
  int reg_shift;     /* REG: 8 for %ah, %bh, %ch, %dh */
  int index_reg;     /* MEM: pt_regs offset of the index register, or -1 */
  int scale;         /* MEM: 1, 2, 4 or 8 */
  int64_t value;     /* CONST: the value; MEM: the displacement (for a
                        %rip base: from the probe's own address) */
} UsdtArg;

typedef struct UsdtNote {
  char *provider, *name;
  uint64_t pc;            /* file offset of the probe's nop */
  uint64_t semaphore;     /* file offset of its semaphore; 0: none */
  char *args_text;        /* the spec as written: "-8@%rax 8@%rdx" */
  UsdtArg *args;          /* nargs of them */
  int nargs;
  char *args_error;       /* why the spec could not be read; NULL if it
                             could (arguments are then usable) */
} UsdtNote;

/* One probe (provider:name) of a file: the notes by_probe[start ..
 * start + count), in file order. */
typedef struct UsdtProbeNotes {
  int start, count;
} UsdtProbeNotes;

/* The most notes read from one file: real programs have hundreds; a
 * file with more has none read (each note costs time and memory, and a
 * probe read in part would miss places). */
#define USDT_MAX_NOTES 100000

typedef struct UsdtNotes {
  UsdtNote *notes;
  int n, cap;
  int *by_probe;            /* indices of notes, grouped by probe */
  UsdtProbeNotes *probes;   /* in the order of their first notes */
  int nprobes;
  bool too_many;            /* more than USDT_MAX_NOTES: none kept */
} UsdtNotes;

/* Reads the USDT notes of the ELF file at path into out, in file order,
 * and groups them by probe. A file without notes gives none, and so does
 * one with more than USDT_MAX_NOTES (too_many set). Returns 0, or -1 with
 * a message in err if the file cannot be read as ELF. */
int stapsdt_read(const char *path, UsdtNotes *out, char *err, size_t errlen);
void stapsdt_free(UsdtNotes *notes);

/* Parses n->args_text, the spec of a probe at address pc_vaddr in ELF
 * file e (whose symbols sym(%rip) operands name), into n->args; the
 * first problem goes to n->args_error (malloc'd). For stapsdt_read, and
 * for the fuzzer (tests/fuzz/fuzz_usdt_args.c). */
typedef struct Elf Elf;
void stapsdt_parse_args(Elf *e, uint64_t pc_vaddr, UsdtNote *n);

/* Whether two argument specs read the same thing; and an order of specs
 * (-1, 0, 1), 0 for the same. */
bool usdt_arg_same(const UsdtArg *a, const UsdtArg *b);
int usdt_arg_cmp(const UsdtArg *a, const UsdtArg *b);

#endif
