/* system: values the kernel side knows as numbers and user space names,
 * looked up when they are printed: username (the uid's login name) and
 * cgroup_path() (a cgroup id's path in each cgroup hierarchy). See
 * runtime/print_named.c for the lookups. */
#include "builtins/builtin.h"

/* username: the current uid, printed as its name */
static void check_username(Checker *c, Node *n) {
  n->type = ty_int(8, false);
  n->type.named = NAMED_USER;
}

static int emit_username(Gen *g, Node *n) {
  int r = reg_alloc(g);
  emit_call(g, BPF_FUNC_get_current_uid_gid);
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  emit(g, I_ALU64_IMM(BPF_LSH, r, 32));
  emit(g, I_ALU64_IMM(BPF_RSH, r, 32));
  return r;
}

/* cgroup_path(id[, "filter"]): the id, printed as the cgroup's paths in
 * the hierarchies whose names match the filter (a glob). */
static void check_cgroup_path(Checker *c, Node *n) {
  Node *id = n->args, *filter = id->next;
  check_expr(c, id);
  if (!want_int(c, n, id)) return;
  if (filter && filter->kind != N_STR) {
    error_at(c, filter->span, "cgroup_path() expects a string literal as "
             "its filter");
    return;
  }
  n->type = ty_int(8, false);
  n->type.named = NAMED_CGROUP;
  n->type.name_filter = filter ? filter->sval : NULL;
}

const Builtin builtins_system[] = {
    {.name = "username", .form = BI_WORD, .check = check_username,
     .emit_int = emit_username},
    {.name = "username", .form = BI_CALL, .min_args = 0, .max_args = 0,
     .has_value = true, .check = check_username, .emit_int = emit_username},
    {.name = "cgroup_path", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_cgroup_path,
     .emit_int = emit_first_argument},
    {0},
};
