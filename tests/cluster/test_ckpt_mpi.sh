#!/bin/bash
# Checkpoint/restart of a BCS-MPI job on a virtual cluster, through
# bcs-mpicc and the real CLI: tests/cluster/mpi/ckptapp.c (computation over
# a 16 MiB heap per rank, ring messages, a 32 MiB message of many slices
# every 4th step, wildcard receives, Allreduce, Barrier) checkpointed three
# (or more) times while it runs, one of them while the large message is on its way;
# the job itself and restarts from each checkpoint — in place, on other
# nodes, with another number of ranks per node — write a result identical
# to an uninterrupted run; with --restart-on-failure it survives SIGKILL of
# a node daemon and its ranks. Every daemon goes down on exit.
# Usage: test_ckpt_mpi.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-ckptmpi.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo
# a job that never ends fails its check instead of holding the suite (10
# minutes, as lib.sh's STEP_LIMIT: a loaded machine, checkpoints freezing
# the job every second, once took over 2 for a job that ends in seconds)
storm() { timeout 600 "$BIN/storm" "$@"; }
fails=0 checks=0
bg=()

cleanup() {
	for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM

STEPS=100 HEAP=16 BIG=32 STEP_MS=10
cd "$T" || exit 1
expect "bcs-mpicc ckptapp.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/ckptapp.c" -o "$T/ckptapp"
APP="$T/ckptapp $STEPS $HEAP $BIG $STEP_MS"
last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
last_ckpt() { storm checkpoints --json | python3 -c 'import json,sys; print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"]))'; }
# same_result NAME FILE [REF]: FILE is the uninterrupted run's result (REF,
# by default ref.txt), byte for byte
same_result() {
	local ref=${3:-$T/ref.txt}
	if cmp -s "$ref" "$2"; then ok "$1"; else
		bad "$1"
		diff "$ref" "$2" 2>&1 | head -5 | sed 's/^/     | /'
	fi
}

# The daemons grant each source node 512 KiB a slice (256 MB/s at 2 ms), so
# the 32 MiB message takes about 64 slices: long enough for a checkpoint
# asked for when rank 0 prints that it starts to find it under way (at the
# default rate it moves in a few slices, before the request arrives).
export STORM_BCS_LINK_MBS=256
# node01 restores its ranks 300 ms after the others (a test hook): a restart
# must not take the job for quiescent while one node's ranks are not back.
# A node is DOWN after 20 s without a report (counted in slices, which a
# loaded machine stretches: once 85 s): at load 60 on 2 cores node00 once
# went 7 s without one (only node01 is meant to die, and the test has the
# MM see that at once by starting its daemon again)
# It also holds job 2's first message of many slices half way until a
# checkpoint freezes the job (bcs_hold_job): the first checkpoint of the
# live job below finds it under way however late the request lands.
STORM_TEST_TAMPER=restore_late=300,bcs_hold_job=2 STORM_TEST_TAMPER_NODE=node01 \
	expect "cluster up (4 nodes, 2 ms slices, node01 slow to restore)" 0 \
	storm cluster up --nodes 4 --timeslice-us 2000 --down-after-ms 20000 --dir "$C"
expect "an uninterrupted run (2 nodes, 4 ranks)" 0 storm run -N 2 -n 4 $APP "$T/ref.txt"
[ -s "$T/ref.txt" ] && ok "  it wrote its result" || bad "  it wrote its result"

# ---- three checkpoints while it runs, the job goes on to the same result;
# rank 0 holds after its last step until live.txt.end exists (made once the
# checkpoints are done; a restart finds it there)
rm -f "$T/live.txt.end"
storm run -N 2 -n 4 $APP "$T/live.txt" -1 end >live.out 2>live.err &
bg+=($!)
J=""
# most left to move at a freeze, over the job's checkpoints so far
moving() {
	grep -h "job $J: checkpoint .*BCS-MPI frozen with" "$C"/log/node0*.log |
		sed -n 's/.* \([0-9]*\) bytes still to move.*/\1/p' | sort -n | tail -1
}
# three checkpoints at big-message steps; node01 holds the first big
# message (step 1's) half way until the first of them freezes the job
n=0
for s in 1 21 41; do
	wait_log live.out "step $s big message" 60 || bad "job reached step $s"
	[ -n "$J" ] || J=$(last_job)
	if [ "$s" = 1 ]; then
		[ "$J" = 2 ] || bad "the live job is job 2 (bcs_hold_job=2), not $J"
		wait_log "$C/log/node01.log" "test hook: job $J: a message of" 60 ||
			bad "node01 holds job $J's first big message"
	fi
	expect "storm checkpoint $J at step $s" 0 storm checkpoint "$J"
	n=$((n + 1))
done
: >"$T/live.txt.end"
wait "${bg[-1]}"
rc=$?
[ "$rc" = 0 ] && ok "the checkpointed job ends (exit 0)" || bad "the checkpointed job ends (exit $rc)"
same_result "  its result is the uninterrupted run's" "$T/live.txt"
mapfile -t CKS < <(storm checkpoints --json | python3 -c '
import json, sys
for k in json.load(sys.stdin)["checkpoints"]:
    if k["job"] == int(sys.argv[1]) and k["complete"]: print(k["id"])' "$J")
[ "${#CKS[@]}" = "$n" ] && ok "  $n complete checkpoints" || bad "  $n complete checkpoints (${CKS[*]})"
m=$(moving)
[ "${m:-0}" -gt 1048576 ] &&
	ok "  a checkpoint froze it with a message of many slices moving ($m bytes left)" ||
	bad "  a checkpoint froze it with a message of many slices moving (${m:-none})"
grep -q "job $J: checkpoint .*: BCS-MPI drained in" "$C/log/node01.log" &&
	ok "  the nodes drained it before saving" || bad "  the nodes drained it before saving"

# ---- restarts: each writes the uninterrupted run's result
rm -f "$T/live.txt"
expect "storm restart ${CKS[1]} (same nodes)" 0 storm restart "${CKS[1]}"
same_result "  result identical" "$T/live.txt"
[ "$(job_nodes "$(last_job)")" = "node[00-01]" ] && ok "  ran on node[00-01]" ||
	bad "  ran on $(job_nodes "$(last_job)")"

rm -f "$T/live.txt"
expect "storm restart -N 4 ${CKS[0]} (one rank per node: other channel areas)" 0 \
	storm restart -N 4 "${CKS[0]}"
same_result "  result identical" "$T/live.txt"

rm -f "$T/live.txt"
storm submit -N 2 -o /dev/null --parsable /bin/sleep 600 >blocker.id
expect "storm restart ${CKS[2]} (other nodes)" 0 storm restart "${CKS[2]}"
[ "$(job_nodes "$(last_job)")" = "node[02-03]" ] && ok "  ran on node[02-03]" ||
	bad "  ran on $(job_nodes "$(last_job)")"
same_result "  result identical" "$T/live.txt"
kill_job "$(cat blocker.id)" || bad "the blocker ended"

# ---- wildcard receives across a checkpoint: ranks 1-3 have sent to rank
# 0, which has not posted its receives yet. Restarted one rank per node,
# node01 (rank 1) is back 300 ms after the others: taken for quiescent
# meanwhile, the job would match rank 0's first wildcard with rank 2's send
rm -f "$T/live.txt" "$T/live.txt.go"
storm run -N 2 -n 4 $APP "$T/live.txt" 3 >pause.out 2>pause.err &
bg+=($!)
wait_log pause.out "rank 0 waits for" 60 || bad "rank 0 waited at step 3"
PJ=$(last_job)
expect "storm checkpoint $PJ before rank 0's wildcard receives" 0 storm checkpoint "$PJ"
touch "$T/live.txt.go"
wait "${bg[-1]}"
rc=$?
[ "$rc" = 0 ] && ok "  the job ends (exit 0)" || bad "  the job ends (exit $rc)"
same_result "  its result is the uninterrupted run's" "$T/live.txt"
K=$(last_ckpt)
rm -f "$T/live.txt"
expect "storm restart -N 4 $K (node01 back 300 ms after the others)" 0 storm restart -N 4 "$K"
same_result "  result identical: each wildcard matched as uninterrupted" "$T/live.txt"

# ---- the image alone: its channel is the daemon's to give back
IMG=$C/state/node00/ckpt/$J/1/rank0.img
expect "storm-ckpt verify of a BCS-MPI rank's image" 0 storm-ckpt verify "$IMG"
expect "storm-ckpt restore of it is refused" 1 storm-ckpt restore "$IMG"
has "  naming the channel mapping" err "/memfd:storm-bcs"
has "  and who can supply it" err "only the checkpointing daemon can supply"

# ---- a checkpoint while a rank's endpoint is half open: its sockets made,
# OPEN not yet said (test hook: until a file exists). The drain waits for
# it (the rank alone is let go on) and has it closed, so the image holds no
# socket: the checkpoint completes and the job ends with the uninterrupted
# result
rm -f "$T/half.txt" "$T/half.go"
STORM_TEST_EP_OPEN_HOLD=$T/half.go storm run -N 2 -n 4 $APP "$T/half.txt" >half.out 2>half.err &
bg+=($!)
if wait_log half.err "test hook: endpoint half open" 60; then
	HJ=$(last_job)
	storm checkpoint "$HJ" >half.ck 2>&1 &
	CK=$!
	wait_log "$C/log/node00.log" "job $HJ: checkpoint" 60 ||
		bad "the checkpoint of job $HJ never started on node00"
	: >"$T/half.go"
	wait "$CK" && ok "storm checkpoint $HJ while a rank's endpoint is half open" ||
		{ bad "storm checkpoint $HJ while a rank's endpoint is half open"; sed 's/^/     | /' half.ck; }
else
	bad "a rank held its endpoint half open"
	: >"$T/half.go"
fi
wait "${bg[-1]}"
rc=$?
[ "$rc" = 0 ] && ok "  the job ends (exit 0)" || bad "  the job ends (exit $rc)"
same_result "  its result is the uninterrupted run's" "$T/half.txt"

# ---- a node dies: restarted from its latest complete checkpoint
# (rank 0 holds at the end until the restart is under way). A checkpoint a
# second keeps the job frozen or writing images most of the time on a
# loaded machine (at a load of 40: a step per 10 s), so this job is a fifth
# of the others, with its own uninterrupted run to compare with.
LIVE_APP="$T/ckptapp 20 $HEAP $BIG $STEP_MS"
expect "an uninterrupted run of 20 steps" 0 storm run -N 2 -n 4 $LIVE_APP "$T/ref_live.txt"
rm -f "$T/live.txt" "$T/live.txt.end"
storm run -N 2 -n 4 --checkpoint-interval 1 --restart-on-failure $LIVE_APP "$T/live.txt" -1 end \
	>fail.out 2>fail.err &
RUN=$!
bg+=($RUN)
# a job that never ends its first step under checkpoints each second is
# stuck: what the daemons and the ranks are doing then names the cause
if ! wait_log fail.out "step 0" 30; then
	bad "the job under checkpoints each second ended its first step"
	cluster_dump
	stacks "$T/ckptapp"
fi
FJ=$(last_job)
wait_log "$C/log/mm.log" "job $FJ: complete checkpoint" 60 || bad "a periodic checkpoint completed"
N1=$(awk '$2 == "node01" { print $1 }' "$C/pids")
kill -9 "$N1" $(cat /proc/"$N1"/task/*/children 2>/dev/null)
# node01's daemon started again: the MM takes the node for lost at its
# first report (what ran there died with the old one) instead of after
# down_after_ms of silence, 20 s here and once 85 s on a loaded machine
gone "$N1" || bad "node01's daemon ended on SIGKILL"
expect "  node01's daemon started again" 0 "$BIN/storm" cluster restart node01 --dir "$C"
wait_log fail.err "job $FJ restarts from checkpoint" 300 || bad "job $FJ restarts once node01's daemon was lost"
: >"$T/live.txt.end"
wait "$RUN"
rc=$?
[ "$rc" = 0 ] && ok "the job survives SIGKILL of node01's daemon and ranks (exit 0)" ||
	{ bad "the job survives SIGKILL of node01 (exit $rc)"; sed 's/^/     | /' fail.err | tail -5; }
grep -q "job $FJ restarts from checkpoint" fail.err && ok "  storm run says it restarted" ||
	bad "  storm run says it restarted"
# the node counts once against the job: its daemon's restart and the node
# made DOWN for it once restarted the job twice, two copies writing one file
n=$(grep -c "restarts checkpoint [0-9]* of job $FJ on" "$C/log/mm.log")
[ "$n" = 1 ] && ok "  one restart of job $FJ" || bad "  one restart of job $FJ, not $n"
same_result "  result identical" "$T/live.txt" "$T/ref_live.txt"

echo "test_ckpt_mpi: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
