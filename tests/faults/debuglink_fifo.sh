#!/usr/bin/env bash
# A traced binary whose debug files are FIFOs: the one its .gnu_debuglink
# names, the one dwz made its debug file share, the .dwo file of split
# DWARF. The names come from the binary; loupe must neither hang nor
# open the FIFO.
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
#   5. split DWARF (gcc -gsplit-dwarf): -lv lists the parameters from the
#      .dwo file, and with the .dwo file a FIFO, ends and never opens it.
#   With dwz, whose shared debug file the debug files link to by an
#   absolute path (.gnu_debugaltlink), where the parameters' types are:
#   6. the link names a FIFO in the test's directory: -lv and the ustack
#      run end and never open it (only files under /usr/lib/debug are
#      followed, and libdw is kept from looking itself);
#   7. the link names a file under /usr/lib/debug/.dwz: -lv shows the
#      parameters with their types.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
command -v gcc >/dev/null && command -v objcopy >/dev/null ||
  { echo "needs gcc and objcopy"; exit 77; }
WORK=$(mktemp -d /tmp/loupe-debuglink.XXXXXX)
WRITER="" DWZ_FILE="" DWZ_DIR=""
stop_writer() {
  [ -n "$WRITER" ] && kill -KILL "$WRITER" 2>/dev/null &&
    wait "$WRITER" 2>/dev/null
  WRITER=""
}
cleanup() {
  stop_writer
  rm -rf "$WORK"
  [ -n "$DWZ_FILE" ] && rm -f "$DWZ_FILE"
  [ -n "$DWZ_DIR" ] && rmdir "$DWZ_DIR"
}
trap cleanup EXIT
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

# $1: what is tried; the rest: a loupe command, run with a writer
# waiting to open the FIFO $FIFO (its open returns, and it touches
# opened, if loupe opens it). Its status goes to $status.
FIFO=x
with_writer() {
  local what=$1
  shift
  rm -f opened
  (exec 3>"$FIFO"; touch opened) &
  WRITER=$!
  timeout -s KILL 20 "$@" >out 2>err
  status=$?
  sleep 0.2   # a writer let through by an open would have touched it now
  local fifo=untouched
  [ -e opened ] && fifo=opened && fail "$what: loupe opened the FIFO"
  stop_writer
  [ "$status" = 0 ] ||
    fail "$what: exit status $status (137: killed after 20 s)"
  echo "$what: exit $status, FIFO $fifo"
}
# $1: what is tried. A ustack script with source lines, whose frames
# must be named.
ustack_run() {
  with_writer "$1" "$LOUPE" -q -e 'config = { show_debug_info = 1 }
    u:./prog:stack_leaf { printf("%s", ustack(2)); }' -c './prog 1 200'
  grep -qE '^ +stack_leaf\+0(@.*)?$' out &&
    grep -qE '^ +stack_middle\+[0-9]+(@.*)?$' out ||
    fail "$1: frames not named: $(head -c 300 out) $(head -c 300 err)"
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

# split DWARF: the binary's skeleton unit names the .dwo file with the
# rest, which libdw opens (blocking) by that name in the compilation's
# directory
gcc -gsplit-dwarf -g -O0 -fno-omit-frame-pointer -c -o split.o \
  "$ROOT/tests/runtime/builtins_stack_target.c" && gcc -o split split.o ||
  exit 1
timeout -s KILL 20 "$LOUPE" -lv "uprobe:$WORK/split:stack_leaf" >out 2>err
grep -qxE '    int i' out ||
  fail "-lv, split DWARF: no 'int i' in: $(cat out err)"
echo "-lv, split DWARF: $(grep -c '^    ' out) parameters"
mv split.dwo split.dwo.real && mkfifo split.dwo || exit 1
FIFO=split.dwo
with_writer "-lv, split DWARF in a FIFO" \
  "$LOUPE" -lv "uprobe:$WORK/split:stack_leaf"
FIFO=x

if ! command -v dwz >/dev/null; then
  echo "dwz missing: alt links not tried"
  exit $((failures > 0))
fi
# prog and prog2 (the same program twice) with debug links to .debug/,
# their debug files sharing the file dwz writes to $1 and names $2.
with_dwz() {
  rm -f .debug/* && cp full full2 &&
    objcopy --only-keep-debug full .debug/prog.debug &&
    objcopy --only-keep-debug full2 .debug/prog2.debug &&
    dwz -m "$1" -M "$2" .debug/prog.debug .debug/prog2.debug &&
    objcopy --strip-debug --add-gnu-debuglink=.debug/prog.debug full prog
}
with_dwz common.debug "$WORK/x" || exit 1
with_writer "-lv, alt link to a FIFO" \
  "$LOUPE" -lv "uprobe:$WORK/prog:stack_leaf"
ustack_run "ustack, alt link to a FIFO"

if [ ! -d /usr/lib/debug/.dwz ]; then
  mkdir -p /usr/lib/debug/.dwz && DWZ_DIR=/usr/lib/debug/.dwz || exit 1
fi
DWZ_FILE=$(mktemp /usr/lib/debug/.dwz/loupe-test.XXXXXX)
with_dwz "$DWZ_FILE" "$DWZ_FILE" || exit 1
timeout -s KILL 20 "$LOUPE" -lv "uprobe:$WORK/prog:stack_leaf" >out 2>err
grep -qxE '    int i' out ||
  fail "-lv, alt link under /usr/lib/debug: no 'int i' in: $(cat out err)"
echo "-lv, alt link under /usr/lib/debug: $(grep -c '^    ' out) parameters"
exit $((failures > 0))
