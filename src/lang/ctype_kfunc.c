/* ctype_kfunc: what else the kernel's BTF names for BPF programs: the
 * kernel functions they call (kfuncs), and per-CPU variables
 * (percpu_kaddr). Declared in ctype.h, beside the types from the same
 * BTF (ctype.c loads it). */
#include "lang/ctype.h"

#include <stdlib.h>
#include <string.h>

#include <bpf/btf.h>

/* ---- kernel functions BPF programs call (kfuncs) ----------------------- */

int ctype_kernel_func_id(const char *name) {
  /* each lookup walks all of BTF; check and codegen ask for the same few
   * names again and again */
  static struct FuncSeen { const char *name; int id; } seen[16];
  static int nseen;
  for (int i = 0; i < nseen; i++)
    if (!strcmp(seen[i].name, name)) return seen[i].id;
  struct btf *btf = ctype_kernel_btf();
  if (!btf) return 0;
  int id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
  if (id < 0) id = 0;
  if (nseen < (int)(sizeof seen / sizeof seen[0])) {
    char *copy = strdup(name);
    if (!copy) abort();
    seen[nseen++] = (struct FuncSeen){copy, id};
  }
  return id;
}

/* Per type id of the kernel's BTF: whether it is a FUNC that BTF tags
 * "bpf_kfunc" (pahole 1.26 and later tag every kfunc so); *any is false
 * if BTF tags none. */
static const bool *kfunc_tagged(bool *any) {
  static bool *tagged, done, some;
  struct btf *btf = ctype_kernel_btf();
  if (!done && btf) {
    done = true;
    int ntypes = (int)btf__type_cnt(btf);
    tagged = calloc((size_t)ntypes, sizeof *tagged);
    if (!tagged) abort();
    for (int id = 1; id < ntypes; id++) {
      const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
      if (btf_is_decl_tag(t) && t->type < (__u32)ntypes &&
          !strcmp(btf__name_by_offset(btf, t->name_off), "bpf_kfunc"))
        some = tagged[t->type] = true;
    }
  }
  *any = some;
  return tagged;
}

bool ctype_is_kfunc(const char *name) {
  int id = ctype_kernel_func_id(name);
  if (id <= 0) return false;
  bool any;
  const bool *tagged = kfunc_tagged(&any);
  /* an older BTF without the tags: every function is a candidate */
  return !any || tagged[id];
}

const char *ctype_kernel_func_name(int id) {
  /* names only what is loaded already */
  struct btf *btf = ctype_btf_loaded() ? ctype_kernel_btf() : NULL;
  if (!btf || id <= 0 || id >= (int)btf__type_cnt(btf)) return NULL;
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  if (!t || !btf_is_func(t)) return NULL;
  return btf__name_by_offset(btf, t->name_off);
}

/* ---- per-CPU variables (percpu_kaddr) ---------------------------------- */

int ctype_percpu_var_id(const char *name) {
  struct btf *btf = ctype_kernel_btf();
  if (!btf) return 0;
  int id = btf__find_by_name_kind(btf, name, BTF_KIND_VAR);
  if (id <= 0) return 0;
  int sec = btf__find_by_name_kind(btf, ".data..percpu", BTF_KIND_DATASEC);
  if (sec <= 0) return -1;
  const struct btf_type *t = btf__type_by_id(btf, (__u32)sec);
  const struct btf_var_secinfo *v = btf_var_secinfos(t);
  for (int i = 0; i < btf_vlen(t); i++)
    if (v[i].type == (__u32)id) return id;
  return -1;
}
