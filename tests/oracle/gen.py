#!/usr/bin/env python3
"""Random scripts that loupe's checker should accept, for the verifier
oracle (tests/oracle/run.sh): every one must load into the kernel.

    gen.py SEED [COUNT [DIR]]

prints the script of SEED, or with COUNT writes COUNT scripts (seeds SEED,
SEED+1, ...) as DIR/SEED.bt. Each script starts with `BEGIN { exit(); }`,
so loupe loads every program, runs BEGIN, and attaches nothing else.

The generator is typed: it knows the type of every variable and map it has
made (an integer, a string, a tuple or record of a fixed layout, or an
aggregation), so what it writes is well typed; and it writes only what the
README's "What works" lists. Loops are bounded so the verifier can prove
they end.
"""
import random
import sys

# Probes and what their context offers: integer fields, string
# expressions, pointer reads.
PROBES = [
    ("tracepoint:syscalls:sys_enter_openat",
     ["args->dfd", "args->flags", "args->mode", "(int64)args->filename"],
     ["str(args->filename)", "str(args->filename, 16)"]),
    ("tracepoint:syscalls:sys_enter_read",
     ["args->fd", "args->count", "(uint64)args->buf"], []),
    ("tracepoint:sched:sched_switch",
     ["args->prev_pid", "args->next_pid", "args->prev_prio",
      "args->prev_state", "args->next_prio"],
     ["args->prev_comm", "args->next_comm"]),
    ("tracepoint:sched:sched_wakeup",
     ["args->pid", "args->prio", "args->target_cpu"], ["args->comm"]),
    ("tracepoint:raw_syscalls:sys_enter", ["args->id"], []),
    ("tracepoint:sched:sched_process_exec",
     ["args->pid", "args->old_pid"], ["str(args->filename)"]),
    ("interval:s:1", [], []),
    ("interval:ms:100", [], []),
    ("uprobe:/bin/bash:readline", ["arg0", "(int32)arg1"], ["str(arg0)"]),
    ("uretprobe:/bin/bash:readline", ["retval"], ["str(retval)"]),
    ("uprobe:/bin/bash:execute_command", ["arg0", "*(uint32 *)arg0"], []),
]

INT_BUILTINS = ["pid", "tid", "uid", "gid", "cpu", "nsecs", "elapsed",
                "rand", "cgroup", "jiffies", "numaid", "ncpus",
                "curtask->pid", "curtask->tgid", "curtask->prio",
                "curtask->real_parent->pid", "curtask->mm->map_count"]
STR_BUILTINS = ["comm", "probe", "curtask->comm", "pcomm"]
INT_TYPES = ["uint8", "int8", "uint16", "int16", "uint32", "int32",
             "uint64", "int64"]
AGGS = ["count", "sum", "avg", "min", "max", "stats", "hist", "lhist"]
BINOPS = ["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>",
          "==", "!=", "<", "<=", ">", ">=", "&&", "||"]
WORDS = ["a", "bash", "sshd", "x", "loupe", "systemd", "", "abcdefgh",
         "tab\\tnl", "long string of some length"]


class Var:
    def __init__(self, name, ty):
        self.name, self.ty = name, ty
        self.fixed = False


class Map:
    """ty: 'int', 'str', ('tuple', layout) or ('agg', fn); key: None, 'int',
    'str', ('multi', n) or ('tuple', layout)."""

    def __init__(self, name, ty, key):
        self.name, self.ty, self.key = name, ty, key


class Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.maps = []
        self.nvar = 0
        self.scopes = []
        self.depth = 0        # statement nesting
        self.loops = 0        # enclosing loops (break / continue allowed)
        self.unrolls = 0      # enclosing unroll blocks
        self.in_map_loop = False
        self.probe = None
        self.max_strlen = 64

    # ---- helpers -------------------------------------------------------
    def chance(self, p):
        return self.r.random() < p

    def pick(self, seq):
        return self.r.choice(seq)

    def fresh(self, prefix="v"):
        self.nvar += 1
        return "$%s%d" % (prefix, self.nvar)

    def visible(self, pred):
        return [v for s in self.scopes for v in s if pred(v.ty)]

    def declare(self, name, ty, fixed=False):
        v = Var(name, ty)
        v.fixed = fixed     # a loop's counter: never assigned
        self.scopes[-1].append(v)

    def tuple_layout(self, n=None):
        n = n or self.r.randint(2, 4)
        return tuple(self.pick(["int", "int", "str"]) for _ in range(n))

    def record_layout(self):
        names = ["a", "b", "c", "d"][: self.r.randint(1, 4)]
        return tuple((nm, self.pick(["int", "str"])) for nm in names)

    # ---- expressions ---------------------------------------------------
    def expr(self, ty, d=0):
        if ty == "int":
            return self.int_expr(d)
        if ty == "str":
            return self.str_expr(d)
        if ty[0] == "tuple":
            return "(" + ", ".join(self.expr(t, d + 1) for t in ty[1]) + ")"
        if ty[0] == "record":
            return "(" + ", ".join("%s=%s" % (nm, self.expr(t, d + 1))
                                   for nm, t in ty[1]) + ")"
        raise ValueError(ty)

    def int_leaf(self):
        ints = self.visible(lambda t: t == "int")
        k = self.r.randint(0, 9)
        if k <= 2:
            return str(self.pick([0, 1, 2, 3, 7, 10, 255, 4096, -1, -100,
                                  0x7fffffff, 1 << 40, 123456789]))
        if k == 3 and ints:
            return self.pick(ints).name
        if k == 4 and self.probe[1] and not self.in_map_loop:
            return self.pick(self.probe[1])
        if k == 5:
            return self.pick(INT_BUILTINS)
        if k == 6:
            m = self.some_map(lambda m: m.ty == "int")
            if m:
                return self.map_ref(m, 2)
        if k == 7:
            tv = self.visible(lambda t: t != "int" and t != "str"
                              and "int" in self.fields(t))
            if tv:
                v = self.pick(tv)
                return self.field_of(v.name, v.ty, "int")
        if k == 8:
            sv = self.visible(lambda t: t == "str")
            if sv:
                # a constant index must be inside the string's buffer
                return "%s[0]" % self.pick(sv).name
        return ints and self.pick(ints).name or str(self.r.randint(0, 99))

    def fields(self, ty):
        if ty[0] == "tuple":
            return list(ty[1])
        return [t for _, t in ty[1]]

    def field_of(self, name, ty, want):
        if ty[0] == "tuple":
            idx = [i for i, t in enumerate(ty[1]) if t == want]
            return "%s.%d" % (name, self.pick(idx))
        nms = [nm for nm, t in ty[1] if t == want]
        return "%s.%s" % (name, self.pick(nms))

    def int_expr(self, d=0):
        if d > 4 or self.chance(0.3):
            return self.int_leaf()
        k = self.r.randint(0, 11)
        if k <= 3:
            op = self.pick(BINOPS)
            return "(%s %s %s)" % (self.int_expr(d + 1), op,
                                   self.int_expr(d + 1))
        if k == 4:
            return "%s(%s)" % (self.pick(["-", "~", "!"]), self.int_expr(d + 1))
        if k == 5:
            return "(%s ? %s : %s)" % (self.cond(d + 1), self.int_expr(d + 1),
                                       self.int_expr(d + 1))
        if k == 6:
            return "(%s)%s" % (self.pick(INT_TYPES), self.int_expr(d + 1))
        if k == 7:
            a, b = self.str_expr(d + 1), self.str_expr(d + 1)
            forms = ["(%s == %s)", "(%s != %s)", "strcontains(%s, %s)"]
            return self.pick(forms) % (a, b)
        if k == 8:
            return "strncmp(%s, %s, %d)" % (self.str_expr(d + 1),
                                            self.str_expr(d + 1),
                                            self.r.randint(0, 20))
        if k == 9:
            return "strlen(%s)" % self.str_expr(d + 1)
        if k == 10:
            m = self.some_map(lambda m: m.key in ("int", "str"))
            if m:
                return "has_key(%s, %s)" % (m.name, self.key_expr(m, d + 1))
        if k == 11:   # len() wants a map with keys
            m = self.some_map(lambda m: m.key is not None)
            if m:
                return "len(%s)" % m.name
        return self.int_leaf()

    def cond(self, d=0):
        if self.chance(0.5):
            return "(%s %s %s)" % (self.int_expr(d + 1),
                                   self.pick(["<", ">", "==", "!=", "<="]),
                                   self.int_expr(d + 1))
        return self.int_expr(d + 1)

    def str_expr(self, d=0):
        k = self.r.randint(0, 7)
        strs = self.visible(lambda t: t == "str")
        if k == 0:
            return '"%s"' % self.pick([w for w in WORDS
                                      if len(w) < self.max_strlen])
        if k == 1 and strs:
            return self.pick(strs).name
        if k == 2 and self.probe[2] and not self.in_map_loop:
            return self.pick(self.probe[2])
        if k == 3:
            m = self.some_map(lambda m: m.ty == "str")
            if m:
                return self.map_ref(m, d + 1)
        if k == 4 and d < 4:
            return "(%s ? %s : %s)" % (self.cond(d + 1), self.str_expr(d + 1),
                                       self.str_expr(d + 1))
        if k == 5:
            tv = self.visible(lambda t: t != "int" and t != "str"
                              and "str" in self.fields(t))
            if tv:
                v = self.pick(tv)
                return self.field_of(v.name, v.ty, "str")
        if k == 6:
            return "str(%s)" % self.pick(strs).name if strs else "comm"
        return self.pick(STR_BUILTINS)

    # ---- maps ----------------------------------------------------------
    def some_map(self, pred):
        ms = [m for m in self.maps if pred(m)]
        return ms and self.pick(ms)

    def new_map(self, ty=None):
        name = "@m%d" % len(self.maps)
        if ty is None:
            k = self.r.randint(0, 5)
            ty = ["int", "int", "str", ("tuple", self.tuple_layout()),
                  ("record", self.record_layout()),
                  ("agg", self.pick(AGGS))][k]
            if ty == ("agg", "hist") and self.chance(0.3):   # bits per map
                ty = ("agg", "hist, %d" % self.r.randint(0, 5))
            if ty == ("agg", "lhist"):   # bounds fixed per map
                lo = self.r.randint(-50, 100)
                ty = ("agg", "lhist %d, %d, %d" % (
                    lo, lo + self.r.randint(10, 1000), self.r.randint(1, 10)))
        key = self.pick([None, "int", "int", "str", ("multi", 2),
                         ("tuple", self.tuple_layout(2))])
        return Map(name, ty, key)

    def key_expr(self, m, d=0):
        if m.key == "int":
            return self.int_expr(d + 2)
        if m.key == "str":
            return self.str_expr(d + 2)
        if m.key[0] == "multi":
            return "%s, %s" % (self.int_expr(d + 2), self.str_expr(d + 2))
        return self.expr(m.key, d + 2)

    def map_ref(self, m, d=0):
        if m.key is None:
            return m.name
        return "%s[%s]" % (m.name, self.key_expr(m, d))

    def agg_call(self, fn, d=0):
        v = self.int_expr(d + 2)
        if fn == "count":
            return "count()"
        if fn.startswith("hist"):
            return "hist(%s%s)" % (v, fn[4:])
        if fn.startswith("lhist"):
            return "lhist(%s, %s)" % (v, fn[6:])
        return "%s(%s)" % (fn, v)

    def map_stmt(self):
        m = self.pick(self.maps) if self.maps and self.chance(0.7) \
            else self.new_map()
        ref = self.map_ref(m)
        if m.ty == "int":
            s = self.pick(["%s = %s;", "%s += %s;", "%s -= %s;"]) % (
                ref, self.int_expr()) if self.chance(0.7) else \
                self.pick(["%s++;", "++%s;", "%s--;"]) % ref
        elif m.ty[0] == "agg":
            s = "%s = %s;" % (ref, self.agg_call(m.ty[1]))
        else:
            s = "%s = %s;" % (ref, self.expr(m.ty))
        if m not in self.maps:
            self.maps.append(m)
        return s

    # ---- statements ----------------------------------------------------
    def block(self, n=None, extra=()):
        self.scopes.append([])
        self.depth += 1
        stmts = list(extra)
        for _ in range(n if n is not None else self.r.randint(1, 4)):
            stmts.append(self.stmt())
        self.depth -= 1
        self.scopes.pop()
        return stmts

    def fmt_block(self, stmts, ind):
        pad = "  " * ind
        return "{\n" + "".join(pad + "  " + s + "\n" for s in stmts) + \
            pad + "}"

    def stmt(self):
        deep = self.depth >= 4
        k = self.r.randint(0, 21 if not deep else 11)
        if k <= 2:
            return self.assign_stmt()
        if k <= 5:
            return self.map_stmt()
        if k <= 7:
            return self.printf_stmt()
        if k == 8:
            return self.print_stmt()
        if k == 9:
            m = self.some_map(lambda m: m.key is not None)
            if m:
                form = "delete(%s, %s);" if m.key in ("int", "str") and \
                    self.chance(0.5) else "delete(%s[%s]);"
                return form % (m.name, self.key_expr(m))
            return self.assign_stmt()
        if k == 10 and self.loops:
            return "if (%s) { %s }" % (self.cond(),
                                       self.pick(["break;", "continue;"]))
        if k == 11:
            return "_ = %s;" % self.int_expr()
        if k <= 14:
            return self.if_stmt()
        # loops nest two deep at most: deeper ones make programs the
        # verifier gives up on (a million instructions walked), which says
        # nothing about the code generator
        if 15 <= k <= 18 and self.loops + self.unrolls >= 2:
            return self.if_stmt()
        if k == 15:
            return self.while_stmt()
        if k == 16:
            return self.unroll_stmt()
        if k == 17:
            return self.for_range_stmt()
        if k == 18:
            return self.for_map_stmt()
        if k == 19:
            return self.let_stmt()
        return self.assign_stmt()

    def assign_stmt(self):
        old = [v for v in self.visible(lambda t: True) if not v.fixed]
        if old and self.chance(0.4):
            v = self.pick(old)
            if v.ty == "int" and self.chance(0.4):
                return self.pick(["%s += %s;", "%s *= %s;", "%s ^= %s;",
                                  "%s |= %s;"]) % (v.name, self.int_expr())
            return "%s = %s;" % (v.name, self.expr(v.ty))
        ty = self.pick(["int", "int", "int", "str",
                        ("tuple", self.tuple_layout()),
                        ("record", self.record_layout())])
        name = self.fresh()
        e = self.expr(ty)
        self.declare(name, ty)
        return "%s = %s;" % (name, e)

    def let_stmt(self):
        name = self.fresh("l")
        if self.chance(0.5):
            t = self.pick(INT_TYPES)
            s = "let %s: %s = %s;" % (name, t, self.int_expr())
        else:
            s = "let %s = %s;" % (name, self.int_expr())
        self.declare(name, "int")
        return s

    def printf_stmt(self):
        args, fmt = [], []
        for _ in range(self.r.randint(0, 7)):
            if self.chance(0.65):
                fmt.append(self.pick(["%d", "%u", "%x", "%ld", "%lu", "%5d"]))
                args.append(self.int_expr(1))
            else:
                fmt.append(self.pick(["%s", "%-8s"]))
                args.append(self.str_expr(1))
        return "printf(\"%s\\n\"%s);" % (" ".join(fmt),
                                       "".join(", " + a for a in args))

    def print_stmt(self):
        vs = self.visible(lambda t: True)
        if vs and self.chance(0.5):
            return "print(%s);" % self.pick(vs).name
        if self.maps and self.chance(0.6):
            return "print(%s);" % self.pick(self.maps).name
        return "print(%s);" % self.int_expr()

    def if_stmt(self):
        s = "if (%s) %s" % (self.cond(), self.fmt_block(self.block(), 0))
        if self.chance(0.4):
            s += " else " + self.fmt_block(self.block(), 0)
        return s.replace("\n", " ")

    def loop_body(self, n=None, extra=()):
        self.loops += 1
        body = self.block(n, extra)
        self.loops -= 1
        return body

    def while_stmt(self):
        i = self.fresh("i")
        self.declare(i, "int", True)
        bound = self.r.randint(1, 8)
        # the counter moves first so that `continue` cannot skip it
        body = self.loop_body(self.r.randint(1, 3), ["%s++;" % i])
        return ("%s = 0; while (%s < %d) %s" % (
            i, i, bound, self.fmt_block(body, 0))).replace("\n", " ")

    def unroll_stmt(self):
        self.unrolls += 1
        body = self.block(self.r.randint(1, 2))
        self.unrolls -= 1
        return ("unroll(%d) %s" % (self.r.randint(1, 6),
                                   self.fmt_block(body, 0))).replace("\n", " ")

    def for_range_stmt(self):
        i = self.fresh("r")
        lo = self.pick(["0", "1", str(self.r.randint(0, 5))])
        hi = self.pick([str(self.r.randint(0, 10)), "(%s %% 8)" %
                        self.int_leaf()])
        self.scopes.append([Var(i, "int")])
        # bounds known only at run time: the body is a bpf_loop callback,
        # which cannot read the probe's context
        saved = self.in_map_loop
        self.in_map_loop = saved or "%" in hi
        body = self.loop_body(self.r.randint(1, 3))
        self.in_map_loop = saved
        self.scopes.pop()
        return ("for (%s : %s..%s) %s" % (i, lo, hi, self.fmt_block(body, 0))
                ).replace("\n", " ")

    def for_map_stmt(self):
        m = self.some_map(lambda m: m.key is not None and m.ty[0] != "agg"
                          and m.key[0] != "multi")
        if not m or self.in_map_loop:
            return self.for_range_stmt()
        kv = self.fresh("kv")
        kty = m.key if m.key in ("int", "str") else m.key
        self.scopes.append([Var(kv, ("tuple", (kty, m.ty)))])
        self.in_map_loop = True
        body = self.loop_body(self.r.randint(1, 3))
        self.in_map_loop = False
        self.scopes.pop()
        return ("for (%s : %s) %s" % (kv, m.name, self.fmt_block(body, 0))
                ).replace("\n", " ")

    # ---- whole script --------------------------------------------------
    def probe_block(self):
        self.probe = self.pick(PROBES)
        self.scopes = [[]]
        self.nvar = 0
        head = self.probe[0]
        if self.chance(0.25):
            head += " /%s/" % self.cond()
        body = [self.stmt() for _ in range(self.r.randint(1, 8))]
        return head + " " + self.fmt_block(body, 0)

    def script(self):
        out = []
        if self.chance(0.3):
            self.max_strlen = self.pick([16, 32, 100, 200, 256, 512, 1024,
                                         2048])
            out.append("config = { max_strlen = %d }" % self.max_strlen)
        out.append("BEGIN { exit(); }")
        for _ in range(self.r.randint(1, 4)):
            out.append(self.probe_block())
        if self.chance(0.2):
            self.probe, self.scopes = ("END", [], []), [[]]
            out.append("END " + self.fmt_block(
                [self.printf_stmt() for _ in range(2)], 0))
        return "\n".join(out) + "\n"


def main():
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    if len(sys.argv) <= 2:
        sys.stdout.write(Gen(seed).script())
        return
    count, outdir = int(sys.argv[2]), sys.argv[3]
    for s in range(seed, seed + count):
        with open("%s/%d.bt" % (outdir, s), "w") as f:
            f.write(Gen(s).script())


if __name__ == "__main__":
    main()
