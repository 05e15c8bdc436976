/* tracepoint: the kernel's static trace events, found in tracefs.
 *
 *   tracepoint:CATEGORY:EVENT   (alias t:)  either part may hold * and ?
 *
 * Each event's `format` file tells its id (the perf event config) and the
 * layout of the record a program receives as its context. */
#define _GNU_SOURCE  /* memrchr */
#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "lang/ctype.h"
#include "probes/list.h"
#include "probes/provider.h"

/* ---- tracefs -------------------------------------------------------- */

static bool has_events_dir(const char *dir) {
  char path[600];
  struct stat st;
  snprintf(path, sizeof path, "%s/events", dir);
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The mount point of a tracefs listed in /proc/mounts, if any. */
static bool find_tracefs_mount(char *dir, size_t len) {
  FILE *f = fopen("/proc/mounts", "r");
  if (!f) return false;
  char line[1024], dev[256], mnt[512], fstype[64];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) {
    if (sscanf(line, "%255s %511s %63s", dev, mnt, fstype) == 3 &&
        !strcmp(fstype, "tracefs") && has_events_dir(mnt)) {
      snprintf(dir, len, "%s", mnt);
      found = true;
    }
  }
  fclose(f);
  return found;
}

const char *tracefs_dir(void) {
  static char dir[512];
  if (dir[0]) return dir;
  if (has_events_dir("/sys/kernel/tracing")) {
    snprintf(dir, sizeof dir, "/sys/kernel/tracing");
  } else if (has_events_dir("/sys/kernel/debug/tracing")) {
    snprintf(dir, sizeof dir, "/sys/kernel/debug/tracing");
  } else if (!find_tracefs_mount(dir, sizeof dir)) {
    /* Nothing mounted: mount it where the kernel documents it. */
    if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) < 0)
      return NULL;
    if (!has_events_dir("/sys/kernel/tracing")) {
      errno = ENOENT;
      return NULL;
    }
    snprintf(dir, sizeof dir, "/sys/kernel/tracing");
  }
  return dir;
}

/* ---- format files --------------------------------------------------- */

static char *strndup_trim(const char *s, size_t n) {
  while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
  while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
  return strndup(s, n);
}

static bool is_ident_char(char c) {
  return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* Splits a declaration such as "char prev_comm[16]", "const char * filename"
 * or "__data_loc char[] name" into the field's name and type. */
static void parse_decl(const char *decl, TpField *fld) {
  size_t end = strlen(decl);
  while (end > 0 && decl[end - 1] == ' ') end--;
  size_t name_end = end;
  long dim = -1;                   /* -1: not an array */
  if (end > 0 && decl[end - 1] == ']') {
    const char *open = memrchr(decl, '[', end);
    if (open) {
      name_end = open - decl;
      dim = strtol(open + 1, NULL, 10);
    }
  }
  size_t name_start = name_end;
  while (name_start > 0 && is_ident_char(decl[name_start - 1])) name_start--;
  fld->name = strndup(decl + name_start, name_end - name_start);

  char *base = strndup_trim(decl, name_start);
  fld->data_loc = !strncmp(base, "__data_loc", 10);
  fld->is_pointer = base[0] && base[strlen(base) - 1] == '*';
  if (fld->data_loc) {
    /* "__data_loc char[] name": a u32 locating a string after the record. */
    fld->is_string = strstr(base, "char[]") != NULL;
    fld->type_text = base;
  } else if (dim >= 0) {
    fld->is_array = dim > 0;
    fld->is_string = fld->is_array && (!strcmp(base, "char") ||
                                       !strcmp(base, "const char"));
    size_t len = strlen(base) + 24;
    fld->type_text = malloc(len);
    snprintf(fld->type_text, len, "%s[%ld]", base, dim);
    free(base);
  } else {
    fld->type_text = base;
  }
}

static int int_after(const char *line, const char *key) {
  const char *p = strstr(line, key);
  return p ? atoi(p + strlen(key)) : 0;
}

/* Parses one "\tfield:DECL;\toffset:N;\tsize:N;\tsigned:N;" line. Returns
 * false for lines that are not fields. */
static bool parse_field_line(const char *line, TpField *fld) {
  const char *p = strstr(line, "field:");
  if (!p) return false;
  p += 6;
  const char *semi = strchr(p, ';');
  if (!semi) return false;
  char *decl = strndup(p, semi - p);
  memset(fld, 0, sizeof *fld);
  parse_decl(decl, fld);
  free(decl);
  fld->offset = int_after(semi, "offset:");
  fld->size = int_after(semi, "size:");
  fld->is_signed = int_after(semi, "signed:") != 0;
  return true;
}

TpFormat *tp_format_parse(FILE *f) {
  TpFormat *fmt = calloc(1, sizeof *fmt);
  int cap = 0;
  char line[4096];
  fmt->id = -1;
  while (fgets(line, sizeof line, f)) {
    if (!strncmp(line, "ID:", 3)) {
      fmt->id = atoi(line + 3);
      continue;
    }
    if (!strncmp(line, "print fmt:", 10)) break;
    TpField fld;
    if (!parse_field_line(line, &fld)) continue;
    if (!strncmp(fld.name, "common_", 7)) {
      free(fld.name);
      free(fld.type_text);
      continue;
    }
    if (fmt->nfields == cap) {
      cap = cap ? cap * 2 : 8;
      fmt->fields = realloc(fmt->fields, cap * sizeof(TpField));
    }
    fmt->fields[fmt->nfields++] = fld;
  }
  return fmt;
}

/* The syscall events' format files say signed:0 for every argument (the
 * kernel records each as an unsigned long), so an argument's sign is its
 * declared type's, as bpftrace reads them: in the 8-byte field, `int` is
 * signed and `unsigned int`, `unsigned`, `u32`, `pid_t`, `uid_t` and
 * `gid_t` unsigned (bpftrace's own widening), any other integer type
 * (long, off_t, loff_t, clockid_t ...) as C declares it. A typedef takes
 * the kernel's BTF to know, so the type is parsed when the field is first
 * looked at (field_sign), not here. */
static void syscall_arg_signs(TpFormat *fmt) {
  static const char *const widened_unsigned[] = {
      "unsigned int", "unsigned", "u32", "pid_t", "uid_t", "gid_t"};
  for (int i = 0; i < fmt->nfields; i++) {
    TpField *f = &fmt->fields[i];
    if (f->is_pointer || f->is_array || f->data_loc || f->size != 8)
      continue;
    const char *type = f->type_text;
    if (!strncmp(type, "const ", 6)) type += 6;
    bool widened = false;
    for (size_t k = 0; k < sizeof widened_unsigned / sizeof *widened_unsigned;
         k++)
      widened |= !strcmp(type, widened_unsigned[k]);
    if (widened)
      f->is_signed = false;
    else
      f->sign_pending = true;
  }
}

/* A syscall argument's sign, from its declared type (syscall_arg_signs). */
static const TpField *field_sign(TpField *f) {
  if (!f->sign_pending) return f;
  f->sign_pending = false;
  const char *type = f->type_text;
  if (!strncmp(type, "const ", 6)) type += 6;
  char err[160];
  const CType *ct = ctype_parse(type, err, sizeof err);
  if (ct && (ct->kind == C_INT || ct->kind == C_ENUM))
    f->is_signed = ct->is_signed;
  return f;
}

/* Formats already read, so the checker and expand share one copy. */
typedef struct FormatCache {
  struct FormatCache *next;
  char *category, *event;
  TpFormat *format;
} FormatCache;

static FormatCache *format_cache;

TpFormat *tp_format(const char *category, const char *event) {
  for (FormatCache *c = format_cache; c; c = c->next)
    if (!strcmp(c->category, category) && !strcmp(c->event, event))
      return c->format;
  const char *dir = tracefs_dir();
  if (!dir) return NULL;
  char path[1024];
  snprintf(path, sizeof path, "%s/events/%s/%s/format", dir, category, event);
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  TpFormat *fmt = tp_format_parse(f);
  fclose(f);
  if (!strcmp(category, "syscalls")) syscall_arg_signs(fmt);
  tp_format_remember(category, event, fmt);
  return fmt;
}

void tp_format_remember(const char *category, const char *event,
                        TpFormat *fmt) {
  FormatCache *c = calloc(1, sizeof *c);
  c->category = strdup(category);
  c->event = strdup(event);
  c->format = fmt;
  c->next = format_cache;
  format_cache = c;
}

const TpField *tp_field(const TpFormat *f, const char *name) {
  for (int i = 0; f && i < f->nfields; i++)
    if (!strcmp(f->fields[i].name, name)) return field_sign(&f->fields[i]);
  return NULL;
}

const TpField *tp_field_at(const TpFormat *f, int i) {
  return field_sign(&f->fields[i]);
}

/* ---- enumerating events --------------------------------------------- */

static int only_dirs(const struct dirent *e) {
  return e->d_name[0] != '.' && e->d_type == DT_DIR;
}

/* Calls fn for every category:event whose parts match the globs, in
 * alphabetical order. */
static void each_event(const char *cat_glob, const char *ev_glob,
                       void (*fn)(const char *cat, const char *ev, void *arg),
                       void *arg) {
  const char *dir = tracefs_dir();
  if (!dir) return;
  char path[1024];
  snprintf(path, sizeof path, "%s/events", dir);
  struct dirent **cats;
  int ncats = scandir(path, &cats, only_dirs, alphasort);
  for (int i = 0; i < ncats; i++) {
    const char *cat = cats[i]->d_name;
    if (glob_match(cat_glob, cat)) {
      struct dirent **evs;
      snprintf(path, sizeof path, "%s/events/%s", dir, cat);
      int nevs = scandir(path, &evs, only_dirs, alphasort);
      for (int j = 0; j < nevs; j++) {
        if (glob_match(ev_glob, evs[j]->d_name)) fn(cat, evs[j]->d_name, arg);
        free(evs[j]);
      }
      if (nevs >= 0) free(evs);
    }
    free(cats[i]);
  }
  if (ncats >= 0) free(cats);
}

/* ---- the provider --------------------------------------------------- */

static char *target_name(const char *cat, const char *ev) {
  size_t len = strlen(cat) + strlen(ev) + 16;
  char *s = malloc(len);
  snprintf(s, len, "tracepoint:%s:%s", cat, ev);
  return s;
}

static void add_target(const char *cat, const char *ev, void *arg) {
  AttachPoint *ap = arg;
  TpFormat *fmt = tp_format(cat, ev);
  if (!fmt) return;  /* vanished, or no format: nothing to attach to */
  Target *t = calloc(1, sizeof *t);
  t->name = target_name(cat, ev);
  t->category = strdup(cat);
  t->event = strdup(ev);
  t->format = fmt;
  /* Append, keeping the alphabetical order of the listing. */
  ap_add_target(ap, t);
}

static int tracepoint_expand(AttachPoint *ap, const Settings *st, Diag *d) {
  if (ap->nparts != 2) {
    diag_error(d, ap->span, "tracepoint probe type requires 2 arguments");
    return -1;
  }
  const char *cat = ap->parts[0], *ev = ap->parts[1];
  if (!tracefs_dir()) {
    int err = errno;
    diag_error(d, ap->span, "cannot find or mount tracefs: %s",
               strerror(err));
    if ((err == EPERM || err == EACCES) && geteuid() != 0)
      diag_hint(d, "tracepoints can only be read as root: run loupe with "
                "sudo");
    else
      diag_hint(d, "mount it with: mount -t tracefs nodev "
                "/sys/kernel/tracing");
    return -1;
  }
  bool wild = has_wildcard(cat) || has_wildcard(ev);
  if (wild)
    each_event(cat, ev, add_target, ap);
  else
    add_target(cat, ev, ap);
  if (ap->ntargets == 0) {
    char what[512];
    snprintf(what, sizeof what, "%s:%s", cat, ev);
    return probe_no_matches(ap, d, what);
  }
  return 0;
}

static int tracepoint_attach(const Target *t, const Settings *st, int prog_fd,
                             LinkSet *links, char *err, size_t errlen) {
  struct perf_event_attr attr = {0};
  attr.type = PERF_TYPE_TRACEPOINT;
  attr.config = t->format->id;
  attr.sample_period = 1;
  attr.wakeup_events = 1;
  /* One event on CPU 0 suffices: a program attached to a tracepoint runs
   * wherever the tracepoint fires. */
  return perf_event_attach(&attr, -1, 0, prog_fd, links, err, errlen);
}

typedef struct ListArgs {
  const char *pattern;  /* NULL: everything */
  bool verbose;         /* -lv */
  FILE *out;
} ListArgs;

static void list_one(const char *cat, const char *ev, void *arg) {
  ListArgs *la = arg;
  char *name = target_name(cat, ev);
  if (!la->pattern || glob_match(la->pattern, name) ||
      glob_match(la->pattern, ev)) {
    fprintf(la->out, "%s\n", name);
    if (la->verbose) list_fields(tp_format(cat, ev), la->out);
  }
  free(name);
}

static void tracepoint_list(const char *pattern, const Settings *st,
                            FILE *out) {
  ListArgs la = {NULL, st->list_verbose, out};
  char *full = NULL;
  if (pattern && *pattern) {
    /* "t:sched:*" lists the same as "tracepoint:sched:*". */
    if (!strncmp(pattern, "t:", 2)) {
      size_t len = strlen(pattern) + 16;
      full = malloc(len);
      snprintf(full, len, "tracepoint:%s", pattern + 2);
      la.pattern = full;
    } else {
      la.pattern = pattern;
    }
  }
  each_event("*", "*", list_one, &la);
  free(full);
}

/* A system call's arguments are the caller's: its pointers are user
 * addresses. */
static bool tracepoint_args_user_space(const Target *t) {
  return !strcmp(t->category, "syscalls");
}

const Provider tracepoint_provider = {
    .name = "tracepoint",
    .aliases = (const char *const[]){"t", NULL},
    .prog_type = BPF_PROG_TYPE_TRACEPOINT,
    .expand = tracepoint_expand,
    .attach = tracepoint_attach,
    .list = tracepoint_list,
    .args = ARGS_FIELDS,
    .args_user_space = tracepoint_args_user_space,
    .prog_prefix = "tp_",
};
