#!/usr/bin/env bash
# A known workload under steady scrapes: a dd of 1,000,000 one-byte writes
# (as fast as dd writes while they run) counted by loupe while 20
# scrapers read /metrics at once, again and again, and Prometheus scrapes
# it every second; then a dd of 1,000-byte writes for a histogram. Checks:
# - Prometheus's API returns exactly 1,000,000 for the count;
# - histogram_quantile(0.5) over loupe's histogram lies inside the bucket
#   loupe's own hist() output puts the writes in ([512, 1K));
# - every scrape was answered (no stall of the event loop), a request with
#   a 64 KB header and one that never finishes get an error or a timeout,
#   and loupe's count at exit is the last scrape's;
# - a scrape while loupe ends gets an answer or a refused connection,
#   never a hang.
#
# Exits 0, 1 with what failed, or 77 when Prometheus is not installed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/metrics/lib.sh"

cp "$(command -v dd)" "$WORK/ddload"
cp "$(command -v dd)" "$WORK/ddsize"
SCRIPT='tracepoint:syscalls:sys_enter_write /comm == "ddload"/ { @writes = count(); }
tracepoint:syscalls:sys_enter_write /comm == "ddsize"/ { @size = hist(args.count); }'
PORT=$(free_port)
URL=http://127.0.0.1:$PORT/metrics
"$LOUPE" --metrics "127.0.0.1:$PORT" -e "$SCRIPT" >"$WORK/loupe.out" 2>"$WORK/loupe.err" &
LOUPE_PID=$!
_PIDS+=("$LOUPE_PID")
for _ in $(seq 100); do grep -q Attached "$WORK/loupe.err" && break; sleep 0.1; done
grep -q Attached "$WORK/loupe.err" || { fail "loupe did not attach: $(cat "$WORK/loupe.err")"; exit 1; }
start_prometheus "127.0.0.1:$PORT" || { fail "Prometheus did not start"; exit 1; }

# 20 scrapers, each scraping until the workload ends, counting failures
: >"$WORK/scrapes"
scraper() {
  local ok=0 bad=0
  while [ ! -e "$WORK/done" ]; do
    if curl -sf --max-time 5 -o /dev/null "$URL"; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  done
  echo "$ok $bad" >>"$WORK/scrapes"
}
SCRAPERS=()
for _ in $(seq 20); do scraper & SCRAPERS+=($!); done
_PIDS+=("${SCRAPERS[@]}")

start=$(date +%s%N)
"$WORK/ddload" if=/dev/zero of=/dev/null bs=1 count=1000000 status=none
end=$(date +%s%N)
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
touch "$WORK/done"
for p in "${SCRAPERS[@]}"; do wait "$p"; done
read -r ok bad < <(awk '{ o += $1; b += $2 } END { print o + 0, b + 0 }' "$WORK/scrapes")
echo "dd: $(( (end - start) / 1000000 )) ms for 1,000,000 writes; $ok scrapes answered, $bad failed"
[ "$bad" = 0 ] || fail "$bad of $((ok + bad)) scrapes failed"
[ "$ok" -ge 20 ] || fail "only $ok scrapes were answered"
grep -qE '^HTTP/1.1 (4|5)[0-9][0-9]|^closed' "$WORK/huge" ||
  fail "a 64 KB header got: $(cat "$WORK/huge")"

wait_query 'loupe_writes_total' ' 1000000$' 30 || fail "Prometheus does not hold the exact count"
wait_query 'loupe_size_count' ' 1001$' 30 || fail "Prometheus does not hold the histogram"
q=$(prom_query 'histogram_quantile(0.5, loupe_size_bucket)' | awk '{ print $NF }')
awk -v q="$q" 'BEGIN { exit !(q >= 512 && q < 1024) }' ||
  fail "histogram_quantile(0.5) is $q, outside [512, 1K)"
last=$(curl -sf "$URL" | sed -n 's/^loupe_writes_total{script="stdin"} //p')

# a scrape while loupe ends: answered or refused, within its timeout
kill -INT "$LOUPE_PID"
curl -s --max-time 5 -o /dev/null "$URL"
[ $? = 28 ] && fail "a scrape during exit hung"
wait "$LOUPE_PID"
grep -qxF "@writes: $last" "$WORK/loupe.out" ||
  fail "the count at exit is not the last scrape's ($last): $(head -3 "$WORK/loupe.out")"
grep -qE '^\[512, 1K\) +1001 ' "$WORK/loupe.out" ||
  fail "loupe's own hist() does not put the writes in [512, 1K): $(cat "$WORK/loupe.out")"

[ $failures = 0 ] || exit 1
echo "exact under load and 20 scrapers; the median inside loupe's bucket"
