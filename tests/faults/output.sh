#!/usr/bin/env bash
# The output fails while events flood in.
#
#   1. -o FILE on a full file system (a 64 KB tmpfs): loupe says which
#      file and why ("loupe: write to FILE: No space left on device"),
#      stops as after Ctrl-C (its -c command ended), exits 1. bpftrace 0.17
#      says nothing and exits 0 with the file cut short.
#   2. stdout that cannot be written (/dev/full) by a script that prints
#      only its maps at the end: the same message for "stdout", exit 1.
#   3. stdout closed early (`loupe ... | head -1`): loupe ends within 2 s
#      of head exiting, ends its -c command, and dies of SIGPIPE (status
#      141), as bpftrace 0.17 does.
# Afterwards nothing loupe created may be left in the kernel.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
WORK=$(mktemp -d /tmp/loupe-output.XXXXXX)
PID="" MOUNTED=""
# The pids of this test's dd runs still running (their command line names
# the test's own directory).
dd_pids() { pgrep -fx "$FLOOD"; }
# Stops loupe if it still runs, and the dd it may have left running.
stop_all() {
  [ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
  PID=""
  local p
  for p in $(dd_pids); do kill -KILL "$p"; done
}
cleanup() {
  stop_all
  [ -n "$MOUNTED" ] && { umount "$MOUNTED" || umount -l "$MOUNTED"; }
  rm -rf "$WORK"
}
trap cleanup EXIT
# A dd of its own name, so that the test can tell whether its runs ended.
DD=$WORK/loupe-out-dd
cp "$(command -v dd)" "$DD"
FLOOD="$DD if=/dev/zero of=/dev/null bs=1 count=50000000 status=none"
PRINT='tracepoint:syscalls:sys_enter_write /pid == cpid/ {
  printf("%d byte written, and a line long enough to fill a disk\n", args->count);
}'
dd_left() { [ -n "$(dd_pids)" ]; }
kernel_mark

# 1. -o on a full file system
mkdir "$WORK/fs"
mount -t tmpfs -o size=64k loupe-test "$WORK/fs" && MOUNTED=$WORK/fs ||
  { echo "cannot mount a tmpfs"; exit 77; }
"$LOUPE" -e "$PRINT" -o "$WORK/fs/out" -c "$FLOOD" 2>"$WORK/err" &
PID=$!
wait_exit "$PID" 10
want="loupe: write to $WORK/fs/out: No space left on device"
if [ "$status" = - ]; then
  fail "-o on a full file system: still running after 10 s"
else
  [ "$status" = 1 ] || fail "-o on a full file system: exit status $status, not 1"
  grep -qxF "$want" "$WORK/err" ||
    fail "-o on a full file system: no '$want' in: $(cat "$WORK/err")"
  [ "$(grep -c '^loupe: write' "$WORK/err")" = 1 ] ||
    fail "-o on a full file system: the error was said more than once"
fi
dd_left && fail "-o on a full file system: the -c command still runs"
echo "-o on a full file system: exit $status, '$(grep '^loupe: write' "$WORK/err")'"
stop_all
umount "$MOUNTED" && MOUNTED=""

# 2. stdout that cannot be written, at the end only
"$LOUPE" -e 'tracepoint:syscalls:sys_enter_write /pid == cpid/ { @bytes = sum(args->count); }' \
  -c "$DD if=/dev/zero of=/dev/null bs=1 count=1000 status=none" \
  >/dev/full 2>"$WORK/err"
status=$?
[ "$status" = 1 ] || fail "stdout on /dev/full: exit status $status, not 1"
grep -qxF "loupe: write to stdout: No space left on device" "$WORK/err" ||
  fail "stdout on /dev/full: $(cat "$WORK/err")"
echo "maps to /dev/full: exit $status, '$(grep '^loupe: write' "$WORK/err")'"

# 3. stdout closed early
mkfifo "$WORK/pipe"
"$LOUPE" -q -e "$PRINT" -c "$FLOOD" >"$WORK/pipe" 2>"$WORK/err" &
PID=$!
line=$(head -n 1 "$WORK/pipe")
closed=$(date +%s%N)
wait_exit "$PID" 10
took=$((($(date +%s%N) - closed) / 1000000))
case $line in "1 byte written"*) ;; *) fail "| head -1: read '$line'" ;; esac
[ "$status" = 141 ] || fail "| head -1: exit status $status, not 141 (SIGPIPE)"
[ "$took" -le 2000 ] || fail "| head -1: loupe took $took ms to end after head"
dd_left && fail "| head -1: the -c command still runs"
[ -s "$WORK/err" ] && fail "| head -1: said $(cat "$WORK/err")"
echo "| head -1: ended $took ms after head, exit $status"
stop_all

left=$(kernel_leftovers) || fail "$left"
[ "$failures" = 0 ]
