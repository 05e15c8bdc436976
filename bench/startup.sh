#!/usr/bin/env bash
# Where loupe's start-up goes: the kernel's own work against loupe's.
#
#   sudo bench/startup.sh [-n RUNS] [-b BEFORE]
#
# For each script of bench/lib.sh, RUNS times: from exec until every probe
# is attached and BEGIN has printed (as bench/run.sh measures start-up),
# and within that, the time the process spent in system calls, summed by
# kind, as a second loupe sees them (raw_syscalls tracepoints, filtered to
# the process under test, which runs as a copy named loupe-sut):
#
#   bpf        bpf(): map creation, program load and verification, BTF,
#              links (the kernel's work the script asks for), and the
#              mmap() of the ring buffer (a shared mapping: loupe maps
#              nothing else shared), which sets up the map's pages
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
# With -b, the loupe binary BEFORE (an earlier build) runs too, each of
# its runs right after the same run of $LOUPE, and its row follows each
# script's, named `  before`: the two side by side under the same load.
#
# The last row, `exec-only`, is what any process pays here from execve's
# return to its first line: a C program that only writes "go" (built with
# cc -O2, dynamically linked against the C library as loupe is), measured
# the same way. Its `loupe` column is the floor of loupe's.
#
# From execve's return to BEGIN's "go" line; medians of RUNS runs, in ms
# (each column its own median). The observer costs each system call of the
# process under test a few hundred ns (its two probes), a few hundredths
# of a ms per run.
set -u
cd "$(dirname "$0")/.." || exit 1
RUNS=10
BEFORE=""
while getopts n:b: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    b) BEFORE=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-b BEFORE]" >&2; exit 1 ;;
  esac
done
LOUPE=${LOUPE:-./loupe}
[ "$(id -u)" = 0 ] || { echo "bench/startup.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/startup.sh: build loupe first (make)" >&2; exit 1; }
[ -z "$BEFORE" ] || [ -x "$BEFORE" ] || { echo "bench/startup.sh: no binary $BEFORE" >&2; exit 1; }

WORK=$(mktemp -d /tmp/loupe-startup.XXXXXX)
OBSERVER=""
cleanup() {
  [ -n "$OBSERVER" ] && kill -KILL "$OBSERVER" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
. bench/lib.sh

cp "$LOUPE" "$WORK/loupe-sut"
# the same name, which the observer goes by
[ -n "$BEFORE" ] && mkdir "$WORK/before" && cp "$BEFORE" "$WORK/before/loupe-sut"
# Per process: when its execve returned (t0), when it wrote its first
# line, BEGIN's "go" (t1), and the time each system call number took in
# between, ns (a key per process and system call: room for hundreds of
# runs).
"$LOUPE" -q -e '
config = { max_map_keys = 65536 }
tracepoint:raw_syscalls:sys_exit /comm == "loupe-sut" && !@t0[pid]/ { @t0[pid] = nsecs; }
tracepoint:raw_syscalls:sys_enter /comm == "loupe-sut" && !@t1[pid]/ {
  if (args.id == 1 && args.args[0] == 1) { @t1[pid] = nsecs; } else {
    @start[tid] = nsecs;
    /* a shared mmap (MAP_SHARED), of the ring buffer: 1009 */
    @nr[tid] = args.id == 9 && (args.args[3] & 1) ? 1009 : args.id;
  }
}
tracepoint:raw_syscalls:sys_exit /comm == "loupe-sut" && @start[tid]/ {
  @ns[pid, @nr[tid]] = sum(nsecs - @start[tid]);
  delete(@start[tid]);
  delete(@nr[tid]);
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
# One run of SUT (a copy named loupe-sut) on SCRIPT, recorded as NAME,
# until it printed "go" (or ended).
run_once() {
  : >"$WORK/out"
  sh -c 'echo "$1 $$" >>"$2"; exec "$3" -q -e "$4"' _ "$1" \
    "$WORK/runs" "$2" "$3" >"$WORK/out" 2>&1 &
  local sut=$!
  for _ in $(seq 600); do
    grep -qx go "$WORK/out" && break
    kill -0 "$sut" 2>/dev/null || break
    sleep 0.05
  done
  kill -INT "$sut" 2>/dev/null
  wait "$sut"
}
for s in "${!NAMES[@]}"; do
  script=${SCRIPTS[$s]}
  case $script in BEGIN*) ;; *) script="BEGIN { printf(\"go\\n\"); } $script" ;; esac
  for _ in $(seq "$RUNS"); do
    run_once "${NAMES[$s]}" "$WORK/loupe-sut" "$script"
    [ -n "$BEFORE" ] && run_once "${NAMES[$s]}/before" "$WORK/before/loupe-sut" "$script"
  done
done
mkdir "$WORK/floor"
printf '#include <unistd.h>\nint main(void) { return write(1, "go\\n", 3) != 3; }\n' |
  "${CC:-cc}" -O2 -x c -o "$WORK/floor/loupe-sut" -
for _ in $(seq "$RUNS"); do
  sh -c 'echo "exec-only $$" >>"$1"; exec "$2"' _ "$WORK/runs" \
    "$WORK/floor/loupe-sut" >/dev/null
done
kill -INT "$OBSERVER"
wait "$OBSERVER" 2>/dev/null
OBSERVER=""

# x86-64 system call numbers of the kinds above
python3 - "$WORK/runs" "$WORK/observed" "$RUNS" "$("$LOUPE" --version)" "$(uname -r)" <<'PY'
import re, statistics, sys
runs_file, observed_file, runs, version, kernel = sys.argv[1:]
BPF, PERF, IOCTL, SHARED_MMAP = 321, 298, 16, 1009
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
    bpf = (calls.get(BPF, 0) + calls.get(SHARED_MMAP, 0)) / 1e6
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
    if name.endswith("/before"):
        name = "  before"

    kernel_part = med[1] + med[2]
    share = f"{kernel_part / med[6]:.2f}" if med[6] > 0 else "-"
    print(f"{name:<10} {med[0]:>9.2f} {med[1]:>7.2f} {med[2]:>7.2f} "
          f"{med[3]:>7.2f} {med[4]:>7.2f} {med[5]:>7.2f} {med[6]:>7.2f} "
          f"{share:>13}")
if missing:
    print(f"({missing} runs not seen whole by the observer, left out)")
PY
