#!/bin/bash
# BCS-MPI message data between nodes from rank to rank (storm.conf
# bcs_rank_writes = 1): on a virtual 2-node cluster over tcp;ofi_rxm, one
# rank on each node, the sending rank writes the granted pieces from its own
# endpoint into the receiving rank's pool; the daemons only schedule.
#  - job 1 (tests/cluster/mpi/bigmsg.c, a 12 MiB message and small ones):
#    intact, and the receiving node's daemon says it moved 0 bytes of
#    message data, the sending rank all of them;
#  - job 2 (busyrecv.c: the receiver computes outside MPI at the grants):
#    the daemons' path, chosen per piece, moves it, and the blocking send
#    ends while the receiver computes;
#  - jobs 3 and 4 (ckptapp.c): checkpoints of a job whose rank 0 computes
#    outside MPI succeed (each rank's endpoint closed for the capture by a
#    thread of its library), and a restart gives the uninterrupted result;
#  - jobs 6 and 7 (failing.c): a rank's SIGSEGV and a time limit's SIGTERM
#    end the job with their signals' statuses, not libfabric's handlers'.
#  - job 8 (busyrecv.c send: the sender computes outside MPI after its
#    Isend): the sending node's daemon writes the pieces its rank leaves
#    from its own endpoint, and the blocking receive ends meanwhile (it
#    waited for good when rxm refused the daemon's connection: the daemon's
#    eager limit was not the rank's).
# Every daemon is taken down on exit.
# Usage: test_mpi_rankw.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-mpirankw.XXXXXX)
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

LOG=$C/log/node01.log
# moved JOB WHO: the bytes of JOB's message data from other nodes into
# node01's ranks that WHO moved (ranks or daemon), from the line the daemon
# logs at the job's end
moved() {
	sed -n "s/.*job $1: message data from other nodes: \([0-9]*\) bytes written by the sending ranks, \([0-9]*\) through this daemon.*/\1 \2/p" "$LOG" |
		awk -v w="$2" '{ print (w == "ranks" ? $1 : $2) }'
}

for p in bigmsg busyrecv ckptapp failing lazyep; do
	expect "bcs-mpicc $p.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/$p.c" -o "$T/$p"
done
expect "cluster up (2 nodes, tcp;ofi_rxm, 2 ms slices, rank writes by default)" 0 \
	storm cluster up --nodes 2 --provider 'tcp;ofi_rxm' --timeslice-us 2000 \
	--down-after-ms 20000 --dir "$C"
if grep -q "bcs_rank_writes" "$C/storm.conf"; then bad "  storm.conf keeps the default"; else
	ok "  storm.conf keeps the default"; fi
cd "$T" || exit 1

# ---- job 1: every byte from rank to rank
expect "job 1: 12 MiB from node00's rank to node01's" 0 storm run -N 2 -n 2 ./bigmsg
has "  intact" out "bigmsg: 3145745 ints from 0 tag 5, intact"
# the sending rank opened its endpoint; libbcsmpi's fopen refused libfabric
# the /proc/kallsyms it scans at its first fi_getinfo (75 ms of CPU a rank)
refused=$(sed -n "s/^bigmsg: libfabric's scans of \/proc\/kallsyms refused: //p" "$T/out")
[ "${refused:-0}" -ge 1 ] 2>/dev/null && ok "  its endpoint's libfabric scanned no /proc/kallsyms ($refused refused)" ||
	bad "  its endpoint's libfabric scanned no /proc/kallsyms (refused: ${refused:-no line})"
wait_log "$LOG" "job 1: message data from other nodes" 30 >/dev/null
r=$(moved 1 ranks) d=$(moved 1 daemon)
[ "${r:-0}" -ge 12582980 ] && ok "  the sending rank wrote it ($r bytes)" ||
	bad "  the sending rank wrote it (${r:-no count})"
[ "$d" = 0 ] && ok "  node01's daemon moved none of it" ||
	bad "  node01's daemon moved none of it (${d:-no count})"

# busy_job N MODE LINE WHAT: busyrecv as job N (MODE "" or send), time
# bounded (a receive that never ends would hold the test); its LINE on
# stderr must come while one side computes, then the gate lets it end
busy_job() {
	storm run -N 2 -n 2 --time 0:3 ./busyrecv "$T/gate$1" $2 >"job$1.out" 2>"job$1.err" &
	bg+=($!)
	wait_log "job$1.err" "$3" 60 >/dev/null && ok "job $1: $4" ||
		bad "job $1: $4: $(tail -2 "job$1.err")"
	: >"$T/gate$1"
	wait "${bg[-1]}"
	local rc=$?
	[ "$rc" = 0 ] && ok "  job $1 ends (exit 0)" || bad "  job $1 ends (exit $rc)"
	grep -q "busyrecv: intact" "job$1.out" && ok "  intact" || bad "  intact"
}

# ---- job 2: the receiver computes at the grants: the daemons move it
busy_job 2 "" "busyrecv: sent" "the send ended while the receiver computed"
wait_log "$LOG" "job 2: message data from other nodes" 30 >/dev/null
d=$(moved 2 daemon)
[ "${d:-0}" -ge 4194304 ] && ok "  the daemons' path moved it ($d bytes)" ||
	bad "  the daemons' path moved it (${d:-no count})"

# ---- job 4: checkpoints while a rank computes outside MPI (ckptapp's rank
# 0 holds after its last step, step 10, in no MPI call, until live.txt.end
# exists): each rank's endpoint is closed for the capture all the same, and
# a restart from the second checkpoint gives the uninterrupted run's result
APP="./ckptapp 11 4 2 5"
expect "job 3: an uninterrupted run" 0 storm run -N 2 -n 2 $APP "$T/ref.txt"
storm run -N 2 -n 2 $APP "$T/live.txt" -1 end >job4.out 2>job4.err &
bg+=($!)
wait_log job4.out "step 10" 60 >/dev/null || bad "job 4 reached its last step"
for k in 1 2; do
	expect "job 4: checkpoint $k while rank 0 waits outside MPI" 0 storm checkpoint 4
done
: >"$T/live.txt.end"
wait "${bg[-1]}"
rc=$?
[ "$rc" = 0 ] && ok "  job 4 ends (exit 0)" || bad "  job 4 ends (exit $rc)"
cmp -s "$T/ref.txt" "$T/live.txt" && ok "  its result is the uninterrupted run's" ||
	bad "  its result is the uninterrupted run's"
ck=$(storm checkpoints --json | python3 -c '
import json, sys
print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"] if k["job"] == 4 and k["complete"]))')
rm -f "$T/live.txt"
expect "storm restart $ck" 0 storm restart "$ck"
cmp -s "$T/ref.txt" "$T/live.txt" && ok "  the restarted run's result is the same" ||
	bad "  the restarted run's result is the same"

# ---- the program's signal handlers: libfabric's dependencies install
# their own as the rank's endpoint opens (a backtrace, then exit 1); a rank
# that dies of SIGSEGV, or is stopped by its time limit, still ends with
# its signal's status
# (rank 0 then waits for rank 1 until the time limit ends it; the trace
# summary names how each rank ended)
storm run -N 2 -n 2 --time 0:4 --record crash.bcs ./failing crash 2 >job6.out 2>job6.err
grep -q "(rank 1: signal 11)" job6.err && ok "job 6: rank 1's SIGSEGV reported as signal 11" ||
	bad "job 6: rank 1's SIGSEGV reported as signal 11: $(grep -i "rank 1" job6.err | tail -2)"
expect "job 7: stopped by its time limit" 143 storm run -N 2 -n 2 --time 0:2 ./failing forever

# ---- job 8: the sender computes at the grants: its daemon writes
busy_job 8 send "busyrecv: received" "the receive ended while the sender computed"
LOG0=$C/log/node00.log
pkill -USR1 -f "stormnd -c $C/storm.conf -n node00"
wait_log "$LOG0" "bytes its ranks left it wrote itself" 30 >/dev/null
w=$(sed -n 's/.*to other nodes. ranks, \([0-9]*\) bytes its ranks left it.*/\1/p' "$LOG0" | tail -1)
[ "${w:-0}" -ge 12582980 ] && ok "  node00's daemon wrote it ($w bytes)" ||
	bad "  node00's daemon wrote it (${w:-no count})"

# ---- job 9: a rank opens its endpoint (loads libfabric) for its first
# message of 64 KiB or more, not at MPI_Init: a job of small messages
# starts as fast as without rank writes
expect "job 9: small messages, then 256 KiB" 0 storm run -N 2 -n 2 ./lazyep
for r in 0 1; do
	has "  rank $r: no endpoint for small messages" out "lazyep: rank $r after small messages: libfabric not loaded"
	has "  rank $r: its endpoint for 256 KiB" out "lazyep: rank $r after 256 KiB: libfabric loaded"
done

echo "test_mpi_rankw: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
