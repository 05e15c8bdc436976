#!/usr/bin/env bash
# Benchmarks examples/tetris.bt under loupe and bpftrace, side by side.
#
#   sudo bench/tetris.sh [-n RUNS] [-w WINDOWS]
#
# For each tracer it prints
#   - start-up: from exec until the first byte of BEGIN's output is on
#     stdout (both tracers print it once every probe is attached), median
#     of RUNS runs: the tracer's own part of the wait for the first frame;
#   - first frame: from exec until the first frame is on stdout (the line
#     "loupe tetris", printed by the interval probe's first redraw right
#     after the cursor-home escape), median of RUNS runs (default 5);
#   - xlated instructions (bytes_xlated / 8) of the interval program (the
#     game: keys, moves, line clearing, drawing) and of the key program
#     (tracepoint:syscalls:sys_enter_write, which runs on every write(2)
#     in the system);
#   - the kernel's run time per tick of the interval program
#     (kernel.bpf_stats_enabled=1): both tracers' games run at once, in
#     test mode, and WINDOWS windows of 3 seconds (-w, default 5) each
#     give both tracers' run time over run count for it; printed: the
#     median of the windows for each, the median of the windows' ratios,
#     and their range.
#   - the kernel verifier's work for the interval program: instructions
#     processed and states kept (the statistics both tracers print with
#     -v); loupe also reports how long the kernel took.
# The tracer under test is $LOUPE (default ./loupe), the reference
# $BPFTRACE (default bpftrace).
#
# -s SCRIPT -m TEXT benchmark another Tetris, whose frames contain TEXT:
# the classic port (github.com/mmisono/bpftrace-tetris, tetris.bt, with
# its kprobe:pty_write probe changed to tracepoint:syscalls:sys_enter_write
# on a kernel without kprobes) with -m "Move:". It gets no arguments.
set -u
cd "$(dirname "$0")/.." || exit 1

RUNS=5
WINDOWS=5
SCRIPT=examples/tetris.bt
MARKER="loupe tetris"
while getopts n:w:s:m: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    w) WINDOWS=$OPTARG ;;
    s) SCRIPT=$OPTARG ;;
    m) MARKER=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-w WINDOWS] [-s SCRIPT -m TEXT]" >&2; exit 1 ;;
  esac
done
ARGS=()
[ "$SCRIPT" = examples/tetris.bt ] && ARGS=(0 1)   # test mode, no key reader

LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ -r "$SCRIPT" ] || { echo "bench/tetris.sh: no script $SCRIPT" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/tetris.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/tetris.sh: build loupe first (make)" >&2; exit 1; }
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")

WORK=$(mktemp -d /tmp/loupe-bench-tetris.XXXXXX)
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
TRACER_PID="" DRAIN_PID="" PLAYING=()
cleanup() {
  sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  [ -n "$TRACER_PID" ] && kill "$TRACER_PID" 2>/dev/null
  [ -n "$DRAIN_PID" ] && kill "$DRAIN_PID" 2>/dev/null
  local p
  for p in "${PLAYING[@]}"; do kill -INT "$p" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

# Starts TOOL on the game in test mode with no key reader ($1 = 0) and
# waits for the first frame. Sets TRACER_PID, BEGIN_MS and FRAME_MS (or
# "-" when no output or frame came within 60 s); stdout keeps being
# drained.
start_game() {
  local tool=$1 line t0 t1 tb="" seen="" c
  rm -f "$WORK/fifo" && mkfifo "$WORK/fifo"
  t0=$EPOCHREALTIME
  "$tool" "$SCRIPT" "${ARGS[@]}" >"$WORK/fifo" 2>"$WORK/stderr" </dev/null &
  TRACER_PID=$!
  exec 3<"$WORK/fifo"
  IFS= read -r -N 1 -t 60 c <&3 && tb=$EPOCHREALTIME
  while IFS= read -r -t 60 line <&3; do
    [[ $line == *"$MARKER"* ]] && { seen=1; break; }
  done
  t1=$EPOCHREALTIME
  cat <&3 >/dev/null &
  DRAIN_PID=$!
  exec 3<&-
  FRAME_MS=- BEGIN_MS=-
  [ -n "$seen" ] && FRAME_MS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
  [ -n "$tb" ] && BEGIN_MS=$(awk -v a="$t0" -v b="$tb" 'BEGIN { printf "%.1f", (b - a) * 1000 }')
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

# Prints "run_time_ns run_cnt" of the interval program (the perf_event
# one) the tracer PID holds, "- -" when it has none (yet); bpftool is
# asked again when it fails (a loaded machine).
interval_stats() {
  local try out
  for try in 1 2 3; do
    out=$(interval_stats_once "$1")
    [ "$out" != "- -" ] && break
    sleep 0.05
  done
  echo "$out"
}
interval_stats_once() {
  local id info
  for id in $(tracer_prog_ids "$1"); do
    info=$(bpftool prog show id "$id" 2>/dev/null)
    case $info in
      *": perf_event "*)
        awk '{ for (i = 1; i < NF; i++) { if ($i == "run_time_ns") t = $(i+1); if ($i == "run_cnt") c = $(i+1) } }
             END { print (t == "" ? "-" : t), (c == "" ? "-" : c) }' <<<"$info"
        return ;;
    esac
  done
  echo "- -"
}

# Prints "processed states ms" for the interval program: the verifier's
# statistics from a run with -v, stopped once the first frame is out (ms,
# the kernel's verification time, only from loupe).
verifier_figures() {
  local tool=$1 out=$WORK/verifier line
  stdbuf -oL "$tool" -v "$SCRIPT" "${ARGS[@]}" >"$out" 2>&1 </dev/null &
  local pid=$! waited=0
  until grep -q -- "$MARKER" "$out" 2>/dev/null || [ $waited -ge 600 ]; do
    sleep 0.1; waited=$((waited + 1))
  done
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  local sums ms
  sums=$(verifier_sums '^interval' <"$out")
  ms=$(awk '/^verifier: interval/ { want = 1; next }
            want && /verification time/ { printf "%.0f", $3 / 1000; exit }' "$out")
  echo "$sums ${ms:--}"
}

declare -A BEGUN FRAME IV KEY NS RANGE VP VS VMS
for tool in "${TOOLS[@]}"; do
  : >"$WORK/frames"; : >"$WORK/begun"
  for _ in $(seq "$RUNS"); do
    start_game "$tool"
    echo "$FRAME_MS" >>"$WORK/frames"
    echo "$BEGIN_MS" >>"$WORK/begun"
    stop_game
  done
  FRAME[$tool]=$(grep -vx -e - "$WORK/frames" | median)
  BEGUN[$tool]=$(grep -vx -e - "$WORK/begun" | median)
  read -r VP[$tool] VS[$tool] VMS[$tool] < <(verifier_figures "$tool")
  start_game "$tool"
  read -r IV[$tool] KEY[$tool] _ < <(program_figures "$TRACER_PID")
  stop_game
  if [ "${FRAME[$tool]}" = - ]; then
    echo "($tool: no frame; stderr: $(head -c 300 "$WORK/stderr"))" >&2
  fi
done

# The run time per tick: every tracer's game at once, so that each window
# sees the same machine; the output goes to /dev/null.
sysctl -qw kernel.bpf_stats_enabled=1
for tool in "${TOOLS[@]}"; do
  "$tool" "$SCRIPT" "${ARGS[@]}" >/dev/null 2>"$WORK/stderr.play" </dev/null &
  PLAYING+=("$!")
done
for i in "${!TOOLS[@]}"; do   # until each interval program has run
  for _ in $(seq 600); do
    read -r _ cnt < <(interval_stats "${PLAYING[$i]}")
    [ "$cnt" != - ] && [ "$cnt" -gt 0 ] && break
    sleep 0.1
  done
done
declare -A TICKS
: >"$WORK/ratios"
for _ in $(seq "$WINDOWS"); do
  declare -A T0 C0
  for i in "${!TOOLS[@]}"; do
    read -r T0[$i] C0[$i] < <(interval_stats "${PLAYING[$i]}")
  done
  sleep 3
  w=()
  for i in "${!TOOLS[@]}"; do
    read -r t c < <(interval_stats "${PLAYING[$i]}")
    w[$i]=$(awk -v t0="${T0[$i]}" -v c0="${C0[$i]}" -v t="$t" -v c="$c" \
              'BEGIN { if (c > c0) printf "%.0f", (t - t0) / (c - c0); else print "-" }')
    TICKS[$i]+="${w[$i]} "
  done
  [ "${#TOOLS[@]}" -gt 1 ] && awk -v a="${w[0]}" -v b="${w[1]}" \
    'BEGIN { if (a != "-" && b > 0) printf "%.3f\n", a / b }' >>"$WORK/ratios"
done
for p in "${PLAYING[@]}"; do kill -INT "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
PLAYING=()
sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
for i in "${!TOOLS[@]}"; do
  NS[${TOOLS[$i]}]=$(tr ' ' '\n' <<<"${TICKS[$i]}" | grep -vx -e - -e '' | median)
  RANGE[${TOOLS[$i]}]=$(tr ' ' '\n' <<<"${TICKS[$i]}" | grep -vx -e - -e '' | sort -g |
                        awk 'NR == 1 { lo = $1 } { hi = $1 } END { print lo "-" hi }')
done

L=${TOOLS[0]}
B=${TOOLS[1]:-}
bversion="not installed"
[ -n "$B" ] && bversion=$("$B" --version)
echo "$("$LOUPE" --version), $bversion, $(uname -r), $(nproc) CPUs"
echo "$SCRIPT${ARGS[*]:+ ${ARGS[*]}}; start-up and first frame: median of $RUNS runs;" \
     "run time per tick: median of $WINDOWS windows of 3 s, both games at once"
printf '%-28s %10s %10s %7s\n' "" loupe bpftrace ratio
row() {
  local label=$1 l=$2 b=${3:--}
  printf '%-28s %10s %10s %7s\n' "$label" "$l" "$b" "$(ratio "$l" "$b")"
}
row "exec to BEGIN output (ms)" "${BEGUN[$L]}" "${B:+${BEGUN[$B]}}"
row "exec to first frame (ms)" "${FRAME[$L]}" "${B:+${FRAME[$B]}}"
row "interval program (insns)" "${IV[$L]}" "${B:+${IV[$B]}}"
row "key program (insns)" "${KEY[$L]}" "${B:+${KEY[$B]}}"
row "interval run time (ns/tick)" "${NS[$L]}" "${B:+${NS[$B]}}"
printf '%-28s %10s %10s %7s\n' "  windows min-max, l/b" "${RANGE[$L]}" "${B:+${RANGE[$B]}}" \
  "$(median <"$WORK/ratios" | awk '$1 != "-" { printf "%.2f", $1 }')"
row "verifier: insns processed" "${VP[$L]}" "${B:+${VP[$B]}}"
row "verifier: states" "${VS[$L]}" "${B:+${VS[$B]}}"
row "verifier: time (ms)" "${VMS[$L]}" -
