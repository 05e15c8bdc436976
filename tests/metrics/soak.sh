#!/usr/bin/env bash
# The soak of bench/soak.sh in its 10-minute form (LOUPE_SOAK_SECONDS
# gives another length): loupe --metrics with stack and string keys in
# maps declared smaller than their keys, thousands of short-lived
# processes, a scrape a second checked by promtool; loupe's RSS flat after
# the warm-up and every full map's refused updates in the metrics and
# the warnings. tests/run.sh gives it 900 seconds.
#
# Exits 0, 1 with what failed, or 77 when something it needs is missing.
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe} exec "$ROOT/bench/soak.sh" "${LOUPE_SOAK_SECONDS:-600}"
