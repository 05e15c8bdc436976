#!/usr/bin/env bash
# loupe where BPF cannot be used: one clear error, exit 1, nothing printed
# on stdout, the -c command never started, nothing left in the kernel.
#
#   not root              setpriv to nobody (uid 65534)
#   root without caps     setpriv drops CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN
#   root in a user ns     unshare -U -r: uid 0, no capability outside
#   no bpf() at all       a seccomp filter makes bpf() fail with ENOSYS,
#                         as on a kernel built without CONFIG_BPF_SYSCALL
#                         (tests/faults/no_bpf_seccomp.py)
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
WORK=$(mktemp -d /tmp/loupe-no-bpf.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
chmod 755 "$WORK"
cp "$(readlink -f "$LOUPE")" "$WORK/loupe" && chmod 755 "$WORK/loupe"
SCRIPT='BEGIN { printf("began\n"); }
tracepoint:syscalls:sys_enter_write { @writes = count(); }
interval:ms:100 { @ticks = count(); }
uprobe:/bin/bash:readline { @lines = count(); }'
kernel_mark

# $1: what is tried; $2: the error wanted (ERE); the rest: the wrapper.
try() {
  local what=$1 want=$2
  shift 2
  rm -f "$WORK/ran"
  "$@" "$WORK/loupe" -e "$SCRIPT" -c "touch $WORK/ran" \
    >"$WORK/out" 2>"$WORK/err"
  local status=$?
  if [ "$status" = 77 ] && grep -q '^needs' "$WORK/out"; then
    echo "$what: skipped ($(cat "$WORK/out"))"
    return
  fi
  [ "$status" = 1 ] || fail "$what: exit status $status, not 1"
  [ -s "$WORK/out" ] && fail "$what: printed $(head -c 200 "$WORK/out")"
  [ "$(grep -c 'ERROR' "$WORK/err")" = 1 ] ||
    fail "$what: not one error: $(cat "$WORK/err")"
  grep -qE "$want" "$WORK/err" ||
    fail "$what: no '$want' in: $(cat "$WORK/err")"
  grep -qE 'Attached|Sanitizer|runtime error' "$WORK/err" &&
    fail "$what: $(cat "$WORK/err")"
  [ -e "$WORK/ran" ] && fail "$what: the -c command ran"
  echo "$what: exit $status, $(grep -E "$want" "$WORK/err")"
}

# where a probe kind needs tracefs, the error is located and says to use sudo
try "not root" "^HINT: .*sudo|^ERROR: loupe needs root" \
  setpriv --reuid=65534 --regid=65534 --clear-groups
try "root without CAP_BPF" "^ERROR: the kernel refused BPF to loupe \(Operation not permitted\)" \
  setpriv --bounding-set=-bpf,-perfmon,-sys_admin
if unshare -U -r true 2>/dev/null; then
  try "root in a user namespace" "^ERROR: the kernel refused BPF to loupe" unshare -U -r
fi
try "no bpf() system call" "^ERROR: this kernel does not support BPF" \
  python3 "$ROOT/tests/faults/no_bpf_seccomp.py"

left=$(kernel_leftovers) || fail "$left"
[ "$failures" = 0 ]
