#!/usr/bin/env bash
# Benchmarks loupe, side by side with bpftrace when it is installed.
#
#   sudo bench/run.sh [-n RUNS] [-t SECONDS]
#
# For each script below it prints
#   - start-up: from exec until every probe is attached and BEGIN has
#     printed (each script gets a `BEGIN { printf("go\n"); }`, and the clock
#     stops when "go" arrives on stdout), median of RUNS runs;
#   - peak memory: the process's maximum resident set (GNU time's %M);
#   - per program, with kernel.bpf_stats_enabled=1 while a load generator
#     runs for SECONDS: the xlated instruction count (bytes_xlated / 8) and
#     the kernel's run_time_ns / run_cnt, summed over the script's programs
#     (BEGIN and END left out), taken for each second and the median given;
#   - the kernel verifier's work for the same programs: the instructions it
#     processed and the states it kept (its statistics, which both tracers
#     print with -v), summed.
# The tracer under test is $LOUPE (default ./loupe), the reference $BPFTRACE
# (default bpftrace). Figures are medians; ratios are bpftrace / loupe.
set -u
cd "$(dirname "$0")/.." || exit 1

RUNS=10
SECONDS_UNDER_LOAD=5
while getopts n:t: opt; do
  case $opt in
    n) RUNS=$OPTARG ;;
    t) SECONDS_UNDER_LOAD=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-t SECONDS]" >&2; exit 1 ;;
  esac
done

LOUPE=${LOUPE:-./loupe}
BPFTRACE=${BPFTRACE:-bpftrace}
[ "$(id -u)" = 0 ] || { echo "bench/run.sh: needs root" >&2; exit 1; }
[ -x "$LOUPE" ] || { echo "bench/run.sh: build loupe first (make)" >&2; exit 1; }
TOOLS=("$LOUPE")
command -v "$BPFTRACE" >/dev/null && TOOLS+=("$BPFTRACE")
# GNU time measures peak memory; pgrep finds the tracer under it.
if ! [ -x /usr/bin/time ] || ! command -v pgrep >/dev/null; then
  apt-get install -y time procps >/dev/null 2>&1 || echo "(no GNU time: memory not measured)" >&2
fi


WORK=$(mktemp -d /tmp/loupe-bench.XXXXXX)
OLD_STATS=$(sysctl -n kernel.bpf_stats_enabled)
LOAD_PID=""
cleanup() {
  sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  [ -n "$LOAD_PID" ] && kill "$LOAD_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

. "$(dirname "$0")/lib.sh"

# Makes syscalls, execs, opens and reads until killed.
start_load() {
  ( while :; do cat /etc/hostname /etc/os-release >/dev/null; done ) &
  LOAD_PID=$!
}
stop_load() { kill "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null; LOAD_PID=""; }

# Prints "insns run_time_ns run_cnt", the totals of the non-BEGIN/END
# programs the tracer holds.
program_figures() {
  local pid=$1 ids id insns=0 ns=0 cnt=0 info
  ids=$(tracer_prog_ids "$pid")
  for id in $ids; do
    info=$(bpftool prog show id "$id" 2>/dev/null)
    grep -qE '  name (BEGIN|END) ' <<<"$info" && continue
    insns=$((insns + $(sed -nE 's/.*xlated ([0-9]+)B.*/\1/p' <<<"$info") / 8))
    ns=$((ns + $(sed -nE 's/.*run_time_ns ([0-9]+).*/\1/p' <<<"$info" | grep . || echo 0)))
    cnt=$((cnt + $(sed -nE 's/.*run_cnt ([0-9]+).*/\1/p' <<<"$info" | grep . || echo 0)))
  done
  echo "$insns $ns $cnt"
}

# Prints "insns ns_per_run": the median over SECONDS one-second windows
# of the tracer's programs' run time per run.
program_figures_under_load() {
  local pid=$1 insns ns cnt ns0 cnt0
  read -r insns ns0 cnt0 < <(program_figures "$pid")
  for _ in $(seq "$SECONDS_UNDER_LOAD"); do
    sleep 1
    read -r insns ns cnt < <(program_figures "$pid")
    awk -v n=$((ns - ns0)) -v c=$((cnt - cnt0)) 'BEGIN { if (c > 0) printf "%.0f\n", n / c }'
    ns0=$ns cnt0=$cnt
  done >"$WORK/ns"
  echo "$insns $(median <"$WORK/ns")"
}

# Prints "processed states" of the verifier for TOOL's programs of SCRIPT
# (loaded and attached; stopped after 4 s). bpftrace prints
# the statistics on stdout and the probe names on stderr: both go to the
# pipe, stdout line-buffered so that they stay in order.
verifier_figures() {
  local tool=$1 script=$2
  timeout -k 5 -s INT 4 stdbuf -oL "$tool" -v -e "$script" 2>&1 |
    verifier_sums
}

declare -A START MEM INSNS NSRUN VPROC VSTATES
for s in "${!NAMES[@]}"; do
  for tool in "${TOOLS[@]}"; do
    key="$s,$tool"
    : >"$WORK/start"; : >"$WORK/rss"
    for _ in $(seq "$RUNS"); do
      start_tracer "$tool" "${SCRIPTS[$s]}"
      echo "$STARTUP_MS" >>"$WORK/start"
      stop_tracer >>"$WORK/rss"
    done
    START[$key]=$(median <"$WORK/start")
    MEM[$key]=$(grep -vx -e - "$WORK/rss" | median)
    INSNS[$key]=-; NSRUN[$key]=-; VPROC[$key]=-; VSTATES[$key]=-
    [ "${NAMES[$s]}" = begin ] && continue
    read -r VPROC[$key] VSTATES[$key] < <(verifier_figures "$tool" "${SCRIPTS[$s]}")
    sysctl -qw kernel.bpf_stats_enabled=1
    start_tracer "$tool" "${SCRIPTS[$s]}"
    start_load
    read -r insns ns_per_run < <(program_figures_under_load "$TRACER_PID")
    INSNS[$key]=$insns; NSRUN[$key]=$ns_per_run
    stop_load
    stop_tracer >/dev/null
    sysctl -qw kernel.bpf_stats_enabled="$OLD_STATS"
  done
done

L=${TOOLS[0]}
B=${TOOLS[1]:-}
bversion="not installed"
[ -n "$B" ] && bversion=$("$B" --version)
echo "$("$LOUPE" --version), $bversion, $(uname -r), $(nproc) CPUs"
echo "start-up: exec until attached and BEGIN printed (median of $RUNS); peak RSS"
printf '%-10s %10s %10s %7s %10s %10s %7s\n' script "loupe ms" "bpft ms" ratio \
  "loupe KB" "bpft KB" ratio
for s in "${!NAMES[@]}"; do
  l=$(printf %s "${START[$s,$L]}"); b=${B:+${START[$s,$B]}}
  lm=${MEM[$s,$L]}; bm=${B:+${MEM[$s,$B]}}
  printf '%-10s %10s %10s %7s %10s %10s %7s\n' "${NAMES[$s]}" "$l" "${b:--}" \
    "$(ratio "$l" "${b:--}")" "$lm" "${bm:--}" "$(ratio "$lm" "${bm:--}")"
done
# Prints a table of two figures per script (BEGIN left out): TITLE, the
# column names of the first and second figure, and the names of the two
# associative arrays (keyed "script,tool") that hold them.
pair_table() {
  local -n first=$4 second=$5
  echo
  echo "$1"
  printf '%-10s %10s %10s %7s %10s %10s %7s\n' script "loupe $2" "bpft $2" ratio \
    "loupe $3" "bpft $3" ratio
  for s in "${!NAMES[@]}"; do
    [ "${NAMES[$s]}" = begin ] && continue
    local l1=${first[$s,$L]} b1=${B:+${first[$s,$B]}}
    local l2=${second[$s,$L]} b2=${B:+${second[$s,$B]}}
    printf '%-10s %10s %10s %7s %10s %10s %7s\n' "${NAMES[$s]}" "$l1" "${b1:--}" \
      "$(ratio "$l1" "${b1:--}")" "$l2" "${b2:--}" "$(ratio "$l2" "${b2:--}")"
  done
}
pair_table "per program, under load: xlated instructions; ns per run (median of ${SECONDS_UNDER_LOAD} seconds)" \
  ins ns INSNS NSRUN
pair_table "verifier: instructions processed; states kept (kernel statistics, -v)" \
  ins st VPROC VSTATES
