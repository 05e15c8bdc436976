/* load + attach + detach. */
#ifndef LOUPE_LOAD_H
#define LOUPE_LOAD_H

#include "model/program.h"
#include "probes/provider.h"
#include "runtime/state.h"

/* Creates every map of c and loads every program, their fds in l (c
 * itself is not changed). With verifier_stats (-v) the verifier's
 * statistics of each program print as it loads. On a verifier rejection
 * the message names the probe and the script line of the failing
 * instruction and shows the verifier's last lines. Returns 0, or -1 after
 * reporting (and after closing whatever it created). */
int load_all(const Compiled *c, Loaded *l, bool verifier_stats, Diag *d);

/* Attaches every program but BEGIN/END, as loaded in l, to its targets,
 * as the settings st say (-p, -c: the providers' attach hooks). Returns
 * the number of probes attached, or -1 after reporting (with links
 * already closed). With links NULL it attaches nothing and returns how
 * many it would. */
int attach_all(const Compiled *c, const Loaded *l, const Settings *st,
               LinkSet *links, Diag *d);

/* The BEGIN and END probes, which loupe runs itself (nothing to attach). */
int special_probe_count(const Compiled *c);

/* Whether this kernel's bpf_get_current_comm fills the rest of its buffer
 * with zeros (asked once, by running a small program; false when it cannot
 * tell). */
bool kernel_pads_comm(void);

/* Closes every program and map fd of l. */
void unload_all(Loaded *l);

#endif
