#!/usr/bin/env bash
# A file with a great many USDT notes, as a traced process may map one.
#
#   1. 80,000 notes, each a probe of its own whose argument is a symbol
#      (8@vN(%rip)): `loupe -l 'usdt:FILE:*'` lists all of them within
#      10 s. Reading them was quadratic twice over (each note compared
#      with the ones before it, each symbol operand a scan of the symbol
#      tables): 20,000 notes took 1.3 s without symbols and 7.6 s with
#      them, and 80,000 several minutes.
#   2. 100,001 notes, one more than loupe reads from a file: -l says so in
#      a warning and lists none, and a script naming one of its probes
#      gets the warning and "No usdt probe matches", exit 1.
#   3. one probe at 40,000 places, each with its own spec of arg0: a
#      script reading arg0 gets its error (the program's branch over the
#      places is too long) within 10 s. Grouping the places by spec
#      compared each with every one before it: 80,000 took 2 min 50 s.
#
# Prints what failed and exits 1, or exits 0.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/faults/lib.sh"
command -v gcc >/dev/null && command -v python3 >/dev/null ||
  { echo "needs gcc and python3"; exit 77; }
WORK=$(mktemp -d /tmp/loupe-usdt-notes.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

# A shared library of $1 notes (provider gen, probe pN at the Nth nop);
# with $2 = sym, each note's argument is the symbol vN, a quad of .data;
# with $2 = places, all are probe p, the Nth with argument 8@8N(%rbp).
make_lib() {
  python3 - "$1" "${2:-}" >"$WORK/notes.s" <<'EOF'
import sys
n, sym, places = int(sys.argv[1]), sys.argv[2] == "sym", sys.argv[2] == "places"
w = sys.stdout.write
w(".text\n")
for i in range(n):
    w(f"{1000000 + i}: nop\n")
if sym:
    w(".data\n")
    for i in range(n):
        w(f".globl v{i}\nv{i}: .quad 0\n")
w('.section .note.stapsdt,"?","note"\n')
for i in range(n):
    arg = f"8@v{i}(%rip)" if sym else f"8@{8 * i}(%rbp)" if places else "-4@%edi"
    name = "p" if places else f"p{i}"
    w(f'.balign 4\n.4byte 2f-1f, 4f-3f, 3\n1: .asciz "stapsdt"\n'
      f"2: .balign 4\n3: .8byte {1000000 + i}b\n.8byte 0\n.8byte 0\n"
      f'.asciz "gen"\n.asciz "{name}"\n.asciz "{arg}"\n4: .balign 4\n')
EOF
  gcc -shared -nostdlib -o "$WORK/lib.so" "$WORK/notes.s"
}

make_lib 80000 sym || { echo "cannot build the library"; exit 1; }
start=$(date +%s%N)
timeout -s KILL 10 "$LOUPE" -l "usdt:$WORK/lib.so:*" >"$WORK/out" 2>"$WORK/err"
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ "$status" = 0 ] || fail "80,000 notes: exit status $status after $ms ms" \
  "(137: killed after 10 s)"
lines=$(wc -l <"$WORK/out")
[ "$lines" = 80000 ] || fail "80,000 notes: $lines lines listed"
grep -qxF "usdt:$WORK/lib.so:gen:p79999" "$WORK/out" ||
  fail "80,000 notes: no usdt:FILE:gen:p79999 listed"
echo "80,000 notes with symbol operands: listed in $ms ms"

make_lib 100001 || { echo "cannot build the library"; exit 1; }
want="WARNING: $WORK/lib.so has more than 100000 USDT notes: none of its probes are read"
timeout -s KILL 10 "$LOUPE" -l "usdt:$WORK/lib.so:*" >"$WORK/out" 2>"$WORK/err"
status=$?
[ "$status" = 0 ] || fail "100,001 notes, -l: exit status $status"
[ -s "$WORK/out" ] && fail "100,001 notes, -l: listed $(wc -l <"$WORK/out") probes"
grep -qxF "$want" "$WORK/err" ||
  fail "100,001 notes, -l: no warning in: $(head -c 300 "$WORK/err")"
timeout -s KILL 10 "$LOUPE" -e "usdt:$WORK/lib.so:gen:p1 { exit(); }" \
  >"$WORK/out" 2>"$WORK/err"
status=$?
[ "$status" = 1 ] || fail "100,001 notes, script: exit status $status, not 1"
grep -qF "${want#WARNING: }" "$WORK/err" &&
  grep -q "ERROR: No usdt probe matches $WORK/lib.so:gen:p1" "$WORK/err" ||
  fail "100,001 notes, script: $(head -c 500 "$WORK/err")"
echo "100,001 notes: $(grep -c WARNING "$WORK/err") warning, then" \
  "$(grep -o 'ERROR: No usdt probe matches' "$WORK/err")"

make_lib 40000 places || { echo "cannot build the library"; exit 1; }
start=$(date +%s%N)
timeout -s KILL 10 "$LOUPE" --dry-run -e "usdt:$WORK/lib.so:gen:p { @ = sum(arg0); }" \
  >"$WORK/out" 2>"$WORK/err"
status=$?
ms=$((($(date +%s%N) - start) / 1000000))
[ "$status" = 1 ] || fail "40,000 places: exit status $status after $ms ms" \
  "(137: killed after 10 s)"
grep -q "ERROR: this branch spans more than 32767 BPF instructions" "$WORK/err" ||
  fail "40,000 places: $(head -c 300 "$WORK/err")"
echo "one probe at 40,000 places with their own argument specs: error in $ms ms"
exit $((failures > 0))
