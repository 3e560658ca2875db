#!/bin/bash
# BCS-MPI between two ranks of one node moves a message with one copy, made
# by the receiving rank (process_vm_readv) at its grant: on a 1-node virtual
# cluster, tests/cluster/mpi/bigmsg.c (a 12 MiB message; the daemons' link
# rate set to 1000 MB/s, 2 MB a 2 ms slice)
#  - job 1: arrives intact, and the daemon's count says the ranks copied it,
#    granted in one slice or two: a copy between ranks of a node has the
#    memory's budget, not the link's (which would take 7);
#  - job 2 (test hook bcs_copy_refuse: its ranks' copies are refused, as a
#    kernel's ptrace policy would): arrives intact, copied by the daemon,
#    which says once that it took over;
#  - job 3 (test hook bcs_copy_stop: the receiver stops itself between
#    taking its order and copying, as a checkpoint's SIGSTOP may find it):
#    `storm checkpoint` drains it (the rank is continued alone until its
#    copy is done), the job ends intact, and a restart from that
#    checkpoint too;
#  - job 5 (job 4 is the restart; tests/cluster/mpi/busyrecv.c: the receiver computes outside MPI
#    until the test lets it go, which it does only once the blocking send
#    has ended): the sending rank copies it (process_vm_writev), the
#    daemon's count says so;
#  - job 6 (the same, its copies refused): the daemon copies, and says once
#    that the sender could not write.
# Every daemon is taken down on exit.
# Usage: test_mpi_copy.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-mpicopy.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
bg=()

cleanup() {
	for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM

INTACT="bigmsg: 3145745 ints from 0 tag 5, intact"
# the link's budget (2 MB a slice) would take the 12 MiB message 7 slices
export STORM_BCS_LINK_MBS=1000
LOG=$C/log/node00.log
# copied JOB WHO: the bytes of JOB's messages between ranks of node00 copied
# by WHO (ranks, daemon, or sender: of the ranks' bytes, those the sending
# rank wrote), or with WHO slices the slices that granted them, from the
# line the daemon logs at the job's end
copied() {
	sed -n "s/.*job $1: messages between this node's ranks: \([0-9]*\) bytes copied by the ranks, \([0-9]*\) by this daemon (\([0-9]*\) of the ranks' by the sender), granted in \([0-9]*\) slice.*/\1 \2 \3 \4/p" "$LOG" |
		awk -v w="$2" '{ print (w == "ranks" ? $1 : w == "daemon" ? $2 : w == "sender" ? $3 : $4) }'
}

expect "bcs-mpicc bigmsg.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/bigmsg.c" -o "$T/bigmsg"
expect "bcs-mpicc busyrecv.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/busyrecv.c" -o "$T/busyrecv"
STORM_TEST_TAMPER=bcs_copy_refuse=2,bcs_copy_stop=3,bcs_copy_refuse=6 STORM_TEST_TAMPER_NODE=node00 \
	expect "cluster up (1 node, 2 ms slices)" 0 \
	storm cluster up --nodes 1 --timeslice-us 2000 --down-after-ms 20000 --dir "$C"
cd "$T" || exit 1

# ---- job 1: the receiving rank copies
expect "job 1: 12 MiB between two ranks of one node" 0 storm run -N 1 -n 2 ./bigmsg
has "  intact" out "$INTACT"
wait_log "$LOG" "job 1: messages between this node's ranks" 30 >/dev/null
r=$(copied 1 ranks)
[ "${r:-0}" -ge 4194304 ] && ok "  the ranks copied it ($r bytes)" ||
	bad "  the ranks copied it (${r:-no count})"
# a rank that waits in MPI at the grant copies the whole message at once;
# the second slice is for a grant that found neither rank in MPI yet (the
# daemon then copies within the link's budget)
n=$(copied 1 slices)
[ "${n:-9}" -le 2 ] && ok "  granted in ${n} slice(s), not the link's 7" ||
	bad "  granted in at most 2 slices, not the link's 7 (${n:-no count})"

# ---- job 2: every copy refused, the daemon copies, and says so once
expect "job 2: the ranks' copies refused" 0 storm run -N 1 -n 2 ./bigmsg
has "  intact" out "$INTACT"
wait_log "$LOG" "job 2: messages between this node's ranks" 30 >/dev/null
r=$(copied 2 ranks) d=$(copied 2 daemon)
[ "$r" = 0 ] && [ "${d:-0}" -ge 12582980 ] && ok "  the daemon copied it all ($d bytes)" ||
	bad "  the daemon copied it all (ranks ${r:-?}, daemon ${d:-?})"
n=$(grep -c "job 2: rank 1 cannot read rank 0's memory (process_vm_readv: Operation not permitted" "$LOG")
[ "$n" = 1 ] && ok "  the daemon said once that it took over" ||
	bad "  the daemon said once that it took over ($n times)"

# ---- job 3: a checkpoint finds the receiver stopped in its copy; the job
# holds at its end (gate3) until the checkpoint is complete
storm run -N 1 -n 2 ./bigmsg "$T/gate3" >job3.out 2>job3.err &
bg+=($!)
wait_log job3.err "test hook: stopped in a copy" 60 >/dev/null ||
	bad "job 3's receiver stopped in its copy"
expect "storm checkpoint 3 (the receiver stopped in a copy)" 0 storm checkpoint 3
grep -q "job 3: checkpoint: rank 1 was stopped in a copy; continued until it is done" "$LOG" &&
	ok "  the daemon let it finish its copy" || bad "  the daemon let it finish its copy"
grep -q "job 3: checkpoint .*: BCS-MPI drained in" "$LOG" &&
	ok "  the job drained" || bad "  the job drained"
: >"$T/gate3"
wait "${bg[-1]}"
rc=$?
[ "$rc" = 0 ] && ok "  job 3 ends (exit 0)" || bad "  job 3 ends (exit $rc)"
grep -qF "$INTACT" job3.out && ok "  intact" || bad "  intact"
CK=$(storm checkpoints --json | python3 -c '
import json, sys
print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"] if k["job"] == 3 and k["complete"]))')
expect "storm restart $CK" 0 storm restart "$CK"
has "  intact" out "$INTACT"

# ---- jobs 5 and 6: the receiver computes at the grants, the sender waits
# in its MPI_Send; the receiver goes on only once the send has ended
busy() { # JOB
	storm run -N 1 -n 2 ./busyrecv "$T/gate$1" >"job$1.out" 2>"job$1.err" &
	bg+=($!)
	wait_log "job$1.err" "busyrecv: sent" 60 >/dev/null &&
		ok "job $1: the send ended while the receiver computed" ||
		bad "job $1: the send ended while the receiver computed"
	: >"$T/gate$1"
	wait "${bg[-1]}"
	rc=$?
	[ "$rc" = 0 ] && ok "  job $1 ends (exit 0)" || bad "  job $1 ends (exit $rc)"
	grep -q "busyrecv: intact" "job$1.out" && ok "  intact" || bad "  intact"
	wait_log "$LOG" "job $1: messages between this node's ranks" 30 >/dev/null
}
busy 5
s=$(copied 5 sender)
[ "${s:-0}" -ge 4194304 ] && ok "  the sending rank wrote it ($s bytes)" ||
	bad "  the sending rank wrote it (${s:-no count})"
busy 6
r=$(copied 6 ranks) d=$(copied 6 daemon)
[ "$r" = 0 ] && [ "${d:-0}" -ge 12582980 ] && ok "  the daemon copied it all ($d bytes)" ||
	bad "  the daemon copied it all (ranks ${r:-?}, daemon ${d:-?})"
n=$(grep -c "job 6: rank 0 cannot write rank 1's memory (process_vm_writev: Operation not permitted" "$LOG")
[ "$n" = 1 ] && ok "  the daemon said once that it took over" ||
	bad "  the daemon said once that it took over ($n times)"

echo "test_mpi_copy: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
