#!/usr/bin/env bash
# Runs the compiler fuzzer (build/fuzz/fuzz_compile, from `make fuzz`) for
# SECONDS (default 60) on 1 worker process, from a seed corpus made of
# every script in tests/ and examples/.
#
#   tests/fuzz/run.sh [SECONDS] [JOBS]
#
# With LOUPE_FUZZ_RUNS=N set, the run is reproducible instead: one
# process, a fixed seed (LOUPE_FUZZ_SEED, default 1), N inputs, starting
# from the seeds alone. The same commit then always tries the same inputs,
# so `make check` cannot pass or fail by luck.
#
# Findings (crashing inputs) land in build/fuzz/findings/ (a reproducible
# run's in build/fuzz/findings-repro/, emptied first); the run fails if
# there is one. Each finding, once fixed, becomes a test of its own in
# tests/errors or tests/runtime. The corpus libFuzzer grows is kept in
# build/fuzz/corpus between runs.
set -u
cd "$(dirname "$0")/../.." || exit 1
SECONDS_TO_RUN=${1:-60}
JOBS=${2:-1}
BIN=build/fuzz/fuzz_compile
[ -x "$BIN" ] || { echo "tests/fuzz/run.sh: build $BIN first (make fuzz)" >&2; exit 1; }
seeds=build/fuzz/seeds corpus=build/fuzz/corpus findings=build/fuzz/findings
rm -rf "$seeds"   # made afresh: a reproducible run must start from the same seeds
mkdir -p "$seeds" "$corpus" "$findings"

# Seeds: the SCRIPT of each declarative test (one line or a block), and
# the example scripts.
n=0
for t in tests/runtime/*.test tests/errors/*.test; do
  n=$((n + 1))
  awk '/^SCRIPT:$/ { inblock = 1; next }
       inblock && /^END_SCRIPT$/ { exit }
       inblock { print; next }
       /^SCRIPT: / { sub(/^SCRIPT: /, ""); print; exit }' "$t" >"$seeds/t$n.bt"
done
cp examples/*.bt "$seeds/" 2>/dev/null

# The compiler keeps each input's AST to the end of its process: fork mode
# restarts worker processes, which keeps memory bounded. Leaks are by
# design (see the harness) and not reported.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if [ -n "${LOUPE_FUZZ_RUNS:-}" ]; then
  # its own findings, so that an open-ended run's do not fail it
  findings=build/fuzz/findings-repro
  rm -rf "$findings" && mkdir -p "$findings"
  corpus=$(mktemp -d)
  trap 'rm -rf "$corpus"' EXIT
  mode=(-seed="${LOUPE_FUZZ_SEED:-1}" -runs="$LOUPE_FUZZ_RUNS")
else
  mode=(-fork="$JOBS" -max_total_time="$SECONDS_TO_RUN")
fi
"$BIN" "${mode[@]}" -timeout=10 \
  -rss_limit_mb=4096 -max_len=4096 -dict=tests/fuzz/loupe.dict \
  -artifact_prefix="$findings/" "$corpus" "$seeds" 2>&1 |
  tee build/fuzz/last-run.log | grep -E '^#|INFO: fuzzed|ERROR|SUMMARY|crash' | tail -n 20
found=$(ls "$findings" | grep -cE '^(crash|leak|timeout|oom|slow-unit)-' || true)
echo "findings: $found (in $findings)"
[ "$found" = 0 ]
