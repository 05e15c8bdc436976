#!/bin/sh
# The README's two commands, on a fresh Debian 12 machine:
#
#   ./setup.sh demo    install what loupe needs, build it, and run its main
#                      job on a real example (system calls counted by
#                      process name for 5 seconds while dd makes many)
#   ./setup.sh check   install what the tests need, build, and run the
#                      whole suite; the last line is "N passed, N failed"
#                      and the exit status is non-zero if anything failed
#
# Both need root (packages, BPF): run as root, or as a user with sudo, who
# is asked once for the whole run. Unlike `make deps check`, whose make
# adds its own "*** Error" line after the summary when a test fails.
set -u
cd "$(dirname "$0")" || exit 1
case ${1:-} in
demo|check) ;;
*) echo "usage: ./setup.sh demo | check" >&2; exit 2 ;;
esac
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 ||
    { echo "setup.sh: run it as root (sudo is not installed)" >&2; exit 1; }
  exec sudo -- "$0" "$@"
fi
make deps || exit 1
[ "$1" = check ] && { make test-deps || exit 1; }
if [ "$1" = demo ]; then
  exec make demo
fi
make loupe unit-bins || { echo "0 passed, 1 failed"; exit 1; }
exec tests/run.sh
