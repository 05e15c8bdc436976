#!/usr/bin/env python3
"""Runs bpftrace scripts under loupe and bpftrace and compares what they print.

  compare.py LOUPE DIR [EXPECTED]

For each DIR/*.bt: both tracers run it with a timeout; stdout is normalized
(see normalize) and compared with the exit status. A script on real
probes starts with comment lines that give its workload (see workload):
`// SETUP: SHELL COMMAND` run once in a scratch directory before both
tracers, and `// CMD: COMMAND` that each tracer then runs with -c in that
directory; $ROOT in either is the repository. EXPECTED lists the
scripts whose difference is known and classified (see KNOWN.md); any other
difference fails (exit 1). Without EXPECTED every difference fails.
Prints scripts run, same, different, and each difference in short.
"""
import concurrent.futures
import difflib
import os
import re
import subprocess
import sys
import tempfile

TIMEOUT = 20
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
CLASSES = ("bpftrace-bug", "docs", "loupe-bug")
# A map entry on one line: `@name: value` or `@name[key]: value`.
ENTRY = re.compile(r"^(@[A-Za-z0-9_]*)(\[.*\])?: (.*)$")


def run(cmd, cwd=None):
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=TIMEOUT, cwd=cwd)
        return p.returncode, p.stdout.decode("utf-8", "replace"), \
            p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def normalize(out):
    """Drops bpftrace's "Attaching N probes..." line and the space 0.17 puts
    after a histogram's "@name:" line (a known difference, see KNOWN.md),
    and sorts each run of consecutive entries of one map that hold the same
    value: the order of ties is unspecified. Histogram rows and everything
    else keep their order."""
    lines = [re.sub(r"^(@\S*:) $", r"\1", l) for l in out.split("\n")
             if not re.match(r"^Attaching \d+ probes?\.\.\.$", l)]
    result, run_key, group = [], None, []
    for line in lines + [None]:
        m = ENTRY.match(line) if line is not None else None
        key = (m.group(1), m.group(3)) if m and m.group(2) else None
        if key is None or key != run_key:
            result.extend(sorted(group))
            group, run_key = [], key
        if key is not None:
            group.append(line)
        elif line is not None:
            result.append(line)
    return "\n".join(result)


def workload(path):
    """The `// SETUP:` and `// CMD:` lines at the top of the script (None
    where it has none), $ROOT replaced by the repository."""
    found = {"SETUP": None, "CMD": None}
    with open(path) as f:
        for line in f:
            m = re.match(r"^// (SETUP|CMD): (.*)$", line)
            if not m:
                break
            found[m.group(1)] = m.group(2).replace("$ROOT", ROOT)
    return found["SETUP"], found["CMD"]


def run_both(loupe, path, cwd):
    """Both tracers' (status, stdout, stderr), each running the script's
    CMD under -c when it has one; a string if its SETUP failed."""
    setup, cmd = workload(path)
    if setup:
        p = subprocess.run(["sh", "-c", setup], cwd=cwd, capture_output=True)
        if p.returncode != 0:
            err = p.stderr.decode("utf-8", "replace").strip().split("\n")
            return "setup failed: %s: %s" % (setup, err[-1])
    extra = ["-c", cmd] if cmd else []
    return (run([loupe] + extra + [path], cwd),
            run(["bpftrace"] + extra + [path], cwd))


def compare(loupe, path):
    path = os.path.abspath(path)
    with tempfile.TemporaryDirectory(prefix="loupe-diff-") as scratch:
        ran = run_both(loupe, path, scratch)
    if isinstance(ran, str):
        return [ran]
    (lr, lo, le), (br, bo, be) = ran
    ln, bn = normalize(lo), normalize(bo)
    if lr == br and ln == bn:
        return None
    short = []
    if lr != br:
        short.append("exit loupe %s bpftrace %s" % (lr, br))
        err = [l for l in (le if lr != 0 else be).split("\n")
               if l.strip() and "RLIMIT_MEMLOCK" not in l]
        short.append("  stderr: " + (err[0] if err else ""))
    if ln != bn:
        diff = difflib.unified_diff(bn.split("\n"), ln.split("\n"),
                                    "bpftrace", "loupe", lineterm="", n=0)
        short.extend("  " + d for d in list(diff)[2:12])
    return short


def read_expected(path):
    known = {}
    if not path:
        return known
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 2 or line[1] not in CLASSES:
                sys.exit("%s:%d: expected `SCRIPT CLASS` with CLASS one of %s"
                         % (path, n, ", ".join(CLASSES)))
            known[line[0]] = line[1]
    return known


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    loupe, folder = sys.argv[1], sys.argv[2]
    known = read_expected(sys.argv[3] if len(sys.argv) > 3 else None)
    names = sorted(n for n in os.listdir(folder) if n.endswith(".bt"))
    jobs = int(os.environ.get("DIFF_JOBS", "2"))
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda n: compare(loupe, os.path.join(folder, n)),
                                names))
    same = sum(1 for r in results if r is None)
    unexpected, listed = 0, {}
    for name, res in zip(names, results):
        stem = name[:-3]
        if res is None:
            if stem in known:
                print("now same (drop it from the list): %s" % stem)
            continue
        cls = known.get(stem)
        if cls:
            listed[cls] = listed.get(cls, 0) + 1
        else:
            unexpected += 1
        print("DIFF %s%s" % (name, " (known: %s)" % cls if cls else ""))
        for line in res:
            print("  " + line)
    print("%d scripts run, %d same, %d different (%d known: %s; %d unexpected)"
          % (len(names), same, len(names) - same, len(names) - same - unexpected,
             ", ".join("%s %d" % kv for kv in sorted(listed.items())) or "none",
             unexpected))
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
