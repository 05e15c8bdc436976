/* btf_peek against libbpf's parse of the whole of the kernel's BTF: the
 * same answers for the types and direct members it finds, "cannot say"
 * for a member inside an anonymous one, -1 for a name BTF does not have.
 * Skipped when /sys/kernel/btf/vmlinux is missing. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "probes/btf_peek.h"
#include "expect.h"

/* The offset of sname's own member `member` by libbpf, -1 if none. */
static int libbpf_member(const struct btf *btf, const char *sname,
                         const char *member) {
  int id = btf__find_by_name_kind(btf, sname, BTF_KIND_STRUCT);
  if (id <= 0) return -1;
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  const struct btf_member *m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++, m++)
    if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
      return (int)(btf_member_bit_offset(t, (__u32)i) / 8);
  return -1;
}

int main(void) {
  if (access("/sys/kernel/btf/vmlinux", R_OK) != 0) {
    printf("test_btf_peek: no kernel BTF: skipped\n");
    return 0;
  }
  struct btf *btf = btf__parse("/sys/kernel/btf/vmlinux", NULL);
  EXPECT("libbpf parses BTF", btf != NULL);
  if (!btf) return 1;

  BtfPeek q[] = {
      {"task_struct", BTF_KIND_STRUCT, "thread_info", 0},
      {"thread_info", BTF_KIND_STRUCT, "status", 0},
      {"pt_regs", BTF_KIND_STRUCT, "orig_ax", 0},
      {"file", BTF_KIND_STRUCT, "f_mode", 0},
      {"btf_trace_sys_enter", BTF_KIND_TYPEDEF, NULL, 0},
      {"umode_t", BTF_KIND_TYPEDEF, NULL, 0},
      {"loupe_no_such_struct", BTF_KIND_STRUCT, "x", 0},
  };
  int n = (int)(sizeof q / sizeof q[0]);
  bool ok = btf_peek_kernel(q, n);
  EXPECT("peek answers", ok);
  for (int i = 0; ok && i < n; i++) {
    int want = q[i].member ? libbpf_member(btf, q[i].name, q[i].member)
               : btf__find_by_name_kind(btf, q[i].name, (__u32)q[i].kind) > 0
                   ? 0 : -1;
    if (q[i].found != want)
      fprintf(stderr, "%s.%s: peek %d, libbpf %d\n", q[i].name,
              q[i].member ? q[i].member : "", q[i].found, want);
    EXPECT(q[i].name, q[i].found == want);
  }
  EXPECT("a struct that exists was found", q[0].found >= 0 && q[2].found > 0);
  EXPECT("a missing struct is -1", q[n - 1].found == -1);

  /* sk_buff's `next` is inside an anonymous union: not said */
  BtfPeek anon[] = {{"sk_buff", BTF_KIND_STRUCT, "next", 0}};
  EXPECT("an anonymous member's is not said", !btf_peek_kernel(anon, 1));

  btf__free(btf);
  printf("test_btf_peek: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
