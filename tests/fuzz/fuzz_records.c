/* libFuzzer harness: the records the BPF programs send to user space
 * (ring buffer records: an EventHeader and its payload), decoded and
 * printed by run_handle_record and the builtins' on_event handlers, in
 * text or JSON, for a script compiled once that uses every kind of record
 * (printf conversions, buffers, symbols and stacks, time, join, print of
 * values, tuples and maps, errorf/warnf, exit, -k's helper errors).
 *
 * An input is a byte of options (bit 0: JSON), then records, each as a
 * little-endian 16-bit length and that many bytes. system() and cat()
 * records are skipped: they run a command or open a file by design. As
 * root, the script's maps are created in the kernel, emptied before each
 * input, and records of kind PUT_ENTRY fill them, so that print(@m)
 * records print whatever maps may hold (hist and stats buckets
 * included).
 * With LOUPE_FUZZ_WRITE_SEEDS=DIR set, the harness writes seed inputs to
 * DIR instead (a record of each kind for each printf id and map, with a
 * payload of the size the program sends) and exits.
 * Findings: tests/fuzz/regressions/records/. */
#include "compile.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "fuzz_util.h"
#include "lang/ctype.h"
#include "model/program.h"
#include "output/encoder.h"
#include "runtime/print.h"
#include "runtime/print_stack.h"
#include "runtime/state.h"

int run_handle_record(const EventCtx *e, const void *data, size_t size);

static const char script_text[] =
    "BEGIN { printf(\"%d %u %x %X %o %c %s %5.2s %-8d %lld %llu %p %%\\n\", "
    "1, 2, 3, 4, 5, 65, \"s\", \"str\", 6, (int64)7, (uint64)8, 9); }\n"
    "BEGIN { printf(\"%r %rx %rh|%s\\n\", buf(\"ab\", 2), buf(\"cd\", 2), "
    "buf(\"ef\", 2), str(comm, 8)); }\n"
    "BEGIN { printf(\"%s %s %s %s\\n\", ksym(1), usym(2), kstack, "
    "ustack(3)); printf(\"%s\\n\", ustack(perf, 4)); }\n"
    "BEGIN { time(\"%H:%M:%S\\n\"); time(); print(strftime(\"%H %f\", "
    "nsecs)); }\n"
    "tracepoint:syscalls:sys_enter_execve { join(args.argv); "
    "join(args.argv, \",\"); print(args); }\n"
    "BEGIN { print((1, \"two\", -3)); print(kstack); print(ustack); "
    "print(nsecs); print(comm); print(usym(1)); }\n"
    "BEGIN { errorf(\"e %d\\n\", 1); warnf(\"w %s\\n\", \"x\"); }\n"
    "BEGIN { @m[1, \"k\"] = count(); @h = hist(3); @l = lhist(3, 0, 10, 2); "
    "@s = stats(4); print(@m); print(@h); print(@l, 2, 3); print(@s); "
    "clear(@m); zero(@h); }\n"
    "BEGIN { printf(\"%s %s %s\\n\", ntop(2, 0), macaddr(0), "
    "cgroup_path(0)); }\n"
    "BEGIN { print(pton(\"127.0.0.1\")); print((int8[4])\"abc\"); "
    "$t = (1, (2, \"x\")); print($t); printf(\"%s\\n\", strerror(2)); }\n"
    "BEGIN { printf(\"%d %s\\n\", sizeof(int), probe); "
    "@c = tseries(1, 1s, 5); print(@c); }\n"
    "BEGIN { @x = *(uint64 *)0; exit(3); }\n";

/* The script's maps as the fuzzer made them (make_maps). */
static Loaded loaded = {.ringbuf_fd = -1, .wake_fd = -1, .scratch_fd = -1,
                        .big_scratch_fd = -1, .counts_fd = -1,
                        .skb_output_fd = -1};

static Compiled *compiled(void) {
  static Compiled c;
  static bool done;
  if (done) return &c;
  done = true;
  static Source src = {.name = "stdin", .text = script_text};
  Diag d;
  diag_init(&d, &src);
  static Settings st = {.helper_errors = true};
  Script *script = NULL;
  if (compile_script(&src, &st, &script, &c, &d) != 0) {
    fprintf(stderr, "fuzz_records: the script does not compile\n");
    abort();
  }
  return &c;
}

/* ---- the script's maps, in the kernel, filled by the input ------------ */

/* A record of this kind (no EventKind is 0) puts an entry into map
 * `index`: its key's bytes, then its value's (each CPU's for a per-CPU
 * map); print(@m) records then read and print what the map holds. */
#define PUT_ENTRY 0

static bool maps_tried, maps_made;   /* made: as root, with BPF */

static void make_maps(const Compiled *c) {
  maps_tried = maps_made = true;
  loaded.nmaps = c->nmaps;
  loaded.maps = calloc((size_t)c->nmaps + 1, sizeof *loaded.maps);
  if (!loaded.maps) abort();
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    loaded.maps[i].fd = bpf_map_create(m->bpf_type, NULL, m->key_size,
                                       m->value_size, m->max_entries, NULL);
    if (loaded.maps[i].fd < 0) maps_made = false;
  }
  stack_maps_use(c, &loaded);
}

static int map_ncpus(const MapSym *m) {
  return map_is_percpu(m) ? libbpf_num_possible_cpus() : 1;
}

/* Each map as the programs leave it at their start: hashes empty, arrays
 * zero. */
static void empty_maps(const Compiled *c) {
  static uint8_t next[4096], zero[1 << 16];
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    if (m->bpf_type == BPF_MAP_TYPE_ARRAY ||
        m->bpf_type == BPF_MAP_TYPE_PERCPU_ARRAY) {
      size_t vsize = (size_t)(m->value_size + 7) / 8 * 8 * map_ncpus(m);
      for (uint32_t k = 0; k < m->max_entries && k < 64; k++)
        if (vsize <= sizeof zero)
          bpf_map_update_elem(loaded.maps[i].fd, &k, zero, 0);
      continue;
    }
    while (bpf_map_get_next_key(loaded.maps[i].fd, NULL, next) == 0 &&
           bpf_map_delete_elem(loaded.maps[i].fd, next) == 0) {}
  }
}

static void put_entry(const Compiled *c, uint32_t index, const uint8_t *p,
                      size_t size) {
  if (index >= (uint32_t)c->nmaps) return;
  const MapSym *m = c->maps[index];
  size_t vsize = (size_t)(m->value_size + 7) / 8 * 8 * map_ncpus(m);
  if (size < (size_t)m->key_size + vsize) return;
  bpf_map_update_elem(loaded.maps[index].fd, p, p + m->key_size, 0);
}

static void put_record(FILE *f, uint32_t kind, uint32_t index, int size) {
  EventHeader h = {kind, index};
  uint16_t len = (uint16_t)(sizeof h + (size_t)size);
  fwrite(&len, sizeof len, 1, f);
  fwrite(&h, sizeof h, 1, f);
  for (int i = 0; i < size; i++) fputc(i % 3 ? 0 : 'a', f);
}

static void write_seeds(const char *dir, const Compiled *c) {
  char path[4096];
  for (int i = 0; i < c->nprintfs; i++) {
    snprintf(path, sizeof path, "%s/printf%d", dir, i);
    FILE *f = fopen(path, "w");
    if (!f) abort();
    fputc(i & 1, f);
    static const uint32_t kinds[] = {EV_PRINTF, EV_TIME, EV_JOIN,
                                     EV_PRINT_VALUE, EV_ERRORF, EV_WARNF};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
      put_record(f, kinds[k], (uint32_t)i, c->printfs[i].size);
    fclose(f);
  }
  snprintf(path, sizeof path, "%s/other", dir);
  FILE *f = fopen(path, "w");
  if (!f) abort();
  fputc(0, f);
  for (int i = 0; i < c->nmaps; i++) {
    const MapSym *m = c->maps[i];
    int vsize = (m->value_size + 7) / 8 * 8 * map_ncpus(m);
    put_record(f, PUT_ENTRY, (uint32_t)i, m->key_size + vsize);
    put_record(f, EV_PRINT_MAP, (uint32_t)i, 16);
    put_record(f, EV_CLEAR_MAP, (uint32_t)i, 0);
    put_record(f, EV_ZERO_MAP, (uint32_t)i, 0);
  }
  put_record(f, EV_PROCESS_SEEN, 0, 8);
  put_record(f, EV_HELPER_ERROR, 0, 8);
  put_record(f, EV_UNWATCH, 0, 8);
  put_record(f, EV_EXIT, 0, 8);
  fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Compiled *c = compiled();
  const char *seeds = getenv("LOUPE_FUZZ_WRITE_SEEDS");
  if (seeds) {
    write_seeds(seeds, c);
    _exit(0);   /* not exit: libFuzzer takes that for a crash */
  }
  if (size < 1 || size > 1 << 16) return 0;
  if (!maps_tried) make_maps(c);
  if (maps_made) empty_maps(c);
  int format = data[0] & 1 ? OUT_JSON : OUT_TEXT;
  int exit_seen = 0;
  Output o = output_for(format, fuzz_devnull());
  EventCtx e = {.c = c, .l = &loaded, .output = &o, .exit_seen = &exit_seen};
  for (size_t at = 1; at + 2 <= size;) {
    uint16_t len;
    memcpy(&len, data + at, sizeof len);
    at += 2;
    if (len > size - at) len = (uint16_t)(size - at);
    /* a copy of exactly the record: ASan sees any read past it */
    uint8_t *rec = malloc(len ? len : 1);
    if (!rec) abort();
    memcpy(rec, data + at, len);
    at += len;
    EventHeader h = {0};
    if (len >= sizeof h) memcpy(&h, rec, sizeof h);
    if (h.kind == PUT_ENTRY && len >= sizeof h && maps_made)
      put_entry(c, h.index, rec + sizeof h, len - sizeof h);
    else if (h.kind != EV_SYSTEM && h.kind != EV_CAT)
      run_handle_record(&e, rec, len);
    free(rec);
  }
  return 0;
}
