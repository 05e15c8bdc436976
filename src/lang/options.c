/* options: the program's own command-line options. After "--", words
 * like --name or --name=value are options that getopt() reads (the other
 * words stay positional parameters $1, $2 ...); a name no getopt() asks
 * for is an error, as a mistyped option should be. */
#include <stdlib.h>
#include <string.h>

#include "lang/checker.h"

void options_split(Script *s) {
  if (s->options) return;   /* done already */
  const Settings *st = s->settings;
  int kept = 0;
  s->options = calloc((size_t)st->nparams + 1, sizeof(ProgramOption));
  s->params = calloc((size_t)st->nparams + 1, sizeof(char *));
  if (!s->options || !s->params) abort();
  for (int i = 0; i < st->nparams; i++) {
    char *w = st->params[i];
    if (strncmp(w, "--", 2) != 0 || !w[2]) {
      s->params[kept++] = w;
      continue;
    }
    ProgramOption *o = &s->options[s->noptions++];
    o->name = strdup(w + 2);
    char *eq = strchr(o->name, '=');
    if (eq) {
      *eq = '\0';
      o->value = eq + 1;
    }
  }
  s->nparams = kept;
}

void script_add_getopt_name(Script *s, const char *name,
                            const char *description) {
  for (int i = 0; i < s->ngetopt_names; i++)
    if (!strcmp(s->getopt_names[i], name)) return;
  size_t n = (size_t)s->ngetopt_names + 1;
  const char **names = realloc(s->getopt_names, sizeof(char *) * n);
  if (!names) abort();
  s->getopt_names = names;
  char **help = realloc(s->getopt_help, sizeof(char *) * n);
  if (!help) abort();
  s->getopt_help = help;
  s->getopt_names[s->ngetopt_names] = name;
  char *line = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&line, &len);
  if (!f) abort();
  fprintf(f, "--%s%s%s", name, description ? ": " : "",
          description ? description : "");
  fclose(f);
  s->getopt_help[s->ngetopt_names++] = line;
}

int options_report_unused(const Script *s, Diag *d) {
  int unused = 0;
  for (int i = 0; i < s->noptions; i++)
    unused += !s->options[i].used;
  if (!unused) return 0;
  char *list = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&list, &len);
  if (!f) return unused;
  bool first = true;
  for (int i = 0; i < s->noptions; i++)
    if (!s->options[i].used) {
      fprintf(f, "%s--%s", first ? "" : ", ", s->options[i].name);
      first = false;
    }
  fclose(f);
  Span none = {0};
  diag_error(d, none, "unexpected program command line options: %s", list);
  free(list);
  if (s->ngetopt_names == 0) {
    diag_hint(d, "the script takes no program options (getopt)");
    return unused;
  }
  /* --help: one option a line, with its description; otherwise the
   * names on one line */
  bool help = false;
  for (int i = 0; i < s->noptions; i++)
    if (!s->options[i].used && !strcmp(s->options[i].name, "help"))
      help = true;
  list = NULL;
  f = open_memstream(&list, &len);
  if (!f) return unused;
  for (int i = 0; i < s->ngetopt_names; i++)
    if (help)
      fprintf(f, "\n%s", s->getopt_help[i]);
    else
      fprintf(f, "%s--%s", i ? ", " : " ", s->getopt_names[i]);
  fclose(f);
  diag_hint(d, "expected program options:%s", list);
  free(list);
  return unused;
}
