#!/usr/bin/env bash
# Benchmarks examples/tetris.bt under loupe and bpftrace, side by side.
#
#   sudo bench/tetris.sh [-n RUNS]
#
# For each tracer it prints
#   - first frame: from exec until the first frame is on stdout (the line
#     "loupe tetris", printed by the interval probe's first redraw right
#     after the cursor-home escape), median of RUNS runs (default 5);
#   - xlated instructions (bytes_xlated / 8) of the interval program (the
#     game: keys, moves, line clearing, drawing) and of the key program
#     (tracepoint:syscalls:sys_enter_write, which runs on every write(2)
#     in the system);
#   - the kernel's run time per tick of the interval program
#     (kernel.bpf_stats_enabled=1 for 3 seconds of play in test mode).
# The tracer under test is $LOUPE (default ./loupe), the reference
# $BPFTRACE (default bpftrace).
set -u
cd "$(dirname "$0")/.." || exit 1

RUNS=5
while getopts n: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS]" >&2; exit 1 ;;
  esac
done

LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
SCRIPT=examples/tetris.bt
[ "$(id -u)" = 0 ] || { echo "bench/tetris.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/tetris.sh: build loupe first (make)" >&2; exit 1; }
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")

WORK=$(mktemp -d /tmp/loupe-bench-tetris.XXXXXX)
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
TRACER_PID="" DRAIN_PID=""
cleanup() {
  sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  [ -n "$TRACER_PID" ] && kill "$TRACER_PID" 2>/dev/null
  [ -n "$DRAIN_PID" ] && kill "$DRAIN_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

# Starts TOOL on the game in test mode with no key reader ($1 = 0) and
# waits for the first frame. Sets TRACER_PID and FRAME_MS (or "-" when no
# frame came within 60 s); stdout keeps being drained.
start_game() {
  local tool=$1 line t0 t1 seen=""
  rm -f "$WORK/fifo" && mkfifo "$WORK/fifo"
  t0=$EPOCHREALTIME
  "$tool" "$SCRIPT" 0 1 >"$WORK/fifo" 2>"$WORK/stderr" </dev/null &
  TRACER_PID=$!
  exec 3<"$WORK/fifo"
  while IFS= read -r -t 60 line <&3; do
    [[ $line == *"loupe tetris"* ]] && { seen=1; break; }
  done
  t1=$EPOCHREALTIME
  cat <&3 >/dev/null &
  DRAIN_PID=$!
  exec 3<&-
  FRAME_MS=-
  [ -n "$seen" ] && FRAME_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
}

stop_game() {
  kill -INT "$TRACER_PID" 2>/dev/null
  wait "$TRACER_PID" 2>/dev/null
  wait "$DRAIN_PID" 2>/dev/null
  TRACER_PID="" DRAIN_PID=""
}

# Prints "interval_insns key_insns ns_per_tick" for the programs the
# tracer holds: the interval probe is the perf_event program, the key probe
# the tracepoint one.
program_figures() {
  local pid=$1 ids id info iv=- key=- ns=-
  ids=$(tracer_prog_ids "$pid")
  for id in $ids; do
    info=$(bpftool prog show id "$id" 2>/dev/null)
    local insns=$(( $(sed -nE 's/.*xlated ([0-9]+)B.*/\1/p' <<<"$info" | grep . || echo 0) / 8 ))
    case $info in
      *": perf_event "*)
        iv=$insns
        ns=$(awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) } }
                  END { if (c) printf "%.0f", t / c; else print "-" }' <<<"$info") ;;
      *": tracepoint "*) key=$insns ;;
    esac
  done
  echo "$iv $key $ns"
}

declare -A FRAME IV KEY NS
for tool in "${TOOLS[@]}"; do
  : >"$WORK/frames"
  for _ in $(seq "$RUNS"); do
    start_game "$tool"
    echo "$FRAME_MS" >>"$WORK/frames"
    stop_game
  done
  FRAME[$tool]=$(grep -vx -e - "$WORK/frames" | median)
  sysctl -qw kernel.bpf_stats_enabled=1
  start_game "$tool"
  sleep 3
  read -r IV[$tool] KEY[$tool] NS[$tool] < <(program_figures "$TRACER_PID")
  stop_game
  sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  if [ "${FRAME[$tool]}" = - ]; then
    echo "($tool: no frame; stderr: $(head -c 300 "$WORK/stderr"))" >&2
  fi
done

L=${TOOLS[0]}
B=${TOOLS[1]:-}
bversion="not installed"
[ -n "$B" ] && bversion=$("$B" --version)
echo "$("$LOUPE" --version), $bversion, $(uname -r), $(nproc) CPUs"
echo "examples/tetris.bt in test mode; first frame: median of $RUNS runs"
printf '%-28s %10s %10s %7s\n' "" loupe bpftrace ratio
row() {
  local label=$1 l=$2 b=${3:--}
  printf '%-28s %10s %10s %7s\n' "$label" "$l" "$b" "$(ratio "$l" "$b")"
}
row "exec to first frame (ms)" "${FRAME[$L]}" "${B:+${FRAME[$B]}}"
row "interval program (insns)" "${IV[$L]}" "${B:+${IV[$B]}}"
row "key program (insns)" "${KEY[$L]}" "${B:+${KEY[$B]}}"
row "interval run time (ns/tick)" "${NS[$L]}" "${B:+${NS[$B]}}"
