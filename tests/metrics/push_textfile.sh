#!/usr/bin/env bash
# Runs that end hand their final values on: -c with --metrics-push to
# Debian's Pushgateway, and -f openmetrics -o FILE.prom into the directory
# Debian's node_exporter reads with its textfile collector. Prometheus
# scrapes both, and must hold the exact count of the command's getppid
# calls, with the script's and --metrics-label's labels (one with a '/'
# in its value, which the push's URL must carry). With --interval the
# file is rewritten while the run goes on. promtool accepts what was
# pushed (kept by a server of the test's own), the file and the file
# --interval rewrites. A gateway that is not there
# fails the run with exit status 1 and says so.
#
# Exits 0, 1 with what failed, or 77 when the servers are not installed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/metrics/lib.sh"

build_getppid_gen pushgen || { echo "needs gcc"; exit 77; }
cat >"$WORK/calls.bt" <<'BT'
tracepoint:syscalls:sys_enter_getppid /comm == "pushgen"/ {
  @calls[comm] = count();
  @sizes = hist(100);
}
BT

start_pushgateway || { fail "the Pushgateway did not start"; exit 1; }
mkdir -p "$WORK/textfiles"
start_node_exporter "$WORK/textfiles" || { fail "node_exporter did not start"; exit 1; }

"$LOUPE" -q --metrics-push "http://$PUSHGW" --metrics-label team=a/b \
  -c "$WORK/pushgen 700" "$WORK/calls.bt" >"$WORK/push.out" 2>"$WORK/push.err"
status=$?
[ $status = 0 ] || fail "the push run: exit status $status: $(cat "$WORK/push.err")"
grep -qxF '@calls[pushgen]: 700' "$WORK/push.out" ||
  fail "the push run's own output: $(cat "$WORK/push.out")"

# what loupe pushes, as it pushes it: a server of the test's own keeps the
# body of the PUT it gets, for promtool
RPORT=$(free_port)
python3 - "$RPORT" "$WORK/pushed" <<'PY' &
import http.server, sys
class Keep(http.server.BaseHTTPRequestHandler):
    def do_PUT(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with open(sys.argv[2] + ".part", "wb") as f:
            f.write(body)
        self.send_response(202)
        self.end_headers()
        import os
        os.rename(sys.argv[2] + ".part", sys.argv[2])
    def log_message(self, *args):
        pass
server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Keep)
open(sys.argv[2] + ".ready", "w").close()
server.timeout = 60
server.handle_request()
PY
_PIDS+=($!)
for _ in $(seq 100); do [ -e "$WORK/pushed.ready" ] && break; sleep 0.1; done
"$LOUPE" -q --metrics-push "http://127.0.0.1:$RPORT" --metrics-label team=a/b \
  -c "$WORK/pushgen 70" "$WORK/calls.bt" >/dev/null 2>"$WORK/kept.err" ||
  fail "the push to the test's server: $(cat "$WORK/kept.err")"
if [ -s "$WORK/pushed" ]; then
  grep -qxF 'loupe_calls_total{script="calls",team="a/b",comm="pushgen"} 70' "$WORK/pushed" ||
    fail "the pushed body lacks the count: $(cat "$WORK/pushed")"
  out=$(check_payload "$WORK/pushed" "the pushed body") || fail "$out"
else
  fail "the test's server got no body"
fi

"$LOUPE" -q -f openmetrics -o "$WORK/textfiles/loupe.prom" \
  --metrics-label team=c -c "$WORK/pushgen 300" "$WORK/calls.bt" \
  >"$WORK/file.out" 2>"$WORK/file.err"
status=$?
[ $status = 0 ] || fail "the textfile run: exit status $status: $(cat "$WORK/file.err")"
[ "$(tail -n 1 "$WORK/textfiles/loupe.prom")" = "# EOF" ] ||
  fail "the textfile is not whole OpenMetrics"
out=$(check_payload "$WORK/textfiles/loupe.prom" "the textfile") || fail "$out"
ls -a "$WORK/textfiles" | grep -q '\.tmp$' && fail "a temporary file was left"
[ -s "$WORK/file.out" ] && fail "-f openmetrics -o also printed the maps: $(cat "$WORK/file.out")"

# --interval: the file is there, and counting, while the run goes on
"$LOUPE" -q -f prometheus -o "$WORK/live.prom" --interval 1 \
  -e 'interval:ms:100 { @ticks = count(); }' >/dev/null 2>"$WORK/live.err" &
LIVE=$!
_PIDS+=("$LIVE")
for _ in $(seq 100); do
  grep -qE '^loupe_ticks_total\{script="stdin"\} [1-9]' "$WORK/live.prom" 2>/dev/null && break
  sleep 0.1
done
kill -0 "$LIVE" 2>/dev/null || fail "--interval: loupe ended: $(cat "$WORK/live.err")"
grep -qE '^loupe_ticks_total\{script="stdin"\} [1-9]' "$WORK/live.prom" 2>/dev/null ||
  fail "--interval 1: no count in the file while the run goes on"
cp "$WORK/live.prom" "$WORK/live.copy" 2>/dev/null   # rewritten meanwhile
out=$(check_payload "$WORK/live.copy" "the file --interval rewrites") || fail "$out"
kill -INT "$LIVE"
wait "$LIVE"
"$LOUPE" --interval 1 -e 'BEGIN { exit(); }' >/dev/null 2>"$WORK/iv.err" &&
  fail "--interval without -f ... -o was taken"
grep -q "give both" "$WORK/iv.err" || fail "--interval alone: $(cat "$WORK/iv.err")"

start_prometheus "$PUSHGW" "$NODE_EXPORTER" || { fail "Prometheus did not start"; exit 1; }
wait_query 'loupe_calls_total{team="a/b",script="calls",exported_job="loupe"}' ' 700$' 30 ||
  fail "the pushed count is not in Prometheus"
wait_query 'loupe_sizes_bucket{team="a/b",le="127"}' ' 700$' 10 ||
  fail "the pushed histogram is not in Prometheus"
wait_query 'loupe_calls_total{team="c",script="calls"}' ' 300$' 30 ||
  fail "the textfile's count is not in Prometheus"
wait_query 'node_textfile_scrape_error' ' 0$' 10 ||
  fail "node_exporter could not read the textfile"

# no gateway there: a precise error and exit status 1
PORT=$(free_port)
"$LOUPE" -q --metrics-push "http://127.0.0.1:$PORT" -c "$WORK/pushgen 1" \
  "$WORK/calls.bt" >/dev/null 2>"$WORK/nogw.err"
status=$?
[ $status = 1 ] || fail "no gateway: exit status $status"
grep -q "pushing to http://127.0.0.1:$PORT/metrics/job/loupe/.*: " "$WORK/nogw.err" ||
  fail "no gateway: $(cat "$WORK/nogw.err")"

[ $failures = 0 ] || exit 1
echo "pushed to the Pushgateway and written for node_exporter; Prometheus holds both"
