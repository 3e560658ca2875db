#!/bin/bash
# Slurm's commands on storm (build/lib/storm/slurm/bin) driving a 2-node
# virtual cluster the way workflow managers do: Snakemake's sbatch
# --parsable --wrap with the options storm ignores, polling sacct -X
# --parsable2 --noheader --format=JobIdRaw,State --name; submitit's script
# of #SBATCH lines with srun steps and its SLURM_* variables, sacct -j
# listing JOB, JOB.batch and the steps; a job that holds until scancel
# ends it, seen RUNNING by squeue -o formats on the way; an array, a failing
# job, a refused option, sinfo and scontrol. Synchronised on the jobs' own
# output lines and on the states the commands report, not on sleeps; every
# daemon is taken down on exit.
# Usage: test_slurmcmds.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
SBIN=$(cd "$BIN/../lib/storm/slurm/bin" && pwd) || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/storm-slurmcmds.XXXXXX)
C=$T/c
export PATH=$SBIN:$BIN:$PATH
export STORM_CONF=$C/storm.conf
. "$HERE/lib.sh"
fails=0 checks=0

cleanup() {
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1

# wait_state JOB STATE: sacct polled, as a workflow manager polls it, until
# the job's own line says STATE (at most 60 s, times the patience)
wait_state() {
	local deadline=$((SECONDS + $(patience 60))) s
	while [ $SECONDS -lt $deadline ]; do
		s=$(sacct -X --parsable2 --noheader --format=State -j "$1" 2>/dev/null)
		[ "$s" = "$2" ] && return 0
		sleep 0.2
	done
	echo "job $1: sacct says '$s', not $2" >&2
	return 1
}
# field_of ID WANT NAME: in storm's table of two columns ($T/out), the line
# of job ID says WANT
field_of() {
	local got
	got=$(awk -v id="$1" '$1 == id "" { print $2 }' "$T/out")
	if [ "$got" = "$2" ]; then ok "$3"; else bad "$3"; echo "     got: '$got'"; fi
}
# same NAME FILE WANT: FILE's content is exactly WANT
same() {
	if [ "$(cat "$T/$2")" = "$3" ]; then ok "$1"; else
		bad "$1"
		echo "     want: $3" | head -20
		sed 's/^/     got:  /' "$T/$2" | head -20
	fi
}
# line_is NAME N WANT: line N of $T/out is exactly WANT
line_is() {
	if [ "$(sed -n "$2p" "$T/out")" = "$3" ]; then ok "$1"; else
		bad "$1"
		echo "     want: $3"
		echo "     got:  $(sed -n "$2p" "$T/out")"
	fi
}
# secs M:SS: its seconds
secs() { local m=${1%%:*} s=${1#*:}; echo $((10#$m * 60 + 10#$s)); }

for c in sbatch squeue scancel sacct sacctmgr sinfo scontrol srun salloc; do
	expect "$c --help" 0 "$SBIN/$c" --help
	has "  it says how to use $c" out "Usage: $c"
done
expect "an unknown option is an error" 2 sbatch --bogus --wrap true
has "  naming it" err "unknown option '--bogus'"

expect "cluster up with 2 nodes" 0 storm cluster up --nodes 2 --dir "$C"
CL=$(scontrol show config | sed -n 's/^ClusterName *= //p')

# ---- Snakemake: --wrap, its options, sacct polled by the run's name
mkdir -p "$T/wd/logs"
RUN=sm-$$-run
expect "sbatch --parsable --wrap, Snakemake's options" 0 sbatch --parsable --job-name "$RUN" \
	-o "logs/%j.log" --export=ALL -A acct -p part -t 5 --mem 100 --cpus-per-task=1 \
	-D "$T/wd" --wrap='echo "hello from $SLURM_JOB_ID in $PWD"'
id=$(cat "$T/out")
[[ $id =~ ^[0-9]+$ ]] && ok "  --parsable prints the job id alone ($id)" ||
	bad "  --parsable prints the job id alone: '$id'"
for o in "-A acct ignored: storm's one account is $CL" "-p part ignored: storm's one partition is $CL" \
	"--mem ignored" "--cpus-per-task ignored"; do
	has "  a warning names $o" err "sbatch: warning: $o"
done
if wait_state "$id" COMPLETED; then ok "  sacct -j sees it COMPLETED"; else bad "  COMPLETED"; fi
expect "  sacct -X --parsable2 --noheader --format=JobIdRaw,State --name" 0 \
	sacct -X --parsable2 --noheader --format=JobIdRaw,State --name "$RUN"
same "  one line: ID|COMPLETED" out "$id|COMPLETED"
has "  -D ran it there, -o's %j its id" "wd/logs/$id.log" "hello from $id in $T/wd"

expect "  sacct's Account: the cluster's one account" 0 sacct -X -P -n --format=Account,Partition -j "$id"
same "  ACCOUNT|PARTITION, both the cluster's name" out "$CL|$CL"
expect "  sacct's Timelimit of its -t 5, after its end" 0 sacct -X -P -n --format=JobIdRaw,Timelimit -j "$id"
same "  00:05:00, as sacct writes minutes" out "$id|00:05:00"

# ---- long options by a unique prefix, as Slurm's getopt_long
expect "sbatch --parsab --job-n --part= --accoun= --mem-per-c --wra=" 0 sbatch --parsab --job-n "abbr-$$" \
	--part="x,$CL" --accoun="$CL" --mem-per-c 10 --wra='echo abbreviated'
abid=$(cat "$T/out")
[[ $abid =~ ^[0-9]+$ ]] && ok "  --parsab is --parsable ($abid)" || bad "  --parsab: '$abid'"
same "  one warning, naming --mem-per-cpu in full; storm's partition and account taken" err \
	"sbatch: warning: --mem-per-cpu ignored: storm does not have it"
if wait_state "$abid" COMPLETED; then ok "  COMPLETED"; else bad "  COMPLETED"; fi
expect "  sacct --form= --noh --parsable2 -X --na" 0 sacct --form=JobIdRaw,JobName --noh \
	--parsable2 -X --na "abbr-$$"
same "  --job-n named it" out "$abid|abbr-$$"
expect "  squeue --noh --for= --job=" 0 squeue --noh --for="%i" --job="$abid" --stat=all
same "  its id alone" out "$abid"
expect "an ambiguous prefix is an error" 2 sbatch --m=1 --wrap true
has "  naming the options it begins" err "option '--m' is ambiguous (--mpi, --mem,"
expect "  sacct --pars: --parsable or --parsable2" 2 sacct --pars
has "  naming both" err "'--pars' is ambiguous (--parsable, --parsable2)"

# ---- sacctmgr: the calling user, the one account and cluster, Slurm 22.05's
# shapes (sacctmgr's print_fields: each field right-justified in its width
# and a space, a value too wide cut and ended with '+')
# col WIDTH VALUE...: each value as sacctmgr prints it in WIDTH
col() {
	local w=$1 v
	shift
	for v in "$@"; do
		[ ${#v} -gt "$w" ] && v="${v:0:w-1}+"
		printf '%*s ' "$w" "$v"
	done
}
ME=$(id -un)
[ "$(id -u)" = 0 ] && ADM=Administrator || ADM=None
expect "sacctmgr show user" 0 sacctmgr show user
same "  Slurm's header, dashes, the calling user" out "$(col 10 User 'Def Acct'; col 9 Admin; echo
	col 10 ---------- ----------; col 9 ---------; echo; col 10 "$ME" "$CL"; col 9 "$ADM")"
expect "Snakemake's sacctmgr -n -s list user USER format=account%20" 0 \
	sacctmgr -n -s list user "$ME" format=account%20
same "  the account, in 20 columns" out "$(col 20 "$CL")"
expect "sacctmgr show user withassoc -P" 0 sacctmgr show user withassoc -P
same "  User, Def Acct, Admin, then the association's fields" out "User|Def Acct|Admin|Cluster|Account|Partition|Share|Priority|MaxJobs|MaxNodes|MaxCPUs|MaxSubmit|MaxWall|MaxCPUMins|QOS|Def QOS
$ME|$CL|$ADM|$CL|$CL||1||||||||normal|"
expect "sacctmgr -p show assoc where user=ME format=cluster,acct,user,part" 0 \
	sacctmgr -p show assoc where user="$ME" format=cluster,acct,user,part
same "  a '|' after each field" out "Cluster|Account|User|Partition|
$CL|$CL|$ME||"
expect "sacctmgr show assoc" 0 sacctmgr --parsable2 --noheader show assoc format=Account,User
same "  the account's own association, then its user's" out "$CL|
$CL|$ME"
expect "sacctmgr show account" 0 sacctmgr show account
same "  Account, Descr, Org" out "$(col 10 Account; col 20 Descr Org; echo
	col 10 ----------; col 20 -------------------- --------------------; echo
	col 10 "$CL"; col 20 "$CL" "$CL")"
expect "sacctmgr show cluster -nP format=cluster,rpc,fairshare,qos" 0 \
	sacctmgr show cluster -nP format=cluster,rpc,fairshare,qos
same "  the one cluster" out "$CL||1|normal"
expect "sacctmgr show user of an account storm does not have" 0 \
	sacctmgr -n show user withassoc where account=nosuch
same "  no line" out ""
expect "sacctmgr: an unknown field" 1 sacctmgr show user format=bogus
same "  Slurm's message" err "Unknown field 'bogus'"
expect "sacctmgr: an unknown condition" 1 sacctmgr show assoc bogus=1
same "  Slurm's message" err " Unknown condition: bogus=1"
expect "sacctmgr add is refused" 2 sacctmgr add user x account=y
has "  in one line naming it" err "sacctmgr: error: add is not supported"
expect "sacctmgr show qos is refused" 2 sacctmgr show qos
has "  naming what it shows" err "storm shows user, account, association and cluster"

# ---- submitit: #SBATCH lines, srun steps, SLURM_* variables
cat >"$T/submit.sh" <<EOF
#!/bin/bash
#SBATCH --job-name=submitit-$$
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --signal=USR2@90
#SBATCH --output=$T/%j_0_log.out
echo "batch job=\$SLURM_JOB_ID jobid=\$SLURM_JOBID nodes=\$SLURM_NNODES list=\$SLURM_JOB_NODELIST dir=\$SLURM_SUBMIT_DIR name=\$SLURM_JOB_NAME cpus=\$SLURM_CPUS_ON_NODE"
srun --unbuffered --output "$T/%j.step" sh -c 'echo "task \$SLURM_PROCID of \$SLURM_NTASKS step \$SLURM_STEP_ID"'
srun -n 1 --output "$T/%j_%t_log.step" sh -c 'echo "one task \$SLURM_PROCID of \$SLURM_NTASKS step \$SLURM_STEP_ID"'
srun --output "$T/%j_%t.bad" true || echo "srun refused %t of 2 tasks: \$?"

srun -N 2 -n 4 -l sh -c 'echo "task \$SLURM_PROCID local \$SLURM_LOCALID node \$SLURM_NODEID of \$SLURM_NNODES job \$SLURM_JOB_ID step \$SLURM_STEP_ID ntasks \$SLURM_NTASKS"'
EOF
expect "sbatch --parsable of a script with #SBATCH lines" 0 sbatch --parsable submit.sh
sid=$(cat "$T/out")
same "  one warning: the #SBATCH option storm does not have, naming its line" err \
	"sbatch: warning: $T/submit.sh:5: --signal ignored: storm does not have it"
if wait_state "$sid" COMPLETED; then ok "  COMPLETED"; else bad "  COMPLETED"; fi
log=${sid}_0_log.out
has "  SLURM_JOB_ID, SLURM_JOBID, SLURM_NNODES, the node list, submit dir, name" "$log" \
	"batch job=$sid jobid=$sid nodes=2 list=node[00-01] dir=$T name=submitit-$$ cpus="
if grep -q "cpus=[1-9]" "$T/$log"; then ok "  SLURM_CPUS_ON_NODE"; else bad "  SLURM_CPUS_ON_NODE"; fi
for r in 0 1; do
	has "  srun in a 2-node job: a task a node, their output in --output's %j" "$sid.step" \
		"task $r of 2 step 0"
done
has "  srun -n 1 --output's %j and %t: task 0" "${sid}_0_log.step" "one task 0 of 1 step 1"
has "  srun --output's %t of 2 tasks: refused (storm writes one file)" "$log" \
	"srun refused %t of 2 tasks: 2"
for r in 0 1 2 3; do
	n=$((r / 2))
	has "  srun -N 2 -n 4: task $r's SLURM_PROCID, LOCALID, NODEID, step" "$log" \
		"$r: task $r local $((r % 2)) node $n of 2 job $sid step 2 ntasks 4"
done
expect "  sacct -j JOB --parsable2 --noheader" 0 sacct -j "$sid" --parsable2 --noheader \
	--format=JobID,JobName,State,ExitCode
same "  JOB, JOB.batch and the steps JOB.0, JOB.1, JOB.2" out "$sid|submitit-$$|COMPLETED|0:0
$sid.batch|batch|COMPLETED|0:0
$sid.0|sh|COMPLETED|0:0
$sid.1|sh|COMPLETED|0:0
$sid.2|sh|COMPLETED|0:0"
expect "  sacct -j JOB --parsable (a '|' after the last field too)" 0 sacct -j "$sid" -X -p \
	--format=JobIDRaw,State
same "  its header and line" out "JobIDRaw|State|
$sid|COMPLETED|"
expect "  sacct's table, fixed widths and dashes" 0 sacct -j "$sid" -X --format=JobID,State%12
same "  the header, the dashes, the line" out "$(printf '%-12s %12s \n%s %s \n%-12s %12s ' \
	JobID State ------------ ------------ "$sid" COMPLETED)"
expect "  scontrol show job" 0 scontrol show job "$sid"
has "  JobState=COMPLETED" out "JobState=COMPLETED"
has "  ExitCode=0:0" out "ExitCode=0:0"
has "  no -t: TimeLimit=UNLIMITED" out " TimeLimit=UNLIMITED "
expect "  sacct's Timelimit of a job without -t" 0 sacct -j "$sid" -P -n --format=JobID,Timelimit
same "  UNLIMITED on the job's line, nothing on its batch line and steps'" out "$sid|UNLIMITED
$sid.batch|
$sid.0|
$sid.1|
$sid.2|"

# ---- #SBATCH lines take what sbatch's command line takes, by one parser:
# prefixes, --opt value, short options with their value attached or not
mkdir -p "$T/wd2"
cat >"$T/lines.sh" <<EOF
#!/bin/sh
#SBATCH --job-n=lines-$$
#SBATCH -N2
#SBATCH --ntasks-per-node 2
#SBATCH -t 10 --part=$CL -A $CL
#SBATCH --chdir=$T/wd2 -o %j.sout
#SBATCH --mem=1G
echo "nodes=\$SLURM_JOB_NUM_NODES ntasks=\$SLURM_NTASKS name=\$SLURM_JOB_NAME pwd=\$PWD"
EOF
expect "sbatch of a script of #SBATCH lines as the command line writes them" 0 sbatch --parsable lines.sh
lid=$(cat "$T/out")
same "  one warning, --mem's, naming its line" err \
	"sbatch: warning: $T/lines.sh:7: --mem ignored: storm does not have it"
if wait_state "$lid" COMPLETED; then ok "  COMPLETED"; else bad "  COMPLETED"; fi
has "  -N2, --ntasks-per-node 2, --job-n=, --chdir= and -o taken" "wd2/$lid.sout" \
	"nodes=2 ntasks=4 name=lines-$$ pwd=$T/wd2"
expect "  sacct: its name, nodes and #SBATCH -t 10" 0 sacct -X -P -n \
	--format=JobName,NNodes,Timelimit -j "$lid"
same "  NAME|2|00:10:00" out "lines-$$|2|00:10:00"
expect "sbatch -N 1 over #SBATCH -N2 --ntasks-per-node 2" 0 sbatch --parsable -N 1 lines.sh
lid1=$(cat "$T/out")
if wait_state "$lid1" COMPLETED; then ok "  COMPLETED"; else bad "  COMPLETED"; fi
has "  the command line's -N with the script's --ntasks-per-node: 2 tasks" "wd2/$lid1.sout" \
	"nodes=1 ntasks=2 name=lines-$$"
printf '#!/bin/sh\n#SBATCH -N 1\n#SBATCH --bogus=1\ntrue\n' >"$T/bogus.sh"
expect "an #SBATCH option Slurm does not have is an error, as on the command line" 2 sbatch bogus.sh
same "  naming it and the line" err \
	"sbatch: error: $T/bogus.sh:3: unknown option '--bogus'; see 'sbatch --help'"
expect "  storm submit reads #SBATCH lines with the same parser" 2 storm submit bogus.sh
has "  the same error" err "bogus.sh:3: unknown option '--bogus'"
printf '#!/bin/sh\n#SBATCH --hold\ntrue\n' >"$T/hold.sh"
expect "an #SBATCH option storm refuses is refused, as on the command line" 2 sbatch hold.sh
same "  in one line" err \
	"sbatch: error: $T/hold.sh:2: --hold is not supported: storm would run the job otherwise"

# ---- -e/--error: storm writes a job's stderr to its output file, so -e is
# taken when it names that file, whichever layer (#SBATCH line, command
# line) gave -o and -e, and ignored with a warning only when stderr would
# go elsewhere: the warning is given once every layer is in
mkdir -p "$T/eo"
# errjob NAME LINES: a script of those #SBATCH lines writing to stderr
errjob() {
	printf '#!/bin/sh\n%becho "stderr of $SLURM_JOB_ID" >&2\n' "$2" >"$T/eo/$1.sh"
}
errjob e_then_o '#SBATCH -e %j.both\n'
expect "#SBATCH -e %j.both with sbatch -o %j.both" 0 sbatch --parsable -D "$T/eo" -o %j.both \
	eo/e_then_o.sh
e1=$(cat "$T/out")
same "  no warning: one file" err ""
errjob o_then_e '#SBATCH -o same.out\n'
expect "#SBATCH -o same.out with sbatch -e same.out" 0 sbatch --parsable -D "$T/eo" \
	-e same.out eo/o_then_e.sh
e2=$(cat "$T/out")
same "  no warning" err ""
errjob both_then_o '#SBATCH -o %j.mine\n#SBATCH -e %j.mine\n'
expect "#SBATCH -o and -e %j.mine with sbatch -o %j.other" 0 sbatch --parsable -D "$T/eo" \
	-o %j.other eo/both_then_o.sh
e3=$(cat "$T/out")
same "  a warning: its stderr goes to the command line's -o" err \
	"sbatch: warning: $T/eo/both_then_o.sh: --error %j.mine ignored: a storm job's stderr goes to its output file, %j.other"
errjob o_e_then_e '#SBATCH -o %j.o\n#SBATCH -e %j.e\n'
expect "#SBATCH -o %j.o -e %j.e with sbatch -e %j.o" 0 sbatch --parsable -D "$T/eo" -e %j.o \
	eo/o_e_then_e.sh
e4=$(cat "$T/out")
same "  no warning: the command line's -e is the script's -o" err ""
expect "sbatch -e slurm-%j.out, sbatch's own default output" 0 sbatch --parsable -D "$T/eo" \
	-e ./slurm-%j.out --wrap 'echo "stderr of $SLURM_JOB_ID" >&2'
e5=$(cat "$T/out")
same "  no warning" err ""
expect "sbatch -e of another file" 0 sbatch --parsable -D "$T/eo" -e other.err \
	--wrap 'echo "stderr of $SLURM_JOB_ID" >&2'
e6=$(cat "$T/out")
same "  a warning naming both" err \
	"sbatch: warning: --error other.err ignored: a storm job's stderr goes to its output file, slurm-%j.out"
errjob storm_o '#SBATCH -e %j.st\n'
cd "$T/eo" || exit 1
expect "storm submit -o %j.st of #SBATCH -e %j.st" 0 storm submit -o %j.st storm_o.sh
cd "$T" || exit 1
e7=$(sed -n 's/^Submitted job //p' "$T/out")
same "  no warning" err ""
for j in "$e1 $e1.both" "$e2 same.out" "$e3 $e3.other" "$e4 $e4.o" "$e5 slurm-$e5.out" \
	"$e6 slurm-$e6.out" "$e7 $e7.st"; do
	set -- $j
	if wait_state "$1" COMPLETED; then ok "  job $1 COMPLETED"; else bad "  job $1 COMPLETED"; fi
	has "  its stderr in $2" "eo/$2" "stderr of $1"
done
[ ! -e "$T/eo/other.err" ] && ok "  no other.err" || bad "  no other.err"

# ---- a job that holds until it is cancelled; squeue on the way
expect "sbatch a job that holds, --time=0:05:00" 0 sbatch -J holder-$$ --time=0:05:00 \
	--wrap 'echo started; exec sleep 600'
has "  'Submitted batch job N'" out "Submitted batch job"
hid=$(sed -n 's/^Submitted batch job //p' "$T/out")
if wait_log "$T/slurm-$hid.out" started 60; then ok "  it runs (slurm-$hid.out)"; else bad "  it runs"; fi
expect "  squeue -h -o '%i %T' -j" 0 squeue -h -o "%i %T" -j "$hid"
same "  RUNNING" out "$hid RUNNING"
expect "  squeue -h --name -o with widths" 0 squeue -h --name "holder-$$" -o "%.10i|%8t|%.4D|%P|%j"
same "  right- and left-justified, cut to width" out \
	"$(printf '%10s|%-8s|%4s|%s|%s' "$hid" R 1 "$CL" "holder-$$")"
expect "  squeue -u lists it with its header" 0 squeue -u "$(id -un)"
has "  squeue's default header" out "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
has "  the job's line, its name cut to 8" out "$(printf '%18s %9s %.8s' "$hid" "$CL" "holder-$$")"
expect "  sacct sees it RUNNING" 0 sacct -X -P -n --format=JobIdRaw,State -j "$hid"
same "  ID|RUNNING" out "$hid|RUNNING"
expect "  squeue -o '%i %l': its time limit" 0 squeue -h -o "%i %l" -j "$hid"
same "  5:00, as squeue writes it" out "$hid 5:00"
expect "  squeue -o '%M|%L|%.10L': the time used and the time left" 0 squeue -o "%M|%L|%.10L" -j "$hid"
used=$(sed -n '2s/|.*//p' "$T/out") left=$(sed -n '2s/^[^|]*|\([^|]*\)|.*/\1/p' "$T/out")
line_is "  the header: TIME|TIME_LEFT| TIME_LEFT" 1 "TIME|TIME_LEFT| TIME_LEFT"
if [[ $used =~ ^[0-9]+:[0-5][0-9]$ && $left =~ ^[0-9]+:[0-5][0-9]$ ]] &&
	[ $(($(secs "$used") + $(secs "$left"))) = 300 ]; then
	ok "  the time left is the limit less the time used ($left + $used)"
else bad "  time used '$used' and left '$left' make 5:00"; fi
line_is "  %.10L right-justified in 10" 2 "$used|$left|$(printf '%10s' "$left")"
expect "  scontrol show job while it runs" 0 scontrol show job "$hid"
has "  TimeLimit=00:05:00" out " TimeLimit=00:05:00 "
expect "  sacct's Timelimit while it runs" 0 sacct -X -P -n --format=JobIdRaw,Timelimit -j "$hid"
same "  00:05:00" out "$hid|00:05:00"
expect "  storm jobs -o JobID,Timelimit" 0 storm jobs -o JobID,Timelimit
field_of "$hid" 5:00 "  its line says 5:00, storm's form"
# srun --jobid and SLURM_JOB_ID: a step of the running job from outside it,
# as Snakemake's group jobs and scripts run them
expect "srun --jobid=JOB --overlap --cpu-bind=q from outside the job" 0 \
	env -u STORM_JOBID srun --jobid="$hid" --overlap --cpu-bind=q \
	sh -c 'echo "in $SLURM_JOB_ID step $SLURM_STEP_ID"'
same "  a step of it" out "in $hid step 0"
same "  --overlap and --cpu-bind=q taken quietly" err ""
expect "srun with SLURM_JOB_ID set (no --jobid), --exact" 0 env -u STORM_JOBID SLURM_JOB_ID="$hid" \
	srun --exact sh -c 'echo "in $SLURM_JOB_ID step $SLURM_STEP_ID"'
same "  the next step of it" out "in $hid step 1"
same "  --exact ignored, said so" err "srun: warning: --exact ignored: storm does not have it"
expect "srun --jobid of no number" 2 srun --jobid=x true
has "  an error naming it" err "--jobid wants a job's number, not 'x'"
expect "a job that waits for the holder's end" 0 sbatch --parsable -J dep-$$ \
	-d "afterany:$hid" --wrap 'echo dependent ran'
did=$(cat "$T/out")
expect "  squeue: PENDING" 0 squeue -h -o "%i %t %T %l %L" -j "$did"
same "  PD PENDING, no -t: UNLIMITED, time left UNLIMITED" out "$did PD PENDING UNLIMITED UNLIMITED"
expect "another of that name, -t 3:00" 0 sbatch --parsable -J dep-$$ -t 3:00 \
	-d "afterany:$hid" --wrap 'echo dependent ran'
did3=$(cat "$T/out")
expect "  squeue -o '%l %L'" 0 squeue -h -o "%t %l %L" -j "$did3"
same "  pending: all its time left" out "PD 3:00 3:00"
expect "  scontrol show job of it" 0 scontrol show job "$did"
has "  TimeLimit=UNLIMITED" out " TimeLimit=UNLIMITED "
expect "  scancel -n NAME" 0 scancel -n "dep-$$"
if wait_state "$did" CANCELLED; then ok "  CANCELLED"; else bad "  CANCELLED"; fi
if wait_state "$did3" CANCELLED; then ok "  the other of that name too"; else bad "  the other too"; fi
expect "scancel the holder" 0 scancel "$hid"
if wait_state "$hid" CANCELLED; then ok "  CANCELLED"; else bad "  CANCELLED"; fi
expect "  squeue no longer lists it" 0 squeue -h -o "%i"
if grep -qx "$hid" "$T/out"; then bad "  gone from squeue"; else ok "  gone from squeue"; fi
expect "  sacct -j: JOB, JOB.batch and its steps JOB.0, JOB.1" 0 sacct -j "$hid" -P -n \
	--format=JobID,JobName,State
same "  in that order" out "$hid|holder-$$|CANCELLED
$hid.batch|batch|CANCELLED
$hid.0|sh|COMPLETED
$hid.1|sh|COMPLETED"
expect "  sacct: ExitCode 0:15 (SIGTERM)" 0 sacct -X -P -n --format=State,ExitCode -j "$hid"
same "  CANCELLED|0:15" out "CANCELLED|0:15"
expect "  sacct's Timelimit after its end" 0 sacct -X -P -n --format=JobIdRaw,Timelimit -j "$hid"
same "  00:05:00, from the accounting" out "$hid|00:05:00"
expect "  storm acct --format=JobID,Timelimit" 0 storm acct -j "$hid" --format=JobID,Timelimit
field_of "$hid" 5:00 "  its line says 5:00, storm's form"
cat "$T/slurm-$did.out" "$T/slurm-$did3.out" 2>/dev/null | grep -q "dependent ran" && bad "  the dependent jobs never ran" ||
	ok "  the dependent jobs never ran"

# ---- an array and a failing job
expect "sbatch --array, each task with an srun step" 0 sbatch --parsable -a 0-2 \
	--wrap 'echo "task $SLURM_ARRAY_JOB_ID $SLURM_ARRAY_TASK_ID"; srun sh -c "echo step \$SLURM_ARRAY_JOB_ID \$SLURM_ARRAY_TASK_ID"'
aid=$(cat "$T/out")
# the machine manager says when every task has ended (a dependency on the
# array), not a poll of sacct
timeout "$(patience 60)" storm submit --wait -d "afterany:$aid" -o /dev/null true >/dev/null 2>&1
expect "  sacct -j ARRAY lists its tasks" 0 sacct -X -P -n --format=JobID,State -j "$aid"
same "  ARRAY_0..2 COMPLETED" out "${aid}_0|COMPLETED
${aid}_1|COMPLETED
${aid}_2|COMPLETED"
for t in 0 1 2; do
	has "  task $t: SLURM_ARRAY_* in slurm-%A_%a.out" "slurm-${aid}_$t.out" "task $aid $t"
	has "  task $t's step: its task's SLURM_ARRAY_*, as Slurm's steps" "slurm-${aid}_$t.out" "step $aid $t"
done
expect "sbatch a job that exits 3" 0 sbatch --parsable --wrap 'exit 3'
fid=$(cat "$T/out")
if wait_state "$fid" FAILED; then ok "  FAILED"; else bad "  FAILED"; fi
expect "  sacct ExitCode" 0 sacct -X -P -n --format=ExitCode -j "$fid"
same "  3:0" out "3:0"

# ---- a script on stdin, its #SBATCH lines read
expect "sbatch of a script on stdin" 0 sh -c "printf '#!/bin/sh\n#SBATCH -J stdin-$$\necho \"ran as \$SLURM_JOB_NAME\"\n' | sbatch --parsable"
iid=$(cat "$T/out")
if wait_state "$iid" COMPLETED; then ok "  COMPLETED"; else bad "  COMPLETED"; fi
has "  its #SBATCH -J read" "slurm-$iid.out" "ran as stdin-$$"

expect "sbatch of an empty stdin" 1 sbatch </dev/null
same "  Slurm's message" err "sbatch: error: Batch script is empty!"
expect "sbatch of a program, not a script" 1 sbatch /bin/true
has "  Slurm's message" err "This does not look like a batch script"

# ---- what storm refuses, sinfo, scontrol
expect "sbatch --hold is refused" 2 sbatch --hold --wrap true
same "  in one line naming it" err "sbatch: error: --hold is not supported: storm would run the job otherwise"
expect "sinfo -h -o '%P %D %t %N'" 0 sinfo -h -o "%P %D %t %N"
same "  the one partition, 2 idle nodes" out "$CL* 2 idle node[00-01]"
expect "sinfo -N" 0 sinfo -N -h
same "  one line a node" out "$(printf '%-9s %6s %9s %-6s\n' node00 1 "$CL*" idle node01 1 "$CL*" idle)"
expect "scontrol show hostnames" 0 scontrol show hostnames "node[00-01]"
same "  one name a line" out "node00
node01"
expect "scontrol show job of no job" 1 scontrol show job 999999
has "  Slurm's message" err "Invalid job id specified"
expect "scontrol update is refused" 2 scontrol update JobId=1 TimeLimit=5
has "  naming it" err "scontrol: error: update"

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
