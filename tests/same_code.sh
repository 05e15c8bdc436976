#!/usr/bin/env bash
# Builds REV (default: main's last commit) in a temporary worktree under
# /tmp and runs tests/same_code.py with it as the old binary and ./loupe
# as the new one: the proof that a restructuring generated the same code.
#
#   tests/same_code.sh [REV] [same_code.py options]
set -u
cd "$(dirname "$0")/.." || exit 1
rev=${1:-HEAD}; [ $# -gt 0 ] && shift
[ -x ./loupe ] || { echo "same_code.sh: build loupe first (make)" >&2; exit 1; }
wt=$(mktemp -d /tmp/loupe-same-rev.XXXXXX)
cleanup() { git worktree remove --force "$wt" >/dev/null 2>&1; rm -rf "$wt"; }
trap cleanup EXIT
git worktree add --detach "$wt" "$rev" >/dev/null 2>&1 || { echo "same_code.sh: no revision $rev" >&2; exit 1; }
make -C "$wt" -j"$(nproc)" loupe >"$wt/build.log" 2>&1 || { tail -20 "$wt/build.log" >&2; exit 1; }
python3 tests/same_code.py "$wt/loupe" ./loupe "$@"
