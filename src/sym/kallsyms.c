/* kallsyms: "ADDR TYPE NAME [module]" lines of /proc/kallsyms. */
#include "sym/kallsyms.h"

#include <stdio.h>
#include <string.h>

bool kallsyms_address(const char *name, uint64_t *addr) {
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && fgets(line, sizeof(line), f)) {
    unsigned long long a;
    char type, sym[256];
    if (sscanf(line, "%llx %c %255s", &a, &type, sym) == 3 &&
        strcmp(sym, name) == 0) {
      *addr = a;
      found = true;
    }
  }
  fclose(f);
  return found;
}
