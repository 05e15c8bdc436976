/* info: what `loupe --info` prints about the machine's BPF support. */
#ifndef LOUPE_INFO_H
#define LOUPE_INFO_H

#include <stdio.h>

/* Prints the system, the build and the kernel features probed; 0. */
int print_info(FILE *out, const char *version);

#endif
