/* Unit tests for ctype: script struct layouts and the type grammar of the
 * parser first (they must not load kernel BTF), then kernel types, whose
 * offsets are compared with what a separate reading of the raw BTF says
 * (bpftool btf dump ... format raw gives the same numbers). Kernel tests
 * are skipped when /sys/kernel/btf/vmlinux is missing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/btf.h>

#include "lang/ast.h"
#include "lang/checker.h"
#include "lang/ctype.h"
#include "lang/parse.h"
#include "expect.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ---- helpers -------------------------------------------------------- */

/* Parses `text` and registers its structs; the messages land in msgs. */
typedef struct Parsed {
  Source src;
  Script *script;
  int errors;
  char msgs[2048];
} Parsed;

static void parse_and_define(Parsed *p, const char *text) {
  memset(p, 0, sizeof *p);
  p->src.name = "stdin";
  p->src.text = text;
  Diag d;
  diag_init(&d, &p->src);
  char *buf = NULL;
  size_t len = 0;
  d.out = open_memstream(&buf, &len);
  p->script = parse_script(&p->src, NULL, &d);
  if (p->script) check_script_enums(p->script, &d);
  if (p->script) ctype_define_script_structs(p->script, &d);
  fclose(d.out);
  p->errors = d.errors;
  snprintf(p->msgs, sizeof p->msgs, "%s", buf ? buf : "");
  free(buf);
}

static const CType *type_of(const char *text) {
  char err[256];
  return ctype_parse(text, err, sizeof err);
}

static int offset_of(const CType *t, const char *name) {
  CField f;
  return ctype_field(t, name, &f) ? f.offset : -1;
}

static const char *name_of(const CType *t) {
  static char buf[128];
  return ctype_name(t, buf, sizeof buf);
}

/* ---- script structs --------------------------------------------------- */

static void test_script_struct_layout(void) {
  Parsed p;
  parse_and_define(&p, "struct Foo { char a; int b; char c[10]; uint64 d; }\n"
                       "BEGIN { }");
  EXPECT("layout_parses", p.script && p.errors == 0);
  const CType *foo = type_of("struct Foo");
  EXPECT("layout_found", foo && foo->kind == C_STRUCT && foo->from_script);
  if (!foo) return;
  EXPECT("layout_a", offset_of(foo, "a") == 0);
  EXPECT("layout_b", offset_of(foo, "b") == 4);
  EXPECT("layout_c", offset_of(foo, "c") == 8);
  EXPECT("layout_d", offset_of(foo, "d") == 24);
  EXPECT("layout_size", foo->size == 32 && foo->align == 8);
  CField c;
  EXPECT("layout_c_array", ctype_field(foo, "c", &c) &&
                               c.type->kind == C_ARRAY && c.type->nelems == 10 &&
                               c.type->size == 10);
  EXPECT("layout_c_name", !strcmp(name_of(c.type), "int8[10]"));
  EXPECT("layout_bare_name", type_of("Foo") == foo);
  EXPECT("layout_pointer", type_of("struct Foo *") == ctype_pointer_to(foo));
  EXPECT("layout_name", !strcmp(name_of(foo), "struct Foo"));
}

static void test_script_struct_forms(void) {
  Parsed p;
  parse_and_define(&p,
                   "struct Node { int v; struct Node *next; unsigned long w; };"
                   "union U { char c; uint64 x; int32 arr[3]; }\n"
                   "struct Outer { char tag; struct Node n; union U u; "
                   "char **argv; }\n"
                   "BEGIN { }");
  EXPECT("forms_parse", p.script && p.errors == 0);
  if (!p.script) return;
  const StructDef *def = p.script->structs;
  EXPECT("forms_ast", def && !strcmp(def->name, "Node") && !def->is_union &&
                          def->next && def->next->is_union);
  EXPECT("forms_ast_member", def && def->fields && def->fields->next &&
                                 !strcmp(def->fields->next->type,
                                         "struct Node *") &&
                                 !strcmp(def->fields->next->name, "next"));
  const CType *node = type_of("struct Node");
  EXPECT("forms_node", node && node->size == 24);
  CField next;
  EXPECT("forms_self_pointer", node && ctype_field(node, "next", &next) &&
                                   next.offset == 8 &&
                                   next.type->kind == C_PTR &&
                                   next.type->target == node);
  EXPECT("forms_unsigned_long", node && offset_of(node, "w") == 16);
  const CType *u = type_of("union U");
  EXPECT("forms_union", u && u->kind == C_UNION && u->size == 16 &&
                            offset_of(u, "x") == 0 && offset_of(u, "arr") == 0);
  const CType *outer = type_of("struct Outer");
  EXPECT("forms_outer", outer && offset_of(outer, "n") == 8 &&
                            offset_of(outer, "u") == 32 &&
                            offset_of(outer, "argv") == 48 &&
                            outer->size == 56);
  CField argv;
  EXPECT("forms_char_pp", outer && ctype_field(outer, "argv", &argv) &&
                              !strcmp(name_of(argv.type), "int8 **"));
  EXPECT("forms_no_btf", !ctype_btf_loaded());
}

static void test_script_struct_errors(void) {
  Parsed p;
  parse_and_define(&p, "struct A { int a; int a; }\n"
                       "struct B { struct B b; }\n"
                       "BEGIN { }");
  EXPECT("errors_count", p.errors == 2);
  EXPECT("errors_duplicate",
         strstr(p.msgs, "stdin:1:23-24: ERROR: Duplicate member 'a' in struct A") !=
             NULL);
  EXPECT("errors_incomplete",
         strstr(p.msgs, "stdin:2:12-20: ERROR: Member 'b' has incomplete type "
                        "'struct B'") != NULL);
  parse_and_define(&p, "struct A { int a : 40; } BEGIN { }");
  EXPECT("errors_bitfield_too_wide",
         p.errors && strstr(p.msgs, "bitfield 'a' needs an integer type "
                                     "of at least 40 bits"));
  parse_and_define(&p, "struct A { int a[2] int b; } BEGIN { }");
  EXPECT("errors_missing_semicolon",
         !p.script && strstr(p.msgs, "unexpected identifier, expecting ;"));
  parse_and_define(&p, "struct A { int; } BEGIN { }");
  EXPECT("errors_no_name", !p.script);
}

/* Members defined in place (struct { ... } name), arrays of arrays, and a
 * last member without its ';'. */
static void test_script_struct_nested(void) {
  Parsed p;
  parse_and_define(&p, "struct A { char c; struct { int x; long y } in; "
                       "int m[2][3] } BEGIN { }");
  EXPECT("nested_parse", p.script && p.errors == 0);
  if (!p.script) return;
  const CType *a = type_of("struct A");
  EXPECT("nested_layout", a && offset_of(a, "in") == 8 &&
                              offset_of(a, "m") == 24 && a->size == 48);
  CField in, m;
  EXPECT("nested_inner", a && ctype_field(a, "in", &in) &&
                             in.type->kind == C_STRUCT && !in.type->name &&
                             in.type->size == 16 &&
                             offset_of(in.type, "y") == 8);
  EXPECT("nested_2d", a && ctype_field(a, "m", &m) &&
                          m.type->kind == C_ARRAY && m.type->nelems == 2 &&
                          m.type->target->kind == C_ARRAY &&
                          m.type->target->nelems == 3 && m.type->size == 24);
}

/* Script enums: implicit values count up, "enum Foo" names the type (an
 * int, or 8 bytes when the values need them), struct members may use it. */
static void test_script_enums(void) {
  Parsed p;
  parse_and_define(&p, "enum Foo { ONE = 1, TWO, OTHER = 99999, NEXT, };\n"
                       "enum { A, B = -3, C }\n"
                       "enum Big { HUGE = 0x100000000 }\n"
                       "struct S { char c; enum Foo f; }\n"
                       "BEGIN { }");
  EXPECT("enum_parses", p.script && p.errors == 0);
  if (!p.script) return;
  const EnumDef *foo = p.script->enums, *anon = foo->next;
  EXPECT("enum_values", foo->items->value == 1 &&
                            foo->items->next->value == 2 &&
                            foo->items->next->next->next->value == 100000);
  EXPECT("enum_anonymous", !anon->name && anon->items->value == 0 &&
                               anon->items->next->next->value == -2);
  EXPECT("enum_value_name", !strcmp(enum_value_name(foo, 99999), "OTHER") &&
                                !enum_value_name(foo, 3));
  const CType *t = type_of("enum Foo");
  EXPECT("enum_type", t && t->kind == C_ENUM && t->size == 4 &&
                          !t->is_signed && t->enumdef == foo);
  const CType *big = type_of("enum Big");
  EXPECT("enum_big", big && big->size == 8);
  EXPECT("enum_member", offset_of(type_of("struct S"), "f") == 4);
  parse_and_define(&p, "enum Foo { A }; enum Foo { B }; BEGIN { }");
  EXPECT("enum_redefined", p.errors == 1 &&
                               strstr(p.msgs, "stdin:1:17-25: ERROR: "
                                              "Redefinition of 'enum Foo'"));
  parse_and_define(&p, "enum Foo { A = 1 << 4, B = A | 3, C = -(B + 1), "
                       "D = ~0, E = 7 / 2 % 2 } BEGIN { }");
  const Enumerator *e = p.script ? p.script->enums->items : NULL;
  EXPECT("enum_expressions", p.errors == 0 && e && e->value == 16 &&
                                 e->next->value == 19 &&
                                 e->next->next->value == -20 &&
                                 e->next->next->next->value == -1 &&
                                 e->next->next->next->next->value == 1);
  parse_and_define(&p, "enum Foo { A = x, B = \"s\", C = 1 / 0 } BEGIN { }");
  EXPECT("enum_bad_values", p.errors == 3 &&
                                strstr(p.msgs, "'x' is not an enumerator") &&
                                strstr(p.msgs, "constant integer expression") &&
                                strstr(p.msgs, "division by zero"));
  parse_and_define(&p, "enum Foo { A = B, B } BEGIN { }");
  EXPECT("enum_later", p.errors == 1 &&
                           strstr(p.msgs, "not an enumerator defined before"));
  parse_and_define(&p, "enum Foo { } BEGIN { }");
  EXPECT("enum_empty", !p.script && strstr(p.msgs, "expecting identifier"));
  parse_and_define(&p, "enum { A = 9223372036854775807, B } BEGIN { }");
  EXPECT("enum_overflow", p.errors == 1 && strstr(p.msgs, "too large"));
}

/* runqlen.bt and dcsnoop.bt carry copies of kernel structs for kernels
 * without BTF, under "#ifndef BPFTRACE_HAVE_BTF"; with BTF those copies
 * must not exist (they would shadow the real layouts). */
static void test_preprocessor_guards(void) {
  bool have_btf = access("/sys/kernel/btf/vmlinux", R_OK) == 0;
  Parsed p;
  parse_and_define(&p, "#ifndef BPFTRACE_HAVE_BTF\n"
                       "struct Guarded { int a; };\n"
                       "#else\n"
                       "struct WithBtf { int a; };\n"
                       "#endif\n"
                       "#if 0\nstruct Never { int a; }\n#ifdef X\n#endif\n"
                       "#endif\n"
                       "BEGIN { @x = ; }");
  EXPECT("guard_error_line", strstr(p.msgs, "stdin:11:14-15:") != NULL);
  parse_and_define(&p, "#ifndef BPFTRACE_HAVE_BTF\n"
                       "struct Guarded { int a; };\n"
                       "#else\n"
                       "struct WithBtf { int a; };\n"
                       "#endif\n"
                       "#if 0\nstruct Never { int a; }\n#ifdef X\n#endif\n"
                       "#endif\n"
                       "BEGIN { }");
  const StructDef *def = p.script ? p.script->structs : NULL;
  EXPECT("guard_one_struct", def && !def->next);
  EXPECT("guard_branch", def && !strcmp(def->name, have_btf ? "WithBtf"
                                                            : "Guarded"));
}

/* ---- parser: casts, sizeof, offsetof ----------------------------------- */

/* The right-hand sides of the assignments of the first probe's body. */
static Node *rhs_at(Script *s, int i) {
  if (!s) return NULL;
  Node *n = s->probes->body->body;
  while (n && i--) n = n->next;
  return n && n->kind == N_ASSIGN ? n->rhs : NULL;
}

static void test_parser_type_grammar(void) {
  Parsed p;
  parse_and_define(&p,
                   "BEGIN { $a = (struct task_struct *)curtask; "
                   "$b = *(int8*)$p; $c = (uint32)$x; $d = (bool)$x; "
                   "$e = (char **)0; $f = sizeof(struct Foo); "
                   "$g = sizeof($x + 1); $h = offsetof(struct Foo, d); "
                   "$i = sizeof(pid_t); $j = offsetof(Foo, a.b); "
                   "$k = (const char *)$x; $l = sizeof(uint8 *) }");
  EXPECT("grammar_parses", p.script != NULL);
  Node *n;
  n = rhs_at(p.script, 0);
  EXPECT("cast_struct_ptr", n && n->kind == N_CAST &&
                                !strcmp(n->name, "struct task_struct *") &&
                                n->lhs->kind == N_BUILTIN);
  n = rhs_at(p.script, 1);
  EXPECT("cast_deref", n && n->kind == N_UNOP && n->op == '*' &&
                           n->lhs->kind == N_CAST &&
                           !strcmp(n->lhs->name, "int8 *"));
  n = rhs_at(p.script, 2);
  EXPECT("cast_uint32", n && n->kind == N_CAST && !strcmp(n->name, "uint32"));
  n = rhs_at(p.script, 3);
  EXPECT("cast_bool", n && n->kind == N_CAST && !strcmp(n->name, "bool"));
  n = rhs_at(p.script, 4);
  EXPECT("cast_char_pp", n && n->kind == N_CAST && !strcmp(n->name, "char **"));
  n = rhs_at(p.script, 5);
  EXPECT("sizeof_type", n && n->kind == N_SIZEOF && n->name &&
                            !strcmp(n->name, "struct Foo") && !n->lhs);
  n = rhs_at(p.script, 6);
  EXPECT("sizeof_expr", n && n->kind == N_SIZEOF && !n->name && n->lhs &&
                            n->lhs->kind == N_BINOP);
  n = rhs_at(p.script, 7);
  EXPECT("offsetof", n && n->kind == N_OFFSETOF &&
                         !strcmp(n->name, "struct Foo") && !strcmp(n->sval, "d"));
  n = rhs_at(p.script, 8);
  EXPECT("sizeof_typedef", n && n->kind == N_SIZEOF && n->name &&
                               !strcmp(n->name, "pid_t"));
  n = rhs_at(p.script, 9);
  EXPECT("offsetof_path", n && n->kind == N_OFFSETOF &&
                              !strcmp(n->name, "Foo") && !strcmp(n->sval, "a.b"));
  n = rhs_at(p.script, 10);
  EXPECT("cast_const", n && n->kind == N_CAST &&
                           !strcmp(n->name, "const char *"));
  n = rhs_at(p.script, 11);
  EXPECT("sizeof_pointer", n && n->kind == N_SIZEOF && n->name &&
                               !strcmp(n->name, "uint8 *"));
  n = rhs_at(p.script, 5);
  EXPECT("sizeof_span", n && n->span.col == 116 && n->span.end_col == 134);
}

/* ---- built-in names ------------------------------------------------------ */

static void test_builtin_names(void) {
  static const struct {
    const char *text;
    int size;
    bool is_signed;
    const char *name;
  } cases[] = {
      {"int", 4, true, "int32"},          {"unsigned long", 8, false, "uint64"},
      {"long long", 8, true, "int64"},    {"unsigned", 4, false, "uint32"},
      {"short int", 2, true, "int16"},    {"unsigned char", 1, false, "uint8"},
      {"char", 1, true, "int8"},          {"uint8", 1, false, "uint8"},
      {"int64", 8, true, "int64"},        {"u32", 4, false, "uint32"},
      {"uint16_t", 2, false, "uint16"},   {"bool", 1, false, "bool"},
      {"long unsigned int", 8, false, "uint64"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const CType *t = type_of(cases[i].text);
    char label[64];
    snprintf(label, sizeof label, "builtin '%s'", cases[i].text);
    EXPECT(label, t && t->kind == C_INT && t->size == cases[i].size &&
                      t->is_signed == cases[i].is_signed &&
                      !strcmp(name_of(t), cases[i].name));
  }
  const CType *p = type_of("int8 *");
  EXPECT("builtin_ptr", p && p->kind == C_PTR && p->size == 8 &&
                            p->target == type_of("int8"));
  EXPECT("builtin_ptr_shared", type_of("int8*") == p);
  EXPECT("builtin_void_ptr", type_of("void *") &&
                                 !strcmp(name_of(type_of("void *")), "void *"));
  char err[128] = "";
  EXPECT("builtin_invalid", !ctype_parse("int (", err, sizeof err) &&
                                strstr(err, "Invalid type"));
  EXPECT("builtin_invalid_mix", !ctype_parse("long char", err, sizeof err));
  EXPECT("builtin_no_btf", !ctype_btf_loaded());
}

/* ---- kernel types ------------------------------------------------------ */

/* The member's bit offset as the raw BTF records it, found independently of
 * ctype.c (descending into anonymous members); -1 if absent. */
static long raw_bit_offset(const struct btf *btf, int id, const char *name) {
  const struct btf_type *t = btf__type_by_id(btf, (__u32)id);
  while (btf_is_mod(t) || btf_is_typedef(t)) t = btf__type_by_id(btf, t->type);
  if (!btf_is_composite(t)) return -1;
  const struct btf_member *m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++) {
    const char *n = btf__name_by_offset(btf, m[i].name_off);
    if (n && !strcmp(n, name)) return (long)btf_member_bit_offset(t, (__u32)i);
    if (n && !*n) {
      long inner = raw_bit_offset(btf, (int)m[i].type, name);
      if (inner >= 0) return (long)btf_member_bit_offset(t, (__u32)i) + inner;
    }
  }
  return -1;
}

static void test_task_struct(const struct btf *btf) {
  double start = now_ms();
  const CType *task = type_of("struct task_struct");
  double load_ms = now_ms() - start;
  start = now_ms();
  const CType *again = type_of("task_struct");
  double bare_ms = now_ms() - start;
  start = now_ms();
  type_of("task_struct");
  double cached_ms = now_ms() - start;
  printf("test_ctype: first kernel type (loads vmlinux BTF) %.2f ms, "
         "a new name %.3f ms, the same name again %.4f ms\n", load_ms,
         bare_ms, cached_ms);
  EXPECT("task_found", task && task->kind == C_STRUCT && !task->from_script);
  EXPECT("task_bare_name", again == task);
  if (!task) return;
  int id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
  const struct btf_type *bt = btf__type_by_id(btf, (__u32)id);
  EXPECT("task_size", task->size == (int)bt->size);
  static const char *const members[] = {"pid", "tgid", "comm", "parent",
                                        "real_parent", "__state", "flags",
                                        NULL};
  for (int i = 0; members[i]; i++) {
    char label[64];
    snprintf(label, sizeof label, "task_offset_%s", members[i]);
    EXPECT(label, offset_of(task, members[i]) * 8L ==
                      raw_bit_offset(btf, id, members[i]));
  }
  CField f;
  EXPECT("task_pid_type", ctype_field(task, "pid", &f) &&
                              f.type->kind == C_INT && f.type->size == 4 &&
                              f.type->is_signed && f.bit_size == 0);
  EXPECT("task_tgid_after_pid", offset_of(task, "tgid") ==
                                    offset_of(task, "pid") + 4);
  EXPECT("task_comm", ctype_field(task, "comm", &f) &&
                          f.type->kind == C_ARRAY && f.type->nelems == 16 &&
                          f.type->target->is_char &&
                          /* the kernel builds with -funsigned-char */
                          (!strcmp(name_of(f.type), "int8[16]") ||
                           !strcmp(name_of(f.type), "uint8[16]")));
  EXPECT("task_parent", ctype_field(task, "parent", &f) &&
                            f.type->kind == C_PTR && f.type->target == task);
  /* real_parent->pid: through the pointer to the same record. */
  EXPECT("task_real_parent_pid",
         ctype_field(task, "real_parent", &f) &&
             offset_of(f.type->target, "pid") == offset_of(task, "pid"));
  EXPECT("task_unknown_field", !ctype_field(task, "no_such_field", &f));
  EXPECT("task_name", !strcmp(name_of(task), "struct task_struct"));
  EXPECT("task_ptr_name",
         !strcmp(name_of(type_of("struct task_struct *")),
                 "struct task_struct *"));
}

/* A 1-bit field of task_struct (sched_reset_on_fork and friends): the
 * load unit, shift and width must reproduce the raw bit offset. */
static void test_bitfield(const struct btf *btf) {
  const CType *task = type_of("struct task_struct");
  int id = btf__find_by_name_kind(btf, "task_struct", BTF_KIND_STRUCT);
  static const char *const names[] = {"sched_reset_on_fork", "in_iowait",
                                      "in_execve", NULL};
  int found = 0;
  for (int i = 0; names[i]; i++) {
    CField f;
    if (!task || !ctype_field(task, names[i], &f)) continue;
    found++;
    char label[64];
    snprintf(label, sizeof label, "bitfield_%s", names[i]);
    EXPECT(label, f.bit_size == 1 && f.type->kind == C_INT &&
                      f.offset % f.type->size == 0 &&
                      f.bit_offset + f.bit_size <= f.type->size * 8 &&
                      f.offset * 8L + f.bit_offset ==
                          raw_bit_offset(btf, id, names[i]));
  }
  EXPECT("bitfield_found", found > 0);
}

static void test_file_path(const struct btf *btf) {
  const CType *file = type_of("struct file");
  EXPECT("file_found", file != NULL);
  if (!file) return;
  int id = btf__find_by_name_kind(btf, "file", BTF_KIND_STRUCT);
  CField path, dentry;
  /* f_path may sit in an anonymous union and be const: both looked
   * through. */
  EXPECT("file_f_path", ctype_field(file, "f_path", &path) &&
                            path.offset * 8L ==
                                raw_bit_offset(btf, id, "f_path") &&
                            path.type->kind == C_STRUCT &&
                            !strcmp(path.type->name, "path"));
  CField whole;
  EXPECT("file_field_path", ctype_field_path(file, "f_path.dentry", &whole) &&
                                whole.offset == path.offset + 8 &&
                                whole.type->kind == C_PTR);
  EXPECT("file_field_path_bad", !ctype_field_path(file, "f_path.nope", &whole) &&
                                    !ctype_field_path(file, "f_path.", &whole));
  EXPECT("file_dentry", ctype_field(path.type, "dentry", &dentry) &&
                            dentry.offset == 8 &&
                            dentry.type->kind == C_PTR &&
                            !strcmp(name_of(dentry.type), "struct dentry *"));
  const CType *fp = type_of("struct file *");
  EXPECT("file_ptr", fp && fp->kind == C_PTR && fp->target == file);
}

static void test_kernel_union_typedef_enum(void) {
  const CType *attr = type_of("union bpf_attr");
  EXPECT("union_found", attr && attr->kind == C_UNION && attr->size > 0);
  EXPECT("union_member", attr && offset_of(attr, "map_type") == 0);
  EXPECT("union_name", attr && !strcmp(name_of(attr), "union bpf_attr"));
  const CType *pid = type_of("pid_t");
  EXPECT("typedef_pid_t", pid && pid->kind == C_INT && pid->size == 4 &&
                              pid->is_signed);
  EXPECT("typedef_pointer", type_of("pid_t *") &&
                                type_of("pid_t *")->target == pid);
  const CType *e = type_of("enum bpf_map_type");
  EXPECT("enum_type", e && e->kind == C_ENUM && e->size == 4);
  int64_t v = -1;
  const CType *et = NULL;
  EXPECT("enum_value",
         ctype_enum_value("BPF_MAP_TYPE_HASH", &v, NULL) && v == 1);
  EXPECT("enum_value_ringbuf",
         ctype_enum_value("BPF_MAP_TYPE_RINGBUF", &v, &et) && v == 27);
  EXPECT("enum_value_type", et == e && e->enumdef &&
                                !strcmp(enum_value_name(e->enumdef, 27),
                                        "BPF_MAP_TYPE_RINGBUF"));
  double start = now_ms();
  EXPECT("enum_unknown", !ctype_enum_value("NO_SUCH_ENUMERATOR_X", &v, NULL));
  printf("test_ctype: a missing enumerator (scans every BTF enum) %.2f ms\n",
         now_ms() - start);
}

static void test_kernel_errors(void) {
  char err[256] = "";
  EXPECT("unknown_struct",
         !ctype_parse("struct no_such_struct_x", err, sizeof err) &&
             !strcmp(err, "Unknown struct/union: 'struct no_such_struct_x'"));
  EXPECT("unknown_type", !ctype_parse("no_such_type_x *", err, sizeof err) &&
                             !strcmp(err, "Unknown type: 'no_such_type_x'"));
  /* A text that names nothing is remembered with its message: asked
   * again, the same answer, without another scan of the kernel's BTF. */
  strcpy(err, "");
  double start = now_ms();
  EXPECT("unknown_type_again",
         !ctype_parse("no_such_type_x *", err, sizeof err) &&
             !strcmp(err, "Unknown type: 'no_such_type_x'"));
  char small[12];
  EXPECT("unknown_type_again_cut",
         !ctype_parse("no_such_type_x *", small, sizeof small) &&
             !strcmp(small, "Unknown typ"));
  printf("test_ctype: an unknown type asked again %.3f ms\n",
         now_ms() - start);
  CField f;
  EXPECT("field_of_int", !ctype_field(type_of("int"), "x", &f));
}

/* Script structs beat the kernel's, and may use kernel types. */
static void test_script_over_kernel(void) {
  Parsed p;
  parse_and_define(&p, "struct task_struct { int only; }\n"
                       "struct Mine { struct task_struct *t; pid_t pid; "
                       "struct file f; struct Undeclared *u; }\n"
                       "BEGIN { }");
  EXPECT("override_parses", p.script && p.errors == 0);
  const CType *mine = type_of("struct task_struct");
  EXPECT("override_wins", mine && mine->from_script && mine->size == 4);
  const CType *m = type_of("struct Mine");
  const CType *file = type_of("struct file");
  CField u;
  EXPECT("kernel_members", m && file && offset_of(m, "pid") == 8 &&
                               offset_of(m, "f") == 16 &&
                               m->size == 16 + file->size + 8);
  EXPECT("opaque_pointer", m && ctype_field(m, "u", &u) &&
                               u.type->kind == C_PTR &&
                               u.type->target->incomplete);
  parse_and_define(&p, "struct Bad { struct no_such_struct_x s; }\nBEGIN { }");
  EXPECT("unknown_member_struct",
         p.errors == 1 &&
             strstr(p.msgs, "stdin:1:14-37: ERROR: Unknown struct/union: "
                            "'struct no_such_struct_x'"));
  /* A new script forgets the old one's structs. */
  EXPECT("override_gone", type_of("struct task_struct") &&
                              !type_of("struct task_struct")->from_script);
}

int main(void) {
  test_builtin_names();
  test_script_struct_layout();
  test_script_struct_forms();
  test_script_struct_errors();
  test_script_struct_nested();
  test_script_enums();
  test_parser_type_grammar();
  test_preprocessor_guards();
  struct btf *btf = NULL;
  if (access("/sys/kernel/btf/vmlinux", R_OK) == 0) {
    double start = now_ms();
    btf = btf__load_vmlinux_btf();
    printf("test_ctype: btf__load_vmlinux_btf alone %.2f ms\n",
           now_ms() - start);
  }
  if (btf) {
    test_task_struct(btf);
    test_bitfield(btf);
    test_file_path(btf);
    test_kernel_union_typedef_enum();
    test_kernel_errors();
    test_script_over_kernel();
    btf__free(btf);
  } else {
    printf("test_ctype: no kernel BTF, kernel type tests skipped\n");
  }
  printf("test_ctype: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
