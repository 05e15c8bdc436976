/* net: network addresses — ntop() of an IPv4 or IPv6 address, pton() of
 * an address written in the script, macaddr() of six bytes. ntop and
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

const Builtin builtins_net[] = {
    {"socket_cookie", BI_CALL, 1, 1, true, check_socket_cookie,
     emit_socket_cookie, NULL, NULL, NULL, 0, NULL},
    {"ntop", BI_CALL, 1, 2, true, check_ntop, NULL, gen_ntop, NULL, NULL, 0,
     NULL},
    {"pton", BI_CALL, 1, 1, true, check_pton, NULL, gen_pton, NULL, NULL, 0,
     NULL},
    {"macaddr", BI_CALL, 1, 1, true, check_macaddr, NULL, gen_macaddr, NULL,
     NULL, 0, NULL},
    {0},
};
