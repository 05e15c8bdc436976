#!/usr/bin/env python3
"""The printf row of the floor: loupe and bpftrace against a hand-written
ring-buffer printf (printf3.bpf.c, clang -O2), side by side in one run.

  run.py --build DIR [--runs 7] [--together 0] [--events 200000]
         [--loupe PATH] [--loupe-before PATH] [--bpftrace PATH]
         [--impls floor,loupe,...]
         [--together-impls floor,...] [--dump DIR] [--json FILE]

DIR holds what bench/floor_printf.sh builds: floorprintf, proginfo, opengen
and printf3.bpf.c built five ways (FLOORS below says what each is).

Main measurement (--runs): each run starts every implementation once, one
after the other in a rotating order, each alone: start the tracer, find its
programs by the prog_id lines of /proc/PID/fdinfo/*, open /dev/null until
its program has run, wait 0.3 s, snapshot the kernel's run_time_ns /
run_cnt (kernel.bpf_stats_enabled=1, restored after), run `opengen EVENTS`
(EVENTS openat calls of /dev/null and nothing else), snapshot again, wait
until the tracer has printed the generator's lines (or stopped printing),
SIGINT it. The tracer's CPU time (user + system, /proc/PID/stat) from the
first snapshot to its last line, per line, is its reader's cost. ns/event is the delta ns / delta cnt of that window: every openat
on the machine, not only the generator's. Reported: the median over runs,
and the ratio to the floor as the median of the per-run ratios (each run's
implementations ran within seconds of each other).

Paired measurement (--together): the --together-impls attached at once to
the same tracepoint, so each event runs all of their programs back to back
over the same window; the attach order rotates run by run. Whichever
program runs first on an event pays the cold caches, so over whole
rotations (a multiple of the number of implementations) each takes each
place equally often, and the ratio is of the means.

Correctness, every run: the tracer must print exactly "PID opengen 524288"
(O_RDONLY|O_CLOEXEC) for the generator's pid, EVENTS times; fewer is
allowed only if it reported lost events ("Lost N events") at least as many
as are missing (the ring buffer was full: lost counts every process's
records, so it cannot be split by pid).
"""
import argparse, json, os, re, signal, statistics, subprocess, sys, time

SCRIPT = ('tracepoint:syscalls:sys_enter_openat '
          '{ printf("%d %s %d\\n", pid, comm, args->flags); }')
FLAGS = os.O_RDONLY | os.O_CLOEXEC          # what opengen passes: 524288
ALL = ("floor", "floor-output", "floor-wide", "floor-asloupe", "floor-wake", "loupe",
       "loupe-before", "bpftrace")
# name: (object, reader mode, what it is)
FLOORS = {
    "floor": ("printf3", "poll", "reserve 24 B, fill, submit(BPF_RB_NO_WAKEUP); reader "
              "polls every 10 ms"),
    "floor-output": ("printf3_output", "poll", "24 B record on the stack, "
                     "bpf_ringbuf_output(NO_WAKEUP)"),
    "floor-wide": ("printf3_wide", "poll", "reserve, fill, submit of loupe's 40 B layout "
                   "(8 B header, 8 B integers)"),
    "floor-asloupe": ("printf3_asloupe", "poll", "loupe's per-record work in C: 40 B record "
                      "on the stack, bpf_ringbuf_output, flags read from a global"),
    "floor-wake": ("printf3_wake", "wake", "reserve 24 B, fill, submit(0): the kernel wakes "
                   "the reader (blocking in epoll) when it has caught up"),
}
DESCR = {k: v[2] for k, v in FLOORS.items()}
DESCR["loupe"] = "loupe -e SCRIPT"
DESCR["loupe-before"] = "an earlier loupe (--loupe-before): before and after in one run"
DESCR["bpftrace"] = "bpftrace -e SCRIPT"
PROBE_TYPES = {2, 5, 7, 17, 26}   # kprobe, tracepoint, perf event, raw tp, tracing

O = None
STARTED = []


def cmd_of(impl):
    if impl in FLOORS:
        obj, mode, _ = FLOORS[impl]
        return [f"{O.build}/floorprintf", "-m", mode, f"{O.build}/{obj}.bpf.o"]
    tool = {"loupe": O.loupe, "loupe-before": O.loupe_before}.get(impl, O.bpftrace)
    return [tool, "-e", SCRIPT]


def prog_ids(pid):
    ids = set()
    d = f"/proc/{pid}/fdinfo"
    try:
        fds = os.listdir(d)
    except OSError:
        return ids
    for fd in fds:
        try:
            for line in open(f"{d}/{fd}"):
                if line.startswith("prog_id:"):
                    ids.add(int(line.split()[1]))
        except (OSError, ValueError):
            pass
    return ids


def proginfo(ids):
    if not ids:
        return {}
    out = subprocess.run([f"{O.build}/proginfo"] + [str(i) for i in sorted(ids)],
                         capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        res[int(f[0])] = {"id": int(f[0]), "type": int(f[1]), "name": f[2],
                          "xlated": int(f[3]), "jited": int(f[4]), "verified": int(f[5]),
                          "ns": int(f[6]), "cnt": int(f[7]), "rmiss": int(f[8])}
    return res


def stop(p):
    """SIGINT to a process this script started (the tracers detach and
    print what is queued), SIGKILL if it is still there 30 s later."""
    if p.poll() is not None:
        return
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def poke():
    os.close(os.open("/dev/null", os.O_RDONLY))


def count_lines(path, want):
    n = 0
    with open(path, "rb") as f:
        for line in f:
            if line.startswith(want):
                n += 1
    return n


class Tracer:
    """One implementation started by this script, its output in a file."""

    def __init__(self, impl, tag):
        self.impl = impl
        self.out = f"{O.tmp}/{tag}.{impl}.out"
        self.err = f"{O.tmp}/{tag}.{impl}.err"
        self.p = subprocess.Popen(cmd_of(impl), stdout=open(self.out, "w"),
                                  stderr=open(self.err, "w"))
        STARTED.append(self.p)
        self.progs = {}

    def wait_attached(self):
        """Until its programs are loaded and have run (openat of /dev/null)."""
        deadline = time.time() + 60
        while True:
            if self.p.poll() is not None:
                raise SystemExit(f"{self.impl}: exited {self.p.returncode}: "
                                 + open(self.err).read())
            if time.time() > deadline:
                raise SystemExit(f"{self.impl}: no program ran within 60 s")
            progs = {i: x for i, x in proginfo(prog_ids(self.p.pid)).items()
                     if x["type"] in PROBE_TYPES}
            if progs:
                poke()
                progs = proginfo(progs.keys())
                if all(x["cnt"] > 0 for x in progs.values()):
                    self.progs = progs
                    return
            time.sleep(0.05)

    def dump(self):
        with open(f"{O.dump}/{self.impl}.xlated.txt", "w") as f:
            f.write(f"# {SCRIPT}\n# {self.impl}: {DESCR[self.impl]}\n")
            for i in sorted(self.progs):
                f.write(subprocess.run(["bpftool", "prog", "dump", "xlated", "id", str(i)],
                                       capture_output=True, text=True).stdout)

    def snapshot(self):
        return proginfo(self.progs.keys())

    def cpu(self):
        """Its user + system CPU time so far, all threads, in seconds."""
        f = open(f"/proc/{self.p.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")

    def wait_lines(self, gpid):
        """Until it printed the generator's lines, or they stopped coming for
        2 s (lost records), at most 60 s."""
        want = f"{gpid} opengen ".encode()
        last, still, end = -1, time.time(), time.time() + 60
        while time.time() < end:
            n = count_lines(self.out, want)
            if n >= O.events:
                return
            if n != last:
                last, still = n, time.time()
            elif time.time() - still > 2:
                return
            time.sleep(0.1)

    def result(self, before, after, gpid):
        """Stopped: its figures over the window and the check of its lines."""
        text = open(self.out, "rb").read().decode(errors="replace")
        good = len(re.findall(rf"^{gpid} opengen {FLAGS}$", text, re.M))
        mine = len(re.findall(rf"^{gpid} ", text, re.M))
        lost = sum(int(x) for x in re.findall(r"^Lost (\d+) events", text, re.M))
        cnt = sum(after[i]["cnt"] - before[i]["cnt"] for i in after)
        ns = sum(after[i]["ns"] - before[i]["ns"] for i in after)
        if cnt <= 0:
            raise SystemExit(f"{self.impl}: its program did not run during the generator")
        ok = mine == good and (good == O.events or
                               (good < O.events and lost >= O.events - good))
        return {
            "ns_per_event": ns / cnt, "events": cnt,
            "xlated": sum(x["xlated"] for x in after.values()),
            "jited": sum(x["jited"] for x in after.values()),
            "verified": sum(x["verified"] for x in after.values()),
            "recursion_misses": sum(after[i]["rmiss"] - before[i]["rmiss"] for i in after),
            "lines": good, "bad_lines": mine - good, "lost": lost, "ok": ok,
            "progs": [f'{x["name"]}#{x["id"]}' for x in after.values()],
        }


def generate():
    """Runs opengen; its pid and its seconds."""
    t0 = time.monotonic()
    g = subprocess.Popen([f"{O.build}/opengen", str(O.events)])
    STARTED.append(g)
    g.wait()
    if g.returncode:
        raise SystemExit(f"opengen exited {g.returncode}")
    return g.pid, time.monotonic() - t0


def measure(impls, tag, dump=False):
    """The implementations attached together (one alone in the main
    measurement), in this order, around one opengen; their results."""
    ts = []
    try:
        for impl in impls:
            ts.append(Tracer(impl, tag))
            ts[-1].wait_attached()
            if dump:
                ts[-1].dump()
        time.sleep(0.3)   # loupe's reader back to blocking after the pokes' records
        cpu0 = [t.cpu() for t in ts]
        before = [t.snapshot() for t in ts]
        gpid, gen_s = generate()
        after = [t.snapshot() for t in ts]
        for t in ts:
            t.wait_lines(gpid)
        cpu = [t.cpu() - c for t, c in zip(ts, cpu0)]
    finally:
        for t in ts:
            stop(t.p)
    res = {}
    for t, b, a, c in zip(ts, before, after, cpu):
        res[t.impl] = t.result(b, a, gpid)
        res[t.impl]["gen_us_per_open"] = gen_s * 1e6 / O.events
        # the reader's CPU from before the generator to its last line, per
        # record it printed (clock ticks: 10 ms resolution)
        res[t.impl]["reader_us"] = c * 1e6 / max(res[t.impl]["lines"], 1)
        # 5 MB of lines a run: kept only when they are wrong
        if res[t.impl]["ok"]:
            for f in (t.out, t.err):
                os.unlink(f)
    return res


def sh(cmd):
    try:
        return subprocess.run(cmd, shell=True, capture_output=True, text=True).stdout.strip()
    except OSError:
        return "-"


def header():
    cpu = sh("sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1")
    libbpf = sh("dpkg-query -W -f='${Version}' libbpf-dev")
    return [
        f"date: {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime())}",
        f"machine: {os.uname().nodename}, kernel {os.uname().release}, {os.cpu_count()} CPUs, {cpu}",
        f"loupe: {sh(O.loupe + ' --version')} ({O.loupe}, commit {sh('git rev-parse --short HEAD')})",
        f"bpftrace: {sh(O.bpftrace + ' --version')} ({O.bpftrace})",
        *([f"loupe-before: {sh(O.loupe_before + ' --version')} ({O.loupe_before})"]
          if O.loupe_before else []),
        f"floor: clang {sh('clang --version | head -n 1')}; "
        f"libbpf-dev {libbpf}; "
        f"{sh('bpftool version | head -n 1')}",
        f"load average before: {open('/proc/loadavg').read().split()[:3]}",
    ]


def main():
    global O
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--events", type=int, default=200000)
    ap.add_argument("--loupe", default=os.environ.get("LOUPE", "./loupe"))
    ap.add_argument("--bpftrace", default=os.environ.get("BPFTRACE", "/usr/bin/bpftrace"))
    ap.add_argument("--loupe-before", default=os.environ.get("LOUPE_BEFORE"),
                    help="an earlier loupe binary, the loupe-before implementation")
    ap.add_argument("--impls", default=",".join(ALL))
    ap.add_argument("--together", type=int, default=0,
                    help="runs of the paired measurement, best a multiple of the number "
                         "of --together-impls (0: none)")
    ap.add_argument("--together-impls",
                    default="floor,floor-output,floor-wide,floor-asloupe,loupe")
    ap.add_argument("--dump")
    ap.add_argument("--json")
    O = ap.parse_args()
    impls = [i for i in O.impls.split(",") if i]
    timpls = [i for i in O.together_impls.split(",") if i]
    for what, l in (("--impls", impls), ("--together-impls", timpls)):
        if l[0] != "floor" or any(i not in ALL for i in l):
            raise SystemExit(f"{what}: start with floor; known: {','.join(ALL)}")
        if "loupe-before" in l and not O.loupe_before:
            raise SystemExit(f"{what}: loupe-before needs --loupe-before PATH")
    O.tmp = f"{O.build}/logs"
    os.makedirs(O.tmp, exist_ok=True)
    if O.dump:
        os.makedirs(O.dump, exist_ok=True)
        with open(f"{O.dump}/loupe.d.txt", "w") as f:
            f.write(subprocess.run([O.loupe, "-d", "-e", SCRIPT], capture_output=True,
                                   text=True).stdout)
        for obj in sorted({v[0] for v in FLOORS.values()}):
            with open(f"{O.dump}/{obj}.objdump.txt", "w") as f:
                f.write(subprocess.run(["llvm-objdump", "-d", "-l", "--no-show-raw-insn",
                                        f"{O.build}/{obj}.bpf.o"], capture_output=True,
                                       text=True).stdout)
    head = header()
    for line in head:
        print(line, flush=True)
    print(f"script: {SCRIPT}")
    print(f"load: opengen {O.events} (openat of /dev/null, O_RDONLY|O_CLOEXEC), "
          f"{O.runs} runs, order rotating: {', '.join(impls)}", flush=True)
    old = open("/proc/sys/kernel/bpf_stats_enabled").read().strip()
    open("/proc/sys/kernel/bpf_stats_enabled", "w").write("1")
    res = {i: [] for i in impls}
    tog = {i: [] for i in timpls}
    try:
        for run in range(O.runs):
            order = impls[run % len(impls):] + impls[:run % len(impls)]
            for impl in order:
                r = measure([impl], f"run{run}", dump=bool(O.dump) and run == 0)[impl]
                res[impl].append(r)
                print(f"  run {run} {impl:12s} {r['ns_per_event']:8.1f} ns/event  "
                      f"{r['events']:7d} events  gen {r['gen_us_per_open']:6.2f} us/open  "
                      f"reader {r['reader_us']:5.2f} us/line  "
                      f"lines {r['lines']} lost {r['lost']}{'' if r['ok'] else '  WRONG'}",
                      flush=True)
        for run in range(O.together):
            order = timpls[run % len(timpls):] + timpls[:run % len(timpls)]
            r = measure(order, f"tog{run}")
            for impl in timpls:
                tog[impl].append(r[impl])
            print(f"  together {run}: " + ", ".join(
                f"{i} {r[i]['ns_per_event']:.1f}{'' if r[i]['ok'] else ' WRONG'}"
                for i in order), flush=True)
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old)
        for p in STARTED:
            stop(p)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"load average after: {load_after}")
    table = main_table(impls, res) if O.runs else []
    ttable = together_table(timpls, tog) if O.together else []
    if O.json:
        with open(O.json, "w") as f:
            json.dump({"header": head, "load_after": load_after, "events": O.events,
                       "table": table, "runs": res, "together_table": ttable,
                       "together_runs": tog}, f, indent=1)
    return 0 if all(t["ok"] for t in table + ttable) else 1


def main_table(impls, res):
    print()
    print("each alone, alternating: ns/event = run_time_ns / run_cnt over the "
          "generator's window")
    print("| impl | xlated insns | jited bytes | verified insns | ns/event (median) "
          "| ÷ floor (median of runs) | ÷ floor, min-max | ns/event min-max "
          "| opengen us/open | reader CPU us/line | lines, lost, check |")
    print("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|")
    base = res["floor"]
    table = []
    for impl in impls:
        r = res[impl]
        ns = statistics.median(x["ns_per_event"] for x in r)
        ratios = [a["ns_per_event"] / b["ns_per_event"] for a, b in zip(r, base)]
        row = {"impl": impl, "what": DESCR[impl], "xlated": r[0]["xlated"],
               "jited": r[0]["jited"], "verified": r[0]["verified"], "ns_per_event": ns,
               "ratio": statistics.median(ratios), "ratio_min": min(ratios),
               "ratio_max": max(ratios),
               "ns_runs": [round(x["ns_per_event"], 1) for x in r],
               "gen_us_per_open": statistics.median(x["gen_us_per_open"] for x in r),
               "reader_us": statistics.median(x["reader_us"] for x in r),
               "lines": sum(x["lines"] for x in r), "lost": sum(x["lost"] for x in r),
               "ok": all(x["ok"] for x in r),
               "recursion_misses": sum(x["recursion_misses"] for x in r)}
        table.append(row)
        print(f"| {impl} | {row['xlated']} | {row['jited']} | {row['verified']} | {ns:.1f} | "
              f"{row['ratio']:.2f} | {row['ratio_min']:.2f}-{row['ratio_max']:.2f} | "
              f"{min(row['ns_runs']):.0f}-{max(row['ns_runs']):.0f} | "
              f"{row['gen_us_per_open']:.2f} | {row['reader_us']:.2f} | "
              f"{row['lines']}/{O.events * len(r)}, "
              f"{row['lost']}, {'ok' if row['ok'] else 'WRONG'} |")
    return table


def together_table(impls, tog):
    """Every event ran all of them back to back, the attach order rotating;
    over whole rotations each takes each place equally often, so the ratio
    is of the means over runs (the first program on an event pays the cold
    caches)."""
    print()
    print(f"together: {', '.join(impls)} attached at once, attach order rotating, "
          f"{len(tog['floor'])} runs; ratio of the means")
    print("| impl | ns/event (mean) | ÷ floor | per-run ÷ floor, min-max "
          "| reader CPU us/line (median) | lines, lost, check |")
    print("|---|---:|---:|---|---:|---|")
    base = statistics.mean(x["ns_per_event"] for x in tog["floor"])
    table = []
    for impl in impls:
        r = tog[impl]
        ns = statistics.mean(x["ns_per_event"] for x in r)
        ratios = [a["ns_per_event"] / b["ns_per_event"] for a, b in zip(r, tog["floor"])]
        row = {"impl": impl, "ns_per_event": ns, "ratio": ns / base,
               "ratio_min": min(ratios), "ratio_max": max(ratios),
               "ns_runs": [round(x["ns_per_event"], 1) for x in r],
               "reader_us": statistics.median(x["reader_us"] for x in r),
               "lines": sum(x["lines"] for x in r), "lost": sum(x["lost"] for x in r),
               "ok": all(x["ok"] for x in r)}
        table.append(row)
        print(f"| {impl} | {ns:.1f} | {row['ratio']:.2f} | {row['ratio_min']:.2f}-"
              f"{row['ratio_max']:.2f} | {row['reader_us']:.2f} | "
              f"{row['lines']}/{O.events * len(r)}, {row['lost']}, "
              f"{'ok' if row['ok'] else 'WRONG'} |")
    return table


def on_term(sig, frame):
    raise SystemExit(f"signal {sig}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    sys.exit(main())
