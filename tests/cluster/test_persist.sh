#!/bin/bash
# Persistent state and daemon restarts on a 4-node virtual cluster (MPL 1):
# kill -9 the machine manager with an interactive job, a batch job and a
# queued job, start it again (storm cluster restart mm): the running jobs run
# on, their output still reaches its files, the storm run exits naming the
# cause, the queued job starts later; the MM killed in the middle of a 12 MiB
# transfer: the job starts over and completes; storm acct (filters, --json,
# bad input); kill -9 a node daemon under a job and restart it: the job fails
# naming the node and no rank process of it survives (checked by pid).
# Usage: test_persist.sh BUILD_BIN_DIR   (part of make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-persisttest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
cleanup() {
	fail_report
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	for p in ${RANKPIDS:-}; do kill -9 "$p" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1
daemon_pid() { awk -v n="$1" '$2 == n { p = $1 } END { print p }' "$C/pids"; }
# kill9 NAME: SIGKILL that daemon and return once it is gone
kill9() { local p; p=$(daemon_pid "$1"); kill -9 "$p"; gone "$p"; }

# the ranks wait on a fifo of the test's (with --hosts in a directory every
# host shares)
mkdir "$T/sync"
if storm cluster up $UP_MODE $(shared "$T/sync") --nodes 4 --mpl 1 --down-after-ms 10000 --dir "$C" >"$T/up.out" 2>&1; then
	ok "cluster up with 4 nodes, MPL 1 (DOWN after 10 s)"
else bad "cluster up"; cat "$T/up.out"; exit 1; fi

# ---- the machine manager dies with jobs running and queued
mkfifo "$T/f"
# the jobs go on once the test has looked at them after the restart: each of
# their 4 ranks blocks reading a line of the fifo go, which the test holds
# open (so a line written before a rank reads waits in it)
mkfifo "$T/sync/go"
exec 9<>"$T/sync/go"
hold="read _ < $T/sync/go"
storm run -N 2 sh -c "echo started \$STORM_RANK; $hold; echo after \$STORM_RANK" \
	>"$T/f" 2>"$T/run.err" &
RUN=$!
exec 7<"$T/f"
read -r _ <&7
read -r _ <&7
expect "a batch job on the other 2 nodes" 0 storm submit -N 2 -o "$T/batch.out" \
	sh -c "echo one \$STORM_RANK; sleep 2; $hold; echo two \$STORM_RANK"
BATCH=$(sed -n 's/^Submitted job //p' "$T/out")
wait_log "$C/log/mm.log" "job $BATCH starts" 10
expect "a job queued behind them" 0 storm submit -N 4 -o "$T/queued.out" sh -c 'echo "queued $STORM_RANK"'
QUEUED=$(sed -n 's/^Submitted job //p' "$T/out")
storm jobs >"$T/jobs0"
grep -qE "^ +$QUEUED .*QUEUED" "$T/jobs0" && ok "  ... which is QUEUED" || { bad "  queued"; cat "$T/jobs0"; }
RUNJOB=$(awk 'NR > 1 && $4 == "RUNNING" { print $1; exit }' "$T/jobs0")

kill9 mm
wait "$RUN"
rc=$?
exec 7<&-
[ $rc != 0 ] && grep -q "lost the connection to the machine manager (it stopped or restarted); job $RUNJOB keeps running" "$T/run.err" &&
	ok "storm run exits ($rc) naming the cause and its job" ||
	{ bad "storm run exits naming the cause (exit $rc)"; cat "$T/run.err"; }
expect "storm cluster restart mm" 0 storm cluster restart mm --dir "$C"
sed -n 's/.*started again (pid [0-9]*) in \([0-9.]*\) s.*/MM restart: \1 s to answering/p' "$T/out"
storm cluster status --wait "$(patience 20)" >/dev/null && ok "  every node re-registers (UP)" || bad "  every node re-registers"
expect "storm jobs after the restart" 0 storm jobs
grep -qE "^ +$RUNJOB .*RUNNING" "$T/out" && grep -qE "^ +$BATCH .*RUNNING" "$T/out" &&
	grep -qE "^ +$QUEUED .*QUEUED" "$T/out" && ok "  running jobs still RUNNING, the queued one QUEUED" ||
	{ bad "  jobs kept their states"; cat "$T/out"; }
printf 'go\ngo\ngo\ngo\n' >&9
wait_log "$C/log/mm.log" "job $QUEUED ended" 30 && ok "the queued job ran after the restart" ||
	bad "the queued job ran after the restart"
# the MM writes these files (--hosts: in its host's files)
M=$(in_host mm "$T")
[ "$(sort "$M/batch.out" | tr '\n' ' ')" = "one 0 one 1 two 0 two 1 " ] &&
	ok "  the batch job's output (before and after) is all in its file" ||
	{ bad "  batch output complete"; cat "$M/batch.out"; }
[ "$(sort "$M/storm-$RUNJOB.out" 2>/dev/null | tr '\n' ' ')" = "after 0 after 1 " ] &&
	ok "  the interactive job's later output went to storm-$RUNJOB.out" ||
	{ bad "  interactive job output after the restart"; cat "$M/storm-$RUNJOB.out"; }
[ "$(sort "$M/queued.out" | tr '\n' ' ')" = "queued 0 queued 1 queued 2 queued 3 " ] &&
	ok "  the queued job's output" || { bad "  queued output"; cat "$M/queued.out"; }

# ---- storm acct
expect "storm acct" 0 storm acct
n=$(awk -v a="$RUNJOB" -v b="$BATCH" -v c="$QUEUED" '($1 == a || $1 == b || $1 == c) && $4 == "COMPLETED" && $10 == 0' "$T/out" | wc -l)
[ "$n" = 3 ] && ok "  lists the 3 jobs COMPLETED with exit 0" || { bad "  acct lists the 3 jobs"; cat "$T/out"; }
head -1 "$T/out" | grep -q "JOBID NAME .*START .*END .*ELAPSED EXIT NODELIST" && ok "  sacct-like columns" ||
	bad "  sacct-like columns: $(head -1 "$T/out")"
expect "storm acct -j $BATCH --json" 0 storm acct -j "$BATCH" --json
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
j = d["jobs"]
assert len(j) == 1 and j[0]["job"] == int(sys.argv[2]) and j[0]["state"] == "COMPLETED"
assert j[0]["exit_status"] == 0 and j[0]["nodes"] == 2 and j[0]["elapsed"] >= 2
assert j[0]["end_time"] >= j[0]["start_time"] > 0
' "$T/out" "$BATCH" && ok "  --json with -j: one job, elapsed >= 2 s" || { bad "  acct --json"; cat "$T/out"; }
expect "storm acct -u $(id -un) --since 1h" 0 storm acct -u "$(id -un)" --since 1h
[ "$(grep -c COMPLETED "$T/out")" -ge 3 ] && ok "  user and --since filters keep them" || bad "  filters"
expect "storm acct -u nosuchuserx" 0 storm acct -u nosuchuserx
[ "$(wc -l <"$T/out")" = 1 ] && ok "  another user's filter: header only" || bad "  other user filter"
expect "storm acct --since 2999-01-01: none" 0 storm acct --since 2999-01-01
expect "storm acct --since garbage" 2 storm acct --since yesterdayish
has "  ... says what it wants" err "--since wants"
expect "storm acct -j x" 2 storm acct -j x
expect "storm acct --help" 0 storm acct --help

# ---- killed as a transfer starts: the job starts over, or, if the kill
# lands later, goes on where it was; either way it completes. (Killed in the
# middle of a 12 MiB multicast the nodes can stay deaf to the new MM: rxm
# keeps receive buffers matched to the dead sender; docs/RELIABILITY.md)
SELF=$BIN/storm_selfsum
expect "a program submitted" 0 storm submit -N 4 -n 4 -o "$T/big.out" /bin/sh -c 'echo ran $STORM_RANK'
BIG=$(sed -n 's/^Submitted job //p' "$T/out")
wait_log "$C/log/mm.log" "job $BIG submitted" 10
kill9 mm
expect "  MM killed mid-transfer, restarted" 0 storm cluster restart mm --dir "$C"
wait_log "$C/log/mm.log" "job $BIG ended" 60
expect "  storm acct -j $BIG" 0 storm acct -j "$BIG"
grep -qE "^ +$BIG .* COMPLETED .* 0 node" "$T/out" && ok "  the job completed after the restart" ||
	{ bad "  the job completed after the restart"; cat "$T/out"; }
# output is at least once across an MM kill: a report whose output the dead
# MM wrote but never acknowledged comes again (docs/RELIABILITY.md)
[ "$(grep '^ran [0-3]$' "$M/big.out" 2>/dev/null | sort -u | wc -l)" = 4 ] && ok "  every rank ran it (ranks 0-3)" ||
	{ bad "  every rank ran it"; cat "$M/big.out"; }

# ---- the MM dies while one node of a job has finished its part and the
# other still runs it: the restored job knows node 0 is done and ends
# COMPLETED once node 1, which ends quietly, is read. Rank 0 ends at once
# (the first node reports its end), rank 1 waits; the MM is killed once its
# database says node 0 is done (saved before the node's report is
# acknowledged), the database's writes being the events waited on
expect "a job whose rank 0 ends at once" 0 storm submit -N 2 -o "$T/half.out" \
	sh -c "echo early \$STORM_RANK; [ \$STORM_RANK = 0 ] || $hold"
HALF=$(sed -n 's/^Submitted job //p' "$T/out")
DB=$C/state/mm.db
[ "${STORM_HOSTS:-}" = 1 ] && DB=$C/hosts/mm/state/mm.db # the MM host's own
# node0_saved JOB: until the MM's database says node 0 of JOB is done
node0_saved() {
	python3 - "$DB" "$1" <<'PY'
import ctypes, os, select, sqlite3, sys, time
db, job = sys.argv[1], int(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
libc.inotify_add_watch(fd, os.path.dirname(db).encode(), 0x2 | 0x100)  # MODIFY, CREATE
deadline = time.monotonic() + 30
while True:
    try:
        c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=5)
        row = c.execute("select node_done from jobs where id = ?", (job,)).fetchone()
        c.close()
        if row and row[0] and bytes(row[0])[0:1] == b"\x01":
            sys.exit(0)
    except sqlite3.Error:
        pass
    left = deadline - time.monotonic()
    if left <= 0:
        sys.exit(1)
    if select.select([fd], [], [], left)[0]:
        os.read(fd, 65536)
PY
}
node0_saved "$HALF" && ok "  the MM saved node 0 done with it" || bad "  node 0 done in the MM's database"
kill9 mm
expect "  MM killed, restarted" 0 storm cluster restart mm --dir "$C"
echo go >&9
wait_log "$C/log/mm.log" "job $HALF ended" 60
expect "  storm acct -j $HALF" 0 storm acct -j "$HALF"
grep -qE "^ +$HALF .* COMPLETED .* 0 node" "$T/out" && ok "  it completed after the restart" ||
	{ bad "  it completed after the restart"; cat "$T/out"; grep "job $HALF" "$C/log/mm.log"; }

# ---- the same with a third node whose daemon is stopped across the MM's
# restart: the restored MM reads node01's quiet end while node02 is not UP,
# then node02's once it is. Each node's accounting pair (its ranks' CPU) is
# counted once: a later read must not ask node01 again. Ranks 1 and 2 burn
# CPU, then say how much (the shell's own times), then wait for the test.
BURN='i=0; while [ $i -lt 400000 ]; do i=$((i + 1)); done; times >'"$T/sync"'/cpu.$STORM_RANK; echo burnt'
expect "a 3-node job whose rank 0 ends at once" 0 storm submit -N 3 -o "$T/third.out" \
	sh -c "[ \$STORM_RANK = 0 ] && exit 0; $BURN; $hold"
THIRD=$(sed -n 's/^Submitted job //p' "$T/out")
wait_count "$T/third.out" "burnt" 2 60 >/dev/null || bad "  ranks 1 and 2 never said their CPU"
node0_saved "$THIRD" && ok "  the MM saved node 0 done with it" || bad "  node 0 done in the MM's database"
kill9 mm
ND2=$(daemon_pid node02)
kill -STOP "$ND2"
expect "  MM killed, restarted with node02's daemon stopped" 0 storm cluster restart mm --dir "$C"
echo go >&9
echo go >&9
if wait_log "$C/log/mm.log" "job $THIRD: 2 of 3 nodes have ended it; waiting for the rest, not UP: node02" 60; then
	ok "  node01's quiet end read while node02 is not UP"
else
	bad "  node01's quiet end read while node02 is not UP: $(grep "job $THIRD" "$C/log/mm.log")"
fi
kill -CONT "$ND2"
wait_log "$C/log/mm.log" "job $THIRD ended" 60
storm acct -j "$THIRD" --json >"$T/third.json"
msg=$(python3 - "$T/third.json" "$T/sync/cpu.1" "$T/sync/cpu.2" <<'PY'
import json, re, sys
def secs(t):  # "0m1.234s"
    m = re.fullmatch(r"(\d+)m([\d.]+)s", t)
    return int(m.group(1)) * 60 + float(m.group(2))
ranks = 0.0
for f in sys.argv[2:]:
    user, system = open(f).readline().split()
    ranks += secs(user) + secs(system)
jobs = json.load(open(sys.argv[1]))["jobs"]
acct = jobs[0]["cpu_seconds"] if jobs else -1
print(f"acct {acct:.2f} s, the ranks' own {ranks:.2f} s; state {jobs[0]['state'] if jobs else '?'}")
sys.exit(not (jobs and jobs[0]["state"] == "COMPLETED" and 0.8 * ranks <= acct <= 1.25 * ranks))
PY
)
[ $? = 0 ] && ok "  it completed, each node's CPU counted once: $msg" ||
	bad "  it completed, each node's CPU counted once: $msg"

# ---- the MM dies after every node of a job said DONE (saved, and
# acknowledged by the strobes) and before the job's end, its termination
# check out: no node will report on the job again, and the restored MM must
# end it. The MM is restarted with the test point end_check armed, which
# makes it exit two strobes after the check starts, as kill -9 would, then
# restarted without it.
kill9 mm
expect "  MM restarted with the end_check test point" 0 \
	env STORM_TEST_TAMPER=end_check=1 storm cluster restart mm --dir "$C"
expect "a job that ends at once" 0 storm submit -N 2 -o "$T/endchk.out" true
ENDCHK=$(sed -n 's/^Submitted job //p' "$T/out")
wait_log "$C/log/mm.log" "test hook: the MM stops" 60 &&
	ok "  the MM stopped after its termination check started" ||
	bad "  the MM stopped after its termination check started"
gone "$(daemon_pid mm)"
expect "  MM restarted" 0 storm cluster restart mm --dir "$C"
wait_log "$C/log/mm.log" "job $ENDCHK ended" 60
expect "  storm acct -j $ENDCHK" 0 storm acct -j "$ENDCHK"
grep -qE "^ +$ENDCHK .* COMPLETED " "$T/out" && ok "  it ended COMPLETED after the restart" ||
	{ bad "  it ended COMPLETED after the restart"; cat "$T/out"; grep "job $ENDCHK" "$C/log/mm.log"; }

# ---- a node daemon dies under a job and is started again
mkfifo "$T/g"
storm run -N 4 sh -c 'echo "$$"; exec sleep 600' >"$T/g" 2>"$T/nd.err" &
RUN=$!
exec 8<"$T/g"
RANKPIDS=""
for i in 1 2 3 4; do read -r p <&8; RANKPIDS="$RANKPIDS $p"; done
kill9 node02
expect "storm cluster restart node02" 0 storm cluster restart node02 --dir "$C"
wait "$RUN"
rc=$?
exec 8<&-
[ $rc != 0 ] && grep -q "node02: the node daemon restarted" "$T/nd.err" &&
	ok "its job fails naming node02 (exit $rc)" || { bad "its job fails naming node02 (exit $rc)"; cat "$T/nd.err"; }
alive=""
for p in $RANKPIDS; do gone "$p" || alive="$alive $p"; done
[ -z "$alive" ] && ok "  none of its 4 rank processes is left (by pid)" ||
	bad "  rank processes left:$alive ($(ps -o pid,args -p ${alive// /,} | tail -n +2))"
storm cluster status --wait "$(patience 20)" >/dev/null && ok "  node02 is UP again" || bad "  node02 UP again"
expect "  and runs jobs on all 4 nodes" 0 storm run -N 4 true
expect "restart of a daemon that still runs is refused" 1 storm cluster restart node01 --dir "$C"
has "  ... saying so" err "still runs"

expect "cluster down" 0 storm cluster down --dir "$C"
echo "$checks checks, $fails failed"
[ $fails = 0 ]
