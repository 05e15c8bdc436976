#!/usr/bin/env bash
# Paths of a process in another root on a kernel without openat2 (before
# 5.6), simulated by a seccomp filter that makes openat2 fail with ENOSYS
# (tests/faults/no_bpf_seccomp.py): loupe's own walk resolves them inside
# the process's root, as openat2 with RESOLVE_IN_ROOT would.
#
#   - an absolute symlink to a host file is refused with a precise error,
#     and the host file is neither listed nor opened;
#   - an absolute symlink to a file of the process's own, and a relative
#     one whose ".." climb past its root, are listed;
#   - a uprobe on the process's own program, by its path, fires.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=$(readlink -f "${LOUPE:-$ROOT/loupe}")   # the test works in a directory of its own
. "$ROOT/tests/faults/lib.sh"
for c in gcc unshare chroot strace python3; do
  command -v "$c" >/dev/null || { echo "needs $c"; exit 77; }
done
WORK=$(mktemp -d /tmp/loupe-no-openat2.XXXXXX)
P=""
cleanup() {
  [ -n "$P" ] && kill "$P" 2>/dev/null && wait "$P" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
chmod 755 "$WORK"
cd "$WORK" || exit 1

mkdir -p root/opt root/lib
printf 'int loupe_host_secret(int x) { return x + 1; }\n' > host.c
printf 'int loupe_own_func(int x) { return x + 2; }\n' > own.c
gcc -O1 -static -o root/prog "$ROOT/tests/runtime/probes_uprobe_target.c" &&
  gcc -O1 -shared -fPIC -o libhost.so host.c &&
  gcc -O1 -shared -fPIC -o root/lib/libown.so own.c || exit 1
ln -s "$WORK/libhost.so" root/opt/libfoo.so
ln -s /lib/libown.so root/opt/libown.so
ln -s ../../../../../lib/libown.so root/opt/libup.so

unshare -m --propagation private chroot root /prog 1000000 100 &
P=$!
for _ in $(seq 100); do
  [ "$(readlink /proc/$P/root)" = "$WORK/root" ] && break
  sleep 0.05
done

no_openat2() { ENOSYS_NR=437 python3 "$ROOT/tests/faults/no_bpf_seccomp.py" "$@"; }

no_openat2 timeout 10 strace -f -o trace -e trace=openat,openat2 \
  "$LOUPE" -p "$P" -e 'uprobe:/opt/libfoo.so:loupe_host_secret { exit(); }' \
  >out 2>err
status=$?
[ "$status" = 77 ] && grep -q '^needs' out && { cat out; exit 77; }
grep -q 'openat2(.*ENOSYS' trace ||
  fail "openat2 did not fail with ENOSYS under the filter: $(grep openat2 trace | head -3)"
[ "$status" = 1 ] || fail "a symlink to a host file: exit status $status, not 1"
grep -q "cannot open /opt/libfoo.so in the root of process $P: No such file or directory" err ||
  fail "a symlink to a host file: $(cat err)"
grep -q 'libhost\.so' trace && fail "the host file was opened: $(grep libhost trace)"

no_openat2 "$LOUPE" -l -p "$P" 'uprobe:/opt/libown.so:loupe_*,uprobe:/opt/libup.so:loupe_*' >out 2>&1
printf 'uprobe:/opt/libown.so:loupe_own_func\nuprobe:/opt/libup.so:loupe_own_func\n' >want
cmp -s out want || fail "the process's own files: $(cat out)"

no_openat2 timeout 10 "$LOUPE" -q -p "$P" \
  -e 'uprobe:/prog:loupe_target { printf("fired\n"); exit(); }' >out 2>err
grep -qx fired out || fail "a uprobe on the process's /prog: $(cat out err)"

[ "$failures" = 0 ] && echo "no openat2: paths resolved inside the process's root"
[ "$failures" = 0 ]
