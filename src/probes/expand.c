/* expand: each attach point goes to its provider, which turns the parts as
 * written into concrete targets. Every attach point is tried, so one run
 * reports every bad probe in the script. */
#include "probes/expand.h"

#include "probes/provider.h"

static int expand_attach_point(AttachPoint *ap, Diag *d) {
  const Provider *prov = provider_find(ap->provider);
  if (!prov) {
    diag_error(d, ap->span, "Invalid probe type: %s",
               ap->provider ? ap->provider : "");
    return -1;
  }
  ap->prov = prov;
  /* Later stages compare against the canonical name, not an alias. */
  ap->provider = (char *)prov->name;
  ap->targets = NULL;
  ap->ntargets = 0;
  return prov->expand(ap, d);
}

/* Under missing_probes = warn or ignore, an attach point that matches
 * nothing is a warning or nothing, and leaves the script; so does a probe
 * left without attach points. */
static int expand_probe(Probe *p, MissingProbes missing, Diag *d) {
  int result = 0;
  for (AttachPoint **link = &p->aps; *link;) {
    AttachPoint *ap = *link;
    if (missing == MISSING_ERROR) {
      if (expand_attach_point(ap, d) < 0) result = -1;
      link = &ap->next;
      continue;
    }
    int saved = d->demote;
    d->demote = missing == MISSING_WARN ? DEMOTE_TO_WARNING
                                        : DEMOTE_TO_NOTHING;
    int r = expand_attach_point(ap, d);
    d->demote = saved;
    if (r < 0 || ap->ntargets == 0)
      *link = ap->next;   /* dropped */
    else
      link = &ap->next;
  }
  return result;
}

int expand_script(Script *s, Diag *d) {
  int result = 0;
  for (Probe **link = &s->probes; *link;) {
    Probe *p = *link;
    if (expand_probe(p, s->settings.missing_probes, d) < 0) result = -1;
    if (!p->aps)
      *link = p->next;
    else
      link = &p->next;
  }
  return result;
}
