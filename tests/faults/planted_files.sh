#!/usr/bin/env bash
# Files loupe writes (-o, --flamegraph, skboutput()'s pcap files) under a
# name another user planted in a sticky world-writable directory, as in
# /tmp, with the sysctls fs.protected_symlinks and fs.protected_regular
# off or on (loupe applies their rules itself):
#
#   1. a symlink of nobody's to a file of the test's own, as -o, as
#      --flamegraph and as skboutput()'s file: loupe refuses to follow it,
#      says which link and why, exits 1, and the file is untouched;
#   2. a symlink of nobody's to a directory, in the middle of the path;
#   3. a file of nobody's (loupe would write what it traces where nobody
#      reads it), and a hard link to the test's file;
#   4. what must still work: a root-owned symlink in the sticky
#      directory, a new file there and then the same file again
#      (truncated), a file in a plain directory, and one straight in /tmp.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
command -v setpriv >/dev/null && id nobody >/dev/null 2>&1 ||
  { echo "needs setpriv and a user nobody"; exit 77; }
WORK=$(mktemp -d /tmp/loupe-planted.XXXXXX)
INTMP=$(mktemp /tmp/loupe-planted-out.XXXXXX)
cleanup() { rm -rf "$WORK" "$INTMP"; }
trap cleanup EXIT
chmod 755 "$WORK"   # mktemp's 0700 would keep nobody out of it
as_nobody() {
  setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups "$@"
}
STICKY=$WORK/sticky
mkdir -m 1777 "$STICKY"
MINE=$WORK/mine
echo "keep me" >"$MINE"
as_nobody ln -s "$MINE" "$STICKY/link" &&
  as_nobody ln -s "$WORK" "$STICKY/dirlink" &&
  as_nobody sh -c "echo nobody\\'s >'$STICKY/planted'" ||
  { echo "nobody cannot write to $STICKY"; exit 77; }
ln "$MINE" "$STICKY/hardlink"
PRINT='BEGIN { printf("hi\n"); exit(); }'
NOBODY=$(id -u nobody)

# Runs loupe with the arguments after the first two; it must exit 1 with
# the line $2 on stderr, and leave the test's files as they were.
refused() {
  local what=$1 want=$2
  shift 2
  "$LOUPE" "$@" >"$WORK/out" 2>"$WORK/err"
  local status=$?
  [ "$status" = 1 ] || fail "$what: exit status $status, not 1"
  grep -qxF -- "$want" "$WORK/err" ||
    fail "$what: no '$want' in: $(cat "$WORK/err")"
  [ "$(cat "$MINE")" = "keep me" ] || fail "$what: the link's target was written"
  [ "$(cat "$STICKY/planted")" = "nobody's" ] || fail "$what: nobody's file was written"
  echo "$what: exit $status, '$(head -n 1 "$WORK/err")'"
}
why_link="refusing to follow $STICKY/link: a symlink of uid $NOBODY in the sticky world-writable directory $STICKY (as fs.protected_symlinks does)"

# 1. nobody's symlink to the test's file
refused "-o nobody's link" "loupe: cannot open '$STICKY/link': $why_link" \
  -o "$STICKY/link" -e "$PRINT"
refused "--flamegraph nobody's link" \
  "loupe: --flamegraph: cannot write $STICKY/link: $why_link" \
  --flamegraph "$STICKY/link" \
  -e 'profile:hz:99 { @[kstack] = count(); } interval:ms:100 { exit(); }'
refused "skboutput() to nobody's link" \
  "ERROR: skboutput(): cannot write $STICKY/link: $why_link" \
  -e "rawtracepoint:netif_receive_skb { skboutput(\"$STICKY/link\", args.skb, args.skb->len, 0); }
      interval:ms:100 { exit(); }"

# 2. nobody's symlink to a directory, in the middle of the path
refused "-o through nobody's directory link" \
  "loupe: cannot open '$STICKY/dirlink/mine': refusing to follow $STICKY/dirlink: a symlink of uid $NOBODY in the sticky world-writable directory $STICKY (as fs.protected_symlinks does)" \
  -o "$STICKY/dirlink/mine" -e "$PRINT"

# 3. nobody's file; a second hard link to the test's file
refused "-o nobody's file" \
  "loupe: cannot open '$STICKY/planted': refusing to write $STICKY/planted: it belongs to uid $NOBODY, in the sticky world-writable directory $STICKY (as fs.protected_regular does)" \
  -o "$STICKY/planted" -e "$PRINT"
refused "-o a hard link" \
  "loupe: cannot open '$STICKY/hardlink': refusing to write $STICKY/hardlink: it has 2 hard links, in the sticky world-writable directory $STICKY" \
  -o "$STICKY/hardlink" -e "$PRINT"

# 4. what works as before
written() {
  local what=$1 file=$2 want=$3
  shift 3
  "$LOUPE" "$@" >"$WORK/out" 2>"$WORK/err"
  local status=$?
  [ "$status" = 0 ] || fail "$what: exit status $status: $(cat "$WORK/err")"
  [ "$(cat "$file")" = "$want" ] || fail "$what: the file holds '$(cat "$file")'"
  echo "$what: exit $status"
}
ln -s "$WORK/rootout" "$STICKY/rootlink"
written "-o root's link in the sticky directory" "$WORK/rootout" hi \
  -o "$STICKY/rootlink" -e "$PRINT"
written "-o a new file in the sticky directory" "$STICKY/new" hi \
  -o "$STICKY/new" -e "$PRINT"
written "-o the same file again" "$STICKY/new" again \
  -o "$STICKY/new" -e 'BEGIN { printf("again\n"); exit(); }'
written "-o a file in a plain directory" "$WORK/plain" hi \
  -o "$WORK/plain" -e "$PRINT"
written "-o a file in /tmp" "$INTMP" hi -o "$INTMP" -e "$PRINT"

[ "$failures" = 0 ]
