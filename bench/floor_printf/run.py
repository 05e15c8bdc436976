#!/usr/bin/env python3
"""The printf row of the floor: loupe and bpftrace against a hand-written
ring-buffer printf (printf3.bpf.c, clang -O2), side by side in one run.

  run.py --build DIR [--runs 7] [--events 200000] [--loupe PATH]
         [--bpftrace PATH] [--impls floor,loupe,...] [--dump DIR] [--json FILE]

DIR holds what bench/floor_printf.sh builds: floorprintf, proginfo, opengen
and the three printf3*.bpf.o.

Each run starts every implementation once, one after the other in a rotating
order, each alone: start the tracer, find its programs by the prog_id lines
of /proc/PID/fdinfo/*, open /dev/null until its program has run, wait 0.3 s,
snapshot the kernel's run_time_ns / run_cnt (kernel.bpf_stats_enabled=1,
restored after), run `opengen EVENTS` (EVENTS openat calls of /dev/null and
nothing else), snapshot again, wait until the tracer has printed the
generator's lines (or stopped printing), SIGINT it. ns/event is the delta
ns / delta cnt of that window: every openat on the machine, not only the
generator's. Reported: the median over runs, and the ratio to the floor as
the median of the per-run ratios (each run's implementations ran within
seconds of each other).

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
ALL = ("floor", "floor-output", "floor-wake", "loupe", "bpftrace")
DESCR = {
    "floor": "printf3.bpf.o: reserve, fill, submit(BPF_RB_NO_WAKEUP); reader polls every 10 ms",
    "floor-output": "printf3_output.bpf.o: record on the stack, bpf_ringbuf_output(NO_WAKEUP); "
                    "reader polls every 10 ms",
    "floor-wake": "printf3_wake.bpf.o: reserve, fill, submit(0); reader blocks in epoll",
    "loupe": "loupe -e SCRIPT",
    "bpftrace": "bpftrace -e SCRIPT",
}
PROBE_TYPES = {2, 5, 7, 17, 26}   # kprobe, tracepoint, perf event, raw tp, tracing

O = None
STARTED = []


def cmd_of(impl):
    b = O.build
    return {
        "floor": [f"{b}/floorprintf", "-m", "poll", f"{b}/printf3.bpf.o"],
        "floor-output": [f"{b}/floorprintf", "-m", "poll", f"{b}/printf3_output.bpf.o"],
        "floor-wake": [f"{b}/floorprintf", "-m", "wake", f"{b}/printf3_wake.bpf.o"],
        "loupe": [O.loupe, "-e", SCRIPT],
        "bpftrace": [O.bpftrace, "-e", SCRIPT],
    }[impl]


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


def run_one(impl, run):
    out = f"{O.tmp}/run{run}.{impl}.out"
    err = f"{O.tmp}/run{run}.{impl}.err"
    p = subprocess.Popen(cmd_of(impl), stdout=open(out, "w"), stderr=open(err, "w"))
    STARTED.append(p)
    try:
        deadline = time.time() + 60
        progs = {}
        while True:
            if p.poll() is not None:
                raise SystemExit(f"{impl}: exited {p.returncode}: {open(err).read()}")
            if time.time() > deadline:
                raise SystemExit(f"{impl}: no program ran within 60 s")
            progs = {i: x for i, x in proginfo(prog_ids(p.pid)).items()
                     if x["type"] in PROBE_TYPES}
            if progs:
                poke()
                progs = proginfo(progs.keys())
                if all(x["cnt"] > 0 for x in progs.values()):
                    break
            time.sleep(0.05)
        if O.dump and run == 0:
            with open(f"{O.dump}/{impl}.xlated.txt", "w") as f:
                f.write(f"# {SCRIPT}\n# {impl}: {DESCR[impl]}\n")
                for i in sorted(progs):
                    f.write(subprocess.run(["bpftool", "prog", "dump", "xlated", "id", str(i)],
                                           capture_output=True, text=True).stdout)
        time.sleep(0.3)   # loupe's reader back to blocking after the pokes' records
        before = proginfo(progs.keys())
        t0 = time.monotonic()
        g = subprocess.Popen([f"{O.build}/opengen", str(O.events)])
        STARTED.append(g)
        g.wait()
        gen_s = time.monotonic() - t0
        after = proginfo(progs.keys())
        want = f"{g.pid} opengen ".encode()
        # the tracer prints what is queued: wait for all the lines, or until
        # they stop coming for 2 s (lost records), at most 60 s
        last, still = -1, time.time()
        end = time.time() + 60
        while time.time() < end:
            n = count_lines(out, want)
            if n >= O.events:
                break
            if n != last:
                last, still = n, time.time()
            elif time.time() - still > 2:
                break
            time.sleep(0.1)
    finally:
        stop(p)
    text = open(out, "rb").read().decode(errors="replace")
    good = len(re.findall(rf"^{g.pid} opengen {FLAGS}$", text, re.M))
    mine = len(re.findall(rf"^{g.pid} ", text, re.M))
    lost = sum(int(x) for x in re.findall(r"^Lost (\d+) events", text, re.M))
    cnt = sum(after[i]["cnt"] - before[i]["cnt"] for i in after)
    ns = sum(after[i]["ns"] - before[i]["ns"] for i in after)
    if cnt <= 0:
        raise SystemExit(f"{impl}: its program did not run during the generator")
    ok = mine == good and (good == O.events or (good < O.events and lost >= O.events - good))
    return {
        "ns_per_event": ns / cnt, "events": cnt, "gen_us_per_open": gen_s * 1e6 / O.events,
        "xlated": sum(x["xlated"] for x in after.values()),
        "jited": sum(x["jited"] for x in after.values()),
        "verified": sum(x["verified"] for x in after.values()),
        "recursion_misses": sum(after[i]["rmiss"] - before[i]["rmiss"] for i in after),
        "lines": good, "bad_lines": mine - good, "lost": lost, "ok": ok,
        "progs": [f'{x["name"]}#{x["id"]}' for x in after.values()],
    }


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
    ap.add_argument("--impls", default=",".join(ALL))
    ap.add_argument("--dump")
    ap.add_argument("--json")
    O = ap.parse_args()
    impls = [i for i in O.impls.split(",") if i]
    if impls[0] != "floor" or any(i not in ALL for i in impls):
        raise SystemExit(f"--impls: start with floor; known: {','.join(ALL)}")
    O.tmp = f"{O.build}/logs"
    os.makedirs(O.tmp, exist_ok=True)
    if O.dump:
        os.makedirs(O.dump, exist_ok=True)
        with open(f"{O.dump}/loupe.d.txt", "w") as f:
            f.write(subprocess.run([O.loupe, "-d", "-e", SCRIPT], capture_output=True,
                                   text=True).stdout)
        for obj in ("printf3", "printf3_output", "printf3_wake"):
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
    try:
        for run in range(O.runs):
            order = impls[run % len(impls):] + impls[:run % len(impls)]
            for impl in order:
                r = run_one(impl, run)
                res[impl].append(r)
                print(f"  run {run} {impl:12s} {r['ns_per_event']:8.1f} ns/event  "
                      f"{r['events']:7d} events  gen {r['gen_us_per_open']:6.2f} us/open  "
                      f"lines {r['lines']} lost {r['lost']}{'' if r['ok'] else '  WRONG'}",
                      flush=True)
    finally:
        open("/proc/sys/kernel/bpf_stats_enabled", "w").write(old)
        for p in STARTED:
            stop(p)
    load_after = open("/proc/loadavg").read().split()[:3]
    print(f"load average after: {load_after}")
    print()
    print("| impl | xlated insns | jited bytes | verified insns | ns/event (median) "
          "| ÷ floor (median of runs) | ÷ floor, min-max | ns/event min-max "
          "| opengen us/open | lines, lost, check |")
    print("|---|---:|---:|---:|---:|---:|---|---|---:|---|")
    base = res["floor"]
    table = []
    for impl in impls:
        r = res[impl]
        ns = statistics.median(x["ns_per_event"] for x in r)
        ratios = [a["ns_per_event"] / b["ns_per_event"] for a, b in zip(r, base)]
        lines = sum(x["lines"] for x in r)
        lost = sum(x["lost"] for x in r)
        ok = all(x["ok"] for x in r)
        row = {"impl": impl, "what": DESCR[impl], "xlated": r[0]["xlated"],
               "jited": r[0]["jited"], "verified": r[0]["verified"], "ns_per_event": ns,
               "ratio": statistics.median(ratios), "ratio_min": min(ratios),
               "ratio_max": max(ratios),
               "ns_runs": [round(x["ns_per_event"], 1) for x in r],
               "gen_us_per_open": statistics.median(x["gen_us_per_open"] for x in r),
               "lines": lines, "lost": lost, "ok": ok,
               "recursion_misses": sum(x["recursion_misses"] for x in r)}
        table.append(row)
        print(f"| {impl} | {row['xlated']} | {row['jited']} | {row['verified']} | {ns:.1f} | "
              f"{row['ratio']:.2f} | {row['ratio_min']:.2f}-{row['ratio_max']:.2f} | "
              f"{min(row['ns_runs']):.0f}-{max(row['ns_runs']):.0f} | "
              f"{row['gen_us_per_open']:.2f} | {lines}/{O.events * O.runs}, {lost}, "
              f"{'ok' if ok else 'WRONG'} |")
    if O.json:
        with open(O.json, "w") as f:
            json.dump({"header": head, "load_after": load_after, "events": O.events,
                       "table": table, "runs": res}, f, indent=1)
    return 0 if all(t["ok"] for t in table) else 1


def on_term(sig, frame):
    raise SystemExit(f"signal {sig}")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGHUP, on_term)
    sys.exit(main())
