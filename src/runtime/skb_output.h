/* skb_output: writes the packets skboutput() sends to their pcap files
 * (see skb_output.c). */
#ifndef LOUPE_RUNTIME_SKB_OUTPUT_H
#define LOUPE_RUNTIME_SKB_OUTPUT_H

#include "model/program.h"

typedef struct SkbWriter SkbWriter;

/* Creates each skboutput() call's file and starts reading the packet
 * buffers of the perf event array fd (Loaded.skb_output_fd). NULL if the
 * script has no skboutput() (Compiled.nskb_outputs 0), or after printing
 * why a file or the buffers cannot be had. */
SkbWriter *skb_writer_open(const Compiled *c, int fd);
/* Writes the packets sent so far; never waits. */
void skb_writer_poll(SkbWriter *w);
/* Writes what is left, says how many packets were lost, closes the
 * files. */
void skb_writer_close(SkbWriter *w);

#endif
