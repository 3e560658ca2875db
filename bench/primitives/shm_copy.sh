#!/bin/sh
# One XFER-AND-SIGNAL to one node on shm (sn_bench's mcast with 2 nodes, local
# event), 1 and 12 MiB, nodes sleeping and spinning, against the single-thread
# memcpy sn_bench measures in the same process: how close the copy into a
# mapped peer comes to memcpy. Rewrites the "Primitives: shm copies into a
# mapped peer" section of docs/BENCHMARKS.md (BENCH_SHM_REPORT=0: rows only).
# Usage: bench/primitives/shm_copy.sh (after `make all build/bin/sn_bench`);
# BENCH_REPS rounds (default 3; BENCH_QUICK=1: 1).
set -u
cd "$(dirname "$0")/../.." || exit 1
REPS=${BENCH_REPS:-3}
[ "${BENCH_QUICK:-0}" = 1 ] && REPS=1
RES=bench/results/shm-copy-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$RES"
OUT=$RES/results.jsonl
load1() { cut -d' ' -f1 /proc/loadavg; }
echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null)\",\"reps\":$REPS,\"load1_start\":$(load1)}" >"$OUT"
rep=0
while [ $rep -lt "$REPS" ]; do
	for spin in "" "--spin 1000000 --pin 1"; do
		for sz in 1048576 12582912; do
			l=$(load1)
			# shellcheck disable=SC2086 # $spin is two options or none
			timeout 120 build/bin/sn_bench --provider shm --nodes 2 --test mcast \
				--size $sz --iters 20 --budget-s 6 $spin 2>>"$RES/log.txt" |
				sed "s/}\$/,\"load1\":$l}/" | tee -a "$OUT"
		done
	done
	rep=$((rep + 1))
done
[ "${BENCH_SHM_REPORT:-1}" = 0 ] ||
	python3 bench/primitives/shm_copy_report.py "$OUT" docs/BENCHMARKS.md
