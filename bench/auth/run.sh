#!/bin/bash
# The cost of authentication (docs/BENCHMARKS.md, "Authentication"): tag
# checks per strobe and report, and a MUNGE credential against a private
# munged. Usage: bench/auth/run.sh BUILD_BIN_DIR   (make bench-auth)
set -eu
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/../../tests/cluster/lib.sh"
T=$(mktemp -d /tmp/storm-benchauth.XXXXXX)
MUNGED_PID=
trap '[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID"; rm -rf "$T"' EXIT
start_munged "$T/munge"
"$BIN/mac_bench" "$T/munge/munge.socket"
