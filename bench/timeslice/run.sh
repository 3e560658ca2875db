#!/bin/sh
# How the timeslice costs CPU and buys launch latency: for each timeslice,
# an idle virtual cluster's daemons' CPU use over a fixed window (from
# /proc/PID/stat), then the median `storm run --timing` of a trivial job.
# Chooses the default timeslice (docs/BENCHMARKS.md, "Timeslice").
# Usage: bench/timeslice/run.sh [NODES] (default 8); BENCH_QUICK=1 shortens.
# Rows go to bench/results/timeslice-<NODES>-<date>/results.txt, then
# bench/timeslice/report.py rewrites that section from the latest run of each
# node count (BENCH_TS_REPORT=0: rows only).
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
RES=bench/results/timeslice-$NODES-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$RES"
OUT=$RES/results.txt
echo "# date=$(date -u +%Y-%m-%dT%H:%M:%SZ) commit=$(git rev-parse --short HEAD 2>/dev/null || echo '?') quick=${BENCH_QUICK:-0} window_s=$WINDOW runs=$RUNS load1_start=$(cut -d' ' -f1 /proc/loadavg)" >"$OUT"
echo "timeslice_us nodes idle_cpu_pct launch_median_ms load1" | tee -a "$OUT"
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
	echo "$ts $NODES $pct $med $(cut -d' ' -f1 /proc/loadavg)" | tee -a "$OUT"
	storm cluster down --dir "$DIR" >/dev/null 2>&1
done
ln -sfn "${RES#bench/results/}" "bench/results/timeslice-$NODES-latest"
[ "${BENCH_TS_REPORT:-1}" = 0 ] ||
	python3 bench/timeslice/report.py docs/BENCHMARKS.md bench/results/timeslice-*-latest/results.txt
