/* kallsyms: the kernel's symbols, from /proc/kallsyms. */
#ifndef LOUPE_SYM_KALLSYMS_H
#define LOUPE_SYM_KALLSYMS_H

#include <stdbool.h>
#include <stdint.h>

/* The address of the kernel symbol `name`; false if kallsyms does not list
 * it. The address is 0 when the kernel hides addresses (kptr_restrict, or
 * not root). */
bool kallsyms_address(const char *name, uint64_t *addr);

/* Whether kallsyms lists data symbols (variables) at all: only with
 * CONFIG_KALLSYMS_ALL. True if it cannot be read. */
bool kallsyms_lists_data(void);
/* The kernel symbol that holds addr (the nearest one at or below it) and
 * addr's offset from it; NULL if there is none (an address below every
 * symbol, or addresses hidden). The table is read once, then kept. */
const char *kallsyms_name(uint64_t addr, uint64_t *offset);

#endif
