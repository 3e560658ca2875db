#!/bin/bash
# One-sided epochs and empty MPI_Iprobe calls, BCS-MPI against MPICH: the
# calls MPICH's rma/linked_list programs are made of (bench/mpi/rma_epochs.c).
# The program is built with MPICH's mpicc and with storm's bcs-mpicc and run
# REPS times each at 4 ranks, alternating which goes first: BCS-MPI with
# `storm run -N 4 -n 4` on a 4-node virtual cluster this script brings up
# (1 ms slices) and takes down, MPICH with `mpiexec.mpich -n 4`. Each run
# prints, per kind, the median over every rank's samples; the report shows
# the median of those over the runs.
#
# usage: bench/mpi/rma_epochs.sh [--reps 5] [--iters 40] [--timeslice-us 1000]
# Results: bench/results/rma-epochs-<date>/results.jsonl; then
# bench/mpi/rma_epochs_report.py writes its section of docs/BENCHMARKS.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
REPS=5 ITERS=40 SLICE=1000
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--timeslice-us) SLICE=$2; shift ;;
	-h | --help) sed -n '2,14s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "rma_epochs.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
BIN=$(pwd)/build/bin
[ -x "$BIN/bcs-mpicc" ] || { echo "rma_epochs.sh: build storm first" >&2; exit 2; }
RES=bench/results/rma-epochs-$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RES"
T=$(mktemp -d "${TMPDIR:-/tmp}/storm-rmaep.XXXXXX")
export PATH=$BIN:$PATH STORM_CONF=$T/c/storm.conf
cleanup() {
	[ -f "$T/c/storm.conf" ] && storm cluster down --dir "$T/c" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
FLAGS=(-std=c11 -O2 -Wall -Wextra -Werror)
mpicc.mpich "${FLAGS[@]}" -o "$T/mpich" bench/mpi/rma_epochs.c || exit 1
bcs-mpicc "${FLAGS[@]}" -o "$T/bcs" bench/mpi/rma_epochs.c || exit 1
storm cluster up --nodes 4 --dir "$T/c" --timeslice-us "$SLICE" >/dev/null || exit 1
OUT=$RES/results.jsonl
python3 - "$SLICE" "$REPS" "$ITERS" >"$OUT" <<'PY'
import json, sys
sys.path.insert(0, "bench")
import benchdoc
m = benchdoc.host_meta()
m.update(bench="meta", timeslice_us=int(sys.argv[1]), reps=int(sys.argv[2]),
         iters=int(sys.argv[3]), ranks=4, nodes=4)
print(json.dumps(m))
PY
run_mpich() { timeout 300 mpiexec.mpich -n 4 "$T/mpich" --iters "$ITERS" --impl mpich; }
run_bcs() { timeout 300 storm run -N 4 -n 4 "$T/bcs" --iters "$ITERS" --impl bcs; }
for rep in $(seq 1 "$REPS"); do
	if [ $((rep % 2)) = 1 ]; then order="mpich bcs"; else order="bcs mpich"; fi
	for impl in $order; do
		echo "rma_epochs: rep $rep $impl (load $(cut -d' ' -f1 /proc/loadavg))" >&2
		"run_$impl" | sed "s/}\$/,\"rep\":$rep}/" >>"$OUT" ||
			echo "rma_epochs: $impl run $rep failed" >&2
	done
done
ln -sfn "$(basename "$RES")" bench/results/rma-epochs-latest
python3 bench/mpi/rma_epochs_report.py "$OUT" docs/BENCHMARKS.md
