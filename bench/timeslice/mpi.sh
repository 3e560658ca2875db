#!/bin/bash
# BCS-MPI against the slice: what a slice length buys a BCS-MPI job and what
# it costs the rest, and whether a row's own slice (storm run --timeslice-us)
# pays. For each cluster timeslice in BENCH_SLICES, a fresh `storm cluster up
# --nodes N --provider shm --mpl 2 --quantum 1 --timeslice-us T`:
#   idle   the daemons' CPU use over BENCH_WINDOW s (utime+stime of the MM
#          and every node daemon, % of one core): the strobes' cost
#   alone  each app (bench/mpi: sweep, sweep --nb, stencil; N ranks, one a
#          node) on its own, BENCH_REPS times; at the default 10 ms also
#          with each per-row ask in BENCH_ASKS (--timeslice-us)
#   shared the same while a CPU-bound job (gang_spin, one rank a node,
#          endless) holds the other row: the app's run time, and the CPU the
#          spinning job got meanwhile (its ranks' utime+stime over the run,
#          % of one core) and the daemons' (their cost during the run)
# Row switches happen every quantum x T of the cluster either way: a row
# asking for a shorter slice runs as many more slices in its turn.
# Results: bench/results/slice-mpi-<date>/results.jsonl; report:
# bench/timeslice/mpi_report.py (the "## Timeslice and BCS-MPI" section of
# docs/BENCHMARKS.md).
# usage: bench/timeslice/mpi.sh [NODES] (default 8)
#   BENCH_SLICES="1000 2000 5000 10000"  BENCH_ASKS="1000 2000"  BENCH_REPS=3
#   BENCH_WINDOW=3  BENCH_SWEEP="--nx 64 --ny 64 --nz 64 --mk 16 --iters 2"
#   BENCH_STENCIL="--steps 30" (bench/mpi/run.sh's problems)
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
NODES=${1:-8}
SLICES=${BENCH_SLICES:-1000 2000 5000 10000}
ASKS=${BENCH_ASKS:-1000 2000}
REPS=${BENCH_REPS:-3}
WINDOW=${BENCH_WINDOW:-3}
SWEEP_ARGS=${BENCH_SWEEP:---nx 64 --ny 64 --nz 64 --mk 16 --iters 2}
STENCIL_ARGS=${BENCH_STENCIL:---steps 30}
DEFAULT_TS=10000
export PATH=$TOP/build/bin:$PATH
DIR=$(mktemp -d /tmp/storm-bench-slicempi.XXXXXX)
export STORM_CONF=$DIR/c/storm.conf
stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/slice-mpi-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl LOG=$RES/log.txt
ln -sfn "slice-mpi-$stamp" bench/results/slice-mpi-latest
. bench/gang/lib.sh
trap 'storm cluster down --dir "$DIR/c" >>"$LOG" 2>&1; rm -rf "$DIR"' EXIT
trap 'exit 1' INT TERM
HZ=$(getconf CLK_TCK)
load1() { cut -d' ' -f1 /proc/loadavg; }

# the programs, and the spinning job under a name of its own (its ranks are
# found by it)
for p in sweep stencil; do
	bcs-mpicc -std=c11 -O2 -I bench/mpi "bench/mpi/$p.c" -o "$DIR/$p" -lm >>"$LOG" 2>&1 ||
		{ log "bcs-mpicc $p.c failed (see $LOG)"; exit 1; }
done
SPIN=spin$$
cp build/bin/gang_spin "$DIR/$SPIN" || { log "build/bin/gang_spin missing (make build/bin/gang_spin)"; exit 1; }

ticks() { # PID...: their utime+stime, in clock ticks
	local t=0 v p
	for p in "$@"; do
		v=$(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0)
		t=$((t + v))
	done
	echo $t
}
daemons() { awk '{ print $1 }' "$DIR/c/pids"; }
app_cmd() {
	case $1 in
	sweep) echo "$DIR/sweep $SWEEP_ARGS" ;;
	sweep_nb) echo "$DIR/sweep --nb $SWEEP_ARGS" ;;
	stencil) echo "$DIR/stencil $STENCIL_ARGS" ;;
	esac
}

# one run of APP (ask: --timeslice-us, 0 none); a JSON line
run_app() { # TS MODE APP ASK REP
	local ask=() spins=() d0 d1 s0 s1 t0 t1 rc
	[ "$4" != 0 ] && ask=(--timeslice-us "$4")
	[ "$2" = shared ] && mapfile -t spins < <(pgrep -x "$SPIN")
	d0=$(ticks $(daemons)) s0=$(ticks "${spins[@]}") t0=$(now)
	# shellcheck disable=SC2046
	timeout 600 storm run -N "$NODES" -n "$NODES" "${ask[@]}" $(app_cmd "$3") >"$DIR/out" 2>>"$LOG"
	rc=$?
	t1=$(now) d1=$(ticks $(daemons)) s1=$(ticks "${spins[@]}")
	local w
	w=$(elapsed "$t0" "$t1")
	printf '{"bench":"run","ts":%s,"mode":"%s","app":"%s","ask":%s,"rep":%s,"rc":%s,"wall_s":%s,"daemon_cpu_pct":%s,"spin_cpu_pct":%s,"spin_ranks":%s,"load1":%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$rc" "$w" \
		"$(awk -v a="$d0" -v b="$d1" -v h="$HZ" -v w="$w" 'BEGIN { printf "%.1f", (b - a) * 100 / h / w }')" \
		"$(awk -v a="$s0" -v b="$s1" -v h="$HZ" -v w="$w" 'BEGIN { printf "%.1f", (b - a) * 100 / h / w }')" \
		"${#spins[@]}" "$(load1)" >>"$OUT"
	[ $rc = 0 ] || log "  $3 (ts $1, ask $4, $2) failed: exit $rc"
}

log "bench/timeslice/mpi.sh: $NODES nodes, slices $SLICES, asks $ASKS at $DEFAULT_TS, $REPS reps (load $(load1))"
for ts in $SLICES; do
	if ! storm cluster up --nodes "$NODES" --dir "$DIR/c" --provider shm --mpl 2 --quantum 1 \
		--timeslice-us "$ts" --down-after-ms 10000 >>"$LOG" 2>&1; then
		log "cluster up at $ts us failed"
		continue
	fi
	a=$(ticks $(daemons))
	sleep "$WINDOW" # the measurement window itself, not a synchronisation
	b=$(ticks $(daemons))
	printf '{"bench":"idle","ts":%s,"window":%s,"daemon_cpu_pct":%s,"load1":%s}\n' "$ts" "$WINDOW" \
		"$(awk -v a="$a" -v b="$b" -v h="$HZ" -v w="$WINDOW" 'BEGIN { printf "%.1f", (b - a) * 100 / h / w }')" \
		"$(load1)" >>"$OUT"
	asks=0
	[ "$ts" = $DEFAULT_TS ] && asks="0 $ASKS"
	for mode in alone shared; do
		if [ $mode = shared ]; then
			spin=$(storm submit -N "$NODES" -n "$NODES" -o /dev/null --mpi=none "$DIR/$SPIN" \
				100000000000000 2>>"$LOG" | awk '{ print $3 }')
			# its ranks are up once every node has one
			for _ in $(seq 100); do
				[ "$(pgrep -cx "$SPIN")" -ge "$NODES" ] && break
				sleep 0.1 # polling for processes another program starts
			done
		fi
		for rep in $(seq "$REPS"); do
			for app in sweep sweep_nb stencil; do
				for ask in $asks; do
					log "ts $ts $mode $app ask $ask rep $rep (load $(load1))"
					run_app "$ts" $mode $app "$ask" "$rep"
				done
			done
		done
		[ $mode = shared ] && storm cancel "$spin" >>"$LOG" 2>&1
	done
	storm cluster down --dir "$DIR/c" >>"$LOG" 2>&1
done
log "done: $OUT"
