/* compile: parse → config → parameters → macros → expand → check → plan
 * → codegen, stopping at the first stage that reports an error. */
#include "compile.h"

#include "codegen/codegen.h"
#include "lang/check.h"
#include "lang/config.h"
#include "lang/macro.h"
#include "lang/parse.h"
#include "lang/plan.h"
#include "probes/expand.h"

int compile_front(const Source *src, Settings *st, Script **script,
                  Diag *d) {
  Script *s = parse_script(src, st, d);
  *script = s;
  if (!s || d->errors) return -1;
  s->settings = st;
  if (config_read(s, d) > 0) return -1;
  if (substitute_attach_params(s, d) > 0) return -1;
  if (macro_expand_script(s, d) < 0 || d->errors) return -1;
  if (expand_script(s, d) < 0 || d->errors) return -1;
  return 0;
}

int compile_script(const Source *src, Settings *st, Script **script,
                   Compiled *c, Diag *d) {
  if (compile_front(src, st, script, d) < 0) return -1;
  Script *s = *script;
  if (check_script(s, c, d) < 0 || d->errors) return -1;
  plan_own_maps(s, c);
  /* after check, so that the probes left out are checked all the same */
  if (st->probe_filter && expand_filter(s, st->probe_filter) < 0) return -1;
  if (codegen_script(s, c, d) < 0 || d->errors) return -1;
  return 0;
}
