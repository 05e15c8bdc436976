#!/usr/bin/env bash
# The conformance tests this machine skips for its kernel (kprobes,
# fentry/fexit), run under a kernel that has them: Debian's 6.1 in the VM
# runner (../shared/vm/run-in-vm), with the upstream suite as
# ../shared/conformance/run.sh unpacks and builds it.
#
#   sudo bench/conformance_vm.sh [HOST_RUN.json] [OUT.json]
#
# HOST_RUN.json (default bench/conformance/HEAD.json) is a run on this
# machine: its tests skipped with "kernel lacks support [kprobe]" or
# "[fentry]" are the ones run. Under emulation everything is 10-30x
# slower, so timeouts are scaled by 4 and the attach limit is 40 s.
# `probe.fexit large args` is left out: it ends at its timeout, and a
# test run right after it once waited forever on the fexit trampoline's
# teardown. Prints the per-test lines and the totals; OUT.json (default
# /tmp/loupe-conformance-vm.json) gets the results.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
host_json=${1:-$root/bench/conformance/HEAD.json}
out=${2:-/tmp/loupe-conformance-vm.json}
loupe=${LOUPE:-$root/loupe}
vm=${RUN_IN_VM:-$root/../shared/vm/run-in-vm}
work=${CONF_WORK:-/tmp/loupe-conformance}
[ -x "$vm" ] || { echo "no VM runner at $vm" >&2; exit 1; }
[ -d "$work/build/testprogs" ] || {
  echo "run ../shared/conformance/run.sh once first (it builds $work)" >&2
  exit 1
}
job=$(mktemp -d /tmp/loupe-conf-vm.XXXXXX)
cp "$loupe" "$job/loupe"
python3 - "$host_json" "$job/args" <<'EOF'
import json, re, sys
runs = json.load(open(sys.argv[1]))["results"]
with open(sys.argv[2], "w") as f:
    for t in runs:
        if t["status"] == "SKIP" and re.search(
                r"kernel lacks support \[(kprobe|fentry)\]", t["reason"]):
            f.write("--only\n^%s$\n" % re.escape(t["file"] + "." + t["name"]))
    f.write("--exclude\n^probe\\.fexit large args$\n")
EOF
cat >"$job/inside.sh" <<EOF
mount | grep -q ' /sys/kernel/tracing ' || mount -t tracefs nodev /sys/kernel/tracing
mapfile -t args < $job/args
python3 $root/../shared/conformance/suite.py --bin $job/loupe \\
  --tests $work/src/tests/runtime --testprogs $work/build/testprogs \\
  --testlibs $work/build/testlibs --features-from /usr/bin/bpftrace \\
  --no-kernel-skips --timeout-scale 4 --attach-timeout 40 \\
  --json $job/out.json "\${args[@]}" >$job/log 2>&1
EOF
VM_RW=$job VM_TIMEOUT=${VM_TIMEOUT:-3000} "$vm" "bash $job/inside.sh" || true
cat "$job/log"
cp "$job/out.json" "$out" 2>/dev/null && echo "results: $out"
rm -rf "$job"
