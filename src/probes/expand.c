/* expand: each attach point goes to its provider, which turns the parts as
 * written into concrete targets. Every attach point is tried, so one run
 * reports every bad probe in the script. */
#include "probes/expand.h"

#include <regex.h>
#include <stdio.h>

#include "probes/provider.h"

static int expand_attach_point(AttachPoint *ap, const Settings *st, Diag *d) {
  const Provider *prov = provider_find(ap->provider);
  if (!prov) {
    diag_error(d, ap->span, "Invalid probe type: %s",
               ap->provider ? ap->provider : "");
    return -1;
  }
  ap->prov = prov;
  /* messages name the provider by its canonical name, not an alias */
  ap->provider = (char *)prov->name;
  ap->targets = NULL;
  ap->ntargets = 0;
  return prov->expand(ap, st, d);
}

/* Under missing_probes = warn or ignore, an attach point that matches
 * nothing is a warning or nothing, and leaves the script; so does a probe
 * left without attach points. */
static int expand_probe(Probe *p, const Settings *st, Diag *d) {
  MissingProbes missing = st->missing_probes;
  int result = 0;
  for (AttachPoint **link = &p->aps; *link;) {
    AttachPoint *ap = *link;
    if (missing == MISSING_ERROR) {
      int r = expand_attach_point(ap, st, d);
      if (r < 0) result = -1;
      /* no targets and no error: left out (bench outside --mode bench) */
      if (r == 0 && ap->ntargets == 0)
        *link = ap->next;
      else
        link = &ap->next;
      continue;
    }
    int saved = d->demote;
    d->demote = missing == MISSING_WARN ? DEMOTE_TO_WARNING
                                        : DEMOTE_TO_NOTHING;
    int r = expand_attach_point(ap, st, d);
    d->demote = saved;
    if (r < 0 || ap->ntargets == 0)
      *link = ap->next;   /* dropped */
    else
      link = &ap->next;
  }
  return result;
}

/* An iterator's program runs while loupe reads it, once, and the run ends
 * with it (iter.c): no other probe but BEGIN and END can share that run,
 * nor a second iterator. */
static int check_iter_alone(Script *s, Diag *d) {
  const AttachPoint *iter = NULL, *other = NULL;
  for (Probe *p = s->probes; p; p = p->next)
    for (AttachPoint *ap = p->aps; ap; ap = ap->next) {
      if (!ap->prov || !ap->prov->attach) continue;   /* BEGIN, END */
      if (ap->prov->run == RUN_AS_ITERATOR && !iter)
        iter = ap;
      else if (!other)
        other = ap;
    }
  if (!iter || !other) return 0;
  diag_error(d, other->span, "an iter probe (%s) cannot be mixed with other "
             "probes but BEGIN and END", iter->text);
  diag_hint(d, "the run ends when the iterator has been read to its end; "
            "run %s in a loupe of its own", other->text);
  return -1;
}

int expand_script(Script *s, Diag *d) {
  int result = 0;
  bool had_probes = s->probes != NULL;
  for (Probe **link = &s->probes; *link;) {
    Probe *p = *link;
    Span first = p->aps ? p->aps->span : p->span;
    AttachPoint *all = p->aps;
    if (expand_probe(p, s->settings, d) < 0) result = -1;
    if (!p->aps) {
      if (s->settings->missing_probes == MISSING_WARN)
        diag_warning(d, first, "Probe has no valid attach points. It is "
                     "being removed which may cause issues with program "
                     "behavior.");
      *link = p->next;
      if (all && s->settings->missing_probes != MISSING_ERROR) {
        /* kept aside, with its attach points (dropped ones keep their
         * links to each other; none has a target) */
        p->aps = all;
        p->next = s->dropped;
        s->dropped = p;
      }
    } else {
      link = &p->next;
    }
  }
  /* missing_probes = warn or ignore, and nothing matched at all */
  if (result == 0 && had_probes && !s->probes) {
    fputs("ERROR: No probes to attach\n", stderr);
    return -1;
  }
  if (result == 0) result = check_iter_alone(s, d);
  return result;
}

/* Drops the targets of ap that re does not match; how many are left. */
static int filter_targets(AttachPoint *ap, const regex_t *re) {
  for (Target **link = &ap->targets; *link;) {
    Target *t = *link;
    if (regexec(re, t->name, 0, NULL, 0) == 0) {
      link = &t->next;
    } else {
      *link = t->next;
      ap->ntargets--;
    }
  }
  return ap->ntargets;
}

int expand_filter(Script *s, const char *regex) {
  regex_t re;
  if (regcomp(&re, regex, REG_EXTENDED | REG_NOSUB) != 0) {
    fprintf(stderr, "ERROR: Invalid --probe-filter regex: %s\n", regex);
    return -1;
  }
  int left = 0;
  for (Probe **plink = &s->probes; *plink;) {
    Probe *p = *plink;
    for (AttachPoint **link = &p->aps; *link;) {
      AttachPoint *ap = *link;
      bool runs_itself = ap->prov && !ap->prov->attach;   /* BEGIN, END */
      if (runs_itself || filter_targets(ap, &re) > 0) {
        left++;
        link = &ap->next;
      } else {
        *link = ap->next;
      }
    }
    if (p->aps)
      plink = &p->next;
    else
      *plink = p->next;
  }
  regfree(&re);
  if (left == 0) {
    fprintf(stderr, "ERROR: No probes to attach (none matches the "
            "--probe-filter '%s')\n", regex);
    return -1;
  }
  return 0;
}
