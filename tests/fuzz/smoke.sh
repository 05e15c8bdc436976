#!/usr/bin/env bash
# The fuzzing smoke test of `make check`: builds every fuzzer, runs every
# past finding through its harness (tests/fuzz/regressions/: the files
# there for the compiler, regressions/NAME/ for fuzz_NAME), then a
# reproducible fuzzing run of each harness: fixed seed, LOUPE_FUZZ_RUNS
# inputs (default 100000, fewer for the slow harnesses; about two minutes
# in all). Open-ended random runs are `make fuzz`. Skips (77) without
# clang.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
command -v clang >/dev/null || { echo "no clang: fuzzer not built"; exit 77; }
fuzzers=$(ls tests/fuzz/fuzz_*.c | sed 's|^tests/fuzz/|build/fuzz/|; s|\.c$||')
# shellcheck disable=SC2086
make -s -j2 $fuzzers >build/fuzz-build.log 2>&1 ||
  { cat build/fuzz-build.log; exit 1; }
# tests/run.sh builds them first, untimed (LOUPE_FUZZ_BUILD_ONLY=1): on a
# loaded machine clang's ASan build of every harness takes minutes, and
# the test's time limit is there for the runs.
[ -n "${LOUPE_FUZZ_BUILD_ONLY:-}" ] && exit 0
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# Runs the files given through harness $1; fails with what it said.
replay() {
  local name=$1 out
  shift
  [ $# -gt 0 ] || return 0
  out=$("build/fuzz/fuzz_$name" "$@" 2>&1) ||
    { tail -n 30 <<<"$out"; echo "a past finding of fuzz_$name fails again"; return 1; }
}
mapfile -t compile_inputs < <(find tests/fuzz/regressions -maxdepth 1 -type f | sort)
replay compile "${compile_inputs[@]}" || exit 1
for dir in tests/fuzz/regressions/*/; do
  name=$(basename "$dir")
  [ -x "build/fuzz/fuzz_$name" ] || { echo "no harness fuzz_$name for $dir"; exit 1; }
  mapfile -t inputs < <(find "$dir" -type f | sort)
  replay "$name" "${inputs[@]}" || exit 1
done
LOUPE_FUZZ_RUNS=${LOUPE_FUZZ_RUNS:-100000} tests/fuzz/run.sh
