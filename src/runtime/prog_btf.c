/* prog_btf: the BTF a script's programs are loaded with.
 *
 * One BTF object serves all the programs of a script. It names each
 * program's functions (the probe's code, then the subprograms for events
 * and the callbacks of for loops over maps; the kernel refuses callbacks
 * without them) and holds the script's lines, so that each instruction
 * carries the line it was generated from: `bpftool prog dump xlated id N
 * linum` then shows the script next to the code, and the verifier quotes
 * the line in its log. */
#include "runtime/prog_btf.h"

#include <ctype.h>
#include <linux/btf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) {
  return *(const int *)a - *(const int *)b;
}

/* The first instruction of each function of p, in order; returns how many
 * (at least 1). */
static int func_starts(const BpfProg *p, int **out) {
  int *starts = malloc(sizeof(int) * (p->ninsns + 1));
  int n = 0;
  starts[n++] = 0;
  for (int i = 0; i < p->ninsns; i++) {
    const struct bpf_insn *in = &p->insns[i];
    bool call = in->code == (BPF_JMP | BPF_CALL) &&
                in->src_reg == BPF_PSEUDO_CALL;
    bool func = in->code == (BPF_LD | BPF_DW | BPF_IMM) &&
                in->src_reg == BPF_PSEUDO_FUNC;
    if (call || func) starts[n++] = i + in->imm + 1;
  }
  qsort(starts, n, sizeof(int), cmp_int);
  int uniq = 0;
  for (int i = 0; i < n; i++)
    if (uniq == 0 || starts[uniq - 1] != starts[i]) starts[uniq++] = starts[i];
  *out = starts;
  return uniq;
}

/* The script's lines as BTF strings, each added when first asked for:
 * where each line starts in the text (found in one pass) and its string's
 * offset once added. */
typedef struct Lines {
  const char **start;   /* [line - 1] */
  int *off;             /* [line - 1]; 0: not added yet */
  int n;
  int file_off;         /* the script's name */
} Lines;

static void lines_init(Lines *ls, const Source *src) {
  ls->n = 1;
  for (const char *s = src->text; (s = strchr(s, '\n')); s++) ls->n++;
  ls->start = malloc(sizeof *ls->start * (size_t)ls->n);
  ls->off = calloc((size_t)ls->n, sizeof *ls->off);
  int i = 0;
  ls->start[i++] = src->text;
  for (const char *s = src->text; (s = strchr(s, '\n')); s++)
    ls->start[i++] = s + 1;
}

static void lines_free(Lines *ls) {
  free(ls->start);
  free(ls->off);
}

/* The string offset of line `line` (1-based), without its newline. */
static int line_string(struct btf *btf, Lines *ls, int line) {
  if (line < 1 || line > ls->n) return btf__add_str(btf, "");
  if (!ls->off[line - 1]) {
    const char *s = ls->start[line - 1];
    char *text = strndup(s, strcspn(s, "\n"));
    ls->off[line - 1] = btf__add_str(btf, text ? text : "");
    free(text);
  }
  return ls->off[line - 1];
}

static bool is_ld_imm64_tail(const BpfProg *p, int pc) {
  return pc > 0 && p->insns[pc - 1].code == (BPF_LD | BPF_DW | BPF_IMM);
}

/* p's line records: one where each function starts and one wherever the
 * script line changes (instructions without a location stay with the
 * line before). */
static void add_lines(ScriptBtf *sb, ProgBtf *pb, const BpfProg *p,
                      Lines *ls) {
  pb->lines = calloc(p->ninsns, sizeof *pb->lines);
  int f = 0, last = 0;
  for (int pc = 0; pc < p->ninsns; pc++) {
    bool starts_func = f < pb->nfuncs && (int)pb->funcs[f].insn_off == pc;
    if (starts_func) f++;
    int line = p->insn_span[pc].line;
    if (line <= 0) {
      if (!starts_func) continue;
      line = last > 0 ? last : 1;
    }
    if ((line == last && !starts_func) || is_ld_imm64_tail(p, pc)) continue;
    int col = p->insn_span[pc].col > 0 ? p->insn_span[pc].col : 1;
    struct bpf_line_info *li = &pb->lines[pb->nlines++];
    li->insn_off = (uint32_t)pc;
    li->file_name_off = (uint32_t)ls->file_off;
    li->line_off = (uint32_t)line_string(sb->btf, ls, line);
    li->line_col = (uint32_t)line << 10 | (uint32_t)(col < 1024 ? col : 1023);
    last = line;
  }
}

/* The type of subprogram i + 1 of any program: static loupe_fn1, ...,
 * or for the global ones (BpfProg.globals), which take nargs arguments,
 * loupe_gfn1, ... */
static int sub_type(ScriptBtf *sb, int i, int nargs) {
  int **types = nargs ? &sb->global_types[nargs] : &sb->func_types;
  int *n = nargs ? &sb->nglobal_types[nargs] : &sb->nfunc_types;
  while (*n <= i) {
    char name[32];
    int k = *n;
    snprintf(name, sizeof name, nargs ? "loupe_gfn%d" : "loupe_fn%d", k + 1);
    *types = realloc(*types, sizeof(int) * (size_t)(k + 1));
    (*types)[k] = btf__add_func(sb->btf, name,
                                nargs ? BTF_FUNC_GLOBAL : BTF_FUNC_STATIC,
                                nargs ? sb->global_proto[nargs] : sb->proto);
    (*n)++;
  }
  return (*types)[i];
}

/* How many arguments the function starting at `start` takes if it is
 * global; 0 for a static one. */
static int global_args(const BpfProg *p, int start) {
  for (int k = 0; k < p->nglobals; k++)
    if (p->globals[k] == start) return p->global_args[k];
  return 0;
}

void prog_identifier(const BpfProg *p, char *name, size_t size) {
  size_t n = 0;
  for (const char *s = prog_probe_name(p); *s && n + 1 < size; s++)
    name[n++] = isalnum((unsigned char)*s) ? *s : '_';
  name[n] = '\0';
  if (n == 0 || isdigit((unsigned char)name[0]))
    snprintf(name, size, "loupe_main");
}

/* The program's own function, named after its probe (see
 * prog_identifier). */
static int main_type(ScriptBtf *sb, const BpfProg *p) {
  char name[128];
  prog_identifier(p, name, sizeof name);
  return btf__add_func(sb->btf, name, BTF_FUNC_GLOBAL, sb->proto);
}

int script_btf_build(ScriptBtf *sb, const Compiled *c, const Source *src) {
  memset(sb, 0, sizeof *sb);
  sb->progs = calloc(c->nprogs > 0 ? (size_t)c->nprogs : 1, sizeof *sb->progs);
  sb->btf = btf__new_empty();
  if (!sb->progs || !sb->btf) return -1;
  /* int f(void): the verifier gives a program its context whatever the
   * BTF says, and checks no arguments of static subprograms; a `void *`
   * parameter would only add "arg#0 reference type('UNKNOWN ') size
   * cannot be determined" to every verifier log. */
  int int_id = btf__add_int(sb->btf, "int", 4, BTF_INT_SIGNED);
  sb->proto = btf__add_func_proto(sb->btf, int_id);
  int long_id = btf__add_int(sb->btf, "long", 8, BTF_INT_SIGNED);
  for (int n = 1; n <= 2; n++) {
    sb->global_proto[n] = btf__add_func_proto(sb->btf, long_id);
    btf__add_func_param(sb->btf, "x", long_id);
    if (n == 2) btf__add_func_param(sb->btf, "y", long_id);
  }
  bool with_lines = src && src->text;
  Lines ls = {0};
  if (with_lines) {
    lines_init(&ls, src);
    ls.file_off = btf__add_str(sb->btf, src->name ? src->name : "stdin");
  }
  for (int i = 0; i < c->nprogs; i++) {
    const BpfProg *p = &c->progs[i];
    ProgBtf *pb = &sb->progs[i];
    int *starts;
    pb->nfuncs = func_starts(p, &starts);
    pb->funcs = calloc((size_t)pb->nfuncs, sizeof *pb->funcs);
    for (int k = 0; k < pb->nfuncs; k++) {
      pb->funcs[k].insn_off = (uint32_t)starts[k];
      pb->funcs[k].type_id =
          (uint32_t)(k ? sub_type(sb, k - 1, global_args(p, starts[k]))
                       : main_type(sb, p));
    }
    free(starts);
    if (with_lines && p->insn_span) add_lines(sb, pb, p, &ls);
  }
  lines_free(&ls);
  if (btf__load_into_kernel(sb->btf) < 0) return -1;
  sb->loaded = true;
  return 0;
}

void script_btf_free(ScriptBtf *sb, int nprogs) {
  for (int i = 0; sb->progs && i < nprogs; i++) {
    free(sb->progs[i].funcs);
    free(sb->progs[i].lines);
  }
  free(sb->progs);
  free(sb->func_types);
  for (int n = 0; n < 3; n++) free(sb->global_types[n]);
  btf__free(sb->btf);
  memset(sb, 0, sizeof *sb);
}

void script_btf_opts(const ScriptBtf *sb, int prog,
                     struct bpf_prog_load_opts *o) {
  if (!sb || !sb->loaded) return;
  const ProgBtf *pb = &sb->progs[prog];
  o->prog_btf_fd = btf__fd(sb->btf);
  o->func_info = pb->funcs;
  o->func_info_cnt = (uint32_t)pb->nfuncs;
  o->func_info_rec_size = sizeof *pb->funcs;
  if (pb->nlines) {
    o->line_info = pb->lines;
    o->line_info_cnt = (uint32_t)pb->nlines;
    o->line_info_rec_size = sizeof *pb->lines;
  }
}
