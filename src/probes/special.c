/* special: the BEGIN and END probes.
 *
 * They attach to nothing. Their programs load as raw tracepoint programs,
 * which the kernel lets user space run directly (BPF_PROG_TEST_RUN), so
 * the run stage executes BEGIN before the event loop and END after it. */
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>

#include "probes/provider.h"

static int special_expand(AttachPoint *ap, Diag *d) {
  const char *name = ap->prov->name;
  if (ap->nparts != 0) {
    diag_error(d, ap->span, "%s probe type requires 0 arguments", name);
    return -1;
  }
  Target *t = calloc(1, sizeof *t);
  t->name = strdup(name);
  ap->targets = t;
  ap->ntargets = 1;
  return 0;
}

/* bpftrace -l does not list BEGIN and END. */
static void special_list(const char *pattern, FILE *out) {}

const Provider begin_provider = {
    .name = "BEGIN",
    .alias = "begin",
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = special_expand,
    .attach = NULL,
    .list = special_list,
};

const Provider end_provider = {
    .name = "END",
    .alias = "end",
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = special_expand,
    .attach = NULL,
    .list = special_list,
};
