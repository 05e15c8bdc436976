/* libFuzzer harness: a header a script #includes (a file the user
 * names, which may come from anywhere), compiled with the script. The
 * input is the header's text, then optionally a NUL and the text of the
 * script after its `#include "HEADER"` line (by default one using what a
 * header usually defines). Findings: tests/fuzz/regressions/include/. */
#include "fuzz_script.h"
#include "lang/lex.h"

static const char default_body[] =
    "BEGIN { $s = (struct S *)0; printf(\"%d %s\\n\", VALUE, NAME); "
    "@m[VALUE] = count(); exit(); }\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  const uint8_t *nul = memchr(data, '\0', size);
  size_t hlen = nul ? (size_t)(nul - data) : size;
  const char *path = fuzz_write_file("h.h", data, hlen);
  const char *body = nul ? (const char *)nul + 1 : default_body;
  size_t blen = nul ? size - hlen - 1 : strlen(default_body);
  size_t len = strlen(path) + blen + 16;
  char *text = malloc(len);   /* kept: the AST points into it */
  if (!text) abort();
  int at = snprintf(text, len, "#include \"%s\"\n", path);
  memcpy(text + at, body, blen);
  text[at + (int)blen] = '\0';

  static Settings st;   /* the script keeps it */
  st = (Settings){0};
  fuzz_compile_script(text, &st);
  return 0;
}
