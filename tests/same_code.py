#!/usr/bin/env python3
"""Proves a restructuring changed no generated code.

    tests/same_code.py OLD_LOUPE NEW_LOUPE [-j JOBS] [-k] [--only WORD]
    tests/same_code.sh REV               (builds REV in /tmp, compares with ./loupe)

Runs `loupe -d` with both binaries over every script the project keeps:
the SCRIPT of each tests/runtime and tests/errors test (with its ARGS),
every loupe invocation of a test's CMD or RUN line (with -e, a script
file, and the flags that change code; -v and -l runs are left out),
bench/lib.sh's scripts, examples/*.bt, the differential corpus, and
Debian's bpftrace tools in /usr/sbin when installed. A test's SETUP runs
first in a directory of its own, so uprobe targets it builds exist.

Each case compares standard output, standard error and exit status
byte for byte. Prints the cases that differ (a unified diff of the
first few) and a summary; exits 1 if any differ. -k keeps the work
directory. Run as root: tracepoint formats need tracefs.
"""
import argparse
import concurrent.futures
import difflib
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TIMEOUT = 60

# loupe flags that take a value, as getopt splits them (for CMD parsing).
VALUE_FLAGS = {"-e", "-o", "--output", "-c", "--cmd", "-p", "--pid", "-B",
               "-f", "-I", "--include", "--flamegraph", "-k", "--mode",
               "--config", "--usdt-file-activation"}
SKIP_FLAGS = {"-v", "-l", "--list", "-lv", "--info", "--help", "-h",
              "--version", "-V", "--dry-run", "--test"}
SHELL_OPS = {"|", "||", "&&", ";", "&", "(", ")", ">", ">>", "<", "2>",
             "2>&1", ">&", "&>", "|&", ";;"}


def parse_test(path):
    """The KEY: value / KEY: ... END_KEY fields of a .test file."""
    fields, key, buf = {}, None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if key is not None:
                if line == "END_" + key:
                    fields[key] = "\n".join(buf)
                    key, buf = None, []
                else:
                    buf.append(line)
                continue
            m = re.match(r"^([A-Z_]+):(.*)$", line)
            if not m:
                continue
            k, v = m.group(1), m.group(2).strip()
            if v == "" and k not in ("ARGS",):
                key = k
            else:
                fields[k] = v
    return fields


def loupe_runs(shell):
    """The argument lists of each `loupe` in a shell command line."""
    try:
        lex = shlex.shlex(shell, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        toks = list(lex)
    except ValueError:
        return []
    runs, i = [], 0
    while i < len(toks):
        t = toks[i]
        if os.path.basename(t) == "loupe" and (i == 0 or toks[i - 1] in SHELL_OPS
                                               or toks[i - 1] in ("exec", "timeout", "setsid", "then", "do")
                                               or re.match(r"^-?[0-9]+[sm]?$", toks[i - 1])
                                               or "=" in toks[i - 1]):
            args, j = [], i + 1
            while j < len(toks) and toks[j] not in SHELL_OPS:
                args.append(toks[j])
                j += 1
            runs.append(args)
            i = j
        else:
            i += 1
    return runs


def code_args(args):
    """The flags of a loupe run that matter to -d, or None to skip it."""
    out, i, has_prog = [], 0, False
    while i < len(args):
        a = args[i]
        if a in SKIP_FLAGS or a.startswith("-l"):
            return None
        if a in ("-d", "-q"):
            i += 1
            if a == "-d" and i < len(args) and args[i] in ("asm", "all", "codegen", "codegen-opt", "dis"):
                i += 1
            continue
        if a in ("-c", "--cmd", "-o", "--output", "--flamegraph"):
            i += 2        # -d neither runs the command nor writes output
            continue
        if a in VALUE_FLAGS:
            out += args[i:i + 2]
            has_prog |= a == "-e"
            i += 2
            continue
        if a.startswith("-"):
            out.append(a)
            i += 1
            continue
        if not has_prog:          # the script file; the rest are its $1 ...
            has_prog = True
            out += args[i:]
            break
        out.append(a)
        i += 1
    return out if has_prog else None


def cases():
    """(name, workdir-setup, [args]) for every script."""
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/runtime/*.test")) +
                       glob.glob(os.path.join(ROOT, "tests/errors/*.test"))):
        rel = os.path.relpath(path, ROOT)
        t = parse_test(path)
        script = t.get("SCRIPT")
        setup = {"script": script or "", "setup": t.get("SETUP")}
        n = 0
        if script is not None and "CMD" not in t:
            try:
                extra = shlex.split(t.get("ARGS", ""))
            except ValueError:
                extra = []
            a = code_args(extra + ["-e", script])
            if a is not None:
                found.append((f"{rel}#{n}", setup, a))
                n += 1
        for key in ("CMD", "RUN"):
            for run in loupe_runs(t.get(key, "")):
                a = code_args(run)
                if a is not None:
                    found.append((f"{rel}#{n}", setup, a))
                    n += 1
    with open(os.path.join(ROOT, "bench/lib.sh")) as f:
        text = f.read()
    m = re.search(r"^SCRIPTS=\(\n(.*?)^\)", text, re.S | re.M)
    if m:
        for n, s in enumerate(shlex.split(m.group(1))):
            found.append((f"bench#{n}", None, ["-e", s]))
    files = sorted(glob.glob(os.path.join(ROOT, "examples/*.bt")) +
                   glob.glob(os.path.join(ROOT, "tests/differential/corpus/*.bt")) +
                   glob.glob("/usr/sbin/*.bt"))
    for path in files:
        found.append((os.path.relpath(path, ROOT) if path.startswith(ROOT) else path,
                      None, [path]))
    return found


def run_one(binary, workdir, args):
    env = dict(os.environ, PATH=os.path.join(workdir, "bin") + ":" + os.environ.get("PATH", ""))
    try:
        p = subprocess.run([binary, "-d"] + args, cwd=workdir, env=env,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


IMM = re.compile(rb"^(.*= )0x([0-9a-f]+)( ll)$")


def same(a, b):
    """Byte for byte, except a 64-bit immediate that moves by less than a
    second: the boot-to-real-time clock offset that nsecs(tai) and
    tseries compile in is read from the clocks at each run."""
    if a[0] != b[0] or a[2] != b[2]:
        return False
    if a[1] == b[1]:
        return True
    la, lb = a[1].split(b"\n"), b[1].split(b"\n")
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb):
        if x == y:
            continue
        mx, my = IMM.match(x), IMM.match(y)
        if not (mx and my and mx.group(1) == my.group(1)
                and abs(int(mx.group(2), 16) - int(my.group(2), 16)) < 10**9):
            return False
    return True


def compare(case, old, new, base):
    name, setup, args = case
    workdir = os.path.join(base, re.sub(r"[^A-Za-z0-9_.#-]", "_", name))
    os.makedirs(os.path.join(workdir, "bin"), exist_ok=True)
    os.symlink(new, os.path.join(workdir, "bin", "loupe"))
    if setup:
        with open(os.path.join(workdir, "script.bt"), "w") as f:
            f.write(setup["script"])
        if setup["setup"] and not os.path.exists(os.path.join(workdir, ".setup-done")):
            subprocess.run(["bash", "-c", setup["setup"]], cwd=workdir,
                           stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=TIMEOUT, env=dict(os.environ, PATH=os.path.join(workdir, "bin") + ":" + os.environ["PATH"]))
    a = run_one(old, workdir, args)
    b = run_one(new, workdir, args)
    return name, args, a, b


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("-k", action="store_true", help="keep the work directory")
    ap.add_argument("--only", help="cases whose name contains WORD")
    o = ap.parse_args()
    old, new = os.path.abspath(o.old), os.path.abspath(o.new)
    todo = [c for c in cases() if not o.only or o.only in c[0]]
    base = tempfile.mkdtemp(prefix="loupe-same-code.")
    diffs, shown = [], 0
    try:
        with concurrent.futures.ThreadPoolExecutor(o.j) as ex:
            for name, args, a, b in ex.map(lambda c: compare(c, old, new, base), todo):
                if same(a, b):
                    continue
                diffs.append(name)
                print(f"DIFFERS {name}: loupe -d {shlex.join(args)[:200]}")
                if shown < 5:
                    shown += 1
                    if a[0] != b[0]:
                        print(f"  exit status {a[0]} -> {b[0]}")
                    for label, x, y in (("stdout", a[1], b[1]), ("stderr", a[2], b[2])):
                        if x != y:
                            d = difflib.unified_diff(x.decode(errors="replace").splitlines(),
                                                     y.decode(errors="replace").splitlines(),
                                                     f"old {label}", f"new {label}", lineterm="", n=2)
                            print("\n".join(list(d)[:40]))
    finally:
        if o.k:
            print(f"work directory kept: {base}")
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(f"{len(todo) - len(diffs)} same, {len(diffs)} differ ({len(todo)} cases)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
