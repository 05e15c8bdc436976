#!/usr/bin/env bash
# END runs whole, in order, however the run ends, and the maps it left
# print after it: SIGINT, SIGTERM, SIGHUP, exit(), the -c command
# exiting, the -p process exiting. END's script prints, print()s a map,
# clear()s it and prints again, so that a run that stopped handling
# END's records after the first (as loupe did after a signal) shows.
# With stdout closed (`loupe | head -c 0`) nothing can be printed, but
# END's system() still runs.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
WORK=$(mktemp -d /tmp/loupe-end.XXXXXX)
PID="" TARGET=""
cleanup() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  [ -n "$TARGET" ] && kill -KILL "$TARGET" 2>/dev/null && wait "$TARGET" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

END_PROBE='END {
  printf("A\n"); printf("B\n"); print(@s); printf("C\n");
  clear(@s); printf("D\n");
  system("echo ran >%s", str($1));
}'
BODY='interval:ms:20 { @s = count(); @left[1] = 7; }'
# What every run that attached prints: END's lines in order, @s's value
# (any count), and then only @left, since END cleared @s.
EXPECT_RE=$'^A\nB\n@s: [0-9]+\nC\nD\n\n+@left\\[1\\]: 7\n+$'

# $1: what ended the run, for messages. Checks $WORK/out and the marker.
check_output() {
  local out; out=$(cat "$WORK/out"; echo x); out=${out%x}
  [[ $out =~ $EXPECT_RE ]] ||
    fail "$1: END was not whole, stdout was:"$'\n'"$out"
  [ -s "$WORK/mark" ] || fail "$1: END's system() did not run"
  rm -f "$WORK/mark"
}

# Waits until loupe said it attached (at most 20 s: the machine may be
# busy), so that the stop comes while it runs.
wait_attached() {
  for _ in $(seq 200); do
    grep -q '^Attached' "$WORK/err" && return 0
    kill -0 "$PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# 1. signals. Job control, so that the background loupe is not born with
# SIGINT ignored (see signals.sh).
set -m
for sig in INT TERM HUP; do
  "$LOUPE" --unsafe -e "$BODY $END_PROBE" "$WORK/mark" >"$WORK/out" 2>"$WORK/err" &
  PID=$!
  wait_attached || fail "SIG$sig: loupe did not attach: $(cat "$WORK/err")"
  sleep 0.5
  kill -"$sig" "$PID"
  wait_exit "$PID" 30
  if [ "$status" = - ]; then
    fail "SIG$sig: still running 30 s after the signal"
    continue
  fi
  PID=""
  [ "$status" = 0 ] || fail "SIG$sig: exit status $status"
  check_output "SIG$sig"
done
set +m

# 2. exit(), the -c command, the -p process
run_to_end() {   # $1: what ends it, for messages; the rest: loupe's arguments
  local what=$1; shift
  "$LOUPE" --unsafe "$@" "$WORK/mark" >"$WORK/out" 2>"$WORK/err" &
  PID=$!
  wait_exit "$PID" 30
  if [ "$status" = - ]; then
    fail "$what: still running after 30 s"
    return
  fi
  PID=""
  [ "$status" = 0 ] || fail "$what: exit status $status: $(cat "$WORK/err")"
  check_output "$what"
}
run_to_end "exit()" -e "$BODY interval:ms:200 { exit(); } $END_PROBE"
run_to_end "-c exiting" -c "sleep 1" -e "$BODY $END_PROBE"
# -p: the probes act only in the process, which makes system calls until
# the test, once loupe has attached, tells it to stop.
rm -f "$WORK/err"
bash -c 'while [ ! -e "$1" ]; do :; done' loop "$WORK/stop" &
TARGET=$!
(
  for _ in $(seq 200); do grep -q '^Attached' "$WORK/err" 2>/dev/null && break; sleep 0.1; done
  sleep 0.3; touch "$WORK/stop"
) &
run_to_end "-p exiting" -p "$TARGET" \
  -e "tracepoint:raw_syscalls:sys_enter { @s = count(); @left[1] = 7; } $END_PROBE"
wait "$TARGET" 2>/dev/null
TARGET=""

# 3. stdout closed: nothing reads it, but END still runs
"$LOUPE" --unsafe -e "$BODY $END_PROBE" "$WORK/mark" 2>"$WORK/err" | head -c 0
status=${PIPESTATUS[0]}
[ "$status" = 141 ] || fail "stdout closed: exit status $status, not 141 (SIGPIPE)"
[ -s "$WORK/mark" ] || fail "stdout closed: END's system() did not run"

[ "$failures" = 0 ]
