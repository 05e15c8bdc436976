# check_payload FILE WHAT (sourced, not run): promtool check metrics on a
# payload loupe served or wrote, in the text format or OpenMetrics.
# Returns 0 when promtool accepts it; else prints "WHAT: promtool's
# complaint" and returns 1.
#
# promtool 2.42's check metrics reads the text format only. An
# OpenMetrics payload (its last line `# EOF`) must end with exactly one
# `# EOF` and hold no blank line; then its counter families, which
# OpenMetrics names without the `_total` their samples carry, are renamed
# as the text format names them and `# EOF` and `# UNIT` are dropped, and
# promtool checks what is left like any text payload.
#
# promtool also lints. Two lints are about the names a script gives its
# maps, which loupe keeps as they are (a dashboard queries loupe_NAME
# for @NAME): abbreviated units (@s, @ms, @h, @kb ...) and camelCase
# (@readBytes). Those are let through for the maps' families, never for
# loupe's own metrics. Any other lint fails the payload.
check_payload() {
  local file=$1 what=$2 text out
  text=$(mktemp /tmp/loupe-payload.XXXXXX)
  if [ "$(tail -n 1 "$file")" = "# EOF" ]; then
    if [ "$(grep -c '^# EOF$' "$file")" != 1 ]; then
      echo "$what: OpenMetrics with more than one # EOF"
      rm -f "$text"
      return 1
    fi
    if grep -q '^$' "$file"; then
      echo "$what: OpenMetrics with a blank line"
      rm -f "$text"
      return 1
    fi
    awk 'NR == FNR { if ($1 == "#" && $2 == "TYPE" && $4 == "counter") c[$3] = 1; next }
      /^# (EOF|UNIT )/ { next }
      $1 == "#" && ($2 == "HELP" || $2 == "TYPE") && ($3 in c) {
        sub("^# " $2 " " $3, "# " $2 " " $3 "_total")
      }
      { print }' "$file" "$file" >"$text"
  else
    cp "$file" "$text"
  fi
  out=$(promtool check metrics <"$text" 2>&1)
  local status=$?
  rm -f "$text"
  [ $status = 0 ] && return 0
  local own='loupe_(up|build_info|events_lost_total|map_updates_refused_total|metrics_series_dropped|probe_runs_total|probe_run_seconds_total)'
  out=$(grep -vE "^loupe_[A-Za-z0-9_]+ metric names should (not contain abbreviated units|be written in 'snake_case' not 'camelCase')$" <<<"$out"
        grep -E "^$own metric names should" <<<"$out")
  out=$(grep . <<<"$out")
  [ -z "$out" ] && return 0
  echo "$what: promtool check metrics: $out"
  return 1
}

# check_payloads FILE...: check_payload on each, two at a time; prints
# each complaint and returns 1 if there was any.
check_payloads() {
  local out
  export -f check_payload
  out=$(printf '%s\0' "$@" |
        xargs -0 -r -P 2 -n 1 bash -c 'check_payload "$1" "$1"' _ 2>&1)
  [ -z "$out" ] && return 0
  echo "$out"
  return 1
}
