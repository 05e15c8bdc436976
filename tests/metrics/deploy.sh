#!/usr/bin/env bash
# The deployment files of deploy/ are what they claim, checked with what
# Debian has (no systemd as PID 1 here, no Kubernetes cluster):
#
# - the systemd unit passes `systemd-analyze verify` (its ExecStart
#   pointed at the loupe under test, man pages not looked up);
# - loupe works with exactly the unit's CapabilityBoundingSet and
#   NoNewPrivileges (setpriv): a tracepoint, a uprobe with user symbols
#   and stacks in another process (its maps, map_files), kernel symbols;
#   and the set is not larger than needed for that: without CAP_SYS_ADMIN
#   the uprobe is refused, without CAP_SYSLOG kernel addresses are hidden;
# - the Kubernetes manifest passes yamllint and every object in it checks
#   against the Kubernetes API's types (tests/metrics/k8s_validate.py,
#   with Debian's python3-kubernetes), which also finds planted mistakes.
#
# Exits 0, 1 with what failed, or 77 when a tool is missing.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
for tool in systemd-analyze setpriv yamllint; do
  command -v $tool >/dev/null || { echo "needs $tool"; exit 77; }
done
/usr/bin/python3 -c 'import kubernetes, yaml' 2>/dev/null ||
  { echo "needs python3-kubernetes"; exit 77; }
WORK=$(mktemp -d /tmp/loupe-deploy.XXXXXX)
TARGET=""
cleanup() {
  [ -n "$TARGET" ] && kill -KILL "$TARGET" 2>/dev/null && wait "$TARGET" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

UNIT=$ROOT/deploy/systemd/loupe@.service
sed "s|/usr/local/bin/loupe|$LOUPE|" "$UNIT" >"$WORK/loupe@test.service"
systemd-analyze verify --man=no "$WORK/loupe@test.service" >"$WORK/verify" 2>&1 ||
  fail "systemd-analyze verify: $(cat "$WORK/verify")"

# CapabilityBoundingSet=CAP_A CAP_B -> -all,+a,+b
caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
[ -n "$caps" ] || fail "the unit sets no CapabilityBoundingSet"
grep -qx 'NoNewPrivileges=yes' "$UNIT" || fail "the unit does not set NoNewPrivileges"
bounding=-all
for c in $caps; do
  c=${c#CAP_}; bounding+=",+${c,,}"
done
# $1: capabilities to leave out of the unit's set; the rest: loupe's args
as_unit() {
  local set=$bounding drop
  for drop in $1; do set=${set/,+$drop/}; done
  shift
  setpriv --bounding-set="$set" --no-new-privs "$LOUPE" "$@"
}

# a process of its own to trace (a loop of clock_nanosleep in libc)
cat >"$WORK/sleeper.c" <<'C'
#include <time.h>
__attribute__((noinline)) void tick(void) {
  struct timespec ts = {0, 20000000};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}
int main(void) { for (int i = 0; i < 1000; i++) tick(); return 0; }
C
gcc -O1 -g -o "$WORK/sleeper" "$WORK/sleeper.c" || { echo "needs gcc"; exit 77; }
"$WORK/sleeper" & TARGET=$!

out=$(as_unit "" -q -e 'tracepoint:syscalls:sys_enter_clock_nanosleep
  /pid == '"$TARGET"'/ { @[comm] = count(); if (@[comm] == 2) { exit(); } }' 2>&1)
[[ $out == *"@[sleeper]: 2"* ]] ||
  fail "a tracepoint with the unit's capabilities: $out"

# (-p: probes act in that process only, interval probes too: the script
# ends itself)
USCRIPT='uprobe:'"$WORK"'/sleeper:tick { @[usym(reg("ip")), ustack(1)] = count();
  if (@[usym(reg("ip")), ustack(1)] == 2) { exit(); } }'
out=$(as_unit "" -q -p "$TARGET" -e "$USCRIPT" 2>&1)
[[ $out == *"@[tick, "*"tick+0@$WORK/sleeper.c:"* ]] ||
  fail "a uprobe with user symbols with the unit's capabilities: $out"
out=$(as_unit sys_admin -q -p "$TARGET" -e "$USCRIPT" 2>&1)
[[ $out == *"Permission denied"* ]] ||
  fail "without CAP_SYS_ADMIN a uprobe was not refused, so the unit needs it no more: $out"

KSCRIPT='BEGIN { printf("%s\n", ksym(kaddr("do_sys_openat2"))); exit(); }'
out=$(as_unit "" -q -e "$KSCRIPT" 2>&1)
[ "$out" = do_sys_openat2 ] || fail "kernel symbols with the unit's capabilities: $out"
out=$(as_unit syslog -q -e "$KSCRIPT" 2>&1)
[[ $out == *"addresses are hidden"* ]] ||
  fail "without CAP_SYSLOG kernel addresses were not hidden, so the unit needs it no more: $out"

MANIFEST=$ROOT/deploy/kubernetes/loupe.yaml
yamllint -d relaxed "$MANIFEST" >"$WORK/lint" 2>&1 || fail "yamllint: $(cat "$WORK/lint")"
/usr/bin/python3 "$ROOT/tests/metrics/k8s_validate.py" "$MANIFEST" >"$WORK/k8s" 2>&1 ||
  fail "the manifest does not check: $(cat "$WORK/k8s")"
grep -q 'hostPID: true' "$MANIFEST" || fail "the DaemonSet does not see the host's processes"
# the checker finds mistakes: a misspelt field, a wrong type, a missing name
sed -e 's/hostPID: true/hostPid: true/' -e 's/privileged: true/privileged: "yes"/' \
    -e 's/^        - name: loupe$/        - image_name: loupe/' "$MANIFEST" >"$WORK/bad.yaml"
out=$(/usr/bin/python3 "$ROOT/tests/metrics/k8s_validate.py" "$WORK/bad.yaml" 2>&1) &&
  fail "a manifest with mistakes checked: $out"
for want in "no field 'hostPid'" "true or false expected" "needs field 'name'"; do
  [[ $out == *"$want"* ]] || fail "the checker did not say $want: $out"
done

# the unit's command line, as systemd would run it (its defaults, a free
# port), serves /metrics with the host label
if command -v curl >/dev/null && command -v python3 >/dev/null; then
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$WORK/etc"
  echo 'interval:ms:100 { @ticks = count(); }' >"$WORK/etc/ticks.bt"
  cmd=$(sed -n 's/^ExecStart=//p' "$UNIT")
  cmd=${cmd//'${LOUPE_METRICS}'/127.0.0.1:$port}
  cmd=${cmd//'$LOUPE_OPTIONS'/}
  cmd=${cmd//'%H'/$(hostname)}
  cmd=${cmd//'/etc/loupe/%i.bt'/$WORK/etc/ticks.bt}
  cmd=${cmd//'/usr/local/bin/loupe'/$LOUPE}
  read -ra words <<<"$cmd"
  setpriv --bounding-set="$bounding" --no-new-privs "${words[@]}" \
    >"$WORK/unit.out" 2>"$WORK/unit.err" &
  UNIT_PID=$!
  got="" want="^loupe_ticks_total{script=\"ticks\",host=\"$(hostname)\"} [1-9]"
  for _ in $(seq 100); do
    got=$(curl -sf --max-time 2 "http://127.0.0.1:$port/metrics") &&
      grep -q "$want" <<<"$got" && break
    sleep 0.2
  done
  kill -TERM "$UNIT_PID"; wait "$UNIT_PID"
  grep -q "$want" <<<"$got" ||
    fail "the unit's command line served no ticks: $got $(cat "$WORK/unit.err")"
  if command -v promtool >/dev/null; then
    . "$ROOT/tests/metrics/payload.sh"
    echo "$got" >"$WORK/unit.payload"
    out=$(check_payload "$WORK/unit.payload" "what the unit's command line served") ||
      fail "$out"
  fi
fi

# the Prometheus configuration and alert rules of deploy/prometheus check,
# and the rules' own tests pass
if command -v promtool >/dev/null; then
  (cd "$ROOT/deploy/prometheus" && promtool check config prometheus.yml &&
     promtool check rules loupe-rules.yml &&
     promtool test rules loupe-rules.test.yml) >"$WORK/promtool" 2>&1 ||
    fail "deploy/prometheus: $(cat "$WORK/promtool")"
fi

[ $failures = 0 ] || exit 1
echo "unit, capabilities, manifest and Prometheus rules check"
