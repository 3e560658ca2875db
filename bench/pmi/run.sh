#!/bin/bash
# Unmodified MPICH programs under storm (PMI-1) against the same binary
# under MPICH's own mpiexec (Hydra), in the same run, alternating which goes
# first: bench/pmi/osu.c's ping-pong latency and streaming bandwidth on 2
# ranks (storm: 2 virtual nodes, one rank each), and MPI_Init's time on
# BENCH_PMI_INIT_RANKS ranks (storm: 4 virtual nodes). Every rank is on this
# host in both, so both use the same transports: what differs is only the
# wire-up and storm's gang scheduling around the job.
# usage: bench/pmi/run.sh [--quick]   (make bench-pmi)
# Settings: BENCH_PMI_REPS=5  BENCH_PMI_INIT_RANKS=64
# Results: bench/results/pmi-<date>/results.jsonl and log.txt, and the "## PMI"
# section of docs/BENCHMARKS.md (bench/pmi/report.py).
set -u
cd "$(dirname "$0")/../.." || exit 1
REPS=${BENCH_PMI_REPS:-5} INIT_RANKS=${BENCH_PMI_INIT_RANKS:-64}
[ "${1:-}" = --quick ] && { REPS=1; INIT_RANKS=16; }
OUT=bench/results/pmi-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$OUT"
ln -sfn "$(basename "$OUT")" bench/results/pmi-latest
LOG=$OUT/log.txt RES=$OUT/results.jsonl
export PATH=$PWD/build/bin:$PATH
T=$(mktemp -d /tmp/storm-benchpmi.XXXXXX)
C=$T/c
export STORM_CONF=$C/storm.conf
trap 'storm cluster down --dir "$C" >/dev/null 2>&1; rm -rf "$T"' EXIT
mpicc.mpich -O2 -o "$T/osu" bench/pmi/osu.c >>"$LOG" 2>&1 || { echo "mpicc.mpich failed" >&2; exit 1; }
# 64 spinning ranks on a small machine can starve a node daemon for seconds:
# not a failure to report here
storm cluster up --nodes 4 --down-after-ms 30000 --dir "$C" >>"$LOG" 2>&1 || { echo "cluster up failed (see $LOG)" >&2; exit 1; }

# record RUNNER MODE FILE: one JSON line per output line of the run
record() {
	python3 - "$1" "$2" "$3" "$4" >>"$RES" <<'PY'
import json, sys
runner, mode, path, rep = sys.argv[1:5]
for line in open(path):
    k, v = line.split()
    print(json.dumps({"runner": runner, "mode": mode, "rep": int(rep), "key": k, "value": float(v)}))
PY
}
run_one() { # RUNNER MODE REP
	local o=$T/$1-$2-$3.out
	if [ "$1" = storm ]; then
		if [ "$2" = init ]; then
			storm run -N 4 -n "$INIT_RANKS" -O "$T/osu" init >"$o" 2>>"$LOG"
		else
			storm run -N 2 -n 2 "$T/osu" "$2" >"$o" 2>>"$LOG"
		fi
	else
		local n=2
		[ "$2" = init ] && n=$INIT_RANKS
		mpiexec.mpich -n "$n" "$T/osu" "$2" >"$o" 2>>"$LOG"
	fi || { echo "$1 $2 failed (see $LOG)" >&2; exit 1; }
	record "$1" "$2" "$o" "$3"
}
for rep in $(seq 1 "$REPS"); do
	for mode in latency bw init; do
		if [ $((rep % 2)) = 1 ]; then run_one storm $mode "$rep"; run_one mpiexec $mode "$rep"
		else run_one mpiexec $mode "$rep"; run_one storm $mode "$rep"; fi
	done
	echo "rep $rep done" >&2
done
python3 bench/pmi/report.py "$RES" "bench/pmi/run.sh${1:+ $1} (BENCH_PMI_REPS=$REPS, BENCH_PMI_INIT_RANKS=$INIT_RANKS)"
