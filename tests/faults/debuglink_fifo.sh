#!/usr/bin/env bash
# A traced binary whose .gnu_debuglink points at a FIFO.
#
# The binary has no DWARF of its own, so finding its arguments (-lv) or
# its source lines (ustack with show_debug_info) makes loupe look for its
# separate debug file. libdwfl's standard search joined the debug link to
# the binary's directory as it was: a link "../../../<dir>/x" naming a
# FIFO x had `loupe -lv` open the FIFO and wait forever.
#
#   1. debug link "../../../<dir>/x", x a FIFO nobody writes to: `loupe -lv
#      'uprobe:BIN:stack_leaf'` ends within 20 s and lists the function.
#   2. the same with a writer waiting to open x: a ustack run with
#      show_debug_info names the frames, and the writer's open never
#      returns (loupe never opened x).
#   3. debug link "x" (a plain name, x a FIFO beside the binary): the
#      same ustack run ends and never opens x either.
#   4. and a real debug file is still found: debug link "prog.debug" in
#      .debug/ beside the binary gives the frames their source lines.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
command -v gcc >/dev/null && command -v objcopy >/dev/null ||
  { echo "needs gcc and objcopy"; exit 77; }
WORK=$(mktemp -d /tmp/loupe-debuglink.XXXXXX)
WRITER=""
stop_writer() {
  [ -n "$WRITER" ] && kill -KILL "$WRITER" 2>/dev/null && wait "$WRITER" 2>/dev/null
  WRITER=""
}
trap 'stop_writer; rm -rf "$WORK"' EXIT
cd "$WORK" || exit 1

gcc -g0 -O0 -fno-omit-frame-pointer -pie -fPIE -o plain \
  "$ROOT/tests/runtime/builtins_stack_target.c" || exit 1
# BIN: plain with a .gnu_debuglink section naming $1 (NUL, padding to 4
# bytes, a CRC: objcopy --add-gnu-debuglink would keep only a basename).
with_link() {
  python3 -c 'import sys; n = sys.argv[1].encode() + b"\0"
sys.stdout.buffer.write(n + b"\0" * (-len(n) % 4) + b"\x12\x34\x56\x78")' \
    "$1" >link.bin &&
    objcopy --add-section .gnu_debuglink=link.bin plain prog
}
mkfifo x
climb=$(echo "${WORK#/}" | sed 's|[^/]*|..|g')   # a .. per level of WORK
with_link "$climb/..$WORK/x" || exit 1
readelf -p .gnu_debuglink prog | grep -q "\] *\.\./\.\./.*/x$" ||
  { echo "the debug link is not relative"; exit 1; }

# 1. no writer: opening x would wait forever
timeout -s KILL 20 "$LOUPE" -lv "uprobe:$WORK/prog:stack_leaf" >out 2>err
status=$?
[ "$status" = 0 ] || fail "-lv: exit status $status (137: killed after 20 s)"
grep -q "^uprobe:$WORK/prog:stack_leaf" out ||
  fail "-lv: stack_leaf not listed: $(head -c 300 out) $(head -c 300 err)"
echo "-lv, debug link to a FIFO by ../: exit $status"

# $1: what is tried. Runs a ustack script with a writer waiting to open x.
ustack_run() {
  rm -f opened
  (exec 3>x; touch opened) &
  WRITER=$!
  timeout -s KILL 20 "$LOUPE" -q -e 'config = { show_debug_info = 1 }
    u:./prog:stack_leaf { printf("%s", ustack(2)); }' -c './prog 1 200' \
    >out 2>err
  status=$?
  sleep 0.2   # a writer let through by an open would have touched it now
  [ -e opened ] && fail "$1: loupe opened the FIFO"
  stop_writer
  [ "$status" = 0 ] || fail "$1: exit status $status (137: killed after 20 s)"
  grep -qE '^ +stack_leaf\+0(@.*)?$' out &&
    grep -qE '^ +stack_middle\+[0-9]+(@.*)?$' out ||
    fail "$1: frames not named: $(head -c 300 out) $(head -c 300 err)"
  echo "$1: exit $status, FIFO $([ -e opened ] && echo opened || echo untouched)"
}
ustack_run "ustack, debug link to a FIFO by ../"
with_link x || exit 1
ustack_run "ustack, debug link to a FIFO beside the binary"

gcc -g -O0 -fno-omit-frame-pointer -pie -fPIE -o full \
  "$ROOT/tests/runtime/builtins_stack_target.c" && mkdir .debug &&
  objcopy --only-keep-debug full .debug/prog.debug &&
  objcopy --strip-debug --add-gnu-debuglink=.debug/prog.debug full prog ||
  exit 1
ustack_run "ustack, debug link to .debug/prog.debug"
grep -qE '^ +stack_leaf\+0@.*builtins_stack_target\.c:[0-9]+$' out ||
  fail "the debug file's lines are missing: $(head -c 300 out)"
exit $((failures > 0))
