#!/usr/bin/env bash
# A known workload of a million events a second and more, under steady
# scrapes: a program of its own makes N1 = 5,000,000 getppid calls in a
# tight loop, counted by loupe (`@calls = count()` on
# syscalls:sys_enter_getppid, filtered to its pid), while 20 scrapers
# read /metrics at once, again and again, and Prometheus scrapes it every
# second; then N2 = 1,000,000 more calls with only Prometheus scraping; then a dd
# of 1,000-byte writes for a histogram. Checks:
# - no lost counts: each scraper's values never go down and never pass
#   N1; the scrape after the first N1 calls says N1; the count at exit is
#   that last scrape's plus the N2 calls that came after, N1 + N2, and
#   Prometheus's API returns exactly that;
# - promtool accepts every payload every scraper got;
# - histogram_quantile(0.5) over loupe's histogram lies inside the bucket
#   loupe's own hist() output puts the writes in ([512, 1K));
# - every scrape was answered (no stall of the event loop), a request with
#   a 64 KB header and one that never finishes get an error or a timeout;
# - a scrape while loupe ends gets an answer or a refused connection,
#   never a hang.
# The rate reached is printed, not checked (the machine may be busy;
# bench/metrics.sh measures it).
#
# Exits 0, 1 with what failed, or 77 when Prometheus is not installed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/metrics/lib.sh"

N1=5000000
N2=1000000
gcc -O2 -o "$WORK/callgen" "$ROOT/tests/metrics/callgen.c" || { echo "needs gcc"; exit 77; }
"$WORK/callgen" $N1 $N2 >"$WORK/gen.out" &
GEN=$!
_PIDS+=("$GEN")
# SIGUSR1 is caught (SigCgt bit 0x200) before the first is sent
for _ in $(seq 100); do
  (( 0x$(awk '/^SigCgt:/ { print $2 }' "/proc/$GEN/status") & 0x200 )) && break
  sleep 0.05
done
cp "$(command -v dd)" "$WORK/ddsize"
SCRIPT="tracepoint:syscalls:sys_enter_getppid /pid == $GEN/ { @calls = count(); }
tracepoint:syscalls:sys_enter_write /comm == \"ddsize\"/ { @size = hist(args.count); }"
PORT=$(free_port)
URL=http://127.0.0.1:$PORT/metrics
"$LOUPE" --metrics "127.0.0.1:$PORT" -e "$SCRIPT" >"$WORK/loupe.out" 2>"$WORK/loupe.err" &
LOUPE_PID=$!
_PIDS+=("$LOUPE_PID")
for _ in $(seq 100); do grep -q Attached "$WORK/loupe.err" && break; sleep 0.1; done
grep -q Attached "$WORK/loupe.err" || { fail "loupe did not attach: $(cat "$WORK/loupe.err")"; exit 1; }
start_prometheus "127.0.0.1:$PORT" || { fail "Prometheus did not start"; exit 1; }

# 20 scrapers (tests/metrics/scrapers.py: threads of one process, each
# with a connection kept alive, not to take the generator's CPU), each
# scraping every 0.2 s until the first N1 calls are made, keeping every
# payload (promtool checks them all afterwards) and every value of the
# count in order
wait_for_line() {   # the generator's line $1 (one per phase), in 120 s
  for _ in $(seq 1200); do
    [ "$(grep -c . "$WORK/gen.out")" -ge "$1" ] && return 0
    sleep 0.1
  done
  return 1
}
python3 "$ROOT/tests/metrics/scrapers.py" "$URL" 20 0.2 "$WORK" "$WORK/done" \
  'loupe_calls_total{script="stdin"} ' >"$WORK/scrapes" &
SCRAPERS=$!
_PIDS+=("$SCRAPERS")

kill -USR1 "$GEN"
wait_for_line 1 || fail "the generator did not finish its $N1 calls"
touch "$WORK/done"
wait "$SCRAPERS"
read -r ok bad <"$WORK/scrapes"
read -r _ rate1 < <(sed -n 1p "$WORK/gen.out")
echo "$N1 calls at $rate1 a second under 20 scrapers; $ok scrapes answered, $bad failed"
[ "$bad" = 0 ] || fail "$bad of $((ok + bad)) scrapes failed"
[ "$ok" -ge 20 ] || fail "only $ok scrapes were answered"
lint=$(check_payloads "$WORK"/scrape.*) || fail "promtool: $(head -5 <<<"$lint")"
for i in $(seq 20); do
  [ -e "$WORK/values.$i" ] || continue   # started after the calls ended
  awk -v n=$N1 -v who="scraper $i" '
    $1 > n { print who ": " $1 " is more than the " n " calls made"; exit 1 }
    NR > 1 && $1 < prev { print who ": " $1 " after " prev; exit 1 }
    { prev = $1 }' "$WORK/values.$i" >>"$WORK/order" || true
done
[ -s "$WORK/order" ] && fail "scrapes out of order: $(head -5 "$WORK/order")"

# the last scrape, then N2 calls nobody scrapes
last=$(curl -sf "$URL" | sed -n 's/^loupe_calls_total{script="stdin"} //p')
[ "$last" = $N1 ] || fail "the scrape after $N1 calls says $last"
kill -USR1 "$GEN"
wait_for_line 2 || fail "the generator did not finish its $N2 calls"
read -r _ rate2 < <(sed -n 2p "$WORK/gen.out")
echo "$N2 calls at $rate2 a second, not scraped but by Prometheus"

"$WORK/ddsize" if=/dev/zero of=/dev/null bs=1000 count=1001 status=none
# a huge header, and a request that never finishes, while scrapes go on
python3 - "$PORT" <<'PY' >"$WORK/huge" 2>&1
import socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
s.settimeout(15)
try:
    print(s.recv(100).split(b"\r\n")[0].decode())
except OSError as e:
    print("closed", e)
slow = socket.create_connection(("127.0.0.1", port))
slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
PY
grep -qE '^HTTP/1.1 (4|5)[0-9][0-9]|^closed' "$WORK/huge" ||
  fail "a 64 KB header got: $(cat "$WORK/huge")"

wait_query 'loupe_calls_total' " $((N1 + N2))\$" 30 || fail "Prometheus does not hold the exact count"
wait_query 'loupe_size_count' ' 1001$' 30 || fail "Prometheus does not hold the histogram"
q=$(prom_query 'histogram_quantile(0.5, loupe_size_bucket)' | awk '{ print $NF }')
awk -v q="$q" 'BEGIN { exit !(q >= 512 && q < 1024) }' ||
  fail "histogram_quantile(0.5) is $q, outside [512, 1K)"
curl -sf -o "$WORK/final" "$URL" || fail "the scrape before the exit went unanswered"
out=$(check_payload "$WORK/final" "the scrape before the exit") || fail "$out"

# a scrape while loupe ends: answered or refused, within its timeout
kill -INT "$LOUPE_PID"
curl -s --max-time 5 -o /dev/null "$URL"
[ $? = 28 ] && fail "a scrape during exit hung"
wait "$LOUPE_PID"
grep -qxF "@calls: $((last + N2))" "$WORK/loupe.out" ||
  fail "the count at exit is not the last scrape's ($last) plus $N2: $(head -3 "$WORK/loupe.out")"
grep -qE '^\[512, 1K\) +1001 ' "$WORK/loupe.out" ||
  fail "loupe's own hist() does not put the writes in [512, 1K): $(cat "$WORK/loupe.out")"

[ $failures = 0 ] || exit 1
echo "exact at a million events a second and 20 scrapers; the median inside loupe's bucket"
