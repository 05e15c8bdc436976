/* compile: parse → config → parameters → macros → expand → check →
 * codegen, stopping at the first stage that reports an error. */
#include "compile.h"

#include "codegen/codegen.h"
#include "lang/check.h"
#include "lang/config.h"
#include "lang/macro.h"
#include "lang/parse.h"
#include "probes/expand.h"

int compile_script(const Source *src, const CompileSettings *cs,
                   Script **script, Compiled *c, Diag *d) {
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
  if (check_script(s, c, d) < 0 || d->errors) return -1;
  if (codegen_script(s, c, d) < 0 || d->errors) return -1;
  return 0;
}
