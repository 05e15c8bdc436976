/* print_stack: stacks and symbols as bpftrace prints them. Frames come
 * from the stack-trace maps of builtins/stack.c; kernel addresses are
 * named from /proc/kallsyms, user ones from the process's files. */
#include "runtime/print_stack.h"

#include <bpf/bpf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sym/kallsyms.h"
#include "sym/usyms.h"

#define MAX_STACK_MAPS 16

static struct {
  int limit;
  int fd;
} stack_maps[MAX_STACK_MAPS];
static int nstack_maps;

static void stack_map_register(int limit, int fd) {
  for (int i = 0; i < nstack_maps; i++)
    if (stack_maps[i].limit == limit) {
      stack_maps[i].fd = fd;
      return;
    }
  if (nstack_maps < MAX_STACK_MAPS) {
    stack_maps[nstack_maps].limit = limit;
    stack_maps[nstack_maps++].fd = fd;
  }
}

/* A stack-trace map holds stacks of value_size / 8 frames at most
 * (builtins/stack.c makes one per limit). */
void stack_maps_use(const Compiled *c, const Loaded *l) {
  for (int i = 0; i < c->nmaps; i++)
    if (c->maps[i]->bpf_type == BPF_MAP_TYPE_STACK_TRACE)
      stack_map_register(c->maps[i]->value_size / 8, l->maps[i].fd);
}

static int stack_map_fd(int limit) {
  for (int i = 0; i < nstack_maps; i++)
    if (stack_maps[i].limit == limit) return stack_maps[i].fd;
  return -1;
}

/* The text being built, kept between calls. */
static char *text;
static size_t text_len, text_cap;

static void text_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void text_add(const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    /* no arithmetic on the NULL of a text not yet allocated */
    int n = vsnprintf(text ? text + text_len : NULL, text_cap - text_len,
                      fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < text_cap - text_len) {
      text_len += (size_t)n;
      return;
    }
    size_t cap = text_cap ? text_cap * 2 : 4096;
    while (cap < text_len + (size_t)n + 1) cap *= 2;
    char *grown = realloc(text, cap);
    if (!grown) return;
    text = grown;
    text_cap = cap;
  }
}

static void kernel_frame(StackMode mode, uint64_t ip, int indent) {
  uint64_t off = 0;
  const char *name = mode == STACK_RAW ? NULL : kallsyms_name(ip, &off);
  if (mode == STACK_RAW || mode == STACK_BUILD_ID)
    text_add("%" PRIx64 "\n", ip);
  else if (mode == STACK_PERF)
    text_add("\t%" PRIx64 " %s+%" PRIu64 "\n", ip, name ? name : "[unknown]",
             off);
  else if (name)
    text_add("%*s%s+%" PRIu64 "\n", indent, "", name, off);
  else
    text_add("%*s0x%" PRIx64 "\n", indent, "", ip);
}

static void user_frame(StackMode mode, int pid, uint64_t ip, int indent) {
  USym s = {0};
  if (mode == STACK_RAW) {
    text_add("%" PRIx64 "\n", ip);
    return;
  }
  bool lines = mode == STACK_BPFTRACE_LINES || mode == STACK_PERF_INLINED;
  bool known = usyms_lookup(pid, ip, lines, &s);
  /* the functions inlined there first, innermost first */
  for (int i = 0; i < s.ninlined; i++) {
    if (mode == STACK_PERF_INLINED)
      text_add("\t%" PRIx64 " %s (inlined)\n", ip, s.inlined[i].name);
    else if (s.inlined[i].file)
      text_add("%*s[inlined] %s@%s:%d\n", indent, "", s.inlined[i].name,
               s.inlined[i].file, s.inlined[i].line);
    else
      text_add("%*s[inlined] %s\n", indent, "", s.inlined[i].name);
  }
  if (mode == STACK_BUILD_ID) {
    if (known && s.build_id) {
      for (int i = 0; i < s.build_id_len; i++) text_add("%02x", s.build_id[i]);
      text_add(" 0x%" PRIx64 "\n", s.file_offset);
    } else {
      text_add("%" PRIx64 "\n", ip);
    }
  } else if (mode == STACK_PERF || mode == STACK_PERF_INLINED) {
    text_add("\t%" PRIx64 " %s+%" PRIu64 " (%s)\n", ip,
             s.name ? s.name : "[unknown]", s.name ? s.offset : 0,
             s.module ? s.module : "[unknown]");
  } else if (s.name && s.src_file) {
    text_add("%*s%s+%" PRIu64 "@%s:%d\n", indent, "", s.name, s.offset,
             s.src_file, s.src_line);
  } else if (s.name) {
    text_add("%*s%s+%" PRIu64 "\n", indent, "", s.name, s.offset);
  } else {
    text_add("%*s0x%" PRIx64 "\n", indent, "", ip);
  }
}

/* The addresses of stack value v, leaf first, ending at the first 0
 * (t->stack_limit of them); NULL for no stack. */
static uint64_t *stack_ips(const Type *t, uint64_t v) {
  uint32_t id = (uint32_t)(v & STACK_ID_MASK);
  int limit = t->stack_limit;
  int fd = stack_map_fd(limit);
  if (id == 0 || fd < 0 || limit <= 0) return NULL;
  uint64_t *ips = calloc((size_t)limit, sizeof(uint64_t));
  id -= 1;
  if (!ips || bpf_map_lookup_elem(fd, &id, ips) != 0) {
    free(ips);
    return NULL;
  }
  return ips;
}

const char *stack_text(const Type *t, uint64_t v, int indent) {
  text_len = 0;
  text_add("%s", "");
  int limit = t->stack_limit;
  uint64_t *ips = stack_ips(t, v);
  if (!ips) return text;
  bool user = t->named == NAMED_USTACK;
  int pid = (int)(v >> 32);
  text_add("\n");
  for (int i = 0; i < limit && ips[i]; i++) {
    if (user)
      user_frame((StackMode)t->stack_mode, pid, ips[i], indent);
    else
      kernel_frame((StackMode)t->stack_mode, ips[i], indent);
  }
  free(ips);
  return text;
}

int stack_frame_names(const Type *t, uint64_t v, char ***out) {
  *out = NULL;
  uint64_t *ips = stack_ips(t, v);
  int n = 0;
  while (ips && n < t->stack_limit && ips[n]) n++;
  char **names = n ? calloc((size_t)n, sizeof(char *)) : NULL;
  for (int i = 0; names && i < n; i++) {
    uint64_t off;
    USym s = {0};
    const char *name;
    if (t->named == NAMED_USTACK)
      name = usyms_lookup((int)(v >> 32), ips[i], false, &s) ? s.name : NULL;
    else
      name = kallsyms_name(ips[i], &off);
    char hex[24];
    snprintf(hex, sizeof hex, "0x%" PRIx64, ips[i]);
    names[i] = strdup(name ? name : hex);
  }
  free(ips);
  *out = names;
  return names ? n : 0;
}

const char *symbol_text(const Type *t, uint64_t v, char *buf, size_t len) {
  uint64_t off;
  const char *name = NULL;
  uint64_t addr = v;
  if (t->named == NAMED_KSYM) {
    name = kallsyms_name(v, &off);
  } else {
    addr = v & ((1ull << USYM_ADDR_BITS) - 1);
    USym s;
    if (usyms_lookup((int)(v >> USYM_ADDR_BITS), addr, false, &s))
      name = s.name;
  }
  if (name)
    snprintf(buf, len, "%s", name);
  else
    snprintf(buf, len, "0x%" PRIx64, addr);
  return buf;
}
