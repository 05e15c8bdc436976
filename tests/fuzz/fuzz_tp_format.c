/* libFuzzer harness: a tracepoint's format file (tracefs'
 * events/CATEGORY/EVENT/format), parsed, then used as a script uses it:
 * the event is entered as tracepoint:fuzz:eN, and a script printing
 * `args` whole, storing it, and reading each field by name is compiled
 * against it (checks and code generation; nothing is loaded).
 * Findings: tests/fuzz/regressions/tp_format/. */
#include "fuzz_script.h"
#include "probes/provider.h"

enum { MAX_FIELDS = 8 };

static bool is_name(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9')) return false;
  for (; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return false;
  return true;
}

/* The script, read by the compiler, is kept to the process's end. One
 * probe: a program per field cost as much again as the parsing. */
static char *script_for(const char *event, const TpFormat *fmt) {
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  if (!s) abort();
  len += (size_t)snprintf(s + len, cap - len,
                          "tracepoint:fuzz:%s { print(args); @a = args; "
                          "@n[args] = count();",
                          event);
  for (int i = 0; i < fmt->nfields && i < MAX_FIELDS; i++)
    if (is_name(fmt->fields[i].name) && strlen(fmt->fields[i].name) < 200)
      len += (size_t)snprintf(s + len, cap - len,
                              " $v%d = args.%s; print($v%d); "
                              "@f%d[args.%s] = 1;",
                              i, fmt->fields[i].name, i, i,
                              fmt->fields[i].name);
  snprintf(s + len, cap - len, " }\n");
  return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int events;
  if (size > 1 << 14) return 0;
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) return 0;
  TpFormat *fmt = tp_format_parse(f);
  fclose(f);
  /* a name of its own: formats are cached for the process's life */
  char event[32];
  snprintf(event, sizeof event, "e%d", ++events);
  tp_format_remember("fuzz", event, fmt);

  static Settings st;   /* the script keeps it */
  st = (Settings){0};
  fuzz_compile_script(script_for(event, fmt), &st);
  return 0;
}
