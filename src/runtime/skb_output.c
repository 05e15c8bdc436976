/* skb_output: the packets skboutput() sends, written to pcap files.
 *
 * Programs send each packet through a perf event array (bpf_skb_output
 * wants one, not the ring buffer) with an SkbMeta in front: which call
 * sent it, when, and how many bytes of the packet follow. Each call's
 * file is created when the run begins, with the pcap header of raw IP
 * frames (link type 101); a record's time is the packet's CLOCK_MONOTONIC
 * time moved to the wall clock, and its bytes are those after the call's
 * offset. */
#include "runtime/skb_output.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/libbpf.h>

#include "util/safe_file.h"

#define PCAP_MAGIC 0xa1b2c3d4u   /* microsecond timestamps */
#define PCAP_LINKTYPE_RAW 101u   /* frames start with the IP header */
#define PCAP_SNAPLEN 65535u
#define DEFAULT_PAGES 256        /* in all, when perf_rb_pages is unset */

struct SkbWriter {
  const Compiled *c;
  FILE **files;          /* per call site (Compiled.skb_outputs) */
  struct perf_buffer *pb;
  int64_t wall_minus_mono;   /* ns: the wall clock less CLOCK_MONOTONIC */
  unsigned long long lost;
};

static int64_t clock_ns(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, sizeof v, 1, f); }
static void put_u16(FILE *f, uint16_t v) { fwrite(&v, sizeof v, 1, f); }

static void write_header(FILE *f) {
  put_u32(f, PCAP_MAGIC);
  put_u16(f, 2);   /* version 2.4 */
  put_u16(f, 4);
  put_u32(f, 0);   /* GMT */
  put_u32(f, 0);   /* timestamp accuracy */
  put_u32(f, PCAP_SNAPLEN);
  put_u32(f, PCAP_LINKTYPE_RAW);
}

static void on_packet(void *ctx, int cpu, void *data, __u32 size) {
  (void)cpu;
  SkbWriter *w = ctx;
  SkbMeta meta;
  if (size < sizeof meta) return;
  memcpy(&meta, data, sizeof meta);
  if (meta.id >= (uint64_t)w->c->nskb_outputs) return;
  const struct SkbOutput *o = &w->c->skb_outputs[meta.id];
  /* the sample is padded to 8 bytes: meta.len says what is packet */
  uint64_t have = size - sizeof meta;
  uint64_t len = meta.len < have ? meta.len : have;
  len = len > (uint64_t)o->offset ? len - (uint64_t)o->offset : 0;
  if (len > PCAP_SNAPLEN) len = PCAP_SNAPLEN;
  int64_t wall = (int64_t)meta.ns + w->wall_minus_mono;
  FILE *f = w->files[meta.id];
  put_u32(f, (uint32_t)(wall / 1000000000LL));
  put_u32(f, (uint32_t)(wall % 1000000000LL / 1000));
  put_u32(f, (uint32_t)len);
  put_u32(f, (uint32_t)len);
  fwrite((const uint8_t *)data + sizeof meta + o->offset, 1, len, f);
}

static void on_lost(void *ctx, int cpu, __u64 n) {
  (void)cpu;
  ((SkbWriter *)ctx)->lost += n;
}

SkbWriter *skb_writer_open(const Compiled *c, int fd) {
  if (c->nskb_outputs == 0 || fd < 0) return NULL;
  SkbWriter *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->c = c;
  w->files = calloc((size_t)c->nskb_outputs, sizeof *w->files);
  if (!w->files) goto fail;
  for (int i = 0; i < c->nskb_outputs; i++) {
    /* calls that name one file share it */
    for (int k = 0; k < i && !w->files[i]; k++)
      if (!strcmp(c->skb_outputs[k].path, c->skb_outputs[i].path))
        w->files[i] = w->files[k];
    if (w->files[i]) continue;
    char why[SAFE_WHY_MAX];
    w->files[i] = safe_fopen_write(c->skb_outputs[i].path, why, sizeof why);
    if (!w->files[i]) {
      fprintf(stderr, "ERROR: skboutput(): cannot write %s: %s\n",
              c->skb_outputs[i].path, why);
      goto fail;
    }
    write_header(w->files[i]);
  }
  w->wall_minus_mono = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
  /* perf_rb_pages is the pages of all CPUs' buffers together, as
   * bpftrace's reference says; each gets a power of two of them */
  size_t total = c->perf_rb_pages > 0 ? (size_t)c->perf_rb_pages
                                      : DEFAULT_PAGES;
  int ncpus = libbpf_num_possible_cpus();
  size_t pages = 1;
  while (pages * 2 * (size_t)(ncpus > 0 ? ncpus : 1) <= total) pages *= 2;
  w->pb = perf_buffer__new(fd, pages, on_packet, on_lost, w,
                           NULL);
  if (!w->pb) {
    fprintf(stderr, "ERROR: skboutput(): cannot open the packet buffers: "
            "%s\n", strerror(errno));
    goto fail;
  }
  return w;
fail:
  skb_writer_close(w);
  return NULL;
}

void skb_writer_poll(SkbWriter *w) {
  if (w && w->pb) perf_buffer__consume(w->pb);
}

void skb_writer_close(SkbWriter *w) {
  if (!w) return;
  if (w->pb) {
    perf_buffer__consume(w->pb);
    perf_buffer__free(w->pb);
  }
  if (w->lost)
    fprintf(stderr, "WARNING: skboutput(): %llu packet%s lost (their "
            "buffers were full; raise perf_rb_pages)\n", w->lost,
            w->lost == 1 ? " was" : "s were");
  for (int i = 0; w->files && i < w->c->nskb_outputs; i++) {
    if (!w->files[i]) continue;
    bool shared = false;
    for (int k = 0; k < i; k++) shared |= w->files[k] == w->files[i];
    if (!shared) fclose(w->files[i]);
  }
  free(w->files);
  free(w);
}
