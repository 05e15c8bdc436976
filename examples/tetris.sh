#!/usr/bin/env bash
# Plays examples/tetris.bt in this terminal. Run as root:
#
#   examples/tetris.sh          play
#   examples/tetris.sh -t       test mode (only I pieces, a prepared well)
#   LOUPE=bpftrace examples/tetris.sh     the same game under bpftrace
#
# The tracer draws on the terminal; this script reads the keys. It turns
# off echo and line editing, and writes every key to /dev/null, one byte
# per write(2): the game's tracepoint:syscalls:sys_enter_write probe takes
# the 1-byte writes of this script's pid (passed as $1) as keys. Arrow keys
# become a d w s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
LOUPE=${LOUPE:-$here/../loupe}
mode=0
[ "${1:-}" = -t ] && mode=1

[ -t 0 ] || { echo "tetris.sh: stdin must be a terminal" >&2; exit 1; }
saved_tty=$(stty -g)
tracer_pid=""
finish() {
  [ -n "$tracer_pid" ] && kill "$tracer_pid" 2>/dev/null && wait "$tracer_pid"
  stty "$saved_tty"
}
trap finish EXIT
trap 'exit 130' INT TERM HUP

stty -echo -icanon min 1 time 0
"$LOUPE" -q "$here/tetris.bt" $$ "$mode" </dev/null &
tracer_pid=$!

while kill -0 "$tracer_pid" 2>/dev/null; do
  # A read that times out may still have taken a key.
  key=""
  IFS= read -rsn1 -t 0.2 key || [ -n "$key" ] || continue
  if [ "$key" = $'\e' ]; then
    IFS= read -rsn2 -t 0.05 rest || true
    case $rest in
      '[D'|OD) key=a ;; '[C'|OC) key=d ;; '[A'|OA) key=w ;; '[B'|OB) key=s ;;
      *) continue ;;
    esac
  fi
  [ -n "$key" ] || continue
  printf %s "$key" >/dev/null
  [ "$key" = q ] && break
done
wait "$tracer_pid"
status=$?
tracer_pid=""
exit "$status"
