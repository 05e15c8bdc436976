/* btf_peek: named types of the kernel's BTF without parsing all of it
 * (see btf_peek.h). */
#include "probes/btf_peek.h"

#include <fcntl.h>
#include <linux/btf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The bytes that follow a type's common part, by kind (the kernel's
 * Documentation/bpf/btf.rst); -1 for a kind loupe does not know, whose
 * size it cannot skip. */
static long type_extra(const struct btf_type *t) {
  long vlen = BTF_INFO_VLEN(t->info);
  switch (BTF_INFO_KIND(t->info)) {
  case BTF_KIND_INT:
  case BTF_KIND_VAR:
  case BTF_KIND_DECL_TAG:
    return 4;
  case BTF_KIND_ARRAY:
    return (long)sizeof(struct btf_array);
  case BTF_KIND_STRUCT:
  case BTF_KIND_UNION:
    return vlen * (long)sizeof(struct btf_member);
  case BTF_KIND_ENUM:
    return vlen * (long)sizeof(struct btf_enum);
  case BTF_KIND_FUNC_PROTO:
    return vlen * (long)sizeof(struct btf_param);
  case BTF_KIND_DATASEC:
    return vlen * (long)sizeof(struct btf_var_secinfo);
  case BTF_KIND_ENUM64:
    return vlen * 12;   /* struct btf_enum64 */
  case BTF_KIND_PTR:
  case BTF_KIND_FWD:
  case BTF_KIND_TYPEDEF:
  case BTF_KIND_VOLATILE:
  case BTF_KIND_CONST:
  case BTF_KIND_RESTRICT:
  case BTF_KIND_FUNC:
  case BTF_KIND_FLOAT:
  case BTF_KIND_TYPE_TAG:
    return 0;
  default:
    return -1;
  }
}

/* The string at `off` of the string section, or NULL past its end (the
 * section ends with a NUL, checked before). */
static const char *str_at(const char *strs, uint32_t len, uint32_t off) {
  return off < len ? strs + off : NULL;
}

/* q's member in struct t (whose members follow it); false if it is not
 * one of t's own named members. */
static bool direct_member(const struct btf_type *t, const char *strs,
                          uint32_t str_len, const char *name, int *offset) {
  const struct btf_member *m = (const struct btf_member *)(t + 1);
  for (uint32_t i = 0; i < BTF_INFO_VLEN(t->info); i++, m++) {
    const char *s = str_at(strs, str_len, m->name_off);
    if (!s || strcmp(s, name)) continue;
    uint32_t bits = BTF_INFO_KFLAG(t->info) ? BTF_MEMBER_BIT_OFFSET(m->offset)
                                            : m->offset;
    *offset = (int)(bits / 8);
    return true;
  }
  return false;
}

/* Walks the types of BTF data `d` (len bytes) in id order until every
 * query has its answer. */
static bool peek(const char *d, size_t len, BtfPeek *q, int n) {
  const struct btf_header *h = (const struct btf_header *)d;
  if (len < sizeof *h || h->magic != BTF_MAGIC || h->version != BTF_VERSION ||
      h->hdr_len < sizeof *h || h->hdr_len > len)
    return false;
  size_t body = len - h->hdr_len;
  if ((size_t)h->type_off + h->type_len > body ||
      (size_t)h->str_off + h->str_len > body || h->str_len == 0 ||
      h->type_off % 4 || h->hdr_len % 4)
    return false;
  const char *types = d + h->hdr_len + h->type_off;
  const char *strs = d + h->hdr_len + h->str_off;
  if (strs[h->str_len - 1] != '\0') return false;
  int left = n;
  for (int i = 0; i < n; i++) q[i].found = -1;
  const char *p = types, *end = types + h->type_len;
  while (left > 0 && p < end) {
    const struct btf_type *t = (const struct btf_type *)p;
    long extra;
    if ((size_t)(end - p) < sizeof *t || (extra = type_extra(t)) < 0 ||
        (size_t)(end - p) - sizeof *t < (size_t)extra)
      return false;
    p += sizeof *t + (size_t)extra;
    int kind = (int)BTF_INFO_KIND(t->info);
    if (kind != BTF_KIND_STRUCT && kind != BTF_KIND_TYPEDEF) continue;
    const char *name = str_at(strs, h->str_len, t->name_off);
    if (!name || !*name) continue;
    for (int i = 0; i < n; i++) {
      if (q[i].found >= 0 || q[i].kind != kind || strcmp(q[i].name, name))
        continue;
      q[i].found = 0;
      if (q[i].member &&
          !direct_member(t, strs, h->str_len, q[i].member, &q[i].found))
        return false;
      left--;
    }
  }
  return true;
}

bool btf_peek_kernel(BtfPeek *q, int n) {
  int fd = open("/sys/kernel/btf/vmlinux", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  bool ok = false;
  /* mapped (kernels since 6.16): only the pages walked are read */
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void *d = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (d != MAP_FAILED) {
      ok = peek(d, (size_t)st.st_size, q, n);
      munmap(d, (size_t)st.st_size);
    }
  }
  close(fd);
  return ok;
}
