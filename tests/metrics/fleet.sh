#!/usr/bin/env bash
# A fleet on one machine, as fleets run Prometheus: three loupe processes,
# each with a host label of its own and its own workload (a copy of a
# small program making a known number of getppid calls), each scraped by
# a Prometheus agent of its own (--enable-feature=agent) that remote-writes
# to one central Prometheus (--web.enable-remote-write-receiver). A
# `sum by (host)` on the central server must return each host's exact
# count; promtool accepts what each loupe serves. Every process is
# started here and stopped by pid.
#
# Exits 0, 1 with what failed, or 77 when Prometheus is not installed.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
. "$ROOT/tests/metrics/lib.sh"

build_getppid_gen fleetgen || { echo "needs gcc"; exit 77; }

# the central server
CPORT=$(free_port)
mkdir -p "$WORK/central"
printf 'global:\n  scrape_interval: 1s\n' >"$WORK/central.yml"
start_bg prometheus --config.file="$WORK/central.yml" \
  --storage.tsdb.path="$WORK/central" --web.listen-address="127.0.0.1:$CPORT" \
  --web.enable-remote-write-receiver --log.level=warn
PROM=127.0.0.1:$CPORT
wait_http "http://$PROM/-/ready" 30 || { fail "the central Prometheus did not start"; exit 1; }

# three hosts: loupe, its workload (a copy named after the host) and an agent
PORTS=()
for host in alpha beta gamma; do
  cp "$WORK/fleetgen" "$WORK/gen_$host"
  port=$(free_port)
  PORTS+=("$port")
  start_bg "$LOUPE" -q --metrics "127.0.0.1:$port" --metrics-label "host=$host" \
    -e "tracepoint:syscalls:sys_enter_getppid /comm == \"gen_$host\"/ { @calls = count(); }"
  aport=$(free_port)
  mkdir -p "$WORK/agent_$host"
  cat >"$WORK/agent_$host.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: loupe
    static_configs:
      - targets: ['127.0.0.1:$port']
remote_write:
  - url: http://$PROM/api/v1/write
    queue_config:
      batch_send_deadline: 1s
YML
  start_bg prometheus --enable-feature=agent --config.file="$WORK/agent_$host.yml" \
    --storage.agent.path="$WORK/agent_$host" --web.listen-address="127.0.0.1:$aport" \
    --log.level=warn
  wait_http "http://127.0.0.1:$port/metrics" 30 || fail "loupe of $host does not serve"
done

# each host's workload: its loupe answers /metrics only from its event
# loop, once the probe is attached
"$WORK/gen_alpha" 1111
"$WORK/gen_beta" 2222
"$WORK/gen_gamma" 3333

wait_query 'sum by (host) (loupe_calls_total)' 'host="alpha".* 1111$' 60 || fail "alpha's count"
wait_query 'sum by (host) (loupe_calls_total)' 'host="beta".* 2222$' 30 || fail "beta's count"
wait_query 'sum by (host) (loupe_calls_total)' 'host="gamma".* 3333$' 30 || fail "gamma's count"
n=$(prom_query 'count(loupe_up)' | awk '{ print $NF }')
[ "$n" = 3 ] || fail "the central server sees $n loupes, not 3"
# promtool accepts what each loupe serves, in either format
for port in "${PORTS[@]}"; do
  scrape "http://127.0.0.1:$port/metrics" "$WORK/served.$port"
  scrape "http://127.0.0.1:$port/metrics" "$WORK/served_om.$port" openmetrics
done

[ $failures = 0 ] || exit 1
echo "three hosts through three agents: each host's exact count centrally"
