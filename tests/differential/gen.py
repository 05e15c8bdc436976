#!/usr/bin/env python3
"""Seeded generator of deterministic bpftrace scripts for differential tests.

Every script is a single probe that computes known values and prints them
(printf, print, maps printed at exit): BEGIN, which ends with exit(), or
(KIND probe) a tracepoint whose fields of several widths and signs are
among its operands, with the workload that fires it once and ends the run
(see PROBE_HEADER). The scripts
stay inside the language Debian's bpftrace 0.17 accepts, so that loupe and
0.17 can be run side by side (tests/differential/run.sh).

  gen.py DIR N [SEED [KIND]]  write N scripts DIR/s0000.bt ... (KIND probe:
                              DIR/p0000.bt ...) from SEED (default 1)
  gen.py - 1 SEED [KIND]      print one script to stdout

The same seed always gives the same scripts. Each script draws its
statements from one or two categories (see CATEGORIES), so that a difference
points at one area of the language. The generator stays away from the
corners where loupe and 0.17 are known to differ (see KNOWN.md; each has a
corpus/corner_*.bt script of its own) and from undefined results (division
by zero, shifts by 64 or more, arithmetic mixing signed and unsigned).
"""
import os
import random
import sys

INT_TYPES = ["int8", "int16", "int32", "int64",
             "uint8", "uint16", "uint32", "uint64"]
BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64,
        "uint8": 8, "uint16": 16, "uint32": 32, "uint64": 64}

# Values near the edges of each width, where wrapping and sign extension
# show, and a few ordinary ones.
EDGES = [0, 1, 2, 3, 7, 9, 10, 100, 127, 128, 200, 255, 256, 1000, 32767,
         32768, 65535, 65536, 100000, 2147483647, 2147483648, 4294967295,
         4294967296, 1 << 40, 9223372036854775807]
WORDS = ["", "a", "ab", "abc", "hello", "hello world", "loupe", "bpf",
         "Zz9", "tab\tin", "x-y_z", "longer string here", "abcdefghijklmnop"]


# Probe scripts run on the refused lock of tests/runtime/ctx_width_workload.py
# (run as ./ctxwidth, a child of the -c command), whose fields hold known
# values: ret -11, type 1 (F_WRLCK), fl_start 1000, fl_end 1009, and
# flags as this kernel sets them; each is an operand of its type.
PROBE_HEADER = """\
// SETUP: ln -s "$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')" ctxwidth
// CMD: ./ctxwidth $ROOT/tests/runtime/ctx_width_workload.py lockfile port
"""
PROBE = ('tracepoint:filelock:fcntl_setlk\n'
         '/comm == "ctxwidth" && (uint32)curtask->real_parent->tgid == cpid'
         ' && args->ret != 0/')
FIELDS = [("args->ret", "int32"), ("args->type", "uint8"),
          ("args->fl_start", "int64"), ("args->fl_end", "int64"),
          ("args->flags", "uint32")]


class Gen:
    def __init__(self, rnd, fields=()):
        self.r = rnd
        self.fields = list(fields)   # (text, type) of the probe's fields
        self.lines = []
        self.nvars = 0
        self.ivars = []     # (name, type) of integer variables
        self.svars = []     # names of string variables

    # --- small pieces -------------------------------------------------
    def lit(self, small=False):
        r = self.r
        if small or r.random() < 0.3:
            v = r.randint(0, 300)
        else:
            v = r.choice(EDGES)
        return -v if v and r.random() < 0.25 else v

    def lit_text(self, v):
        # A negative literal is written as unary minus of a positive one.
        return "(%d)" % v if v < 0 else str(v)

    def new_ivar(self, t=None):
        t = t or self.r.choice(INT_TYPES)
        name = "$v%d" % self.nvars
        self.nvars += 1
        self.lines.append("%s = (%s)%s;" % (name, t, self.lit_text(self.lit())))
        self.ivars.append((name, t))
        return name, t

    def new_svar(self):
        name = "$s%d" % self.nvars
        self.nvars += 1
        self.lines.append('%s = "%s";' % (name, self.esc(self.r.choice(WORDS))))
        self.svars.append(name)
        return name

    def esc(self, s):
        return s.replace("\\", "\\\\").replace("\t", "\\t").replace('"', '\\"')

    def ivar(self):
        if not self.ivars or self.r.random() < 0.3:
            return self.new_ivar()
        return self.r.choice(self.ivars)

    def svar(self):
        if not self.svars or self.r.random() < 0.3:
            return self.new_svar()
        return self.r.choice(self.svars)

    # Integer expressions are (text, type). Literals are int64, as in 0.17;
    # the result of a binary operator is 64 bits wide.
    def cast(self, e, t):
        """(t)e. Where t is wider than e and of the other sign, 0.17 extends
        by the sign of t and loupe by the sign of e (KNOWN.md); there e is
        first widened to 64 bits in its own sign, where both agree."""
        text, src = e
        if src.startswith("u") != t.startswith("u") and BITS[t] > BITS[src]:
            text = "(%s)%s" % ("uint64" if src.startswith("u") else "int64", text)
        return "(%s)%s" % (t, text), t

    def atom(self):
        if self.fields and self.r.random() < 0.3:
            return self.r.choice(self.fields)
        r = self.r.random()
        if r < 0.55:
            return self.ivar()
        if r < 0.8:
            return self.lit_text(self.lit()), "int64"
        return self.cast(self.ivar(), self.r.choice(INT_TYPES))

    def same_sign(self, a, b):
        """Mixing signed and unsigned operands is undefined in the docs:
        an unsigned operand next to a signed one is cast to int64."""
        if a[1].startswith("u") != b[1].startswith("u"):
            if a[1].startswith("u"):
                a = self.cast(a, "int64")
            else:
                b = self.cast(b, "int64")
        return a, b

    def iexpr(self, depth=2):
        """An integer expression without division by zero or shift counts
        outside 0..63, the corners where the result is undefined."""
        r = self.r
        if depth == 0 or r.random() < 0.3:
            return self.atom()
        k = r.random()
        if k < 0.15:
            op = r.choice(["-", "~", "!"])
            a = self.iexpr(depth - 1)
            if op != "!" and BITS[a[1]] < 64 and not a[1].startswith("u"):
                # 0.17 computes - and ~ of a narrow signed value in its
                # width and reads the result back unsigned (KNOWN.md)
                a = self.cast(a, "int64")
            # ! is unsigned, of its operand's width; - and ~ keep an
            # unsigned operand's type
            t = "uint%d" % BITS[a[1]] if op == "!" else a[1]
            return "%s(%s)" % (op, a[0]), t
        if k < 0.25:
            e = self.iexpr(depth - 1)
            return self.cast(("(%s)" % e[0], e[1]), r.choice(INT_TYPES))
        op = r.choice(["+", "-", "*", "&", "|", "^", "+", "-", "*",
                       "/", "%", "<<", ">>"])
        a = self.iexpr(depth - 1)
        if op in ("/", "%"):
            # Divisors are non-zero literals.
            b = (str(r.choice([1, 2, 3, 7, 10, 255, 1000, 65536])), "int64")
        elif op in ("<<", ">>"):
            b = (str(r.randint(0, 63)), "int64")
        else:
            b = self.iexpr(depth - 1)
        if op == ">>" and not a[1].startswith("u"):
            # 0.17 shifts negative values right logically at times (KNOWN.md)
            a = self.cast(a, "uint64")
        if op not in ("<<", ">>"):
            a, b = self.same_sign(a, b)
        t = "uint64" if a[1].startswith("u") else "int64"
        return "(%s %s %s)" % (a[0], op, b[0]), t

    def cond(self):
        r = self.r
        k = r.random()
        if k < 0.6:
            return self.compare_of(self.iexpr(1), self.iexpr(1))
        if k < 0.8:
            return "(%s) %s (%s)" % (self.cond_simple(), r.choice(["&&", "||"]),
                                    self.cond_simple())
        return "!(%s)" % self.cond_simple()

    def compare_of(self, a, b):
        a, b = self.same_sign(a, b)
        op = self.r.choice(["==", "!=", "<", "<=", ">", ">="])
        return "%s %s %s" % (a[0], op, b[0])

    def cond_simple(self):
        return self.compare_of(self.atom(), self.atom())

    def printf_ints(self, exprs):
        convs = [self.r.choice(["%d", "%d", "%lld", "%u", "%llu", "%x"])
                 for _ in exprs]
        return 'printf("%s\\n", %s);' % (" ".join(convs), ", ".join(exprs))

    def texts(self, exprs):
        return [e[0] for e in exprs]

    # --- categories ---------------------------------------------------
    # Everything a statement needs is generated before the statement is
    # added: a variable assigned first inside a block would be local to it
    # in loupe (as in today's bpftrace) and global in 0.17.
    def arith(self):
        exprs = [self.iexpr(self.r.randint(1, 3))
                 for _ in range(self.r.randint(1, 3))]
        self.lines.append(self.printf_ints(self.texts(exprs)))

    def compare(self):
        r = self.r
        k = r.random()
        if k < 0.5:
            self.lines.append(self.printf_ints(["(%s)" % self.cond(),
                                                "(%s)" % self.cond()]))
        elif k < 0.8:
            c = self.cond()
            a, b = self.same_sign(self.iexpr(1), self.iexpr(1))
            self.lines.append(self.printf_ints(
                ["(%s) ? %s : %s" % (c, a[0], b[0])]))
        else:
            self.lines.append('printf("%%s\\n", (%s) ? "%s" : "%s");' % (
                self.cond(), self.esc(r.choice(WORDS)), self.esc(r.choice(WORDS))))

    def fmt(self):
        r = self.r
        parts, args = [], []
        for _ in range(r.randint(1, 4)):
            k = r.random()
            w = r.choice(["", "", str(r.randint(1, 12)),
                          "-" + str(r.randint(1, 12)), "0" + str(r.randint(2, 9))])
            if k < 0.5:
                parts.append("%" + w + r.choice(["d", "u", "x", "lld", "llu"]))
                args.append(self.atom()[0])
            elif k < 0.8:
                parts.append("%" + w.lstrip("0") + "s")
                args.append(self.svar() if r.random() < 0.5
                            else '"%s"' % self.esc(r.choice(WORDS)))
            else:
                parts.append("%" + w.lstrip("0") + "c")
                args.append(str(r.randint(33, 126)))
        sep = r.choice([" ", "|", ",", ""])
        self.lines.append('printf("<%s>\\n", %s);' % (sep.join(parts), ", ".join(args)))

    def strings(self):
        r = self.r
        k = r.random()
        a, b = self.svar(), self.svar()
        if k < 0.3:
            self.lines.append('printf("%%d %%d\\n", %s == %s, %s != %s);' % (a, b, a, b))
        elif k < 0.6:
            n = r.randint(0, 8)
            self.lines.append('printf("%%d\\n", strncmp(%s, %s, %d));' % (a, b, n))
        elif k < 0.8:
            needle = r.choice(WORDS[1:6] + ["lo", "o w", "z"])
            self.lines.append('printf("%%d\\n", strcontains(%s, "%s"));' % (a, needle))
        else:
            self.lines.append('printf("[%%s] [%%s]\\n", %s, %s);' % (a, b))

    def maps(self):
        """Each map has one key type and one value type: its name says
        which (e.g. @m2tuple_u16)."""
        r = self.r
        kind = r.choice(["int", "str", "tuple", "none"])
        vt = r.choice(INT_TYPES + ["string"])
        name = "@m%d%s_%s" % (r.randint(0, 3), kind, vt)
        for _ in range(r.randint(1, 5)):
            if kind == "int":
                k = r.choice([(self.lit_text(self.lit(True)), "int64"), self.ivar()])
                key = "[%s]" % self.cast(k, "int64")[0]
            elif kind == "str":
                key = '["%s"]' % self.esc(r.choice(WORDS[1:]))
            elif kind == "tuple":
                key = '[%d, "%s"]' % (r.randint(0, 5), self.esc(r.choice(WORDS[1:6])))
            else:
                key = ""
            if vt == "string":
                value = '"%s"' % self.esc(r.choice(WORDS))
            else:
                value = self.cast(self.iexpr(1), vt)[0]
            self.lines.append("%s%s = %s;" % (name, key, value))
        if r.random() < 0.3:
            self.lines.append("print(%s);" % name)
            if r.random() < 0.5:
                self.lines.append("clear(%s);" % name)

    def aggs(self):
        r = self.r
        fn = r.choice(["count", "sum", "min", "max", "avg", "stats",
                       "hist", "lhist"])
        name = "@%s%d" % (fn, r.randint(0, 2))
        keyed = r.random() < 0.3 and fn not in ("hist", "lhist")
        lo, hi = r.choice([0, 3, 5]), r.choice([10, 50, 100])
        lh = (lo, hi, r.choice([s for s in (1, 5, 10) if s <= hi - lo]))
        for _ in range(r.randint(1, 6)):
            key = "[%d]" % r.randint(0, 3) if keyed else ""
            if fn == "count":
                call = "count()"
            elif fn == "lhist":
                call = "lhist(%s, %d, %d, %d)" % (self.agg_value(), *lh)
            elif fn in ("hist", "min"):
                # 0.17 puts values from 4G up in [2G, 4G) and loses a
                # min() from 4G - 1 up (KNOWN.md)
                call = "%s(%s)" % (fn, self.agg_value(small=True))
            elif fn == "max":
                # 0.17 does not print a max() that saw only negative values
                call = "max(%s)" % self.agg_value(small=True, nonneg=True)
            else:
                call = "%s(%s)" % (fn, self.agg_value())
            self.lines.append("%s%s = %s;" % (name, key, call))

    def agg_value(self, small=False, nonneg=False):
        r = self.r
        if r.random() < 0.5:
            return str(r.choice([0, 1, 2, 3, 5, 8, 15, 16, 17, 100, 1000,
                                 4096, 123456] + ([] if small else [1 << 33])))
        if r.random() < 0.3 and not nonneg:
            return "-%d" % r.randint(1, 40)
        if small:
            return self.cast(self.cast(self.iexpr(1), "uint16"), "int64")[0]
        return "(%s)" % self.cast(self.iexpr(1), "int64")[0]

    def control(self):
        r = self.r
        k = r.random()
        if k < 0.35:
            c = self.cond()
            then = self.printf_ints([self.iexpr(1)[0]])
            els = 'printf("else %%d\\n", %s);' % self.iexpr(1)[0]
            self.lines.append("if (%s) {" % c)
            self.lines.append("  " + then)
            if r.random() < 0.6:
                self.lines.append("} else {")
                self.lines.append("  " + els)
            self.lines.append("}")
        elif k < 0.65:
            n = r.randint(1, 6)
            v, t = self.new_ivar()
            # Cast back: 0.17 drops a wider value assigned to a narrow
            # variable (KNOWN.md).
            self.lines.append("unroll(%d) {" % n)
            self.lines.append("  %s = (%s)(%s + (%s)%s);" % (v, t, v, t, self.lit(True)))
            self.lines.append('  printf("u %%d\\n", %s);' % v)
            self.lines.append("}")
        else:
            i = "$i%d" % self.nvars
            acc = "$acc%d" % self.nvars
            self.nvars += 1
            n = r.randint(0, 20)
            self.lines.append("%s = 0;" % i)
            self.lines.append("%s = %s;" % (acc, self.lit_text(self.lit(True))))
            self.lines.append("while (%s < %d) {" % (i, n))
            self.lines.append("  %s = %s %s %s;" % (acc, acc, r.choice(["+", "*", "^", "-"]),
                                                    self.lit_text(self.lit(True))))
            if r.random() < 0.3:
                self.lines.append("  if (%s == %d) { break; }" % (i, r.randint(0, 20)))
            self.lines.append("  %s++;" % i)
            self.lines.append("}")
            self.lines.append('printf("w %%d %%d\\n", %s, %s);' % (i, acc))


    def updates(self):
        """Compound assignments, ++ and --, on variables and map entries;
        delete(); print() of a tuple and of an integer."""
        r = self.r
        k = r.random()
        if k < 0.4:
            v, t = self.new_ivar("int64" if r.random() < 0.5 else "uint64")
            op = r.choice(["+=", "-=", "*=", "&=", "|=", "^=", "<<=", ">>=",
                           "/=", "%="])
            n = r.randint(1, 40) if op in ("<<=", ">>=", "/=", "%=") else \
                self.lit(True)
            if op == ">>=" and t == "int64":
                # a negative value shifted right: 0.17 at times shifts
                # logically (KNOWN.md), so >>= works on a uint64
                t = "uint64"
                self.lines[-1] = self.lines[-1].replace("(int64)", "(uint64)", 1)
                self.ivars[-1] = (v, t)
            if t == "uint64":
                n = abs(n)
            self.lines.append("%s %s %s;" % (v, op, self.lit_text(n)))
            self.lines.append(self.printf_ints([v]))
        elif k < 0.7:
            name = "@u%d" % r.randint(0, 2)
            key = "[%d]" % r.randint(0, 3)
            # (-= on a map entry is unsigned in 0.17: KNOWN.md)
            stmt = r.choice(["%s%s++;", "%s%s--;", "%s%s += 7;"])
            self.lines.append(stmt % (name, key))
            if r.random() < 0.2:
                self.lines.append("delete(%s%s);" % (name, key))
        else:
            a = self.atom()[0]
            self.lines.append('print((%s, "%s", %d));' % (
                a, self.esc(r.choice(WORDS)), r.randint(-5, 5)))


CATEGORIES = ["arith", "compare", "fmt", "strings", "maps", "aggs", "control",
              "updates"]


def script(seed, probe=False):
    rnd = random.Random(seed)
    g = Gen(rnd, FIELDS if probe else ())
    cats = rnd.sample(CATEGORIES, rnd.randint(1, 2))
    for _ in range(rnd.randint(2, 6)):
        getattr(g, rnd.choice(cats))()
    # a probe script ends with its workload, which fires the probe once:
    # an exit() as the workload ends made 0.17 hang at times
    if not probe:
        g.lines.append("exit();")
    body = "\n".join("  " + line for line in g.lines)
    return "%s// seed %d: %s\n%s {\n%s\n}\n" % (
        PROBE_HEADER if probe else "", seed, " ".join(cats),
        PROBE if probe else "BEGIN", body)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, n = sys.argv[1], int(sys.argv[2])
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    kind = sys.argv[4] if len(sys.argv) > 4 else "begin"
    if kind not in ("begin", "probe"):
        sys.exit("KIND is begin or probe")
    probe = kind == "probe"
    if out == "-":
        sys.stdout.write(script(seed, probe))
        return
    os.makedirs(out, exist_ok=True)
    for i in range(n):
        name = ("p%04d.bt" if probe else "s%04d.bt") % i
        with open(os.path.join(out, name), "w") as f:
            f.write(script(seed * 100003 + i, probe))


if __name__ == "__main__":
    main()
