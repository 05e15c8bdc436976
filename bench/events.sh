#!/usr/bin/env bash
# How fast printf events get from the probes to the output, for loupe and
# bpftrace side by side (when it is installed).
#
#   sudo bench/events.sh [-n EVENTS] [-r RUNS] [-p "PRODUCERS..."]
#
# The tracer's -c command runs PRODUCERS copies of dd at once (each list
# entry is one configuration; default "1 2 4"), which share EVENTS
# 1-byte write(2) calls between them (dd bs=1); the tracer prints one line
# per write into a file (a reader that keeps up). The dd copy has a name
# of its own, which the script's filter matches (comm ==), so no other
# process's writes count. Printed per tracer and configuration, medians of
# RUNS runs: the seconds from the start of the first producer to the
# last line written (the tracer's start-up and exit left out, its
# draining counted), the lines delivered, the
# events it reported lost ("Lost N events"), and delivered events per
# second of that time; and, of the worst run, the events neither delivered
# nor reported lost (EVENTS - delivered - lost: should be 0). Then, per tracer, the delivered-without-loss rate:
# the highest of those medians among the configurations where no run lost
# an event. More producers make events faster, until the CPUs are full.
# The default ring buffer size of each tracer is used.
set -u
cd "$(dirname "$0")/.." || exit 1

EVENTS=200000
RUNS=3
PRODUCERS="1 2 4"
while getopts n:r:p: opt; do
  case $opt in
    n) EVENTS=$OPTARG ;;
    r) RUNS=$OPTARG ;;
    p) PRODUCERS=$OPTARG ;;
    *) echo "usage: $0 [-n EVENTS] [-r RUNS] [-p PRODUCERS]" >&2; exit 1 ;;
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
NAME=evbench-dd
cp "$(command -v dd)" "$WORK/$NAME"
SCRIPT="tracepoint:syscalls:sys_enter_write /comm == \"$NAME\"/ { printf(\"%d\\n\", args->count); }"

# work.sh P: P producers sharing EVENTS writes; notes when they start.
{
  echo 'date +%s%N >"$(dirname "$0")/start"'
  echo "each=\$(($EVENTS / \$1)); i=0"
  echo "while [ \$i -lt \$1 ]; do"
  echo "  $WORK/$NAME if=/dev/zero of=/dev/null bs=1 count=\$each status=none &"
  echo '  i=$((i + 1))'
  echo 'done'
  echo 'wait'
} >"$WORK/work.sh"

echo "$($LOUPE --version), $($BPFTRACE --version 2>/dev/null || echo 'no bpftrace'), $(uname -r), $(nproc) CPUs"
echo "printf events, $EVENTS writes shared by P producers (medians of $RUNS)"
printf '%-10s %3s %8s %10s %10s %12s %11s\n' tracer P seconds delivered lost \
  "events/s" unaccounted
for tool in "${TOOLS[@]}"; do
  best=-
  for p in $PRODUCERS; do
    : >"$WORK/runs"
    for _ in $(seq "$RUNS"); do
      "$tool" -e "$SCRIPT" -c "/bin/sh $WORK/work.sh $p" >"$WORK/out" 2>/dev/null
      # the last line's arrival: when the output was last written
      end=$(stat -c %.9Y "$WORK/out" | tr -d .)
      awk -v ns=$((end - $(cat "$WORK/start"))) -v n="$EVENTS" '
        /^1$/ { got++ } /^Lost [0-9]+ events$/ { lost += $2 }
        END { s = ns / 1e9
              printf "%.2f %d %d %.0f %d\n", s, got, lost, got / s, n - got - lost }' \
        "$WORK/out" >>"$WORK/runs"
    done
    figures=()
    for col in 1 2 3 4; do
      figures+=("$(awk -v c=$col '{ print $c }' "$WORK/runs" | median)")
    done
    # events neither delivered nor reported lost, in the worst run
    unaccounted=$(awk '$5 > m { m = $5 } END { print m + 0 }' "$WORK/runs")
    printf '%-10s %3s %8s %10s %10s %12s %11s\n' "$(basename "$tool")" "$p" \
      "${figures[@]}" "$unaccounted"
    # every run of this configuration delivered everything
    if ! awk '$3 > 0 { lossy = 1 } END { exit lossy }' "$WORK/runs"; then :
    elif [ "$best" = - ] || [ "${figures[3]}" -gt "$best" ]; then
      best=${figures[3]}
    fi
  done
  printf '%-10s delivered without loss: %s events/s\n' "$(basename "$tool")" "$best"
done
