#!/usr/bin/env bash
# What --metrics costs.
#
#   sudo bench/metrics.sh [-n SCRAPES] [-r ROUNDS]
#
# 1. A scrape of 10,000 series: a map of 10,000 keys filled by a program
#    of 10,000 getppid calls, then SCRAPES scrapes one after the other:
#    the wall time of each (curl's time_total) and loupe's CPU time for
#    each (its on-CPU time from /proc/PID/schedstat), medians.
# 2. The cost per event with and without --metrics (and a scrape a
#    second): `@[comm] = count()` on raw_syscalls:sys_enter while a dd
#    makes system calls, the program's xlated instructions and the
#    kernel's run_time_ns / run_cnt (kernel.bpf_stats_enabled=1) over the
#    dd, for each run; medians of 3 runs each, alternating.
# 3. Events a second: tests/metrics/callgen.c's tight loop of getppid
#    calls (ROUNDS of 2,000,000), its rate untraced, counted by loupe on
#    syscalls:sys_enter_getppid filtered to its pid, the same with
#    --metrics and 20 scrapers reading /metrics every 0.2 s (as
#    tests/metrics/workload.sh does, with tests/metrics/scrapers.py) and
#    without a pause, on
#    raw_syscalls:sys_enter, and a loop of calls to a function under a
#    uprobe (200,000 a round: a uprobe traps); medians of the rounds.
set -u
cd "$(dirname "$0")/.." || exit 1
SCRAPES=20
ROUNDS=5
while getopts n:r: opt; do
  case $opt in
    n) SCRAPES=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    *) echo "usage: $0 [-n SCRAPES] [-r ROUNDS]" >&2; exit 1 ;;
  esac
done
LOUPE=${LOUPE:-./loupe}
[ "$(id -u)" = 0 ] || { echo "bench/metrics.sh: needs root" >&2; exit 1; }
command -v curl >/dev/null || { echo "bench/metrics.sh: needs curl" >&2; exit 1; }
. bench/lib.sh
WORK=$(mktemp -d /tmp/loupe-bench-metrics.XXXXXX)
PIDS=()
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
cleanup() {
  for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  rm -rf "$WORK"
}
trap cleanup EXIT
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
cpu_ns() { awk '{ print $1 }' "/proc/$1/schedstat"; }   # on-CPU time, ns

cat >"$WORK/keygen.c" <<'C'
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) {
  for (long i = atol(argv[1]); i > 0; i--) getppid();
  return 0;
}
C
gcc -O1 -o "$WORK/keygen" "$WORK/keygen.c" || exit 1

echo "$("$LOUPE" --version), $(uname -r), $(nproc) CPUs, $(date -u '+%F %H:%M UTC')"
port=$(free_port)
"$LOUPE" -q --metrics "127.0.0.1:$port" -e '
config = { max_map_keys = 20000 }
tracepoint:syscalls:sys_enter_getppid /comm == "keygen"/ { @series[@n] = @n; @n = @n + 1; }' \
  >/dev/null 2>"$WORK/err" &
pid=$!
PIDS+=("$pid")
until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/metrics"; do
  kill -0 "$pid" 2>/dev/null || { cat "$WORK/err"; exit 1; }
  sleep 0.1
done
"$WORK/keygen" 10000
series=$(curl -sf "http://127.0.0.1:$port/metrics" | grep -c '^loupe_series{')
: >"$WORK/wall"; : >"$WORK/cpu"
for _ in $(seq "$SCRAPES"); do
  t0=$(cpu_ns "$pid")
  curl -sf -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$WORK/wall"
  t1=$(cpu_ns "$pid")
  awk -v d=$((t1 - t0)) 'BEGIN { printf "%.2f\n", d / 1e6 }' >>"$WORK/cpu"
done
kill -INT "$pid"; wait "$pid"
echo
echo "a scrape of $series series, $SCRAPES scrapes:"
printf '  wall time  median %s ms\n' "$(awk '{ print $1 * 1000 }' "$WORK/wall" | median)"
printf "  loupe's CPU  median %s ms\n" "$(median <"$WORK/cpu")"

# the cost per event, with and without --metrics
prog_figures() {   # pid: "insns run_time_ns run_cnt" of its programs
  local ids id insns=0 ns=0 cnt=0 info
  ids=$(tracer_prog_ids "$1")
  for id in $ids; do
    info=$(bpftool prog show id "$id" 2>/dev/null)
    insns=$((insns + $(sed -nE 's/.*xlated ([0-9]+)B.*/\1/p' <<<"$info") / 8))
    ns=$((ns + $(sed -nE 's/.*run_time_ns ([0-9]+).*/\1/p' <<<"$info" | grep . || echo 0)))
    cnt=$((cnt + $(sed -nE 's/.*run_cnt ([0-9]+).*/\1/p' <<<"$info" | grep . || echo 0)))
  done
  echo "$insns $ns $cnt"
}
one_run() {   # $1: extra loupe arguments; prints "insns ns_per_run"
  local port; port=$(free_port)
  "$LOUPE" -q $1 -e 'tracepoint:raw_syscalls:sys_enter { @[comm] = count(); }' \
    >/dev/null 2>&1 &
  local pid=$! scraper=""
  PIDS+=("$pid")
  for _ in $(seq 100); do [ -n "$(tracer_prog_ids "$pid")" ] && break; sleep 0.05; done
  sleep 0.3
  if [ -n "$1" ]; then
    ( while :; do curl -sf -o /dev/null "http://127.0.0.1:${1##*:}/metrics"; sleep 1; done ) &
    scraper=$!
    PIDS+=("$scraper")
  fi
  read -r insns ns0 c0 < <(prog_figures "$pid")
  dd if=/dev/zero of=/dev/null bs=1 count=300000 status=none
  read -r insns ns1 c1 < <(prog_figures "$pid")
  [ -n "$scraper" ] && kill "$scraper" && wait "$scraper" 2>/dev/null
  kill -INT "$pid"; wait "$pid"
  awk -v i="$insns" -v n=$((ns1 - ns0)) -v c=$((c1 - c0)) 'BEGIN { printf "%d %.1f\n", i, c ? n / c : 0 }'
}
sysctl -qw kernel.bpf_stats_enabled=1
: >"$WORK/plain"; : >"$WORK/metrics"
for _ in 1 2 3; do
  one_run "" >>"$WORK/plain"
  p=$(free_port)
  one_run "--metrics 127.0.0.1:$p" >>"$WORK/metrics"
done
sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
echo
echo "per event, @[comm] = count() on raw_syscalls:sys_enter under dd (medians of 3):"
printf '  %-22s %6s insns  %8s ns per run\n' "without --metrics" \
  "$(awk '{ print $1 }' "$WORK/plain" | median)" "$(awk '{ print $2 }' "$WORK/plain" | median)"
printf '  %-22s %6s insns  %8s ns per run\n' "--metrics, scraped 1/s" \
  "$(awk '{ print $1 }' "$WORK/metrics" | median)" "$(awk '{ print $2 }' "$WORK/metrics" | median)"

# events a second: callgen's loops, each round its own line "N RATE"
gcc -O2 -o "$WORK/callgen" tests/metrics/callgen.c || exit 1
rates() {   # $1: -f or "", $2: calls a round, $3: script ("" untraced,
            # PID for callgen's pid), $4: 20 scrapers pausing $4 s
  local args=() i gen pid="" port scrapers=()
  for i in $(seq "$ROUNDS"); do args+=("$2"); done
  "$WORK/callgen" $1 "${args[@]}" >"$WORK/gen.out" &
  gen=$!
  PIDS+=("$gen")
  # SIGUSR1 caught (SigCgt bit 0x200) before the first is sent
  until (( 0x$(awk '/^SigCgt:/ { print $2 }' "/proc/$gen/status") & 0x200 )); do
    sleep 0.01
  done
  if [ -n "$3" ]; then
    port=$(free_port)
    "$LOUPE" -q --metrics "127.0.0.1:$port" -e "${3//PID/$gen}" >"$WORK/rate.out" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    until curl -sf -o /dev/null --max-time 2 "http://127.0.0.1:$port/metrics"; do
      kill -0 "$pid" 2>/dev/null || { cat "$WORK/rate.out" >&2; return 1; }
      sleep 0.1
    done
    if [ -n "${4:-}" ]; then   # 20 scrapers, each pausing $4 s between scrapes
      rm -rf "$WORK/scrapes" && mkdir "$WORK/scrapes"
      python3 tests/metrics/scrapers.py "http://127.0.0.1:$port/metrics" 20 "$4" \
        "$WORK/scrapes" "$WORK/scrapes/stop" >/dev/null &
      scrapers+=($!)
      PIDS+=("${scrapers[@]}")
    fi
  fi
  for i in $(seq "$ROUNDS"); do
    kill -USR1 "$gen"
    until [ "$(grep -c . "$WORK/gen.out")" -ge "$i" ]; do sleep 0.05; done
  done
  [ -n "${scrapers[*]}" ] && touch "$WORK/scrapes/stop" && wait "${scrapers[@]}"
  kill "$gen"; wait "$gen" 2>/dev/null
  if [ -n "$pid" ]; then
    kill -INT "$pid"; wait "$pid"
    # the count at exit is every call made while it ran
    local got; got=$(sed -n 's/^@: //p' "$WORK/rate.out")
    [ "$got" = $(( $2 * ROUNDS )) ] || echo "  (loupe counted $got of $(( $2 * ROUNDS )))" >&2
  fi
  awk '{ print $2 }' "$WORK/gen.out" | median
}
GETPPID='tracepoint:syscalls:sys_enter_getppid /pid == PID/ { @ = count(); }'
RAW='tracepoint:raw_syscalls:sys_enter /pid == PID/ { @ = count(); }'
echo
echo "events a second, one process's tight loop (medians of $ROUNDS rounds):"
printf '  %-44s %10s\n' "getppid, untraced" "$(rates "" 2000000 "")"
printf '  %-44s %10s\n' "sys_enter_getppid /pid/ count()" "$(rates "" 2000000 "$GETPPID")"
printf '  %-44s %10s\n' "the same, --metrics, 20 scrapers every 0.2 s" "$(rates "" 2000000 "$GETPPID" 0.2)"
printf '  %-44s %10s\n' "the same, 20 scrapers without a pause" "$(rates "" 2000000 "$GETPPID" 0)"
printf '  %-44s %10s\n' "raw_syscalls:sys_enter /pid/ count()" "$(rates "" 2000000 "$RAW" 2>/dev/null)"
printf '  %-44s %10s\n' "a function call, untraced" "$(rates -f 200000 "")"
printf '  %-44s %10s\n' "uprobe on the function /pid/ count()" \
  "$(rates -f 200000 "uprobe:$WORK/callgen:event /pid == PID/ { @ = count(); }")"
