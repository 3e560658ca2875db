#!/bin/bash
# Checkpoint/restart on an 8-node virtual cluster, one rank
# per node (tests/ckpt/ckpt_prog: a heap it fills, a file per rank, clock
# pacing):
#  1. for total job memory 16 MiB .. 2 GiB: `storm checkpoint` time (the MM's
#     freeze-to-confirmation, and the CLI's wall time), how long the job was
#     frozen (until every node had captured its ranks: snapshots taken) and
#     image bytes, where the time went on the nodes (phases.py), the
#     storage's write bandwidth measured right before in the same directories
#     (8 dd at once, one per node's state directory, total/8 each,
#     conv=fsync), and the restart time (`storm restart` issued to the last
#     node's "started ranks" log line);
#  2. failure-free overhead: the same program, paced by clock_nanosleep
#     (BENCH_CKPT_RUN seconds of 10 ms steps, 256 MiB in total), without
#     checkpoints and with --checkpoint-interval 10 and 60; overhead =
#     runtime / runtime without - 1 (what the freezes cost it);
#  3. threads: one rank of 256 MiB on one node (bench/checkpoint/threads.c:
#     its threads each write one word in every page of their slice of the
#     heap every 10 ms) with 1, 4 and 8 threads, checkpointed and restarted
#     as in 1;
#  4. CRIU (Debian's criu, where installed) on the same program, outside
#     storm: `criu dump -t PID --shell-job`, `criu restore --shell-job`, or
#     where it stops on this kernel.
# The node daemons checkpoint in parallel into their state directories, which
# all live on this machine's one disk (like 8 nodes sharing one file server);
# restart reads the images back while they are still in the page cache.
#
# Run by `make bench-ckpt`, which then runs report.py. Settings:
#   BENCH_QUICK=1                 sizes 16, 64, 256 MiB; overhead at 10 s on a 30 s run
#   BENCH_CKPT_SIZES="16 64 256 1024 2048"   MiB in total ("" for none)
#   BENCH_CKPT_RUN=120            seconds of the overhead runs
#   BENCH_CKPT_INTERVALS="0 10 60"  overhead runs ("" for none)
#   BENCH_CKPT_PACE=sleep         the size runs' ranks sleep or spin between steps
#   BENCH_CKPT_REPS=3             rounds of the sizes and threads (report.py takes medians)
#   BENCH_CKPT_THREADS="1 4 8"    threads of the one-rank runs ("" for none)
#   BENCH_CKPT_THREAD_MIB=256     their rank's memory
#   BENCH_CKPT_THREAD_STEP_MS=10  how often its threads write every page of it
# Results: bench/results/ckpt-<date>/results.jsonl (+ log.txt), symlink
# bench/results/ckpt-latest. The cluster lives in /tmp/ckptbench-storm.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)
QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	SIZES=${BENCH_CKPT_SIZES-16 64 256}
	RUNS=${BENCH_CKPT_RUN:-30}
	INTERVALS="0 10"
else
	SIZES=${BENCH_CKPT_SIZES-16 64 256 1024 2048}
	RUNS=${BENCH_CKPT_RUN:-120}
	INTERVALS="0 10 60"
fi
INTERVALS=${BENCH_CKPT_INTERVALS-$INTERVALS}
# how the size runs' ranks wait out their steps: sleep, as one rank on a
# node of its own would leave the node's other cores to its checkpoint
# helper (8 spinning ranks would take this machine's 2 cores from the 8
# helpers); spin to see that
PACE=${BENCH_CKPT_PACE:-sleep}
REPS=${BENCH_CKPT_REPS:-3}
THREADS=${BENCH_CKPT_THREADS-1 4 8}
THREAD_MIB=${BENCH_CKPT_THREAD_MIB:-256}
THREAD_STEP=${BENCH_CKPT_THREAD_STEP_MS:-10}
TPROG=$TOP/build/bin/ckpt_bench_threads
NODES=8
STORM=$TOP/build/bin/storm
PROG=$TOP/build/bin/ckpt_prog
SDIR=${STORM_CKPT_DIR:-/tmp/ckptbench-storm}
export STORM_CONF=$SDIR/storm.conf
# loopback only: libfabric would otherwise take the first interface it
# finds, and a --netns cluster's bridge (10.X.255.254) that goes away with
# it takes every connection of this cluster along (seen: all nodes DOWN)
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo
WORK=$(mktemp -d /tmp/ckptbench-work.XXXXXX)
stamp=$(date +%Y%m%d-%H%M%S)
RES=$TOP/bench/results/ckpt-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "ckpt-$stamp" "$TOP/bench/results/ckpt-latest"
UP=0

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
cleanup() {
	[ $UP = 1 ] && timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM

now() { echo "$EPOCHREALTIME"; }
newest_job() {
	"$STORM" jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'
}
# wait_steps FILE N: until N ranks printed "step 1 " in FILE
wait_steps() {
	local i
	for ((i = 0; i < 6000; i++)); do
		[ "$(grep -c '^step 1 ' "$1" 2>/dev/null)" -ge "$2" ] && return 0
		sleep 0.05
	done
	return 1
}
wait_gone() { # wait_gone JOB
	local i
	for ((i = 0; i < 1200; i++)); do
		"$STORM" jobs --json | grep -q "\"job\": $1," || return 0
		sleep 0.05
	done
	return 1
}
# last_started JOB: Unix time of the last node's "job JOB: started ranks" line
last_started() {
	python3 bench/last_started.py "$SDIR/log" "$1"
}

# ckpt_restart JOB NODES: `storm checkpoint --json` of the running job into
# ck.json (t0, t1 around it; CK its id), the job killed, `storm restart CK`
# timed to the last of its NODES nodes' "started ranks" (tr0, tr1), then
# killed too, the checkpoint deleted and its phases in phases.json.
# Returns 1 if the checkpoint failed.
ckpt_restart() {
	local J=$1 nodes=$2 before R RP i
	t0=$(now)
	"$STORM" checkpoint --json "$J" >ck.json 2>>"$LOG"
	t1=$(now)
	"$STORM" cancel --signal KILL "$J" >/dev/null 2>&1
	wait_gone "$J"
	CK=$(python3 -c 'import json; print(json.load(open("ck.json"))["id"])' 2>/dev/null)
	[ -n "$CK" ] || return 1
	: >restart.out
	before=$(newest_job)
	tr0=$(now)
	"$STORM" restart "$CK" >restart.out 2>>"$LOG" &
	RP=$!
	R=""
	for ((i = 0; i < 6000; i++)); do
		R=$(newest_job)
		[ "$R" -gt "$before" ] &&
			[ "$(grep -h "job $R: started ranks" "$SDIR"/log/node*.log | wc -l)" -ge "$nodes" ] && break
		sleep 0.05
	done
	tr1=$(last_started "$R")
	"$STORM" cancel --signal KILL "$R" >/dev/null 2>&1
	kill "$RP" 2>/dev/null
	wait "$RP" 2>/dev/null
	wait_gone "$R"
	"$STORM" checkpoints --delete "$CK" >/dev/null 2>&1
	python3 "$TOP/bench/checkpoint/phases.py" "$SDIR" "$CK" >phases.json 2>>"$LOG"
	return 0
}

log "cluster up: $NODES nodes in $SDIR"
timeout 60 "$STORM" cluster down --dir "$SDIR" >/dev/null 2>&1
rm -rf "$SDIR"
# no buddy copies: the figure is the checkpoint against the storage's
# bandwidth (copies cost their own traffic: docs/BENCHMARKS.md, "Buddy copies")
if ! timeout 120 "$STORM" cluster up --nodes $NODES --dir "$SDIR" --down-after-ms 30000 \
	--checkpoint-copies 0 >>"$LOG" 2>&1; then
	log "cluster up failed"
	exit 1
fi
UP=1
cd "$WORK" || exit 1
STATE=$SDIR/state

# ---- 1. checkpoint and restart time against memory (REPS rounds of the sizes)
for total in $(for ((r = 0; r < REPS; r++)); do echo $SIZES; done); do
	per=$((total / NODES))
	[ $per -lt 1 ] && per=1
	# the storage, now, written as storm writes it: one dd per node into
	# its state directory, all at once, each fsync'd; bandwidth = all the
	# bytes / until the last one is done
	d0=$(now)
	for ((k = 0; k < NODES; k++)); do
		dd if=/dev/zero of="$STATE/node0$k/ddtest" bs=1M count="$per" conv=fsync 2>/dev/null &
	done
	wait
	d1=$(now)
	rm -f "$STATE"/node0*/ddtest
	dds=$(awk -v a="$d0" -v b="$d1" 'BEGIN { print b - a }')
	ddbps=$(awk -v s="$dds" -v n=$((per * NODES)) 'BEGIN { print n * 1048576 / s }')
	: >job.out
	"$STORM" submit -N $NODES -n $NODES -o "$WORK/job.out" --parsable "$PROG" 30000 $per out%r.f 10 $PACE >job.id 2>>"$LOG"
	J=$(cat job.id)
	if ! wait_steps job.out $NODES; then
		log "size $total MiB: job $J did not start"
		continue
	fi
	ckpt_restart "$J" $NODES || { log "size $total MiB: checkpoint failed"; continue; }
	python3 - "$total" "$t0" "$t1" "$tr0" "$tr1" "$ddbps" "$dds" "$PACE" >>"$OUT" <<'PY'
import json, sys
total, t0, t1, tr0, tr1, ddbps, dds, pace = sys.argv[1:]
ck = json.load(open("ck.json"))
try:
    phases = json.load(open("phases.json"))
except ValueError:
    phases = None
print(json.dumps({"kind": "size", "total_mib": int(total), "bytes": ck["bytes"],
                  "ckpt_s": ck["seconds"], "frozen_s": ck.get("frozen"), "ckpt_cli_s": float(t1) - float(t0),
                  "restart_s": (float(tr1) - float(tr0)) if tr1 else None,
                  "dd_bps": float(ddbps) if ddbps else None, "dd_s": float(dds) if dds else None,
                  "dd_writers": 8, "pace": pace, "phases": phases}))
PY
	log "size $total MiB: $(tail -1 "$OUT")"
done

# ---- 2. failure-free overhead
STEPS=$((RUNS * 100)) # 10 ms steps
for iv in $INTERVALS; do
	extra=()
	[ "$iv" != 0 ] && extra=(--checkpoint-interval "$iv")
	t0=$(now)
	"$STORM" run -N $NODES -n $NODES "${extra[@]}" "$PROG" $STEPS $((256 / NODES)) out%r.f 10 sleep >ov.out 2>>"$LOG"
	rc=$?
	t1=$(now)
	J=$(newest_job)
	n=$("$STORM" checkpoints --json | python3 -c 'import json,sys; print(sum(1 for k in json.load(sys.stdin)["checkpoints"] if k["job"] == int(sys.argv[1])))' "$J")
	nlog=$(grep -c "job $J: complete checkpoint" "$SDIR/log/mm.log")
	# what the job spent frozen: the MM's freeze-to-confirmation times
	frozen=$(grep "job $J: complete checkpoint" "$SDIR/log/mm.log" | awk '{ for (i = 1; i <= NF; i++) if ($i == "frozen") s += $(i+1) } END { printf "%.3f", s + 0 }')
	echo "{\"kind\": \"overhead\", \"interval\": $iv, \"runtime_s\": $(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}'), \"rc\": $rc, \"checkpoints\": $nlog, \"kept\": $n, \"frozen_s\": $frozen, \"run_s\": $RUNS, \"total_mib\": 256}" >>"$OUT"
	log "overhead, interval $iv: $(tail -1 "$OUT")"
done
# ---- 3. threads: one rank of THREAD_MIB on one node, 1, 4 and 8 threads
for th in $(for ((r = 0; r < REPS; r++)); do echo $THREADS; done); do
	: >job.out
	"$STORM" submit -N 1 -n 1 -o "$WORK/job.out" --parsable "$TPROG" "$th" "$THREAD_MIB" \
		"$THREAD_STEP" >job.id 2>>"$LOG"
	J=$(cat job.id)
	if ! wait_steps job.out 1; then
		log "threads $th: job $J did not start"
		continue
	fi
	ckpt_restart "$J" 1 || { log "threads $th: checkpoint failed"; continue; }
	python3 - "$th" "$THREAD_MIB" "$t0" "$t1" "$tr0" "$tr1" "$THREAD_STEP" >>"$OUT" <<'PY'
import json, sys
th, mib, t0, t1, tr0, tr1, step = sys.argv[1:]
ck = json.load(open("ck.json"))
try:
    phases = json.load(open("phases.json"))
except ValueError:
    phases = None
print(json.dumps({"kind": "threads", "threads": int(th), "total_mib": int(mib), "step_ms": int(step),
                  "bytes": ck["bytes"], "ckpt_s": ck["seconds"], "frozen_s": ck.get("frozen"),
                  "ckpt_cli_s": float(t1) - float(t0),
                  "restart_s": (float(tr1) - float(tr0)) if tr1 else None, "phases": phases}))
PY
	log "threads $th: $(tail -1 "$OUT")"
done

# ---- 4. CRIU on the same program, outside storm (the kernel's vDSO may stop it)
if [ -n "$THREADS" ] && command -v criu >/dev/null; then
	CRIU_VERSION=$(criu --version 2>&1 | sed -n 's/^Version: //p')
	CRIU_CHECK=$(criu check 2>&1 | grep -m1 "Error")
	for th in $THREADS; do
		: >criu.out
		"$TPROG" "$th" "$THREAD_MIB" "$THREAD_STEP" >criu.out 2>&1 </dev/null &
		P=$!
		wait_steps criu.out 1
		rm -rf criu.d && mkdir criu.d
		c0=$(now)
		criu dump -t "$P" --shell-job -D criu.d -o dump.log >/dev/null 2>&1
		drc=$?
		c1=$(now)
		rrc="" r0="" r1=""
		if [ "$drc" = 0 ]; then
			r0=$(now)
			criu restore -D criu.d --shell-job -d --pidfile "$WORK/criu.d/restored.pid" \
				-o restore.log >/dev/null 2>&1
			rrc=$?
			r1=$(now)
			[ -f criu.d/restored.pid ] && kill -9 "$(cat criu.d/restored.pid)" 2>/dev/null
		fi
		kill -9 "$P" 2>/dev/null
		wait "$P" 2>/dev/null
		err=$(grep -h -m1 "Error" criu.d/dump.log criu.d/restore.log 2>/dev/null | head -1)
		python3 - "$th" "$THREAD_MIB" "$CRIU_VERSION" "$drc" "$c0" "$c1" "$rrc" "$r0" "$r1" "$err" \
			"$(du -sb criu.d | cut -f1)" "$CRIU_CHECK" >>"$OUT" <<'PY'
import json, sys
th, mib, ver, drc, c0, c1, rrc, r0, r1, err, size, check = sys.argv[1:]
print(json.dumps({"kind": "criu", "threads": int(th), "total_mib": int(mib), "version": ver,
                  "dump_rc": int(drc), "dump_s": float(c1) - float(c0),
                  "restore_rc": int(rrc) if rrc else None,
                  "restore_s": float(r1) - float(r0) if r0 else None,
                  "bytes": int(size), "error": err, "check": check}))
PY
		log "criu, threads $th: $(tail -1 "$OUT")"
	done
fi
log "done: $OUT"
