# Helpers shared by the fault tests (sourced, not run: not executable, so
# tests/run.sh does not take it for a test). Sourcing it skips the test
# (exit 77) unless it runs as root with bpftool.
#
#   kernel_mark          remembers what the kernel holds now
#   kernel_leftovers     prints what was added since kernel_mark and is held
#                        by no live process (BPF programs, BPF links, uprobe
#                        and kprobe events in tracefs), after giving the
#                        kernel up to 5 s to free what was closed; exits 1
#                        if anything is left, else 0
#   fail MESSAGE         prints FAIL and counts it in $failures
#   wait_exit PID SECS   waits for PID to exit; its status in $status, or
#                        "-" if it still runs after SECS (it is left running)
#
# Programs and links are told apart from other tracers' (other tests, other
# users of the machine) by their ids: those created after kernel_mark and
# held by no process are what a loupe that has gone left behind. Debian's
# bpftool shows no owner pids, so holders are read from /proc/*/fdinfo.

# Every fault test loads programs and reads what the kernel holds.
[ "$(id -u)" = 0 ] || { echo "needs root"; exit 77; }
command -v bpftool >/dev/null || { echo "needs bpftool"; exit 77; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

_max_id() { sed -nE 's/^([0-9]+): .*/\1/p' | sort -n | tail -n 1; }
_fdinfo_ids() {   # $1: prog_id or link_id
  cat /proc/[0-9]*/fdinfo/* 2>/dev/null | sed -n "s/^$1:[[:space:]]*//p" | sort -u
}
_probe_events() {
  cat /sys/kernel/tracing/uprobe_events /sys/kernel/tracing/kprobe_events \
    2>/dev/null | wc -l
}

kernel_mark() {
  _mark_prog=$(bpftool prog show 2>/dev/null | _max_id)
  _mark_link=$(bpftool link show 2>/dev/null | _max_id)
  _mark_events=$(_probe_events)
}

# Ids of the objects of KIND (prog or link) above MAX that no process holds.
_orphans() {
  bpftool "$1" show 2>/dev/null | sed -nE 's/^([0-9]+): .*/\1/p' |
    awk -v max="${2:-0}" '$1 > max' |
    grep -vxF -f <(_fdinfo_ids "$1_id"; echo none)
}

kernel_leftovers() {
  local progs links events
  for _ in $(seq 50); do
    progs=$(_orphans prog "$_mark_prog")
    links=$(_orphans link "$_mark_link")
    events=$(( $(_probe_events) - _mark_events ))
    [ -z "$progs$links" ] && [ "$events" -le 0 ] && return 0
    sleep 0.1
  done
  [ -n "$progs" ] && echo "BPF programs left, held by no process:" $progs
  [ -n "$links" ] && echo "BPF links left, held by no process:" $links
  [ "$events" -gt 0 ] && echo "$events uprobe/kprobe events left in tracefs"
  return 1
}

wait_exit() {
  status=-
  for _ in $(seq $(($2 * 10))); do
    kill -0 "$1" 2>/dev/null || { wait "$1"; status=$?; return; }
    sleep 0.1
  done
}
