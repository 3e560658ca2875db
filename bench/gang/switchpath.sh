#!/bin/bash
# The gang switch's three paths, side by side in one run, on an 8-node
# virtual cluster at MPL 2:
#   arrival  the node switches when the strobe lands, without waiting for
#            the outgoing ranks to stop (--ahead 0 --switch-wait-pct 0: the
#            path before the schedule ahead);
#   timed    the strobe carries the next K slots and each node switches from
#            its own timer at their start (--ahead 4 --switch-wait-pct 0);
#   strict   timed, and the incoming job runs only once the outgoing ranks
#            are off the CPU (--ahead 4 --switch-wait-pct 25: the default).
# For each path and timeslice (BENCH_SWITCH_SLICES): a fresh cluster with
# STORM_TRACE; two CPU-bound jobs (gang_spin, one rank per node) run alone and
# together at 1 ms (T/(Ta+Tb), BENCH_SWITCH_REPS repetitions) and only
# together at the other slices; trace.py gives the switch skew (first to last
# node) and the switches missed. Then at a 10 ms slice two endless jobs are
# sampled from outside for 5 s by tests/cluster/gang_overlap.py: the share of
# their CPU time the two jobs' ranks on one node ran at the same time (the
# 1 ms CPU-clock sampler, and exactly from perf's sched_switch where perf can
# trace). Peer: the arrival path is the baseline the others are judged by.
#
# Run by `make bench-gang` after run.sh; results in
# bench/results/switch-<date>/results.jsonl (symlink switch-latest); then
# bench/gang/switch_report.py writes docs/BENCHMARKS.md's "Gang switch path".
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
SLICES=${BENCH_SWITCH_SLICES:-500 1000 2000}
REPS=${BENCH_SWITCH_REPS:-3}
PATHS=${BENCH_SWITCH_PATHS:-arrival timed strict}
N=8
WORK8=${BENCH_GANG_WORK:-200000000}
STORM=$TOP/build/bin/storm
SPIN=$TOP/build/bin/gang_spin
SDIR=${STORM_GANG_DIR:-/tmp/switchbench-storm}
export STORM_CONF=$SDIR/storm.conf
WORKDIR=$(mktemp -d /tmp/switchbench-work.XXXXXX)
stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/switch-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "switch-$stamp" bench/results/switch-latest
started=$(date +%s)
. tests/cluster/lib.sh

. bench/gang/lib.sh
cleanup() {
	timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	pkill -9 -f "$WORKDIR/spin-" 2>/dev/null
	rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM
for f in "$STORM" "$SPIN"; do
	[ -x "$f" ] || { log "$f missing: make all build/bin/gang_spin"; exit 1; }
done
# two names for the spinner, so the two jobs' ranks can be told apart
cp "$SPIN" "$WORKDIR/spin-a" && cp "$SPIN" "$WORKDIR/spin-b"

echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"reps\":$REPS,\"work8\":$WORK8,\"nodes\":$N,\"nproc\":$(nproc),\"kernel\":\"$(uname -r)\",\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null)\",\"load1_start\":$(load1)}" >>"$OUT"

path_args() { # PATH
	case $1 in
	arrival) echo "--ahead 0 --switch-wait-pct 0" ;;
	timed) echo "--ahead 4 --switch-wait-pct 0" ;;
	strict) echo "--ahead 4 --switch-wait-pct 25" ;;
	esac
}
up() { # PATH TIMESLICE TRACEDIR
	rm -rf "$3" && mkdir -p "$3"
	# shellcheck disable=SC2046
	STORM_TRACE=$3 timeout 120 "$STORM" cluster up --nodes $N --dir "$SDIR" --timeslice-us "$2" \
		--mpl 2 --quantum 1 --down-after-ms 2000 --realtime $(path_args "$1") >>"$LOG" 2>&1
}
down() { timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1; }
job() { # NAME: one job, waited for
	timeout 300 "$STORM" submit --wait -N $N -J "$1" -o /dev/null "$SPIN" "$WORK8" >>"$LOG" 2>&1
}
together() { # prints T
	local t0 t1 r1 r2
	t0=$(now)
	job A2 & local p1=$!
	job B2 & local p2=$!
	wait $p1; r1=$?
	wait $p2; r2=$?
	t1=$(now)
	[ $r1$r2 = 00 ] || return 1
	elapsed "$t0" "$t1"
}

point() { # PATH TIMESLICE
	local path=$1 ts=$2 tdir=$WORKDIR/trace rep=1
	log "$path: timeslice $ts us (load $(load1))"
	if ! up "$path" "$ts" "$tdir"; then
		log "  FAILED: cluster up"
		echo "{\"bench\":\"switch\",\"path\":\"$path\",\"timeslice_us\":$ts,\"error\":\"cluster up failed\"}" >>"$OUT"
		down
		return
	fi
	if [ "$ts" = 1000 ]; then
		while [ $rep -le "$REPS" ]; do
			local t0 ta tb t l err=""
			l=$(load1)
			t0=$(now); job A || err="A failed"; ta=$(elapsed "$t0" "$(now)")
			t0=$(now); job B || err="B failed"; tb=$(elapsed "$t0" "$(now)")
			t=$(together) || err="together failed"
			if [ -z "$err" ]; then
				echo "{\"bench\":\"switch\",\"path\":\"$path\",\"timeslice_us\":$ts,\"rep\":$rep,\"ta_s\":$ta,\"tb_s\":$tb,\"t_s\":$t,\"ratio\":$(awk -v a="$ta" -v b="$tb" -v t="$t" 'BEGIN { printf "%.4f", t / (a + b) }'),\"load1\":$l}" >>"$OUT"
				log "  rep $rep: Ta $ta Tb $tb T $t"
			else
				echo "{\"bench\":\"switch\",\"path\":\"$path\",\"timeslice_us\":$ts,\"rep\":$rep,\"error\":\"$err\"}" >>"$OUT"
				log "  rep $rep: $err"
			fi
			rep=$((rep + 1))
		done
	else
		together >/dev/null || log "  together failed"
	fi
	local ndown
	ndown=$("$STORM" nodes --json 2>/dev/null | grep -c '"DOWN"')
	down
	python3 bench/gang/trace.py "$tdir" bench=switch_trace path="$path" nodes=$N timeslice_us="$ts" \
		nodes_down_at_end="${ndown:-0}" load1="$(load1)" >>"$OUT" 2>>"$LOG" || log "  trace.py failed"
	tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  skew p50/p99 %s/%s us (timed %s/%s us), missed strobes %s, missed timed switches %s" % (r.get("skew_p50_us"), r.get("skew_p99_us"), r.get("timed_skew_p50_us"), r.get("timed_skew_p99_us"), r.get("missed_total"), r.get("timed_missed")))' 2>/dev/null | tee -a "$LOG" >&2
	rm -rf "$tdir"
}

overlap() { # PATH: two endless jobs at 10 ms, sampled from outside
	local path=$1 a b pa pb
	log "$path: overlap at 10 ms (load $(load1))"
	up "$path" 10000 "$WORKDIR/otrace" || { log "  FAILED: cluster up"; down; return; }
	a=$("$STORM" submit --parsable -N $N -o /dev/null "$WORKDIR/spin-a" 1000000000000000 2>>"$LOG")
	b=$("$STORM" submit --parsable -N $N -o /dev/null "$WORKDIR/spin-b" 1000000000000000 2>>"$LOG")
	local node ok=1
	for node in $(seq -f 'node%02g' 0 $((N - 1))); do
		wait_log "$SDIR/log/$node.log" "job $b: started ranks" 60 || ok=0
	done
	pa=$(pgrep -f "$WORKDIR/spin-a" | paste -sd,)
	pb=$(pgrep -f "$WORKDIR/spin-b" | paste -sd,)
	if [ $ok = 1 ] && [ -n "$pa" ] && [ -n "$pb" ]; then
		local o
		o=$(python3 tests/cluster/gang_overlap.py 5 "$pa" "$pb" 2>>"$LOG")
		echo "{\"bench\":\"switch_overlap\",\"path\":\"$path\",\"timeslice_us\":10000,\"load1\":$(load1),\"overlap\":${o:-null}}" >>"$OUT"
		log "  $o"
	else
		log "  the ranks did not all start"
	fi
	"$STORM" cancel "$a" "$b" >>"$LOG" 2>&1
	down
	rm -rf "$WORKDIR/otrace"
}

for path in $PATHS; do
	for ts in $SLICES; do point "$path" "$ts"; done
	overlap "$path"
done
echo "{\"bench\":\"meta_end\",\"seconds\":$(($(date +%s) - started)),\"load1_end\":$(load1)}" >>"$OUT"
log "done in $(($(date +%s) - started)) s: $OUT"
