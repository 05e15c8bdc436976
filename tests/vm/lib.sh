# Shared by the VM lane's scripts (tests/vm/*.sh), sourced at their top
# with their arguments. On the host it boots the VM runner once and runs
# the sourcing script inside it (exit 77 when it cannot: no runner, not
# root); inside, it sets up WORK, a file to read (READ_IT runs dd on it)
# and the helpers pass, fail, trace and check.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
case $LOUPE in /*) ;; */*) LOUPE=$PWD/$LOUPE ;; *) LOUPE=$(command -v "$LOUPE") ;; esac

# ---- on the host: boot once, run this script inside -------------------
if [ "${1:-}" != --inside ]; then
  VM=${RUN_IN_VM:-/work/shared/vm/run-in-vm}
  [ -x "$VM" ] || { echo "skip: no VM runner at $VM"; exit 77; }
  [ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
  exec "$VM" "LOUPE=$LOUPE bash $ROOT/tests/vm/$(basename "$0") --inside"
fi

# ---- inside the VM ------------------------------------------------------
WORK=$(mktemp -d /tmp/loupe-vm.XXXXXX)
failed=0
# The load: dd reads its input with read(2) whatever the output is (cat
# may copy with copy_file_range instead).
echo "loupe in a VM" >"$WORK/vmfile"
READ_IT="dd if=$WORK/vmfile of=/dev/null bs=64 status=none"

pass() { echo "PASS $1"; }
fail() {
  echo "FAIL $1"
  shift
  printf '%s\n' "$@" | sed 's/^/    /'
  failed=$((failed + 1))
}

# trace SCRIPT LOAD: runs loupe on SCRIPT, runs the shell command LOAD once
# it attached, then stops it with SIGINT. Leaves stdout and stderr in
# $WORK/out and $WORK/err, and the exit status in $status.
trace_opts=()   # options for trace's loupe, as a test sets them
trace() {
  local script=$1 load=$2 i
  "$LOUPE" "${trace_opts[@]}" -e "$script" >"$WORK/out" 2>"$WORK/err" &
  local pid=$!
  # Under emulation, loading and attaching takes seconds.
  for ((i = 0; i < 600; i++)); do
    grep -qE 'Attached [0-9]+ probes?' "$WORK/err" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  bash -c "$load" >/dev/null 2>&1
  sleep 0.5
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  status=$?
}

# check NAME REGEX...: every regex must match a line of stdout.
check() {
  local name=$1 re
  shift
  for re in "$@"; do
    if ! grep -qE "$re" "$WORK/out"; then
      fail "$name" "no stdout line matches: $re" "stdout: $(head -c 2000 "$WORK/out")" \
        "stderr: $(head -c 600 "$WORK/err")"
      return
    fi
  done
  pass "$name"
}

