#!/usr/bin/env bash
# Exactness under load: counts and sums in per-CPU maps equal a known
# workload exactly, and every printf event is delivered or counted lost.
#
# The workload: LOAD_PROCS (default 2) copies of dd, each pinned to a CPU
# of its own in turn (taskset), each making exactly LOAD_N (default
# 1,000,000) write(2) calls of 1 byte (dd bs=1 count=N), all at once.
# Six probes fire on them, so that each byte makes 8 events: the entry and
# exit of write(2) and of read(2) (dd reads each byte before writing it),
# and the entry and exit of every system call (raw_syscalls). Required:
#   - @writes[pid], @bytes[pid] (count and sum of args->count at entry),
#     @done[pid], @ret[pid] (count and sum of args->ret at exit) are N for
#     each dd; @all (one key, updated from every CPU) is N * LOAD_PROCS;
#   - @rdone[pid] (read exits) equals @reads[pid] (read entries), and
#     @calls[pid], @returns[pid] (all system calls) are at least reads +
#     writes (dd makes a few more while it starts);
#   - lines printed (one per write) + "Lost N events" == N * LOAD_PROCS,
#     and no other line;
#   - no map-full warning, exit 0, nothing left in the kernel.
# Printed: the rate the probes fired at (events per second of the
# workload's wall time, reads included) and the printf lines delivered
# and lost. A slow machine reaches a lower rate; exactness must hold at
# any rate.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
N=${LOAD_N:-1000000}
PROCS=${LOAD_PROCS:-2}
. "$ROOT/tests/faults/lib.sh"
WORK=$(mktemp -d /tmp/loupe-load.XXXXXX)
PID=""
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

# A dd of a name of its own (its comm), so other processes' writes, other
# dd runs included, are not counted.
NAME=ldload$$
NAME=${NAME:0:15}
cp "$(command -v dd)" "$WORK/$NAME"
CPUS=$(nproc)
PIN=""
command -v taskset >/dev/null && PIN=yes
# The -c command: starts the dd runs together, notes their pids and the
# nanoseconds from the first start to the last exit.
{
  echo 'start=$(date +%s%N)'
  for j in $(seq 0 $((PROCS - 1))); do
    pin=""
    [ -n "$PIN" ] && pin="taskset -c $((j % CPUS))"
    echo "$pin $WORK/$NAME if=/dev/zero of=/dev/null bs=1 count=$N status=none &"
    echo "echo \$! >>$WORK/pids"
  done
  echo 'wait'
  echo "echo \$((\$(date +%s%N) - start)) >$WORK/ns"
} >"$WORK/work.sh"

cat >"$WORK/s.bt" <<EOF
tracepoint:syscalls:sys_enter_write /comm == "$NAME"/ {
  @writes[pid] = count(); @bytes[pid] = sum(args->count); @all = count();
  printf("w %d\n", pid);
}
tracepoint:syscalls:sys_exit_write /comm == "$NAME"/ {
  @done[pid] = count(); @ret[pid] = sum(args->ret);
}
tracepoint:syscalls:sys_enter_read /comm == "$NAME"/ { @reads[pid] = count(); }
tracepoint:syscalls:sys_exit_read /comm == "$NAME"/ { @rdone[pid] = count(); }
tracepoint:raw_syscalls:sys_enter /comm == "$NAME"/ { @calls[pid] = count(); }
tracepoint:raw_syscalls:sys_exit /comm == "$NAME"/ { @returns[pid] = count(); }
EOF

kernel_mark
"$LOUPE" "$WORK/s.bt" -c "/bin/sh $WORK/work.sh" >"$WORK/out" 2>"$WORK/err" &
PID=$!
wait_exit "$PID" 100
[ "$status" = - ] && { fail "still running after 100 s"; exit 1; }
PID=""
[ "$status" = 0 ] || fail "exit status $status: $(head -c 300 "$WORK/err")"
grep -v '^Attached ' "$WORK/err" | grep -q . && fail "said: $(head -c 300 "$WORK/err")"
[ "$(wc -l <"$WORK/pids" 2>/dev/null)" = "$PROCS" ] || fail "the workload did not run"

# One line per check that fails; then the figures.
awk -v n="$N" -v procs="$PROCS" -v ns="$(cat "$WORK/ns" 2>/dev/null)" '
  FILENAME ~ /pids$/ { ours[$1] = 1; next }
  /^w [0-9]+$/ { if ($2 in ours) lines++; else bad++; next }
  /^Lost [0-9]+ events$/ { lost += $2; next }
  /^@all: / { all = $2; next }
  /^@[a-z]+\[[0-9]+\]: [0-9]+$/ {
    split($1, f, /[@\[\]]/); map = f[2]; pid = f[3]
    if (!(pid in ours)) { bad++; next }
    v[map, pid] = $2; events += (map ~ /^(writes|done|reads|rdone|calls|returns)$/) ? $2 : 0
    next
  }
  /^$/ { next }
  { bad++; print "unexpected line: " $0 }
  END {
    for (pid in ours)
      for (i = split("writes bytes done ret", m, " "); i > 0; i--)
        if (v[m[i], pid] != n)
          print "@" m[i] "[" pid "] is " v[m[i], pid] + 0 ", not " n
    for (pid in ours) {
      if (v["rdone", pid] != v["reads", pid])
        print "@rdone[" pid "] is " v["rdone", pid] + 0 ", not @reads " v["reads", pid] + 0
      for (i = split("calls returns", m, " "); i > 0; i--)
        if (v[m[i], pid] < v["reads", pid] + n)
          print "@" m[i] "[" pid "] is " v[m[i], pid] + 0 ", below reads + writes"
    }
    if (all != n * procs) print "@all is " all + 0 ", not " n * procs
    if (lines + lost != n * procs)
      print "printf: " lines + 0 " lines + " lost + 0 " lost = " lines + lost ", not " n * procs
    if (bad) print bad " lines from processes not the workload"
    s = ns / 1e9
    rate = s ? events / s : 0
    printf "figures: %d events in %.2f s: %.0f events/s; printf %d delivered, %d lost\n",
      events, s, rate, lines, lost > "/dev/stderr"
  }' "$WORK/pids" "$WORK/out" >"$WORK/problems" 2>"$WORK/figures" ||
  fail "reading the output failed: $(cat "$WORK/figures")"
while read -r problem; do fail "$problem"; done <"$WORK/problems"
echo "$PROCS dd x $N writes of 1 byte, on $CPUS CPUs${PIN:+ (pinned)}: $(sed 's/^figures: //' "$WORK/figures")"
left=$(kernel_leftovers) || fail "$left"
[ "$failures" = 0 ]
