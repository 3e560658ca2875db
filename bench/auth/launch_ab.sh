#!/bin/bash
# A/B of launch time, two builds alternating (docs/BENCHMARKS.md,
# "Authentication"): 12 MiB of random bytes behind '#!/bin/sh\nexit 0' (a new
# file per run, so nothing is cached), storm run --timing -N 8 -n 32, RUNS runs
# per block, blocks A B A B, each on its own virtual cluster.
# Usage: bench/auth/launch_ab.sh BIN_A BIN_B [RUNS]
set -u
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd) RUNS=${3:-6}
T=$(mktemp -d /tmp/storm-launchab.XXXXXX)
trap 'for v in a b; do "$A/storm" cluster down --dir "$T/$v" >/dev/null 2>&1; done; rm -rf "$T"' EXIT
n=0
for round in 1 2; do
	for v in a b; do
		bin=$A
		[ $v = b ] && bin=$B
		"$bin/storm" cluster up --nodes 8 --dir "$T/$v" >/dev/null || exit 1
		for _ in $(seq "$RUNS"); do
			n=$((n + 1))
			{ printf '#!/bin/sh\nexit 0\n'; head -c 12582912 /dev/urandom; } >"$T/prog$n"
			chmod 755 "$T/prog$n"
			"$bin/storm" --conf "$T/$v/storm.conf" run --timing -N 8 -n 32 "$T/prog$n" 2>&1 \
				>/dev/null | sed -n "s/.*timing: /$v round $round: /p"
			rm -f "$T/prog$n"
		done
		"$bin/storm" cluster down --dir "$T/$v" >/dev/null
	done
done
