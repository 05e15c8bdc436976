#!/bin/bash
# The printf row of the floor (issue 28): builds bench/floor_printf/ (the
# hand-written printf3.bpf.c five ways with clang -O2 -g -target bpf, its
# libbpf loader, a prog-info reader and the openat generator) and measures
# it against loupe and bpftrace, alternating run by run. Needs root.
#
#   sudo bench/floor_printf.sh [-n RUNS] [-t RUNS] [-e EVENTS] [-i IMPLS] [-o DIR]
#
# -n: RUNS (default 7) rounds, each running every implementation once
# alone, order rotating. -t: RUNS (default 0) of the paired measurement:
# floor, floor-output, floor-wide, floor-asloupe and loupe (and
# loupe-before) attached at once, attach order rotating (best a multiple
# of 5, or 6). EVENTS (default
# 200000) openat calls per run. IMPLS: a comma list starting with floor
# (default floor,floor-output,floor-wide,floor-asloupe,floor-wake,loupe,
# bpftrace); bench/floor_printf/run.py says what each is.
# LOUPE (default ./loupe) and BPFTRACE (default /usr/bin/bpftrace) pick the
# tracers; LOUPE_BEFORE, an earlier loupe binary, adds the implementation
# loupe-before (before and after in one run: put it in IMPLS, or by default
# after loupe); BUILD (default /tmp/floor-printf-build) gets vmlinux.h, the
# binaries, the output of runs whose check failed (logs/), results.json
# and listings/ (xlated dumps, loupe -d, objdump; -o DIR puts them there).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-/tmp/floor-printf-build}
LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-/usr/bin/bpftrace}
RUNS=7 TOGETHER=0 EVENTS=200000 DUMP=
IMPLS=floor,floor-output,floor-wide,floor-asloupe,floor-wake,loupe${LOUPE_BEFORE:+,loupe-before},bpftrace
while getopts n:t:e:i:o: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    t) TOGETHER=$OPTARG ;;
    e) EVENTS=$OPTARG ;;
    i) IMPLS=$OPTARG ;;
    o) DUMP=$OPTARG ;;
    *) sed -n '2,22s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "floor_printf.sh: needs root" >&2; exit 1; }
SRC=$HERE/floor_printf
mkdir -p "$BUILD"
[ -s "$BUILD/vmlinux.h" ] ||
  bpftool btf dump file /sys/kernel/btf/vmlinux format c > "$BUILD/vmlinux.h"
bpfcc() { clang -O2 -g -target bpf -I"$BUILD" -c "$SRC/printf3.bpf.c" "$@"; }
bpfcc -o "$BUILD/printf3.bpf.o"
bpfcc -DUSE_OUTPUT -o "$BUILD/printf3_output.bpf.o"
bpfcc -DWIDE -o "$BUILD/printf3_wide.bpf.o"
bpfcc -DUSE_OUTPUT -DWIDE -DWAKE_GLOBAL -o "$BUILD/printf3_asloupe.bpf.o"
bpfcc -DWAKE_FLAGS=0 -o "$BUILD/printf3_wake.bpf.o"
cc -O2 -Wall -Wextra -o "$BUILD/floorprintf" "$SRC/floorprintf.c" -lbpf
cc -O2 -Wall -Wextra -o "$BUILD/proginfo" "$SRC/proginfo.c" -lbpf
cc -O2 -Wall -Wextra -static -o "$BUILD/opengen" "$SRC/opengen.c"

# run.py stops every process it started and restores
# kernel.bpf_stats_enabled in its own finally; this trap covers the shell
# being stopped while it runs: it passes the signal on, by pid, and puts the
# sysctl back in case run.py had no time to.
STATS=$(cat /proc/sys/kernel/bpf_stats_enabled)
PY=
cleanup() {
  if [ -n "$PY" ] && kill -0 "$PY" 2>/dev/null; then
    kill -TERM "$PY" 2>/dev/null || true
    wait "$PY" 2>/dev/null || true
  fi
  echo "$STATS" > /proc/sys/kernel/bpf_stats_enabled
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
python3 "$SRC/run.py" --build "$BUILD" --runs "$RUNS" --together "$TOGETHER" --events "$EVENTS" \
  --impls "$IMPLS" \
  --together-impls "floor,floor-output,floor-wide,floor-asloupe,loupe${LOUPE_BEFORE:+,loupe-before}" \
  --loupe "$LOUPE" --bpftrace "$BPFTRACE" \
  ${LOUPE_BEFORE:+--loupe-before "$LOUPE_BEFORE"} \
  --dump "${DUMP:-$BUILD/listings}" --json "$BUILD/results.json" &
PY=$!
wait "$PY"
