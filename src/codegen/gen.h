/* gen: the code generator's working state and the helpers its parts
 * share — the files of codegen/ and the builtins' emit hooks. Later stages
 * see codegen.h only. */
#ifndef LOUPE_CODEGEN_GEN_H
#define LOUPE_CODEGEN_GEN_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "codegen/insn.h"
#include "model/program.h"
#include "probes/provider.h"

/* 512 bytes of BPF stack, less the 8 a subprogram's frame takes */
#define STACK_LIMIT 504
#define SLOT_CTX (-8)       /* the program's context pointer */
/* Subprograms: SUB_OUTPUT, SUB_COUNT (len's callback), one SUB_EVENT
 * per EventKind, then one SUB_FULL per map (map id i: SUB_FULL + i), the
 * counter of the updates a full map refused, then one reader per map
 * (sub_read), then one writer per map (sub_write). */
enum { SUB_OUTPUT, SUB_COUNT, SUB_EVENT, SUB_FULL = SUB_EVENT + 16 };
/* The maps codegen itself adds to the script's: the names of the
 * syscall tracepoints of the sys_enter and sys_exit raw programs
 * (syscall_raw.c), and the targets' names programs serving many read by
 * cookie (emit_target_name). */
enum { CODEGEN_MAPS = 3 };
#define SLOT_KEY0 (-16)     /* 0 when used: key 0 of the one-slot arrays */
#define FIRST_TEMP_REG BPF_REG_6
#define LAST_TEMP_REG BPF_REG_8
/* The base register of buffers: r10 when they fit on the stack, else r9,
 * which then holds the scratch area's address for the whole program. */
#define SCRATCH (g->buf_base)

typedef struct Gen {
  Diag *d;
  Compiled *c;
  const Settings *st;  /* the run's (-k, the comm padding probe) */
  BpfProg *p;
  Probe *probe;
  Target *target;      /* the one target, for per-target programs */
  int pid_filter;      /* -p PID for this program (not BEGIN/END); 0: none */
  bool is_end;         /* END's program, which still runs after exit() */
  const Node *unpadded;  /* a string written straight into an output
                          record: user space reads it up to its NUL, so
                          the bytes after need not be zeroed */
  Span span;           /* source of the instructions being emitted */
  bool reg_used[11];
  int **subcalls;      /* calls to patch, per subprogram (SUB_*) */
  int *nsubcalls;
  int nsubs;           /* SUB_FULL + three times nmap_slots */
  int nmap_slots;      /* the maps the per-map arrays and subprograms have
                          room for: the script's, and those codegen adds
                          itself (CODEGEN_MAPS), fixed for the whole run so
                          the subprograms' numbers never move */
  int *full_sites;     /* per map: updates counted in this program */
  bool *full_global;   /* per map: they call SUB_FULL + id (see
                          emit_update) */
  int *read_sites;     /* per map: reads by a global reader possible */
  bool *read_global;   /* per map: they call sub_read (gen_map_int) */
  int *write_sites;    /* per map: writes by a global writer possible */
  bool *write_global;  /* per map: they call sub_write (gen_map_write) */
  int out_sites[SUB_FULL];    /* per output subprogram: the places that
                                 send through it in this program */
  bool out_inline[SUB_FULL];  /* per output subprogram: its one site has
                                 its body instead of a call (emit_send) */
  int name_stride;     /* bytes of each name in the targets' names map
                          (emit_target_name) */
  int buf_base;        /* BPF_REG_10 or BPF_REG_9, see SCRATCH */
  bool too_big;        /* buffers did not fit on the stack */
  int stack_top;       /* bytes in use below the frame pointer */
  int stack_max;
  int scratch_top;     /* bytes in use in the scratch area */
  int scratch_max;
  int scratch_bias;    /* SCRATCH points this far into the area (the big
                          scratch: offsets reach both ways) */
  int main_base;       /* buf_base of the probe's own code */
  struct Loop {        /* the loops around the code being generated */
    int start;         /* where continue goes back to; -1: forward, to
                          where conts are patched */
    int *breaks;       /* jumps to patch to the loop's end */
    int nbreaks;
    int *conts;        /* forward continue jumps (for ranges) */
    int nconts;
    bool callback;     /* a for-over-map body: break and continue return */
  } loops[64];
  int nloops;
  struct Pending {     /* for-over-map bodies, generated after the probe */
    Node *loop;
    void (*emit_fn)(struct Gen *g, Node *n);  /* or a builtin's callback
                          for call `loop`, emitted by emit_fn */
    int at;            /* the LD_IMM64 of the callback's address */
    int scratch_at;    /* scratch in use where the loop is: the body's
                          buffers go after it */
  } *pending;
  int npending;
  int frame;           /* the frame being generated (VarSym.frame) */
  int ctx_slot;        /* in a for-over-map body with a context: the stack
                          slot holding its address; else 0 */
  int sysnr_slot;      /* a raw syscall group's program: the stack slot
                          holding the system call's number */
  bool seq_output;     /* an iterator's program: records go out through
                          the iterator (bpf_seq_write), which the output
                          subprograms reach through the context the call
                          site passes in r5 */
  bool failed;
} Gen;

/* ---- emission ------------------------------------------------------- */

/* Forward jumps waiting for the same target. */
typedef struct Jumps {
  int *at;
  int n;
} Jumps;

/* ---- registers, stack, scratch -------------------------------------- */

/* A value kept in a register, or on the stack if registers ran out. */
typedef struct Held {
  int reg;   /* -1 if spilled */
  int slot;
} Held;

/* ---- maps ----------------------------------------------------------- */

/* What is known of the variables, saved around branches. */
typedef struct VarState {
  bool known;
  int64_t value;
} VarState;

static inline int align8(int n) { return (n + 7) & ~7; }

/* The global subprogram reading map id's integer values (gen_map_int). */
static inline int sub_read(const Gen *g, int id) {
  return SUB_FULL + g->nmap_slots + id;
}

/* The global subprogram writing map id's integer values. */
static inline int sub_write(const Gen *g, int id) {
  return SUB_FULL + 2 * g->nmap_slots + id;
}

/* A plain hash map with one 8-byte integer key and 8-byte integer values:
 * what the global reader and writer of a map handle. */
static inline bool map_is_int_to_int(const Gen *g, const MapSym *m) {
  return m->bpf_type == BPF_MAP_TYPE_HASH && m->nkeys == 1 &&
         m->key_types[0].kind == TY_INT && m->key_size == 8 &&
         m->value_type.kind == TY_INT && m->value_size == 8 &&
         !g->st->helper_errors;
}

/* ---- emit.c ---- */
bool is_buffer(Type t);
int emit(Gen *g, struct bpf_insn i);
void emit_imm64(Gen *g, int reg, int64_t v);
void emit_map(Gen *g, int reg, int id);
void emit_map_value(Gen *g, int reg, int id, int off);
void emit_count_failure(Gen *g, int slot);
/* Adds register reg to slot `slot` of loupe_counts, atomically (loses r1). */
void emit_count_slot(Gen *g, int slot, int reg);
bool emit_lookup_slot0(Gen *g, int map_id);
void emit_scratch_base(Gen *g);
/* reg = base + off */
void emit_addr(Gen *g, int reg, int base, int off);
void emit_scratch(Gen *g, int reg, int off);
/* Calls helper; with -k, a memory read that fails is also reported. */
void emit_call(Gen *g, int helper);
/* Calls the kernel function with vmlinux BTF id btf_id (a kfunc). */
void emit_kfunc_call(Gen *g, int btf_id);
/* -k: sends a report that helper failed at g->span, with r0 as the
 * code it returned; r0 is kept, r1-r5 are not. */
void emit_helper_error(Gen *g, int helper);
int emit_jump(Gen *g, struct bpf_insn j);
void patch_here(Gen *g, int at);
void jumps_add(Jumps *j, int at);
void jumps_patch_here(Gen *g, Jumps *j);
void emit_return(Gen *g);
void fail(Gen *g, Span at, const char *fmt, const char *arg);
int free_regs(Gen *g);
int reg_alloc(Gen *g);
void reg_free(Gen *g, int r);
int stack_alloc(Gen *g, int size);
int scratch_alloc(Gen *g, int size);
Held hold(Gen *g, int reg);
int held_reg(Gen *g, Held h, int tmp);
void held_free(Gen *g, Held h);
void emit_zero(Gen *g, int dst, int cap);
void emit_zero_padding(Gen *g, const Node *n, int dst, int filled, int cap);
void emit_copy_from(Gen *g, int base, int src_off, int dst, int n, int cap);
void emit_copy(Gen *g, int src, int dst, int n, int cap);
void emit_copy_to(Gen *g, int base, int src_off, int dst_base, int dst,
                  int len);
void emit_literal(Gen *g, const char *s, int len, int dst, int cap);
void emit_literal_at(Gen *g, const char *s, int len, int base, int dst,
                     int cap);
void emit_ctx(Gen *g, int reg);
void emit_subcall(Gen *g, int sub);
void emit_output(Gen *g, int rec, int size);
void emit_event(Gen *g, uint32_t kind, uint32_t index);
void emit_event_r1(Gen *g, uint32_t kind);
void emit_subprograms(Gen *g);
int emit_header(Gen *g, int payload, uint32_t kind, uint32_t index);
/* A record's header (kind, index) at base + off. */
void emit_header_at(Gen *g, int base, int off, uint32_t kind,
                    uint32_t index);
/* Records filled in place (emit_reserve's comment): r0 = the record, or
 * the returned jump when the ring is full; emit_submit sends the record
 * at register rec and aims that jump after it. */
int emit_reserve(Gen *g, int size);
void emit_submit(Gen *g, int rec, int lost);

/* A record of `size` bytes (its header included) being filled at base +
 * off: reserved in the ring buffer and filled in place when in_place
 * (base a register: r0, or r6-r8 when the filling makes calls), else
 * built at SCRATCH + off and sent by record_end with emit_output. An
 * iterator's records are always built (they go out through
 * bpf_seq_write). Between record_begin and record_end in place nothing
 * may leave the program, and what the filling evaluates is skipped when
 * the ring is full: see emit_record. */
typedef struct OutRec {
  int base, off;
  int size;
  int lost;        /* in place: emit_reserve's jump */
  bool in_place;
} OutRec;
OutRec record_begin(Gen *g, int size, bool in_place, bool calls);
/* Whether a record that evaluates expressions while it is filled can be
 * in place here: not in an iterator, and with a register to keep it in
 * and one left for the expressions. */
bool record_can_be_in_place(Gen *g);
void record_end(Gen *g, const OutRec *r);
int find_map(Gen *g, const char *name);
/* A new internal array of codegen's own (one of CODEGEN_MAPS), of
 * max_entries string values of value_size bytes, all zero until its
 * init_values are written. */
MapSym *add_codegen_array(Gen *g, const char *name, int value_size,
                          uint32_t max_entries);
/* dst = the n bytes at off of the entry of array map_id whose key (a
 * u32) is in stack slot key_slot, zero-filled up to cap; all zero when
 * there is none. */
void emit_array_string(Gen *g, int map_id, int key_slot, int off, int n,
                       int dst, int cap);
/* `probe` (func false) or `func` of the target that ran a program serving
 * many, into dst: its entry of the names map, found by the cookie attach
 * gave the target (Target.name_slot). */
void emit_target_name(Gen *g, bool func, int dst, int cap);

/* ---- memory.c ---- */
const TpField *target_field(Gen *g, Node *n);
int gen_field_int(Gen *g, Node *n);
int probe_read_str_helper(AddrSpace as);
int unknown_space_str_helper(Gen *g);
void gen_field_str(Gen *g, Node *n, int dst, int cap);
/* A string field straight into memory at register base + off (gen_buf_at). */
void gen_field_str_at(Gen *g, Node *n, int base, int off, int cap);
bool in_memory(Node *n);
int read_helper(AddrSpace as);
/* Zeroes dst up to cap, then reads len bytes at the address in register
 * addr (freed) into it with helper. */
void emit_read_at(Gen *g, int addr, int dst, int cap, int len, int helper);
int gen_addr(Gen *g, Node *n);
int gen_mem_int(Gen *g, Node *n);
void gen_mem_str(Gen *g, Node *n, int dst, int cap);
void gen_mem_copy(Gen *g, Node *n, int dst, int cap);

/* ---- syscall_raw.c ---- */
/* The groups of the probe's syscall tracepoints (probes/syscalls.h) that
 * one raw tracepoint program each can serve, as a bitmask; sets each
 * attach point's raw_syscalls to the groups it has targets of. */
unsigned syscall_raw_plan(Probe *probe);
/* The first attach point with targets of the group. */
AttachPoint *syscall_raw_first_ap(Probe *probe, int group);
/* The raw_syscalls tracepoint a SYSCALL_EVERY_* group's program serves
 * (its `probe`); NULL for the other groups. */
Target *syscall_raw_target(Probe *probe, int group);
void syscall_raw_prologue(Gen *g);
int syscall_raw_field(Gen *g, Node *n);
/* Whether n is args->args[K], K a constant within the array: what the
 * raw program of raw_syscalls:sys_enter reads with syscall_raw_arg. */
bool syscall_raw_is_arg(const Node *n);
int syscall_raw_arg(Gen *g, Node *n);
void syscall_raw_probe_name(Gen *g, int dst, int cap);

/* ---- maps.c ---- */
int gen_key(Gen *g, Node *mapnode);
void emit_lookup(Gen *g, MapSym *m, int key);
#define UPDATE_VALUE_ONE INT_MIN   /* emit_update's val: the constant 1 */
void emit_update(Gen *g, MapSym *m, int key, int val);
void emit_direct_store(Gen *g, const MapSym *m, int reg);
void emit_direct_store_const(Gen *g, const MapSym *m, int64_t v);
int gen_map_int(Gen *g, Node *n);
/* An aggregation at scratch + key in per-CPU map m, combined over every
 * CPU, into a new register. */
int gen_agg_read(Gen *g, MapSym *m, int key);
bool gen_map_write(Gen *g, Node *mapnode, Node *value);
void gen_map_str(Gen *g, Node *n, int dst, int cap);
int gen_map_update_int(Gen *g, Node *mapnode, int op, Node *rhs, int64_t delta, bool want_old);

/* ---- fold.c ---- */
bool operands_signed(Node *n);
bool apply_op(int op, int64_t a, int64_t b, bool is_signed, int64_t *out);
int64_t truncate_to(Type t, int64_t v);
bool fold(Gen *g, Node *n, int64_t *v);
bool fits32(int64_t v);
bool fold_imm(Gen *g, Node *n, int64_t *v);
void emit_store_const(Gen *g, int base, int off, int64_t v);
void gen_store_int(Gen *g, Node *n, int base, int off);
VarState *vars_save(Gen *g);
void vars_restore(Gen *g, const VarState *st);
void vars_merge(Gen *g, const VarState *other);
void vars_forget_assigned(Node *n);

/* ---- expr.c ---- */
int alu_code(int op, bool is_signed);
int jmp_code(int op, bool is_signed);
void emit_op(Gen *g, int op, int dst, int src, int32_t imm, bool is_signed);
void gen_buf(Gen *g, Node *n, int dst, int cap);
bool expr_has_effects(Node *n);
bool gen_buf_at_ok(Gen *g, Node *n);
bool gen_is_ctx_field(Gen *g, Node *n);
void gen_buf_at(Gen *g, Node *n, int base, int off, int cap);
int buf_ref(Gen *g, Node *n);
int gen_str_compare(Gen *g, Node *n);
void gen_tuple(Gen *g, Node *n, int dst, int cap);
void gen_buf_as(Gen *g, Node *n, int dst, Type want);
void convert_tuple(Gen *g, int src, Type from, int dst, Type to);
void gen_tuple_field_buf(Gen *g, Node *n, int dst, int cap);
int gen_logical(Gen *g, Node *n);
int gen_binop(Gen *g, Node *n);
int gen_unop(Gen *g, Node *n);
int inverse_jump(int op, bool is_signed);
void gen_cond(Gen *g, Node *cond, bool when, Jumps *out);
int gen_ternary_int(Gen *g, Node *n);
int gen_incdec(Gen *g, Node *n, bool as_stmt);
void emit_truncate(Gen *g, int r, Type t);
int gen_cast(Gen *g, Node *n);
int gen_call_int(Gen *g, Node *n);
int gen_tuple_field_int(Gen *g, Node *n);
int gen_int(Gen *g, Node *n);

/* ---- stmt.c ---- */
void gen_assign(Gen *g, Node *n);
/* A variable declared with an integer type wraps at its width. */
void gen_wrap_var(Gen *g, VarSym *v);
bool gen_if(Gen *g, Node *n);
void gen_for_range(Gen *g, Node *n);
void gen_for_map(Gen *g, Node *n);
void gen_callback(Gen *g, int pending);
void gen_callbacks(Gen *g);
/* reg = the address of a callback for call n that emit_fn emits after
 * the probe's code (a bpf_loop or for_each callback of a builtin). */
void emit_callback_fn(Gen *g, Node *n, int reg,
                      void (*emit_fn)(Gen *g, Node *n));
void emit_jump_back(Gen *g, int target);
void gen_while(Gen *g, Node *n);
bool gen_stmt(Gen *g, Node *n);
bool gen_block(Gen *g, Node *n);
void place_vars(Gen *g, Probe *p);
/* Records the frame just placed, starting at instruction start, and its
 * scalar variables' slots, for promote_vars. */
void note_var_frame(Gen *g, int start);

/* ---- peephole.c ---- */
bool is_ld_imm64(const struct bpf_insn *in);
bool is_jump(const struct bpf_insn *in);
bool is_pseudo_call(const struct bpf_insn *in);
bool is_pseudo_func(const struct bpf_insn *in);
void mark_reachable(const BpfProg *p, bool *seen, int *stack, int start);
void compact(BpfProg *p, const bool *seen);
void prune_unreachable(BpfProg *p);
/* drop_redundant_loads' knowledge of the registers (peephole.c) */
#define MIRROR_SIZE 33
void mirror_forget(int *m);
void mirror_meet(int *into, const int *from);
bool mirror_step(int *m, const struct bpf_insn *in);
void drop_redundant_loads(BpfProg *p);
/* Removes moves and stack reloads nothing reads before they are overwritten. */
void drop_dead_writes(BpfProg *p);
/* Uses the source of a copy whose only use is the instruction after it. */
void forward_copies(BpfProg *p);
/* Makes a value in the register it is copied to, when the copy is its
 * only use. */
void coalesce_copies(BpfProg *p);
/* Computes a value in the register it is copied to, when the stretch
 * that computes it allows (compute_in_place's comment). */
void compute_in_place(BpfProg *p);
/* Turns `if C goto +2; r0 = 0; exit` into a jump to main's closing return. */
void share_returns(BpfProg *p);
/* Removes the prologue's store of the context if nothing reads it. */
void drop_unread_ctx_save(BpfProg *p);
/* Moves scalar variables from their stack slots into free registers
 * (regvars.c). */
void promote_vars(BpfProg *p);
/* Per instruction, which of r0-r9 (bit r for rr) something reads after
 * it before writing them (a new array of ninsns + 1). */
uint64_t *regs_live_after(const BpfProg *p);
/* Forms the stack address used most (three times or more) once, at entry. */
void hoist_frame_address(BpfProg *p);

#endif
