#!/bin/bash
# A Slurm user's day on a 4-node virtual cluster, through the real CLI: batch
# scripts with #SBATCH/#STORM directives and steps, storm alloc, steps
# gang-scheduled with their allocation, dependencies, arrays with a limit,
# --export, jobs -o and acct --format. Synchronised on the CLI's own waits
# and on output lines, not on sleeps; every daemon is taken down on exit.
# Usage: test_slurm.sh BUILD_BIN_DIR
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/storm-slurmtest.XXXXXX)
MARK=storm-slurmtest-${T##*.}-marker
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
. "$HERE/lib.sh"
fails=0 checks=0
BG=""

cleanup() {
	for p in $BG; do kill -9 "$p" 2>/dev/null; done
	pkill -9 -f "$MARK" 2>/dev/null
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1

# wait_ended JOBID: until the job has ended, at most 60 s: the MM's own
# dependency wakes a waiting submission when it ends
wait_ended() {
	timeout 60 storm submit --wait -d "afterany:$1" -o /dev/null true >/dev/null 2>&1
}
# acct_field JOBID FIELD: one field of one job in storm acct --json
acct_field() {
	storm acct --json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["jobid"] == sys.argv[1]:
        print(j[sys.argv[2]])' "$1" "$2"
}

MPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect "cluster up with 4 nodes, MPL 2, metrics on" 0 storm cluster up --nodes 4 --mpl 2 \
	--metrics-port "$MPORT" --dir "$C"

expect "bcs-mpicc ring.c" 0 bcs-mpicc -O2 "$HERE/mpi/ring.c" -o "$T/ring"

# ---- a batch script: directives, steps, the output file
cat >"$T/job.sh" <<'EOF'
#!/bin/bash
#SBATCH --nodes=2 --mem=4G
#SBATCH -J from-sbatch
#STORM -t 5 -o script-%j.out
# a comment between directives

echo "script on $STORM_NODENAME of $STORM_JOB_NUM_NODES: $STORM_JOB_NODELIST"
storm run -l sh -c 'echo "step $STORM_JOBID.$STORM_STEPID rank $STORM_RANK on $STORM_NODENAME"'
storm run -N 1 -n 3 sh -c 'echo "second $STORM_JOBID.$STORM_STEPID $STORM_RANK"'
#SBATCH -N 4
echo done
EOF
chmod 644 "$T/job.sh" # sbatch runs a script without its x bit
expect "storm submit of a batch script" 0 storm submit --wait --parsable -J from-cli job.sh
id=$(head -1 "$T/out")
has "  an #SBATCH option storm does not have is a warning naming the line" err \
	"storm submit: warning: job.sh:2: --mem ignored: storm does not have it"
out="$T/script-$id.out"
has "  the script ran once, on the first node, seeing its allocation" "script-$id.out" \
	"script on node00 of 2: node[00-01]"
[ "$(grep -c '^script on' "$out")" = 1 ] && ok "  exactly once" || bad "  exactly once"
for r in 0 1; do
	has "  step 0 rank $r on its node" "script-$id.out" "$r: step $id.0 rank $r on node0$r"
done
[ "$(grep -c "^second $id.1 " "$out")" = 3 ] && ok "  step 1: 3 ranks on one node" ||
	{ bad "  step 1: 3 ranks on one node"; cat "$out"; }
has "  directives end at the first command (#SBATCH -N 4 after it is not read)" \
	"script-$id.out" "done"
expect "  acct lists the allocation and its steps" 0 storm acct --format=JobID,JobName,State,NNodes
for want in "^$id +from-cli +COMPLETED +2$" "^$id\\.batch +batch +COMPLETED +1$" \
	"^$id\\.0 +sh +COMPLETED +2$" "^$id\\.1 +sh +COMPLETED +1$"; do
	grep -Eq "$want" "$T/out" && ok "  acct: $want" || { bad "  acct: $want"; cat "$T/out"; }
done
# sacct -j JOB: the job, its script's shell (JOB.batch, on the first node),
# then its steps, in that order, each with its state, exit code and elapsed time
expect "  acct -j $id lists the job, JOB.batch and its steps" 0 \
	storm acct -j "$id" --format=JobID,JobName,State,NNodes,NodeList,ExitCode
sed 1d "$T/out" | awk '{ print $1, $2, $3, $4, $5, $6 }' >"$T/steps"
printf '%s\n' "$id from-cli COMPLETED 2 node[00-01] 0" "$id.batch batch COMPLETED 1 node00 0" \
	"$id.0 sh COMPLETED 2 node[00-01] 0" "$id.1 sh COMPLETED 1 node00 0" | diff - "$T/steps" &&
	ok "  ... in order, with states, node lists and exit codes" || { bad "  ... in order"; cat "$T/out"; }
expect "  acct -j $id (the default columns)" 0 storm acct -j "$id"
[ "$(sed 1d "$T/out" | awk '{ print $1 }' | tr '\n' ' ')" = "$id $id.batch $id.0 $id.1 " ] &&
	ok "  ... the job and its 3 steps" || { bad "  ... the job and its 3 steps"; cat "$T/out"; }
storm acct -j "$id" --json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"]
want = [sys.argv[1] + s for s in ("", ".batch", ".0", ".1")]
assert [e["jobid"] for e in j] == want, [e["jobid"] for e in j]
assert all(e["state"] == "COMPLETED" and e["exit_status"] == 0 for e in j), j
assert all(e["elapsed"] > 0 and e["start_time"] > 0 for e in j), j
assert j[1]["nodelist"] == "node00" and j[1]["ranks"] == 1, j[1]
' "$id" && ok "  acct -j --json: the same, with elapsed times" || bad "  acct -j --json: the job and its steps"
expect "  acct -j $id.batch: the script's line only" 0 storm acct -j "$id.batch" --format=JobID,State
[ "$(sed 1d "$T/out" | awk '{ print $1 }')" = "$id.batch" ] && ok "  ... one line" ||
	{ bad "  ... one line"; cat "$T/out"; }
expect "  acct -j $id.1: that step only" 0 storm acct -j "$id.1" --format=JobID,State
[ "$(sed 1d "$T/out" | awk '{ print $1 }')" = "$id.1" ] && ok "  ... one line" ||
	{ bad "  ... one line"; cat "$T/out"; }
# a failing script: its .batch line fails with the script's status
printf '#!/bin/sh\nstorm run -n 1 true\nexit 3\n' >"$T/fail.sh"
expect "a batch script that exits 3" 3 storm submit --wait --parsable fail.sh
fid=$(head -1 "$T/out")
expect "  acct -j $fid" 0 storm acct -j "$fid" --format=JobID,State,ExitCode
sed 1d "$T/out" | awk '{ print $1, $2 }' >"$T/steps"
printf '%s\n' "$fid FAILED" "$fid.batch FAILED" "$fid.0 COMPLETED" | diff - "$T/steps" &&
	ok "  ... FAILED, its batch line FAILED, its step COMPLETED" || { bad "  ... the failed script's lines"; cat "$T/out"; }

printf '#!/bin/sh\n#STORM --mem=4G\necho x\n' >"$T/bad.sh"
expect "an unknown option on a #STORM line is an error" 2 storm submit bad.sh
has "  ... naming the file and line" err "bad.sh:2:"
printf '#!/bin/sh\n#STORM -J "open\necho x\n' >"$T/quote.sh"
expect "an open quote in a directive" 2 storm submit quote.sh
has "  ... named" err "quote.sh: line 2: unbalanced quotes"

# ---- steps run only in their allocation's turn of the matrix
# allocation A holds both nodes of row 0; a job B takes row 1 on the same
# nodes: A's step runs only in A's turns, never beside B. What each node
# daemon ran, and when, is read from the jobs' traces once
# both ended (sampling the ranks' states from outside cannot tell a rank
# that runs from one whose stop is pending while it waits for a core)
start_bg alloc storm alloc -N 2 -J holder sh -c \
	"storm run -N 2 sh -c 'echo stepup; while :; do :; done # $MARK-A'"
wait_log "$T/alloc.err" "granted job allocation" 30 && ok "storm alloc: granted" ||
	bad "storm alloc: granted"
read -r line <&7
[ "$line" = stepup ] && ok "  its step runs" || bad "  its step runs ('$line')"
spin_b=$(storm submit --parsable -N 4 -o "$T/b.out" sh -c "echo bup; while :; do :; done # $MARK-B")
wait_log "$T/b.out" bup 60 >/dev/null && ok "  a 4-node job in the other row runs too" ||
	bad "  the other row's job never ran"
alloc_id=$(storm jobs --json | python3 -c '
import json, sys
print([j["job"] for j in json.load(sys.stdin)["jobs"] if j["name"] == "holder"][0])')
expect "  jobs shows the step as ALLOC.0" 0 storm jobs -o JobID,JobName,State
grep -Eq "^$alloc_id\\.0 +sh " "$T/out" && ok "  $alloc_id.0 listed" || { bad "  $alloc_id.0 listed"; cat "$T/out"; }
# storm alloc stands still while the allocation is cancelled and its
# command, the step's client, ends with it: when it runs again both that end
# and the MM's word are there to read, and the revocation is what happened
step_client=$(pgrep -P "$BGPID" | head -1)
kill -STOP "$BGPID"
expect "  cancelling the allocation" 0 storm cancel "$alloc_id"
for _ in $(seq 600); do
	[ "$(awk '{ print $3 }' "/proc/$step_client/stat" 2>/dev/null)" = Z ] && break
	sleep 0.1
done
kill -CONT "$BGPID"
wait_bg "$BGPID" 60 "storm alloc of a cancelled allocation"
exec 7<&-
has "  storm alloc says the allocation was revoked" alloc.err "job allocation $alloc_id revoked"
wait_ended "$alloc_id.0" || bad "  the step ended within 60 s"
[ "$(acct_field "$alloc_id.0" state)" = CANCELLED ] && ok "  its step went with it" ||
	bad "  its step went with it ($(acct_field "$alloc_id.0" state))"
storm acct -j "$alloc_id.0" --json | grep -q "its allocation $alloc_id ended" &&
	ok "  the step's reason names its allocation" || bad "  the step's reason names its allocation"
expect "  acct -j ALLOC: the allocation and its step, no batch line (storm alloc runs no script)" 0 \
	storm acct -j "$alloc_id" --format=JobID,State
[ "$(sed 1d "$T/out" | awk '{ print $1 }' | tr '\n' ' ')" = "$alloc_id $alloc_id.0 " ] && ok "  ... $alloc_id, $alloc_id.0" ||
	{ bad "  ... $alloc_id, $alloc_id.0"; cat "$T/out"; }
storm cancel "$spin_b" >/dev/null 2>&1
wait_ended "$spin_b" || bad "  job $spin_b ended within 60 s"
storm trace -o "$T/step.json" "$alloc_id.0" >/dev/null 2>&1
storm trace -o "$T/b.json" "$spin_b" >/dev/null 2>&1
if turns=$(python3 - "$T/step.json" "$T/b.json" <<'PY'
import json, sys
def turns(path):
    doc = json.load(open(path))
    ev, t0 = doc["traceEvents"], doc["otherData"]["t0_unix_us"]  # each trace's own origin
    pid = [e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"
           and e["args"]["name"] == "node00"][0]
    return [(t0 + e["ts"], t0 + e["ts"] + e["dur"], e["args"]["row"]) for e in ev
            if e.get("ph") == "X" and e["pid"] == pid and "row" in e.get("args", {})]
a, b = turns(sys.argv[1]), turns(sys.argv[2])
assert a and b, ("no turns", len(a), len(b))
# a job's row can change in its life (backfilled into a free row while
# alone, moved down once a lower row empties): what must hold is time
both = [(x, y) for x in a for y in b if x[0] < y[1] and y[0] < x[1]]
assert not both, ("at once", both[:3])
print(len(a), "turns of the step and", len(b), "of the other job")
PY
); then ok "  on node00 the step and the other row's job never ran at once ($turns)"
else bad "  the step's turns on node00: $turns"; fi
storm cancel "$(storm jobs --json | python3 -c 'import json,sys; print(" ".join(str(j["job"]) for j in json.load(sys.stdin)["jobs"]))')" >/dev/null 2>&1

expect "storm alloc runs its command with the allocation and exits with its status" 3 \
	storm alloc -N 2 sh -c 'storm run -n 4 sh -c "echo \$STORM_JOBID.\$STORM_STEPID"; exit 3'
[ "$(grep -c '^[0-9]*\.0$' "$T/out")" = 4 ] && ok "  the step's 4 ranks" || { bad "  the step's 4 ranks"; cat "$T/out" "$T/err"; }
has "  relinquished" err "relinquishing job allocation"
expect "a step asking more nodes than its allocation" 1 storm alloc -N 1 storm run -N 2 true
has "  ... is refused, saying why" err "2 nodes requested but allocation"
expect "storm run where STORM_JOBID is not an allocation" 1 \
	storm run -n 1 sh -c 'storm run -n 1 true'
has "  ... is refused, saying why" err "is not an allocation"

# ---- a step is checkpointed, and restarted from it, like any job
mkdir -p "$T/w" && cd "$T/w" || exit 1
# its ranks hold after step 30 until gate.30 exists: still running when
# checkpointed and cancelled, however slow the machine (so 1 ms a step
# will do: each spins on the clock, and the restart runs the other 970)
CK="$BIN/ckpt_prog 1000 4 out%r.f 1 hold 30"
STORM_RANK=0 $BIN/ckpt_prog 1000 4 ref%r.f 1 >ref.out || bad "ckpt_prog reference run"
storm alloc -N 2 storm run -N 2 -n 2 $CK >ck.out 2>ck.err &
BG="$BG $!"
ckpid=$!
wait_log ck.out "step 30 " 30 || bad "the step reached step 30"
ck_alloc=$(storm jobs --json | python3 -c '
import json, sys
print([j["allocation"] for j in json.load(sys.stdin)["jobs"] if "allocation" in j][0])')
expect "storm checkpoint ALLOC.0" 0 storm checkpoint "$ck_alloc.0"
grep -Eq "^checkpoint [0-9]+ of job $ck_alloc\.0 " "$T/out" && ok "  names the step" ||
	{ bad "  names the step"; cat "$T/out" "$T/err"; }
ck_id=$(sed -n 's/^checkpoint \([0-9]*\) .*/\1/p' "$T/out")
expect "checkpoint of the allocation itself is refused" 1 storm checkpoint "$ck_alloc"
has "  ... saying to checkpoint its steps" err "is an allocation; checkpoint its steps"
storm cancel "$ck_alloc" >/dev/null
wait_bg "$ckpid" 60 "storm alloc of a cancelled allocation"
wait_ended "$ck_alloc.0" || bad "  the step ended with its allocation"
: >gate.30
expect "storm restart of the step's checkpoint" 0 storm restart "$ck_id"
[ "$(tail -1 "$T/out")" = "$(tail -1 ref.out)" ] && ok "  ends as an uninterrupted run" ||
	{ bad "  ends as an uninterrupted run"; tail -n 2 "$T/out" ref.out; }
cd "$T" || exit 1

# ---- a Slurm user's script (docs/batch.md): an array of allocations, each
# with a time limit and three steps; #SBATCH kept, srun -> storm run
cat >"$T/sweep.sh" <<'EOF'
#!/bin/bash
#SBATCH --job-name=sweep
#SBATCH --nodes=2
#SBATCH --ntasks=4
#SBATCH --time=00:05:00
#SBATCH --array=0-2%2
#SBATCH --output=sweep-%A_%a.out
#SBATCH --mem=1G
#SBATCH --partition=compute

set -e
case_dir=case-$STORM_ARRAY_TASK_ID
storm run -N 2 -n 2 sh -c "echo prepare $case_dir \$STORM_RANK"
storm run -n 4 sh -c 'echo solve $STORM_RANK of $STORM_SIZE'
storm run -N 1 -n 1 sh -c "echo post $case_dir"
EOF
sweep=$(storm submit --parsable sweep.sh 2>"$T/sweep.err")
[ -n "$sweep" ] && ok "the Slurm script submitted as array $sweep" || bad "the Slurm script submitted"
grep -q "sweep.sh:9: -p compute ignored: storm's one partition is" "$T/sweep.err" && ok "  --partition ignored, said so" ||
	{ bad "  --partition warning"; cat "$T/sweep.err"; }
storm submit --wait -d "afterany:$sweep" -o /dev/null true >/dev/null
allok=1
for t in 0 1 2; do
	f="$T/sweep-${sweep}_$t.out"
	[ "$(grep -c "^prepare case-$t [01]$" "$f" 2>/dev/null)" = 2 ] || allok=0
	[ "$(grep -c '^solve [0-3] of 4$' "$f" 2>/dev/null)" = 4 ] || allok=0
	grep -q "^post case-$t$" "$f" 2>/dev/null || allok=0
done
[ $allok = 1 ] && ok "  every task ran its three steps" || { bad "  every task's steps"; cat "$T"/sweep-*.out; }
[ "$(storm acct --json | python3 -c '
import json, sys
j = json.load(sys.stdin)["jobs"]
tasks = [x for x in j if x["jobid"].startswith(sys.argv[1] + "_") and not x["batch"]]
scripts = [x for x in j if x["jobid"].startswith(sys.argv[1] + "_") and x["batch"]]
ids = {str(t["job"]) for t in tasks}
steps = [x for x in j if "." in x["jobid"] and x["jobid"].split(".")[0] in ids]
print(len(tasks), len(scripts), len(steps),
      all(x["state"] == "COMPLETED" for x in tasks + scripts + steps))' "$sweep")" = "3 3 9 True" ] &&
	ok "  acct: 3 tasks, their 3 batch lines (ARRAY_TASK.batch), 9 steps, all COMPLETED" ||
	{ bad "  acct of the array's tasks and steps"; storm acct -o JobID,State; }

# ---- docs/batch.md's Slurm script itself, unchanged (its #SBATCH lines, srun
# steps and SLURM_* variables), submitted by Slurm's sbatch on storm: ten
# tasks of 4 nodes, each of three steps. Its programs write what each task
# saw; post counts it into the summary the script keeps.
SBIN=$(cd "$BIN/../lib/storm/slurm/bin" && pwd)
mkdir -p "$T/doc"
awk '/^```bash$/ { n++; if (n == 1) { f = 1; next } } /^```$/ { f = 0 } f' \
	"$HERE/../../docs/batch.md" >"$T/doc/sweep.sh"
grep -q '^srun -n 16 ./solver "$case_dir"$' "$T/doc/sweep.sh" && ok "docs/batch.md's Slurm script" ||
	{ bad "docs/batch.md's Slurm script"; cat "$T/doc/sweep.sh"; }
printf '#!/bin/sh\nmkdir -p "$1" && echo "$SLURM_NODEID" >"$1/prep.$SLURM_PROCID"\n' >"$T/doc/prepare"
printf '#!/bin/sh\necho "$SLURM_PROCID of $SLURM_NTASKS" >"$1/solve.$SLURM_PROCID"\n' >"$T/doc/solver"
printf '#!/bin/sh\necho "$1 of $SLURM_ARRAY_JOB_ID: prepared on $(cat "$1"/prep.* | sort -u | tr -d "\\n") solved $(cat "$1"/solve.* | grep -c " of 16$")"\n' >"$T/doc/post"
chmod +x "$T/doc/prepare" "$T/doc/solver" "$T/doc/post"
cd "$T/doc" || exit 1
expect "  sbatch sweep.sh, Slurm's commands on PATH" 0 env PATH="$SBIN:$PATH" sbatch --parsable sweep.sh
cd "$T" || exit 1
dsw=$(cat "$T/out")
has "  --mem ignored, said so naming its line" err "sweep.sh:8: --mem ignored"
has "  --partition=compute ignored" err "sweep.sh:9: -p compute ignored"
timeout "$(patience 150)" storm submit --wait -d "afterany:$dsw" -o /dev/null true >/dev/null
allok=1
for t in 0 1 2 3 4 5 6 7 8 9; do
	[ "$(cat "$T/doc/case-$t/summary.txt" 2>/dev/null)" = \
		"case-$t of $dsw: prepared on 0123 solved 16" ] || allok=0
done
[ $allok = 1 ] && ok "  ten tasks: srun -N 4 -n 4 a task a node, srun -n 16, post's summary" ||
	{ bad "  ten tasks' summaries"; head -n 3 "$T"/doc/case-*/summary.txt "$T"/doc/sweep-*.out; }
expect "  sacct -X -j ARRAY" 0 env PATH="$SBIN:$PATH" sacct -X -P -n --format=JobID,State -j "$dsw"
[ "$(grep -c "^${dsw}_[0-9]|COMPLETED$" "$T/out")" = 10 ] && ok "  ten tasks COMPLETED" ||
	{ bad "  ten tasks COMPLETED"; cat "$T/out"; }

# ---- --record and replay of a step
expect "a BCS-MPI step recorded inside storm alloc" 0 storm alloc -N 2 \
	storm run --record "$T/step.rec" -n 4 "$T/ring"
cp "$T/out" "$T/step.out"
expect "  storm replay of it" 0 storm replay "$T/step.rec"
sort "$T/out" >"$T/replay.sorted"
sort "$T/step.out" >"$T/step.sorted"
cmp -s "$T/replay.sorted" "$T/step.sorted" && ok "  the replay's output is the step's" ||
	{ bad "  the replay's output is the step's"; diff "$T/step.sorted" "$T/replay.sorted" | head; }

# ---- dependencies
a=$(storm submit --parsable -N 1 -o /dev/null sh -c 'exit 1')
ok_id=$(storm submit --parsable -d "afterok:$a" -o "$T/afterok.out" echo ran)
notok=$(storm submit --parsable -d "afternotok:$a" -o "$T/afternotok.out" echo ran)
any=$(storm submit --parsable --wait -d "afterany:$a,afternotok:$a" -o "$T/afterany.out" echo ran)
has "afterany waited for the failed job and ran" afterany.out ran
storm submit --wait -d "afterany:$notok" -o /dev/null true >/dev/null
[ "$(acct_field "$notok" state)" = COMPLETED ] && ok "afternotok of a failed job ran" ||
	bad "afternotok of a failed job ran"
[ "$(acct_field "$ok_id" state)" = CANCELLED ] && ok "afterok of a failed job never runs" ||
	bad "afterok of a failed job never runs ($(acct_field "$ok_id" state))"
storm acct -j "$ok_id" --json | grep -q "afterok:$a can never hold" && ok "  ... saying why" ||
	bad "  ... saying why"
grep -q '^ran$' "$T/afterok.out" && bad "  ... and it did not run" || ok "  ... and it did not run"
expect "a dependency on a job that never was" 1 storm submit -d afterok:99999 true
has "  ... is refused" err "no such job"
expect "a malformed dependency" 2 storm submit -d before:3 true
has "  ... is a usage error naming it" err "'before' is not after, afterok, afterany or afternotok"
start_bg dep storm run -n 1 sh -c "echo first; exec sleep 600 # $MARK"
read -r line <&7
first=$(storm jobs --json | python3 -c 'import json,sys; print([j["job"] for j in json.load(sys.stdin)["jobs"] if j["state"] in ("RUNNING","SUSPENDED")][0])')
expect "after: starts once the job it names runs" 0 timeout 60 storm run -d "after:$first" echo after-ran
has "  ... and ran" out after-ran
storm cancel "$first" >/dev/null
wait_bg "$BGPID" 60 "storm run of a cancelled job" 2>/dev/null
exec 7<&-

# ---- arrays
arr=$(storm submit --parsable --array=0-5%2 -o "$T/arr-%A_%a.out" sh -c \
	'echo "start $(date +%s.%N)"; echo "task $STORM_ARRAY_TASK_ID of $STORM_ARRAY_JOB_ID"; sleep 0.5; echo "end $(date +%s.%N)"')
storm submit --wait -d "afterany:$arr" -o /dev/null true >/dev/null
allok=1
for t in 0 1 2 3 4 5; do
	grep -q "^task $t of $arr$" "$T/arr-${arr}_$t.out" 2>/dev/null || allok=0
done
[ $allok = 1 ] && ok "an array of 6: each task its id, %A_%a in its output name" ||
	{ bad "an array of 6"; ls "$T"; }
most=$(cat "$T"/arr-"$arr"_*.out | python3 -c '
import sys
ev = []
for l in sys.stdin:
    k, _, t = l.partition(" ")
    if k in ("start", "end"):
        ev.append((float(t), 1 if k == "start" else -1))
run = most = 0
for _, d in sorted(ev, key=lambda e: (e[0], e[1])):
    run += d; most = max(most, run)
print(most)')
[ "$most" -le 2 ] && ok "  %2: at most 2 tasks ran at once ($most)" || bad "  %2: at most 2 tasks ran at once ($most)"
expect "  acct lists ARRAY_TASK ids" 0 storm acct --format=JobID,State
[ "$(grep -Ec "^${arr}_[0-5] +COMPLETED" "$T/out")" = 6 ] && ok "  all 6 COMPLETED" || { bad "  all 6 COMPLETED"; cat "$T/out"; }
arr=$(storm submit --parsable --array=1-4 -N 4 -o /dev/null sh -c "exec sleep 600 # $MARK")
expect "cancel one task of an array" 0 storm cancel "${arr}_3"
[ "$(acct_field "${arr}_3" state)" = CANCELLED ] && ok "  that task CANCELLED" || bad "  that task CANCELLED"
tasks=$(storm jobs --json | python3 -c 'import json,sys
print(*(j["job"] for j in json.load(sys.stdin)["jobs"] if str(j["jobid"]).startswith(sys.argv[1] + "_")))' "$arr")
expect "cancel the whole array by its id" 0 storm cancel "$arr"
# a cancel returns once the MM took it; each task ends when its nodes say so
for t in $tasks; do wait_log "$C/log/mm.log" "job $t ended" 30 || bad "  task job $t ended"; done
left=$(storm jobs --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["jobs"]))')
[ "$left" = 0 ] && ok "  no task left" || bad "  no task left ($left)"
expect "a task that is not there" 1 storm cancel "${arr}_9"
has "  ... named" err "no task ${arr}_9"
expect "a malformed --array" 2 storm submit --array=5-3 true
has "  ... is a usage error" err "--array wants task ids"

# ---- --export
expect "--export=NONE with names is a usage error" 2 storm run --export=NONE,A true
expect "--export=NAME,NAME=VALUE" 0 env KEEP_ME=1 DROP_ME=1 storm run -n 1 --export=KEEP_ME,SET_ME=x sh -c \
	'echo "keep=${KEEP_ME:-} drop=${DROP_ME:-} set=${SET_ME:-}"'
has "  only those" out "keep=1 drop= set=x"

# ---- standard input, forwarded to rank 0 (srun's default)
printf 'line1\nline2\n' >"$T/in.txt"
expect "storm run forwards its stdin to rank 0; the others read /dev/null" 0 \
	storm run -N 2 -n 2 sh -c 'if [ "$STORM_RANK" = 0 ]; then sed "s/^/got:/"; else cat; echo other-eof; fi' \
	<"$T/in.txt"
[ "$(grep -c '^got:line[12]$' "$T/out")" = 2 ] && grep -q '^other-eof$' "$T/out" &&
	ok "  rank 0 got both lines, rank 1 an empty stdin" || { bad "  stdin to rank 0"; cat "$T/out"; }
head -c 4194304 /dev/urandom >"$T/big.in"
expect "4 MiB of stdin through the flow-controlled path" 0 storm run -n 1 sha256sum <"$T/big.in"
[ "$(cut -d' ' -f1 "$T/out")" = "$(sha256sum <"$T/big.in" | cut -d' ' -f1)" ] &&
	ok "  arrives intact (same SHA-256)" || bad "  arrives intact"
expect "a rank that never reads its stdin ends all the same" 0 timeout 60 storm run -n 1 true <"$T/big.in"
expect "--input=none" 0 storm run --input=none -n 1 sh -c 'cat; echo read-nothing' <"$T/in.txt"
[ "$(cat "$T/out")" = read-nothing ] && ok "  rank 0 reads /dev/null" || { bad "  rank 0 reads /dev/null"; cat "$T/out"; }
expect "-i with something else is a usage error" 2 storm run -i all true
expect "--pty: rank 0 on a terminal" 0 storm run --pty -n 1 sh -c \
	'tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo is-a-tty; stty size' </dev/null
grep -q '^/dev/pts/[0-9]*.$' "$T/out" && grep -q '^is-a-tty.$' "$T/out" && grep -q '^24 80.$' "$T/out" &&
	ok "  its fds 0-2 a pseudo-terminal of 24x80 (ours is none)" || { bad "  a pseudo-terminal"; cat -A "$T/out"; }
expect "--pty: what we type reaches it" 0 storm run --pty -n 1 sh -c 'read x; echo "got:$x"' <"$T/in.txt"
grep -q '^got:line1.$' "$T/out" && ok "  through its line discipline" || { bad "  typed input"; cat -A "$T/out"; }
mkfifo "$T/pty.in"
exec 8<>"$T/pty.in"
start_bg ptyint sh -c "exec storm run --pty -n 1 sh -c 'trap \"echo got-int; exit 7\" INT; echo ready; while :; do sleep 0.1; done # $MARK' <'$T/pty.in'"
read -r line <&7
[ "${line%$'\r'}" = ready ] && ok "--pty: the job is up" || bad "--pty: the job is up ('$line')"
printf '\003' >&8
wait_bg "$BGPID" 60 "storm run --pty after Ctrl-C"
rc=$?
exec 7<&- 8>&-
[ $rc = 7 ] && ok "  Ctrl-C typed on a raw terminal interrupts the job (exit 7 from its trap)" ||
	bad "  Ctrl-C through --pty (exit $rc)"

# ---- MaxRSS and CPU time, measured per rank by the nodes
expect "a job that touches 100 MiB and spins 0.5 s CPU" 0 storm submit --wait --parsable -N 2 -n 2 \
	-o /dev/null python3 -c '
import time
x = bytearray(100 << 20)
for i in range(0, len(x), 4096):
    x[i] = 1
t = time.process_time()
while time.process_time() - t < 0.5:
    pass'
id=$(head -1 "$T/out")
rss=$(acct_field "$id" max_rss_kb)
cpu=$(acct_field "$id" cpu_seconds)
[ "$rss" -ge 102400 ] && [ "$rss" -lt 1048576 ] && ok "  MaxRSS ${rss} KiB: the rank's 100 MiB" ||
	bad "  MaxRSS ${rss} KiB: the rank's 100 MiB"
python3 -c "import sys; sys.exit(not ($cpu >= 1.0))" && ok "  TotalCPU $cpu s: both ranks' 0.5 s" ||
	bad "  TotalCPU $cpu s: both ranks' 0.5 s"
expect "  acct --format MaxRSS,TotalCPU" 0 storm acct -j "$id" --format=JobID,MaxRSS,TotalCPU
grep -Eq "^$id +${rss}K +[0-9]{2}:[0-9]{2}\.[0-9]{3}$" "$T/out" && ok "  in sacct's forms" ||
	{ bad "  in sacct's forms"; cat "$T/out"; }

# ---- formats
expect "jobs -o with a bad field" 2 storm jobs -o JobID,Bogus
has "  ... names the fields there are" err "unknown field 'Bogus'; fields are JobID"
expect "acct --format with widths" 0 storm acct --format=JobID,JobName%4,ExitCode
head -1 "$T/out" | grep -Eq '^JobID +JobN +ExitCode$' && ok "  the header, JobName cut to 4" ||
	{ bad "  the header"; head -2 "$T/out"; }

# ---- storm trace: Chrome Trace Event JSON, validated and counted
spin=$(storm submit --parsable -N 2 -o /dev/null sh -c "while :; do :; done # $MARK")
expect "a BCS-MPI job sharing its nodes with another (its row takes turns)" 0 \
	storm submit --wait --parsable -N 2 -n 4 -o "$T/ring.out" "$T/ring"
rid=$(head -1 "$T/out")
storm cancel "$spin" >/dev/null
expect "storm trace -o" 0 storm trace -o "$T/trace.json" "$rid"
python3 - "$T/trace.json" <<'PY' && ok "  valid Chrome trace: each node's turns, 2 execs and exits, BCS-MPI phases; the MM's queue, launch, end" || bad "  the trace's events"
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
assert names[0] == "machine manager" and sorted(names) == [0, 1, 2], names
assert all(names[p].startswith("node") for p in (1, 2)), names
for e in ev:
    assert e["ph"] in ("M", "X", "i"), e
    if e["ph"] != "M":
        assert e["ts"] >= 0 and e.get("dur", 0) >= 0, e
def count(pid, pred):
    return sum(1 for e in ev if e["pid"] == pid and e["ph"] != "M" and pred(e))
for p in (1, 2):
    assert count(p, lambda e: e["tid"] == 1 and e["name"].startswith("row ")) >= 1, ("runs", p)
    assert count(p, lambda e: e["name"].endswith(" exec")) == 2, ("execs", p)
    assert count(p, lambda e: e["name"].endswith(" exit")) == 2, ("exits", p)
    assert count(p, lambda e: e["name"] == "micro-phase") >= 1, ("bcs", p)
    assert all("skew_us" in e["args"] and "row" in e["args"] for e in ev
               if e["pid"] == p and e["ph"] == "X" and e["tid"] == 1)
for n in ("queued", "launch", "end"):
    assert count(0, lambda e: e["name"] == n) == 1, n
assert count(0, lambda e: e["name"].startswith("row ")) >= 1, "rows"
PY
expect "  the checkpointed step's trace" 0 storm trace -o "$T/ck.json" "$ck_alloc.0"
python3 - "$T/ck.json" <<'PY' && ok "  holds its checkpoint, from the MM and from both nodes" || bad "  the step's checkpoint in its trace"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
assert sum(1 for e in ev if e["pid"] == 0 and e["name"].startswith("checkpoint ")) == 1
assert {e["pid"] for e in ev if e["name"].startswith("saving checkpoint")} == {1, 2}
PY
expect "storm trace of a job that never was" 1 storm trace 99999
has "  ... says so" err "no job 99999"

# ---- the MM's metrics, through a real HTTP client and Prometheus' own parser
# (at the end: every kind of job above has been through it)
scrape() {
	/usr/bin/python3 - "$MPORT" <<'PY'  # Debian's, with python3-prometheus-client
import sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=10)
assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
for fam in text_string_to_metric_families(r.read().decode()):
    for s in fam.samples:
        labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
        print("%s{%s} %r" % (s.name, labels, s.value))
PY
}
scrape >"$T/m1" 2>"$T/m1.err" && ok "metrics: /metrics parses as the Prometheus text format" ||
	{ bad "metrics: /metrics parses"; cat "$T/m1.err"; }
metric() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
[ "$(metric 'storm_nodes{state=up}' "$T/m1")" = 4.0 ] && ok "  storm_nodes{state=up} 4" ||
	bad "  storm_nodes{state=up} is $(metric 'storm_nodes{state=up}' "$T/m1")"
# a .batch line repeats its job's end: not a job of its own
ended=$(storm acct --json | python3 -c 'import json,sys; print(sum(1 for j in json.load(sys.stdin)["jobs"] if j["state"] == "COMPLETED" and not j["batch"]))')
[ "$(metric 'storm_jobs_ended_total{state=completed}' "$T/m1")" = "$ended.0" ] &&
	ok "  storm_jobs_ended_total{completed} is acct's $ended" ||
	bad "  storm_jobs_ended_total{completed} $(metric 'storm_jobs_ended_total{state=completed}' "$T/m1"), acct $ended"
python3 - "$T/m1" <<'PY' && ok "  switch delays seen, histograms cumulative, a checkpoint timed" || bad "  histograms"
import sys
m = {}
for l in open(sys.argv[1]):
    k, v = l.rsplit(" ", 1)
    m[k] = float(v)
assert m["storm_switch_delay_seconds_count{}"] > 0, "no switch delays"
assert m["storm_checkpoint_seconds_count{}"] >= 1, "no checkpoint"
assert m["storm_job_launch_seconds_count{}"] > 10, "launches"
for h in ("storm_switch_delay_seconds", "storm_job_launch_seconds", "storm_switch_skew_seconds"):
    b = sorted((float(k.split("le=")[1].rstrip("}")), v) for k, v in m.items()
               if k.startswith(h + "_bucket{"))
    assert all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), h
    assert b[-1][1] == m[h + "_count{}"], h
PY
s1=$(metric 'storm_slices_total{}' "$T/m1")
storm run -n 1 true >/dev/null
scrape >"$T/m2"
s2=$(metric 'storm_slices_total{}' "$T/m2")
python3 -c "import sys; sys.exit(not ($s2 > $s1))" && ok "  storm_slices_total counts on ($s1 -> $s2)" ||
	bad "  storm_slices_total counts on ($s1 -> $s2)"

# ---- storm web: the live page in headless Chromium
wa=$(storm submit --parsable -N 4 -J webA -o /dev/null sh -c "exec sleep 600 # $MARK")
wb=$(storm submit --parsable -N 2 -J webB -o /dev/null sh -c "exec sleep 600 # $MARK")
start_bg web storm web --port 0
read -r line <&7
url=${line#storm web: }
case "$url" in http://127.0.0.1:*/) ok "storm web serves $url" ;; *) bad "storm web: '$line'" ;; esac
chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --dump-dom "$url" \
	>"$T/dom.html" 2>/dev/null
chromium --headless --no-sandbox --disable-gpu --virtual-time-budget=5000 --window-size=900,500 \
	--screenshot="$T/web.png" "$url" >/dev/null 2>&1
[ "$(grep -o "class=\"cell busy\" data-job=\"$wa\"" "$T/dom.html" | wc -l)" = 4 ] &&
	[ "$(grep -o "class=\"cell busy\" data-job=\"$wb\"" "$T/dom.html" | wc -l)" = 2 ] &&
	ok "  the page's matrix: job $wa in 4 cells, job $wb in 2" ||
	{ bad "  the page's matrix cells"; grep -o 'data-job="[^"]*"' "$T/dom.html" | sort | uniq -c; }
[ "$(grep -o '<th class="UP">node0[0-3]</th>' "$T/dom.html" | wc -l)" = 4 ] &&
	ok "  its 4 nodes UP" || bad "  its 4 nodes UP"
grep -q '<tr class="running"' "$T/dom.html" && ok "  the running row marked" || bad "  the running row marked"
python3 - "$T/web.png" <<'PY' && ok "  the screenshot: a 900x500 PNG, not blank" || bad "  the screenshot"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (900, 500), (w, h)
idat, i = b"", 8
while i < len(d):
    n, t = struct.unpack(">I4s", d[i:i + 8])
    if t == b"IDAT":
        idat += d[i + 8:i + 8 + n]
    i += 12 + n
raw = zlib.decompress(idat)
assert len(set(raw[j] for j in range(0, len(raw), 7))) > 8, "one colour"
PY
kill "$BGPID" 2>/dev/null
wait_bg "$BGPID" 60 "storm web after SIGTERM" 2>/dev/null
exec 7<&-
storm cancel "$wa" "$wb" >/dev/null

# ---- storm alloc across a restart of the machine manager: the allocations
# it held end (each storm alloc lost the connection and ended its command),
# even a command that ignores SIGHUP (nohup, a trap) or SIGTERM too: SIGHUP
# and SIGTERM at once, SIGKILL kill_wait_ms (5 s) later. A third storm alloc
# whose kill_wait_ms is 600 s must sleep in poll through its wait, not poll
# the closed connection for ever: its CPU time between two events after the
# revocation (its command's SIGTERM; the other two storm allocs gone)
stubborn() { # NAME: a command that notes SIGHUP and SIGTERM and lives on
	# taken one at a time (blocked, then waited for): a handler could run
	# inside another's print, and the lines would interleave
	echo "
import signal
sigs = {signal.SIGHUP, signal.SIGTERM}
signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
print('ready', flush=True)
while True:
    got = signal.sigwaitinfo(sigs) # $MARK-$1
    print('got', signal.Signals(got.si_signo).name, flush=True)"
}
sed 's/^kill_wait_ms = .*/kill_wait_ms = 600000/' "$C/storm.conf" >"$T/slow.conf"
storm alloc -N 1 -J survivor sh -c "trap '' HUP; echo ready; exec sleep 600 # $MARK" \
	>"$T/hup.out" 2>"$T/hup.err" &
hup=$!
storm alloc -N 1 -J stubborn python3 -c "$(stubborn term)" >"$T/term.out" 2>"$T/term.err" &
term=$!
storm alloc --conf "$T/slow.conf" -N 1 -J slow python3 -c "$(stubborn slow)" \
	>"$T/slow.out" 2>"$T/slow.err" &
slow=$!
BG="$BG $hup $term $slow"
wait_log "$T/hup.out" ready 120 && wait_log "$T/term.out" ready 120 && wait_log "$T/slow.out" ready 120 &&
	ok "storm alloc holds three allocations, their commands ignoring SIGHUP (and SIGTERM)" ||
	{ bad "storm alloc holds three allocations"; cat "$T/hup.err" "$T/term.err" "$T/slow.err"; }
aid=$(storm jobs --json | python3 -c 'import json,sys; print([j["job"] for j in json.load(sys.stdin)["jobs"] if j["name"] == "survivor"][0])')
MM=$(awk '$2 == "mm" { p = $1 } END { print p }' "$C/pids")
kill -9 "$MM" && gone "$MM"
wait_log "$T/slow.out" "got SIGTERM" 30 || bad "  the slow one's command got SIGTERM"
cpu1=$(proc_cpu "$slow")
expect "  the MM killed and restarted" 0 storm cluster restart mm --dir "$C"
wait_bg "$hup" 30 "storm alloc whose command ignores SIGHUP"
rc=$?
[ $rc = 1 ] && ok "  storm alloc of the SIGHUP-ignoring command ended it and exits 1" ||
	bad "  storm alloc of the SIGHUP-ignoring command ended it and exits 1 (exit $rc)"
[ "$(grep -c . "$T/hup.err")" = 2 ] &&
	grep -q "^storm alloc: job allocation $aid revoked: the connection to the machine manager was closed; ending sh (SIGHUP, SIGTERM, SIGKILL after 5000 ms)$" "$T/hup.err" &&
	ok "  ... saying why in one line" || { bad "  ... saying why in one line"; cat "$T/hup.err"; }
wait_bg "$term" 30 "storm alloc whose command ignores SIGHUP and SIGTERM"
rc=$?
[ $rc = 1 ] && ok "  storm alloc of the SIGHUP- and SIGTERM-ignoring command ended it and exits 1" ||
	bad "  storm alloc of the SIGHUP- and SIGTERM-ignoring command ended it and exits 1 (exit $rc)"
[ "$(cat "$T/term.out")" = "$(printf 'ready\ngot SIGHUP\ngot SIGTERM')" ] &&
	ok "  ... with SIGHUP, SIGTERM, then SIGKILL" || { bad "  ... with SIGHUP, SIGTERM, then SIGKILL"; cat "$T/term.out"; }
cpu2=$(proc_cpu "$slow")
spent=$(( ${cpu2#* } - ${cpu1#* } ))
[ -n "$cpu1" ] && [ "${cpu2% *}" = S ] && [ $spent -le 10 ] &&
	ok "  the revoked storm alloc sleeps until its SIGKILL is due (state ${cpu2% *}, $spent CPU ticks)" ||
	bad "  the revoked storm alloc sleeps until its SIGKILL is due (state '${cpu2% *}', $spent CPU ticks: '$cpu1' to '$cpu2')"
pkill -9 -P "$slow" # its command, python3
wait_bg "$slow" 30 "storm alloc whose command was killed"
rc=$?
[ $rc = 1 ] && ok "  ... and exits 1 once its command has gone" || bad "  ... and exits 1 once its command has gone (exit $rc)"
wait_ended "$aid" && ok "  the restarted MM ends the allocation nothing holds" ||
	bad "  the restarted MM ends the allocation nothing holds"
[ "$(acct_field "$aid" state)" = COMPLETED ] && ok "  COMPLETED" || bad "  state $(acct_field "$aid" state)"

expect "cluster down" 0 storm cluster down --dir "$C"
echo "$checks checks, $fails failed"
[ $fails = 0 ]
