#!/usr/bin/env bash
# Runs loupe's test suite: the unit test binaries (build/unit/test_*), then
# every declarative test under tests/runtime and tests/errors, then the
# test scripts tests/tetris/*.sh, tests/faults/*.sh, tests/metrics/*.sh
# (against Debian's Prometheus servers) and tests/docs/*.py
# (the documentation's examples, run) (exit 0 passes, 77
# skips), the verifier oracle's corpus (tests/oracle/run.sh corpus: every
# script loads), the fuzzing smoke run tests/fuzz/smoke.sh (LOUPE_FUZZ_RUNS
# inputs, default 100000), the differential corpus run
# tests/differential/run.sh (against bpftrace), and with LOUPE_VM_TESTS=1
# the scripts tests/vm/*.sh, which boot a kernel with kprobes under QEMU
# (slow: left out by default, and of CI).
#
#   tests/run.sh              all tests
#   tests/run.sh WORD...      only test files whose path contains a WORD
#   LOUPE=/path/to/loupe      the binary under test (default: ./loupe)
#   KEEP=1                    keep each test's scratch directory
#   LOUPE_VM_TESTS=1          also run tests/vm/*.sh
#
# A test file is a list of `KEY: value` lines; `#` lines and blank lines
# between keys are ignored. A key followed by nothing opens a block that
# runs verbatim until a line `END_KEY` (e.g. `SCRIPT:` ... `END_SCRIPT`).
#
#   NAME:     what the test proves (default: the file name)
#   SCRIPT:   the script; run as `loupe ARGS -e SCRIPT` unless CMD is given.
#             It is also written to script.bt in the test's directory.
#   ARGS:     extra loupe arguments, shell-quoted
#   CMD:      a shell command to run instead (`loupe` is on PATH, cwd is the
#             test's scratch directory, which holds script.bt)
#   SETUP:    shell command run before loupe starts
#   RUN:      shell command run once loupe printed "Attached N probe(s)"
#   SIGNAL:   INT or TERM, sent to loupe 0.3 s after RUN finished
#   WAIT:     attached (default when RUN/SIGNAL is set) or none
#   TIMEOUT:  seconds for the whole test (default 10); loupe is then killed
#   EXIT:     expected exit status (default 0)
#   EXPECT:   exact stdout
#   EXPECT_REGEX:        regexes (ERE), each must match a stdout line, in order
#   REJECT_REGEX:        regexes no stdout line may match
#   EXPECT_STDERR:       exact stderr
#   EXPECT_STDERR_REGEX: like EXPECT_REGEX, for stderr
#   CHECK:    shell command run after loupe exited, in the scratch directory
#             (which holds loupe's `stdout` and `stderr`); must exit 0;
#             $LOUPE_ROOT is the repository
#   REQUIRES: commands that must exist, else the test is skipped
#   REQUIRES_FEATURE: kernel features `loupe --info` must say yes to
#             ("uprobe_multi"), else the test is skipped
#
# A sanitizer report on stderr fails any test. After each test no tracing BPF
# program loaded during the test may remain: loupe must leave nothing behind.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
export LOUPE_ROOT=$ROOT   # for CHECK commands that read the repository
case $LOUPE in /*) ;; */*) LOUPE=$PWD/$LOUPE ;; *) LOUPE=$(command -v "$LOUPE") ;; esac

passed=0 failed=0 skipped=0

# Under `make asan` a sanitizer report must fail the test even where exit
# status 1 is expected, so give sanitizers exit codes of their own. loupe
# frees its compiled script only at exit, by design: leaks are not checked.
export ASAN_OPTIONS=${ASAN_OPTIONS:-exitcode=86:detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:exitcode=87:print_stacktrace=1}

# Ids of loaded programs of the types loupe loads (tracepoint, perf_event,
# raw_tracepoint, tracing, and kprobe for kprobes and uprobes), and ids some
# live process holds an fd or link of.
tracing_prog_ids() {
  command -v bpftool >/dev/null || return 0
  bpftool prog show 2>/dev/null |
    sed -nE 's/^([0-9]+): (tracepoint|perf_event|raw_tracepoint|tracing|kprobe) .*/\1/p'
}
held_prog_ids() {
  cat /proc/[0-9]*/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u
}

failed_names=()
fail() {
  echo "FAIL $name"
  echo "$1" | sed 's/^/    /'
  failed=$((failed + 1))
  failed_names+=("$name")
}

# --- unit tests: each binary is one test, it prints "X: N passed, M failed"
run_unit_tests() {
  local bin out
  for bin in "$ROOT"/build/unit/test_*; do
    [ -x "$bin" ] || continue
    name=unit/${bin##*/}
    [ $# -gt 0 ] && ! matches_filter "$name" "$@" && continue
    if out=$(timeout 60 "$bin" 2>&1) && grep -qE ': [0-9]+ passed, 0 failed' <<<"$out"; then
      echo "PASS $name"; passed=$((passed + 1))
    else
      fail "$(tail -n 20 <<<"$out")"
    fi
  done
}

# Whether a word given matches the test's path under tests/ (not the
# checkout's own path: a checkout in /work/wt-batch ran every test for
# the word "batch").
matches_filter() {
  local path=${1#"$ROOT"/tests/} word; shift
  for word in "$@"; do [[ $path == *"$word"* ]] && return 0; done
  return 1
}

# --- test file parsing: fills the associative array T
declare -A T
parse_test() {
  local file=$1 line key block="" body=""
  T=()
  while IFS= read -r line || [ -n "$line" ]; do
    if [ -n "$block" ]; then
      if [ "$line" = "END_$block" ]; then
        T[$block]=$body; block=""
      else
        body+=$line$'\n'
      fi
      continue
    fi
    [[ $line =~ ^[[:space:]]*(#|$) ]] && continue
    if [[ $line =~ ^([A-Z_]+):[[:space:]]*$ ]]; then
      block=${BASH_REMATCH[1]}; body=""
    elif [[ $line =~ ^([A-Z_]+):[[:space:]]?(.*)$ ]]; then
      key=${BASH_REMATCH[1]}
      # A one-line EXPECT means that line plus its newline.
      case $key in EXPECT|EXPECT_STDERR) T[$key]=${BASH_REMATCH[2]}$'\n' ;;
                   *) T[$key]=${BASH_REMATCH[2]} ;; esac
    else
      echo "$file: cannot parse: $line" >&2; return 1
    fi
  done <"$file"
  [ -z "$block" ] || { echo "$file: missing END_$block" >&2; return 1; }
}

# Every regex (one per line of $1) must match a line of file $2, in order.
# Prints the first regex that did not match.
match_in_order() {
  local regexes=$1 file=$2 re line
  local -a lines
  mapfile -t lines <"$file"
  local i=0
  while IFS= read -r re; do
    [ -z "$re" ] && continue
    while [ $i -lt ${#lines[@]} ]; do
      line=${lines[$i]}; i=$((i + 1))
      [[ $line =~ $re ]] && continue 2
    done
    echo "$re"; return 1
  done <<<"$regexes"
  return 0
}

# Prints the first stdout line of file $2 that matches a regex of $1.
match_none() {
  local regexes=$1 file=$2 re line
  while IFS= read -r re; do
    [ -z "$re" ] && continue
    while IFS= read -r line; do
      [[ $line =~ $re ]] && { echo "$line  (matches $re)"; return 1; }
    done <"$file"
  done <<<"$regexes"
  return 0
}

# Waits until loupe ($1) reported attachment in $2, exited, or $3 passed.
wait_attached() {
  local pid=$1 errfile=$2 deadline=$3
  while [ "$(date +%s%N)" -lt "$deadline" ]; do
    grep -qE 'Attached [0-9]+ probes?' "$errfile" && return 0
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.02
  done
}

# Waits for $1 to exit until $2 (ns); sets $status, or returns 1 on timeout.
wait_exit() {
  local pid=$1 deadline=$2
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$(date +%s%N)" -ge "$deadline" ]; then
      kill -KILL -- "-$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      return 1
    fi
    sleep 0.02
  done
  wait "$pid"; status=$?
  kill -KILL -- "-$pid" 2>/dev/null   # leftovers of a compound CMD
  return 0
}

run_test() {
  local file=$1 rel=${1#"$ROOT"/tests/} dir pid status=0 req
  parse_test "$file" || { name=$rel; fail "malformed test file"; return; }
  name="${rel%.test}${T[NAME]:+ — ${T[NAME]}}"
  for req in ${T[REQUIRES]:-}; do
    if ! command -v "$req" >/dev/null; then
      echo "SKIP $name (needs $req)"; skipped=$((skipped + 1)); return
    fi
  done
  for req in ${T[REQUIRES_FEATURE]:-}; do
    if ! "$LOUPE" --info 2>/dev/null | grep -qx "  $req: yes"; then
      echo "SKIP $name (the kernel lacks $req)"; skipped=$((skipped + 1))
      return
    fi
  done

  dir=$(mktemp -d /tmp/loupe-test.XXXXXX)
  chmod 755 "$dir"
  mkdir "$dir/bin"
  ln -s "$LOUPE" "$dir/bin/loupe"
  printf '%s' "${T[SCRIPT]:-}" >"$dir/script.bt"
  local timeout_s=${T[TIMEOUT]:-10}
  local deadline=$(( $(date +%s%N) + timeout_s * 1000000000 ))
  local max_id_before; max_id_before=$(tracing_prog_ids | sort -n | tail -n 1)

  (cd "$dir" && PATH=$dir/bin:$PATH bash -c "${T[SETUP]:-true}") \
    >"$dir/setup.out" 2>&1 || { fail "SETUP failed: $(cat "$dir/setup.out")"; cleanup_dir "$dir"; return; }

  # Start loupe itself in the background so that $! is its pid, in a
  # process group of its own so that nothing the test started outlives it.
  # It runs as bin/loupe, so that its comm is "loupe" whatever $LOUPE is.
  if [ -n "${T[CMD]:-}" ]; then
    (cd "$dir" && PATH=$dir/bin:$PATH exec setsid bash -c "${T[CMD]}") \
      >"$dir/stdout" 2>"$dir/stderr" </dev/null &
  else
    local -a args=()
    eval "args=(${T[ARGS]:-})"
    (cd "$dir" && exec setsid bin/loupe "${args[@]}" -e "${T[SCRIPT]:-}") \
      >"$dir/stdout" 2>"$dir/stderr" </dev/null &
  fi
  pid=$!

  local wait=${T[WAIT]:-}
  [ -z "$wait" ] && { [ -n "${T[RUN]:-}${T[SIGNAL]:-}" ] && wait=attached || wait=none; }
  [ "$wait" = attached ] && wait_attached "$pid" "$dir/stderr" "$deadline"

  if [ -n "${T[RUN]:-}" ] && kill -0 "$pid" 2>/dev/null; then
    local left=$(( (deadline - $(date +%s%N)) / 1000000000 ))
    [ $left -lt 1 ] && left=1
    (cd "$dir" && PATH=$dir/bin:$PATH timeout -s KILL "$left" bash -c "${T[RUN]}") \
      >"$dir/run.out" 2>&1 </dev/null
  fi
  # A moment for the events RUN caused to reach user space first.
  if [ -n "${T[SIGNAL]:-}" ]; then
    sleep 0.3; kill -"${T[SIGNAL]}" "$pid" 2>/dev/null
  fi

  if ! wait_exit "$pid" "$deadline"; then
    fail "timed out after ${timeout_s}s and was killed
stdout: $(head -c 2000 "$dir/stdout")
stderr: $(head -c 2000 "$dir/stderr")"
    cleanup_dir "$dir"; return
  fi

  local problems="" miss
  [ "$status" = "${T[EXIT]:-0}" ] ||
    problems+="exit status $status, expected ${T[EXIT]:-0}"$'\n'
  if [ -n "${T[EXPECT]+x}" ]; then
    printf '%s' "${T[EXPECT]}" >"$dir/expected"
    diff -u --label expected --label stdout "$dir/expected" "$dir/stdout" >"$dir/diff" ||
      problems+="stdout differs:"$'\n'"$(head -n 40 "$dir/diff")"$'\n'
  fi
  if [ -n "${T[EXPECT_STDERR]+x}" ]; then
    printf '%s' "${T[EXPECT_STDERR]}" >"$dir/expected_err"
    diff -u --label expected --label stderr "$dir/expected_err" "$dir/stderr" >"$dir/diff" ||
      problems+="stderr differs:"$'\n'"$(head -n 40 "$dir/diff")"$'\n'
  fi
  [ -n "${T[EXPECT_REGEX]:-}" ] && ! miss=$(match_in_order "${T[EXPECT_REGEX]}" "$dir/stdout") &&
    problems+="no stdout line (in order) matches: $miss"$'\n'
  [ -n "${T[EXPECT_STDERR_REGEX]:-}" ] && ! miss=$(match_in_order "${T[EXPECT_STDERR_REGEX]}" "$dir/stderr") &&
    problems+="no stderr line (in order) matches: $miss"$'\n'
  [ -n "${T[REJECT_REGEX]:-}" ] && ! miss=$(match_none "${T[REJECT_REGEX]}" "$dir/stdout") &&
    problems+="unexpected stdout line: $miss"$'\n'
  grep -qE 'Sanitizer|runtime error:' "$dir/stderr" &&
    problems+="sanitizer report: $(grep -m3 -E 'Sanitizer|runtime error:' "$dir/stderr")"$'\n'
  if [ -n "${T[CHECK]:-}" ] &&
     ! miss=$(cd "$dir" && PATH=$dir/bin:$PATH bash -c "${T[CHECK]}" 2>&1); then
    problems+="CHECK failed: ${T[CHECK]}"$'\n'"$miss"$'\n'
  fi
  local leaked; leaked=$(check_no_leak "${max_id_before:-0}") || problems+="$leaked"$'\n'
  if [ -n "$problems" ] && [ -z "${T[EXPECT]+x}${T[EXPECT_STDERR]+x}" ]; then
    problems+="stdout: $(head -c 1500 "$dir/stdout")"$'\n'"stderr: $(head -c 1500 "$dir/stderr")"
  fi

  if [ -z "$problems" ]; then
    echo "PASS $name"; passed=$((passed + 1))
  else
    fail "$problems"
  fi
  cleanup_dir "$dir"
}

# A program loaded during the test (id above every id before it) that no
# live process holds is left behind: pinned, or kept by a stale link. Other
# tracers running meanwhile hold theirs, so they do not count. Programs are
# freed asynchronously after the last fd closes: allow a moment.
check_no_leak() {
  local max_before=$1 orphans id
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    orphans=$(tracing_prog_ids | awk -v max="$max_before" '$1 > max' |
              grep -vxF -f <(held_prog_ids; echo none))
    [ -z "$orphans" ] && return 0
    sleep 0.2
  done
  echo "BPF programs left in the kernel, held by no process:"
  for id in $orphans; do bpftool prog show id "$id" 2>/dev/null; done
  return 1
}

# A test that is a script (tests/tetris/*.sh): exit 0 passes, 77 skips.
# $2: seconds it may take (default 120); $3...: the script's arguments.
run_script_test() {
  local out status
  name=${1#"$ROOT"/tests/}${3:+ $3}
  out=$(LOUPE=$LOUPE timeout "${2:-120}" "$1" "${@:3}" 2>&1); status=$?
  case $status in
    0) echo "PASS $name"; passed=$((passed + 1)) ;;
    77) echo "SKIP $name ($(tail -n 1 <<<"$out"))"; skipped=$((skipped + 1)) ;;
    *) fail "exit status $status"$'\n'"$(tail -n 40 <<<"$out")" ;;
  esac
}

cleanup_dir() {
  [ -n "${KEEP:-}" ] && { echo "    (kept $1)"; return; }
  rm -rf "$1"
}

main() {
  [ -x "$LOUPE" ] || echo "warning: $LOUPE is not executable" >&2
  run_unit_tests "$@"
  local file
  for file in "$ROOT"/tests/runtime/*.test "$ROOT"/tests/errors/*.test; do
    [ -f "$file" ] || continue
    [ $# -gt 0 ] && ! matches_filter "$file" "$@" && continue
    run_test "$file"
  done
  for file in "$ROOT"/tests/tetris/*.sh "$ROOT"/tests/faults/*.sh \
              "$ROOT"/tests/metrics/*.sh "$ROOT"/tests/docs/*.py; do
    [ -x "$file" ] || continue
    [ $# -gt 0 ] && ! matches_filter "$file" "$@" && continue
    case $file in
      */metrics/soak.sh) run_script_test "$file" 900 ;;   # ten minutes
      *) run_script_test "$file" ;;
    esac
  done
  file=$ROOT/tests/oracle/run.sh
  if [ $# -eq 0 ] || matches_filter "$file" "$@"; then
    run_script_test "$file" 300 corpus
  fi
  file=$ROOT/tests/fuzz/smoke.sh
  if [ $# -eq 0 ] || matches_filter "$file" "$@"; then
    # the harnesses' build first, outside the time limit (a failed build
    # is reported by the timed run, which builds again)
    LOUPE_FUZZ_BUILD_ONLY=1 "$file" >/dev/null 2>&1
    run_script_test "$file" 900   # 1-2 minutes alone, 6 beside a CPU hog
  fi
  file=$ROOT/tests/differential/run.sh   # its fixed corpus
  if [ $# -eq 0 ] || matches_filter "$file" "$@"; then
    run_script_test "$file" 600
  fi
  if [ "${LOUPE_VM_TESTS:-}" = 1 ]; then
    for file in "$ROOT"/tests/vm/*.sh; do
      [ -x "$file" ] || continue
      [ $# -gt 0 ] && ! matches_filter "$file" "$@" && continue
      run_script_test "$file" 900
    done
  fi
  if [ $failed -gt 0 ]; then   # listed again, so nobody searches the log
    echo "Failed:"
    printf '    %s\n' "${failed_names[@]%% — *}"
  fi
  local summary="$passed passed, $failed failed"
  [ $skipped -gt 0 ] && summary+=", $skipped skipped"
  echo "$summary"
  [ $failed -eq 0 ]
}

main "$@"
