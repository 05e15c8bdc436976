#!/usr/bin/env bash
# The traced process exits while loupe compiles, loads and attaches.
#
#   1. -c: the command is killed (SIGKILL) at a random moment from the
#      moment loupe has forked it (it waits, unreleased, until the probes
#      are attached) at once (odd runs) or up to 40 ms later (even runs). loupe must end by itself within
#      10 s, run END, print its maps and exit 0.
#   2. -p: the process (a short sleep of random length, 0-90 ms) exits
#      before, during or after attach. loupe must end by itself within
#      10 s, either with END run and exit 0, or with exit 1 and an error
#      that says the process is gone ("No such process").
# After both, nothing loupe created may be left in the kernel.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
RUNS=${RUNS:-12}
LIBC=$(ldd /usr/bin/sleep 2>/dev/null | awk '/libc\.so/ { print $3 }')
[ -f "$LIBC" ] || { echo "needs sleep linked with libc"; exit 77; }
. "$ROOT/tests/faults/lib.sh"
WORK=$(mktemp -d /tmp/loupe-attach-exit.XXXXXX)
PID="" TARGET=""
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  [ -n "$TARGET" ] && kill -KILL "$TARGET" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
msleep() { sleep "0.$(printf '%03d' "$1")"; }

# Several tracepoints, so that attaching takes a while.
SCRIPT='tracepoint:syscalls:sys_enter_e* { @enter = count(); }
END { printf("END ran\n"); }'
kernel_mark

# Checks the run whose pid is $PID ended within 10 s: 0 with END and the
# maps, or (when $1 is "may_fail") 1 with "No such process".
check_run() {
  wait_exit "$PID" 10
  if [ "$status" = - ]; then
    fail "$2: still running 10 s after the traced process ended"
    kill -KILL "$PID"; wait "$PID" 2>/dev/null
  elif [ "$status" = 0 ]; then
    grep -q '^END ran$' "$WORK/out" || fail "$2: END did not run"
    grep -q '^@enter: ' "$WORK/out" || fail "$2: the map was not printed"
    ok=$((ok + 1))
  elif [ "$1" = may_fail ] && [ "$status" = 1 ] &&
       grep -q 'No such process' "$WORK/err"; then
    gone=$((gone + 1))
  else
    fail "$2: exit status $status: $(head -c 300 "$WORK/err")"
  fi
  PID=""
}

ok=0 gone=0
for i in $(seq "$RUNS"); do
  "$LOUPE" -e "$SCRIPT" -c "/usr/bin/sleep 5" >"$WORK/out" 2>"$WORK/err" &
  PID=$!
  child=""
  for _ in $(seq 10000); do   # no fork in this loop: as soon as it can
    read -r child <"/proc/$PID/task/$PID/children" 2>/dev/null
    [ -n "$child" ] && break
  done
  # odd runs at once (before it is released), even ones within 40 ms
  [ $((i % 2)) = 0 ] && msleep $((i * 37 % 40))
  [ -n "$child" ] && kill -KILL $child 2>/dev/null
  check_run must_succeed "-c run $i"
done
echo "-c: the command killed while loupe attached, $ok of $RUNS runs ended with END and the maps"

ok=0 gone=0
for i in $(seq "$RUNS"); do
  /usr/bin/sleep "0.0$((RANDOM % 10))" &
  TARGET=$!
  "$LOUPE" -p "$TARGET" -e "$SCRIPT
uprobe:$LIBC:clock_nanosleep { @sleeps = count(); }" \
    >"$WORK/out" 2>"$WORK/err" &
  PID=$!
  check_run may_fail "-p run $i"
  wait "$TARGET" 2>/dev/null
  TARGET=""
done
echo "-p: the process exited around attach: $ok runs ended with END and the maps, $gone with \"No such process\""

left=$(kernel_leftovers) || fail "$left"
[ "$failures" = 0 ]
