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

int expand_script(Script *s, Diag *d) {
  int result = 0;
  for (Probe *p = s->probes; p; p = p->next)
    for (AttachPoint *ap = p->aps; ap; ap = ap->next)
      if (expand_attach_point(ap, d) < 0) result = -1;
  return result;
}
