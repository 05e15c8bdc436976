/* kallsyms: the kernel's symbols, from /proc/kallsyms. */
#ifndef LOUPE_SYM_KALLSYMS_H
#define LOUPE_SYM_KALLSYMS_H

#include <stdbool.h>
#include <stdint.h>

/* The address of the kernel symbol `name`; false if kallsyms does not list
 * it. The address is 0 when the kernel hides addresses (kptr_restrict, or
 * not root). */
bool kallsyms_address(const char *name, uint64_t *addr);

#endif
