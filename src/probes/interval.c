/* Timers and software events, all built on software perf events:
 *
 *   interval:UNIT:N   (alias i:)  fires on one CPU every N units;
 *                     UNIT is s, ms, us or hz (N times a second);
 *   interval:NUNIT    the same, written the way newer bpftrace allows:
 *                     500ms, 10hz, and any duration literal's unit (ns,
 *                     us, ms, s, m, h, d), or none for nanoseconds;
 *   profile:UNIT:N, profile:NUNIT (alias p:)  on every CPU;
 *   software:EVENT[:N] (alias s:) every N-th occurrence of a software
 *                     event (page-faults, context-switches, ...) on any CPU;
 *   hardware:EVENT[:N] (alias h:) the same for a hardware event the CPU's
 *                     PMU counts (cycles, cache-misses, ...).
 */
#include <ctype.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/provider.h"

typedef struct IntervalUnit {
  const char *name;
  uint64_t ns;      /* nanoseconds per unit; 0 for hz */
} IntervalUnit;

/* The classic form's units: interval:ms:100. */
static const IntervalUnit units[] = {
    {"s", 1000000000ULL}, {"ms", 1000000ULL}, {"us", 1000ULL}, {"hz", 0},
};

/* The one-part form's: interval:100ms, interval:10hz, and a bare number
 * of nanoseconds (interval:1000000000) — the duration literals' units. */
static const IntervalUnit short_units[] = {
    {"", 1ULL},          {"ns", 1ULL},        {"us", 1000ULL},
    {"ms", 1000000ULL},  {"s", 1000000000ULL}, {"m", 60000000000ULL},
    {"h", 3600000000000ULL}, {"d", 86400000000000ULL}, {"hz", 0},
};

static const IntervalUnit *unit_find(const IntervalUnit *list, size_t n,
                                     const char *name, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(list[i].name) == len && !strncmp(list[i].name, name, len))
      return &list[i];
  return NULL;
}

/* Reads a whole decimal number, also written as NeM (1e6) as bpftrace
 * allows; false if s is anything else. */
static bool parse_count(const char *s, uint64_t *out) {
  if (!isdigit((unsigned char)*s)) return false;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end == 'e' && isdigit((unsigned char)end[1])) {
    unsigned long long exp = strtoull(end + 1, &end, 10);
    for (; exp > 0 && !errno; exp--) {
      if (v > UINT64_MAX / 10) errno = ERANGE;
      v *= 10;
    }
  }
  if (*end || errno) return false;
  *out = v;
  return true;
}

/* Where text of the attach point's part `i` starts, for messages that
 * point into it (an attach point is on one line). */
static Span part_span(const AttachPoint *ap, int i, size_t skip,
                      size_t len) {
  const char *p = ap->text;
  for (int k = 0; k <= i && p; k++) {
    p = strchr(p, ':');
    if (p) p++;
  }
  if (!p) return ap->span;
  int col = ap->span.col + (int)(p - ap->text) + (int)skip;
  Span s = {.line = ap->span.line, .col = col,
            .end_col = col + (int)(len ? len : 1), .exp = ap->span.exp};
  return s;
}

/* A time spec: its unit and count, reported at the part that is wrong. */
typedef struct TimerSpec {
  const IntervalUnit *unit;
  uint64_t n;
  const char *num;   /* the count as written */
  Span num_at;
} TimerSpec;

/* interval:UNIT:N, or interval:NUNIT ("500ms", "10hz", "1000"). */
static int timer_spec(AttachPoint *ap, Diag *d, TimerSpec *ts) {
  const char *pname = ap->prov->name;
  if (ap->nparts == 2) {
    const char *u = ap->parts[0];
    ts->unit = unit_find(units, sizeof units / sizeof units[0], u, strlen(u));
    if (!ts->unit) {
      diag_error(d, part_span(ap, 0, 0, strlen(u)),
                 "%s is not an accepted unit of time", u);
      diag_hint(d, "use one of s, ms, us or hz, e.g. %s:ms:100", pname);
      return -1;
    }
    ts->num = ap->parts[1];
    ts->num_at = part_span(ap, 1, 0, strlen(ts->num));
  } else if (ap->nparts == 1 && isdigit((unsigned char)ap->parts[0][0])) {
    const char *s = ap->parts[0];
    size_t digits = strspn(s, "0123456789");
    ts->unit = unit_find(short_units, sizeof short_units / sizeof short_units[0],
                         s + digits, strlen(s + digits));
    if (!ts->unit) {
      diag_error(d, part_span(ap, 0, digits, strlen(s + digits)),
                 "%s is not an accepted unit of time", s + digits);
      diag_hint(d, "use one of ns, us, ms, s, m, h, d or hz, e.g. "
                "%s:100ms", pname);
      return -1;
    }
    ts->num = strndup(s, digits);
    ts->num_at = part_span(ap, 0, 0, digits);
  } else {
    diag_error(d, ap->span, "%s probe type requires 2 arguments", pname);
    diag_hint(d, "e.g. %s:100ms or %s:ms:100", pname, pname);
    return -1;
  }
  if (!parse_count(ts->num, &ts->n)) {
    diag_error(d, ts->num_at, "%s count must be a whole number, not '%s'",
               pname, ts->num);
    return -1;
  }
  if (ts->n == 0) {
    diag_error(d, ts->num_at, "%s count must be greater than zero", pname);
    return -1;
  }
  if (ts->unit->ns && ts->n > UINT64_MAX / ts->unit->ns) {
    diag_error(d, ts->num_at, "%s is too long: %s%s", pname, ts->num,
               ts->unit->name);
    return -1;
  }
  return 0;
}

/* Fills the one target of an interval or profile attach point. Its name,
 * which `probe` prints, is the spec as written, with the provider's full
 * name ("i:1s" prints as "interval:1s"). */
static int timer_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  TimerSpec ts;
  if (timer_spec(ap, d, &ts) < 0) return -1;
  const char *pname = ap->prov->name;
  Target *t = calloc(1, sizeof *t);
  size_t len = strlen(pname) + strlen(ap->parts[0]) +
               (ap->nparts == 2 ? strlen(ap->parts[1]) : 0) + 4;
  t->name = malloc(len);
  if (ap->nparts == 2)
    snprintf(t->name, len, "%s:%s:%s", pname, ap->parts[0], ap->parts[1]);
  else
    snprintf(t->name, len, "%s:%s", pname, ap->parts[0]);
  if (ts.unit->ns)
    t->period = ts.n * ts.unit->ns;
  else
    t->freq = ts.n;
  ap->targets = t;
  ap->ntargets = 1;
  return 0;
}

static void timer_attr(const Target *t, struct perf_event_attr *attr) {
  memset(attr, 0, sizeof *attr);
  attr->type = PERF_TYPE_SOFTWARE;
  attr->config = PERF_COUNT_SW_CPU_CLOCK;
  if (t->freq) {
    attr->freq = 1;
    attr->sample_freq = t->freq;
  } else {
    attr->sample_period = t->period;
  }
}

static int interval_attach(const Target *t, const Settings *st, int prog_fd,
                           LinkSet *links, char *err, size_t errlen) {
  struct perf_event_attr attr;
  timer_attr(t, &attr);
  /* bpftrace fires interval probes on one CPU only; CPU 0 always exists. */
  return perf_event_attach(&attr, -1, 0, prog_fd, links, err, errlen);
}

/* ---- every CPU ------------------------------------------------------ */

int probe_online_cpus(int *cpus, int max) {
  FILE *f = fopen("/sys/devices/system/cpu/online", "r");
  int n = 0;
  if (f) {
    int lo, hi;
    char sep;
    while (n < max && fscanf(f, "%d", &lo) == 1) {
      hi = lo;
      sep = (char)fgetc(f);
      if (sep == '-') {
        if (fscanf(f, "%d", &hi) != 1) break;
        sep = (char)fgetc(f);
      }
      for (int c = lo; c <= hi && n < max; c++) cpus[n++] = c;
      if (sep != ',') break;
    }
    fclose(f);
  }
  if (n == 0) {
    /* No sysfs: assume CPUs 0..N-1 are all there. */
    long count = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < count && n < max; c++) cpus[n++] = c;
  }
  return n;
}

#define MAX_CPUS 4096

static int attach_every_cpu(struct perf_event_attr *attr, int prog_fd,
                            LinkSet *links, char *err, size_t errlen) {
  static int cpus[MAX_CPUS];
  int n = probe_online_cpus(cpus, MAX_CPUS);
  for (int i = 0; i < n; i++)
    if (perf_event_attach(attr, -1, cpus[i], prog_fd, links, err, errlen) < 0)
      return -1;
  return 0;
}

static int profile_attach(const Target *t, const Settings *st, int prog_fd,
                          LinkSet *links, char *err, size_t errlen) {
  struct perf_event_attr attr;
  timer_attr(t, &attr);
  return attach_every_cpu(&attr, prog_fd, links, err, errlen);
}

static void timer_list(const char *provider, const char *pattern,
                       FILE *out) {
  for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "%s:%s:", provider, units[i].name);
    if (!pattern || !*pattern || glob_match(pattern, name))
      fprintf(out, "%s\n", name);
  }
}

static void interval_list(const char *pattern, const Settings *st, FILE *out) {
  timer_list("interval", pattern, out);
}

static void profile_list(const char *pattern, const Settings *st, FILE *out) {
  timer_list("profile", pattern, out);
}

const Provider interval_provider = {
    .name = "interval",
    .aliases = (const char *const[]){"i", NULL},
    .prog_type = BPF_PROG_TYPE_PERF_EVENT,
    .expand = timer_expand,
    .attach = interval_attach,
    .list = interval_list,
    .prog_prefix = "iv_",
};

const Provider profile_provider = {
    .name = "profile",
    .aliases = (const char *const[]){"p", NULL},
    .prog_type = BPF_PROG_TYPE_PERF_EVENT,
    .expand = timer_expand,
    .attach = profile_attach,
    .list = profile_list,
};

/* ---- software and hardware events ----------------------------------- */

typedef struct PerfEventName {
  const char *name;
  const char *alias;       /* or NULL */
  uint64_t config;         /* PERF_COUNT_SW_* or PERF_COUNT_HW_* */
  uint64_t default_count;  /* sample period when none is written */
} PerfEventName;

static const PerfEventName software_events[] = {
    {"alignment-faults", NULL, PERF_COUNT_SW_ALIGNMENT_FAULTS, 1},
    {"bpf-output", NULL, PERF_COUNT_SW_BPF_OUTPUT, 1},
    {"context-switches", "cs", PERF_COUNT_SW_CONTEXT_SWITCHES, 1000},
    {"cpu-clock", "cpu", PERF_COUNT_SW_CPU_CLOCK, 1000000},
    {"cpu-migrations", NULL, PERF_COUNT_SW_CPU_MIGRATIONS, 1},
    {"dummy", NULL, PERF_COUNT_SW_DUMMY, 1},
    {"emulation-faults", NULL, PERF_COUNT_SW_EMULATION_FAULTS, 1},
    {"major-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MAJ, 1},
    {"minor-faults", NULL, PERF_COUNT_SW_PAGE_FAULTS_MIN, 100},
    {"page-faults", "faults", PERF_COUNT_SW_PAGE_FAULTS, 100},
    {"task-clock", NULL, PERF_COUNT_SW_TASK_CLOCK, 1000000},
};

/* The generic hardware events of perf_event_open(2); which of them a CPU
 * counts is up to its PMU. */
static const PerfEventName hardware_events[] = {
    {"backend-stalls", NULL, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, 1000000},
    {"branch-instructions", "branches", PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
     100000},
    {"branch-misses", NULL, PERF_COUNT_HW_BRANCH_MISSES, 100000},
    {"bus-cycles", NULL, PERF_COUNT_HW_BUS_CYCLES, 100000},
    {"cache-misses", NULL, PERF_COUNT_HW_CACHE_MISSES, 1000000},
    {"cache-references", NULL, PERF_COUNT_HW_CACHE_REFERENCES, 1000000},
    {"cpu-cycles", "cycles", PERF_COUNT_HW_CPU_CYCLES, 1000000},
    {"frontend-stalls", NULL, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, 1000000},
    {"instructions", NULL, PERF_COUNT_HW_INSTRUCTIONS, 1000000},
    {"ref-cycles", NULL, PERF_COUNT_HW_REF_CPU_CYCLES, 1000000},
};

typedef struct PerfEventKind {
  const char *provider;
  uint32_t type;           /* PERF_TYPE_SOFTWARE or PERF_TYPE_HARDWARE */
  const PerfEventName *events;
  size_t n;
} PerfEventKind;

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))
static const PerfEventKind software_kind = {
    "software", PERF_TYPE_SOFTWARE, software_events, COUNT_OF(software_events)};
static const PerfEventKind hardware_kind = {
    "hardware", PERF_TYPE_HARDWARE, hardware_events, COUNT_OF(hardware_events)};

static const PerfEventKind *kind_of(const char *provider) {
  return !strcmp(provider, "hardware") ? &hardware_kind : &software_kind;
}

static const PerfEventName *event_find(const PerfEventKind *k,
                                       const char *name) {
  for (size_t i = 0; i < k->n; i++) {
    const PerfEventName *e = &k->events[i];
    if (!strcmp(e->name, name) || (e->alias && !strcmp(e->alias, name)))
      return e;
  }
  return NULL;
}

static int perf_kind_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  const PerfEventKind *k = kind_of(ap->prov->name);
  if (ap->nparts != 1 && ap->nparts != 2) {
    diag_error(d, ap->span, "%s probe type requires 1 or 2 arguments",
               k->provider);
    return -1;
  }
  const PerfEventName *e = event_find(k, ap->parts[0]);
  if (!e) {
    diag_error(d, ap->span, "%s is not a %s probe", ap->parts[0],
               k->provider);
    diag_hint(d, "loupe -l '%s:*' lists them", k->provider);
    return -1;
  }
  uint64_t count = e->default_count;
  if (ap->nparts == 2 && *ap->parts[1] && !parse_count(ap->parts[1], &count)) {
    diag_error(d, ap->span, "%s count must be a whole number, not '%s'",
               k->provider, ap->parts[1]);
    return -1;
  }
  if (count == 0) {
    diag_error(d, ap->span, "%s count must be greater than zero",
               k->provider);
    return -1;
  }
  Target *t = calloc(1, sizeof *t);
  size_t len = strlen(ap->parts[0]) + 40;
  t->name = malloc(len);
  /* The event as written, so `probe` prints what the script says. */
  if (ap->nparts == 2)
    snprintf(t->name, len, "%s:%s:%s", k->provider, ap->parts[0],
             ap->parts[1]);
  else
    snprintf(t->name, len, "%s:%s:", k->provider, ap->parts[0]);
  t->event = strdup(e->name);
  t->period = count;  /* here: events between firings */
  ap->targets = t;
  ap->ntargets = 1;
  return 0;
}

static int perf_kind_attach(const PerfEventKind *k, const Target *t,
                            int prog_fd, LinkSet *links, char *err,
                            size_t errlen) {
  const PerfEventName *e = event_find(k, t->event);
  if (!e) {
    snprintf(err, errlen, "unknown %s event %s", k->provider, t->event);
    return -1;
  }
  struct perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.type = k->type;
  attr.config = e->config;
  attr.sample_period = t->period;
  int r = attach_every_cpu(&attr, prog_fd, links, err, errlen);
  if (r < 0 && k->type == PERF_TYPE_HARDWARE &&
      (errno == ENOENT || errno == EOPNOTSUPP || errno == ENODEV))
    snprintf(err, errlen, "this machine's CPUs do not count %s (no "
             "hardware PMU, or not this event)", e->name);
  return r;
}

static int software_attach(const Target *t, const Settings *st, int prog_fd,
                           LinkSet *links, char *err, size_t errlen) {
  return perf_kind_attach(&software_kind, t, prog_fd, links, err, errlen);
}

static int hardware_attach(const Target *t, const Settings *st, int prog_fd,
                           LinkSet *links, char *err, size_t errlen) {
  return perf_kind_attach(&hardware_kind, t, prog_fd, links, err, errlen);
}

/* Each event by its name and by its alias ("software:cpu-clock:",
 * "software:cpu:"). The hardware ones are listed whether or not this
 * machine's CPUs count them. */
static void perf_kind_list(const PerfEventKind *k, const char *pattern,
                           FILE *out) {
  for (size_t i = 0; i < k->n; i++) {
    const char *names[2] = {k->events[i].name, k->events[i].alias};
    for (int j = 0; j < 2 && names[j]; j++) {
      char name[64];
      snprintf(name, sizeof name, "%s:%s:", k->provider, names[j]);
      if (!pattern || !*pattern || glob_match(pattern, name))
        fprintf(out, "%s\n", name);
    }
  }
}

static void software_list(const char *pattern, const Settings *st, FILE *out) {
  perf_kind_list(&software_kind, pattern, out);
}

static void hardware_list(const char *pattern, const Settings *st, FILE *out) {
  perf_kind_list(&hardware_kind, pattern, out);
}

/* The kernel runs the software events of a CPU that share its list
 * (page faults, context switches, ...) newest first, so those attach last
 * to first; cpu-clock and task-clock each run on a timer of their own,
 * and the one started first fires first, so those attach in order. */
static bool software_newest_first(const AttachPoint *ap) {
  for (const Target *t = ap->targets; t; t = t->next) {
    const PerfEventName *e = event_find(&software_kind, t->event);
    if (e && (e->config == PERF_COUNT_SW_CPU_CLOCK ||
              e->config == PERF_COUNT_SW_TASK_CLOCK))
      return false;
  }
  return true;
}

const Provider software_provider = {
    .name = "software",
    .aliases = (const char *const[]){"s", NULL},
    .prog_type = BPF_PROG_TYPE_PERF_EVENT,
    .expand = perf_kind_expand,
    .attach = software_attach,
    .list = software_list,
    .newest_first = software_newest_first,
};

const Provider hardware_provider = {
    .name = "hardware",
    .aliases = (const char *const[]){"h", NULL},
    .prog_type = BPF_PROG_TYPE_PERF_EVENT,
    .expand = perf_kind_expand,
    .attach = hardware_attach,
    .list = hardware_list,
};
