/* special: the BEGIN and END probes, bench:NAME, test:NAME and
 * self:signal:SIGUSR1.
 *
 * They attach to nothing. Their programs load as raw tracepoint programs,
 * which the kernel lets user space run directly (BPF_PROG_TEST_RUN), so
 * the run stage executes BEGIN before the event loop and END after it.
 * Under --mode bench, the run stage runs each bench probe many times
 * instead of waiting for events and prints how long one run took;
 * otherwise bench probes are left out, as bpftrace ignores them. Test
 * probes likewise run once each under --mode test, and are left out
 * otherwise.
 * self:signal:SIGUSR1 runs whenever loupe receives SIGUSR1. */
#include <linux/bpf.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "probes/provider.h"

/* The attach point's one target, called name. */
static void one_target(AttachPoint *ap, const char *name, const char *event) {
  Target *t = calloc(1, sizeof *t);
  t->name = strdup(name);
  t->event = event ? strdup(event) : NULL;
  ap->targets = t;
  ap->ntargets = 1;
}

static int special_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  const char *name = ap->prov->name;
  if (ap->nparts != 0) {
    diag_error(d, ap->span, "%s probe type requires 0 arguments", name);
    return -1;
  }
  /* `probe` says begin or BEGIN as the script spells it */
  one_target(ap, strcasecmp(ap->text, name) ? name : ap->text, NULL);
  return 0;
}

/* bpftrace -l does not list BEGIN and END. */
static void special_list(const char *pattern, const Settings *st, FILE *out) {}

const Provider begin_provider = {
    .name = "BEGIN",
    .aliases = (const char *const[]){"begin", NULL},
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = special_expand,
    .attach = NULL,
    .list = special_list,
    .in_user_mode = true,
    .probetype = "special",
    .run = RUN_AT_BEGIN,
};

const Provider end_provider = {
    .name = "END",
    .aliases = (const char *const[]){"end", NULL},
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = special_expand,
    .attach = NULL,
    .list = special_list,
    .in_user_mode = true,
    .probetype = "special",
    .run = RUN_AT_END,
};


/* bench:NAME and test:NAME: a probe of the mode's kind has its target
 * (the event is NAME); in another mode it is left out. */
static int mode_probe_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  const char *kind = ap->prov->name;
  if (ap->nparts != 1 || !*ap->parts[0]) {
    diag_error(d, ap->span, "%s probe type requires 1 argument", kind);
    return -1;
  }
  RunMode want = !strcmp(kind, "bench") ? MODE_BENCH : MODE_TEST;
  if (st->mode != want) return 0;   /* no target: the probe is left out */
  char name[512];
  snprintf(name, sizeof name, "%s:%s", kind, ap->parts[0]);
  one_target(ap, name, ap->parts[0]);
  return 0;
}

const Provider bench_provider = {
    .name = "bench",
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = mode_probe_expand,
    .attach = NULL,
    .list = special_list,
    .run = RUN_AS_BENCH,
};

const Provider test_provider = {
    .name = "test",
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = mode_probe_expand,
    .attach = NULL,
    .list = special_list,
    .run = RUN_AS_TEST,
};

static int self_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts != 2) {
    diag_error(d, ap->span, "self probe type requires 2 arguments");
    return -1;
  }
  if (strcmp(ap->parts[0], "signal") || strcmp(ap->parts[1], "SIGUSR1")) {
    diag_error(d, ap->span, "self:%s:%s is not a self probe: the only one "
               "is self:signal:SIGUSR1", ap->parts[0], ap->parts[1]);
    return -1;
  }
  one_target(ap, "self:signal:SIGUSR1", "SIGUSR1");
  return 0;
}

const Provider self_provider = {
    .name = "self",
    .prog_type = BPF_PROG_TYPE_RAW_TRACEPOINT,
    .expand = self_expand,
    .attach = NULL,
    .list = special_list,
    .run = RUN_ON_SIGNAL,
};
