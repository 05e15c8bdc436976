#!/usr/bin/env bash
# Differential test: the same deterministic scripts (BEGIN-only, or on real
# probes with a workload of their own) run under loupe and Debian's
# bpftrace 0.17 must print the same (see KNOWN.md).
#
#   tests/differential/run.sh corpus     the fixed corpus (part of make check);
#                                        fails on a difference not listed in
#                                        expected-differences.txt
#   tests/differential/run.sh N [SEED [KIND]]
#                                        N fresh scripts from gen.py (SEED
#                                        default: the time; KIND probe: on a
#                                        tracepoint with a workload); the
#                                        scripts stay in a printed directory
#   LOUPE=/path/to/loupe                 the binary under test (default ./loupe)
#   DIFF_JOBS=2                          scripts run at the same time
#
# Skips (exit 77) without bpftrace or python3.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
command -v bpftrace >/dev/null || { echo "no bpftrace to compare with"; exit 77; }
command -v python3 >/dev/null || { echo "no python3"; exit 77; }
[ -x "$LOUPE" ] || { echo "no loupe binary at $LOUPE"; exit 1; }
# bpftrace 0.17 warns on stderr when it cannot raise RLIMIT_MEMLOCK; harmless.
ulimit -l unlimited 2>/dev/null

case ${1:-corpus} in
  corpus)
    exec python3 "$HERE/compare.py" "$LOUPE" "$HERE/corpus" \
      "$HERE/expected-differences.txt" ;;
  *[!0-9]*) sed -n '2,18s/^# \{0,1\}//p' "$0"; exit 2 ;;
  *)
    dir=$(mktemp -d /tmp/loupe-diff.XXXXXX)
    python3 "$HERE/gen.py" "$dir" "$1" "${2:-$(date +%s)}" ${3:+"$3"} || exit 1
    echo "scripts in $dir"
    exec python3 "$HERE/compare.py" "$LOUPE" "$dir" ;;
esac
