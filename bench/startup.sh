#!/usr/bin/env bash
# Where loupe's start-up goes: the kernel's own work against loupe's.
#
#   sudo bench/startup.sh [-n RUNS]
#
# For each script of bench/lib.sh, RUNS times: from exec until every probe
# is attached and BEGIN has printed (as bench/run.sh measures start-up),
# and within that, the time the process spent in system calls, summed by
# kind, as a second loupe sees them (raw_syscalls tracepoints, filtered to
# the process under test, which runs as a copy named loupe-sut):
#
#   bpf        bpf(): map creation, program load and verification, BTF,
#              links (the kernel's work the script asks for)
#   perf       perf_event_open() and ioctl() (attaching to tracepoints,
#              uprobes, timers)
#   files      openat, read, pread64, mmap, close, fstat, ...: reading
#              BTF, tracefs formats, kallsyms, ELF files
#   other      every other system call
#   waited     time it was runnable but another task had its CPU (the
#              machine's load, not loupe's cost)
#   loupe      the rest: loupe's own code in user space (parsing,
#              checking, generating), the dynamic loader, page faults
#   kernel:loupe  (bpf + perf) / loupe: the kernel's own work for the
#              script against loupe's
#
# From execve's return to BEGIN's "go" line; medians of RUNS runs, in ms
# (each column its own median). The observer costs each system call of the
# process under test a few hundred ns (its two probes), a few hundredths
# of a ms per run.
set -u
cd "$(dirname "$0")/.." || exit 1
RUNS=10
while getopts n: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS]" >&2; exit 1 ;;
  esac
done
LOUPE=${LOUPE:-./loupe}
[ "$(id -u)" = 0 ] || { echo "bench/startup.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/startup.sh: build loupe first (make)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/loupe-startup.XXXXXX)
OBSERVER=""
cleanup() {
  [ -n "$OBSERVER" ] && kill -KILL "$OBSERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
. bench/lib.sh

cp "$LOUPE" "$WORK/loupe-sut"
# Per process: when its execve returned (t0), when it wrote its first
# line, BEGIN's "go" (t1), and the time each system call number took in
# between, ns.
"$LOUPE" -q -e '
tracepoint:raw_syscalls:sys_exit /comm == "loupe-sut" && !@t0[pid]/ { @t0[pid] = nsecs; }
tracepoint:raw_syscalls:sys_enter /comm == "loupe-sut" && !@t1[pid]/ {
  if (args.id == 1 && args.args[0] == 1) { @t1[pid] = nsecs; } else { @start[tid] = nsecs; }
}
tracepoint:raw_syscalls:sys_exit /comm == "loupe-sut" && @start[tid]/ {
  @ns[pid, args.id] = sum(nsecs - @start[tid]);
  delete(@start[tid]);
}
tracepoint:sched:sched_switch /args.prev_comm == "loupe-sut" && args.prev_state == 0/ {
  @off[args.prev_pid] = nsecs;
}
tracepoint:sched:sched_switch /args.next_comm == "loupe-sut" && @off[args.next_pid]/ {
  if (!@t1[args.next_pid]) { @preempted[args.next_pid] = sum(nsecs - @off[args.next_pid]); }
  delete(@off[args.next_pid]);
}' >"$WORK/observed" 2>"$WORK/observer.err" &
OBSERVER=$!
for _ in $(seq 100); do
  grep -q Attached "$WORK/observer.err" 2>/dev/null && break
  [ -n "$(tracer_prog_ids "$OBSERVER")" ] && break
  sleep 0.05
done
sleep 0.5

: >"$WORK/runs"
for s in "${!NAMES[@]}"; do
  script=${SCRIPTS[$s]}
  case $script in BEGIN*) ;; *) script="BEGIN { printf(\"go\\n\"); } $script" ;; esac
  for _ in $(seq "$RUNS"); do
    : >"$WORK/out"
    sh -c 'echo "$1 $$" >>"$2"; exec "$3" -q -e "$4"' _ "${NAMES[$s]}" \
      "$WORK/runs" "$WORK/loupe-sut" "$script" >"$WORK/out" 2>&1 &
    sut=$!
    for _ in $(seq 600); do
      grep -qx go "$WORK/out" && break
      kill -0 "$sut" 2>/dev/null || break
      sleep 0.05
    done
    kill -INT "$sut" 2>/dev/null
    wait "$sut"
  done
done
kill -INT "$OBSERVER"
wait "$OBSERVER" 2>/dev/null
OBSERVER=""

# x86-64 system call numbers of the kinds above
python3 - "$WORK/runs" "$WORK/observed" "$RUNS" "$("$LOUPE" --version)" "$(uname -r)" <<'PY'
import re, statistics, sys
runs_file, observed_file, runs, version, kernel = sys.argv[1:]
BPF, PERF, IOCTL = 321, 298, 16
FILES = {0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 11, 17, 78, 89, 217, 257, 262, 332, 437}
ns, t0, t1, pre = {}, {}, {}, {}
for line in open(observed_file):
    m = re.match(r"@ns\[(\d+), (\d+)\]: (\d+)", line)
    if m:
        pid, nr, t = map(int, m.groups())
        ns.setdefault(pid, {})[nr] = t
    m = re.match(r"@(t0|t1|preempted)\[(\d+)\]: (\d+)", line)
    if m:
        {"t0": t0, "t1": t1, "preempted": pre}[m.group(1)][int(m.group(2))] = int(m.group(3))
rows, missing = {}, 0
for line in open(runs_file):
    name, pid = line.split()
    pid = int(pid)
    if pid not in t0 or pid not in t1:
        missing += 1
        continue
    calls = ns.get(pid, {})
    total = (t1[pid] - t0[pid]) / 1e6
    bpf = calls.get(BPF, 0) / 1e6
    perf = (calls.get(PERF, 0) + calls.get(IOCTL, 0)) / 1e6
    files = sum(t for nr, t in calls.items() if nr in FILES) / 1e6
    other = sum(calls.values()) / 1e6 - bpf - perf - files
    waited = pre.get(pid, 0) / 1e6
    rows.setdefault(name, []).append((total, bpf, perf, files, other, waited,
                                      total - bpf - perf - files - other - waited))
print(f"{version}, {kernel}; medians of {runs} runs, ms, from execve's")
print("return to BEGIN's first line")
print(f"{'script':<10} {'start-up':>9} {'bpf':>7} {'perf':>7} {'files':>7} "
      f"{'other':>7} {'waited':>7} {'loupe':>7} {'kernel:loupe':>13}")
for name, r in rows.items():
    med = [statistics.median(c) for c in zip(*r)]
    kernel_part = med[1] + med[2]
    share = f"{kernel_part / med[6]:.2f}" if med[6] > 0 else "-"
    print(f"{name:<10} {med[0]:>9.2f} {med[1]:>7.2f} {med[2]:>7.2f} "
          f"{med[3]:>7.2f} {med[4]:>7.2f} {med[5]:>7.2f} {med[6]:>7.2f} "
          f"{share:>13}")
if missing:
    print(f"({missing} runs not seen whole by the observer, left out)")
PY
