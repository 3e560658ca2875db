#!/bin/bash
# Checkpoint/restart of multi-threaded ranks on a virtual cluster, through
# the real CLI (tests/cluster/mpi/ckpt_omp.c: 4 OpenMP threads a rank, a
# reduction in a parallel for loop, barriers, a pthread sleeping in a
# condition wait):
#  (a) built with gcc -fopenmp, 2 ranks on 2 nodes, checkpointed three times
#      while it runs: the job, and restarts in place, on other nodes and
#      with both ranks on one node, write results identical to an
#      uninterrupted run;
#  (b) built with bcs-mpicc, MPI_Init_thread(MPI_THREAD_FUNNELED), the
#      master thread passing messages inside the parallel region, 4 ranks on
#      2 nodes: likewise;
#  (c) a rank holding a TCP socket: storm checkpoint fails with one line
#      naming the rank, the fd and why, and the job runs on; with
#      --restart-on-failure and --checkpoint-interval its stderr says once
#      (not at every interval) that it is not protected, and storm jobs
#      shows why its last checkpoint failed.
# Every daemon goes down on exit.
# Usage: test_ckpt_threads.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-ckptthr.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo
# 4 threads a rank on 2 cores: idle threads sleep in futexes, not spinning
export OMP_WAIT_POLICY=passive
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

# 1 ms a step: the live checkpoints land while the ranks hold at their
# gates (live_checkpoints), not by the job's pace, so a slower step would
# only be waited out (at 10 ms a step it was 25 s of the suite's 36)
STEPS=300 HEAP=8 STEP_MS=1
cd "$T" || exit 1
last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
# job_ckpts JOB: the job's complete checkpoints, oldest first
job_ckpts() {
	storm checkpoints --json | python3 -c '
import json, sys
for k in json.load(sys.stdin)["checkpoints"]:
    if k["job"] == int(sys.argv[1]) and k["complete"]: print(k["id"])' "$1"
}
# same NAME REF GOT...: each GOT is REF byte for byte
same() {
	local name=$1 ref=$2 f
	shift 2
	for f in "$@"; do
		if ! cmp -s "$ref" "$f"; then
			bad "$name"
			diff "$ref" "$f" 2>&1 | head -5 | sed 's/^/     | /'
			return
		fi
	done
	ok "$name"
}
# threads_of PATTERN: the thread count of the process whose command line
# starts with PATTERN
threads_of() {
	local pid
	pid=$(pgrep -f "^$1" | head -1)
	[ -n "$pid" ] && awk '/^Threads:/ { print $2 }' "/proc/$pid/status"
}
# live_checkpoints NAME PROG JOB_ARGS...: the job runs and is checkpointed
# at steps 30, 110 and 190 (rank 0 says "step N" every 10th), each rank
# holding there until the checkpoint is done (hold: it waits for gate.N in
# the working directory, made afresh for each job); sets J, CKS
live_checkpoints() {
	local name=$1 prog=$2 s
	shift 2
	rm -f gate.*
	storm run "$@" hold 30,110,190 >"$name.out" 2>"$name.err" &
	bg+=($!)
	wait_log "$name.out" "step 0" 30 || bad "$name: the job started"
	J=$(last_job)
	local n
	n=$(threads_of "$prog")
	[ "${n:-0}" -ge 5 ] && ok "  its ranks run $n threads" || bad "  its ranks run ${n:-no} threads"
	for s in 30 110 190; do
		wait_log "$name.out" "step $s" 30 || bad "  the job reached step $s"
		expect "storm checkpoint $J at step $s" 0 storm checkpoint "$J"
		: >"gate.$s"
	done
	wait "${bg[-1]}"
	local rc=$?
	[ "$rc" = 0 ] && ok "the checkpointed job ends (exit 0)" ||
		{ bad "the checkpointed job ends (exit $rc)"; tail -3 "$name.err" | sed 's/^/     | /'; }
	mapfile -t CKS < <(job_ckpts "$J")
	[ "${#CKS[@]}" = 3 ] && ok "  3 complete checkpoints" || bad "  3 complete checkpoints (${CKS[*]})"
}

expect "gcc -fopenmp ckpt_omp.c" 0 gcc -O2 -Wall -Wextra -Werror -fopenmp "$HERE/mpi/ckpt_omp.c" \
	-o "$T/omp"
expect "bcs-mpicc -fopenmp -DWITH_MPI ckpt_omp.c" 0 bcs-mpicc -O2 -Wall -Wextra -Werror -fopenmp \
	-DWITH_MPI "$HERE/mpi/ckpt_omp.c" -o "$T/ompmpi"
expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up --nodes 4 --timeslice-us 2000 \
	--down-after-ms 5000 --dir "$C"

# ---- (a) OpenMP ranks
for r in 0 1; do
	STORM_RANK=$r "$T/omp" $STEPS $HEAP $STEP_MS "$T/ref%r.txt" >/dev/null ||
		bad "uninterrupted run of rank $r"
done
OMP="$T/omp $STEPS $HEAP $STEP_MS $T/omp%r.txt"
live_checkpoints omp "$T/omp" -N 2 -n 2 $OMP
same "  its results are the uninterrupted run's" ref0.txt omp0.txt
same "  (rank 1)" ref1.txt omp1.txt
rm -f omp0.txt omp1.txt
expect "storm restart ${CKS[0]} (same nodes)" 0 storm restart "${CKS[0]}"
[ "$(job_nodes "$(last_job)")" = "node[00-01]" ] && ok "  ran on node[00-01]" ||
	bad "  ran on $(job_nodes "$(last_job)")"
same "  results identical" ref0.txt omp0.txt; same "  (rank 1)" ref1.txt omp1.txt
storm submit -N 2 -o /dev/null --parsable /bin/sleep 600 >blocker.id
rm -f omp0.txt omp1.txt
expect "storm restart ${CKS[1]} (other nodes)" 0 storm restart "${CKS[1]}"
[ "$(job_nodes "$(last_job)")" = "node[02-03]" ] && ok "  ran on node[02-03]" ||
	bad "  ran on $(job_nodes "$(last_job)")"
same "  results identical" ref0.txt omp0.txt; same "  (rank 1)" ref1.txt omp1.txt
rm -f omp0.txt omp1.txt
expect "storm restart -N 1 ${CKS[2]} (both ranks on one node)" 0 storm restart -N 1 "${CKS[2]}"
same "  results identical" ref0.txt omp0.txt; same "  (rank 1)" ref1.txt omp1.txt
kill_job "$(cat blocker.id)" || bad "the blocker ended"

# ---- (b) BCS-MPI ranks with OpenMP inside (MPI_THREAD_FUNNELED)
MPI="$T/ompmpi $STEPS $HEAP $STEP_MS"
expect "an uninterrupted BCS-MPI run (2 nodes, 4 ranks)" 0 storm run -N 2 -n 4 $MPI "$T/mref.txt"
grep -q "wrong\|not 4" mref.txt && bad "  MPI_Is_thread_main and the thread count: $(grep -m1 'wrong\|not 4' mref.txt)" ||
	ok "  MPI_Is_thread_main true only on the thread that called MPI_Init_thread"
live_checkpoints mpi "$T/ompmpi" -N 2 -n 4 $MPI "$T/mpi.txt"
same "  its result is the uninterrupted run's" mref.txt mpi.txt
rm -f mpi.txt
expect "storm restart ${CKS[0]} (same nodes)" 0 storm restart "${CKS[0]}"
same "  result identical" mref.txt mpi.txt
storm submit -N 2 -o /dev/null --parsable /bin/sleep 600 >blocker.id
rm -f mpi.txt
expect "storm restart ${CKS[2]} (other nodes)" 0 storm restart "${CKS[2]}"
[ "$(job_nodes "$(last_job)")" = "node[02-03]" ] && ok "  ran on node[02-03]" ||
	bad "  ran on $(job_nodes "$(last_job)")"
same "  result identical" mref.txt mpi.txt
kill_job "$(cat blocker.id)" || bad "the blocker ended"

# ---- (c) a rank holding TCP sockets (a connection to itself; the checkpoint
# names the first, the listening one)
SOCK='import os, socket, sys, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
print("socket up on fd", l.fileno(), flush=True)
i = 0
while i < int(sys.argv[1]) or not os.path.exists(sys.argv[2]):
    print("tick", i, flush=True); time.sleep(0.05); i += 1'
# it ticks ARGV[1] times, and on until the file ARGV[2] exists. The
# interpreter itself, not a wrapper that finds it (pyenv's shim is a bash
# tree for its first second or more): a periodic checkpoint that lands then
# would fail on the wrapper's files and name them, not the socket
PY=$(python3 -c 'import sys; print(sys.executable)')
storm run "$PY" -c "$SOCK" 0 "$T/never" >sock.out 2>sock.err &
bg+=($!)
wait_log sock.out "socket up" 30 || bad "the socket job started"
SJ=$(last_job)
FD=$(sed -n 's/^socket up on fd //p' sock.out)
expect "storm checkpoint of a rank holding a TCP socket fails" 1 storm checkpoint "$SJ"
[ "$(wc -l <"$T/err")" = 1 ] && ok "  in one line" || bad "  in one line: $(cat "$T/err")"
has "  naming the rank" err "rank 0"
has "  and the descriptor" err "fd $FD"
has "  and why" err "socket"
TICK=$(grep -c "^tick" sock.out)
wait_log sock.out "tick $((TICK + 5))" 30 && ok "  the job runs on" || bad "  the job runs on"
kill_job "$SJ" || bad "the socket job ended"

# it runs until the checks are done, then ends by itself
storm run --restart-on-failure --checkpoint-interval 1 "$PY" -c "$SOCK" 20 "$T/rof.gate" >rof.out 2>rof.err &
RUN=$!
bg+=($RUN)
wait_log rof.out "socket up" 30
RJ=$(last_job)
FD=$(sed -n 's/^socket up on fd //p' rof.out)
n=$(wait_count "$C/log/mm.log" "job $RJ: INCOMPLETE checkpoint" 2 30)
[ "$n" -ge 2 ] && ok "two periodic checkpoints of it failed" || bad "two periodic checkpoints of it failed ($n)"
storm jobs --json >jobs.json
python3 -c '
import json, sys
j = [j for j in json.load(open("jobs.json"))["jobs"] if j["job"] == int(sys.argv[1])][0]
sys.exit(0 if "rank 0" in j.get("checkpoint_failed", "") else 1)' "$RJ" &&
	ok "  storm jobs --json says why its last checkpoint failed" ||
	bad "  storm jobs --json says why its last checkpoint failed"
storm jobs >jobs.txt
has "  and so does storm jobs" jobs.txt "failed: "
: >"$T/rof.gate"
wait "$RUN"
rc=$?
[ "$rc" = 0 ] && ok "  the job ran to its end (exit 0)" || bad "  the job ran to its end (exit $rc)"
[ "$(grep -c "not protected by --restart-on-failure" rof.err)" = 1 ] &&
	ok "  its stderr says once that it is not protected" ||
	{ bad "  its stderr says once that it is not protected"; sed 's/^/     | /' rof.err | head -5; }
has "  naming the rank and the descriptor" rof.err "rank 0: "
has "  (the descriptor)" rof.err "fd $FD"

echo "test_ckpt_threads: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
