#!/bin/bash
# The soak harness (make soak): named scenarios, each run N times on a virtual
# cluster with a CPU hog beside it, with random timing where timing matters
# (when a checkpoint, a kill or a link cut lands). A run fails when its
# answer differs from the uninterrupted one, a job is lost or left running, or
# a step outlives its limit (a hang: the daemons' SIGUSR1 dumps and the ranks'
# stacks are taken while it is stuck; after any other failure, as it ends).
# Every failed run's logs are kept. Prints a row a scenario: runs, failures,
# hangs, and for the restart scenarios how many checkpoints froze their big
# message still moving; the same rows go to OUT/summary.tsv.
#
# Usage: soak.sh [-n RUNS] [-o OUT] [--no-hog] [--list] BUILD_BIN [SCENARIO...]
#   RUNS   runs per scenario (default 200)
#   OUT    where the summary and the failed runs' logs go
#          (default /var/tmp/storm-soak-DATE)
# Needs root: some scenarios use network namespaces (--netns).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/../cluster
. "$CLUSTER/lib.sh" || exit 2

usage() { sed -n '/^# Usage/,/^# Needs/p' "$0" | sed 's/^# \{0,1\}//'; }
RUNS=200 OUT="" HOG=1
while [ $# -gt 0 ]; do
	case $1 in
	-n) RUNS=$2; shift 2 ;;
	-o) OUT=$2; shift 2 ;;
	--no-hog) HOG=0; shift ;;
	--list) LIST=1; shift ;;
	-h | --help) usage; exit 0 ;;
	-*) echo "soak.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
	*) break ;;
	esac
done
# each scenario: its setup (a cluster, once), one run, and what its ranks'
# command lines hold (STACKS_OF: whose stacks a failure keeps)
scenario() {
	case $1 in
	restart-2to4) SETUP=ckpt_setup RUN="ckpt_run 2 4" RANKS='$T/ckptapp' ;;
	restart-4to2) SETUP=ckpt_setup RUN="ckpt_run 4 2" RANKS='$T/ckptapp' ;;
	restart-4to1) SETUP=ckpt_setup RUN="ckpt_run 4 1" RANKS='$T/ckptapp' ;;
	ompi-b2b) SETUP=ompi_setup RUN=ompi_run RANKS='$T/ompi_modes' ;;
	mpich) SETUP=mpich_setup RUN=mpich_run RANKS='$T/pmiprog' ;;
	gang-pair) SETUP=gang_setup RUN=gang_run RANKS='$T/ckptapp' ;;
	mm-kill) SETUP=mm_setup RUN=mm_run RANKS='$T/mmgo' ;;
	nd-kill) SETUP=nd_setup RUN=nd_run RANKS='$BIN/ckpt_prog' ;;
	link-cut) SETUP=link_setup RUN=link_run RANKS='$T/linkgo' ;;
	*) return 1 ;;
	esac
}
SCENARIOS="restart-2to4 restart-4to2 restart-4to1 ompi-b2b mpich gang-pair mm-kill nd-kill link-cut"
if [ -n "${LIST:-}" ]; then echo "$SCENARIOS" | tr ' ' '\n'; exit 0; fi
[ $# -ge 1 ] || { usage >&2; exit 2; }
BIN=$(cd "$1" && pwd) || exit 2
shift
[ $# -gt 0 ] && SCENARIOS="$*"
for s in $SCENARIOS; do
	scenario "$s" || { echo "soak.sh: no scenario '$s' (soak.sh --list)" >&2; exit 2; }
done
case $RUNS in '' | *[!0-9]*) echo "soak.sh: -n wants a number, not '$RUNS'" >&2; exit 2 ;; esac

OUT=${OUT:-/var/tmp/storm-soak-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
export PATH=$BIN:$PATH
T=$(mktemp -d /tmp/storm-soak.XXXXXX)
chmod 755 "$T"
C=$T/c
export STORM_CONF=$C/storm.conf
# a job whose storm run lost the MM writes storm-ID.out here
cd "$T" || exit 2
fails=0 checks=0
HOGPID=""
cleanup() {
	[ -n "$HOGPID" ] && kill "$HOGPID" 2>/dev/null
	cluster_kill
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# plain_net: a plain cluster's daemons on loopback only (a --netns cluster's
# bridge that another test takes down must not take their connections);
# netns_net: a --netns cluster's reach each other over their own links
plain_net() { export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo; }
netns_net() { unset FI_TCP_IFACE FI_SOCKETS_IFACE FI_UDP_IFACE; }
# a random integer in [lo, hi]
rnd() { echo $(($1 + RANDOM % ($2 - $1 + 1))); }
# a random pause of 0..MS milliseconds: where a fault lands
jitter() { sleep "$(printf '0.%03d' "$(rnd 0 "$1")")"; }
last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
last_ckpt() { storm checkpoints --json | python3 -c 'import json,sys; print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"]))'; }
job_state() { storm acct -j "$1" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])'; }
ns_of() { echo "$(cut -d' ' -f1 "$C/netns")-n$1"; }

# A run's verdict: why it failed (empty: it passed), and whether it hung.
WHY="" HUNG=0
fail() { [ -n "$WHY" ] || WHY=$1; }
# step SECONDS NAME CMD...: CMD with its output in $R/NAME.out/.err; a hang
# (still running after SECONDS) dumps the daemons and the ranks' stacks
# into the run's log while stuck, then ends it. Returns CMD's status.
step() {
	local secs=$1 name=$2 rc
	shift 2
	run_or_dump "$secs" "$R/$name.out" "$R/$name.err" "$@" >>"$R/dump.txt" 2>&1
	rc=$?
	if [ "$rc" = 124 ] && grep -q "still running after" "$R/dump.txt"; then
		HUNG=1
		fail "$name: still running after $secs s"
	fi
	return $rc
}
# now_dump WHAT: the daemons' state and the ranks' stacks, now, into the
# run's dump.txt
now_dump() {
	{
		echo "--- $1"
		cluster_dump
		stacks "$STACKS_OF"
	} >>"$R/dump.txt" 2>&1
}
# hang_dump WHAT: a wait that timed out on something other than a command
hang_dump() {
	HUNG=1
	now_dump "$1"
	fail "$1"
}

# ---- checkpoint and restart onto another layout: a BCS-MPI job with a 32
# MiB message of many slices and a half-done Iallreduce (ckptapp) is
# checkpointed at a random moment near a big-message step; the job goes on
# to the uninterrupted run's result, and so does its restart on FROM -> TO
# nodes. The job holds at step 90 (rank 0 waits for RESULT.go) until the
# checkpoint is taken, so a fast machine cannot end it first.
STEPS=100
ckpt_setup() {
	export STORM_BCS_LINK_MBS=256
	plain_net
	storm cluster up --nodes 4 --timeslice-us 2000 --down-after-ms 5000 --dir "$C" >"$T/up.out" 2>&1 ||
		return 1
	bcs-mpicc -O2 -Wall -Werror "$CLUSTER/mpi/ckptapp.c" -o "$T/ckptapp" || return 1
	APP="$T/ckptapp $STEPS 16 32 2"
	storm run -N 2 -n 4 $APP "$T/ref.txt" >"$T/ref.out" 2>&1 && [ -s "$T/ref.txt" ]
}
ckpt_run() {
	local from=$1 to=$2 s j k
	rm -f "$T/live.txt" "$T/live.txt.go"
	storm run -N "$from" -n 4 $APP "$T/live.txt" 90 >"$R/live.out" 2>"$R/live.err" &
	local run=$!
	s=$((4 * $(rnd 1 20) + 1))
	# the job's id before its big message: asked after, the question's
	# time (a python under the hog) let most messages end first
	wait_log "$R/live.out" "step 1 big message" 120 || { hang_dump "job did not start"; kill "$run"; return; }
	j=$(last_job)
	wait_log "$R/live.out" "step $s big message" 120 || { hang_dump "job reached step $s"; kill "$run"; return; }
	jitter 60
	step 300 ckpt storm checkpoint "$j" || fail "storm checkpoint $j at step $s: $(tail -1 "$R/ckpt.err")"
	# whether the checkpoint froze the big message still moving (the
	# nodes' drain says how many bytes were left): counted, not required
	local m
	m=$(grep -h "job $j: checkpoint .*BCS-MPI frozen with" "$C"/log/node0*.log |
		sed -n 's/.* \([0-9]*\) bytes still to move.*/\1/p' | sort -n | tail -1)
	echo "checkpoint at step $s: ${m:-0} bytes still to move" >>"$R/harness.txt"
	[ "${m:-0}" -gt 1048576 ] && MOVING=$((MOVING + 1))
	touch "$T/live.txt.go"
	gone "$run" 300 || { hang_dump "job $j did not end"; kill "$run"; }
	wait "$run" || fail "job $j exit $?"
	cmp -s "$T/ref.txt" "$T/live.txt" || fail "job $j: result differs from the uninterrupted run"
	k=$(last_ckpt)
	rm -f "$T/live.txt"
	step 300 restart storm restart -N "$to" "$k" ||
		fail "storm restart -N $to $k: exit $?: $(tail -1 "$R/restart.err")"
	cmp -s "$T/ref.txt" "$T/live.txt" ||
		fail "restart -N $to of checkpoint $k (step $s): result differs from the uninterrupted run"
}

# ---- Open MPI jobs back to back, in a random order of a ring, --mpi=none
# singletons and an MPI_Abort: each gives its answer, none hangs
ompi_setup() {
	mpicc.openmpi -O2 -Wall -Werror "$CLUSTER/mpi/ompi_modes.c" -o "$T/ompi_modes" || return 1
	netns_net
	storm cluster up --netns --nodes 4 --dir "$C" >"$T/up.out" 2>&1
}
OMPI_WANT=$(for r in 0 1 2 3 4 5 6 7; do echo "rank $r of 8: token $((r == 0 ? 8 : r + 1)) sum 28"; done)
ompi_run() {
	local kind i
	for i in 1 2 3; do
		kind=$(echo "ring none abort" | tr ' ' '\n' | shuf -n1)
		case $kind in
		ring)
			step 120 ring$i storm run -N 4 -n 8 "$T/ompi_modes" ring || fail "ring $i: exit $?"
			[ "$(sort "$R/ring$i.out")" = "$OMPI_WANT" ] || fail "ring $i: wrong output"
			;;
		none)
			step 120 none$i storm run --mpi=none -N 2 -n 2 "$T/ompi_modes" ring || fail "none $i: exit $?"
			[ "$(sort -u "$R/none$i.out")" = "rank 0 of 1: token 1 sum 0" ] || fail "none $i: wrong output"
			;;
		abort)
			step 120 abort$i storm run -N 4 -n 8 "$T/ompi_modes" abort
			case $? in 0 | 124) fail "abort $i: the job did not fail" ;; esac
			grep -q "rank 1 called MPI_Abort (exit code 3)" "$R/abort$i.err" || fail "abort $i: no abort named"
			;;
		esac
		[ -z "$WHY" ] || return
	done
}

# ---- MPICH (PMI-1) jobs: a ring over 8 ranks on 4 nodes
mpich_setup() {
	mpicc.mpich -O2 -o "$T/pmiprog" "$CLUSTER/mpi/pmiprog.c" || return 1
	netns_net
	storm cluster up --netns --nodes 4 --dir "$C" >"$T/up.out" 2>&1
}
mpich_run() {
	step 120 ring storm run -N 4 -n 8 "$T/pmiprog" ring || fail "ring: exit $?"
	[ "$(grep -c ' of 8: token .* sum 28$' "$R/ring.out")" = 8 ] || fail "ring: wrong output"
}

# ---- gang-scheduled pairs: two BCS-MPI jobs share the same 4 nodes (MPL 2)
# and each gives the uninterrupted run's result
gang_setup() {
	plain_net
	storm cluster up --nodes 4 --mpl 2 --dir "$C" >"$T/up.out" 2>&1 || return 1
	bcs-mpicc -O2 -Wall -Werror "$CLUSTER/mpi/ckptapp.c" -o "$T/ckptapp" || return 1
	GAPP="$T/ckptapp 40 4 4 0"
	storm run -N 4 -n 8 $GAPP "$T/gref.txt" >"$T/gref.out" 2>&1 && [ -s "$T/gref.txt" ]
}
gang_run() {
	rm -f "$T/g1.txt" "$T/g2.txt"
	storm run -N 4 -n 8 $GAPP "$T/g1.txt" >"$R/g1.out" 2>"$R/g1.err" &
	local a=$!
	jitter 200
	step 300 g2 storm run -N 4 -n 8 $GAPP "$T/g2.txt" || fail "second job: exit $?"
	gone "$a" 300 || { hang_dump "first job did not end"; kill "$a"; }
	wait "$a" || fail "first job: exit $?"
	cmp -s "$T/gref.txt" "$T/g1.txt" || fail "first job: result differs"
	cmp -s "$T/gref.txt" "$T/g2.txt" || fail "second job: result differs"
}

# ---- the MM kill -9'd at a random moment while a batch job and an
# interactive one run; restarted, both complete with all their output
mm_setup() {
	plain_net
	storm cluster up --nodes 4 --down-after-ms 10000 --dir "$C" >"$T/up.out" 2>&1
}
mm_run() {
	local b p lines
	# both jobs hold half way until the MM is back (the gate file): each
	# still runs when the kill lands, whatever the machine's speed
	rm -f "$T/mmgo"
	local half="seq 1 100 | sed 's/^/line /'; while [ ! -e $T/mmgo ]; do sleep 0.05; done; seq 101 200 | sed 's/^/line /'"
	storm submit -N 2 -o "$R/batch.txt" --parsable /bin/sh -c "$half" \
		>"$R/batch.id" 2>"$R/submit.err" || { fail "submit: $(cat "$R/submit.err")"; return; }
	b=$(cat "$R/batch.id")
	storm run -N 2 -n 4 /bin/sh -c "$half" >"$R/run.out" 2>"$R/run.err" &
	local run=$!
	jitter 300
	p=$(daemon_pid mm)
	kill -9 "$p"
	gone "$p" || fail "the MM did not die"
	step 60 restart storm cluster restart mm --dir "$C" || fail "cluster restart mm: exit $?"
	touch "$T/mmgo"
	wait_log "$C/log/mm.log" "job $b ended" 120 || hang_dump "batch job $b never ended"
	gone "$run" 120 || { hang_dump "storm run did not end"; kill "$run"; }
	wait "$run"
	[ "$(job_state "$b")" = COMPLETED ] || fail "batch job $b: $(job_state "$b")"
	lines=$(grep -c '^line ' "$R/batch.txt" 2>/dev/null)
	[ "${lines:-0}" = 400 ] || fail "batch job $b: ${lines:-0} lines of 400"
	# an interactive job's storm run may have lost its MM (exit 1); its job
	# must have run to its end all the same
	local ij
	ij=$(storm acct --json | python3 -c '
import json, sys
js = [j for j in json.load(sys.stdin)["jobs"] if j["job"] > int(sys.argv[1])]
print(" ".join("%d:%s" % (j["job"], j["state"]) for j in js))' "$b")
	case $ij in
	*:COMPLETED*) ;;
	*) fail "the interactive job: ${ij:-not accounted}" ;;
	esac
}

# ---- a node daemon and its ranks kill -9'd at a random moment under a
# --restart-on-failure job: it restarts from its checkpoint and its files
# equal an uninterrupted run's; the node is restarted for the next run
nd_setup() {
	plain_net
	storm cluster up --nodes 4 --down-after-ms 2000 --dir "$C" >"$T/up.out" 2>&1 || return 1
	mkdir -p "$T/ref" "$T/w"
	NDPROG="$BIN/ckpt_prog 300 4 out%r.f 10"
	(cd "$T/ref" && STORM_RANK=0 $NDPROG >/dev/null)
}
nd_run() {
	local j n p m
	rm -f "$T/w"/out*.f
	(cd "$T/w" && exec storm run -N 2 -n 2 --checkpoint-interval 1 --restart-on-failure $NDPROG) \
		>"$R/job.out" 2>"$R/job.err" &
	local run=$!
	wait_log "$R/job.out" "step 1 " 60 || { hang_dump "job did not start"; kill "$run"; return; }
	j=$(last_job)
	wait_log "$C/log/mm.log" "job $j: complete checkpoint" 60 || fail "no periodic checkpoint of job $j"
	jitter 800
	n=node$(job_nodes "$j" | grep -o '[0-9][0-9]' | head -1)
	p=$(daemon_pid "$n")
	kill -9 "$p" $(cat /proc/"$p"/task/*/children 2>/dev/null)
	gone "$run" 300 || { hang_dump "job $j did not end"; kill "$run"; }
	wait "$run" || fail "job $j: exit $?: $(tail -1 "$R/job.err")"
	cmp -s "$T/ref/out0.f" "$T/w/out0.f" && cmp -s "$T/ref/out0.f" "$T/w/out1.f" ||
		fail "job $j: files differ from the uninterrupted run's"
	step 60 up storm cluster restart "$n" --dir "$C" || fail "cluster restart $n: exit $?"
	# the new daemon's registration marks the node DOWN; UP on its first report
	step 120 status storm cluster status --wait 60 --dir "$C" || hang_dump "$n never came back"
}

# ---- node03's link cut for a random 0.1-3 s (less than down_after_ms)
# under a job on all 4 nodes, then restored: every line of the job arrives,
# and a job runs on all 4 after it
link_setup() {
	netns_net
	storm cluster up --netns --nodes 4 --down-after-ms 10000 --dir "$C" >"$T/up.out" 2>&1
}
link_run() {
	local ns
	ns=$(ns_of 3)
	rm -f "$T/linkgo"
	storm run -N 4 -n 4 /bin/sh -c "seq 1 1000; while [ ! -e $T/linkgo ]; do sleep 0.05; done; seq 1001 2000" \
		>"$R/run.out" 2>"$R/run.err" &
	local run=$!
	# the cut lands once the job runs: a launch during a cut fails the job
	# naming the node (the program transfer's sends time out), by design
	wait_log "$R/run.out" "1000" 60 || { hang_dump "the job never ran"; kill "$run"; return; }
	jitter 300
	ip -n "$ns" link set eth0 down
	sleep "$(rnd 0 2).$(rnd 1 9)"
	touch "$T/linkgo"
	jitter 300
	ip -n "$ns" link set eth0 up
	gone "$run" 120 || { hang_dump "the job across the cut did not end"; kill "$run"; }
	wait "$run" || fail "the job across the cut: exit $?"
	[ "$(grep -c . "$R/run.out")" = 8000 ] || fail "the job across the cut: $(grep -c . "$R/run.out") lines of 8000"
	step 120 all storm run -N 4 -n 4 /bin/echo hello || fail "a job on all 4 after: exit $?"
	[ "$(grep -c '^hello$' "$R/all.out")" = 4 ] || fail "a job on all 4 after: wrong output"
}

if [ "$HOG" = 1 ]; then
	sh -c 'while :; do :; done' &
	HOGPID=$!
fi
printf 'scenario\truns\tfailures\thangs\tfrozen_moving\n' >"$OUT/summary.tsv"
printf '%-14s %6s %9s %6s %14s\n' scenario runs failures hangs frozen_moving
total_bad=0
for sc in $SCENARIOS; do
	cluster_kill
	rm -rf "$C"
	mkdir -p "$OUT/$sc"
	scenario "$sc"
	export STACKS_OF
	STACKS_OF=$(eval echo "$RANKS")
	if ! $SETUP >"$OUT/$sc/setup.log" 2>&1; then
		cat "$T/up.out" >>"$OUT/$sc/setup.log" 2>/dev/null
		echo "soak.sh: $sc: its setup failed (log: $OUT/$sc/setup.log)" >&2
		printf '%s\t0\tsetup failed\t-\n' "$sc" >>"$OUT/summary.tsv"
		total_bad=$((total_bad + 1))
		continue
	fi
	nf=0 nh=0 MOVING=0
	for i in $(seq 1 "$RUNS"); do
		R=$T/run
		rm -rf "$R"
		mkdir -p "$R"
		WHY="" HUNG=0
		mark=$(date +%s.%N)
		$RUN >>"$R/harness.txt" 2>&1
		# every job ended and its nodes free before the next run
		left=$(storm jobs --json 2>/dev/null | python3 -c 'import json,sys; print(" ".join(str(j["job"]) for j in json.load(sys.stdin)["jobs"]))' 2>/dev/null)
		[ -n "$left" ] && fail "jobs left running: $left"
		# a failure that is not a hang: the daemons' state and the ranks'
		# stacks as they are right after it (a hang took them while stuck)
		[ -n "$WHY" ] && [ "$HUNG" = 0 ] && now_dump "after the failure: $WHY"
		for j in $left; do
			kill_job "$j" >/dev/null 2>&1 || fail "job $j could not be ended"
		done
		if [ -n "$WHY" ]; then
			nf=$((nf + 1))
			[ "$HUNG" = 1 ] && nh=$((nh + 1))
			keep=$OUT/$sc/fail-$i
			mkdir -p "$keep"
			cp -a "$R"/. "$keep/"
			cp -a "$C/log" "$keep/log" 2>/dev/null
			echo "$mark $WHY" >"$keep/why"
			echo "  $sc run $i: $WHY (kept in $keep)"
			# a cluster that hung is suspect for the runs after it: a new one
			if [ "$HUNG" = 1 ]; then
				cluster_kill
				rm -rf "$C"
				$SETUP >>"$OUT/$sc/setup.log" 2>&1 || { echo "  $sc: setup again failed" >&2; break; }
			fi
		fi
	done
	# frozen_moving: the restart scenarios' checkpoints that froze a message
	# of over 1 MiB still moving
	case $sc in restart-*) mv=$MOVING ;; *) mv=- ;; esac
	printf '%-14s %6s %9s %6s %14s\n' "$sc" "$RUNS" "$nf" "$nh" "$mv"
	printf '%s\t%s\t%s\t%s\t%s\n' "$sc" "$RUNS" "$nf" "$nh" "$mv" >>"$OUT/summary.tsv"
	[ "$nf" = 0 ] || total_bad=$((total_bad + 1))
done
echo "soak: summary in $OUT/summary.tsv"
[ "$total_bad" = 0 ]
