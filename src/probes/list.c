/* list: `loupe -l`, the probes a pattern names, and the kernel's struct
 * definitions.
 *
 *   loupe -l                         every probe of every provider
 *   loupe -l 'tracepoint:sched:*'    a provider's probes matching a glob
 *   loupe -l '*ware:*'               the provider part may be a glob too
 *   loupe -l '*sleep*'               no ':': every provider's full names
 *   loupe -l 'A,B'                   each comma-separated pattern in turn
 *   loupe -l 'struct task_struct'    a struct's definition, from BTF
 *   loupe -lv ...                    with each probe's arguments
 *
 * (A script's own probes, `loupe -l -e '...'` or `loupe -l FILE`, are
 * listed by main, which compiles the script up to its expansion.) */
#include "probes/list.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

#include "lang/ctype.h"
#include "probes/provider.h"

/* ---- C text of BTF types -------------------------------------------- */

void btf_type_text(const struct btf *btf, int id, char *buf, size_t len) {
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  const char *name = t ? btf__name_by_offset(btf, t->name_off) : NULL;
  char inner[256];
  if (id == 0 || !t) {
    snprintf(buf, len, "void");
  } else if (btf_is_ptr(t)) {
    const struct btf_type *to = btf__type_by_id(btf, t->type);
    if (to && btf_is_func_proto(to)) {
      snprintf(buf, len, "void *");     /* a function pointer */
      return;
    }
    btf_type_text(btf, (int)t->type, inner, sizeof inner);
    size_t n = strlen(inner);
    snprintf(buf, len, "%s%s", inner, n && inner[n - 1] == '*' ? "*" : " *");
  } else if (btf_is_const(t) || btf_is_volatile(t)) {
    btf_type_text(btf, (int)t->type, inner, sizeof inner);
    snprintf(buf, len, "%s %s", btf_is_const(t) ? "const" : "volatile",
             inner);
  } else if (btf_is_mod(t) || btf_is_type_tag(t)) {
    btf_type_text(btf, (int)t->type, buf, len);   /* restrict, tags */
  } else if (btf_is_array(t)) {
    btf_type_text(btf, (int)btf_array(t)->type, inner, sizeof inner);
    snprintf(buf, len, "%s[%u]", inner, btf_array(t)->nelems);
  } else if (btf_is_struct(t) || btf_is_union(t) || btf_is_any_enum(t)) {
    snprintf(buf, len, "%s %s",
             btf_is_struct(t) ? "struct" : btf_is_union(t) ? "union" : "enum",
             name && *name ? name : "(anonymous)");
  } else {
    snprintf(buf, len, "%s", name && *name ? name : "void");
  }
}

/* "TYPE NAME" as C declares it: arrays after the name, function pointers
 * around it. */
static void decl_text(const struct btf *btf, int id, const char *name,
                      char *buf, size_t len) {
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  char inner[512];
  if (t && btf_is_array(t)) {
    snprintf(inner, sizeof inner, "%s[%u]", name, btf_array(t)->nelems);
    decl_text(btf, (int)btf_array(t)->type, inner, buf, len);
    return;
  }
  const struct btf_type *to = t && btf_is_ptr(t)
                                  ? btf__type_by_id(btf, t->type) : NULL;
  if (to && btf_is_func_proto(to)) {
    btf_type_text(btf, (int)to->type, inner, sizeof inner);
    snprintf(buf, len, "%s (*%s)()", inner, name);
    return;
  }
  btf_type_text(btf, id, inner, sizeof inner);
  size_t n = strlen(inner);
  snprintf(buf, len, "%s%s%s", inner, n && inner[n - 1] == '*' ? "" : " ",
           name);
}

/* ---- struct definitions --------------------------------------------- */

static void print_members(const struct btf *btf, const struct btf_type *t,
                          int depth, FILE *out) {
  const struct btf_member *m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++, m++) {
    const char *name = btf__name_by_offset(btf, m->name_off);
    const struct btf_type *mt = btf__type_by_id(btf, m->type);
    int indent = 4 * (depth + 1);
    if ((!name || !*name) && mt && (btf_is_struct(mt) || btf_is_union(mt))) {
      /* an anonymous struct or union member: its members, nested */
      fprintf(out, "%*s%s {\n", indent, "",
              btf_is_struct(mt) ? "struct" : "union");
      if (depth < 8) print_members(btf, mt, depth + 1, out);
      fprintf(out, "%*s};\n", indent, "");
      continue;
    }
    char decl[768];
    decl_text(btf, (int)m->type, name ? name : "", decl, sizeof decl);
    int bits = btf_member_bitfield_size(t, i);
    if (bits)
      fprintf(out, "%*s%s:%d;\n", indent, "", decl, bits);
    else
      fprintf(out, "%*s%s;\n", indent, "", decl);
  }
}

/* "struct task_struct", "union NAME" or "enum NAME": its definition as
 * "vmlinux: struct task_struct { ... };". Returns 0, or 1 if BTF has
 * none. */
static int list_type(const char *text, FILE *out) {
  const char *space = strchr(text, ' ');
  if (!space) return 1;
  size_t klen = (size_t)(space - text);
  const char *name = space + strspn(space, " ");
  bool is_union = klen == 5 && !strncmp(text, "union", 5);
  bool is_enum = klen == 4 && !strncmp(text, "enum", 4);
  struct btf *btf = ctype_kernel_btf();
  if (!btf) {
    fprintf(stderr, "ERROR: no kernel BTF to find '%s' in\n", text);
    return 1;
  }
  int id = btf__find_by_name_kind(btf, name, is_union  ? BTF_KIND_UNION
                                             : is_enum ? BTF_KIND_ENUM
                                                       : BTF_KIND_STRUCT);
  if (id <= 0 && is_enum) id = btf__find_by_name_kind(btf, name,
                                                      BTF_KIND_ENUM64);
  if (id <= 0) {
    fprintf(stderr, "ERROR: the kernel's BTF has no %s\n", text);
    return 1;
  }
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  fprintf(out, "vmlinux: %.*s %s {\n", (int)klen, text, name);
  if (is_enum) {
    for (int i = 0; i < btf_vlen(t); i++) {
      bool wide = btf_is_enum64(t);
      const char *ename = btf__name_by_offset(
          btf, wide ? btf_enum64(t)[i].name_off : btf_enum(t)[i].name_off);
      long long v = wide ? (long long)btf_enum64_value(&btf_enum64(t)[i])
                         : (long long)btf_enum(t)[i].val;
      fprintf(out, "    %s = %lld,\n", ename, v);
    }
  } else {
    print_members(btf, t, 0, out);
  }
  fputs("};\n", out);
  return 0;
}

/* ---- probes --------------------------------------------------------- */

/* One pattern, which has no comma. */
static int list_one(const char *pattern, const Settings *st, FILE *out) {
  if (!strncmp(pattern, "struct ", 7) || !strncmp(pattern, "union ", 6) ||
      !strncmp(pattern, "enum ", 5))
    return list_type(pattern, out);
  const char *colon = strchr(pattern, ':');
  size_t plen = colon ? (size_t)(colon - pattern) : strlen(pattern);
  char *pname = strndup(pattern, plen);
  const Provider *prov = provider_find(pname);
  bool wild = has_wildcard(pname);
  int status = 0;
  if (!colon && prov) {
    /* "loupe -l tracepoint" lists every tracepoint */
    if (prov->list) prov->list(NULL, st, out);
  } else if (!colon) {
    for (int i = 0; providers[i]; i++)
      if (providers[i]->list) providers[i]->list(pattern, st, out);
  } else if (prov || wild) {
    /* Providers print canonical names, so each gets the pattern in its
     * canonical spelling ("t:sched:*" → "tracepoint:sched:*"); a glob in
     * the provider part offers the rest to every provider it matches. */
    for (int i = 0; providers[i]; i++) {
      const Provider *p = providers[i];
      if (!p->list || (prov ? p != prov : !glob_match(pname, p->name)))
        continue;
      size_t len = strlen(p->name) + strlen(colon) + 1;
      char *canonical = malloc(len);
      snprintf(canonical, len, "%s%s", p->name, colon);
      p->list(canonical, st, out);
      free(canonical);
    }
  } else {
    fprintf(stderr, "loupe: unknown probe type '%s' in '%s'\n", pname,
            pattern);
    fputs("HINT: patterns start with a probe type, e.g. "
          "'tracepoint:sched:*', or have no ':' at all, e.g. '*sched*'\n",
          stderr);
    status = 1;
  }
  free(pname);
  return status;
}

int list_probes(const char *pattern, const Settings *st, FILE *out) {
  if (!pattern || !*pattern) {
    for (int i = 0; providers[i]; i++)
      if (providers[i]->list) providers[i]->list(NULL, st, out);
    return 0;
  }
  int status = 0;
  char *copy = strdup(pattern), *save = NULL;
  for (char *p = strtok_r(copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
    p += strspn(p, " ");
    if (*p && list_one(p, st, out) != 0) status = 1;
  }
  free(copy);
  return status;
}

void list_fields(const TpFormat *fmt, FILE *out) {
  for (int i = 0; fmt && i < fmt->nfields; i++) {
    const TpField *f = &fmt->fields[i];
    const char *bracket = f->in_u64 ? NULL : strchr(f->type_text, '[');
    if (bracket)   /* "char[16]" declares as "char name[16]" */
      fprintf(out, "    %.*s %s%s\n", (int)(bracket - f->type_text),
              f->type_text, f->name, bracket);
    else
      fprintf(out, "    %s %s\n", f->type_text, f->name);
  }
}
