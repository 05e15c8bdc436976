#!/usr/bin/env bash
# The verifier as an oracle: every script loupe's checker accepts must load
# into the kernel, or be refused with a located error.
#
#   tests/oracle/run.sh [N [SEED]]   N random scripts (default 200) from
#                                    tests/oracle/gen.py, seeds SEED.. (default
#                                    a random one)
#   tests/oracle/run.sh corpus       the fixed corpus tests/oracle/corpus/*.bt,
#                                    every one of which must load
#
# Each script starts with `BEGIN { exit(); }`: loupe loads every program,
# runs BEGIN, sees exit() and attaches nothing else. Each run is classified:
#   loaded    exit 0
#   refused   exit 1 with a located error from the checker (counted; a form
#             the generator meant to be valid is a generator or checker bug)
#   verifier  the kernel's verifier rejected a program: a code generator bug
#   complex   the verifier gave up on a program (a million instructions
#             walked, too many jumps): saved and counted, not failed, as
#             the script may simply ask too much
#   crash     killed by a signal, timed out, a sanitizer report, or any
#             other failure without a located error
# Bugs are saved with loupe's stderr under build/oracle/findings/. Exit 0
# when there was no bug (and, for the corpus, every script loaded).
# LOUPE=path tests another binary; TIMEOUT=s per script (default 60: the
# verifier may take 20 s to give up on a program on a busy machine).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
TIMEOUT=${TIMEOUT:-60}
FINDINGS=$ROOT/build/oracle/findings
[ "$(id -u)" = 0 ] || { echo "the oracle loads programs: needs root"; exit 77; }
[ -x "$LOUPE" ] || { echo "no $LOUPE (make first)"; exit 1; }
mkdir -p "$FINDINGS"
work=$(mktemp -d /tmp/loupe-oracle.XXXXXX)
trap 'rm -rf "$work"' EXIT

corpus=false
if [ "${1:-}" = corpus ]; then
  corpus=true
  scripts=("$ROOT"/tests/oracle/corpus/*.bt)
else
  n=${1:-200}
  seed=${2:-$(( (RANDOM << 15 | RANDOM) ))}
  echo "seeds $seed..$((seed + n - 1))"
  python3 "$ROOT/tests/oracle/gen.py" "$seed" "$n" "$work" || exit 1
  scripts=()
  for ((s = seed; s < seed + n; s++)); do scripts+=("$work/$s.bt"); done
fi

loaded=0 refused=0 verifier=0 complex=0 crash=0
declare -A reasons=()
# The first line of what loupe said, without locations, for the summary.
reason() { grep -m1 -o 'ERROR: .*' "$1" | cut -c1-110; }
save() {   # $1 script, $2 class, $3 stderr
  local dst=$FINDINGS/$2-$(basename "$1")
  cp "$1" "$dst" && cp "$3" "$dst.stderr"
  echo "$2: $dst"
  echo "    $(reason "$3" || tail -n 1 "$3")"
}
for script in "${scripts[@]}"; do
  err=$work/stderr
  timeout -s KILL "$TIMEOUT" "$LOUPE" -q "$script" >/dev/null 2>"$err"
  status=$?
  if [ $status = 0 ] && ! grep -qE 'Sanitizer|runtime error:' "$err"; then
    loaded=$((loaded + 1))
  elif [ $status = 1 ] && grep -q "the kernel's verifier rejected" "$err" &&
       grep -qE 'BPF program is too large|jumps is too complex' "$err"; then
    complex=$((complex + 1)); save "$script" complex "$err"
  elif [ $status = 1 ] && grep -q "the kernel's verifier rejected" "$err"; then
    verifier=$((verifier + 1)); save "$script" verifier "$err"
  elif [ $status = 1 ] && grep -qE '^[^ ]+:[0-9]+:[0-9]+(-[0-9]+)?: ERROR: ' "$err"; then
    refused=$((refused + 1))
    r=$(reason "$err" | sed -E 's/[@$][A-Za-z_0-9]+/V/g; s/[0-9]+/N/g')
    reasons[$r]=$(( ${reasons[$r]:-0} + 1 ))
    $corpus && save "$script" refused "$err"
  else
    crash=$((crash + 1)); save "$script" "crash$status" "$err"
  fi
done
total=${#scripts[@]}
if [ $refused -gt 0 ]; then
  echo "checker refusals by message:"
  for r in "${!reasons[@]}"; do printf '%6d  %s\n' "${reasons[$r]}" "$r"; done |
    sort -rn | head -n 20
fi
echo "$total scripts: $loaded loaded, $refused refused by the checker," \
     "$verifier rejected by the verifier (and $complex as too complex)," \
     "$crash crashed or timed out"
[ $verifier = 0 ] && [ $crash = 0 ] && { ! $corpus || [ $loaded = "$total" ]; }
