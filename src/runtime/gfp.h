/* gfp: GFP flags by name, for printf's %gr (see gfp.c). */
#ifndef LOUPE_GFP_H
#define LOUPE_GFP_H

#include <stddef.h>
#include <stdint.h>

/* flags as the running kernel names them ("GFP_KERNEL|__GFP_ZERO"), in
 * buf of len bytes. */
void gfp_flags_text(uint64_t flags, char *buf, size_t len);

#endif
