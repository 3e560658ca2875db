#!/bin/bash
# storm run --record of BCS-MPI jobs that do not end well, on a virtual
# 4-node cluster: a rank that segfaults, a deadlock cancelled by storm
# cancel, a job stopped by its time limit, a node lost under a job. Each
# rank streams its outcomes to
# its node daemon as it makes them, so each run leaves a trace with every
# rank's outcomes up to the failure and how each rank ended; the machine
# manager keeps it (storm traces, storm trace --bcs); and storm replay of it
# reproduces the run up to the failure point: the same timing-dependent
# output (whom each wildcard receive got, how many MPI_Test polls failed),
# the same crash, the same deadlock, each rank whose recorded run ended held
# where it ended. Every daemon is taken down on exit, pass or fail.
# Usage: test_record.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-rectest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
bg=()

cleanup() {
	fail_report
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }

# same_run NAME REC REPLAY: every rank's lines of the replay's output are
# the recorded run's (labelled -l); a rank killed between its last outcome
# and its next line (a print after its last receive) may have one line more
# in the replay, which runs on to its first outcome past the record.
same_run() {
	if python3 - "$2" "$3" <<'PY'
import sys
def ranks(path):
    out = {}
    for line in open(path, errors="replace"):
        if ": " in line and line.split(": ", 1)[0].isdigit():
            r, text = line.split(": ", 1)
            out.setdefault(int(r), []).append(text)
    return out
rec, rep = ranks(sys.argv[1]), ranks(sys.argv[2])
ok = bool(rec.get(0)) and all(rep.get(r, [])[:len(v)] == v and len(rep.get(r, [])) <= len(v) + 1
                              for r, v in rec.items()) and set(rep) <= set(rec) | {0}
sys.exit(0 if ok else 1)
PY
	then ok "$1 ($(grep -c '^0: step' "$2") steps of rank 0)"; else
		bad "$1:"; diff "$2" "$3" | head -10 | sed 's/^/     | /'
	fi
}

# replay_on NODES NAME LINE: NAME.bcs, recorded on 4 nodes, replayed on
# NODES reaches LINE with the recorded outcomes (they are per rank, so any
# layout of the same ranks gives them); the replay is cancelled after
replay_on() {
	storm replay -N "$1" -l "$2.bcs" >"$2.on$1" 2>"$2.err$1" &
	local run=$! rjob
	bg+=("$run")
	if wait_log "$2.on$1" "$3" 60; then ok "its replay on $1 node(s) reaches '$3'"
	else bad "replay on $1 node(s): no '$3': $(tail -3 "$2.err$1")"; fi
	rjob=$(last_job)
	local shape
	shape=$(storm jobs --all --json | python3 -c 'import json,sys; print(*[(j["nodes"], j["ranks"]) for j in json.load(sys.stdin)["jobs"] if j["job"] == int(sys.argv[1])])' "$rjob")
	[ "$shape" = "($1, 4)" ] && ok "  4 ranks on $1 node(s)" || bad "  4 ranks on $1 node(s): $shape"
	same_run "  with the recorded wildcard matches and polls" "$2.out" "$2.on$1"
	storm cancel "$rjob" >/dev/null 2>&1
	wait "$run"
}

# ends FILE WANT: the trace's ranks ended as WANT says ("0:1 1:1 2:1 3:1":
# rank:end, end as docs/bcs-trace.md numbers them), and its rank 0 has
# wildcard entries and test flags (its outcomes up to the failure)
ends() {
	python3 - "$1" "$2" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return v, i
assert b[:4] == b"BCST"
i = 4
ver, i = varint(b, i); _, i = varint(b, i); ranks, i = varint(b, i)
job, i = varint(b, i)
argc, i = varint(b, i)
for _ in range(argc):
    n, i = varint(b, i); i += n
nsec, i = varint(b, i)
got, tests0, wild0 = [], 0, 0
for _ in range(nsec):
    n, i = varint(b, i); sec = b[i:i + n]; i += n
    rank, j = varint(sec, 0)
    nw, j = varint(sec, j)
    for _ in range(2 * nw): _, j = varint(sec, j)
    nr, j = varint(sec, j)
    runs = []
    for _ in range(nr):
        v, j = varint(sec, j); runs.append(v)
    for _ in range(2):
        c, j = varint(sec, j)
        for _ in range(c): _, j = varint(sec, j)
    end, j = varint(sec, j); status, j = varint(sec, j)
    got.append("%d:%d" % (rank, end))
    if rank == 0: tests0, wild0 = sum(runs), nw
print(" ".join(got), "rank0: %d wildcards, %d tests" % (wild0, tests0))
sys.exit(0 if ver == 4 and job > 0 and " ".join(got) == sys.argv[2] and wild0 > 0 and tests0 > 0 else 1)
PY
}

# polls_listed FILE: rank 0's MPI_Test calls in the trace's call list (storm
# replay --list) are as many as its test flags: the polls of a loop it was
# still in when it was stopped, which its daemon took from the channel at
# its end, included. A call is listed as it begins and its flag once
# decided, so a rank killed inside its last MPI_Test has one call more
polls_listed() {
	local flags calls last
	flags=$(ends "$1" "" | sed -n 's/.*wildcards, \([0-9]*\) tests/\1/p')
	read -r calls last < <(storm replay --list 0 --json "$1" | python3 -c 'import json,sys; c = json.load(sys.stdin)["calls"]; print(sum(x["last"] - x["call"] + 1 for x in c if x["function"] == "MPI_Test"), c[-1]["function"] if c else "-")')
	if [ -n "$flags" ] && [ "$flags" = "$calls" ]; then ok "  its call list has rank 0's $calls MPI_Test polls"
	elif [ -n "$flags" ] && [ "$last" = MPI_Test ] && [ "$((flags + 1))" = "$calls" ]; then
		ok "  its call list has rank 0's $flags MPI_Test polls and the one it was killed in"
	else bad "  rank 0's call list has $calls MPI_Test polls (the last call $last), its flags $flags"; fi
}

expect "bcs-mpicc failing.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/failing.c" -o "$T/failing"
# a loaded machine can starve a daemon for a while: DOWN only after 5 s
expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up $UP_MODE --nodes 4 --dir "$C" --timeslice-us 2000 --down-after-ms 5000
cd "$T" || exit 1

# (a) a rank that segfaults; the others wait for it until the job is
# cancelled. Before, the trace held no rank (none reached MPI_Finalize,
# where each handed its part over).
storm run -N 4 -n 4 -l --record crash.bcs ./failing crash 6 >crash.out 2>crash.err &
run=$!
bg+=("$run")
if wait_log crash.out "1: rank 1 crashes at step 6" 60; then ok "a recorded job's rank 1 segfaults at step 6"
else bad "no crash line: $(tail -3 crash.err)"; fi
crash_job=$(last_job)
# its node saw it end: the rest wait for it, in vain
if wait_log "$C/log/node01.log" "job $crash_job done" 60; then ok "  node01 reports rank 1's end"
else bad "  node01 never saw rank 1 end"; fi
expect "  cancel the others" 0 storm cancel "$crash_job"
wait "$run"
rc=$?
if [ "$rc" != 0 ]; then ok "  storm run ends (exit $rc)"; else bad "  storm run exit 0 for a cancelled job"; fi
cp crash.err "$T/err"
has "  says the trace holds every rank" err "trace is in crash.bcs: 4 ranks: 4 ended without MPI_Finalize"
has "  and how rank 1 ended" err "(rank 1: signal 11)"
if r=$(ends crash.bcs "0:1 1:1 2:1 3:1"); then ok "  the file has every rank's outcomes ($r)"; else bad "  the file: $r"; fi
expect "storm trace --bcs --json of it" 0 storm trace --bcs --json -o again.bcs "$crash_job"
has "  rank 1's end and wait status" out '"wait_status": 11'
if cmp -s crash.bcs again.bcs; then ok "  the same trace as --record wrote"; else bad "  differs from --record's"; fi
storm replay -l crash.bcs >crash.replay 2>crash.rerr &
run=$!
bg+=("$run")
if wait_log crash.replay "1: rank 1 crashes at step 6" 60; then ok "its replay crashes rank 1 at step 6 again"
else bad "replay: no crash line: $(tail -3 crash.rerr)"; fi
rjob=$(last_job)
if wait_log "$C/log/node01.log" "job $rjob done" 60; then ok "  rank 1 ends there"
else bad "  rank 1 did not end"; fi
same_run "  with the recorded wildcard matches and polls" crash.out crash.replay
expect "  cancel the replay" 0 storm cancel "$rjob"
wait "$run"
replay_on 1 crash "1: rank 1 crashes at step 6"
replay_on 2 crash "1: rank 1 crashes at step 6"
expect "storm replay -N 0" 2 storm replay -N 0 crash.bcs
has "  says what it wants" err "--nodes wants a count of nodes, not '0'"
expect "storm replay -N 5 of a 4-rank trace" 2 storm replay -N 5 crash.bcs
has "  says why" err "--nodes 5: the job had 4 ranks"

# (b) a deadlock, cancelled
storm run -N 4 -n 4 -l --record hang.bcs ./failing hang 4 >hang.out 2>hang.err &
run=$!
bg+=("$run")
if wait_log hang.out "1: rank 1 waits forever at step 4" 60; then ok "a recorded job deadlocks at step 4"
else bad "no deadlock line: $(tail -3 hang.err)"; fi
hang_job=$(last_job)
expect "storm cancel of it" 0 storm cancel "$hang_job"
wait "$run"
rc=$?
if [ "$rc" != 0 ]; then ok "  storm run ends (exit $rc)"; else bad "  storm run exit 0 for a cancelled job"; fi
cp hang.err "$T/err"
has "  its trace holds every rank" err "trace is in hang.bcs: 4 ranks: 4 ended without MPI_Finalize"
if r=$(ends hang.bcs "0:1 1:1 2:1 3:1"); then ok "  the file has every rank's outcomes ($r)"; else bad "  the file: $r"; fi
polls_listed hang.bcs
storm replay -l hang.bcs >hang.replay 2>hang.rerr &
run=$!
bg+=("$run")
if wait_log hang.rerr "storm replay: rank 0 reached the end of its recorded run at MPI_Test" 60; then
	ok "its replay holds rank 0 where the recorded run ended, polling the receive that never came"
else bad "replay of the deadlock: no hold line: $(tail -3 hang.rerr)"; fi
if wait_log hang.replay "1: rank 1 waits forever at step 4" 60; then ok "  rank 1 waits in the same deadlock"
else bad "  rank 1 not in the deadlock: $(tail -3 hang.replay)"; fi
same_run "  with the recorded wildcard matches and polls" hang.out hang.replay
expect "  cancel the replay" 0 storm cancel "$(last_job)"
wait "$run"
replay_on 1 hang "1: rank 1 waits forever at step 4"

# (c) a time limit
expect "a recorded job stopped by its time limit (3 s)" 143 storm run -N 4 -n 4 -l --time 0:3 --record time.bcs ./failing forever
cp "$T/out" time.out
has "  its trace holds every rank" err "trace is in time.bcs: 4 ranks: 4 ended without MPI_Finalize"
if r=$(ends time.bcs "0:1 1:1 2:1 3:1"); then ok "  the file has every rank's outcomes ($r)"; else bad "  the file: $r"; fi
polls_listed time.bcs
storm replay -l time.bcs >time.replay 2>time.rerr &
run=$!
bg+=("$run")
if wait_log time.rerr "storm replay: rank 0 reached the end of its recorded run" 60; then
	ok "its replay holds rank 0 where the recorded run was stopped"
else bad "replay of the time limit: no hold line: $(tail -3 time.rerr)"; fi
same_run "  with the recorded wildcard matches and polls" time.out time.replay
expect "  cancel the replay" 0 storm cancel "$(last_job)"
wait "$run"

# (d) a node lost: node03's daemon killed under a recorded job. Its rank
# has what node03 reported before; the trace says the node was lost.
if [ "${STORM_HOSTS:-}" != 1 ]; then
storm run -N 4 -n 4 -l --record lost.bcs ./failing forever >lost.out 2>lost.err &
run=$!
bg+=("$run")
if wait_log lost.out "0: step 3:" 60; then ok "a recorded job runs on 4 nodes"; else bad "no step 3: $(tail -3 lost.err)"; fi
# node03's daemon, and its rank (left behind by the daemon's death: ended
# by its pid below)
nd=$(awk '$2 == "node03" { print $1 }' "$C/pids")
orphans=()
jobdir="STORM_JOB_DIR=$(node_state node03)/jobs/$(last_job)"
# one grep over every environment (a process per /proc entry took minutes
# on a loaded machine)
for f in $(grep -lzxF "$jobdir" /proc/[0-9]*/environ 2>/dev/null); do
	f=${f#/proc/}
	orphans+=("${f%/environ}")
done
[ "${#orphans[@]}" -gt 0 ] || bad "  node03's rank not found"
kill -9 "$nd"
wait "$run"
rc=$?
for p in "${orphans[@]}"; do kill -9 "$p" 2>/dev/null; done
if [ "$rc" != 0 ]; then ok "  the job fails when node03 is lost (exit $rc)"; else bad "  exit 0"; fi
cp lost.err "$T/err"
has "  its trace says so" err "1 was on a node that was lost"
if r=$(ends lost.bcs "0:1 1:1 2:1 3:2"); then ok "  rank 3's section says its node was lost ($r)"; else bad "  the file: $r"; fi
fi

# the records stay in the machine manager's database until deleted
expect "storm traces" 0 storm traces
has "  lists the crashed job's record" out "$crash_job "
expect "storm traces --json" 0 storm traces --json
has "  as JSON" out "\"job\": $crash_job"
expect "storm traces --delete" 0 storm traces --delete "$crash_job"
if grep -q "^$crash_job " "$T/out"; then bad "  still listed"; else ok "  no longer listed"; fi
expect "storm trace --bcs of a deleted record" 1 storm trace --bcs -o gone.bcs "$crash_job"
has "  says why" err "job $crash_job has no BCS-MPI record"
expect "storm traces --delete of a job without one" 1 storm traces --delete 999999
expect "storm traces with an operand" 2 storm traces 12

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
