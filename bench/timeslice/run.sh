#!/bin/sh
# How the timeslice costs CPU and buys launch latency: for each timeslice,
# an idle virtual cluster's daemons' CPU use over a fixed window (from
# /proc/PID/stat), then the median `storm run --timing` of a trivial job.
# Chooses the default timeslice (docs/BENCHMARKS.md, "Timeslice").
# Usage: bench/timeslice/run.sh [NODES] (default 8); BENCH_QUICK=1 shortens.
set -u
cd "$(dirname "$0")/../.." || exit 1
NODES=${1:-8}
SLICES=${BENCH_SLICES:-"1000 2000 5000 10000 20000"}
WINDOW=${BENCH_WINDOW:-5}
RUNS=${BENCH_RUNS:-9}
[ "${BENCH_QUICK:-0}" = 1 ] && WINDOW=2 RUNS=3
export PATH=$PWD/build/bin:$PATH
DIR=$(mktemp -d /tmp/storm-bench-ts.XXXXXX)
export STORM_CONF=$DIR/storm.conf
trap 'storm cluster down --dir "$DIR" >/dev/null 2>&1; rm -rf "$DIR"' EXIT INT TERM
HZ=$(getconf CLK_TCK)
cpu_ticks() { # sum of utime+stime of the cluster's daemons
	t=0
	while read -r pid _; do
		v=$(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)
		t=$((t + v))
	done <"$DIR/pids"
	echo $t
}
echo "timeslice_us nodes idle_cpu_pct launch_median_ms load1"
for ts in $SLICES; do
	storm cluster up --nodes "$NODES" --dir "$DIR" --timeslice-us "$ts" >/dev/null 2>&1 || {
		echo "$ts $NODES up-failed"
		continue
	}
	a=$(cpu_ticks)
	sleep "$WINDOW" # the measurement window itself, not a synchronisation
	b=$(cpu_ticks)
	pct=$(echo "$a $b $HZ $WINDOW" | awk '{ printf "%.1f", ($2 - $1) * 100 / $3 / $4 }')
	i=0
	: >"$DIR/t"
	while [ $i -lt "$RUNS" ]; do
		storm run --timing -N "$NODES" -n "$NODES" /bin/true 2>&1 >/dev/null |
			sed -n 's/.*total \([0-9.]*\) ms/\1/p' >>"$DIR/t"
		i=$((i + 1))
	done
	med=$(sort -n "$DIR/t" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "$ts $NODES $pct $med $(cut -d' ' -f1 /proc/loadavg)"
	storm cluster down --dir "$DIR" >/dev/null 2>&1
done
