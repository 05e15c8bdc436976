/* kernel_btf: the kernel's BTF objects and function prototypes as `args`
 * fields (see kernel_btf.h). */
#include "probes/kernel_btf.h"

#include <dirent.h>
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "lang/ctype.h"
#include "probes/list.h"

static KernelBtf *btfs;
static int nbtfs;
static bool btfs_loaded;

static void add_btf(const char *module, struct btf *btf, int first) {
  btfs = realloc(btfs, (nbtfs + 1) * sizeof(KernelBtf));
  btfs[nbtfs++] = (KernelBtf){strdup(module), btf, first};
}

static int only_modules(const struct dirent *e) {
  return e->d_name[0] != '.' && strcmp(e->d_name, "vmlinux") != 0;
}

const KernelBtf *kernel_btfs(int *n) {
  if (!btfs_loaded) {
    btfs_loaded = true;
    struct btf *vmlinux = ctype_kernel_btf();
    if (vmlinux) {
      add_btf("vmlinux", vmlinux, 1);
      struct dirent **mods;
      int nmods = scandir("/sys/kernel/btf", &mods, only_modules, alphasort);
      int first = (int)btf__type_cnt(vmlinux);
      for (int i = 0; i < nmods; i++) {
        char path[300];
        snprintf(path, sizeof path, "/sys/kernel/btf/%s", mods[i]->d_name);
        struct btf *btf = btf__parse_split(path, vmlinux);
        if (btf) add_btf(mods[i]->d_name, btf, first);
        free(mods[i]);
      }
      if (nmods >= 0) free(mods);
    }
  }
  *n = nbtfs;
  return btfs;
}

/* ---- prototypes as fields ------------------------------------------- */

/* What the type is once typedefs and qualifiers are looked through. */
static const struct btf_type *resolved(const struct btf *btf, int id) {
  int r = btf__resolve_type(btf, (__u32)id);
  return r > 0 ? btf__type_by_id(btf, (__u32)r) : NULL;
}

/* One value of type `type` at slot `slot` of the context; returns the
 * number of slots it takes. */
static int slot_field(const struct btf *btf, int type, const char *name,
                      int slot, TpField *f) {
  char text[256];
  memset(f, 0, sizeof *f);
  f->name = strdup(name);
  btf_type_text(btf, type, text, sizeof text);
  f->type_text = strdup(text);
  f->offset = slot * 8;
  f->in_u64 = true;
  const struct btf_type *t = resolved(btf, type);
  long long size = btf__resolve_size(btf, (__u32)type);
  f->is_pointer = t && btf_is_ptr(t);
  f->size = f->is_pointer || size <= 0 || size > 8 ? 8 : (int)size;
  if (t && btf_is_int(t))
    f->is_signed = btf_int_encoding(t) & BTF_INT_SIGNED;
  else if (t && btf_is_any_enum(t))
    f->is_signed = btf_kflag(t);
  return size > 8 && size <= 16 ? 2 : 1;
}

TpFormat *btf_proto_format(const struct btf *btf, int proto, int skip,
                           bool named, bool with_return) {
  TpFormat *fmt = calloc(1, sizeof *fmt);
  fmt->id = -1;
  const struct btf_type *p =
      proto ? btf__type_by_id(btf, (__u32)proto) : NULL;
  int n = p ? btf_vlen(p) : 0;
  fmt->fields = calloc(n + 1, sizeof(TpField));
  const struct btf_param *params = p ? btf_params(p) : NULL;
  int slot = 0;
  for (int i = skip; i < n; i++) {
    char argn[16];
    const char *name = named ? btf__name_by_offset(btf, params[i].name_off)
                             : NULL;
    if (!name || !*name) {
      snprintf(argn, sizeof argn, "arg%d", i - skip);
      name = argn;
    }
    if (i == n - 1 && params[i].type == 0) break;   /* "...": no slot */
    slot += slot_field(btf, (int)params[i].type, name, slot,
                       &fmt->fields[fmt->nfields++]);
  }
  if (with_return && p && p->type != 0) {
    TpField *f = &fmt->fields[fmt->nfields++];
    slot_field(btf, (int)p->type, "retval", slot, f);
    f->is_return = true;
  }
  return fmt;
}

/* ---- BTF objects in the kernel -------------------------------------- */

int kernel_btf_obj_fd(const char *module) {
  __u32 id = 0;
  while (bpf_btf_get_next_id(id, &id) == 0) {
    int fd = bpf_btf_get_fd_by_id(id);
    if (fd < 0) continue;
    char name[64] = "";
    struct bpf_btf_info info = {0};
    __u32 len = sizeof info;
    info.name = (__u64)(unsigned long)name;
    info.name_len = sizeof name;
    if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && info.kernel_btf &&
        !strcmp(name, module))
      return fd;
    close(fd);
  }
  return -1;
}

void *btf_target_new(uint32_t id, uint32_t prog_id) {
  BtfTarget *b = calloc(1, sizeof *b);
  if (!b) abort();
  b->id = id;
  b->prog_id = prog_id;
  return b;
}

uint32_t btf_target_attach(const Target *t, bool tracing,
                           uint32_t *prog_id) {
  const BtfTarget *b = t->data;
  if (!b) return 0;
  *prog_id = b->prog_id;
  return b->id;
}
