#!/usr/bin/env bash
# Plays examples/tetris.bt in test mode (examples/tetris.sh -t: only I
# pieces, a bottom row with a 4-wide gap under the spawn point) inside a
# detached tmux session, and checks what the screen shows:
#
#   1. the first frame comes: 20 rows between walls, and the floor;
#   2. a piece appears, and falls (its row grows between two captures);
#   3. 'a' moves it one cell left, 'd' one cell right;
#   4. space drops it into the gap: the bottom line clears, the row above
#      moves down, the score becomes 100;
#   5. 'q' quits; every BPF program the tracer had loaded is gone.
#
#   tests/tetris/run.sh            test ./loupe
#   LOUPE=bpftrace tests/tetris/run.sh     the same game under bpftrace
#
# Exit status: 0 pass, 1 fail, 77 skipped (no tmux, not root).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
LOUPE=${LOUPE:-$ROOT/loupe}
case $LOUPE in /*) ;; */*) LOUPE=$PWD/$LOUPE ;; *) LOUPE=$(command -v "$LOUPE") ;; esac

command -v tmux >/dev/null || { echo "skip: needs tmux"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }

SESSION=loupe_tetris_$$
WORK=$(mktemp -d /tmp/loupe-tetris.XXXXXX)
cleanup() {
  local pid
  for pid in $(tracer_pid); do kill "$pid" 2>/dev/null; done
  tmux kill-session -t "$SESSION" 2>/dev/null
  [ -n "${KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
  echo "FAIL: $1"
  [ -f "$WORK/screen" ] && sed 's/^/    | /' "$WORK/screen"
  [ -s "$WORK/stderr" ] && { echo "    stderr:"; head -n 20 "$WORK/stderr" | sed 's/^/    ! /'; }
  exit 1
}

# The screen, and the board parsed from it: BOARD[y] is row y (0 = top)
# as drawn between the walls, 20 characters, two per cell.
declare -a BOARD
capture() {
  tmux capture-pane -p -t "$SESSION" >"$WORK/screen" 2>/dev/null || return 1
  mapfile -t BOARD < <(sed -nE 's/^   <!([^=]{20})!>$/\1/p' "$WORK/screen")
}

# Polls the screen until the whole board is drawn, for up to $1 seconds.
wait_frame() {
  local deadline=$(( $(date +%s%N) + $1 * 1000000000 ))
  while [ "$(date +%s%N)" -lt "$deadline" ]; do
    capture && [ ${#BOARD[@]} -eq 20 ] && grep -q '^   <!====================!>$' "$WORK/screen" &&
      return 0
    sleep 0.05
  done
  return 1
}

# Captures the screen until the command given succeeds, for up to $1
# seconds: the game answers a key or gravity at its next tick, which comes
# late on a busy machine, so no fixed wait can be long enough.
until_screen() {
  local deadline=$(( $(date +%s%N) + $1 * 1000000000 ))
  shift
  while :; do
    capture && "$@" && return 0
    [ "$(date +%s%N)" -lt "$deadline" ] || return 1
    sleep 0.05
  done
}
piece_below() { find_piece && [ "$PIECE_ROW" -gt "$1" ]; }
piece_at_col() { find_piece && [ "$PIECE_COL" -eq "$1" ]; }
board_row_is() { [ "${BOARD[$1]}" = "$2" ]; }

# Sets PIECE_ROW and PIECE_COL (cell) of the falling piece: the topmost
# cell drawn in rows 0-17 (rows 18 and 19 hold the prepared blocks).
find_piece() {
  local y rest
  PIECE_ROW=-1 PIECE_COL=-1
  for ((y = 0; y < 18; y++)); do
    [[ ${BOARD[$y]} == *"[]"* ]] || continue
    rest=${BOARD[$y]%%\[\]*}
    PIECE_ROW=$y PIECE_COL=$(( ${#rest} / 2 ))
    return 0
  done
  return 1
}

# Pids of the tracer: the child of the wrapper running in the pane.
tracer_pid() {
  local pane wrapper
  pane=$(tmux display-message -p -t "$SESSION" '#{pane_pid}' 2>/dev/null) || return 0
  for wrapper in $(pgrep -P "$pane" -f tetris.sh); do pgrep -P "$wrapper"; done
}

prog_ids_of() {
  cat /proc/"$1"/fdinfo/* 2>/dev/null | sed -n 's/^prog_id:[[:space:]]*//p' | sort -u
}

# --- start
tmux new-session -d -s "$SESSION" -x 80 -y 30 \
  "cd '$ROOT' && LOUPE='$LOUPE' examples/tetris.sh -t 2>'$WORK/stderr'; echo \$? >'$WORK/status'; sleep 600" ||
  fail "cannot start tmux"
t0=$(date +%s%N)
wait_frame 20 || fail "no frame within 20 s"
t1=$(date +%s%N)
echo "first frame after $(( (t1 - t0) / 1000000 )) ms"

# 1. the board
grep -q '^   <!====================!>$' "$WORK/screen" || fail "no floor"
[ ${#BOARD[@]} -eq 20 ] || fail "expected 20 rows between walls, got ${#BOARD[@]}"
[ "${BOARD[19]}" = '[][][] . . . .[][][]' ] || fail "bottom row is not the prepared one"
grep -q 'score 0 ' "$WORK/screen" || fail "no score 0"

pid=$(tracer_pid)
[ -n "$pid" ] || fail "tracer process not found"
ids=$(prog_ids_of "$pid")
[ -n "$ids" ] || fail "tracer $pid holds no BPF program"

# 2. a piece appears and falls (one row per 0.5 s)
find_piece || fail "no falling piece"
row1=$PIECE_ROW col1=$PIECE_COL
until_screen 10 piece_below "$row1" ||
  fail "the piece did not fall in 10 s: row $row1, then $PIECE_ROW"
[ "$PIECE_COL" -eq "$col1" ] || fail "the piece moved sideways by itself: column $col1, then $PIECE_COL"

# 3. keys move it
tmux send-keys -t "$SESSION" a
until_screen 10 piece_at_col $((col1 - 1)) ||
  fail "'a' did not move the piece left: column $col1, then $PIECE_COL"
tmux send-keys -t "$SESSION" d
until_screen 10 piece_at_col "$col1" ||
  fail "'d' did not move the piece back right: column $((col1 - 1)), then $PIECE_COL"

# 4. drop it into the gap: the bottom line clears
tmux send-keys -t "$SESSION" Space
until_screen 10 board_row_is 19 '[][] . . . . . . . .' ||
  fail "bottom line not cleared (or the row above did not move down): '${BOARD[19]}'"
[ "${BOARD[18]}" = ' . . . . . . . . . .' ] || fail "row 18 should be empty: '${BOARD[18]}'"
until_screen 10 grep -q 'score 100 .*lines 1 ' "$WORK/screen" ||
  fail "score 100, lines 1 not shown"

# 5. quit
tmux send-keys -t "$SESSION" q
for _ in $(seq 50); do [ -f "$WORK/status" ] && break; sleep 0.1; done
[ -f "$WORK/status" ] || fail "'q' did not end the game within 5 s"
[ "$(cat "$WORK/status")" = 0 ] || fail "exit status $(cat "$WORK/status")"
capture
grep -q '^score 100, 1 lines$' "$WORK/screen" || fail "no final score line"
for _ in $(seq 20); do
  left=$(for id in $ids; do bpftool prog show id "$id" >/dev/null 2>&1 && echo "$id"; done)
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "BPF programs left after quitting: $left"
echo "ok: board, falling piece, a/d moves, line clear, quit, no programs left"
