#!/usr/bin/env bash
# Attaching wildcards of many places, side by side with bpftrace when it
# is installed:
#   usdt    the JVM's libjvm.so, its hundreds of USDT probes (hotspot and
#           hotspot_jni providers): usdt:LIBJVM:hotspot*:* { @ = count(); }
#   uprobe  libc's str* functions counted by name:
#           uprobe:LIBC:str* { @[func] = count(); }
#
#   sudo bench/attach.sh [-n RUNS] [usdt|uprobe ...]   (default: both)
#
# Prints, as medians of RUNS runs: probes attached, the time from exec
# until the tracer says it attached, and the time from SIGINT to its exit.
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh
RUNS=5
while getopts n: opt; do
  case $opt in n) RUNS=$OPTARG ;; *) exit 1 ;; esac
done
shift $((OPTIND - 1))
WHICH=("$@")
[ $# -eq 0 ] && WHICH=(usdt uprobe)
LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/attach.sh: needs root" >&2; exit 1; }
# bpftrace makes one program per probe location, over its default limit
export BPFTRACE_MAX_BPF_PROGS=4096 BPFTRACE_MAX_PROBES=4096
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")

one_run() {   # prints "PROBES ATTACH_S DETACH_S"
  local out pid i t0 t1 t2 t3
  out=$(mktemp)
  t0=$(date +%s.%N)
  "$1" -e "$SCRIPT" >"$out" 2>&1 &
  pid=$!
  for i in $(seq 1 6000); do
    grep -qE '^Attach(ed|ing) [0-9]+' "$out" && break
    kill -0 "$pid" 2>/dev/null || { echo "- - - $(grep ERROR "$out" | tail -n 1)"; rm -f "$out"; return; }
    sleep 0.01
  done
  t1=$(date +%s.%N)
  sleep 0.5
  t2=$(date +%s.%N)
  kill -INT "$pid"
  wait "$pid"
  t3=$(date +%s.%N)
  echo "$(grep -oE '[0-9]+ probes' "$out" | head -1 | cut -d' ' -f1)" \
       "$(echo "$t1 - $t0" | bc)" "$(echo "$t3 - $t2" | bc)"
  rm -f "$out"
}

# TITLE SCRIPT: the figures of each tool for SCRIPT
measure() {
  SCRIPT=$2
  echo "$1"
  printf '%-10s %8s %12s %12s\n' tracer probes "attach (s)" "exit (s)"
  for tool in "${TOOLS[@]}"; do
    runs=()
    for _ in $(seq 1 "$RUNS"); do runs+=("$(one_run "$tool")"); done
    if [ "$(printf '%s\n' "${runs[@]}" | cut -d' ' -f1 | head -1)" = - ]; then
      printf '%-10s failed: %s\n' "$(basename "$tool")" "$(printf '%s\n' "${runs[@]}" | head -1 | cut -d' ' -f4-)"
      continue
    fi
    printf '%-10s %8s %12.3f %12.3f\n' "$(basename "$tool")" \
      "$(printf '%s\n' "${runs[@]}" | cut -d' ' -f1 | head -1)" \
      "$(printf '%s\n' "${runs[@]}" | cut -d' ' -f2 | median)" \
      "$(printf '%s\n' "${runs[@]}" | cut -d' ' -f3 | median)"
  done
}

for which in "${WHICH[@]}"; do
  case $which in
  usdt)
    java=$(command -v java) || { echo "usdt: no JVM installed, nothing to measure"; continue; }
    libjvm=$(dirname "$(readlink -f "$java")")/../lib/server/libjvm.so
    libjvm=$(readlink -f "$libjvm")
    [ -f "$libjvm" ] || { echo "usdt: no libjvm.so next to $java"; continue; }
    measure "usdt: $libjvm" "usdt:$libjvm:hotspot*:* { @ = count(); }" ;;
  uprobe)
    libc=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
    measure "uprobe: $libc str*, counted by func" \
      "uprobe:$libc:str* { @[func] = count(); }" ;;
  *) echo "bench/attach.sh: usdt or uprobe, not $which" >&2; exit 1 ;;
  esac
done
echo "(bpftrace prints 'Attaching N probes...' before it attaches: its attach time is a lower bound)"
