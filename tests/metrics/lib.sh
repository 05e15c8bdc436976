# Helpers of the metrics tests (sourced, not run): Debian's Prometheus
# servers started on 127.0.0.1 by the test itself, on free ports, and
# stopped by pid when the test exits, however it exits. Sourcing it skips
# the test (exit 77) unless it runs as root with the servers installed.
#
#   free_port                     a port nobody listens on now
#   start_prometheus TARGET...    Prometheus scraping each HOST:PORT every
#                                 second (job "loupe"); $PROM is its address
#                                 RULES=FILE adds a rule file
#   prom_query EXPR               the query's result now, a line per
#                                 series: {labels} value
#   wait_query EXPR REGEX SECS    waits until a result line matches
#   start_pushgateway             $PUSHGW is its address
#   start_node_exporter DIR       textfile collector of DIR; $NODE_EXPORTER
#   wait_http URL SECS            waits until URL answers
#   fail MESSAGE                  prints FAIL and counts it in $failures
#   start_bg CMD...               runs CMD in the background, stopped at exit
#   check_payload FILE WHAT       promtool check metrics on a payload loupe
#                                 served or wrote (payload.sh)
#   scrape URL FILE [openmetrics] fetches URL into FILE (as Prometheus asks
#                                 for OpenMetrics, or as curl asks) and
#                                 checks the payload; fails the test if not
#
# $WORK is a scratch directory, removed at exit.
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
for _tool in prometheus prometheus-pushgateway prometheus-node-exporter promtool curl; do
  command -v $_tool >/dev/null || { echo "needs $_tool (make test-deps)"; exit 77; }
done
WORK=$(mktemp -d /tmp/loupe-metrics.XXXXXX)
_PIDS=()
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
_stop_all() {
  local p
  for p in "${_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
  for p in "${_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null
  done
  rm -rf "$WORK"
}
trap _stop_all EXIT
. "$(dirname "${BASH_SOURCE[0]}")/payload.sh"

scrape() {
  local accept=()
  [ "${3:-}" = openmetrics ] &&
    accept=(-H 'Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5')
  curl -sf --max-time 5 "${accept[@]}" -o "$2" "$1" || { fail "no answer from $1"; return 1; }
  local out
  out=$(check_payload "$2" "$1${3:+ ($3)}") || { fail "$out"; return 1; }
}

# $WORK/NAME: a program that calls getppid() as many times as its one
# argument says, then exits; its name is the comm a script filters on.
build_getppid_gen() {
  printf '%s\n' '#include <stdlib.h>' '#include <unistd.h>' \
    'int main(int argc, char **argv) {' \
    '  for (long i = argc > 1 ? atol(argv[1]) : 0; i > 0; i--) getppid();' \
    '  return 0;' '}' >"$WORK/$1.c" &&
    gcc -O1 -o "$WORK/$1" "$WORK/$1.c"
}

start_bg() {
  "$@" >>"$WORK/servers.log" 2>&1 &
  _PIDS+=($!)
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_http() {
  local end=$(( $(date +%s) + $2 ))
  while [ "$(date +%s)" -le $end ]; do
    curl -sf -o /dev/null --max-time 2 "$1" && return 0
    sleep 0.2
  done
  echo "no answer from $1 in $2 s; servers said:"; tail -20 "$WORK/servers.log"
  return 1
}

start_prometheus() {
  local port t targets=""
  port=$(free_port)
  for t in "$@"; do targets+="'$t', "; done
  cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
${RULES:+rule_files: ['$RULES']}
scrape_configs:
  - job_name: loupe
    static_configs:
      - targets: [${targets%, }]
YML
  mkdir -p "$WORK/tsdb"
  start_bg prometheus --config.file="$WORK/prometheus.yml" \
    --storage.tsdb.path="$WORK/tsdb" --web.listen-address="127.0.0.1:$port" \
    --log.level=warn
  PROM=127.0.0.1:$port
  wait_http "http://$PROM/-/ready" 30
}

prom_query() {
  curl -sf --max-time 5 "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
    python3 -c '
import json, sys
for r in json.load(sys.stdin)["data"]["result"]:
    labels = ",".join(f"{k}=\"{v}\"" for k, v in sorted(r["metric"].items()))
    print("{" + labels + "} " + r["value"][1])'
}

wait_query() {
  local end=$(( $(date +%s) + $3 )) out=""
  while [ "$(date +%s)" -le $end ]; do
    out=$(prom_query "$1")
    grep -qE "$2" <<<"$out" && return 0
    sleep 0.5
  done
  echo "query $1 never matched $2; last result:"; echo "$out"
  return 1
}

start_pushgateway() {
  local port; port=$(free_port)
  start_bg prometheus-pushgateway --web.listen-address="127.0.0.1:$port" \
    --persistence.file="$WORK/pushgateway.data" --log.level=warn
  PUSHGW=127.0.0.1:$port
  wait_http "http://$PUSHGW/-/ready" 30
}

start_node_exporter() {
  local port; port=$(free_port)
  start_bg prometheus-node-exporter --web.listen-address="127.0.0.1:$port" \
    --collector.disable-defaults --collector.textfile \
    --collector.textfile.directory="$1" --log.level=warn
  NODE_EXPORTER=127.0.0.1:$port
  wait_http "http://$NODE_EXPORTER/metrics" 30
}
