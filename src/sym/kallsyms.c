/* kallsyms: "ADDR TYPE NAME [module]" lines of /proc/kallsyms. */
#include "sym/kallsyms.h"

#include <stdio.h>
#include <stdlib.h>
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

bool kallsyms_lists_data(void) {
  static int known = -1;
  if (known >= 0) return known;
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return true;   /* nothing to say about it */
  char line[512];
  long data = 0, text = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long long a;
    char type;
    if (sscanf(line, "%llx %c", &a, &type) != 2) continue;
    if (strchr("dDbB", type)) data++;
    else if (strchr("tT", type)) text++;
  }
  fclose(f);
  /* without it only a few section markers are data ("__start_rodata");
   * with it there are about as many variables as functions */
  known = data * 10 >= text;
  return known;
}

/* ---- address to name ------------------------------------------------ */

typedef struct KSym {
  uint64_t addr;
  char *name;
} KSym;

static KSym *ksyms;
static int nksyms;

static int compare_ksyms(const void *a, const void *b) {
  uint64_t x = ((const KSym *)a)->addr, y = ((const KSym *)b)->addr;
  return x < y ? -1 : x > y;
}

/* Every symbol with an address, sorted by address; absolute symbols and
 * the per-CPU offsets ('A', lower than every text address) are left out. */
static void ksyms_load(void) {
  static bool loaded;
  if (loaded) return;
  loaded = true;
  FILE *f = fopen("/proc/kallsyms", "r");
  if (!f) return;
  char line[512];
  int cap = 0;
  while (fgets(line, sizeof(line), f)) {
    unsigned long long a;
    char type, sym[256];
    if (sscanf(line, "%llx %c %255s", &a, &type, sym) != 3 || a == 0 ||
        type == 'A' || type == 'a')
      continue;
    if (nksyms == cap) {
      cap = cap ? cap * 2 : 65536;
      KSym *grown = realloc(ksyms, sizeof(*ksyms) * cap);
      if (!grown) break;
      ksyms = grown;
    }
    ksyms[nksyms].addr = a;
    ksyms[nksyms++].name = strdup(sym);
  }
  fclose(f);
  qsort(ksyms, nksyms, sizeof(*ksyms), compare_ksyms);
}

const char *kallsyms_name(uint64_t addr, uint64_t *offset) {
  ksyms_load();
  int lo = 0, hi = nksyms - 1, found = -1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (ksyms[mid].addr <= addr) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  if (found < 0) return NULL;
  *offset = addr - ksyms[found].addr;
  return ksyms[found].name;
}
