/* check_call: identifiers and calls (N_BUILTIN, N_CALL). A word is a
 * builtin's, or a constant: of an included header, an enumerator, a
 * system call number, an errno or signal name, a kernel macro; a call is
 * matched to its builtin's record (builtins/), which checks it. */
#define _GNU_SOURCE   /* strerrorname_np, sigabbrev_np */
#include <ctype.h>
#include <string.h>
#include <sys/socket.h>

#include "builtins/builtin.h"
#include "lang/checker.h"
#include "lang/sysheader.h"
#include "probes/syscalls.h"

/* Constants of kernel headers that bpftrace's tools use after including
 * them (<linux/sched.h>, <linux/socket.h>): the task states that have kept
 * their values across kernel versions, and the address families, as the
 * C library knows them. loupe knows these names itself, for scripts
 * whose headers are not installed (the kernel's <linux/sched.h> is not
 * the uapi one); a script's own #define or enum, or an included header's
 * constant, comes first. */
static int kernel_macro_number(const char *name) {
  static const struct { const char *name; int nr; } known[] = {
      {"TASK_RUNNING", 0}, {"TASK_INTERRUPTIBLE", 1},
      {"TASK_UNINTERRUPTIBLE", 2}, {"__TASK_STOPPED", 4},
      {"__TASK_TRACED", 8}, {"EXIT_DEAD", 16}, {"EXIT_ZOMBIE", 32},
      {"TASK_PARKED", 64}, {"TASK_DEAD", 128},
      {"AF_UNSPEC", AF_UNSPEC}, {"AF_UNIX", AF_UNIX}, {"AF_LOCAL", AF_LOCAL},
      {"AF_INET", AF_INET}, {"AF_INET6", AF_INET6},
      {"AF_NETLINK", AF_NETLINK}, {"AF_PACKET", AF_PACKET},
      {"AF_VSOCK", AF_VSOCK}, {"AF_XDP", AF_XDP}};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (!strcmp(known[i].name, name)) return known[i].nr;
  return -1;
}

/* The number of an errno name (ENOENT) or a signal name (SIGKILL), or -1.
 * Only upper-case words are asked about, so no identifier of the script
 * can be taken for one by accident of spelling. */
static int errno_or_signal_number(const char *name) {
  if (name[0] != 'E' && strncmp(name, "SIG", 3)) return -1;
  for (const char *p = name; *p; p++)
    if (!isupper((unsigned char)*p) && !isdigit((unsigned char)*p) &&
        *p != '_')
      return -1;
  if (name[0] == 'E') {
    for (int e = 1; e < 4096; e++) {
      const char *known = strerrorname_np(e);
      if (known && !strcmp(known, name)) return e;
    }
    /* the kernel's own, which functions return but no C library names
     * (include/linux/errno.h) */
    static const struct { const char *name; int nr; } kernel[] = {
        {"ERESTARTSYS", 512}, {"ERESTARTNOINTR", 513},
        {"ERESTARTNOHAND", 514}, {"ENOIOCTLCMD", 515},
        {"ERESTART_RESTARTBLOCK", 516}, {"EPROBE_DEFER", 517},
        {"EOPENSTALE", 518}, {"ENOPARAM", 519}, {"EBADHANDLE", 521},
        {"ENOTSYNC", 522}, {"EBADCOOKIE", 523}, {"ENOTSUPP", 524},
        {"ETOOSMALL", 525}, {"ESERVERFAULT", 526}, {"EBADTYPE", 527},
        {"EJUKEBOX", 528}, {"EIOCBQUEUED", 529}, {"ERECALLCONFLICT", 530}};
    for (size_t i = 0; i < sizeof kernel / sizeof kernel[0]; i++)
      if (!strcmp(kernel[i].name, name)) return kernel[i].nr;
    return -1;
  }
  for (int s = 1; s < 65; s++) {
    const char *abbrev = sigabbrev_np(s);
    if (abbrev && !strcmp(abbrev, name + 3)) return s;
  }
  return -1;
}

/* ---- builtins --------------------------------------------------------
 * Each builtin's rules are in its record (builtins/); here a word or a
 * call is matched to its record, or reported. */

static void not_yet(Checker *c, Node *n, const char *what) {
  error_at(c, n->span, "loupe does not support the %s '%s' yet", what,
           n->name);
}

/* A constant of the system headers the script includes (ICMP_ECHO after
 * #include <linux/icmp.h>): before the kernel's enumerators, as cpp
 * replaces a macro before clang sees a name. True if it is one; a
 * definition loupe cannot evaluate leaves the reason in `why` (reported
 * if nothing else knows the name: a script that worked with the
 * kernel's enumerator before it included the header still does). */
static bool header_constant(Checker *c, Node *n, char *why, size_t whylen) {
  const struct SysHeaders *h = c->script->sysheaders;
  if (!h) return false;
  int64_t v;
  bool is_unsigned;
  int found = sysheaders_constant(h, n->name, &v, &is_unsigned, why,
                                  whylen);
  if (found <= 0) return false;
  n->kind = N_INT;
  n->ival = v;
  n->type = ty_int(8, !is_unsigned);
  return true;
}

/* "Unknown identifier", naming the headers that were looked in. */
static void unknown_identifier(Checker *c, Node *n) {
  const struct SysHeaders *h = c->script->sysheaders;
  char read[2048], missing[2048], why[4200] = "";
  int nread = 0, nmissing = 0;
  if (h) {
    sysheaders_describe(h, true, read, sizeof read, &nread);
    sysheaders_describe(h, false, missing, sizeof missing, &nmissing);
  }
  int len = 0;
  if (nread)
    len += snprintf(why, sizeof why, "not defined by %s or the headers %s",
                  read, nread > 1 ? "they include" : "it includes");
  if (nmissing)
    snprintf(why + len, sizeof why - (size_t)len, "%s%s %s not found in the "
             "include path", nread ? "; " : "", missing,
             nmissing > 1 ? "were" : "was");
  if (*why)
    error_at(c, n->span, "Unknown identifier: '%s' (%s)", n->name, why);
  else
    error_at(c, n->span, "Unknown identifier: '%s'", n->name);
}

void check_builtin(Checker *c, Node *n) {
  if (!strncmp(n->name, "__builtin_", 10) && n->name[10])
    n->name += 10;
  const Builtin *b = builtin_find(n->name, BI_WORD);
  if (b && b->check) {
    n->builtin = b;
    b->check(c, n);
    return;
  }
  /* stack arguments (arg6...) are not read yet */
  if (b || !strncmp(n->name, "arg", 3)) {
    not_yet(c, n, "builtin");
    return;
  }
  char header_why[5000] = "";
  if (header_constant(c, n, header_why, sizeof header_why)) return;
  /* an enumerator of the script's or the kernel's is a constant */
  if (enum_constant(c, n)) return;
  /* __NR_name and SYS_name: the system call numbers <syscall.h> defines
   * for bpftrace's C preprocessor, known to loupe without it */
  const char *call = !strncmp(n->name, "__NR_", 5) ? n->name + 5
                     : !strncmp(n->name, "SYS_", 4) ? n->name + 4 : NULL;
  int nr = call ? syscall_number(call) : -1;
  /* ENOENT, SIGKILL...: the numbers <errno.h> and <signal.h> define, as
   * the C library knows them */
  if (nr < 0) nr = errno_or_signal_number(n->name);
  if (nr < 0) nr = kernel_macro_number(n->name);   /* TASK_RUNNING, AF_INET */
  if (nr >= 0) {
    n->kind = N_INT;
    n->ival = nr;
    n->type = ty_int(8, true);
    return;
  }
  if (*header_why) {   /* the node stays a name: the reporting pass sees it */
    error_at(c, n->span, "%s", header_why);
    n->type = ty_int(8, true);
    return;
  }
  unknown_identifier(c, n);
}

void check_call(Checker *c, Node *n) {
  /* __builtin_NAME is another name of every builtin */
  if (!strncmp(n->name, "__builtin_", 10) && n->name[10])
    n->name += 10;
  const Builtin *b = builtin_find(n->name, BI_CALL);
  n->type = ty_void();
  if (!b && !n->args && builtin_find(n->name, BI_WORD)) {
    /* a builtin word may be called: pid() is pid */
    n->kind = N_BUILTIN;
    check_builtin(c, n);
    return;
  }
  if (!b) {
    error_at(c, n->span, "Unknown function: '%s'", n->name);
    n->type.kind = TY_NONE;   /* not also "has no value" */
    return;
  }
  if (!b->check) {
    not_yet(c, n, "function");
    return;
  }
  n->builtin = b;
  /* a value once checked: no "has no value" after an error here */
  if (b->has_value) n->type.kind = TY_NONE;
  if (b->max_args >= 0 && !want_args(c, n, b->min_args, b->max_args)) return;
  b->check(c, n);
}
