/* print_stack: the text of kstack, ustack, ksym and usym values.
 *
 * A stack value is one 64-bit word (built by builtins/stack.c):
 *   bits  0..23  the stack id in the stack-trace map of its frame limit,
 *                plus 1 (0: no stack, e.g. no user stack in a kernel task)
 *   bits 24..31  the number of frames, when the script asks len() of a
 *                stack (else 0)
 *   bits 32..63  ustack: the process's pid (as loupe's PID namespace
 *                numbers it), whose files name the user addresses
 * A usym value is the address in bits 0..46 and the pid in bits 47..63
 * (0 when the pid does not fit; the address is then looked up in the
 * probed binaries). */
#ifndef LOUPE_RUNTIME_PRINT_STACK_H
#define LOUPE_RUNTIME_PRINT_STACK_H

#include <stdint.h>

#include "model/program.h"
#include "runtime/state.h"

#define STACK_ID_MASK 0xffffffu
#define STACK_FRAMES_SHIFT 24
#define USYM_ADDR_BITS 47
#define USYM_PID_MAX ((1u << (64 - USYM_ADDR_BITS)) - 1)

/* The stack-trace maps of c, as l loaded them, are where the stacks that
 * print are read from (the run sets this up before any record). */
void stack_maps_use(const Compiled *c, const Loaded *l);

/* A stack value of type t as text: "" for no stack, else a newline and
 * one line per frame, each after `indent` spaces in bpftrace mode (8;
 * bpftrace uses 4 in map keys). Valid until the next call. */
const char *stack_text(const Type *t, uint64_t v, int indent);

/* The frames of stack value v of type t, leaf first, as bare function
 * names (no offsets; "0x..." where no symbol holds the address), for
 * folded stacks and flame graphs: a malloc'd array of malloc'd strings in
 * *out (NULL when none). Returns how many. */
int stack_frame_names(const Type *t, uint64_t v, char ***out);

/* ksym or usym value v as text in buf: the symbol's name, or the address
 * in hex when none holds it. */
const char *symbol_text(const Type *t, uint64_t v, char *buf, size_t len);

#endif
