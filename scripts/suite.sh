#!/bin/sh
# Runs one test suite of make check and says how it went and how long it
# took, so a log of suites run side by side (make -j) still tells which one
# failed and where the time went.
#
# Usage: suite.sh NAME COMMAND [ARG...]
#   The line "NAME passed|FAILED(exit=N) SECONDS" is appended to
#   $SUITE_TIMES when that is set; the exit code is COMMAND's.
[ $# -ge 2 ] || { echo "usage: suite.sh NAME COMMAND [ARG...]" >&2; exit 2; }
name=$1
shift
start=$(date +%s)
echo "== $name: $*"
"$@"
rc=$?
secs=$(($(date +%s) - start))
if [ $rc -eq 0 ]; then verdict=passed; else verdict="FAILED(exit=$rc)"; fi
echo "== $name: $verdict in $secs s"
[ -n "${SUITE_TIMES:-}" ] && echo "$name $verdict $secs" >> "$SUITE_TIMES"
exit $rc
