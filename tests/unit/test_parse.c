/* Unit tests for lex + parse: scripts are parsed and their ASTs dumped as
 * S-expressions and compared with the expected text; malformed scripts
 * must give exactly the expected message and span. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/ast.h"
#include "lang/parse.h"

static int passed, failed;

/* ---- AST dump --------------------------------------------------------- */

typedef struct Buf {
  char *data;
  size_t len;
  FILE *f;
} Buf;

static const char *op_name(int op) {
  static char one[2];
  switch (op) {
  case OP_EQ: return "==";
  case OP_NE: return "!=";
  case OP_LE: return "<=";
  case OP_GE: return ">=";
  case OP_AND: return "&&";
  case OP_OR: return "||";
  case OP_SHL: return "<<";
  case OP_SHR: return ">>";
  case OP_INC: return "++";
  case OP_DEC: return "--";
  }
  one[0] = (char)op;
  one[1] = 0;
  return one;
}

static void dump_string(FILE *f, const char *s, int len) {
  fputc('"', f);
  for (int i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '\n') fputs("\\n", f);
    else if (c == '\t') fputs("\\t", f);
    else if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 32 || c >= 127) fprintf(f, "\\x%02x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void dump_node(FILE *f, const Node *n);

static void dump_list(FILE *f, const Node *n) {
  for (; n; n = n->next) {
    fputc(' ', f);
    dump_node(f, n);
  }
}

static void dump_node(FILE *f, const Node *n) {
  if (!n) {
    fputs("nil", f);
    return;
  }
  switch (n->kind) {
  case N_INT: fprintf(f, "%lld", (long long)n->ival); break;
  case N_STR: dump_string(f, n->sval, n->slen); break;
  case N_BUILTIN:
  case N_VAR: fputs(n->name, f); break;
  case N_MAP:
    if (!n->args) {
      fputs(n->name, f);
      break;
    }
    fprintf(f, "(%s", n->name);
    dump_list(f, n->args);
    fputc(')', f);
    break;
  case N_CALL:
    fprintf(f, "(call %s", n->name);
    dump_list(f, n->args);
    fputc(')', f);
    break;
  case N_BINOP:
    fprintf(f, "(%s ", op_name(n->op));
    dump_node(f, n->lhs);
    fputc(' ', f);
    dump_node(f, n->rhs);
    fputc(')', f);
    break;
  case N_UNOP:
    fprintf(f, "(%s ", op_name(n->op));
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_FIELD:
    fputs("(field ", f);
    dump_node(f, n->lhs);
    fprintf(f, " %s)", n->name);
    break;
  case N_TERNARY:
    fputs("(? ", f);
    dump_node(f, n->cond);
    fputc(' ', f);
    dump_node(f, n->then);
    fputc(' ', f);
    dump_node(f, n->els);
    fputc(')', f);
    break;
  case N_EXPR_STMT:
    fputs("(expr ", f);
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_ASSIGN:
    fprintf(f, "(%s= ", n->op == '=' ? "" : op_name(n->op));
    dump_node(f, n->lhs);
    fputc(' ', f);
    dump_node(f, n->rhs);
    fputc(')', f);
    break;
  case N_INCDEC:
    fprintf(f, "(%s%s ", n->ival ? "pre" : "post", op_name(n->op));
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_IF:
    fputs("(if ", f);
    dump_node(f, n->cond);
    fputc(' ', f);
    dump_node(f, n->then);
    if (n->els) {
      fputc(' ', f);
      dump_node(f, n->els);
    }
    fputc(')', f);
    break;
  case N_BLOCK:
    fputs("(block", f);
    dump_list(f, n->body);
    fputc(')', f);
    break;
  case N_WHILE:
  case N_UNROLL:
    fprintf(f, "(%s ", n->kind == N_WHILE ? "while" : "unroll");
    dump_node(f, n->kind == N_WHILE ? n->cond : n->lhs);
    fputc(' ', f);
    dump_node(f, n->then);
    fputc(')', f);
    break;
  case N_RETURN:
    fputs("(return", f);
    if (n->lhs) dump_list(f, n->lhs);
    fputc(')', f);
    break;
  case N_BREAK: fputs("(break)", f); break;
  case N_CONTINUE: fputs("(continue)", f); break;
  case N_INDEX:
    fputs("(index ", f);
    dump_node(f, n->lhs);
    fputc(' ', f);
    dump_node(f, n->rhs);
    fputc(')', f);
    break;
  case N_CAST:
    fprintf(f, "(cast \"%s\" ", n->name);
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_TUPLE:
    fputs("(tuple", f);
    dump_list(f, n->args);
    fputc(')', f);
    break;
  case N_SIZEOF:
    if (n->name) {
      fprintf(f, "(sizeof \"%s\")", n->name);
      break;
    }
    fputs("(sizeof ", f);
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_OFFSETOF:
    fprintf(f, "(offsetof \"%s\" %s)", n->name, n->sval);
    break;
  case N_TYPEOF:   /* typeof(TYPE) or typeof(expr) */
    if (n->name) {
      fprintf(f, "(typeof \"%s\")", n->name);
      break;
    }
    fputs("(typeof ", f);
    dump_node(f, n->lhs);
    fputc(')', f);
    break;
  case N_FOR:
    fputs("(for ", f);
    dump_node(f, n->lhs);
    fputc(' ', f);
    dump_node(f, n->args);
    if (n->rhs) {
      fputs(" .. ", f);
      dump_node(f, n->rhs);
    }
    fputc(' ', f);
    dump_node(f, n->then);
    fputc(')', f);
    break;
  case N_LET:   /* let $x [: type] [= value] */
    fputs("(let ", f);
    dump_node(f, n->lhs);
    if (n->rhs) {
      fputc(' ', f);
      dump_node(f, n->rhs);
    }
    fputc(')', f);
    break;
  }
}

static void dump_script(FILE *f, const Script *s) {
  for (const ConfigItem *c = s->config; c; c = c->next) {
    fprintf(f, "(config %s ", c->key);
    dump_node(f, c->value);
    fputs(")\n", f);
  }
  for (const Probe *p = s->probes; p; p = p->next) {
    fprintf(f, "(probe %d", p->index);
    for (const AttachPoint *ap = p->aps; ap; ap = ap->next) {
      fprintf(f, " (%s", ap->provider);
      for (int i = 0; i < ap->nparts; i++) fprintf(f, " '%s'", ap->parts[i]);
      fputc(')', f);
    }
    if (p->pred) {
      fputs(" (pred ", f);
      dump_node(f, p->pred);
      fputc(')', f);
    }
    fputc(' ', f);
    dump_node(f, p->body);
    fputs(")\n", f);
  }
}

/* ---- helpers ---------------------------------------------------------- */

/* Parses text; the dump or the diagnostics land in *out (caller frees). */
static Script *parse_text(const char *text, char **diag_out) {
  static Source src;
  src.name = "stdin";
  src.text = text;
  Diag d;
  diag_init(&d, &src);
  size_t len;
  d.out = open_memstream(diag_out, &len);
  Script *s = parse_script(&src, NULL, &d);
  fclose(d.out);
  if (!s && d.errors == 0) {
    free(*diag_out);
    *diag_out = strdup("parse failed without a message");
  }
  return s;
}

static void check_ast(const char *name, const char *text, const char *want) {
  char *diag = NULL, *got = NULL;
  size_t len;
  Script *s = parse_text(text, &diag);
  if (!s) {
    printf("FAIL %s: parse error:\n%s", name, diag);
    failed++;
    free(diag);
    return;
  }
  FILE *f = open_memstream(&got, &len);
  dump_script(f, s);
  fclose(f);
  if (strcmp(got, want) == 0) {
    passed++;
  } else {
    printf("FAIL %s\n  script: %s\n  want: %s  got:  %s", name, text, want,
           got);
    failed++;
  }
  free(got);
  free(diag);
}

/* The whole diagnostic: the message line, the source line and carets. */
static void check_error(const char *name, const char *text, const char *want) {
  char *diag = NULL;
  Script *s = parse_text(text, &diag);
  if (s) {
    printf("FAIL %s: parsed, but expected an error\n", name);
    failed++;
  } else if (strcmp(diag, want) != 0) {
    printf("FAIL %s\n  want:\n%s  got:\n%s", name, want, diag);
    failed++;
  } else {
    passed++;
  }
  free(diag);
}

static void check(const char *name, int ok) {
  if (ok) {
    passed++;
  } else {
    printf("FAIL %s\n", name);
    failed++;
  }
}

static int span_is(Span s, int line, int col, int end_col) {
  return s.line == line && s.col == col && s.end_col == end_col;
}

/* ---- tests ------------------------------------------------------------ */

static void test_issue_one_liners(void) {
  check_ast("count_by_comm",
            "tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }",
            "(probe 0 (tracepoint 'raw_syscalls' 'sys_enter') (block (= (@ "
            "comm) (call count))))\n");
  check_ast("bytes_read_predicate",
            "tracepoint:syscalls:sys_exit_read /args->ret > 0/ { "
            "@bytes[comm] = sum(args->ret); }",
            "(probe 0 (tracepoint 'syscalls' 'sys_exit_read') (pred (> "
            "(field args ret) 0)) (block (= (@bytes comm) (call sum (field "
            "args ret)))))\n");
  check_ast("openat_printf",
            "tracepoint:syscalls:sys_enter_openat { printf(\"%s %s\\n\", "
            "comm, str(args->filename)); }",
            "(probe 0 (tracepoint 'syscalls' 'sys_enter_openat') (block "
            "(expr (call printf \"%s %s\\n\" comm (call str (field args "
            "filename))))))\n");
  check_ast("hello", "BEGIN { printf(\"hello\\n\"); exit(); }",
            "(probe 0 (BEGIN) (block (expr (call printf \"hello\\n\")) (expr "
            "(call exit))))\n");
  check_ast("interval_exit",
            "i:ms:100 { @n++; if (@n == 3) { exit(); } }",
            "(probe 0 (interval 'ms' '100') (block (post++ @n) (if (== @n 3) "
            "(block (expr (call exit))))))\n");
}

static void test_attach_points(void) {
  check_ast("multi_attach", "t:a:b, t:c:d { }",
            "(probe 0 (tracepoint 'a' 'b') (tracepoint 'c' 'd') (block))\n");
  check_ast("trailing_comma", "t:a:b,\n  t:c:d,\n/1/ { }",
            "(probe 0 (tracepoint 'a' 'b') (tracepoint 'c' 'd') (pred 1) "
            "(block))\n");
  check_ast("wildcard_and_two_probes",
            "tracepoint:syscalls:sys_enter_* { @[probe] = count(); }\n"
            "end { print(@); }",
            "(probe 0 (tracepoint 'syscalls' 'sys_enter_*') (block (= (@ "
            "probe) (call count))))\n(probe 1 (END) (block (expr (call print "
            "@))))\n");
  check_ast("uprobe_path", "uprobe:/bin/bash:readline { @ = 1 }",
            "(probe 0 (uprobe '/bin/bash' 'readline') (block (= @ 1)))\n");
  check_ast("uprobe_path_predicate",
            "uretprobe:/bin/bash:readline/pid == 1/{ }",
            "(probe 0 (uretprobe '/bin/bash' 'readline') (pred (== pid 1)) "
            "(block))\n");
  check_ast("begin_predicate_no_space", "BEGIN/1/{}",
            "(probe 0 (BEGIN) (pred 1) (block))\n");
  check_ast("interval_s", "interval:s:1 { exit() }",
            "(probe 0 (interval 's' '1') (block (expr (call exit))))\n");
  check_ast("aliases", "k:f,kr:f,u:/x:f,ur:/x:f,p:hz:99,s:cpu-clock:1,"
                       "h:cycles:1,f:g,fr:g,kfunc:g,kretfunc:g,rt:h,U:/x:p:q,"
                       "begin { }",
            "(probe 0 (kprobe 'f') (kretprobe 'f') (uprobe '/x' 'f') "
            "(uretprobe '/x' 'f') (profile 'hz' '99') (software 'cpu-clock' "
            "'1') (hardware 'cycles' '1') (fentry 'g') (fexit 'g') (fentry "
            "'g') (fexit 'g') (rawtracepoint 'h') (usdt '/x' 'p' 'q') "
            "(BEGIN) (block))\n");
  check_ast("shebang_comments_directives",
            "#!/usr/bin/env bpftrace\n#include <linux/sched.h>\n"
            "// line comment\n/* block\ncomment */ BEGIN /* c */ { /* c */ }\n",
            "(probe 0 (BEGIN) (block))\n");
  check_ast("struct_definition_skipped",
            "struct foo { int a; char b[2]; };\nBEGIN { }",
            "(probe 0 (BEGIN) (block))\n");
  check_ast("config_block",
            "config = { max_map_keys = 100; stack_mode = perf }\nBEGIN { }",
            "(config max_map_keys 100)\n(config stack_mode perf)\n"
            "(probe 0 (BEGIN) (block))\n");
}

static void test_expressions(void) {
  check_ast("precedence", "BEGIN { @x = 1 + 2 * 3 << 1 == 14 && !0; }",
            "(probe 0 (BEGIN) (block (= @x (&& (== (<< (+ 1 (* 2 3)) 1) 14) "
            "(! 0)))))\n");
  check_ast("bit_precedence", "BEGIN { @x = 1 | 2 ^ 3 & 4 || 5 < 6 - -7 % 2; }",
            "(probe 0 (BEGIN) (block (= @x (|| (| 1 (^ 2 (& 3 4))) (< 5 (- 6 "
            "(% (- 7) 2)))))))\n");
  check_ast("left_assoc", "BEGIN { @x = 10 - 3 - 2; @y = 8 / 4 / 2 }",
            "(probe 0 (BEGIN) (block (= @x (- (- 10 3) 2)) (= @y (/ (/ 8 4) "
            "2))))\n");
  check_ast("ternary", "BEGIN { $x = pid > 1 ? \"a\" : $y ? 2 : 3; }",
            "(probe 0 (BEGIN) (block (= $x (? (> pid 1) \"a\" (? $y 2 "
            "3)))))\n");
  check_ast("literals",
            "BEGIN { @a = 0x1F + 017 + 0b101 + 1_000_000 + "
            "18446744073709551615 + 0; }",
            "(probe 0 (BEGIN) (block (= @a (+ (+ (+ (+ (+ 31 15) 5) 1000000) "
            "-1) 0))))\n");
  check_ast("exponent", "BEGIN { @a = elapsed / 1e6 + 2E0_1; }",
            "(probe 0 (BEGIN) (block (= @a (+ (/ elapsed 1000000) 20))))\n");
  check_ast("durations_and_suffixes",
            "BEGIN { @a = 100ms + 3us + 0s + 1e3ns + 0x1d + 7UL + 0xfull; }",
            "(probe 0 (BEGIN) (block (= @a (+ (+ (+ (+ (+ (+ 100000000 3000) "
            "0) 1000) 29) 7) 15))))\n");
  check_ast("string_escapes",
            "BEGIN { printf(\"\\t\\\"\\\\\\033[1m\\x41\\a\\'\\r\\n\"); }",
            "(probe 0 (BEGIN) (block (expr (call printf "
            "\"\\t\\\"\\\\\\x1b[1mA\\x07'\\x0d\\n\"))))\n");
  check_ast("fields_and_keys",
            "t:a:b { @m[args.x, $1, comm] = args->y->z; $v.0; }",
            "(probe 0 (tracepoint 'a' 'b') (block (= (@m (field args x) $1 "
            "comm) (field (field args y) z)) (expr (field $v 0))))\n");
  check_ast("calls_and_maps",
            "BEGIN { clear(@m); delete(@m[1, \"a\"]); print(@m); "
            "@h = hist(nsecs); }",
            "(probe 0 (BEGIN) (block (expr (call clear @m)) (expr (call "
            "delete (@m 1 \"a\"))) (expr (call print @m)) (= @h (call hist "
            "nsecs))))\n");
  check_ast("casts_tuples_index",
            "BEGIN { $t = (1, \"a\"); @c = (uint8)300; "
            "$s = ((struct sock *)arg0)->sk; @i = args->argv[1]; @d = *arg1 }",
            "(probe 0 (BEGIN) (block (= $t (tuple 1 \"a\")) (= @c (cast "
            "\"uint8\" 300)) (= $s (field (cast \"struct sock *\" arg0) sk)) "
            "(= @i (index (field args argv) 1)) (= @d (* arg1))))\n");
}

static void test_statements(void) {
  check_ast("compound_assign",
            "BEGIN { $a = 1; $a += 2; @b -= 1; $a *= 3; $a /= 4; $a %= 5; "
            "$a &= 6; $a |= 7; $a ^= 8; $a <<= 1; $a >>= 2; }",
            "(probe 0 (BEGIN) (block (= $a 1) (+= $a 2) (-= @b 1) (*= $a 3) "
            "(/= $a 4) (%= $a 5) (&= $a 6) (|= $a 7) (^= $a 8) (<<= $a 1) "
            "(>>= $a 2)))\n");
  check_ast("incdec", "BEGIN { $x++; $x--; ++@m[1]; --@; @y = $x++ + 1 }",
            "(probe 0 (BEGIN) (block (post++ $x) (post-- $x) (pre++ (@m 1)) "
            "(pre-- @) (= @y (+ (post++ $x) 1))))\n");
  check_ast("if_else_chain",
            "BEGIN { if ($a == 1) { @x = 1 } else if ($a != 2) { @x = 2; } "
            "else { @x = 3 } @y = 4; }",
            "(probe 0 (BEGIN) (block (if (== $a 1) (block (= @x 1)) (if (!= "
            "$a 2) (block (= @x 2)) (block (= @x 3)))) (= @y 4)))\n");
  check_ast("loops_and_jumps",
            "BEGIN { unroll(3) { @a++; } while ($i < 3) { $i++; if ($i == 2) "
            "{ break; } continue } return; }",
            "(probe 0 (BEGIN) (block (unroll 3 (block (post++ @a))) (while "
            "(< $i 3) (block (post++ $i) (if (== $i 2) (block (break))) "
            "(continue))) (return)))\n");
  check_ast("for_loops",
            "BEGIN { for ($i : 0..5) { @a += $i; } for ($kv : @a) { } }",
            "(probe 0 (BEGIN) (block (for $i 0 .. 5 (block (+= @a $i))) "
            "(for $kv @a (block))))\n");
  check_ast("nested_block_and_stray_semicolons",
            "BEGIN { ; { @a = 1; };; }",
            "(probe 0 (BEGIN) (block (block (= @a 1))))\n");
}

static void test_spans(void) {
  char *diag = NULL;
  Script *s = parse_text("BEGIN { @a = 1 + \"x\"; }\n"
                         "  tracepoint:syscalls:sys_enter_read,\n"
                         "  i:s:1 /pid/ { printf(\"%d\", args->fd); }",
                         &diag);
  check("spans_parse", s != NULL);
  if (!s) {
    printf("%s", diag);
    free(diag);
    return;
  }
  Node *assign = s->probes->body->body;
  check("span_block", span_is(s->probes->body->span, 1, 7, 24));
  check("span_assign", span_is(assign->span, 1, 9, 21));
  check("span_map", span_is(assign->lhs->span, 1, 9, 11));
  check("span_binop", span_is(assign->rhs->span, 1, 14, 21));
  check("span_string", span_is(assign->rhs->rhs->span, 1, 18, 21));
  Probe *p = s->probes->next;
  check("span_probe_index", p->index == 1 && s->nprobes == 2);
  check("span_attach1", span_is(p->aps->span, 2, 3, 37));
  check("span_attach2", span_is(p->aps->next->span, 3, 3, 8));
  check("attach_text", !strcmp(p->aps->text,
                               "tracepoint:syscalls:sys_enter_read"));
  check("span_pred", span_is(p->pred->span, 3, 10, 13));
  Node *call = p->body->body->lhs;
  check("span_call", span_is(call->span, 3, 17, 39));
  check("span_field", span_is(call->args->next->span, 3, 30, 38));
  free(diag);
}

static void test_errors(void) {
  check_error("missing_semicolon", "BEGIN { @a = 1 @b = 2; }",
              "stdin:1:16-18: ERROR: syntax error, unexpected map, expecting }\n"
              "BEGIN { @a = 1 @b = 2; }\n"
              "               ^^\n");
  check_error("else_without_block", "BEGIN { if (1) { } else }",
              "stdin:1:25-26: ERROR: syntax error, unexpected }, expecting { "
              "or if\nBEGIN { if (1) { } else }\n"
              "                        ^\n");
  check_error("missing_operand", "BEGIN { @a = ; }",
              "stdin:1:14-15: ERROR: syntax error, unexpected ;\n"
              "BEGIN { @a = ; }\n"
              "             ^\n");
  check_error("unterminated_string", "BEGIN { \"abc }",
              "stdin:1:9-15: ERROR: unterminated string\n"
              "BEGIN { \"abc }\n"
              "        ^^^^^^\n");
  check_error("unterminated_comment", "BEGIN { /* x }\n\n",
              "stdin:1:9-15: ERROR: end of file during comment\n"
              "BEGIN { /* x }\n"
              "        ^^^^^^\n");
  check_error("bad_character", "BEGIN { @a = 1 `}",
              "stdin:1:16-17: ERROR: invalid character '`'\n"
              "BEGIN { @a = 1 `}\n"
              "               ^\n");
  check_error("missing_brace", "BEGIN @a = 1 }",
              "stdin:1:7-9: ERROR: syntax error, unexpected map, expecting {\n"
              "BEGIN @a = 1 }\n"
              "      ^^\n");
  check_error("missing_brace_eof", "kprobe:foo",
              "stdin:1:1-11: ERROR: syntax error, unexpected end of file, "
              "expecting {\nkprobe:foo\n^^^^^^^^^^\n");
  check_error("empty_program", "",
              "stdin:1:1-2: ERROR: no probes in the program: expected a probe "
              "such as 'BEGIN { ... }'\n\n^\n");
  check_error("only_comments", "// nothing\n",
              "stdin:1:1-2: ERROR: no probes in the program: expected a probe "
              "such as 'BEGIN { ... }'\n// nothing\n^\n");
  check_error("integer_too_large", "BEGIN { @x = 18446744073709551616; }",
              "stdin:1:14-34: ERROR: integer literal '18446744073709551616' is "
              "too large (the largest is 18446744073709551615)\n"
              "BEGIN { @x = 18446744073709551616; }\n"
              "             ^^^^^^^^^^^^^^^^^^^^\n");
  check_error("bad_escape", "BEGIN { printf(\"\\q\"); }",
              "stdin:1:17-19: ERROR: invalid escape character '\\q'\n"
              "BEGIN { printf(\"\\q\"); }\n"
              "                ^^\n");
  check_error("unclosed_block", "BEGIN {\n  @a = 1;\n",
              "stdin:2:9-10: ERROR: syntax error, unexpected end of file, "
              "expecting }\n  @a = 1;\n        ^\n");
  check_error("unclosed_paren", "BEGIN { @x = (1; }",
              "stdin:1:16-17: ERROR: syntax error, unexpected ;, expecting ) "
              "or \",\"\nBEGIN { @x = (1; }\n               ^\n");
  check_error("assign_to_builtin", "BEGIN { x = 1; }",
              "stdin:1:11-12: ERROR: syntax error, unexpected =, expecting }\n"
              "BEGIN { x = 1; }\n          ^\n");
  check_error("predicate_not_closed", "BEGIN /1/ @a = 1 }",
              "stdin:1:14-15: ERROR: syntax error, unexpected =, expecting "
              "end predicate\nBEGIN /1/ @a = 1 }\n             ^\n");
  check_error("extra_close", "BEGIN { exit() } }",
              "stdin:1:18-19: ERROR: syntax error, unexpected }, expecting "
              "attach point\nBEGIN { exit() } }\n                 ^\n");
  check_error("no_attach_point", "{ }",
              "stdin:1:1-2: ERROR: syntax error, unexpected {, expecting "
              "attach point\n{ }\n^\n");
  check_error("dollar_alone", "BEGIN { $ }",
              "stdin:1:9-10: ERROR: invalid character '$'\n"
              "BEGIN { $ }\n        ^\n");
  check_error("incdec_needs_lvalue", "BEGIN { 1++ }",
              "stdin:1:10-12: ERROR: '++' needs a $variable or @map to "
              "change\nBEGIN { 1++ }\n         ^^\n");
  check_error("bad_octal", "BEGIN { @x = 09; }",
              "stdin:1:14-16: ERROR: invalid integer literal '09'\n"
              "BEGIN { @x = 09; }\n             ^^\n");
  check_error("exponent_without_digits", "BEGIN { @x = 1e; }",
              "stdin:1:14-16: ERROR: invalid integer literal '1e'\n"
              "BEGIN { @x = 1e; }\n             ^^\n");
  check_error("exponent_too_large", "BEGIN { @x = 2e19; }",
              "stdin:1:14-18: ERROR: integer literal '2e19' is too large (the "
              "largest is 18446744073709551615)\n"
              "BEGIN { @x = 2e19; }\n             ^^^^\n");
  check_error("hex_escape_without_digits", "BEGIN { @x = \"\\x\"; }",
              "stdin:1:15-17: ERROR: invalid escape character '\\x'\n"
              "BEGIN { @x = \"\\x\"; }\n              ^^\n");
  check_error("directive_in_body", "BEGIN { @a = 1 # 2; }",
              "stdin:1:16-22: ERROR: syntax error, unexpected preprocessor "
              "directive, expecting }\nBEGIN { @a = 1 # 2; }\n"
              "               ^^^^^^\n");
}

/* Nesting far beyond the limit must be an error, not a stack overflow. */
static void test_deep_nesting(void) {
  size_t n = 100000;
  char *text = malloc(n * 2 + 64);
  strcpy(text, "BEGIN { @x = ");
  size_t len = strlen(text);
  memset(text + len, '(', n);
  len += n;
  text[len++] = '1';
  memset(text + len, ')', n);
  len += n;
  strcpy(text + len, "; }");
  char *diag = NULL;
  Script *s = parse_text(text, &diag);
  check("deep_parens_rejected",
        !s && strstr(diag, "ERROR: nesting too deep") != NULL);
  free(diag);
  strcpy(text, "BEGIN { @x = ");
  len = strlen(text);
  memset(text + len, '!', n);
  strcpy(text + len + n, "1; }");
  s = parse_text(text, &diag);
  check("deep_unary_rejected", !s);
  free(diag);
  /* A long else-if chain is flat, not nested, and must parse. */
  strcpy(text, "BEGIN { if (1) { }");
  len = strlen(text);
  for (int i = 0; i < 5000; i++) {
    strcpy(text + len, " else if (1) { }");
    len += strlen(" else if (1) { }");
  }
  strcpy(text + len, " }");
  s = parse_text(text, &diag);
  check("long_else_if_chain", s != NULL);
  free(diag);
  free(text);
}

/* Every prefix of valid scripts, and random garbage, must parse or fail
 * with a message — never crash or fail silently. */
static void test_no_crash(void) {
  static const char *const scripts[] = {
      "tracepoint:syscalls:sys_exit_read /args->ret > 0/ { @bytes[comm] = "
      "sum(args->ret); }",
      "BEGIN { if ($a == 1) { @x = 1 } else if ($a) { @x = \"\\x4\\101\" } "
      "else { @x = (uint8)(1, 2)[0] ? -1 : ~2; } }",
      "config = { a = 1 } struct x { int y; }; uprobe:/bin/bash:readline/1/"
      "{ unroll(2) { $i++ } while (1) { break } return }",
  };
  int silent = 0;
  for (size_t i = 0; i < sizeof scripts / sizeof scripts[0]; i++) {
    size_t len = strlen(scripts[i]);
    for (size_t cut = 0; cut <= len; cut++) {
      char *text = strndup(scripts[i], cut);
      char *diag = NULL;
      Script *s = parse_text(text, &diag);
      if (!s && strstr(diag, "ERROR") == NULL) silent++;
      free(diag);
      free(text);
    }
  }
  srand(42);
  static const char alphabet[] =
      "BEGIN{}()[]/*+-=<>!~&|^%?:;,.@$\"\\#'`\n\t 0x1_9aZ_\x01\xff";
  for (int iter = 0; iter < 20000; iter++) {
    char text[96];
    int len = rand() % (int)(sizeof text - 1);
    for (int k = 0; k < len; k++)
      text[k] = alphabet[rand() % (int)(sizeof alphabet - 1)];
    text[len] = 0;
    char *diag = NULL;
    Script *s = parse_text(text, &diag);
    if (!s && strstr(diag, "ERROR") == NULL) silent++;
    free(diag);
  }
  check("no_silent_failures", silent == 0);
}

/* `test_parse FILE...` dumps the ASTs of scripts instead of testing. */
static int dump_files(int argc, char **argv) {
  int status = 0;
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "r");
    if (!f) {
      perror(argv[i]);
      return 1;
    }
    char *text = NULL;
    size_t cap = 0;
    getdelim(&text, &cap, 0, f);
    fclose(f);
    Source src = {.name = argv[i], .text = text ? text : ""};
    Diag d;
    diag_init(&d, &src);
    Script *s = parse_script(&src, NULL, &d);
    if (s)
      dump_script(stdout, s);
    else
      status = 1;
  }
  return status;
}

/* ---- the walk (lang/ast.c) ------------------------------------------ */

/* What a walk saw, a letter per node. */
typedef struct Seen {
  char kinds[64];
  int n;
  NodeKind skip, stop;   /* skip the children of / stop at this kind */
} Seen;

static char kind_letter(NodeKind k) {
  switch (k) {
  case N_INT: return 'i';
  case N_STR: return 's';
  case N_BUILTIN: return 'b';
  case N_MAP: return 'm';
  case N_CALL: return 'c';
  case N_UNOP: return 'u';
  case N_EXPR_STMT: return 'e';
  case N_ASSIGN: return 'a';
  case N_IF: return 'f';
  case N_BLOCK: return 'B';
  case N_RETURN: return 'r';
  default: return '?';
  }
}

static AstStep note_kind(Node *n, void *ctx) {
  Seen *seen = ctx;
  if (seen->n < (int)sizeof seen->kinds - 1)
    seen->kinds[seen->n++] = kind_letter(n->kind);
  return n->kind == seen->stop   ? AST_STOP
         : n->kind == seen->skip ? AST_SKIP
                                 : AST_ENTER;
}

static void check_walk(const char *name, Node *n, NodeKind skip,
                       NodeKind stop, bool want_stopped, const char *want) {
  Seen seen = {.skip = skip, .stop = stop};
  bool stopped = ast_walk(n, note_kind, &seen);
  if (stopped == want_stopped && strcmp(seen.kinds, want) == 0) {
    passed++;
  } else {
    printf("FAIL %s: want %s%s, got %s%s\n", name, want,
           want_stopped ? " (stopped)" : "", seen.kinds,
           stopped ? " (stopped)" : "");
    failed++;
  }
}

/* Every node once, each before its children in slot order (a block
 * expression's value, lhs, before its statements), a call's arguments
 * included; a skipped node's children are not seen, and a stop ends the
 * walk. */
static void test_walk(void) {
  char *diag = NULL;
  Script *s = parse_text("BEGIN { printf(\"%d\", { if (pid) { return; } 1 }); "
                         "@x[comm] = -2; }",
                         &diag);
  if (!s) {
    printf("FAIL walk: parse error:\n%s", diag);
    failed++;
    free(diag);
    return;
  }
  Node *body = s->probes->body;
  NodeKind none = (NodeKind)-1;
  check_walk("walk_all", body, none, none, false, "BecsBifbBrambui");
  check_walk("walk_skip", body, N_CALL, none, false, "Becambui");
  check_walk("walk_stop", body, none, N_RETURN, true, "BecsBifbBr");
  check_walk("walk_from_list", body->body->next, none, none, false,
             "ambui");
  free(diag);
}

int main(int argc, char **argv) {
  if (argc > 1) return dump_files(argc, argv);
  test_issue_one_liners();
  test_attach_points();
  test_expressions();
  test_statements();
  test_spans();
  test_errors();
  test_deep_nesting();
  test_no_crash();
  test_walk();
  printf("test_parse: %d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
