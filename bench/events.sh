#!/usr/bin/env bash
# How fast printf events get from the probes to the output, for loupe and
# bpftrace side by side (when it is installed).
#
#   sudo bench/events.sh [-n EVENTS] [-r RUNS]
#
# The tracer runs `dd bs=1 count=EVENTS` as its -c command and prints one
# line per 1-byte write(2) of it into a file (a reader that keeps up).
# Printed per tracer, medians of RUNS runs: the wall time from start to
# exit, the lines delivered, the events it reported lost ("Lost N events"),
# and the events delivered per second of that time. The default ring buffer
# size of each tracer is used.
set -u
cd "$(dirname "$0")/.." || exit 1

EVENTS=200000
RUNS=3
while getopts n:r: opt; do
  case $opt in
    n) EVENTS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    *) echo "usage: $0 [-n EVENTS] [-r RUNS]" >&2; exit 1 ;;
  esac
done

LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/events.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/events.sh: build loupe first (make)" >&2; exit 1; }
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")
. "$(dirname "$0")/lib.sh"

WORK=$(mktemp -d /tmp/loupe-bench-events.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
DD=$(command -v dd)
SCRIPT='tracepoint:syscalls:sys_enter_write /pid == cpid/ { printf("%d\n", args->count); }'

printf '%-10s %8s %10s %10s %12s\n' tracer seconds delivered lost "events/s"
for tool in "${TOOLS[@]}"; do
  : >"$WORK/runs"
  for _ in $(seq "$RUNS"); do
    start=$(date +%s%N)
    "$tool" -e "$SCRIPT" -c "$DD if=/dev/zero of=/dev/null bs=1 count=$EVENTS status=none" \
      >"$WORK/out" 2>/dev/null
    end=$(date +%s%N)
    awk -v ns=$((end - start)) '
      /^1$/ { got++ } /^Lost [0-9]+ events$/ { lost += $2 }
      END { s = ns / 1e9; printf "%.2f %d %d %.0f\n", s, got, lost, got / s }' \
      "$WORK/out" >>"$WORK/runs"
  done
  figures=()
  for col in 1 2 3 4; do
    figures+=("$(awk -v c=$col '{ print $c }' "$WORK/runs" | median)")
  done
  printf '%-10s %8s %10s %10s %12s\n' "$(basename "$tool")" "${figures[@]}"
done
