#!/bin/bash
# Open MPI programs, unmodified, under storm run: the node daemons' PMIx
# server (daemons/node/pmix.c) on a 4-node cluster with one network
# namespace per node. A ring and an allreduce over 8 ranks (storm run finds
# Open MPI in the program and picks --mpi=pmix itself; and with --mpi=pmix
# given), MPI_Abort ending the job on every node with its code named, the
# jobs in storm acct, and storm cancel of a job looping in MPI_Barrier,
# node03 with the test hook pmix_late_eof (its PMIx library reads the
# cancelled ranks' dropped connections only after the daemon ended the job
# there), and a job after it.
# Needs root (network namespaces) and Open MPI (mpicc.openmpi).
# Usage: test_pmix.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-pmixtest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0 BG=
cleanup() {
	[ -n "$BG" ] && kill $BG 2>/dev/null
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ "$(id -u)" != 0 ]; then
	echo "FAIL test_pmix.sh needs root (network namespaces)"
	exit 1
fi
cd "$T" || exit 1

expect "mpicc.openmpi ompi_modes.c" 0 mpicc.openmpi -O2 -Wall -Werror "$HERE/mpi/ompi_modes.c" \
	-o "$T/ompi_modes"
if STORM_TEST_TAMPER_NODE=node03 STORM_TEST_TAMPER=pmix_late_eof=1 \
	storm cluster up --netns --nodes 4 --dir "$C" >"$T/up.out" 2>&1; then
	ok "cluster up --netns with 4 nodes"
else bad "cluster up --netns"; cat "$T/up.out"; exit 1; fi

# acct_field JOB FIELD: the job's field in storm acct --json
acct_field() {
	storm acct -j "$1" --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["jobs"][0][sys.argv[1]])' "$2"
}
last_job() {
	storm jobs --all --json | python3 -c '
import json, sys
print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'
}
# every rank r of 8 passed the token on (rank 0 gets it back after 7 more)
# and the allreduce of the ranks is 28
want=$(for r in 0 1 2 3 4 5 6 7; do
	t=$((r == 0 ? 8 : r + 1))
	echo "rank $r of 8: token $t sum 28"
done)

expect "storm run -N 4 -n 8 of an Open MPI ring (auto-detected)" 0 \
	timeout 120 storm run -N 4 -n 8 "$T/ompi_modes" ring
if [ "$(sort "$T/out")" = "$want" ]; then ok "  all 8 ranks see size 8, the token and the sum"
else bad "  all 8 ranks see size 8, the token and the sum"; sed 's/^/     | /' "$T/out"; fi
id=$(last_job)
[ "$(acct_field "$id" state)" = COMPLETED ] && ok "  storm acct: COMPLETED" ||
	bad "  storm acct: COMPLETED ($(acct_field "$id" state))"
n=0
for i in 0 1 2 3; do grep -q "PMIx server up" "$C/log/node0$i.log" && n=$((n + 1)); done
[ $n = 4 ] && ok "  every node daemon started its PMIx server" || bad "  PMIx servers up on $n of 4"
# the daemon's loop waits on the library's thread at every job's start and
# end, and its watcher says whether the daemon as a whole could run: both at
# the loop's SCHED_FIFO, not at the nice 0 (or -10) a thread starts at,
# where they wait behind the machine's other sessions
ND0=$(awk '$2 == "node00" { print $1 }' "$C/pids")
pols=$(ps -L -o cls= -p "$ND0" | sort | uniq -c | xargs)
nthreads=$(ls "/proc/$ND0/task" | wc -l)
[ "$nthreads" -ge 3 ] && [ "$pols" = "$nthreads FF" ] &&
	ok "  node00's $nthreads threads (loop, watcher, PMIx's) all at SCHED_FIFO" ||
	bad "  node00's threads all at SCHED_FIFO: $nthreads threads, policies '$pols' ($(ps -L -o tid=,cls=,ni=,comm= -p "$ND0" | xargs))"

expect "the same with --mpi=pmix" 0 timeout 120 storm run --mpi=pmix -N 4 -n 8 "$T/ompi_modes" ring
[ "$(sort "$T/out")" = "$want" ] && ok "  all 8 ranks right" ||
	{ bad "  all 8 ranks right"; sed 's/^/     | /' "$T/out"; }
# without the server each rank is a singleton: what makes the ranks one job
expect "--mpi=none: no PMIx server" 0 timeout 120 storm run --mpi=none -N 2 -n 2 "$T/ompi_modes" ring
[ "$(sort -u "$T/out")" = "rank 0 of 1: token 1 sum 0" ] && ok "  ... every rank alone" ||
	{ bad "  ... every rank alone"; sed 's/^/     | /' "$T/out"; }
# a singleton starts an orted in a session of its own: it ends with the job
# (its node sent it SIGTERM before reporting the job's end; SIGKILL follows)
left=
for p in $(pgrep -x orted); do
	tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^STORM_JOB_DIR=$C/" &&
		! gone "$p" 10 && left="$left $p"
done
[ -z "$left" ] && ok "  ... their orted daemons ended with the job" ||
	bad "  ... their orted daemons ended with the job (still running:$left)"

# ---- MPI_Abort: rank 1 aborts with 3 while the others wait in MPI_Recv
STACKS_OF=$T/ompi_modes run_or_dump 120 "$T/out" "$T/err" storm run -N 4 -n 8 "$T/ompi_modes" abort
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && ok "MPI_Abort ends the job, non-zero exit ($rc)" || {
	bad "MPI_Abort ends the job (exit $rc)"
	# where it stuck: the ranks' own words and what each node did last
	sed 's/^/     | out: /' "$T/out" | tail -8
	sed 's/^/     | err: /' "$T/err" | tail -8
	# and each daemon's lines on the job, its exchanges and failures
	j=$(last_job)
	for n in "$C"/log/node0*.log "$C/log/mm.log"; do
		grep -E "job $j[ :]|mailbox|exchange|PMIx|fail|lost|lagging|lacks" "$n" | tail -8 |
			sed "s#^#     | ${n##*/}: #"
	done
}
has "  ... naming the abort and its code" err "rank 1 called MPI_Abort (exit code 3)"
id=$(last_job)
[ "$(acct_field "$id" state)" = FAILED ] && ok "  storm acct: FAILED" ||
	bad "  storm acct: FAILED ($(acct_field "$id" state))"
n=0
for i in 0 1 2 3; do wait_log "$C/log/node0$i.log" "job $id done" 20 && n=$((n + 1)); done
[ $n = 4 ] && ok "  its ranks ended on all 4 nodes" || bad "  its ranks ended on $n of 4 nodes"

# ---- storm cancel of ranks looping in MPI_Barrier
start_bg loop storm run -N 4 -n 8 "$T/ompi_modes" barrier
up=0
while [ $up -lt 8 ] && read -r -t 120 line <&7; do
	case $line in "rank "*" of 8 up") up=$((up + 1)) ;; esac
done
[ $up = 8 ] && ok "8 ranks loop in MPI_Barrier" || { bad "8 ranks loop in MPI_Barrier ($up up)"; cluster_dump; stacks "$T/ompi_modes"; }
id=$(last_job)
expect "storm cancel" 0 storm cancel "$id"
timeout 60 cat <&7 >/dev/null
wait "$BGPID"
rc=$?
exec 7<&-
[ $rc = 143 ] && ok "  storm run exits 128+SIGTERM" || bad "  storm run exits 128+SIGTERM (got $rc)"
[ "$(acct_field "$id" state)" = CANCELLED ] && ok "  storm acct: CANCELLED" ||
	bad "  storm acct: CANCELLED ($(acct_field "$id" state))"
n=0
for i in 0 1 2 3; do wait_log "$C/log/node0$i.log" "job $id done" 20 && n=$((n + 1)); done
[ $n = 4 ] && ok "  its ranks ended on all 4 nodes" || bad "  its ranks ended on $n of 4 nodes"
grep -q "test hook pmix_late_eof: job $id:" "$C/log/node03.log" &&
	ok "  node03's PMIx library saw its ranks go only after the job's end there" ||
	bad "  node03's PMIx library saw its ranks go only after the job's end there"
# the library forgot those ranks late: a rank of the next job on node03,
# accepted on a descriptor one of them had, must still be served
STACKS_OF=$T/ompi_modes run_or_dump 120 "$T/out" "$T/err" storm run -N 4 -n 8 "$T/ompi_modes" ring
rc=$?
[ $rc = 0 ] && ok "a job runs after it" || bad "a job runs after it (exit $rc)"
[ "$(sort "$T/out")" = "$want" ] && ok "  all 8 ranks right" ||
	{ bad "  all 8 ranks right"; sed 's/^/     | /' "$T/out"; }

echo "test_pmix: $((checks - fails))/$checks checks passed"
[ $fails = 0 ]
