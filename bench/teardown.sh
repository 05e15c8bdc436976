#!/usr/bin/env bash
# How long a tracer takes to exit after Ctrl-C when it has many probes:
# `tracepoint:syscalls:sys_enter_*` (360 syscall tracepoints), side
# by side with bpftrace when it is installed.
#
#   sudo bench/teardown.sh [-n RUNS]
#
# The clock starts at SIGINT (sent once the tracer says it attached) and
# stops when the process has exited; figures are medians of RUNS runs. The
# kernel makes each detached tracepoint wait for an RCU grace period under
# one mutex, so most of this time is the kernel's. After each run the
# script checks that no program the tracer loaded is still loaded.
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

RUNS=3
while getopts n: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS]" >&2; exit 1 ;;
  esac
done
LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/teardown.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/teardown.sh: build loupe first (make)" >&2; exit 1; }
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")
SCRIPT='tracepoint:syscalls:sys_enter_* { @ = count(); }'

# One run: prints "SECONDS PROBES LEFT" (LEFT: programs still loaded).
one_run() {
  local out pid ids i t0 t1 left=0 id
  out=$(mktemp)
  "$1" -e "$SCRIPT" >"$out" 2>&1 &
  pid=$!
  for i in $(seq 1 600); do
    grep -qE '^Attach(ed|ing) [0-9]+' "$out" && break
    sleep 0.05
  done
  # bpftrace prints "Attaching N probes" before it attaches, and loses a
  # SIGINT that comes while it attaches: wait for its N perf events.
  local want
  want=$(grep -oE '^Attaching [0-9]+' "$out" | grep -oE '[0-9]+')
  for i in $(seq 1 1200); do
    [ -z "$want" ] && break
    [ "$(ls -l /proc/"$pid"/fd 2>/dev/null | grep -c 'perf_event\]')" -ge "$want" ] && break
    sleep 0.05
  done
  sleep 0.5
  ids=$(tracer_prog_ids "$pid")
  t0=$(date +%s.%N)
  kill -INT "$pid"
  wait "$pid"
  t1=$(date +%s.%N)
  for id in $ids; do
    bpftool prog show id "$id" >/dev/null 2>&1 && left=$((left + 1))
  done
  echo "$(echo "$t1 - $t0" | bc) $(grep -oE '[0-9]+ probes' "$out" | head -1 | cut -d' ' -f1) $left"
  rm -f "$out"
}

printf '%-10s %8s %12s %14s\n' tracer probes "exit (s)" "left loaded"
declare -A med
for tool in "${TOOLS[@]}"; do
  runs=()
  for _ in $(seq 1 "$RUNS"); do runs+=("$(one_run "$tool")"); done
  m=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f1 | median)
  med[$tool]=$m
  probes=$(printf '%s\n' "${runs[@]}" | cut -d' ' -f2 | head -1)
  left=$(printf '%s\n' "${runs[@]}" | awk '{ s += $3 } END { print s }')
  printf '%-10s %8s %12.2f %14s\n' "$(basename "$tool")" "$probes" "$m" "$left"
done
if [ ${#TOOLS[@]} = 2 ]; then
  echo "ratio (bpftrace / loupe): $(ratio "${med[$LOUPE]}" "${med[$BPFTRACE]}")"
fi
