#!/bin/bash
# The OSU micro-benchmarks, built from the user's copy of their sources twice
# (storm's bcs-mpicc and MPICH's mpicc) and run side by side in the same run:
#   nodes  2 ranks on 2 virtual nodes over `tcp;ofi_rxm`: BCS-MPI with rank
#          writes (the default), BCS-MPI with every byte through the daemons
#          (--bcs-rank-writes 0), and MPICH forced onto TCP (MPIR_CVAR_NOLOCAL=1,
#          UCX_TLS=tcp,self over lo)
#   node   2 ranks on one node: BCS-MPI (one process_vm_readv a piece) and
#          MPICH with its shared memory
# Nothing of OSU is kept here: give the path to an unpacked
# osu-micro-benchmarks (5.x or later, the GNU-configured tree).
#
# usage: bench/osu/run.sh OSU_SRC
# Settings (environment):
#   BENCH_OSU_REPS=5  BENCH_OSU_TIMESLICE=1000 (us)  BENCH_OSU_PLACES="nodes node"
#   BENCH_OSU_PROGS="osu_bw osu_bibw osu_latency osu_allreduce osu_put_bw"
#   BENCH_OSU_STORM_BUILD=DIR  storm and bcs-mpicc from DIR/bin (default build/)
# The iteration counts are cut from OSU's defaults (10,000 for a small
# latency) to what a 1 ms slice allows in minutes; both builds get the same.
# Results: bench/results/osu-<date>/results.jsonl (+ log.txt), symlink
# bench/results/osu-latest; `make bench-osu OSU=...` then runs
# bench/osu/report.py, which writes the "## OSU micro-benchmarks" section of
# docs/BENCHMARKS.md.
set -u
case "${1:-}" in
-h | --help)
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
"")
	echo "usage: bench/osu/run.sh OSU_SRC (an unpacked osu-micro-benchmarks tree)" >&2
	exit 2
	;;
esac
SRC=$(realpath "$1" 2>/dev/null) && [ -x "$SRC/configure" ] && [ -d "$SRC/mpi/pt2pt" ] || {
	echo "bench/osu/run.sh: $1: not an osu-micro-benchmarks source tree (no configure, mpi/pt2pt)" >&2
	exit 2
}
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
SB=$(realpath "${BENCH_OSU_STORM_BUILD:-$TOP/build}")
STORM=$SB/bin/storm
REPS=${BENCH_OSU_REPS:-5}
TS=${BENCH_OSU_TIMESLICE:-1000}
PLACES=${BENCH_OSU_PLACES:-nodes node}
PROGS=${BENCH_OSU_PROGS:-osu_bw osu_bibw osu_latency osu_allreduce osu_put_bw}
RUN_TIMEOUT=600

NAME=osu
# shellcheck source=bench/lib/peer.sh
. "$TOP/bench/lib/peer.sh"

# build IMPL CC: OSU's MPI benchmarks configured out of tree with CC
build() {
	local b=$RES/build-$1
	mkdir -p "$b"
	log "building OSU with $2 into $b"
	(cd "$b" && "$SRC/configure" CC="$2" CXX="$3" && make -j2 -C mpi) >"$b/build.log" 2>&1 ||
		{ log "building OSU with $2 failed: $b/build.log"; exit 1; }
}
build bcs "$SB/bin/bcs-mpicc" "$SB/bin/bcs-mpicxx"
build mpich mpicc.mpich mpicxx.mpich

prog_path() { find "$RES/build-$1/mpi" -type f -name "$2" -perm -u+x | head -1; }
prog_args() { # PROG: the iterations both builds run
	case $1 in
	osu_bw | osu_bibw) echo "-i 20 -x 2" ;;
	osu_latency) echo "-i 100 -x 10" ;;
	osu_allreduce) echo "-m 4194304 -i 20 -x 2" ;;
	osu_put_bw) echo "-i 2 -x 1" ;; # 32 puts an iteration: 128 MiB at 4 MiB
	*) echo "" ;;
	esac
}
prog_unit() { case $1 in *_bw | *_bibw) echo "MB/s" ;; *) echo "us" ;; esac; }

echo "{\"bench\":\"meta\",$(host_json),\"reps\":$REPS,\"timeslice_us\":$TS,\"places\":\"$PLACES\",\"progs\":\"$PROGS\",\"osu\":\"$(json_str "$(sed -n 's/^OSU Micro-Benchmarks v\{0,1\}\([0-9.]*\).*/\1/p; s/^AC_INIT(\[OSU-Micro-Benchmarks\], \[\([0-9.]*\)\].*/\1/p' "$SRC/CHANGES" "$SRC/configure.ac" 2>/dev/null | head -1)")\"}" >>"$OUT"

# up RANK_WRITES: a fresh 2-node cluster over tcp;ofi_rxm
up() {
	down
	"$STORM" cluster up --nodes 2 --provider 'tcp;ofi_rxm' --timeslice-us "$TS" \
		--bcs-rank-writes "$1" --dir "$C" >>"$LOG" 2>&1 || { log "storm cluster up failed (see $LOG)"; exit 1; }
}

FAILS=0
# run IMPL PLACE REP PROG: one run; each "SIZE VALUE" line of its output a result
run() {
	local impl=$1 place=$2 rep=$3 prog=$4 bin cmd l t0 t1 rc
	bin=$(prog_path "${impl%%-*}" "$prog")
	[ -n "$bin" ] || { log "  $impl: no $prog in the build"; FAILS=$((FAILS + 1)); return; }
	# shellcheck disable=SC2207
	local args=($(prog_args "$prog"))
	case $impl in
	mpich) cmd=(mpiexec.mpich -n 2 "$bin" "${args[@]}")
		[ "$place" = nodes ] && cmd=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo "${cmd[@]}") ;;
	*) cmd=("$STORM" run -N "$([ "$place" = nodes ] && echo 2 || echo 1)" -n 2 "$bin" "${args[@]}") ;;
	esac
	l=$(load1)
	t0=$EPOCHREALTIME
	# MPICH's results are complete at its last size's line
	watch_run "$([ "$impl" = mpich ] && echo 1 || echo 0)" '^4194304[[:space:]]' out "${cmd[@]}"
	rc=$?
	[ $HUNG = 1 ] && rc=0
	t1=$EPOCHREALTIME
	local pre="\"bench\":\"osu\",\"prog\":\"$prog\",\"impl\":\"$impl\",\"place\":\"$place\",\"rep\":$rep,\"unit\":\"$(prog_unit "$prog")\",\"load1\":$l,\"finalize_hang\":$([ $HUNG = 1 ] && echo true || echo false),\"wall_s\":$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')"
	if [ $rc != 0 ] || ! grep -qE '^[0-9]+[[:space:]]+[0-9.]+' "$WORK/out"; then
		FAILS=$((FAILS + 1))
		log "  FAILED $impl $place $prog: exit $rc: $(tail -1 "$WORK/err")"
		cat "$WORK/out" "$WORK/err" >>"$LOG"
		echo "{$pre,\"error\":\"exit $rc: $(json_str "$(tail -1 "$WORK/err")")\"}" >>"$OUT"
		return
	fi
	awk -v pre="$pre" '/^[0-9]+[ \t]+[0-9.]+/ { printf "{%s,\"size\":%d,\"value\":%s}\n", pre, $1, $2 }' "$WORK/out" >>"$OUT"
	log "  $impl $place $prog: $(awk '/^[0-9]+[ \t]+[0-9.]+/ { s = $1; v = $2 } END { print s " B: " v }' "$WORK/out") $(prog_unit "$prog") ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)"
}

# one repetition: the storm runs on their clusters, then MPICH with no
# cluster up; which goes first alternates
storm_part() {
	local rw
	for rw in 1 0; do
		[ $rw = 0 ] && [[ " $PLACES " != *" nodes "* ]] && continue
		up $rw
		for place in $PLACES; do
			[ $rw = 0 ] && [ "$place" = node ] && continue
			for p in $PROGS; do run "$([ $rw = 1 ] && echo bcs || echo bcs-daemons)" "$place" "$1" "$p"; done
		done
		down
	done
}
mpich_part() {
	for place in $PLACES; do for p in $PROGS; do run mpich "$place" "$1" "$p"; done; done
}
for rep in $(seq 1 "$REPS"); do
	log "repetition $rep of $REPS (load $(load1))"
	if [ $((rep % 2)) = 1 ]; then storm_part "$rep"; mpich_part "$rep"; else mpich_part "$rep"; storm_part "$rep"; fi
done
echo "{\"bench\":\"end\",\"fails\":$FAILS,\"load1_end\":$(load1)}" >>"$OUT"
log "done: $OUT ($FAILS failed runs)"
[ $FAILS = 0 ]
