#!/usr/bin/env bash
# The fuzzing smoke test of `make check`: builds the compiler fuzzer, runs
# every past finding (tests/fuzz/regressions/) through it, then a
# reproducible fuzzing run: fixed seed, LOUPE_FUZZ_RUNS inputs (default
# 100000, about a minute). Open-ended random runs are `make fuzz`. Skips
# (77) without clang.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
command -v clang >/dev/null || { echo "no clang: fuzzer not built"; exit 77; }
make -s build/fuzz/fuzz_compile >build/fuzz-build.log 2>&1 ||
  { cat build/fuzz-build.log; exit 1; }
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
out=$(build/fuzz/fuzz_compile tests/fuzz/regressions/* 2>&1) ||
  { tail -n 30 <<<"$out"; echo "a past finding fails again"; exit 1; }
LOUPE_FUZZ_RUNS=${LOUPE_FUZZ_RUNS:-100000} tests/fuzz/run.sh
