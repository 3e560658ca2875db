#!/bin/bash
# Time to a late failure, again: a recorded run against `storm replay --from`
# its last checkpoint, on a virtual cluster of BENCH_REPLAY_NODES nodes, one
# rank per node. The program (bench/replay/latefail.c) folds every step's
# wildcard matches and failed MPI_Test polls into a value, prints it after
# its last step and aborts the job: the failure comes at the end of the run,
# and its value is timing's, so only a replay that forces the recorded
# outcomes prints it again.
#  0. one run without --record (the calibration): its time T0 sets the
#     checkpoint interval S = T0 / (K + 1/2) in whole seconds, so that the
#     recorded run takes K checkpoints and its failure comes half an
#     interval after the last;
#  then BENCH_REPLAY_REPS times:
#  1. `storm run --record TRACE --checkpoint-interval S`: its time to the
#     failure (the command's wall time, to its exit), how many checkpoints
#     it took (the last one's epoch) and when the last was taken;
#  2. `storm replay --from LAST TRACE`, LAST the last of them: its time to
#     the same failure, and within it the restart time (the command issued
#     to the last node's "job R: started ranks" log line: the trace's
#     multicast and the restore);
#  3. `storm replay TRACE` from the start, for comparison.
# A replay counts only when it prints the recorded value; otherwise the
# repetition is recorded as failed. report.py takes medians and checks the
# target: replay from the last of K checkpoints ≤ recorded time / K + the
# restart time.
#
# Run by `make bench-replay`, which then runs report.py. Settings:
#   BENCH_REPLAY_K=4          checkpoints the recorded run should take
#   BENCH_REPLAY_REPS=3       repetitions (report.py takes medians)
#   BENCH_REPLAY_STEPS=1500   the program's steps (each 2-8 ms of sleep per
#                             rank, and the slices its messages wait for)
#   BENCH_REPLAY_NODES=4      nodes, and ranks (one per node)
#   BENCH_REPLAY_TIMESLICE=1000  the cluster's timeslice (us)
#   BENCH_QUICK=1             K=2, 1 repetition, 600 steps (a smoke run)
# Results: bench/results/replay-<date>/results.jsonl (+ log.txt), symlink
# bench/results/replay-latest. The cluster lives in /tmp/replaybench (or
# STORM_REPLAYBENCH_DIR).
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	K=${BENCH_REPLAY_K:-2} REPS=${BENCH_REPLAY_REPS:-1} STEPS=${BENCH_REPLAY_STEPS:-600}
else
	K=${BENCH_REPLAY_K:-4} REPS=${BENCH_REPLAY_REPS:-3} STEPS=${BENCH_REPLAY_STEPS:-1500}
fi
NODES=${BENCH_REPLAY_NODES:-4}
TS=${BENCH_REPLAY_TIMESLICE:-1000}
RUN_TIMEOUT=1800
STORM=$TOP/build/bin/storm
BCSCC=$TOP/build/bin/bcs-mpicc
CDIR=${STORM_REPLAYBENCH_DIR:-/tmp/replaybench}/cluster
mkdir -p "$(dirname "$CDIR")"
export STORM_CONF=$CDIR/storm.conf
WORK=$(mktemp -d /tmp/replaybench-work.XXXXXX)
stamp=$(date +%Y%m%d-%H%M%S)
RES=$TOP/bench/results/replay-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "replay-$stamp" "$TOP/bench/results/replay-latest"
UP=0
started=$(date +%s)
FAILS=0

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
cleanup() {
	[ $UP = 1 ] && timeout 60 "$STORM" cluster down --dir "$CDIR" >>"$LOG" 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM

newest_job() {
	"$STORM" jobs --all --json | python3 -c 'import json,sys; print(max([j["job"] for j in json.load(sys.stdin)["jobs"]] or [0]))'
}
# job_ckpts JOB: the ids, epochs and times of JOB's complete checkpoints
# still kept (the MM prunes all but the latest few), oldest first; a
# checkpoint's epoch is its number among the job's checkpoints
job_ckpts() {
	"$STORM" checkpoints --json | python3 -c '
import json, sys
ks = [k for k in json.load(sys.stdin)["checkpoints"] if k["job"] == int(sys.argv[1]) and k["complete"]]
print(" ".join("%d:%d:%.3f" % (k["id"], k["epoch"], k["time"]) for k in sorted(ks, key=lambda k: k["id"])))' "$1"
}
# last_started JOB: Unix time of the last node's "job JOB: started ranks" line
last_started() {
	python3 bench/last_started.py "$CDIR/log" "$1"
}
# timed NAME COMMAND...: runs it with NAME.out/NAME.err; T the wall time, RC its status
timed() {
	local name=$1 t0 t1
	shift
	t0=$(now)
	timeout "$RUN_TIMEOUT" "$@" >"$name.out" 2>"$name.err"
	RC=$?
	t1=$(now)
	T0=$t0
	T=$(elapsed "$t0" "$t1")
	cat "$name.err" >>"$LOG"
}
value_of() { sed -n 's/^failure: value \([0-9a-f]*\) .*/\1/p' "$1" | head -1; }

if ! "$BCSCC" -std=c11 -O2 -Wall -Wextra -Werror bench/replay/latefail.c -o "$WORK/latefail" >>"$LOG" 2>&1; then
	log "bcs-mpicc bench/replay/latefail.c failed (make all first; see $LOG)"
	exit 1
fi
log "cluster up: $NODES nodes, timeslice $TS us, in $CDIR"
timeout 60 "$STORM" cluster down --dir "$CDIR" >/dev/null 2>&1
rm -rf "$CDIR"
# DOWN after 10 s of silence: a loaded machine starves a node daemon for seconds
if ! timeout 120 "$STORM" cluster up --nodes "$NODES" --dir "$CDIR" --timeslice-us "$TS" \
	--down-after-ms 10000 >>"$LOG" 2>&1; then
	log "cluster up failed"
	exit 1
fi
UP=1
cd "$WORK" || exit 1
RUN=(-N "$NODES" -n "$NODES")

echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"quick\":$QUICK,\"k\":$K,\"reps\":$REPS,\"steps\":$STEPS,\"nodes\":$NODES,\"ranks\":$NODES,\"timeslice_us\":$TS,\"nproc\":$(nproc),\"cpu\":\"$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")\",\"kernel\":\"$(uname -r)\",\"commit\":\"$(git -C "$TOP" rev-parse --short HEAD 2>/dev/null)\",\"load1_start\":$(load1)}" >>"$OUT"

# ---- 0. calibration: the interval that gives K checkpoints
l=$(load1)
timed calib "$STORM" run "${RUN[@]}" ./latefail "$STEPS"
v=$(value_of calib.out)
log "calibration: $T s without --record, exit $RC, value ${v:-none} (load $l)"
if [ -z "$v" ]; then
	log "the calibration run printed no failure: $(tail -2 calib.err)"
	echo "{\"bench\":\"calibration\",\"time_s\":$T,\"rc\":$RC,\"load1\":$l,\"error\":\"no failure line\"}" >>"$OUT"
	exit 1
fi
S=$(awk -v t="$T" -v k="$K" 'BEGIN { s = int(t / (k + 0.5)); print s < 1 ? 1 : s }')
echo "{\"bench\":\"calibration\",\"time_s\":$T,\"rc\":$RC,\"load1\":$l,\"interval_s\":$S}" >>"$OUT"
log "checkpoint interval: $S s"

# ---- 1-3, REPS times
for ((rep = 1; rep <= REPS; rep++)); do
	rm -f rec.bcs
	l=$(load1)
	timed rec "$STORM" run "${RUN[@]}" --record rec.bcs --checkpoint-interval "$S" ./latefail "$STEPS"
	rec_s=$T rec_rc=$RC rec_t0=$T0
	J=$(newest_job)
	value=$(value_of rec.out)
	cks=$(job_ckpts "$J")
	last=${cks##* }
	IFS=: read -r last_id nck last_time <<<"${last:-::}"
	nck=${nck:-0}
	log "rep $rep: recorded job $J: $rec_s s, exit $rec_rc, value ${value:-none}, $nck checkpoints (kept, id:epoch:time: ${cks:-none}) (load $l)"
	pre="\"bench\":\"replay\",\"rep\":$rep,\"interval_s\":$S,\"job\":$J,\"record_s\":$rec_s,\"record_rc\":$rec_rc,\"checkpoints\":$nck,\"load1\":$l"
	if [ -z "$value" ] || [ ! -s rec.bcs ] || [ "$nck" = 0 ]; then
		why="recorded run: value '${value}', trace $(stat -c %s rec.bcs 2>/dev/null || echo missing), $nck checkpoints: $(tail -1 rec.err)"
		echo "{$pre,\"error\":\"$(json_str "$why")\"}" >>"$OUT"
		FAILS=$((FAILS + 1))
		log "  FAILED: $why"
		continue
	fi
	last_at=$(elapsed "$rec_t0" "$last_time")

	l2=$(load1)
	timed from "$STORM" replay --from "$last_id" rec.bcs
	from_s=$T from_rc=$RC from_t0=$T0
	R=$(newest_job)
	rs=$(last_started "$R")
	restart_s=null
	[ -n "$rs" ] && restart_s=$(elapsed "$from_t0" "$rs")
	from_v=$(value_of from.out)
	log "  replay --from $last_id (job $R): $from_s s, restart $restart_s s, exit $from_rc, value ${from_v:-none} (load $l2)"

	l3=$(load1)
	timed whole "$STORM" replay rec.bcs
	whole_s=$T whole_rc=$RC
	whole_v=$(value_of whole.out)
	log "  whole replay: $whole_s s, exit $whole_rc, value ${whole_v:-none} (load $l3)"

	row="$pre,\"value\":\"$value\",\"last_ckpt\":$last_id,\"last_ckpt_at_s\":$last_at,\"from_s\":$from_s,\"from_rc\":$from_rc,\"restart_s\":$restart_s,\"from_value\":\"$from_v\",\"from_load1\":$l2,\"whole_s\":$whole_s,\"whole_rc\":$whole_rc,\"whole_value\":\"$whole_v\",\"whole_load1\":$l3,\"trace_bytes\":$(stat -c %s rec.bcs)"
	if [ "$from_v" != "$value" ] || [ "$whole_v" != "$value" ]; then
		why="a replay did not reach the recorded failure: --from printed '${from_v}', the whole replay '${whole_v}', recorded '$value'"
		row="$row,\"error\":\"$(json_str "$why")\""
		FAILS=$((FAILS + 1))
		log "  FAILED: $why"
	fi
	echo "{$row}" >>"$OUT"
	for c in $cks; do "$STORM" checkpoints --delete "${c%%:*}" >/dev/null 2>&1; done
done

ended=$(date +%s)
echo "{\"bench\":\"meta_end\",\"seconds\":$((ended - started)),\"load1_end\":$(load1),\"failures\":$FAILS}" >>"$OUT"
log "done in $((ended - started)) s, $FAILS failure(s): $OUT"
[ "$QUICK" = 1 ] && [ $FAILS != 0 ] && exit 1
exit 0
