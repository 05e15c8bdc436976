#!/usr/bin/env bash
# The hook's cost, end to end: how much longer a syscall-heavy command
# takes while a tracer counts its system calls.
#
#   sudo bench/hook.sh [-n RUNS] [-c COUNT]
#
# The command is `dd if=/dev/zero of=/dev/null bs=1 count=COUNT` (default
# 2,000,000: 2 x COUNT system calls, a read and a write per byte); its wall
# time is taken untraced, and while each tracer runs each script:
#   - the hook only: `/pid == 1/ { @ = count(); }` (the predicate is false
#     for dd, so almost nothing but the hook runs);
#   - `{ @[comm] = count(); }` (bpftrace's syscount);
# on tracepoint:raw_syscalls:sys_enter and on rawtracepoint:sys_enter,
# under loupe as it was before (LOUPE_SYSCALL_PERF_EVENTS=1: a perf event
# for the tracepoint), loupe, and bpftrace ($BPFTRACE, default
# /usr/bin/bpftrace, when installed). Each figure is the median of RUNS
# rounds (default 5); a round runs every cell once, so that load from
# elsewhere spreads over all of them. "+N ns" is (time - untraced) / (2 x
# COUNT): the cost per system call. Each tracer is started, and dd run once
# it has printed BEGIN's "go" (both tracers run BEGIN after attaching),
# then stopped with SIGINT.
set -u
cd "$(dirname "$0")/.." || exit 1

RUNS=5
COUNT=2000000
while getopts n:c: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    c) COUNT=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-c COUNT]" >&2; exit 1 ;;
  esac
done

LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-/usr/bin/bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/hook.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/hook.sh: build loupe first (make)" >&2; exit 1; }
[ -x "$BPFTRACE" ] || BPFTRACE=""

. "$(dirname "$0")/lib.sh"

WORK=$(mktemp -d /tmp/loupe-hook.XXXXXX)
TRACER_PID=""
cleanup() {
  [ -n "$TRACER_PID" ] && kill -INT "$TRACER_PID" 2>/dev/null && wait "$TRACER_PID"
  rm -rf "$WORK"
}
trap cleanup EXIT

# "wall cpu": the seconds dd takes, and the CPU time it uses (user and
# system: the programs run in its system calls), which other work on the
# machine disturbs less.
time_dd() {
  local TIMEFORMAT='%R %U %S'
  { time dd if=/dev/zero of=/dev/null bs=1 count="$COUNT" status=none; } 2>&1 |
    awk '{ printf "%.3f %.3f\n", $1, $2 + $3 }'
}

# time_dd while TOOL (loupe-perf: loupe with a perf event per tracepoint)
# runs SCRIPT; "- -" if the tracer did not start.
time_traced() {
  local tool=$1 script=$2 env=() i
  case $tool in
    loupe-perf) env=(LOUPE_SYSCALL_PERF_EVENTS=1); tool=$LOUPE ;;
    loupe) tool=$LOUPE ;;
    bpftrace) tool=$BPFTRACE ;;
  esac
  : >"$WORK/out"
  env "${env[@]}" "$tool" -e "BEGIN { printf(\"go\\n\"); } $script" \
    >"$WORK/out" 2>"$WORK/err" &
  TRACER_PID=$!
  for i in $(seq 1 600); do
    grep -qx go "$WORK/out" && break
    kill -0 "$TRACER_PID" 2>/dev/null || break
    sleep 0.05
  done
  if grep -qx go "$WORK/out"; then time_dd; else echo - -; fi
  kill -INT "$TRACER_PID" 2>/dev/null
  wait "$TRACER_PID" 2>/dev/null
  TRACER_PID=""
}

HOOK='/pid == 1/ { @ = count(); }'
COMM='{ @[comm] = count(); }'
ROWS=(
  "tracepoint:raw_syscalls:sys_enter $HOOK"
  "tracepoint:raw_syscalls:sys_enter $COMM"
  "rawtracepoint:sys_enter $HOOK"
  "rawtracepoint:sys_enter $COMM"
  "tracepoint:syscalls:sys_enter_openat $COMM"
  "tracepoint:syscalls:sys_enter_write $COMM"
)
# The last two: few syscalls:* tracepoints, which loupe serves from the
# raw tracepoint only from SYSCALL_RAW_MIN_TARGETS on (probes/syscalls.h):
# one that none of dd's calls fire, one that half of them do.
LABELS=(
  "raw_syscalls:sys_enter, hook only"
  "raw_syscalls:sys_enter, @[comm]"
  "rawtracepoint:sys_enter, hook only"
  "rawtracepoint:sys_enter, @[comm]"
  "syscalls:sys_enter_openat, @[comm]"
  "syscalls:sys_enter_write, @[comm]"
)
TOOLS=(loupe-perf loupe)
[ -n "$BPFTRACE" ] && TOOLS+=(bpftrace)
# bpftrace 0.17 has no rawtracepoint probes (it aborts on them)
BPFTRACE_RAWTP=no
[ -n "$BPFTRACE" ] && ( ulimit -c 0; "$BPFTRACE" -l 'rawtracepoint:sys_enter' ) 2>/dev/null |
  grep -q sys_enter && BPFTRACE_RAWTP=yes

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A FILES
for r in $(seq "$RUNS"); do
  time_dd >>"$WORK/untraced"
  for row in "${!ROWS[@]}"; do
    for tool in "${TOOLS[@]}"; do
      # the perf-event column is for the tracepoint only
      if [[ ${ROWS[$row]} == rawtracepoint* ]]; then
        [ "$tool" = loupe-perf ] && continue
        [ "$tool" = bpftrace ] && [ "$BPFTRACE_RAWTP" = no ] && continue
      fi
      time_traced "$tool" "${ROWS[$row]}" >>"$WORK/t.$row.$tool"
      FILES[$row,$tool]=$WORK/t.$row.$tool
    done
  done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# "1.234 s (+56 ns)": the median of column COL (1 wall, 2 CPU) of FILE,
# and what it costs per system call more than BASE.
cell() {
  local f=$1 col=$2 base=$3 m
  [ -n "$f" ] || { echo -; return; }
  m=$(awk -v c="$col" '$c != "-" { print $c }' "$f" | median)
  awk -v m="$m" -v b="$base" -v n="$COUNT" 'BEGIN {
    if (m == "-") { print "-"; exit }
    if (b == "") { printf "%.3f s\n", m; exit }
    printf "%.3f s (%+.0f ns)\n", m, (m - b) * 1e9 / (2 * n) }'
}

# The table of column COL (1 wall, 2 CPU).
table() {
  local col=$1 base
  base=$(awk -v c="$col" '{ print $c }' "$WORK/untraced" | median)
  printf '%-36s %-18s %-18s %-18s\n' "" "loupe, perf event" loupe bpftrace
  printf '%-36s %-18s\n' "untraced" "$(cell "$WORK/untraced" "$col" "")"
  for row in "${!ROWS[@]}"; do
    printf '%-36s %-18s %-18s %-18s\n' "${LABELS[$row]}" \
      "$(cell "${FILES[$row,loupe-perf]:-}" "$col" "$base")" \
      "$(cell "${FILES[$row,loupe]:-}" "$col" "$base")" \
      "$(cell "${FILES[$row,bpftrace]:-}" "$col" "$base")"
  done
}

bversion="no bpftrace"
[ -n "$BPFTRACE" ] && bversion=$("$BPFTRACE" --version)
echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -r), $(nproc) CPUs," \
  "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
echo "$("$LOUPE" --version), $bversion"
echo "load average before: $load_before, after: $load_after"
echo "dd if=/dev/zero of=/dev/null bs=1 count=$COUNT, median of $RUNS runs;" \
  "+N ns: per system call"
echo "hook only: $HOOK"
echo "@[comm]:   $COMM"
echo
echo "wall time"
table 1 | sed 's/ *$//'
echo
echo "CPU time of dd (user + system)"
table 2 | sed 's/ *$//'
