#!/bin/bash
# Checkpoint/restart of jobs on a virtual cluster, through the real CLI: a
# 2-rank job (tests/ckpt/ckpt_prog: 16 MiB heap, a file per rank, a signal
# handler, clock_gettime pacing) checkpointed three times mid-run, killed and
# restarted on the same nodes and on other ones, ends with files identical to
# an uninterrupted run; every image has a buddy copy on another node; a job
# with --restart-on-failure survives SIGKILL of a node daemon and its ranks
# and the loss of that node's images (its ranks come back from the copies,
# moved node to node); after kill -9 of the MM, its successor restarts the
# checkpoints recorded in the database; a multi-threaded job restarts;
# damaged images, incomplete checkpoints, a rank holding a socket
# (tests/ckpt/fds_prog) and other users are refused with a clear error.
# Every daemon goes down on exit.
# Usage: test_ckpt.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-ckpttest.XXXXXX)
chmod 755 "$T" # another user's storm must read the configuration
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
# loopback only: a --netns cluster's bridge that another test takes down
# must not take this cluster's connections with it
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo
fails=0 checks=0
bg=()

cleanup() {
	fail_report
	for p in "${bg[@]}"; do kill -9 "$p" 2>/dev/null; done
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1 s a run (each step spins on clock_gettime: every run burns a CPU per
# rank, which the daemons beside it need); a rank that must still run at a
# check holds after step K until
# the test creates gate.K in the working directory (hold K,...: however slow
# the machine, the job does not end before its checkpoint lands). The gates
# stay open for the restarts, so each job here holds at steps of its own.
STEPS=500 HEAP=16 STEP_MS=2
PROG="$BIN/ckpt_prog $STEPS $HEAP out%r.f $STEP_MS"
# the id of the newest checkpoint
newest_ckpt() { storm checkpoints --json | python3 -c 'import json,sys; print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"]))'; }
# ck_field ID FIELD: from storm checkpoints --json
ck_field() {
	storm checkpoints --json | python3 -c '
import json, sys
for k in json.load(sys.stdin)["checkpoints"]:
    if k["id"] == int(sys.argv[1]): print(k[sys.argv[2]])' "$1" "$2"
}
# ck_images ID: where each rank's image and its copy are, from --json
ck_images() {
	storm checkpoints --json | python3 -c '
import json, sys
for k in json.load(sys.stdin)["checkpoints"]:
    if k["id"] == int(sys.argv[1]):
        print(" ".join("%d:%s:%s" % (i["rank"], i["node"], i["copy"]) for i in k["images"]))' "$1"
}
# same_files NAME: each rank's file equals the uninterrupted run's
same_files() {
	if cmp -s "$T/ref0.f" "$T/w/out0.f" && cmp -s "$T/ref0.f" "$T/w/out1.f"; then ok "$1"; else
		bad "$1"
		cmp "$T/ref0.f" "$T/w/out0.f"
		cmp "$T/ref0.f" "$T/w/out1.f"
	fi
}
# tail_of_ref NAME FILE [REF]: FILE's lines (two ranks) are REF's (ref.out)
# from some step on
tail_of_ref() {
	if python3 - "${3:-$T/ref.out}" "$2" <<'PY'
import collections, sys
ref = open(sys.argv[1]).read().splitlines()
got = [l for l in open(sys.argv[2]).read().splitlines() if not l.startswith("storm:")]
c = collections.Counter(got)
# the ranks run apart: near the checkpoint one may be a step ahead
assert got and all(n <= 2 for n in c.values()) and c[ref[-1]] == 2, "twice at most, both ends"
first = min(ref.index(l) for l in c)
assert set(c) == set(ref[first:]), "the reference from step %d on" % first
PY
	then ok "$1"; else bad "$1"; fi
}

# the uninterrupted run, for comparison
mkdir -p "$T/w"
(cd "$T" && STORM_RANK=0 $BIN/ckpt_prog $STEPS $HEAP ref%r.f 1 >ref.out) || bad "reference run"

# a node is DOWN after 5 s without a report: on a loaded 2-core machine a
# daemon can wait over a second for a CPU, and only node01 is meant to die
# (the test waits for its death to be seen, however long that takes)
expect "cluster up" 0 storm cluster up $UP_MODE $(shared "$T/w") --nodes 4 --down-after-ms 5000 --dir "$C"
cd "$T/w" || exit 1

# ---- three checkpoints of a running job, then it is killed
storm run -N 2 -n 2 $PROG hold 30,60,90 >run1.out 2>run1.err &
bg+=($!)
wait_count run1.out "step 30 " 2 30 >/dev/null || bad "job 1's ranks reached step 30"
expect "storm checkpoint (epoch 1)" 0 storm checkpoint 1
has "  it reports the checkpoint" out "checkpoint 1 of job 1 (epoch 1)"
: >gate.30
wait_count run1.out "step 60 " 2 30 >/dev/null || bad "job 1's ranks reached step 60"
expect "storm checkpoint --json (epoch 2)" 0 storm checkpoint --json 1
has "  JSON names it complete" out '"complete": true'
: >gate.60
wait_count run1.out "step 90 " 2 30 >/dev/null || bad "job 1's ranks reached step 90"
expect "storm checkpoint (epoch 3)" 0 storm checkpoint 1
# killed while it holds at step 90; its restarts find gate.90 and run on
kill_job 1 && ok "job 1 killed while it held" || bad "job 1 killed while it held"
: >gate.90
wait "${bg[-1]}"
expect "storm checkpoints lists them" 0 storm checkpoints
[ "$(grep -c COMPLETE "$T/out")" = 3 ] && ok "  three complete checkpoints" ||
	bad "  three complete checkpoints"
[ -f "$(node_state node00)/ckpt/1/3/rank0.img" ] && [ -f "$(node_state node01)/ckpt/1/3/rank1.img" ] &&
	ok "  images in each node's state directory" || bad "  images in each node's state directory"
# the MM's database has them too (its checkpoints table)
DB=$(find "$C" -name mm.db | head -1)
db_ckpts() { sqlite3 "$DB" "SELECT epoch || ':' || complete FROM checkpoints WHERE job = 1 ORDER BY id" | tr '\n' ' '; }
[ -n "$DB" ] && [ "$(db_ckpts)" = "1:1 2:1 3:1 " ] && ok "  recorded complete in the MM's database" ||
	bad "  recorded complete in the MM's database (${DB:-no mm.db}: $(db_ckpts 2>&1))"
# buddy copies: each node's images are also on the next node of the job,
# and the database says where each rank's image and its copy are
cmp -s "$(node_state node00)/ckpt/1/3/rank0.img" "$(node_state node01)/ckpt/1/3/rank0.img" &&
	cmp -s "$(node_state node01)/ckpt/1/3/rank1.img" "$(node_state node00)/ckpt/1/3/rank1.img" &&
	ok "  each image has an identical copy on the job's other node" ||
	bad "  each image has an identical copy on the job's other node"
db_imgs() { sqlite3 "$DB" "SELECT rank || ':' || node || ':' || copy FROM checkpoint_images WHERE ckpt = (SELECT id FROM checkpoints WHERE job = 1 AND epoch = 3) ORDER BY rank" | tr '\n' ' '; }
[ "$(db_imgs)" = "0:node00:node01 1:node01:node00 " ] && ok "  the database records where each image and its copy are" ||
	bad "  the database records where each image and its copy are: $(db_imgs 2>&1)"
[ "$(ck_images 3)" = "0:node00:node01 1:node01:node00" ] && ok "  storm checkpoints --json shows them" ||
	bad "  storm checkpoints --json shows them: $(ck_images 3)"

# ---- restart the last one where it was: the files end identical
rm -f out0.f.tmp
expect "storm restart 3 (same nodes)" 0 storm restart 3
cp "$T/out" r3.out
same_files "  files identical to an uninterrupted run"
tail_of_ref "  output is the uninterrupted run's, from the checkpoint on" r3.out
[ "$(job_nodes 2)" = "node[00-01]" ] && ok "  ran on node[00-01]" || bad "  ran on $(job_nodes 2)"

# ---- restart the second one elsewhere: another job holds node[00-01]
storm submit -N 2 -o /dev/null --parsable /bin/sleep 600 >blocker.id
expect "storm restart 2 (other nodes)" 0 storm restart 2
cp "$T/out" r2.out
[ "$(job_nodes 4)" = "node[02-03]" ] && ok "  ran on node[02-03]" || bad "  ran on $(job_nodes 4)"
same_files "  files identical after a restart on other nodes"
tail_of_ref "  output from the second checkpoint on" r2.out
# the files had grown past the second checkpoint: each rank's node says it
# cut them back, and the bytes cut are kept beside them
for r in 0 1; do
	if grep -qE "job 4: rank $r: restart: .*/out$r.f: cut back from [0-9]+ to [0-9]+ bytes \(the size at the checkpoint\); the [0-9]+ bytes cut are kept in .*/out$r.f.storm-cut-" "$C"/log/*.log; then
		ok "  rank $r's node logs the cut of out$r.f"
	else
		bad "  rank $r's node logs the cut of out$r.f"
		grep -h "job 4: rank $r" "$C"/log/*.log | head -3
	fi
done
ls out0.f.storm-cut-* >/dev/null 2>&1 && ok "  the bytes cut are kept" || bad "  the bytes cut are kept"
kill_job "$(cat blocker.id)" || bad "the blocker ended"

# ---- refusals
# a rank that cannot come back fails the job (its status: 1, or 137 when the
# other rank was restored and then killed)
expect "a damaged image fails the restart" 1 bash -c "
	python3 -c 'import sys; f = open(sys.argv[1], \"r+b\"); f.seek(200000); b = f.read(1); f.seek(200000); f.write(bytes([b[0] ^ 0xff]))' $(node_state node00)/ckpt/1/1/rank0.img
	storm restart 1 || exit 1"
has "  error names the image and the section" err "rank0.img: section pages["
has "  error says why" err "checksum mismatch"
expect "a truncated image fails the restart" 1 bash -c "
	truncate -s 100000 $(node_state node01)/ckpt/1/2/rank1.img; storm restart 2 || exit 1"
has "  error names the image and the section" err "rank1.img: truncated in section"
expect "restart of a missing checkpoint" 1 storm restart 99
has "  says so" err "no checkpoint 99"
expect "checkpoint of a missing job" 1 storm checkpoint 99
has "  says so" err "no job 99"
# a multi-threaded job: checkpointed while a thread sleeps (until gate.mt
# exists), killed and restarted, the thread wakes and the main one joins it
storm run python3 -c 'import os, threading, time
def nap():
    while not os.path.exists("gate.mt"): time.sleep(0.05)
t = threading.Thread(target=nap); t.start(); print("threads up", flush=True)
t.join(); print("joined", flush=True)' >mt.out 2>&1 &
bg+=($!)
wait_log mt.out "threads up" 30
MT=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
expect "checkpoint of a multi-threaded job" 0 storm checkpoint "$MT"
MTC=$(newest_ckpt)
kill_job "$MT" || bad "the multi-threaded job ended"
: >gate.mt
expect "  restarts: its thread sleeps on and is joined" 0 storm restart "$MTC"
has "  the main thread joined it" out "joined"
# what the checkpointer refuses (a mapped file that was deleted) leaves an
# incomplete checkpoint
storm run python3 -c 'import mmap, tempfile, time
f = tempfile.TemporaryFile(); f.write(b"x" * 4096); f.flush()
m = mmap.mmap(f.fileno(), 4096); print("mapped", flush=True)
while True: time.sleep(3600)' >dm.out 2>&1 &
bg+=($!)
wait_log dm.out "mapped" 30
DM=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
expect "checkpoint of a job that maps a deleted file fails" 1 storm checkpoint "$DM"
has "  names the cause" err "maps deleted file"
INC=$(newest_ckpt)
[ "$(ck_field "$INC" complete)" = False ] && ok "  recorded as incomplete" || bad "  recorded as incomplete"
expect "an incomplete checkpoint never restarts" 1 storm restart "$INC"
has "  says so" err "is incomplete"
storm cancel --signal KILL "$DM" >/dev/null
# a rank holding a socket: refused naming it, and the job runs on
storm run "$BIN/fds_prog" tcp >sock.out 2>&1 &
bg+=($!)
wait_log sock.out "tick 3" 30
SK=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
expect "checkpoint of a job whose rank holds a TCP socket fails" 1 storm checkpoint "$SK"
has "  names the rank, the fd and what it is" err "rank 0: pid "
has "  the socket" err "is a TCP socket (127.0.0.1:"
has "  why" err "sockets cannot be checkpointed"
n=$(tail -n1 sock.out | sed 's/tick //')
wait_log sock.out "tick $((n + 3))" 30 && ok "  the job runs on" || bad "  the job runs on"
storm cancel --signal KILL "$SK" >/dev/null
# as another user (setpriv: util-linux, scripts/install-deps.sh)
if ! command -v setpriv >/dev/null; then
	bad "other users: no setpriv here to run storm as another user (install util-linux)"
elif [ "$(id -u)" != 0 ]; then
	bad "other users: the test must run as root to run storm as another user"
else
	expect "another user may not checkpoint root's job" 1 \
		setpriv --reuid=65534 --regid=65534 --clear-groups storm checkpoint 1
	has "  permission error" err "only its owner or root"
	expect "nor restart root's checkpoint" 1 \
		setpriv --reuid=65534 --regid=65534 --clear-groups storm restart 3
	has "  permission error" err "only its owner or root"
fi
expect "storm checkpoints --delete" 0 storm checkpoints --delete 1
wait_log "$C/log/node00.log" "checkpoint 1 of job 1 deleted" 10 &&
	[ ! -e "$(node_state node00)/ckpt/1/1" ] && ok "  its images are gone" || bad "  its images are gone"
[ "$(db_ckpts)" = "2:1 3:1 " ] && ok "  gone from the MM's database" ||
	bad "  gone from the MM's database: $(db_ckpts 2>&1)"
expect "restart of a deleted checkpoint" 1 storm restart 1

# ---- ranks that fork (tests/ckpt/tree_prog): each rank asks its child over
# a pipe, the child its grandchild, a counter in shared anonymous memory; the
# rank waits on an epoll set with an eventfd, a timerfd and the answer pipe,
# and at the end each process waits for its child. Checkpointed twice while
# it runs, the job ends as if never stopped; restarted in place and on other
# nodes, each rank's tree comes back whole: the output from the checkpoint
# on is the uninterrupted run's, each rank reaps its child, exit status 0.
newest_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
"$BIN/tree_prog" epoll 200 >"$T/tref.out" || bad "tree: reference run"
# each rank holds after steps 40 and 100 until the test creates gate.40 and
# gate.100 (in the shared working directory; steps no other job here holds
# at, as its gates stay open for the restarts): a checkpoint lands while it
# runs however slow the machine, and a restart from it finds the gate open
storm run -N 2 -n 2 "$BIN/tree_prog" epoll hold 40,100 200 >tree.out 2>tree.err &
TRUN=$!
bg+=($TRUN)
wait_count tree.out "step 40 " 2 30 >/dev/null || bad "tree: both ranks reached step 40"
TJ=$(newest_job)
TN=$(job_nodes "$TJ")
[ "$(pgrep -f "^$BIN/tree_prog epoll hold 40,100 200" | wc -l)" = 6 ] &&
	ok "tree: each rank runs with its child and grandchild" ||
	bad "tree: each rank runs with its child and grandchild"
expect "tree: storm checkpoint of a job whose ranks fork" 0 storm checkpoint "$TJ"
TC1=$(newest_ckpt)
: >gate.40
wait_count tree.out "step 100 " 2 30 >/dev/null || bad "tree: both ranks ran on to step 100"
expect "tree: a second checkpoint" 0 storm checkpoint "$TJ"
TC2=$(newest_ckpt)
: >gate.100
wait "$TRUN"
rc=$?
[ "$rc" = 0 ] && ok "tree: the checkpointed job ends (exit 0)" ||
	{ bad "tree: the checkpointed job ends (exit $rc)"; tail -3 tree.err | sed 's/^/     | /'; }
if python3 - "$T/tref.out" tree.out <<'PY'
import collections, sys
ref = open(sys.argv[1]).read().splitlines()
got = [l for l in open(sys.argv[2]).read().splitlines() if not l.startswith("storm:")]
sys.exit(collections.Counter(got) != collections.Counter(ref * 2))
PY
then ok "tree: its output is the uninterrupted run's, once a rank"; else
	bad "tree: its output is the uninterrupted run's, once a rank"; fi
expect "tree: storm restart $TC2 (same nodes)" 0 storm restart "$TC2"
cp "$T/out" tr2.out
[ "$(job_nodes "$(newest_job)")" = "$TN" ] && ok "  ran on $TN" ||
	bad "  ran on $(job_nodes "$(newest_job)")"
tail_of_ref "  output from the checkpoint on, each rank reaping its child" tr2.out "$T/tref.out"
# the blocker takes the nodes it ran on (the first free ones)
storm submit -N 2 -o /dev/null --parsable /bin/sleep 600 >blocker.id
expect "tree: storm restart $TC1 (other nodes)" 0 storm restart "$TC1"
cp "$T/out" tr1.out
TN1=$(job_nodes "$(newest_job)")
[ "$TN1" != "$TN" ] && ok "  ran on $TN1" || bad "  ran on $TN1, where it ran before"
tail_of_ref "  output from the checkpoint on, each rank reaping its child" tr1.out "$T/tref.out"
kill_job "$(cat blocker.id)" || bad "the blocker ended"

# ---- a node dies: the job restarts from its latest complete checkpoint
rm -f out0.f out1.f
# it holds at step 5 (a gate of its own) until its restart is under way:
# node01 dies while it runs
storm run -N 2 -n 2 --checkpoint-interval 1 --restart-on-failure $PROG hold 5 >fail.out 2>fail.err &
RUN=$!
bg+=($RUN)
wait_log fail.out "step 1 " 30
FJ=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
wait_log "$C/log/mm.log" "job $FJ: complete checkpoint" 30 || bad "a periodic checkpoint completed"
[ "$(job_nodes "$FJ")" = "node[00-01]" ] || bad "the job runs on node[00-01], not $(job_nodes "$FJ")"
N1=$(awk '$2 == "node01" { print $1 }' "$C/pids")
kill -9 "$N1" $(cat /proc/"$N1"/task/*/children 2>/dev/null)
# and its disk is lost: the restart takes rank 1 from its copy on node00
rm -rf "$(node_state node01)/ckpt"
wait_log fail.err "; job $FJ restarts from checkpoint" 300 ||
	bad "job $FJ restarts once node01 stopped responding"
: >gate.5
wait "$RUN"
rc=$?
[ "$rc" = 0 ] && ok "the job survives SIGKILL of node01's daemon and ranks, and the loss of its images (exit 0)" ||
	{ bad "the job survives SIGKILL of node01 (exit $rc)"; sed 's/^/     | /' fail.err | tail -5; }
# the restart is a new job (storm run names it): its own log lines count
NJ=$(sed -n "s/.*job $FJ restarts from checkpoint [0-9]*; now job \([0-9]*\).*/\1/p" fail.err | tail -1)
grep -qE "job ${NJ:-none}: [0-9]+ files of checkpoint [0-9]+ move to its nodes" "$C/log/mm.log" &&
	grep -qE "job ${NJ:-none}: sending [0-9]+ entries of checkpoint [0-9]+ for a restart" "$C/log/node00.log" &&
	ok "  the images moved node to node from the buddy copies" ||
	bad "  the images moved node to node from the buddy copies"
grep -q "stopped responding (no report for [0-9.]* s); job $FJ restarts from checkpoint" fail.err &&
	ok "  storm run says it restarted" || bad "  storm run says it restarted"
same_files "  files identical to an uninterrupted run"
grep -q "^done " fail.out && ok "  the job ran to its end" || bad "  the job ran to its end"
# periodic checkpoints are pruned to the last two complete ones per job
over=$(storm checkpoints --json | python3 -c '
import collections, json, sys
n = collections.Counter(k["job"] for k in json.load(sys.stdin)["checkpoints"] if k["complete"] and k["job"] > int(sys.argv[1]) - 1)
print(sum(1 for v in n.values() if v > 2))' "$FJ")
[ "$over" = 0 ] && ok "  at most two periodic checkpoints kept per job" ||
	bad "  at most two periodic checkpoints kept per job"

# ---- the MM dies: its successor restarts the checkpoints it recorded
MM=$(awk '$2 == "mm" { p = $1 } END { print p }' "$C/pids")
kill -9 "$MM" && gone "$MM"
expect "storm cluster restart mm" 0 storm cluster restart mm --dir "$C"
[ "$(ck_field 3 complete)" = True ] && [ "$(ck_images 3)" = "0:node00:node01 1:node01:node00" ] &&
	ok "  checkpoint 3 is listed complete, with its images, after the MM restart" ||
	bad "  checkpoint 3 is listed complete, with its images, after the MM restart: $(ck_images 3)"
# node01 is down and lost its images: rank 1 comes from its copy on node00
expect "storm restart 3 after the MM restart" 0 storm restart 3
cp "$T/out" r3b.out
same_files "  files identical to an uninterrupted run"
tail_of_ref "  output is the uninterrupted run's, from the checkpoint on" r3b.out
# deleting it removes the images a restart moved to other nodes too
RJ=$(storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
OTHER=$(job_nodes "$RJ" | python3 -c '
import re, sys
s = sys.stdin.read().strip()
m = re.match(r"node\[(\d+)[-,](\d+)\]", s)
names = ["node%s" % x for x in m.groups()] if m else [s]
print([n for n in names if n not in ("node00", "node01")][0])')
[ -f "$(node_state $OTHER)/ckpt/1/3/rank1.img" ] && ok "  rank 1's image was moved to $OTHER" ||
	bad "  rank 1's image was moved to ${OTHER:-another node}"
expect "storm checkpoints --delete 3" 0 storm checkpoints --delete 3
wait_log "$C/log/$OTHER.log" "checkpoint 3 of job 1 deleted" 10 &&
	[ ! -e "$(node_state $OTHER)/ckpt/1/3" ] && ok "  the moved images are gone from $OTHER" ||
	bad "  the moved images are gone from $OTHER"

echo "test_ckpt: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
