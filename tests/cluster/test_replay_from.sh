#!/bin/bash
# storm replay --from CHECKPOINT on a virtual 2-node cluster: a BCS-MPI job
# whose result depends on timing (rank 0 folds whom each MPI_ANY_SOURCE
# receive got and how many MPI_Test polls failed first) runs with storm run
# --record and is checkpointed twice while it holds at steps 4 and 8. Each
# checkpoint leaves its mark, every rank's outcome counts at that point, in
# the trace (storm trace --bcs shows it) and in the checkpoint's record
# (storm checkpoints --json). storm replay --from the second checkpoint
# restores it and forces the outcomes recorded after the mark: the replay
# starts at step 8 (rank 0's first line is "resumed at step 8", the library
# says its cursors start at the mark) and prints the recorded steps 8..11,
# poll counts included, and the recorded result. The trace travels with the
# restart: storm replay runs in a mount namespace of its own with TRACE on a
# tmpfs only it sees (where the nodes look, that directory is empty), and
# once more over TCP, where the trace's bytes go in the request; a replay
# queued when the MM is killed is taken up again by the restarted MM with
# the copy of the trace it kept, and completes. A
# checkpoint of another job, a trace without the checkpoint's mark, a
# deleted checkpoint, a missing TRACE, a file that is not a trace and a
# directory each get a one-line error. Synchronised on the job's lines,
# never on sleeps; every daemon is taken down on exit, pass or fail.
# Usage: test_replay_from.sh BUILD_BIN_DIR   (make cluster-replay_from)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-rfromtest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
bg=()

cleanup() {
	fail_report
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	touch "$T/gate.4" "$T/gate.8" "$T/other.2" 2>/dev/null
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
last_ckpt() { storm checkpoints --json | python3 -c 'import json,sys; print(max(k["id"] for k in json.load(sys.stdin)["checkpoints"]))'; }
# rank 0's lines (labelled "0: ") of FILE from the first containing FROM on
rank0_from() { sed -n 's/^0: //p' "$1" | sed -n "/$2/,\$p"; }

expect "bcs-mpicc ckptrace.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/ckptrace.c" -o "$T/ckptrace"
# a loaded machine can starve a daemon for a while: DOWN only after 5 s;
# the MM takes requests over TCP too (--hosts has its own ctl_address)
ctl_port=
[ "${STORM_HOSTS:-}" = 1 ] ||
	ctl_port="--ctl-port $(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
# test hook ckpt_exit_first=1: node00's daemon (rank 0's) hears checkpoint
# 1's helper only when it exits, as a loaded node may (rank 0's mark was
# then left out of the trace); checkpoint 2 takes the usual way
STORM_TEST_TAMPER=ckpt_exit_first=1 STORM_TEST_TAMPER_NODE=node00 \
	expect "cluster up (2 nodes, 2 ms slices)" 0 storm cluster up $UP_MODE --nodes 2 --dir "$C" --timeslice-us 2000 --down-after-ms 5000 $ctl_port
ADDR=$(sed -n 's/^ctl_address = //p' "$C/storm.conf")
cd "$T" || exit 1

# the recorded run, checkpointed while it holds at step 4 and at step 8
storm run -N 2 -n 4 -l --record rec.bcs ./ckptrace 12 4 8 "$T/gate" >rec.out 2>rec.err &
run=$!
bg+=("$run")
if wait_log rec.out "0: holding at step 4" 60; then ok "a recorded job holds at step 4"
else bad "no hold at step 4: $(tail -3 rec.err)"; fi
J=$(last_job)
expect "storm checkpoint $J at step 4" 0 storm checkpoint "$J"
CK1=$(last_ckpt)
expect "storm trace --bcs of it while it holds" 0 storm trace --bcs -o early.bcs "$J"
has "  the trace shows checkpoint $CK1's mark" err "checkpoint $CK1 marked: rank 0 at"
touch gate.4
if wait_log rec.out "0: holding at step 8" 60; then ok "  it goes on and holds at step 8"
else bad "  no hold at step 8: $(tail -3 rec.err)"; fi
expect "storm checkpoint $J at step 8" 0 storm checkpoint "$J"
CK2=$(last_ckpt)
touch gate.8
wait "$run"
rc=$?
if [ "$rc" = 0 ]; then ok "  the recorded job ends (exit 0)"; else bad "  storm run exit $rc: $(tail -3 rec.err)"; fi
cp rec.err err
has "  its trace holds every rank" err "trace is in rec.bcs: 4 ranks: 4 reached MPI_Finalize"
has "  with checkpoint $CK1's mark" err "checkpoint $CK1 marked"
has "  and checkpoint $CK2's" err "checkpoint $CK2 marked"
result=$(grep '^0: result ' rec.out)
if [ -n "$result" ]; then ok "  rank 0's result: ${result#0: }"; else bad "  no result line"; fi

# the marks: in the trace, per rank, and the same with the checkpoint's record
expect "storm trace --bcs --json" 0 storm trace --bcs --json -o again.bcs "$J"
cp out trace.json
expect "storm checkpoints --json" 0 storm checkpoints --json
cp out ckpts.json
if marks=$(python3 - "$CK1" "$CK2" <<'PY'
import json, sys
ck1, ck2 = int(sys.argv[1]), int(sys.argv[2])
ranks = json.load(open("trace.json"))["ranks"]
recs = {k["id"]: k for k in json.load(open("ckpts.json"))["checkpoints"]}
keys = ("wildcards", "tests", "waitany", "waitsome")
for ck in (ck1, ck2):
    stored = recs[ck].get("bcs_marks", [])
    assert len(stored) == 4 * len(ranks), "checkpoint %d's record: %r" % (ck, stored)
    for r in ranks:
        m = [m for m in r["marks"] if m["checkpoint"] == ck]
        assert len(m) == 1, "rank %d: marks %r" % (r["rank"], r["marks"])
        got = [m[0][k] for k in keys]
        assert got == stored[4 * r["rank"]:4 * r["rank"] + 4], (ck, r["rank"], got, stored)
m1 = [m for m in ranks[0]["marks"] if m["checkpoint"] == ck1][0]
m2 = [m for m in ranks[0]["marks"] if m["checkpoint"] == ck2][0]
# rank 0 took 3 wildcard receives a step: 12 by step 4, 24 by step 8
assert (m1["wildcards"], m2["wildcards"]) == (12, 24), (m1, m2)
assert 0 < m1["tests"] < m2["tests"] < ranks[0]["tests"], (m1, m2, ranks[0]["tests"])
print(m2["wildcards"], m2["tests"])
PY
); then ok "  every rank's mark of both checkpoints in the trace, the same in their records (rank 0 at step 8: $marks)"
else bad "  marks: $marks"; fi
read -r W2 T2 <<<"$marks"

# replay from the second checkpoint, the trace where storm replay alone sees
# it: a tmpfs in a mount namespace of its own. The nodes, in this one, find
# nothing at that path: each rank reads the copy the restart brought into
# its node's job directory.
mkdir only-cli
expect "storm replay --from $CK2, TRACE seen by the CLI alone" 0 \
	unshare --mount --propagation private sh -c \
	'mount -t tmpfs none "$1" && cp rec.bcs "$1/" && exec storm replay --from "$2" -l "$1/rec.bcs"' \
	sh "$T/only-cli" "$CK2"
[ ! -e only-cli/rec.bcs ] && ok "  the nodes' view of its path is empty" ||
	bad "  $T/only-cli/rec.bcs is seen outside the CLI's namespace"
cp out rep.out
cp err rep.err
first=$(sed -n 's/^0: //p' rep.out | head -1)
if [ "$first" = "resumed at step 8" ]; then ok "  it starts at the checkpoint: rank 0's first line is '$first'"
else bad "  rank 0's first line: '$first'"; fi
has "  rank 0's cursors start at the mark" err "storm replay: rank 0 replays from checkpoint $CK2: from wildcard #$((W2 + 1)), test #$((T2 + 1)),"
# its calls before the checkpoint: per step an MPI_Irecv (a wildcard) and
# its MPI_Test polls (test flags) for each other rank, then MPI_Barrier; so
# its calls go on from the one after the recorded ones (each checked
# against the trace's, so a number off by any would have diverged)
has "  and its calls go on from the checkpoint's" err "waitsome #1, call #$((W2 + T2 + 8 + 1))"
if diff <(rank0_from rec.out "resumed at step 8") <(rank0_from rep.out "resumed at step 8") >/dev/null; then
	ok "  rank 0 prints the recorded steps 8..11 (whom each receive got, the polls that failed) and result"
else bad "  rank 0's lines differ from the recorded run's:"
	diff <(rank0_from rec.out "resumed at step 8") <(rank0_from rep.out "resumed at step 8") | head -10 | sed 's/^/     | /'
fi
has "  the same result" out "$result"
# the same checkpoint restored onto one node: its 4 ranks share it; over
# TCP, which carries no descriptors, the trace's bytes go in the request
expect "storm replay --from $CK2 -N 1 over TCP ($ADDR)" 0 storm --mm "$ADDR" replay --from "$CK2" -N 1 -l rec.bcs
cp out rep1.out
if diff <(rank0_from rec.out "resumed at step 8") <(rank0_from rep1.out "resumed at step 8") >/dev/null; then
	ok "  on one node rank 0 prints the recorded steps 8..11 and result"
else bad "  on one node rank 0's lines differ from the recorded run's:"
	diff <(rank0_from rec.out "resumed at step 8") <(rank0_from rep1.out "resumed at step 8") | head -10 | sed 's/^/     | /'
fi
rjob=$(last_job)
shape=$(storm jobs --all --json | python3 -c 'import json,sys; print(*[(j["nodes"], j["ranks"]) for j in json.load(sys.stdin)["jobs"] if j["job"] == int(sys.argv[1])])' "$rjob")
[ "$shape" = "(1, 4)" ] && ok "  its 4 ranks on 1 node" || bad "  4 ranks on 1 node: $shape"

# what is refused: a checkpoint of another job, a trace without its mark
storm run -N 1 -n 2 -l ./ckptrace 4 2 100 "$T/other" >other.out 2>other.err &
run=$!
bg+=("$run")
if wait_log other.out "0: holding at step 2" 60; then ok "another job holds at step 2"
else bad "the other job: $(tail -3 other.err)"; fi
J2=$(last_job)
expect "storm checkpoint $J2" 0 storm checkpoint "$J2"
CK3=$(last_ckpt)
touch other.2
wait "$run"
expect "storm replay --from a checkpoint of another job" 1 storm replay --from "$CK3" rec.bcs
has "  says whose it is" err "storm replay: error: checkpoint $CK3 is of job $J2, not of the recorded job $J"
expect "storm replay --from with a trace taken before the checkpoint" 1 storm replay --from "$CK2" early.bcs
has "  says the trace has no mark for it" err "storm replay: error: early.bcs has no mark for checkpoint $CK2"
expect "storm replay --from a checkpoint id that is not one" 2 storm replay --from x rec.bcs
expect "storm replay --from with --stop" 2 storm replay --from "$CK2" --stop 0:5 rec.bcs
has "  says they do not go together" err "storm replay: error: --stop cannot be combined with --from"
# TRACE missing, not a trace, a directory: said in one line, nothing sent
expect "storm replay --from a TRACE that is not there" 1 storm replay --from "$CK2" gone.bcs
has_line "  names it and why" err "storm replay: error: cannot open gone.bcs: No such file or directory"
expect "storm replay --from a file that is not a trace" 1 storm replay --from "$CK2" rec.out
[ "$(wc -l <err)" = 1 ] && grep -q "^storm replay: error: rec.out: " err &&
	ok "  one line naming it: $(cat err)" || bad "  not one line naming rec.out: $(cat err)"
expect "storm replay --from a directory" 1 storm replay --from "$CK2" only-cli
has_line "  says it is not a trace" err "storm replay: error: only-cli: a directory, not a trace"
expect "storm replay --from an unknown checkpoint" 1 storm replay --from 999999 rec.bcs
has "  names it" err "storm replay: error: no checkpoint 999999"
# deleting a checkpoint keeps the job's record (a replay from the start
# needs it), and the checkpoint is gone for --from
expect "storm checkpoints --delete $CK1" 0 storm checkpoints --delete "$CK1"
expect "storm replay --from the deleted checkpoint" 1 storm replay --from "$CK1" rec.bcs
has "  says it is gone" err "storm replay: error: no checkpoint $CK1"
expect "storm traces" 0 storm traces
if grep -q "^$J " out; then ok "  the job's record is kept"; else bad "  the record of job $J is gone"; fi

# a restarted MM takes a queued replay up again with the copy of the trace
# it kept (the path it came from is still seen by the CLI alone): the
# restart waits behind a job whose transfer the test point transfer_hold
# holds after its first chunk, the MM is killed and started again
kill -9 "$(daemon_pid mm)"
gone "$(daemon_pid mm)"
expect "MM restarted with the transfer_hold test point" 0 \
	env STORM_TEST_TAMPER=transfer_hold=1 storm cluster restart mm --dir "$C"
head -c 9437184 /dev/urandom >big
expect "a job whose transfer is held" 0 storm submit -N 2 -n 2 -o held.out --file big /bin/true
HJ=$(last_job)
if wait_log "$C/log/mm.log" "test hook: job $HJ's transfer held" 30; then ok "  job $HJ's transfer is held"
else bad "  job $HJ's transfer held"; fi
unshare --mount --propagation private sh -c \
	'mount -t tmpfs none "$1" && cp rec.bcs "$1/" && exec storm replay --from "$2" "$1/rec.bcs"' \
	sh "$T/only-cli" "$CK2" >queued.out 2>queued.err &
run=$!
bg+=("$run")
if wait_log queued.err "queued" 60; then ok "storm replay --from $CK2 queued behind it: $(cat queued.err)"
else bad "storm replay --from $CK2 queued: $(cat queued.err)"; fi
RJ=$(sed -n 's/^storm: job \([0-9]*\) queued.*/\1/p' queued.err)
kill -9 "$(daemon_pid mm)"
gone "$(daemon_pid mm)"
expect "  MM killed and restarted" 0 storm cluster restart mm --dir "$C"
wait "$run"
grep -q "job $RJ restored from the database: QUEUED$" "$C/log/mm.log" &&
	ok "  job $RJ restored QUEUED, its trace with it" ||
	bad "  job $RJ restored QUEUED: $(grep "job $RJ restored" "$C/log/mm.log")"
if wait_log "$C/log/mm.log" "job $RJ ended" 120; then
	state=$(storm acct -j "$RJ" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])')
	[ "$state" = COMPLETED ] && ok "  job $RJ completed" || bad "  job $RJ ended $state: $(grep "job $RJ ended" "$C/log/mm.log")"
else bad "  job $RJ ended after the restart"; fi
RO=$(in_host mm "$T/storm-$RJ.out")
cp "$RO" restored.out 2>/dev/null
has "  its output file: resumed at step 8" restored.out "resumed at step 8"
has "  and the recorded result" restored.out "${result#0: }"

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
