/* disasm: instruction boundaries in a function's machine code. */
#ifndef LOUPE_SYM_DISASM_H
#define LOUPE_SYM_DISASM_H

#include <stddef.h>
#include <stdint.h>

/* Whether off bytes into the function whose size bytes of code are at
 * file_off in the ELF file path is where an instruction starts: 1 if it
 * is, 0 if not (*start is then the offset of the instruction holding
 * off), -1 if loupe cannot tell (the reason in err). */
int code_boundary(const char *path, uint64_t file_off, uint64_t size,
                  uint64_t off, uint64_t *start, char *err, size_t errlen);

#endif
