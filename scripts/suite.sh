#!/bin/sh
# Runs one test suite of make check and says how it went and how long it
# took, so a log of suites run side by side (make -j) still tells which one
# failed and where the time went.
#
# Usage: suite.sh NAME COMMAND [ARG...]
#   The line "NAME passed|FAILED(exit=N) SECONDS" is appended to
#   $SUITE_TIMES when that is set, and the output is kept in
#   $SUITE_LOGS/NAME.log when that is set, and printed once it ends (make
#   check, whose output is shown a suite at a time, prints a failed
#   suite's first failures again under its summary, where a reader of a
#   long log looks); the exit code is COMMAND's. A cluster suite that fails
#   keeps its daemons' whole logs in $SUITE_LOGS/NAME.d (tests/cluster/lib.sh).
[ $# -ge 2 ] || { echo "usage: suite.sh NAME COMMAND [ARG...]" >&2; exit 2; }
name=$1
shift
start=$(date +%s)
echo "== $name: $*"
if [ -n "${SUITE_LOGS:-}" ]; then
	# a file, not a pipe to tee: a process a suite leaves behind holding
	# its output would keep a pipe open, and the suite from ending
	mkdir -p "$SUITE_LOGS"
	SUITE_KEEP=$SUITE_LOGS/$name.d
	export SUITE_KEEP
	"$@" >"$SUITE_LOGS/$name.log" 2>&1
	rc=$?
	cat "$SUITE_LOGS/$name.log"
else
	"$@"
	rc=$?
fi
secs=$(($(date +%s) - start))
if [ $rc -eq 0 ]; then verdict=passed; else verdict="FAILED(exit=$rc)"; fi
echo "== $name: $verdict in $secs s"
[ -n "${SUITE_TIMES:-}" ] && echo "$name $verdict $secs" >> "$SUITE_TIMES"
exit $rc
