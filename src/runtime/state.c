/* state: queries over a loaded program's state (state.h). */
#include "runtime/state.h"

#include <stdlib.h>
#include <string.h>

static int compare_map_names(const void *pa, const void *pb) {
  const MapSym *a = *(const MapSym *const *)pa;
  const MapSym *b = *(const MapSym *const *)pb;
  return strcmp(a->name, b->name);
}

const MapSym **loaded_maps_by_name(const Compiled *c, const Loaded *l,
                                   int *n) {
  const MapSym **order = malloc(sizeof *order * ((size_t)c->nmaps + 1));
  *n = 0;
  if (!order) return NULL;
  for (int i = 0; i < c->nmaps; i++)
    if (!c->maps[i]->internal && l->maps[c->maps[i]->id].fd >= 0)
      order[(*n)++] = c->maps[i];
  if (*n > 0) qsort(order, (size_t)*n, sizeof *order, compare_map_names);
  return order;
}
