/* config: bpftrace's config variables. Each has one name, written
 * `max_strlen`, `MAX_STRLEN` or `BPFTRACE_MAX_STRLEN` in the config block
 * and `BPFTRACE_MAX_STRLEN` in the environment; the environment wins, as
 * bpftrace documents. Values are checked whether loupe acts on them or
 * not, so a script that loupe accepts is one bpftrace accepts too. */
#include "lang/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lang/ast.h"
#include "model/program.h"

typedef enum { K_INT, K_BOOL, K_WORD } KeyKind;

/* What a key sets; F_IGNORED: checked, then ignored with a warning. */
typedef enum {
  F_IGNORED, F_STRLEN, F_MAP_KEYS, F_PRINT_MAPS, F_MISSING, F_LICENSE,
  F_RB_PAGES, F_CAT_BYTES, F_METRICS_SERIES, F_STACK_MODE, F_DEBUG_INFO, F_TRAILER,
  F_BPF_PROGS, F_UNSTABLE_MAP_DECL, F_UNSTABLE_TSERIES, F_MAX_PROBES
} Field;

typedef struct Key {
  const char *name;            /* lower case, without BPFTRACE_ */
  const char *old_name;        /* an older environment name, or NULL */
  KeyKind kind;
  long long lo, hi;            /* K_INT */
  const char *const *words;    /* K_WORD: the valid values, NULL-ended */
  bool word_case;              /* K_WORD: case matters */
  Field field;
  long long dflt;              /* K_INT, K_BOOL: the value unless set */
  const char *dflt_word;       /* K_WORD: the value unless set */
} Key;

static const char *const missing_words[] = {"error", "warn", "ignore", NULL};
static const char *const license_words[] = {
    "Dual MIT/GPL", "Dual BSD/GPL", "Dual MPL/GPL",
    "GPL and additional rights", "GPL v2", "GPL", NULL};
static const char *const stack_words[] = {"bpftrace", "perf", "raw",
                                          "build_id", NULL};
static const char *const cache_words[] = {"PER_PROGRAM", "PER_PID", "NONE",
                                          NULL};
/* An unstable feature: "error" forbids it; loupe warns of neither. */
static const char *const unstable_words[] = {"error", "warn", "enable",
                                             NULL};

#define INT_KEY(n, old, lo, hi, f, d) \
  {n, old, K_INT, lo, hi, NULL, false, f, d, NULL}
#define BOOL_KEY(n, f, d) {n, NULL, K_BOOL, 0, 1, NULL, false, f, d, NULL}
#define WORD_KEY(n, w, cs, f, d) {n, NULL, K_WORD, 0, 0, w, cs, f, 0, d}

/* Alphabetical, as config() lists them; the defaults are loupe's (the
 * same as bpftrace's but max_strlen, as bpftrace 0.17 has it). */
static const Key keys[] = {
    WORD_KEY("cache_user_symbols", cache_words, false, F_IGNORED, "PER_PID"),
    BOOL_KEY("cpp_demangle", F_IGNORED, 1),
    BOOL_KEY("lazy_symbolication", F_IGNORED, 0),
    WORD_KEY("license", license_words, true, F_LICENSE, "GPL"),
    INT_KEY("log_size", NULL, 1, 1LL << 32, F_IGNORED, 1000000),
    INT_KEY("max_bpf_progs", NULL, 1, 1 << 24, F_BPF_PROGS, 1024),
    INT_KEY("max_cat_bytes", NULL, 1, 1 << 24, F_CAT_BYTES, 10240),
    INT_KEY("max_map_keys", "BPFTRACE_MAP_KEYS_MAX", 1, 1 << 24,
            F_MAP_KEYS, DEFAULT_MAP_KEYS),
    INT_KEY("max_probes", NULL, 1, 1 << 24, F_MAX_PROBES, 1024),
    INT_KEY("max_strlen", "BPFTRACE_STRLEN", 1, MAX_STRLEN_LIMIT, F_STRLEN,
            DEFAULT_STRLEN),
    /* loupe's own: the series of one map in its metrics (--metrics) */
    INT_KEY("metrics_max_series", NULL, 1, 1 << 24, F_METRICS_SERIES,
            METRICS_MAX_SERIES_DEFAULT),
    WORD_KEY("missing_probes", missing_words, false, F_MISSING, "error"),
    INT_KEY("on_stack_limit", NULL, 0, 1 << 20, F_IGNORED, 32),
    INT_KEY("perf_rb_pages", NULL, 1, 1 << 18, F_RB_PAGES, 256),
    BOOL_KEY("print_maps_on_exit", F_PRINT_MAPS, 1),
    BOOL_KEY("show_debug_info", F_DEBUG_INFO, 1),
    WORD_KEY("stack_mode", stack_words, false, F_STACK_MODE, "bpftrace"),
    WORD_KEY("str_trunc_trailer", NULL, true, F_TRAILER, ".."),
    WORD_KEY("unstable_dw_ustack", unstable_words, false, F_IGNORED, "warn"),
    WORD_KEY("unstable_map_decl", unstable_words, false, F_UNSTABLE_MAP_DECL,
             "warn"),
    WORD_KEY("unstable_tseries", unstable_words, false, F_UNSTABLE_TSERIES,
             "warn"),
};
#define NKEYS (int)(sizeof keys / sizeof keys[0])
_Static_assert(sizeof keys / sizeof keys[0] == CONFIG_NKEYS,
               "Settings holds a value for each key");

/* The key written `name` in a config block, or NULL. */
static const Key *find_key(const char *name) {
  const char *bare = name;
  if (!strncasecmp(bare, "BPFTRACE_", 9)) bare += 9;
  for (int i = 0; i < NKEYS; i++)
    if (!strcasecmp(bare, keys[i].name) ||
        (keys[i].old_name && !strcasecmp(name, keys[i].old_name)))
      return &keys[i];
  return NULL;
}

/* "a, b, c": the valid values, for a message. */
static void list_words(const char *const *w, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = 0;
  for (int i = 0; w[i] && len < size; i++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? ", " : "",
                            w[i]);
}

/* Reads `text`, the value of k written as `shown`, into *ival or *word.
 * NULL, or why not (in `err`). */
static const char *parse_value(const Key *k, const char *shown,
                               const char *text,
                               long long *ival, const char **word,
                               char *err, size_t size) {
  char *end;
  if (k->kind == K_INT) {
    long long v = strtoll(text, &end, 0);
    if (!*text || *end || v < k->lo || v > k->hi) {
      if (k->field == F_STRLEN && !*end && v > k->hi)
        snprintf(err, size, "loupe supports %s up to %lld bytes (found %s)",
                 shown, k->hi, text);
      else
        snprintf(err, size, "Invalid value for %s. Found: %s. Valid values: "
                 "integers from %lld to %lld", shown, text, k->lo, k->hi);
      return err;
    }
    *ival = v;
  } else if (k->kind == K_BOOL) {
    if (!strcmp(text, "1") || !strcasecmp(text, "true")) *ival = 1;
    else if (!strcmp(text, "0") || !strcasecmp(text, "false")) *ival = 0;
    else {
      snprintf(err, size, "Invalid value for %s. Found: %s. Valid values: "
               "true, false", shown, text);
      return err;
    }
  } else {
    *word = text;
    for (int i = 0; k->words && k->words[i]; i++)
      if (k->word_case ? !strcmp(text, k->words[i])
                       : !strcasecmp(text, k->words[i])) {
        *ival = i;
        *word = k->words[i];
        return NULL;
      }
    if (k->words) {
      char valid[256];
      list_words(k->words, valid, sizeof valid);
      snprintf(err, size, "Invalid value for %s. Found: %s. Valid values: %s",
               shown, text, valid);
      return err;
    }
  }
  return NULL;
}

static void apply(Settings *st, const Key *k, long long v, const char *w) {
  st->value[k - keys] = v;
  st->word[k - keys] = w;
  switch (k->field) {
  case F_STRLEN: st->max_strlen = (int)v; break;
  case F_MAP_KEYS: st->max_map_keys = (int)v; break;
  case F_PRINT_MAPS: st->print_maps_on_exit = v != 0; break;
  case F_MISSING: st->missing_probes = (MissingProbes)v; break;
  case F_LICENSE: st->license = w; break;
  case F_RB_PAGES: st->perf_rb_pages = (int)v; break;
  case F_CAT_BYTES: st->max_cat_bytes = (int)v; break;
  case F_METRICS_SERIES: st->metrics_max_series = (int)v; break;
  case F_BPF_PROGS: st->max_bpf_progs = (int)v; break;
  case F_MAX_PROBES: st->max_probes = (int)v; break;
  case F_STACK_MODE: st->stack_mode = (int)v; break;
  case F_DEBUG_INFO: st->show_debug_info = v != 0; break;
  case F_TRAILER: st->str_trunc_trailer = w; break;
  case F_UNSTABLE_MAP_DECL: st->forbid_map_decl = v == 0; break;
  case F_UNSTABLE_TSERIES: st->forbid_tseries = v == 0; break;
  case F_IGNORED: break;
  }
}

/* A config block value as text: 8, "GPL" or a bare word such as raw. */
static const char *value_text(const Node *v, char *buf, size_t size) {
  if (v->kind == N_INT) {
    snprintf(buf, size, "%lld", (long long)v->ival);
    return buf;
  }
  if (v->kind == N_STR) return v->sval;
  if (v->kind == N_BUILTIN) return v->name;
  return NULL;
}

static void read_block(Script *s, Diag *d) {
  for (ConfigItem *it = s->config; it; it = it->next) {
    const Key *k = find_key(it->key);
    if (!k) {
      diag_error(d, it->span, "%s: not a known configuration option",
                 it->key);
      continue;
    }
    char buf[32], err[512];
    const char *text = value_text(it->value, buf, sizeof buf);
    long long v = 0;
    const char *w = NULL;
    if (!text) {
      diag_error(d, it->value->span, "Invalid value for %s: expected a "
                 "number, a word or a string", it->key);
    } else if (parse_value(k, it->key, text, &v, &w, err, sizeof err)) {
      diag_error(d, it->value->span, "%s", err);
    } else if (k->field == F_IGNORED) {
      diag_warning(d, it->span, "loupe ignores the config setting %s",
                   it->key);
      apply(s->settings, k, v, w);
    } else {
      apply(s->settings, k, v, w);
    }
  }
}

/* BPFTRACE_NAME (and the key's older name) from the environment. */
static void read_env(Script *s, Diag *d) {
  for (int i = 0; i < NKEYS; i++) {
    const Key *k = &keys[i];
    char name[64];
    snprintf(name, sizeof name, "BPFTRACE_%s", k->name);
    for (char *p = name; *p; p++)
      if (*p >= 'a' && *p <= 'z') *p = (char)(*p - 'a' + 'A');
    const char *env = getenv(name), *used = name;
    if ((!env || !*env) && k->old_name) {
      env = getenv(k->old_name);
      used = k->old_name;
    }
    /* an empty trailer is a setting: no trailer */
    if (!env || (!*env && k->field != F_TRAILER)) continue;
    char err[512];
    long long v = 0;
    const char *w = NULL;
    if (parse_value(k, used, env, &v, &w, err, sizeof err)) {
      diag_error(d, (Span){0}, "%s", err);
      continue;
    }
    if (k->field == F_IGNORED)
      diag_warning(d, (Span){0}, "loupe ignores the setting %s", used);
    apply(s->settings, k, v, w);
  }
}

/* A key's value unless set: its default, or for a word the default's
 * place in the key's words (as parse_value gives it). */
static long long default_value(const Key *k) {
  if (k->kind != K_WORD || !k->words) return k->dflt;
  for (int i = 0; k->words[i]; i++)
    if (!strcmp(k->words[i], k->dflt_word)) return i;
  return 0;
}

int config_read(Script *s, Diag *d) {
  int before = d->errors;
  for (int i = 0; i < NKEYS; i++)   /* the table's defaults, once */
    apply(s->settings, &keys[i], default_value(&keys[i]),
          keys[i].dflt_word);
  /* unset, the ring buffer is loupe's 1 MB, not 256 pages of whatever
   * size pages have */
  s->settings->perf_rb_pages = 0;
  read_block(s, d);
  read_env(s, d);
  return d->errors - before;
}

Node *config_record(const Script *s, Span at) {
  Node *rec = node_new(N_TUPLE, at);
  rec->fields = calloc(NKEYS, sizeof *rec->fields);
  if (!rec->fields) abort();
  Node **tail = &rec->args;
  for (int i = 0; i < NKEYS; i++) {
    const Key *k = &keys[i];
    Node *v;
    if (k->kind == K_WORD) {
      v = node_new(N_STR, at);
      v->sval = (char *)s->settings->word[i];
      v->slen = (int)strlen(v->sval);
    } else if (k->kind == K_BOOL) {
      v = node_new(N_BUILTIN, at);   /* true or false, typed bool */
      v->name = s->settings->value[i] ? "true" : "false";
    } else {
      v = node_new(N_INT, at);
      v->ival = s->settings->value[i];
    }
    rec->fields[i] = (char *)k->name;
    *tail = v;
    tail = &v->next;
  }
  return rec;
}
