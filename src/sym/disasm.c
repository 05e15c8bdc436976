/* disasm: whether an offset into a function's machine code starts an
 * instruction. A uprobe writes a breakpoint at its address; in the middle
 * of an instruction that breakpoint changes what the traced process runs.
 *
 * x86-64 instructions have lengths from 1 to 15 bytes, so the function is
 * decoded from its start with capstone. loupe loads capstone only when an
 * offset needs checking (dlopen): linked in, its relocated tables would
 * add about 3 MB to every run's memory. The static build links it. Fixed
 * width machines (arm64, ppc64) need no decoder. */
#include "sym/disasm.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/dlib.h"

typedef struct Capstone {
  cs_err (*open)(cs_arch, cs_mode, csh *);
  cs_err (*close)(csh *);
  cs_insn *(*malloc)(csh);
  void (*free)(cs_insn *, size_t);
  bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *,
                      cs_insn *);
} Capstone;

/* The decoder's entry points; false with err set if it is not there. */
static bool load_capstone(Capstone *cs, char *err, size_t errlen) {
#ifdef LOUPE_STATIC
  *cs = (Capstone){cs_open, cs_close, cs_malloc, cs_free, cs_disasm_iter};
  return true;
#else
  static const char *const sonames[] = {"libcapstone.so.4", "libcapstone.so.5",
                                        "libcapstone.so", NULL};
  static const char *const names[] = {"cs_open", "cs_close", "cs_malloc",
                                      "cs_free", "cs_disasm_iter", NULL};
  void *fns[5];
  char why[200];
  if (!dlib_load(sonames, "libcapstone4", names, fns, why, sizeof why)) {
    snprintf(err, errlen, "the x86-64 decoder: %s", why);
    return false;
  }
  *(void **)&cs->open = fns[0];
  *(void **)&cs->close = fns[1];
  *(void **)&cs->malloc = fns[2];
  *(void **)&cs->free = fns[3];
  *(void **)&cs->disasm_iter = fns[4];
  return true;
#endif
}

/* Decodes code[0..size) from its start until an instruction reaches past
 * off: 1 if one starts at off, 0 if off falls inside the one starting at
 * *start, -1 (err set) if the bytes before off do not decode. */
static int x86_64_boundary(const uint8_t *code, size_t size, uint64_t off,
                           uint64_t *start, char *err, size_t errlen) {
  Capstone cs;
  if (!load_capstone(&cs, err, errlen)) return -1;
  csh h;
  if (cs.open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
    snprintf(err, errlen, "the x86-64 decoder did not start");
    return -1;
  }
  cs_insn *insn = cs.malloc(h);
  const uint8_t *p = code;
  uint64_t at = 0;
  int result = -1;
  while (at < off) {
    *start = at;
    if (!insn || !cs.disasm_iter(h, &p, &size, &at, insn)) {
      snprintf(err, errlen, "the bytes at offset %llu do not decode as an "
               "x86-64 instruction", (unsigned long long)*start);
      break;
    }
  }
  if (at >= off) result = at == off;
  if (insn) cs.free(insn, 1);
  cs.close(&h);
  return result;
}

int code_boundary(const char *path, uint64_t file_off, uint64_t size,
                  uint64_t off, uint64_t *start, char *err, size_t errlen) {
  *start = 0;
  if (off == 0) return 1;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "cannot read %s", path);
    return -1;
  }
  Elf64_Half machine = 0;
  int result = -1;
  uint8_t *code = NULL;
  if (pread(fd, &machine, sizeof machine, 18) != (ssize_t)sizeof machine) {
    snprintf(err, errlen, "cannot read the ELF header of %s", path);
  } else if (machine == EM_AARCH64 || machine == EM_PPC64) {
    *start = off & ~3ull;
    result = (off & 3) == 0;
  } else if (machine != EM_X86_64) {
    snprintf(err, errlen, "loupe cannot decode the instructions of this "
             "machine (ELF machine %u)", machine);
  } else if (size == 0 || size > (64u << 20) || !(code = malloc(size))) {
    snprintf(err, errlen, "the function's size is unknown");
  } else if (pread(fd, code, size, (off_t)file_off) != (ssize_t)size) {
    snprintf(err, errlen, "cannot read the function's code from %s", path);
  } else {
    result = x86_64_boundary(code, size, off, start, err, errlen);
  }
  free(code);
  close(fd);
  return result;
}
