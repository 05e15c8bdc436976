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

int compile_front(const Source *src, const CompileSettings *cs,
                  Script **script, Diag *d) {
  Script *s = parse_script(src, d);
  *script = s;
  if (!s || d->errors) return -1;
  s->params = cs->params;
  s->nparams = cs->nparams;
  s->unsafe = cs->unsafe;
  s->has_command = cs->has_command;
  s->cpid = cs->cpid;
  s->target_pid = cs->target_pid;
  if (config_read(s, d) > 0) return -1;
  if (substitute_attach_params(s, d) > 0) return -1;
  if (macro_expand_script(s, d) < 0 || d->errors) return -1;
  if (expand_script(s, d) < 0 || d->errors) return -1;
  return 0;
}

int compile_script(const Source *src, const CompileSettings *cs,
                   Script **script, Compiled *c, Diag *d) {
  if (compile_front(src, cs, script, d) < 0) return -1;
  Script *s = *script;
  c->helper_errors = cs->helper_errors;   /* the maps' layout depends on it */
  if (check_script(s, c, d) < 0 || d->errors) return -1;
  plan_own_maps(s, c);
  /* after check, so that the probes left out are checked all the same */
  if (cs->probe_filter && expand_filter(s, cs->probe_filter) < 0) return -1;
  c->comm_padded = cs->comm_padded;
  if (codegen_script(s, c, d) < 0 || d->errors) return -1;
  return 0;
}
