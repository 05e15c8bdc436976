#!/usr/bin/env bash
# Runs loupe's fuzzers (build/fuzz/fuzz_NAME, from `make fuzz`), each for
# SECONDS (default 60) on JOBS worker processes (default 1), one after
# the other, from seeds made afresh:
#
#   tests/fuzz/run.sh [SECONDS] [JOBS] [NAME...]
#
#   compile    scripts, through the whole compiler (fuzz_compile.c)
#   usdt_args  USDT argument specs (fuzz_usdt_args.c)
#   elf        ELF files: USDT notes, symbols, DWARF (fuzz_elf.c)
#   maps       /proc/PID/maps text (fuzz_maps.c)
#   tp_format  tracepoint format files (fuzz_tp_format.c)
#   include    #included headers (fuzz_include.c)
#   records    records from the BPF programs, printed (fuzz_records.c)
#
# Without NAME, all of them. LOUPE_FUZZ_FLAGS adds libFuzzer flags (e.g.
# "-ignore_crashes=1" to go on after a finding). With LOUPE_FUZZ_RUNS=N set, each run is
# reproducible instead: one process, a fixed seed (LOUPE_FUZZ_SEED,
# default 1), N inputs (fewer for the slow harnesses: RUNS_SHARE below),
# starting from the seeds alone. The same commit then always tries the
# same inputs, so `make check` cannot pass or fail by luck.
#
# Findings (crashing inputs) land in build/fuzz/findings/NAME/ (a
# reproducible run's in build/fuzz/findings-repro/NAME/, emptied first);
# the run fails if there is one. Each finding, once fixed, is kept in
# tests/fuzz/regressions/ (NAME/, or the directory itself for compile),
# which tests/fuzz/smoke.sh runs again, and becomes a test of its own
# where it can. The corpus libFuzzer grows is kept in build/fuzz/corpus/NAME
# between runs. The last run's log: build/fuzz/last-run-NAME.log.
set -u
cd "$(dirname "$0")/../.." || exit 1
SECONDS_TO_RUN=${1:-60}
JOBS=${2:-1}
shift $(($# < 2 ? $# : 2))
ALL=(compile usdt_args elf maps tp_format include records)
NAMES=("${@:-${ALL[@]}}")

# Per thousand of LOUPE_FUZZ_RUNS: the harnesses whose inputs are slow
# (files written and read, a script compiled per input) run fewer.
declare -A RUNS_SHARE=([compile]=1000 [usdt_args]=300 [elf]=50 [maps]=1000
                       [tp_format]=50 [include]=50 [records]=500)
declare -A MAX_LEN=([compile]=4096 [usdt_args]=512 [elf]=65536 [maps]=8192
                    [tp_format]=8192 [include]=4096 [records]=4096)
declare -A DICT=([compile]=tests/fuzz/loupe.dict
                 [usdt_args]=tests/fuzz/usdt_args.dict
                 [tp_format]=tests/fuzz/tp_format.dict
                 [include]=tests/fuzz/loupe.dict)

# ---- seeds, one function per harness, into directory $1 ------------------

seeds_compile() {   # the SCRIPT of each declarative test, the examples
  local n=0 t
  for t in tests/runtime/*.test tests/errors/*.test; do
    n=$((n + 1))
    awk '/^SCRIPT:$/ { inblock = 1; next }
         inblock && /^END_SCRIPT$/ { exit }
         inblock { print; next }
         /^SCRIPT: / { sub(/^SCRIPT: /, ""); print; exit }' "$t" >"$1/t$n.bt"
  done
  cp examples/*.bt "$1/" 2>/dev/null
}

seeds_usdt_args() {   # specs as gcc writes them, and sym(%rip) forms
  local n=0 spec
  for spec in '-4@%edi 8@%rsi' '8@-16(%rbp) -2@%ax 1@%ah' '4@$42 -8@$-1' \
      '8@fuzz_usdt_symbol(%rip)' '-8@fuzz_usdt_symbol' \
      '4@fuzz_usdt_symbol+8(%rip)' '8@8(%rax,%rbx,4) 8@(%rsp) 8@(,%rcx,8)' \
      '8@0x601040 -4@-0x10(%r12) 2@%r8w 1@%sil 8@%r15'; do
    n=$((n + 1))
    printf '%s' "$spec" >"$1/spec$n"
  done
}

seeds_elf() {   # the test programs, built with debug information
  command -v gcc >/dev/null || return 0
  local src=tests/runtime
  gcc -g -O1 -o "$1/usdt" "$src/probes_usdt_target.c" &&
    gcc -g -O1 -o "$1/dwarf" "$src/probes_uprobe_dwarf_target.c" &&
    gcc -g -O0 -o "$1/bitfields" "$src/lang_struct_bitfields_target.c" &&
    gcc -g -O0 -S -dA -o "$1/lies.s" "$src/probes_uprobe_dwarf_lies_target.c" &&
    awk -f "$src/dwarf_lies.awk" "$1/lies.s" "$1/lies.s" >"$1/lies2.s" &&
    gcc -o "$1/lies" "$1/lies2.s"
  rm -f "$1"/*.s
}

seeds_maps() {   # a real process's maps, and names a process may choose
  cat /proc/self/maps >"$1/self"
  printf '%s\n' \
    '55d0c0000000-55d0c0001000 r--p 00000000 08:01 1234   /usr/bin/prog' \
    '55d0c0001000-55d0c0002000 r-xp 00001000 08:01 1234   /usr/bin/prog' \
    '7f0000000000-7f0000001000 r-xp 00000000 08:01 99   /tmp/a b (deleted)' \
    '7f0000001000-7f0000002000 rw-p 00000000 00:00 0   [heap]' \
    '7f0000002000-7f0000003000 r-xp 00000000 08:01 7   /lib/libc.so.6' \
    >"$1/named"
}

seeds_tp_format() {   # this kernel's format files, a few kinds of fields
  local dir=/sys/kernel/tracing/events ev n=0
  [ -d "$dir" ] || dir=/sys/kernel/debug/tracing/events
  for ev in sched/sched_switch syscalls/sys_enter_openat \
      syscalls/sys_enter_execve net/netif_receive_skb irq/irq_handler_entry \
      signal/signal_generate; do
    n=$((n + 1))
    cat "$dir/$ev/format" >"$1/f$n" 2>/dev/null || rm -f "$1/f$n"
  done
  printf 'name: e\nID: 1\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\n\tfield:__data_loc char[] name;\toffset:8;\tsize:4;\tsigned:0;\n\tfield:u8 mac[6];\toffset:12;\tsize:6;\tsigned:0;\n\tfield:const char * s;\toffset:24;\tsize:8;\tsigned:0;\n\nprint fmt: "%%s", __get_str(name)\n' >"$1/made"
}

seeds_include() {   # headers: macros and structs; one with a script
  printf '#define VALUE 1\n#define NAME "n"\nstruct S { int a; char b[4]; };\n' >"$1/h1"
  printf '#define NAME comm\nstruct S { struct S *next; long v[2]; };\n#define VALUE sizeof(struct S)\n' >"$1/h2"
  printf '#define X 3\n\0BEGIN { printf("%%d\\n", X); exit(); }\n' >"$1/h3"
}

seeds_records() {   # a record of each kind, as the harness's script sends
  LOUPE_FUZZ_WRITE_SEEDS=$1 build/fuzz/fuzz_records -runs=1 >/dev/null 2>&1
}

# ---- one harness's run ------------------------------------------------------

# The compiler keeps each input's AST to the end of its process, and the
# DWARF types of each ELF input: fork mode restarts worker processes, which
# keeps memory bounded. Leaks are by design and not reported.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

run_one() {
  local name=$1 bin=build/fuzz/fuzz_$1
  [ -x "$bin" ] || { echo "tests/fuzz/run.sh: build $bin first (make fuzz)" >&2; return 1; }
  local seeds=build/fuzz/seeds/$name corpus=build/fuzz/corpus/$name
  local findings=build/fuzz/findings/$name mode
  rm -rf "$seeds"   # made afresh: a reproducible run must start from the same seeds
  mkdir -p "$seeds" "$corpus" "$findings"
  "seeds_$name" "$seeds"
  if [ -n "${LOUPE_FUZZ_RUNS:-}" ]; then
    # its own findings, so that an open-ended run's do not fail it
    findings=build/fuzz/findings-repro/$name
    rm -rf "$findings" && mkdir -p "$findings"
    corpus=$(mktemp -d)
    local runs=$((LOUPE_FUZZ_RUNS * RUNS_SHARE[$name] / 1000))
    mode=(-seed="${LOUPE_FUZZ_SEED:-1}" -runs="$((runs > 0 ? runs : 1))")
  else
    mode=(-fork="$JOBS" -max_total_time="$SECONDS_TO_RUN")
  fi
  local dict=()
  [ -n "${DICT[$name]:-}" ] && dict=(-dict="${DICT[$name]}")
  echo "== $name"
  # shellcheck disable=SC2086  # LOUPE_FUZZ_FLAGS: more libFuzzer flags
  "$bin" "${mode[@]}" "${dict[@]}" ${LOUPE_FUZZ_FLAGS:-} -timeout=10 -rss_limit_mb=4096 \
    -max_len="${MAX_LEN[$name]}" -artifact_prefix="$findings/" \
    "$corpus" "$seeds" 2>&1 |
    tee "build/fuzz/last-run-$name.log" |
    grep -E '^#|INFO: fuzzed|ERROR|SUMMARY|crash' | tail -n 8
  [ -n "${LOUPE_FUZZ_RUNS:-}" ] && rm -rf "$corpus"
  local found
  found=$(ls "$findings" | grep -cE '^(crash|leak|timeout|oom|slow-unit)-' || true)
  echo "findings: $found (in $findings)"
  [ "$found" = 0 ]
}

status=0
for name in "${NAMES[@]}"; do
  run_one "$name" || status=1
done
exit $status
