#!/bin/bash
# A real workflow manager on storm's Slurm commands: Debian's Snakemake 7.21
# with its --slurm executor, on a 2-node virtual cluster, with a PATH where
# the only Slurm commands are storm's (Debian's Slurm is linked out). It
# asks sinfo for the default partition and sacctmgr (or sacct) for the
# account, submits each rule with sbatch --wrap, polls sacct -P -n
# --format=JobIdRaw,State -j, runs each rule with srun inside its job and
# cancels with scancel. The workflow: two rules that must run at once (each
# waits for the other's start, on the shared file system), a rule whose
# command is srun of two tasks on two nodes (MPI-free, snakemake's
# mpi="srun" resource), a rule that fails (reported FAILED, snakemake exits
# 1), and a workflow interrupted while its job holds, whose job snakemake
# cancels. Synchronised on files the jobs write and on snakemake's log
# lines; every daemon is taken down on exit.
# Usage: test_snakemake.sh BUILD_BIN_DIR   (make cluster-snakemake; in make check)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
SBIN=$(cd "$BIN/../lib/storm/slurm/bin" && pwd) || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
command -v snakemake >/dev/null || {
	echo "test_snakemake.sh: error: snakemake not found; scripts/install-deps.sh --test installs it (make check and make cluster-snakemake do)" >&2
	exit 1
}
T=$(mktemp -d /tmp/storm-snakemake.XXXXXX)
chmod 755 "$T"
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
. "$HERE/lib.sh"
fails=0 checks=0
SM_PID=

cleanup() {
	[ -n "$SM_PID" ] && kill -9 "$SM_PID" 2>/dev/null
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1

# The PATH snakemake and its jobs see: storm's Slurm commands, storm, and
# every other program of /usr/bin and /usr/sbin linked into one directory
# but those of Debian's Slurm packages, so that a Slurm command storm lacks
# is not found rather than Slurm's own run.
mkdir -p "$T/path"
slurm_own=" $(dpkg -L slurm-client slurmctld slurmd slurm-wlm-basic-plugins sview 2>/dev/null |
	sed -n 's|^/usr/s\{0,1\}bin/||p' | tr '\n' ' ') "
# two ln calls, not one a program: 1,800 forks took up to 85 s beside a hog;
# /usr/bin's name wins where both have one (ln leaves what exists)
ln -s /usr/bin/* "$T/path/"
ln -s /usr/sbin/* "$T/path/" 2>/dev/null
(cd "$T/path" && rm -f $slurm_own)
SM_PATH=$SBIN:$BIN:$T/path
for c in sbatch sacct sacctmgr sinfo scontrol scancel srun squeue; do
	[ "$(PATH=$SM_PATH command -v $c)" = "$SBIN/$c" ] || bad "$c on the PATH is not storm's"
done
if PATH=$SM_PATH command -v sstat >/dev/null; then bad "Slurm's own sstat is linked out"
else ok "the PATH has storm's Slurm commands and none of Slurm's own"; fi

expect "cluster up with 2 nodes" 0 storm cluster up --nodes 2 --dir "$C"
CL=$(PATH=$SM_PATH sinfo -h -o %R)

mkdir -p "$T/wf"
cat >"$T/wf/Snakefile" <<'EOF'
rule all:
    input: "left.txt", "right.txt", "tasks.txt"

# left and right run at once: each starts, then waits for the other's start
# (at most 600 s, the test's bound), and writes its job and step
rule left:
    output: "left.txt"
    shell:
        "touch started.left; n=0; "
        "while [ ! -e started.right ] && [ $n -lt 6000 ]; do sleep 0.1; n=$((n + 1)); done; "
        "[ -e started.right ] && echo \"left job=$SLURM_JOB_ID step=$SLURM_STEP_ID\" > {output}"

rule right:
    output: "right.txt"
    shell:
        "touch started.right; n=0; "
        "while [ ! -e started.left ] && [ $n -lt 6000 ]; do sleep 0.1; n=$((n + 1)); done; "
        "[ -e started.left ] && echo \"right job=$SLURM_JOB_ID step=$SLURM_STEP_ID\" > {output}"

# an MPI-free program as two tasks on two nodes: snakemake submits it with
# --nodes and --ntasks and runs the rule's command, srun, in the job
rule tasks:
    output: "tasks.txt"
    resources: mpi="srun", nodes=2, tasks=2
    shell:
        "{resources.mpi} -n {resources.tasks} sh -c "
        "'echo task $SLURM_PROCID of $SLURM_NTASKS node $SLURM_NODEID job $SLURM_JOB_ID' "
        "| sort > {output}"

rule fail:
    output: "fail.txt"
    shell: "echo failing on purpose; exit 3"

# holds until it is cancelled
rule hold:
    output: "hold.txt"
    shell: "echo $SLURM_JOB_ID > holding.tmp; mv holding.tmp holding; exec sleep 600"
EOF

# sm LOG ARGS...: snakemake --slurm in the workflow's directory, with the
# PATH above, its log in $T/LOG. SIGINT as a terminal's Ctrl-C delivers it:
# a background command of a script starts with it ignored. A status check
# a second (sm): Snakemake 7.21's --slurm takes any rate above 1 for 0.03
# (one sacct round each 33 s, and as long again for its poller to end when
# the workflow is done), which was most of this suite's time.
SM=(env --default-signal=INT PATH="$SM_PATH" USER="$(id -un)" snakemake --slurm --jobs 4
	--latency-wait 5)
sm() {
	local log=$1
	shift
	(cd "$T/wf" && exec "${SM[@]}" --max-status-checks-per-second 1 "$@") >"$T/$log" 2>&1
}

# log_if_failed LOG: its last lines after a failed check
log_if_failed() {
	[ "$fails" = 0 ] || sed 's/^/     | /' "$T/$1" | tail -30
}

# ---- the workflow: two rules at once, srun of two tasks
expect "snakemake --slurm: two rules at once and one of srun's tasks" 0 sm run.log --verbose \
	--default-resources "slurm_account=$CL" runtime=10 mem_mb=100
log_if_failed run.log
has "  the account (checked with sacctmgr) and sinfo's default partition" run.log \
	"--export=ALL -A $CL -p $CL -t 10 --mem 100"
for r in left right; do
	has "  rule $r ran in a job of its own, as srun's step 0" wf/$r.txt "$r job="
done
lj=$(sed -n 's/.*job=\([0-9]*\).*/\1/p' "$T/wf/left.txt" 2>/dev/null)
rj=$(sed -n 's/.*job=\([0-9]*\).*/\1/p' "$T/wf/right.txt" 2>/dev/null)
[ -n "$lj" ] && [ -n "$rj" ] && [ "$lj" != "$rj" ] && ok "  two jobs ($lj, $rj), each saw the other start" ||
	bad "  two jobs at once: '$lj' '$rj'"
grep -q "step=0" "$T/wf/left.txt" 2>/dev/null && ok "  the rule ran in srun's step of the job" ||
	bad "  the rule ran in srun's step: $(cat "$T/wf/left.txt" 2>/dev/null)"
tj=$(sed -n 's/.*job \([0-9]*\)$/\1/p' "$T/wf/tasks.txt" 2>/dev/null | head -1)
same_tasks="task 0 of 2 node 0 job $tj
task 1 of 2 node 1 job $tj"
if [ -n "$tj" ] && [ "$(cat "$T/wf/tasks.txt")" = "$same_tasks" ]; then
	ok "  rule tasks: srun -n 2 in a 2-node job, a task a node"
else bad "  rule tasks: $(cat "$T/wf/tasks.txt" 2>/dev/null)"; fi
for j in $lj $rj $tj; do
	s=$(PATH=$SM_PATH sacct -X -P -n --format=State,Account,Partition -j "$j")
	[ "$s" = "COMPLETED|$CL|$CL" ] && ok "  sacct: job $j COMPLETED in the one account and partition" ||
		bad "  sacct: job $j: '$s'"
done

# ---- a rule that fails: FAILED, the workflow fails; the account guessed with sacct
expect "snakemake --slurm of a failing rule" 1 sm fail.log fail.txt --default-resources runtime=10
log_if_failed fail.log
has "  the account guessed from sacct" fail.log "Guessed SLURM account: $CL"
has "  reported FAILED" fail.log "SLURM status is: 'FAILED'"
has "  the rule's error" fail.log "Error in rule fail"
fj=$(sed -n "s/.*SLURM-job '\([0-9]*\)' failed.*/\1/p" "$T/fail.log" | head -1)
has "  its output in the job's log" "wf/.snakemake/slurm_logs/rule_fail/$fj.log" "failing on purpose"

# ---- interrupted: snakemake cancels its job
rm -f "$T/wf/holding"
# (the subshell execs snakemake: $! is snakemake's pid). At a round each
# 33 s here: its poller takes the job list out for each round, and an
# interrupt then finds it empty and cancels nothing; a round a second
# left the job RUNNING 1 time in 3.
(cd "$T/wf" && exec "${SM[@]}" --max-status-checks-per-second 10 hold.txt \
	--default-resources runtime=10) >"$T/hold.log" 2>&1 &
SM_PID=$!
if wait_log "$T/wf/holding" "" 120; then ok "snakemake's job holds"
else bad "snakemake's job holds"; sed 's/^/     | /' "$T/hold.log" | tail -20; fi
hj=$(cat "$T/wf/holding" 2>/dev/null)
expect "  squeue lists it RUNNING" 0 env PATH="$SM_PATH" squeue -h -o "%i %T" -j "$hj"
has_line "  ID RUNNING" out "$hj RUNNING"
kill -INT "$SM_PID"
if wait_bg "$SM_PID" 120 "snakemake after SIGINT"; then :; fi
SM_PID=
has "  snakemake terminates on the interrupt" hold.log "Terminating processes on user request"
# the machine manager says when the job has ended (a dependency on it), not
# a poll of sacct
timeout "$(patience 60)" storm submit --wait -d "afterany:$hj" -o /dev/null true >/dev/null 2>&1
s=$(PATH=$SM_PATH sacct -X -P -n --format=State -j "$hj" 2>/dev/null)
[ "$s" = CANCELLED ] && ok "  its job $hj CANCELLED (scancel)" || bad "  its job $hj: '$s', not CANCELLED"

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
