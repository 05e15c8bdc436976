/* load + attach + detach. */
#ifndef LOUPE_LOAD_H
#define LOUPE_LOAD_H

#include "codegen/program.h"
#include "probes/provider.h"

/* Creates every map and loads every program. On a verifier rejection the
 * message names the probe and the script line of the failing instruction
 * and shows the verifier's last lines. Returns 0, or -1 after reporting (and
 * after closing whatever it created). */
int load_all(Compiled *c, Diag *d);

/* Attaches every program but BEGIN/END to its targets, as the settings st
 * say (-p, -c: the providers' attach hooks). Returns the number of probes
 * attached, or -1 after reporting (with links already closed). With links
 * NULL it attaches nothing and returns how many it would. */
int attach_all(Compiled *c, const Settings *st, LinkSet *links, Diag *d);

/* The BEGIN and END probes, which loupe runs itself (nothing to attach). */
int special_probe_count(const Compiled *c);

/* Whether this kernel's bpf_get_current_comm fills the rest of its buffer
 * with zeros (asked once, by running a small program; false when it cannot
 * tell). */
bool kernel_pads_comm(void);

/* Closes every program and map fd. */
void unload_all(Compiled *c);

#endif
