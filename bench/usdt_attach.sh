#!/usr/bin/env bash
# Attaching to a binary with hundreds of USDT probes by wildcard: the
# JVM's libjvm.so (hotspot and hotspot_jni providers), side by side with
# bpftrace when it is installed.
#
#   sudo bench/usdt_attach.sh [-n RUNS]
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
LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/usdt_attach.sh: needs root" >&2; exit 1; }
java=$(command -v java) || { echo "no JVM installed: nothing to measure"; exit 0; }
libjvm=$(dirname "$(readlink -f "$java")")/../lib/server/libjvm.so
libjvm=$(readlink -f "$libjvm")
[ -f "$libjvm" ] || { echo "no libjvm.so next to $java"; exit 0; }
SCRIPT="usdt:$libjvm:hotspot*:* { @ = count(); }"
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

echo "$libjvm"
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
echo "(bpftrace prints 'Attaching N probes...' before it attaches: its attach time is a lower bound)"
