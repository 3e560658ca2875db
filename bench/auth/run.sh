#!/bin/bash
# The cost of authentication (docs/BENCHMARKS.md, "Authentication"): tag
# checks per strobe and report, and a MUNGE credential against a private
# munged; then bench/auth/report.py rewrites that section from the results.
# Usage: bench/auth/run.sh BUILD_BIN_DIR   (make bench-auth)
# BENCH_AUTH_REPORT=0 prints the rows only.
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
cd "$(dirname "$0")/../.."
. tests/cluster/lib.sh
T=$(mktemp -d /tmp/storm-benchauth.XXXXXX)
MUNGED_PID=
trap '[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID"; rm -rf "$T"' EXIT
start_munged "$T/munge"
RES=bench/results/auth-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$RES"
LOAD0=$(cut -d' ' -f1 /proc/loadavg)
"$BIN/mac_bench" "$T/munge/munge.socket" | tee "$RES/results.csv"
[ "${BENCH_AUTH_REPORT:-1}" = 0 ] ||
	python3 bench/auth/report.py "$RES/results.csv" "$LOAD0" docs/BENCHMARKS.md
