#!/bin/bash
# CoMD (the ECP molecular-dynamics proxy app), built from the user's copy of
# its sources twice (storm's bcs-mpicc and MPICH's mpicc) and run side by side
# in the same run: BCS-MPI with RANKS ranks on as many virtual nodes over
# `tcp;ofi_rxm` (rank writes, the default, and every byte through the
# daemons, --bcs-rank-writes 0) against MPICH with as many ranks over TCP
# (MPIR_CVAR_NOLOCAL=1, UCX_TLS=tcp,self over lo) and with its shared memory.
# Each run's time is CoMD's own (its "total" timer, the slowest rank); its
# energies at the last step must equal across all of them.
#
# usage: bench/comd/run.sh COMD_SRC   (a CoMD checkout: src-mpi/ in it)
# Settings (environment):
#   BENCH_COMD_REPS=5  BENCH_COMD_TIMESLICE=1000 (us)
#   BENCH_COMD_ARGS="-i 2 -j 2 -k 1 -x 40 -y 40 -z 20 -N 100 -n 10"
#                       (4 ranks, 128,000 atoms, 100 steps; -i*-j*-k ranks)
#   BENCH_COMD_STORM_BUILD=DIR  storm and bcs-mpicc from DIR/bin (default build/)
# Results: bench/results/comd-<date>/results.jsonl (+ log.txt), symlink
# bench/results/comd-latest; `make bench-comd COMD=...` then runs
# bench/comd/report.py, which writes the "## CoMD" section of docs/BENCHMARKS.md.
set -u
case "${1:-}" in
-h | --help)
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
"")
	echo "usage: bench/comd/run.sh COMD_SRC (a CoMD checkout)" >&2
	exit 2
	;;
esac
SRC=$(realpath "$1" 2>/dev/null) && [ -f "$SRC/src-mpi/Makefile.vanilla" ] || {
	echo "bench/comd/run.sh: $1: not a CoMD checkout (no src-mpi/Makefile.vanilla)" >&2
	exit 2
}
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
SB=$(realpath "${BENCH_COMD_STORM_BUILD:-$TOP/build}")
STORM=$SB/bin/storm
REPS=${BENCH_COMD_REPS:-5}
TS=${BENCH_COMD_TIMESLICE:-1000}
ARGS=${BENCH_COMD_ARGS:--i 2 -j 2 -k 1 -x 40 -y 40 -z 20 -N 100 -n 10}
# shellcheck disable=SC2086
NP=$(set -- $ARGS; i=1 j=1 k=1; while [ $# -gt 1 ]; do case $1 in -i) i=$2 ;; -j) j=$2 ;; -k) k=$2 ;; esac; shift; done; echo $((i * j * k)))
RUN_TIMEOUT=900

NAME=comd
# shellcheck source=bench/lib/peer.sh
. "$TOP/bench/lib/peer.sh"

# build IMPL CC: CoMD's MPI variant, its own Makefile
build() {
	local b=$RES/build-$1
	cp -r "$SRC/src-mpi" "$b" && cp "$b/Makefile.vanilla" "$b/Makefile"
	log "building CoMD with $2"
	make -C "$b" CC="$2" OPTFLAGS=-O2 BIN_DIR=. >"$b/build.log" 2>&1 && [ -x "$b/CoMD-mpi" ] ||
		{ log "building CoMD with $2 failed: $b/build.log"; exit 1; }
}
build bcs "$SB/bin/bcs-mpicc"
build mpich mpicc.mpich

echo "{\"bench\":\"meta\",$(host_json),\"reps\":$REPS,\"timeslice_us\":$TS,\"ranks\":$NP,\"args\":\"$(json_str "$ARGS")\",\"comd\":\"$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)\"}" >>"$OUT"

FAILS=0
# run IMPL REP: one CoMD run in a directory of its own (it writes a yaml file there)
run() {
	local impl=$1 rep=$2 cmd l t0 t1 rc d=$WORK/run
	rm -rf "$d" && mkdir -p "$d" && cp -r "$SRC/pots" "$d/"
	# shellcheck disable=SC2206
	local args=($ARGS)
	case $impl in
	mpich-shm) cmd=(mpiexec.mpich -n "$NP" "$RES/build-mpich/CoMD-mpi" "${args[@]}") ;;
	mpich-tcp) cmd=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo
		mpiexec.mpich -n "$NP" "$RES/build-mpich/CoMD-mpi" "${args[@]}") ;;
	*) cmd=("$STORM" run -N "$NP" -n "$NP" "$RES/build-bcs/CoMD-mpi" "${args[@]}") ;;
	esac
	l=$(load1)
	t0=$EPOCHREALTIME
	# MPICH's results are complete once CoMD says it ends
	cd "$d" || exit 1
	watch_run "$([ "${impl%%-*}" = mpich ] && echo 1 || echo 0)" 'CoMD Ending' out "${cmd[@]}"
	rc=$?
	cd "$TOP" || exit 1
	[ $HUNG = 1 ] && rc=0
	t1=$EPOCHREALTIME
	# CoMD's own time: the slowest rank's "total" in its statistics across ranks
	local total energy
	total=$(awk '/Timing Statistics Across/ { s = 1 } s && $1 == "total" { print $5; exit }' "$WORK/out")
	energy=$(awk '/^#  *Loop/ { t = 1; next } t && NF >= 8 && $1 ~ /^[0-9]+$/ { e = $3 " " $4 " " $5 } END { print e }' "$WORK/out")
	local pre="\"bench\":\"comd\",\"impl\":\"$impl\",\"rep\":$rep,\"ranks\":$NP,\"load1\":$l,\"finalize_hang\":$([ $HUNG = 1 ] && echo true || echo false),\"wall_s\":$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
	if [ $rc != 0 ] || [ -z "$total" ] || [ -z "$energy" ]; then
		FAILS=$((FAILS + 1))
		log "  FAILED $impl: exit $rc: $(tail -1 "$WORK/err")"
		cat "$WORK/out" "$WORK/err" >>"$LOG"
		echo "{$pre,\"error\":\"exit $rc: $(json_str "$(tail -1 "$WORK/err")")\"}" >>"$OUT"
		return
	fi
	echo "{$pre,\"time_s\":$total,\"energies\":\"$energy\"}" >>"$OUT"
	log "  $impl: $total s (energies $energy)"
}

up() {
	down
	"$STORM" cluster up --nodes "$NP" --provider 'tcp;ofi_rxm' --timeslice-us "$TS" \
		--bcs-rank-writes "$1" --dir "$C" >>"$LOG" 2>&1 || { log "storm cluster up failed (see $LOG)"; exit 1; }
}
storm_part() {
	up 1; run bcs "$1"; up 0; run bcs-daemons "$1"; down
}
mpich_part() { run mpich-tcp "$1"; run mpich-shm "$1"; }
for rep in $(seq 1 "$REPS"); do
	log "repetition $rep of $REPS (load $(load1))"
	if [ $((rep % 2)) = 1 ]; then storm_part "$rep"; mpich_part "$rep"; else mpich_part "$rep"; storm_part "$rep"; fi
done
echo "{\"bench\":\"end\",\"fails\":$FAILS,\"load1_end\":$(load1)}" >>"$OUT"
log "done: $OUT ($FAILS failed runs)"
[ $FAILS = 0 ]
