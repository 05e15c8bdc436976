#!/usr/bin/env bash
# How compile time grows with a script's length, side by side with bpftrace
# when it is installed.
#
#   bench/compile_scaling.sh [-n RUNS] [-t SECONDS]
#
# For SIZE = 10, 100, 1000 and 10000 lines it writes a script of that many
# lines: one interval probe whose statements alternate a map update with a
# printf of its own format (the work every statement makes a compiler do:
# a map key, a value, a record layout, a format to keep). Each tool
# compiles it without loading anything: `loupe --dry-run FILE` and
# `bpftrace --emit-elf OUT FILE` (0.17's compile-only mode). Figures are
# medians of RUNS runs in milliseconds; a tool that takes longer than
# SECONDS (default 120) on a size shows "-" there and is not tried on
# larger ones. The last column is loupe's time per line in microseconds,
# which stays flat when compile time is linear in the length.
# No root needed: nothing is loaded.
set -u
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh

RUNS=3
LIMIT=120
while getopts n:t: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    t) LIMIT=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-t SECONDS]" >&2; exit 1 ;;
  esac
done
LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ -x "$LOUPE" ] || { echo "bench/compile_scaling.sh: build loupe first (make)" >&2; exit 1; }
HAVE_BPFTRACE=false
command -v "$BPFTRACE" >/dev/null && HAVE_BPFTRACE=true
WORK=$(mktemp -d /tmp/loupe-scaling.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# SIZE lines: the probe's first and last line, and SIZE - 2 statements.
make_script() {
  awk -v n="$1" 'BEGIN {
    print "interval:s:1 {"
    for (i = 1; i <= n - 2; i++)
      if (i % 2) printf "  @m%d[%d] = %d;\n", i % 16, i, i
      else printf "  printf(\"line %d: %%d\\n\", %d);\n", i, i
    print "}"
  }'
}

# Milliseconds one command takes, or "-" if it fails or outlasts LIMIT.
time_ms() {
  local t0 t1
  t0=$(date +%s%N)
  timeout "$LIMIT" "$@" >/dev/null 2>&1 || { echo -; return; }
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}

# The median of RUNS timings, "-" if any run failed.
median_ms() {
  local all=() t
  for _ in $(seq "$RUNS"); do
    t=$(time_ms "$@")
    [ "$t" = - ] && { echo -; return; }
    all+=("$t")
  done
  printf '%s\n' "${all[@]}" | median
}

echo "$("$LOUPE" --version 2>&1 | head -n 1)$($HAVE_BPFTRACE && echo ", $("$BPFTRACE" --version 2>&1 | head -n 1)"), $(uname -r), $(nproc) CPUs"
echo "compile only, median of $RUNS (ms); loupe's time per line (us)"
printf '%8s %10s %10s %8s %10s\n' lines "loupe ms" "bpft ms" ratio "us/line"
bpft_gave_up=false
for size in 10 100 1000 10000; do
  make_script "$size" >"$WORK/s$size.bt"
  l=$(median_ms "$LOUPE" --dry-run "$WORK/s$size.bt")
  b=-
  if $HAVE_BPFTRACE && ! $bpft_gave_up; then
    b=$(median_ms "$BPFTRACE" --emit-elf "$WORK/out.o" "$WORK/s$size.bt")
    [ "$b" = - ] && bpft_gave_up=true
  fi
  per=$(awk -v ms="$l" -v n="$size" 'BEGIN { if (ms != "-") printf "%.1f", ms * 1000 / n; else print "-" }')
  printf '%8s %10s %10s %8s %10s\n' "$size" "$l" "$b" "$(ratio "$l" "$b")" "$per"
done
