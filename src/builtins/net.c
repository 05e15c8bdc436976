/* net: network addresses — ntop() of an IPv4 or IPv6 address, pton() of
 * an address written in the script, macaddr() of six bytes — and
 * socket_cookie() and skboutput() of the kernel's sockets and packets. ntop and
 * macaddr copy the address's bytes into a buffer in the kernel; user
 * space turns them into text wherever they are printed (see
 * runtime/print_named.c). */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "builtins/builtin.h"
#include "lang/ctype.h"

/* ntop's value: a TY_BUF whose length word holds the address family
 * (AF_INET or AF_INET6, perhaps only known at run time) and whose data
 * are the address bytes, 4 or 16. macaddr's: length 6, six bytes. */
enum { INET_BYTES = 16, MAC_BYTES = 6 };

/* The bytes an address argument gives: an integer (its 4 or 8 bytes, as
 * they lie in memory), or a char or byte array. 0: not an address. */
static int address_bytes(Type t) {
  if (t.kind == TY_INT) return t.is_pointer ? 0 : 8;
  if (t.kind == TY_STR) return t.size;
  if (t.kind == TY_CVAL || t.kind == TY_RECORD)
    return t.ctype && t.ctype->kind == C_ARRAY ? t.size : 0;
  return 0;
}

/* ntop([af, ] addr) */
static void check_ntop(Checker *c, Node *n) {
  Node *af = n->args->next ? n->args : NULL;
  Node *addr = af ? af->next : n->args;
  if (af) {
    check_expr(c, af);
    if (!want_int(c, n, af)) return;
  }
  check_expr(c, addr);
  if (addr->type.kind == TY_NONE) return;
  int bytes = address_bytes(addr->type);
  if (!bytes || (addr->type.kind != TY_INT && bytes != 4 && bytes != 16)) {
    error_at(c, addr->span, "ntop() expects an integer or a char[4] or "
             "char[16] array (%s provided)", TYPE_NAME(addr->type));
    return;
  }
  n->type.kind = TY_BUF;
  n->type.size = INET_BYTES;
  n->type.named = NAMED_INET;
}

/* macaddr(mac): six bytes of an array, a string or where a pointer points;
 * a 64-bit integer is an address too (macaddr(arg1)), as for str(). */
static void check_macaddr(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  if (a->type.kind == TY_NONE) return;
  bool address = a->type.kind == TY_INT &&
                 (a->type.is_pointer || a->type.size == 8);
  if (!address && (a->type.kind == TY_INT ||
                   address_bytes(a->type) < MAC_BYTES)) {
    error_at(c, a->span, "macaddr() expects an array of at least 6 bytes "
             "or an address of them, e.g. arg0 or (uint8 *)arg0 (%s "
             "provided)", TYPE_NAME(a->type));
    return;
  }
  n->type.kind = TY_BUF;
  n->type.size = MAC_BYTES;
  n->type.named = NAMED_MAC;
}

/* pton("addr"): the address's bytes in network order, found here. */
static const CType pton_byte = {.kind = C_INT, .name = "uint8", .size = 1,
                                .align = 1};
static const CType pton_v4 = {.kind = C_ARRAY, .size = 4, .align = 1,
                              .target = &pton_byte, .nelems = 4};
static const CType pton_v6 = {.kind = C_ARRAY, .size = 16, .align = 1,
                              .target = &pton_byte, .nelems = 16};

static void check_pton(Checker *c, Node *n) {
  Node *a = n->args;
  if (a->kind != N_STR) {
    error_at(c, n->span, "pton() expects a string literal");
    return;
  }
  bool v6 = strchr(a->sval, ':') != NULL;
  uint8_t bytes[16];
  if (inet_pton(v6 ? AF_INET6 : AF_INET, a->sval, bytes) != 1) {
    error_at(c, a->span, "pton() expects a valid IPv%d address: %s",
             v6 ? 6 : 4, a->sval);
    return;
  }
  int len = v6 ? 16 : 4;
  n->sval = malloc(len);
  if (!n->sval) abort();
  memcpy(n->sval, bytes, len);
  n->slen = len;
  n->type.kind = TY_CVAL;
  n->type.size = len;
  n->type.ctype = v6 ? &pton_v6 : &pton_v4;
}

/* ---- code ------------------------------------------------------------ */

/* Reads `max` bytes where integer a points to dst (zeroed up to cap
 * first). */
static void read_address_bytes(Gen *g, Node *a, int dst, int cap, int max) {
  emit_read_at(g, gen_int(g, a), dst, cap, max, read_helper(a->type.as));
}

/* Copies up to `max` bytes of the address argument a to dst (zeroed up to
 * cap first). */
static void gen_address_bytes(Gen *g, Node *a, int dst, int cap, int max) {
  if (a->type.kind == TY_INT && a->type.is_pointer) {
    read_address_bytes(g, a, dst, cap, max);
    return;
  }
  if (a->type.kind == TY_INT) {
    int r = gen_int(g, a);
    emit_zero(g, dst, cap);
    emit(g, I_STX(a->type.size == 4 || max == 4 ? BPF_W : BPF_DW, SCRATCH,
                  r, dst));
    reg_free(g, r);
    return;
  }
  if (in_memory(a) || a->type.kind == TY_RECORD) {
    gen_mem_copy(g, a, dst, cap);   /* reads min(size, cap) bytes */
    return;
  }
  int src = buf_ref(g, a);
  emit_zero(g, dst, cap);
  int n = a->type.size < max ? a->type.size : max;
  for (int i = 0; i < n; i++) {
    emit(g, I_LDX(BPF_B, BPF_REG_2, SCRATCH, src + i));
    emit(g, I_STX(BPF_B, SCRATCH, BPF_REG_2, dst + i));
  }
}

static void gen_ntop(Gen *g, Node *n, int dst, int cap) {
  Node *af = n->args->next ? n->args : NULL;
  Node *addr = af ? af->next : n->args;
  int bytes = address_bytes(addr->type);
  gen_address_bytes(g, addr, dst + 8, cap - 8, bytes < 16 ? bytes : 16);
  if (!af) {
    /* an integer or 4 bytes are IPv4, 16 bytes IPv6 */
    emit(g, I_ST(BPF_DW, SCRATCH, dst, bytes == 16 ? AF_INET6 : AF_INET));
    return;
  }
  int r = gen_int(g, af);
  emit(g, I_STX(BPF_DW, SCRATCH, r, dst));
  reg_free(g, r);
}

static void gen_macaddr(Gen *g, Node *n, int dst, int cap) {
  if (n->args->type.kind == TY_INT)   /* an address, as of a pointer */
    read_address_bytes(g, n->args, dst + 8, cap - 8, MAC_BYTES);
  else
    gen_address_bytes(g, n->args, dst + 8, cap - 8, MAC_BYTES);
  emit(g, I_ST(BPF_DW, SCRATCH, dst, MAC_BYTES));
}

static void gen_pton(Gen *g, Node *n, int dst, int cap) {
  emit_literal(g, n->sval, n->slen, dst, cap);
}

/* socket_cookie(sk): the kernel's cookie of a socket, made on first
 * asking and then stable for its life (bpf_get_socket_cookie on a struct
 * sock pointer, which the kernel allows in fentry and fexit programs). */
static void check_socket_cookie(Checker *c, Node *n) {
  Node *a = n->args;
  check_expr(c, a);
  if (!want_int(c, n, a)) return;
  if (!a->type.is_pointer) {
    error_at(c, a->span, "socket_cookie() takes a pointer to a struct sock "
             "(e.g. args.sk)");
    return;
  }
  if (!want_tracing_probe(c, n, "bpf_get_socket_cookie", true)) return;
  n->type = ty_int(8, false);
}

static int emit_socket_cookie(Gen *g, Node *n) {
  int a = gen_int(g, n->args);
  emit(g, I_MOV64_REG(BPF_REG_1, a));
  reg_free(g, a);
  int r = reg_alloc(g);
  Span saved = g->span;
  g->span = n->span;   /* a refusal of the helper points at the call */
  emit_call(g, BPF_FUNC_get_socket_cookie);
  g->span = saved;
  emit(g, I_MOV64_REG(r, BPF_REG_0));
  return r;
}

/* skboutput("file.pcap", skb, len, offset): the first len bytes of the
 * packet's data, of which user space writes those after the first
 * `offset` to a pcap file (raw IP frames: an offset of 14 leaves out an
 * ethernet header, as bpftrace's reference shows with len skb->len); the value is bpf_skb_output's, 0 or a negative
 * errno. The kernel allows the helper in tracing programs alone. Each
 * call site is an entry of Compiled.skb_outputs (n->ival). */
static void check_skboutput(Checker *c, Node *n) {
  Node *path = n->args, *skb = path->next, *len = skb->next,
       *offset = len->next;
  if (path->kind != N_STR || !*path->sval) {
    error_at(c, path->span, "skboutput() expects a file name as a string "
             "literal");
    return;
  }
  check_expr(c, skb);
  check_expr(c, len);
  if (!want_int(c, n, skb) || !want_int(c, n, len)) return;
  if (!skb->type.is_pointer) {
    error_at(c, skb->span, "skboutput() takes a pointer to a struct "
             "sk_buff (e.g. args.skb)");
    return;
  }
  int64_t off;
  if (!want_const(c, offset, "skboutput", "the offset", 0, 65535, &off) ||
      !want_tracing_probe(c, n, "bpf_skb_output", true))
    return;
  n->type = ty_int(8, true);
  if (c->pass != 2) return;
  Compiled *out = c->out;
  out->skb_outputs = realloc(out->skb_outputs,
                             sizeof *out->skb_outputs *
                                 (size_t)(out->nskb_outputs + 1));
  if (!out->skb_outputs) abort();
  out->skb_outputs[out->nskb_outputs] =
      (struct SkbOutput){path->sval, (int)off};
  n->ival = out->nskb_outputs++;
}

/* bpf_skb_output(skb, the perf event array, this CPU's slot and the bytes
 * to copy (len, in the upper 32 bits), meta, sizeof meta). */
static int emit_skboutput(Gen *g, Node *n) {
  Node *skb = n->args->next, *len = skb->next;
  int meta = stack_alloc(g, (int)sizeof(SkbMeta));
  emit_store_const(g, BPF_REG_10, meta, n->ival);
  emit_call(g, BPF_FUNC_ktime_get_ns);
  emit(g, I_STX(BPF_DW, BPF_REG_10, BPF_REG_0, meta + 8));
  int r = gen_int(g, len);
  emit(g, I_STX(BPF_DW, BPF_REG_10, r, meta + 16));
  reg_free(g, r);
  int p = gen_int(g, skb);
  Held held = hold(g, p);
  emit(g, I_LDX(BPF_DW, BPF_REG_3, BPF_REG_10, meta + 16));
  emit(g, I_ALU64_IMM(BPF_LSH, BPF_REG_3, 32));
  emit_imm64(g, BPF_REG_4, BPF_F_CURRENT_CPU);
  emit(g, I_ALU64_REG(BPF_OR, BPF_REG_3, BPF_REG_4));
  emit_map(g, BPF_REG_2, MAP_ID_SKB_OUTPUT);
  emit(g, I_MOV64_REG(BPF_REG_4, BPF_REG_10));
  emit(g, I_ALU64_IMM(BPF_ADD, BPF_REG_4, meta));
  emit(g, I_MOV64_IMM(BPF_REG_5, (int32_t)sizeof(SkbMeta)));
  int sr = held_reg(g, held, BPF_REG_1);
  if (sr != BPF_REG_1) emit(g, I_MOV64_REG(BPF_REG_1, sr));
  held_free(g, held);
  Span saved = g->span;
  g->span = n->span;   /* a refusal of the helper points at the call */
  emit_call(g, BPF_FUNC_skb_output);
  g->span = saved;
  int ret = reg_alloc(g);
  emit(g, I_MOV64_REG(ret, BPF_REG_0));
  return ret;
}

const Builtin builtins_net[] = {
    {.name = "skboutput", .form = BI_CALL, .min_args = 4, .max_args = 4,
     .has_value = true, .check = check_skboutput, .emit_int = emit_skboutput,
     .effects = true},
    {.name = "socket_cookie", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_socket_cookie,
     .emit_int = emit_socket_cookie},
    {.name = "ntop", .form = BI_CALL, .min_args = 1, .max_args = 2,
     .has_value = true, .check = check_ntop, .emit_buf = gen_ntop},
    {.name = "pton", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_pton, .emit_buf = gen_pton},
    {.name = "macaddr", .form = BI_CALL, .min_args = 1, .max_args = 1,
     .has_value = true, .check = check_macaddr, .emit_buf = gen_macaddr},
    {0},
};
