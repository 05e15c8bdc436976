/* sysheader: finding the system headers a script includes and scanning
 * them for their constants (see sysheader.h). */
#include "lang/sysheader_int.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util/safe_file.h"

/* #if groups open at once in one file: deeper is an error. */
#define SCAN_MAX_CONDS 64
/* An enumerator's value text, at most. */
#define ENUM_VALUE_MAX 256

/* ---- names to entries ------------------------------------------------- */

static unsigned hash_name(const char *name, int len) {
  unsigned hash = 2166136261u;
  for (int i = 0; i < len; i++) hash = (hash ^ (unsigned char)name[i]) * 16777619u;
  return hash;
}

/* The slot of `name`: its entry's, or the empty one it would take. */
static int *slot_of(const HTable *t, const char *name, int len) {
  unsigned i = hash_name(name, len) & (unsigned)(t->nslots - 1);
  for (;; i = (i + 1) & (unsigned)(t->nslots - 1)) {
    int k = t->slots[i];
    if (!k) return &t->slots[i];
    const char *e = t->v[k - 1].name;
    if ((int)strlen(e) == len && !strncmp(e, name, (size_t)len))
      return &t->slots[i];
  }
}

static void grow(HTable *t) {
  int nslots = t->nslots ? t->nslots * 2 : 256;
  t->slots = calloc((size_t)nslots, sizeof *t->slots);
  if (!t->slots) abort();
  t->nslots = nslots;
  for (int k = 0; k < t->n; k++) {
    const char *name = t->v[k].name;
    *slot_of(t, name, (int)strlen(name)) = k + 1;
  }
}

/* The entry of `name` if it is defined (not #undef'd). */
const HEntry *htable_find(const HTable *t, const char *name, int len) {
  if (!t->nslots) return NULL;
  int k = *slot_of(t, name, len);
  return k && !t->v[k - 1].removed ? &t->v[k - 1] : NULL;
}

/* The entry to define `name` in: a new one, or NULL if it is defined
 * already (the first definition stands, as include guards mean). */
static HEntry *htable_add(HTable *t, const char *name, int len) {
  if (2 * (t->n + 1) > t->nslots) {
    free(t->slots);
    grow(t);
  }
  int *slot = slot_of(t, name, len);
  if (*slot) {
    HEntry *old = &t->v[*slot - 1];
    if (!old->removed) return NULL;
    free(old->body);
    memset(&old->body, 0, sizeof *old - offsetof(HEntry, body));
    return old;
  }
  if (t->n == t->cap) {
    t->cap = t->cap ? 2 * t->cap : 256;
    t->v = realloc(t->v, sizeof *t->v * (size_t)t->cap);
    if (!t->v) abort();
  }
  HEntry *e = &t->v[t->n++];
  memset(e, 0, sizeof *e);
  e->name = strndup(name, (size_t)len);
  if (!e->name) abort();
  *slot = t->n;
  return e;
}

static void define(SysHeaders *h, const char *name, int len,
                   const char *body, int blen, bool function_like,
                   const char *file, int line) {
  HEntry *e = htable_add(&h->macros, name, len);
  if (!e) return;
  e->body = strndup(body, (size_t)blen);
  if (!e->body) abort();
  e->function_like = function_like;
  e->file = file;
  e->line = line;
}

/* ---- the include path ------------------------------------------------- */

static void add_dir(SysHeaders *h, const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) return;
  for (int i = 0; i < h->ndirs; i++)
    if (!strcmp(h->dirs[i], dir)) return;   /* the source tree is the build */
  h->dirs = realloc(h->dirs, sizeof *h->dirs * (size_t)(h->ndirs + 1));
  if (!h->dirs) abort();
  h->dirs[h->ndirs] = strdup(dir);
  if (!h->dirs[h->ndirs]) abort();
  h->ndirs++;
}

/* The kernel's name of an architecture, for its headers' arch/ dir. */
static const char *kernel_arch(const char *machine) {
  if (!strcmp(machine, "x86_64") || !strncmp(machine, "i", 1)) return "x86";
  if (!strcmp(machine, "aarch64")) return "arm64";
  if (!strncmp(machine, "arm", 3)) return "arm";
  if (!strncmp(machine, "ppc", 3)) return "powerpc";
  if (!strncmp(machine, "riscv", 5)) return "riscv";
  if (!strncmp(machine, "s390", 4)) return "s390";
  return machine;
}

/* The running kernel's headers, as bpftrace finds them: the source tree
 * BPFTRACE_KERNEL_SOURCE (default /lib/modules/$(uname -r)/source) and
 * the build tree BPFTRACE_KERNEL_BUILD (default .../build), either
 * standing for the other if only one is there. */
static void add_kernel_dirs(SysHeaders *h, const struct utsname *u) {
  char src[1024], obj[1024], dir[1200];
  const char *env_src = getenv("BPFTRACE_KERNEL_SOURCE");
  const char *env_obj = getenv("BPFTRACE_KERNEL_BUILD");
  snprintf(src, sizeof src, "%s", env_src && *env_src ? env_src : "");
  snprintf(obj, sizeof obj, "%s", env_obj && *env_obj ? env_obj : "");
  if (!*src && !*obj) {
    snprintf(src, sizeof src, "/lib/modules/%s/source", u->release);
    snprintf(obj, sizeof obj, "/lib/modules/%s/build", u->release);
    if (access(src, F_OK) != 0) snprintf(src, sizeof src, "%s", obj);
    if (access(obj, F_OK) != 0) snprintf(obj, sizeof obj, "%s", src);
  }
  if (!*src) snprintf(src, sizeof src, "%s", obj);
  if (!*obj) snprintf(obj, sizeof obj, "%s", src);
  static const struct { bool build; const char *sub; } kernel_dirs[] = {
      {false, "arch/%s/include"}, {true, "arch/%s/include/generated"},
      {false, "include"}, {true, "include"},
      {false, "arch/%s/include/uapi"}, {true, "arch/%s/include/generated/uapi"},
      {false, "include/uapi"}, {true, "include/generated/uapi"}};
  for (size_t i = 0; i < sizeof kernel_dirs / sizeof *kernel_dirs; i++) {
    char sub[64];
    snprintf(sub, sizeof sub, kernel_dirs[i].sub, kernel_arch(u->machine));
    snprintf(dir, sizeof dir, "%s/%s", kernel_dirs[i].build ? obj : src, sub);
    add_dir(h, dir);
  }
}

/* As gcc searches: -I dirs, /usr/local/include, the multiarch directory
 * (gcc -print-multiarch: the machine and "-linux-gnu"), /usr/include;
 * then the running kernel's headers if installed, for the kernel's own
 * headers that no package puts in /usr/include (after the C library's:
 * <linux/fs.h> is the uapi one, and __KERNEL__ is not defined). */
static void set_include_path(SysHeaders *h, const char **dirs, int ndirs) {
  for (int i = 0; i < ndirs; i++) add_dir(h, dirs[i]);
  struct utsname u;
  if (uname(&u) != 0) memset(&u, 0, sizeof u);
  char dir[1024];
  add_dir(h, "/usr/local/include");
  snprintf(dir, sizeof dir, "/usr/include/%s-linux-gnu", u.machine);
  add_dir(h, dir);
  add_dir(h, "/usr/include");
  add_kernel_dirs(h, &u);
}

/* The compiler's own macros that uapi and C library headers test: the
 * system, the architecture, the data model, the byte order. */
static void predefine(SysHeaders *h) {
  struct utsname u;
  if (uname(&u) != 0) memset(&u, 0, sizeof u);
  char arch[80];
  snprintf(arch, sizeof arch, "__%s__", u.machine);
  const char *names[][2] = {
      {"__linux__", "1"}, {"__linux", "1"}, {"__unix__", "1"},
      {"__unix", "1"}, {"__STDC__", "1"}, {"__STDC_HOSTED__", "1"},
      {"__STDC_VERSION__", "201710L"}, {"__CHAR_BIT__", "8"},
      {"__ORDER_LITTLE_ENDIAN__", "1234"}, {"__ORDER_BIG_ENDIAN__", "4321"},
      {"__BYTE_ORDER__", __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                             ? "__ORDER_LITTLE_ENDIAN__"
                             : "__ORDER_BIG_ENDIAN__"},
      {"__LP64__", sizeof(long) == 8 ? "1" : NULL},
      {"_LP64", sizeof(long) == 8 ? "1" : NULL},
      {"__SIZEOF_LONG__", sizeof(long) == 8 ? "8" : "4"},
      {"__SIZEOF_POINTER__", sizeof(void *) == 8 ? "8" : "4"},
      {arch, "1"}, {!strcmp(u.machine, "x86_64") ? "__amd64__" : NULL, "1"}};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (names[i][0] && names[i][1])
      define(h, names[i][0], (int)strlen(names[i][0]), names[i][1],
             (int)strlen(names[i][1]), false, "<built-in>", 0);
}

SysHeaders *sysheaders_new(const char **include_dirs, int ninclude_dirs) {
  SysHeaders *h = calloc(1, sizeof *h);
  if (!h) abort();
  set_include_path(h, include_dirs, ninclude_dirs);
  predefine(h);
  return h;
}

/* Where header `name` is: beside the including file first if `beside`
 * (#include "name"), then in the include path from dir `from` on
 * (#include_next starts after the including file's). The dir's index,
 * -2 for beside, -1 if nowhere. */
static int find_file(const SysHeaders *h, const char *name, int nlen,
                     const char *beside, int from, char *path, size_t size) {
  if (name[0] == '/') {
    snprintf(path, size, "%.*s", nlen, name);
    return access(path, F_OK) == 0 ? -2 : -1;
  }
  if (beside) {
    const char *slash = strrchr(beside, '/');
    snprintf(path, size, "%.*s%.*s", slash ? (int)(slash - beside + 1) : 0,
             beside, nlen, name);
    if (access(path, F_OK) == 0) return -2;
  }
  for (int i = from < 0 ? 0 : from; i < h->ndirs; i++) {
    snprintf(path, size, "%s/%.*s", h->dirs[i], nlen, name);
    if (access(path, F_OK) == 0) return i;
  }
  return -1;
}

/* ---- scanning a file -------------------------------------------------- */

/* An #if group open in the file: whether the lines now are taken, whether
 * one of its branches was (or its #if was inside one not taken), whether
 * its conditions so far could not be evaluated. */
typedef struct Cond {
  bool active, done, unknown;
} Cond;

typedef struct Scan {
  SysHeaders *h;
  const char *path;   /* as recorded in h->read */
  int dir;            /* where it was found (find_file) */
  int depth;
  char *why;
  size_t whylen;
  Cond cond[SCAN_MAX_CONDS];
  int ncond;
  /* enum { NAME = value, ... } in the text outside directives */
  enum { EN_NONE, EN_HEAD, EN_BODY, EN_NAME, EN_VALUE } en;
  char en_name[128];
  char en_value[ENUM_VALUE_MAX];
  int en_vlen, en_paren, en_line;
  bool en_too_long;   /* a value longer than en_value: not evaluated */
  int64_t en_next;
  bool en_known;
} Scan;

static int scan_file(SysHeaders *h, const char *path, int dir, int depth,
                     char *why, size_t whylen);

/* A growing line buffer. */
typedef struct Line {
  char *buf;
  size_t n, cap;
} Line;

static void put_char(Line *l, char c) {
  if (l->n + 2 > l->cap) {
    l->cap = l->cap ? l->cap * 2 : 1024;
    l->buf = realloc(l->buf, l->cap);
    if (!l->buf) abort();
  }
  l->buf[l->n++] = c;
}

/* A logical line into l: backslash-newlines joined, comments replaced by
 * a space; *line is where it starts. False at the end of the text. */
static bool read_line(const char **pp, int *lineno, Line *l, int *line) {
  const char *p = *pp;
  if (!*p) return false;
  *line = *lineno;
  l->n = 0;
  while (*p) {
    char c = *p;
    if (c == '\\' && (p[1] == '\n' || (p[1] == '\r' && p[2] == '\n'))) {
      p += p[1] == '\n' ? 2 : 3;
      ++*lineno;
    } else if (c == '\n') {
      p++;
      ++*lineno;
      break;
    } else if (c == '/' && p[1] == '*') {
      for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
        if (*p == '\n') ++*lineno;
      if (*p) p += 2;
      put_char(l, ' ');
    } else if (c == '/' && p[1] == '/') {
      while (*p && *p != '\n') p++;
    } else if (c == '"' || c == '\'') {   /* a literal: no comment inside */
      put_char(l, *p++);
      while (*p && *p != c && *p != '\n') {
        if (*p == '\\' && p[1] && p[1] != '\n') put_char(l, *p++);
        put_char(l, *p++);
      }
      if (*p == c) put_char(l, *p++);
    } else {
      put_char(l, c);
      p++;
    }
  }
  put_char(l, 0);
  *pp = p;
  return true;
}

static bool active(const Scan *s) {
  return s->ncond == 0 || s->cond[s->ncond - 1].active;
}

/* Whether the current line might be compiled: every group around it is
 * taken, or its condition is not known. */
static bool possible(const Scan *s) {
  for (int i = 0; i < s->ncond; i++)
    if (!s->cond[i].active && !s->cond[i].unknown) return false;
  return true;
}

static void make_uncertain(Scan *s, const char *name, int len, int line) {
  HEntry *e = htable_add(&s->h->uncertain, name, len);
  if (e) e->file = s->path, e->line = line;
}

static const char *skip_blanks(const char *p) {
  while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\f') p++;
  return p;
}

static bool word_is(const char *w, int len, const char *word) {
  return (int)strlen(word) == len && !strncmp(w, word, (size_t)len);
}

static const char *ident_end(const char *p) {
  if (!isalpha((unsigned char)*p) && *p != '_') return p;
  while (isalnum((unsigned char)*p) || *p == '_') p++;
  return p;
}

/* #if, #ifdef, #ifndef, #elif, #else, #endif. A condition loupe cannot
 * evaluate takes no branch of its group (so nothing it guards is
 * defined rather than perhaps the wrong one). */
static int conditional(Scan *s, const char *word, int wlen, const char *rest) {
  bool parent = s->ncond < 1 || s->cond[s->ncond - 1].active;
  bool is_if = word_is(word, wlen, "if");
  bool is_ifdef = word_is(word, wlen, "ifdef");
  bool is_ifndef = word_is(word, wlen, "ifndef");
  if (is_if || is_ifdef || is_ifndef) {
    if (s->ncond == SCAN_MAX_CONDS) {
      snprintf(s->why, s->whylen, "%s nests #if more than %d deep", s->path,
               SCAN_MAX_CONDS);
      return -1;
    }
    bool truth = false, unknown = false;
    if (parent && is_if) {
      unknown = sh_eval_if(s->h, rest, &truth) != EVAL_OK;
    } else if (parent) {
      int len = (int)(ident_end(rest) - rest);
      unknown = htable_find(&s->h->uncertain, rest, len) != NULL;
      truth = (htable_find(&s->h->macros, rest, len) != NULL) == is_ifdef;
    }
    s->cond[s->ncond].active = parent && truth && !unknown;
    s->cond[s->ncond].done = !parent || truth;
    s->cond[s->ncond].unknown = unknown;
    s->ncond++;
    return 1;
  }
  if (s->ncond == 0) return 1;   /* unbalanced: as if at top level */
  bool outer = s->ncond < 2 || s->cond[s->ncond - 2].active;
  Cond *c = &s->cond[s->ncond - 1];
  if (word_is(word, wlen, "endif")) {
    s->ncond--;
  } else if (word_is(word, wlen, "else")) {
    c->active = outer && !c->done && !c->unknown;
    c->done = true;
  } else if (word_is(word, wlen, "elif")) {
    bool truth = false;
    if (!outer || c->done || c->unknown)
      c->active = false;
    else if (sh_eval_if(s->h, rest, &truth) != EVAL_OK)
      c->active = false, c->unknown = true;
    else
      c->active = truth, c->done = truth;
  }
  return 1;
}

/* #include <name>, "name" and #include_next: the file is scanned in turn;
 * one found nowhere is passed over, as the script's own are. */
static int include(Scan *s, const char *rest, bool next) {
  char close = *rest == '<' ? '>' : *rest == '"' ? '"' : 0;
  if (!close) return 1;   /* #include MACRO: not followed */
  const char *end = strchr(rest + 1, close);
  if (!end || end == rest + 1) return 1;
  char path[4096];
  /* #include_next in a file not found in the path is an #include (gcc) */
  int from = next && s->dir >= 0 ? s->dir + 1 : 0;
  int dir = find_file(s->h, rest + 1, (int)(end - rest - 1),
                      close == '"' && !next ? s->path : NULL, from, path,
                      sizeof path);
  if (dir == -1) return 1;
  return scan_file(s->h, path, dir, s->depth + 1, s->why, s->whylen);
}

static void define_line(Scan *s, const char *rest, int line) {
  const char *e = ident_end(rest);
  if (e == rest) return;
  bool function_like = *e == '(';
  const char *body = function_like ? strchr(e, ')') : e;
  body = skip_blanks(body ? (function_like ? body + 1 : body) : e);
  const char *bend = body + strlen(body);
  while (bend > body && isspace((unsigned char)bend[-1])) bend--;
  define(s->h, rest, (int)(e - rest), body, (int)(bend - body), function_like,
         s->path, line);
}

static int directive(Scan *s, const char *p, int line) {
  p = skip_blanks(p + 1);
  const char *w = p, *e = ident_end(p);
  int wlen = (int)(e - w);
  const char *rest = skip_blanks(e);
  static const char *const conds[] = {"if", "ifdef", "ifndef", "elif",
                                      "else", "endif", NULL};
  for (int i = 0; conds[i]; i++)
    if (word_is(w, wlen, conds[i])) return conditional(s, w, wlen, rest);
  if (!active(s)) {
    /* a branch that might be taken: what it defines is not known */
    if (possible(s) && (word_is(w, wlen, "define") || word_is(w, wlen, "undef")))
      make_uncertain(s, rest, (int)(ident_end(rest) - rest), line);
    return 1;
  }
  if (word_is(w, wlen, "include")) return include(s, rest, false);
  if (word_is(w, wlen, "include_next")) return include(s, rest, true);
  if (word_is(w, wlen, "define")) {
    define_line(s, rest, line);
  } else if (word_is(w, wlen, "undef")) {
    const char *ne = ident_end(rest);
    HEntry *m = (HEntry *)htable_find(&s->h->macros, rest, (int)(ne - rest));
    if (m) m->removed = true;
  }
  return 1;   /* #error, #pragma, #line...: nothing to record */
}

/* ---- enumerators ------------------------------------------------------ */

static void enumerator_done(Scan *s) {
  CVal v = {.v = (uint64_t)s->en_next};
  bool known = s->en_known;
  if (s->en_too_long) {
    known = false;
  } else if (s->en_vlen) {
    s->en_value[s->en_vlen] = 0;
    known = sh_eval_const(s->h, s->en_value, NULL, &v, NULL, 0) == EVAL_OK;
  }
  s->en_known = known;
  if (known) {
    HEntry *e = htable_add(&s->h->enums, s->en_name, (int)strlen(s->en_name));
    if (e) {
      e->value = (int64_t)v.v;
      e->file = s->path;
      e->line = s->en_line;
    }
    s->en_next = (int64_t)v.v + 1;
  }
  s->en_vlen = 0;
  s->en_too_long = false;
}

/* One token of the text outside directives, for the enum definitions. */
static void enum_token(Scan *s, const char *t, int len, int line) {
  bool ident = isalpha((unsigned char)*t) || *t == '_';
  char c = len == 1 ? *t : 0;
  switch (s->en) {
  case EN_NONE:
    if (len == 4 && !strncmp(t, "enum", 4)) s->en = EN_HEAD;
    break;
  case EN_HEAD:
    if (c == '{') s->en = EN_BODY, s->en_next = 0, s->en_known = true;
    else if (!ident) s->en = EN_NONE;
    break;
  case EN_BODY:
    if (c == '}') s->en = EN_NONE;
    else if (ident && len < (int)sizeof s->en_name) {
      snprintf(s->en_name, sizeof s->en_name, "%.*s", len, t);
      s->en = EN_NAME;
      s->en_line = line;
      s->en_vlen = 0;
    }
    break;
  case EN_NAME:
    if (c == '=') s->en = EN_VALUE, s->en_paren = 0;
    else if (c == ',' || c == '}') enumerator_done(s);
    if (c == ',') s->en = EN_BODY;
    else if (c == '}') s->en = EN_NONE;
    break;
  case EN_VALUE:
    if (s->en_paren == 0 && (c == ',' || c == '}')) {
      enumerator_done(s);
      s->en = c == ',' ? EN_BODY : EN_NONE;
      break;
    }
    s->en_paren += (c == '(') - (c == ')');
    if (s->en_vlen + len + 2 < ENUM_VALUE_MAX) {
      memcpy(s->en_value + s->en_vlen, t, (size_t)len);
      s->en_vlen += len;
      s->en_value[s->en_vlen++] = ' ';
    } else {
      s->en_too_long = true;
    }
    break;
  }
}

static void enum_tokens(Scan *s, const char *p, int line) {
  while (*p) {
    if (isspace((unsigned char)*p)) {
      p++;
      continue;
    }
    const char *e = p + 1;
    if (isalnum((unsigned char)*p) || *p == '_')
      for (e = p; isalnum((unsigned char)*e) || *e == '_'; e++) {}
    else if (*p == '"' || *p == '\'')
      for (; *e && *e != *p; e += (*e == '\\' && e[1]) ? 2 : 1) {}
    else if (strchr("<>", *p) && e[0] == *p)
      e++;   /* << and >> in a value */
    if (*p == '"' || *p == '\'') e += *e != 0;
    enum_token(s, p, (int)(e - p), line);
    p = e;
  }
}

/* ---- files ------------------------------------------------------------ */

/* Scans `path` and what it includes: 1, or -1 with the reason in why.
 * Each file is read once (headers are guarded, and a definition that
 * stands is not changed by a second reading). Past the limits on files
 * and bytes the rest is left unread. */
static int scan_file(SysHeaders *h, const char *path, int dir, int depth,
                     char *why, size_t whylen) {
  if (htable_find(&h->read, path, (int)strlen(path)) ||
      h->read.n == SYSHEADER_MAX_FILES || h->bytes > SYSHEADER_MAX_BYTES)
    return 1;
  if (depth > SYSHEADER_MAX_DEPTH) {
    snprintf(why, whylen, "includes nest more than %d deep at %s",
             SYSHEADER_MAX_DEPTH, path);
    return -1;
  }
  size_t len;
  struct stat st;
  char *text = safe_read_file(path, SYSHEADER_MAX_FILE_BYTES, &len, &st);
  if (!text) {
    snprintf(why, whylen, "%s: %s", path,
             errno == EINVAL  ? "not a regular file"
             : errno == EFBIG ? "larger than a header can be"
                              : strerror(errno));
    return -1;
  }
  h->bytes += len;
  HEntry *file = htable_add(&h->read, path, (int)strlen(path));
  Scan *s = calloc(1, sizeof *s);
  if (!s) abort();
  *s = (Scan){.h = h, .path = file->name, .dir = dir, .depth = depth,
              .why = why, .whylen = whylen};
  const char *p = text;
  Line l = {0};
  int lineno = 1, line, result = 1;
  while (result > 0 && read_line(&p, &lineno, &l, &line)) {
    const char *q = skip_blanks(l.buf);
    if (*q == '#') result = directive(s, q, line);
    else if (active(s) && *q) enum_tokens(s, q, line);
  }
  free(l.buf);
  free(text);
  free(s);
  return result;
}

/* ---- what the script asks --------------------------------------------- */

int sysheaders_include(SysHeaders *h, const char *name, int nlen, char *why,
                       size_t whylen) {
  h->asked = realloc(h->asked, sizeof *h->asked * (size_t)(h->nasked + 1));
  if (!h->asked) abort();
  h->found = realloc(h->found, sizeof *h->found * (size_t)(h->nasked + 1));
  if (!h->found) abort();
  h->asked[h->nasked] = strndup(name, (size_t)nlen);
  if (!h->asked[h->nasked]) abort();
  char path[4096];
  int dir = find_file(h, name, nlen, NULL, 0, path, sizeof path);
  h->found[h->nasked++] = dir != -1;
  if (dir == -1) return 0;
  return scan_file(h, path, dir, 0, why, whylen);
}

bool sysheaders_defined(const SysHeaders *h, const char *name, int len) {
  return htable_find(&h->macros, name, len) != NULL;
}

int sysheaders_constant(const SysHeaders *h, const char *name,
                        int64_t *value, bool *is_unsigned, char *why,
                        size_t whylen) {
  int len = (int)strlen(name);
  const HEntry *m = htable_find(&h->macros, name, len);
  const HEntry *u = htable_find(&h->uncertain, name, len);
  *is_unsigned = false;
  if (u) {
    snprintf(why, whylen, "'%s' is defined under a condition loupe cannot "
             "evaluate (%s:%d)", name, u->file, u->line);
    return -1;
  }
  if (!m) {
    const HEntry *e = htable_find(&h->enums, name, len);
    if (!e) return 0;
    *value = e->value;
    return 1;
  }
  if (m->function_like) {
    snprintf(why, whylen, "'%s' is a function-like macro (%s:%d), and loupe "
             "reads only constants from system headers", name, m->file,
             m->line);
    return -1;
  }
  CVal v;
  char reason[4400] = "";
  if (sh_eval_const(h, m->body, m, &v, reason, sizeof reason) != EVAL_OK) {
    snprintf(why, whylen, "'%s' (%s:%d) is not a constant loupe can "
             "evaluate: %s", name, m->file, m->line, reason);
    return -1;
  }
  *value = (int64_t)v.v;
  *is_unsigned = v.uns && v.bits == 64 && v.v > INT64_MAX;
  return 1;
}

void sysheaders_describe(const SysHeaders *h, bool found, char *out,
                         size_t size, int *count) {
  int total = 0, k = 0;   /* "<a.h>, <b.h>" */
  for (int i = 0; i < h->nasked; i++) total += h->found[i] == found;
  size_t n = 0;
  out[0] = 0;
  for (int i = 0; i < h->nasked && n < size; i++)
    if (h->found[i] == found) {
      n += (size_t)snprintf(out + n, size - n, "%s<%s>", k++ ? ", " : "",
                            h->asked[i]);
    }
  *count = total;
}
