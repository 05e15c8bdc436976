/* info: `loupe --info`, what this machine offers loupe: the system, the
 * build, and the kernel's BPF features, each found by asking the kernel
 * (loading a tiny program, creating a map) rather than by its version. */
#include "runtime/info.h"
#include "runtime/load.h"
#include "probes/iter.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <bpf/libbpf_version.h>
#include <linux/bpf.h>

/* Attach types newer than Debian 12's headers, by their kernel values. */
enum {
  ATTACH_KPROBE_MULTI = 42,     /* 5.18 */
  ATTACH_KPROBE_SESSION = 56,   /* 6.10 */
};

static const char *yes_no(bool v) { return v ? "yes" : "no"; }

/* Whether the kernel loads `r0 = 0; exit` as a program of this type
 * expecting this attach type (and, when not 0, this BTF id). */
static bool loads_for(enum bpf_prog_type type, int attach, int btf_id) {
  struct bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
      {.code = BPF_JMP | BPF_EXIT},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts,
              .expected_attach_type = (enum bpf_attach_type)attach,
              .attach_btf_id = (__u32)btf_id);
  int fd = bpf_prog_load(type, NULL, "GPL", insns, 2, &opts);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

static bool loads(enum bpf_prog_type type, int attach) {
  return loads_for(type, attach, 0);
}

/* Whether the kernel loads a program for iterator NAME (one loupe can
 * run: iter_btf_id). */
static bool iter_loads(const char *name) {
  int id = iter_btf_id(name);
  return id > 0 && loads_for(BPF_PROG_TYPE_TRACING, BPF_TRACE_ITER, id);
}

static bool helper(enum bpf_prog_type type, enum bpf_func_id id) {
  return libbpf_probe_bpf_helper(type, id, NULL) == 1;
}

static void print_helpers(FILE *out) {
  static const struct { const char *name; enum bpf_func_id id; } h[] = {
      {"probe_read_user", BPF_FUNC_probe_read_user},
      {"probe_read_kernel", BPF_FUNC_probe_read_kernel},
      {"get_current_cgroup_id", BPF_FUNC_get_current_cgroup_id},
      {"send_signal", BPF_FUNC_send_signal},
      {"override_return", BPF_FUNC_override_return},
      {"get_boot_ns", BPF_FUNC_ktime_get_boot_ns},
      {"dpath", BPF_FUNC_d_path},
      {"skboutput", BPF_FUNC_skb_output},
      {"get_tai_ns", BPF_FUNC_ktime_get_tai_ns},
      {"get_func_ip", BPF_FUNC_get_func_ip},
      {"jiffies64", BPF_FUNC_jiffies64},
      {"for_each_map_elem", BPF_FUNC_for_each_map_elem},
      {"ringbuf_output", BPF_FUNC_ringbuf_output},
      {"lookup_percpu_elem", BPF_FUNC_map_lookup_percpu_elem},
  };
  fprintf(out, "Kernel helpers\n");
  for (size_t i = 0; i < sizeof h / sizeof h[0]; i++)
    fprintf(out, "  %s: %s\n", h[i].name,
            yes_no(helper(BPF_PROG_TYPE_KPROBE, h[i].id) ||
                   helper(BPF_PROG_TYPE_TRACING, h[i].id)));
}

/* Whether the kernel loads a program with a bounded loop (Linux 5.3):
 * r0 counts down from 3 to 0. */
static bool loops_load(void) {
  struct bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 3},
      {.code = BPF_ALU64 | BPF_SUB | BPF_K, .dst_reg = BPF_REG_0, .imm = 1},
      {.code = BPF_JMP | BPF_JNE | BPF_K, .dst_reg = BPF_REG_0, .off = -2},
      {.code = BPF_JMP | BPF_EXIT},
  };
  int fd = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, "GPL", insns, 4,
                         NULL);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

static void print_features(FILE *out) {
  fprintf(out, "\nKernel features\n");
  fprintf(out, "  Loop support: %s\n", yes_no(loops_load()));
  fprintf(out, "  btf: %s\n",
          yes_no(access("/sys/kernel/btf/vmlinux", R_OK) == 0));
  fprintf(out, "  kprobes: %s\n",
          yes_no(access("/sys/bus/event_source/devices/kprobe", F_OK) == 0));
  fprintf(out, "  uprobes: %s\n",
          yes_no(access("/sys/bus/event_source/devices/uprobe", F_OK) == 0));
  fprintf(out, "  uprobe refcount (semaphores): %s\n",
          yes_no(access("/sys/bus/event_source/devices/uprobe/format/"
                        "ref_ctr_offset", F_OK) == 0));
  /* a kernel that ignores a kprobe program's attach type loads these
   * too: the links also need fprobe */
  bool fprobe = kernel_has_fprobe();
  fprintf(out, "  kprobe_multi: %s\n",
          yes_no(fprobe && loads(BPF_PROG_TYPE_KPROBE, ATTACH_KPROBE_MULTI)));
  fprintf(out, "  kprobe_session: %s\n",
          yes_no(fprobe && loads(BPF_PROG_TYPE_KPROBE, ATTACH_KPROBE_SESSION)));
  fprintf(out, "  uprobe_multi: %s\n",
          yes_no(uprobe_multi_attach_type() != 0));
  fprintf(out, "  raw_tracepoint: %s\n",
          yes_no(loads(BPF_PROG_TYPE_RAW_TRACEPOINT, 0)));
  fprintf(out, "  get_current_comm zero-pads: %s\n",
          yes_no(kernel_pads_comm()));
  static const char *const iters[] = {"task", "task_file", "task_vma"};
  for (size_t i = 0; i < sizeof iters / sizeof *iters; i++)
    fprintf(out, "  iter:%s: %s\n", iters[i], yes_no(iter_loads(iters[i])));
}

static void print_maps(FILE *out) {
  static const struct { const char *name; enum bpf_map_type type; } m[] = {
      {"hash", BPF_MAP_TYPE_HASH},
      {"percpu hash", BPF_MAP_TYPE_PERCPU_HASH},
      {"lru hash", BPF_MAP_TYPE_LRU_HASH},
      {"percpu lru hash", BPF_MAP_TYPE_LRU_PERCPU_HASH},
      {"array", BPF_MAP_TYPE_ARRAY},
      {"percpu array", BPF_MAP_TYPE_PERCPU_ARRAY},
      {"stack_trace", BPF_MAP_TYPE_STACK_TRACE},
      {"perf_event_array", BPF_MAP_TYPE_PERF_EVENT_ARRAY},
      {"ringbuf", BPF_MAP_TYPE_RINGBUF},
  };
  fprintf(out, "\nMap types\n");
  for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
    fprintf(out, "  %s: %s\n", m[i].name,
            yes_no(libbpf_probe_bpf_map_type(m[i].type, NULL) == 1));
}

int print_info(FILE *out, const char *version) {
  struct utsname u;
  fprintf(out, "System\n");
  if (uname(&u) == 0)
    fprintf(out, "  OS: %s %s %s\n  Arch: %s\n", u.sysname, u.release,
            u.version, u.machine);
  fprintf(out, "\nBuild\n  version: v%s\n  libbpf: %d.%d\n"
          "  libdw (DWARF support): yes\n\n", version,
          LIBBPF_MAJOR_VERSION, LIBBPF_MINOR_VERSION);
  if (geteuid() != 0) {
    fprintf(out, "(the kernel's BPF features need root to be probed)\n");
    return 0;
  }
  print_helpers(out);
  print_features(out);
  print_maps(out);
  return 0;
}
