#!/bin/bash
# Slurm's commands on storm against Slurm itself: the same command lines run
# on a private 2-node Slurm cluster (bench/launch/slurm-cluster.sh: its own
# munged, slurmctld and a slurmd per node) and on a 2-node storm virtual
# cluster, each with a job that holds until it is cancelled, and their
# output's shapes compared: sbatch --parsable's id alone, squeue's headers
# and the columns of its rows (every character a space or not, at the same
# places: the values differ, the widths do not), sinfo's header and fields,
# the keys scontrol shows (each of storm's also in Slurm's record), scancel's
# silence; squeue's time left (%L); a script's #SBATCH lines written as the command line writes them
# (the job's name and nodes alike), an unknown one an error on both. sacct is not compared: this Slurm has no accounting storage.
# Synchronised on the jobs' states as the commands report them.
# Usage: test_shapes.sh BUILD_BIN_DIR   (make slurmtest; root: it runs slurmd)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
SBIN=$(cd "$BIN/../lib/storm/slurm/bin" && pwd) || exit 1
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/cluster/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "test_shapes.sh: error: must run as root (it starts slurmd)" >&2
	exit 1
fi
for c in sbatch squeue scancel sinfo scontrol slurmctld slurmd munged; do
	command -v $c >/dev/null || {
		echo "test_shapes.sh: error: $c not found; scripts/install-deps.sh installs slurm-wlm" >&2
		exit 1
	}
done
T=$(mktemp -d /tmp/storm-shapes.XXXXXX)
chmod 755 "$T"
C=$T/c
export STORM_SLURM_DIR=$T/slurm
# a port of its own, so another suite's Slurm (test_alloc's) may run beside it
export STORM_SLURM_PORT=${STORM_SLURM_PORT:-$((29000 + $$ % 900 * 4))}
export SLURM_CONF=$T/slurm/slurm.conf
export STORM_CONF=$C/storm.conf
SLURM_SH=$ROOT/bench/launch/slurm-cluster.sh
export PATH=$BIN:$PATH
fails=0 checks=0

cleanup() {
	"$SLURM_SH" down >/dev/null 2>&1
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1

# on SIDE (slurm or storm): the command of that name
on() {
	local side=$1 cmd=$2
	shift 2
	if [ "$side" = slurm ]; then "/usr/bin/$cmd" "$@"; else "$SBIN/$cmd" "$@"; fi
}
# widths FILE all|last: each line's length, with last without its last
# field (node names: bn1 and node00 differ), so fixed-width columns line
# up alike whatever values they hold
widths() {
	if [ "$2" = all ]; then cat "$1"; else sed 's/[^ ]*$//' "$1"; fi | awk '{ print length($0) }'
}
# wait_running SIDE JOB: squeue -h -o %T polled until RUNNING (60 s, times the patience)
wait_running() {
	local deadline=$((SECONDS + $(patience 60)))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(on "$1" squeue -h -j "$2" -o %T 2>/dev/null)" = RUNNING ] && return 0
		sleep 0.2
	done
	return 1
}
# both NAME CMD ARGS...: CMD on each side, stdout in $T/slurm.out, $T/storm.out
both() {
	local name=$1 s
	shift
	for s in slurm storm; do
		on "$s" "$@" >"$T/$s.out" 2>"$T/$s.err"
		echo $? >"$T/$s.rc"
	done
	if cmp -s "$T/slurm.rc" "$T/storm.rc"; then ok "$name: the same exit status ($(cat "$T/slurm.rc"))"
	else bad "$name: exit $(cat "$T/slurm.rc") on Slurm, $(cat "$T/storm.rc") on storm"
		sed 's/^/     slurm: /' "$T/slurm.err" | head -5
		sed 's/^/     storm: /' "$T/storm.err" | head -5
	fi
}
# same_widths NAME all|last: both outputs' lines are as wide (with last: but
# for their last field)
same_widths() {
	if [ "$(widths "$T/slurm.out" "$2")" = "$(widths "$T/storm.out" "$2")" ]; then ok "$1"; else
		bad "$1"
		sed 's/^/     slurm: |/' "$T/slurm.out" | head -5
		sed 's/^/     storm: |/' "$T/storm.out" | head -5
	fi
}
# same_line N NAME: line N of both outputs is the same
same_line() {
	local a b
	a=$(sed -n "$1p" "$T/slurm.out")
	b=$(sed -n "$1p" "$T/storm.out")
	if [ -n "$a" ] && [ "$a" = "$b" ]; then ok "$2"; else bad "$2: '$a' on Slurm, '$b' on storm"; fi
}
# both_match NAME REGEX: every line of both outputs matches REGEX, and there are lines
both_match() {
	local s ok_=1
	for s in slurm storm; do
		[ -s "$T/$s.out" ] && ! grep -qvE -- "$2" "$T/$s.out" || ok_=0
	done
	if [ $ok_ = 1 ]; then ok "$1"; else
		bad "$1: not every line matches $2"
		sed 's/^/     slurm: |/' "$T/slurm.out" | head -5
		sed 's/^/     storm: |/' "$T/storm.out" | head -5
	fi
}
# keys SIDE: the KEY of each KEY=VALUE in its output
keys() { tr ' ' '\n' <"$T/$1.out" | sed -n 's/^\([A-Za-z/:_]*\)=.*/\1/p' | sort -u; }

if "$SLURM_SH" up 2 >"$T/slurm-up.log" 2>&1; then ok "a private Slurm cluster of 2 nodes"
else bad "slurm-cluster.sh up 2"; cat "$T/slurm-up.log"; exit 1; fi
expect "a storm cluster of 2 nodes" 0 storm cluster up --nodes 2 --dir "$C"

both "sinfo" sinfo
same_line 1 "  sinfo's header"
both "sinfo -h -o '%P %D %t'" sinfo -h -o "%P %D %t"
both_match "  the default partition, its nodes, their state" '^[a-z0-9]+\* 2 idle$'
both "sinfo -N -h" sinfo -N -h
same_widths "  one line a node, the same columns" all

both "sbatch --parsable --wrap" sbatch --parsable -J holder --wrap 'exec sleep 600'
both_match "  the job id alone" '^[0-9]+$'
sid=$(cat "$T/slurm.out") tid=$(cat "$T/storm.out")
wait_running slurm "$sid" && ok "  RUNNING on Slurm" || bad "  RUNNING on Slurm"
wait_running storm "$tid" && ok "  RUNNING on storm" || bad "  RUNNING on storm"

both "squeue" squeue
same_line 1 "  squeue's header"
same_widths "  the same columns" last
both "squeue -l" squeue -l
same_line 2 "  squeue -l's header"
both "squeue -h -o '%i %T'" squeue -h -o "%i %T"
both_match "  ID RUNNING" '^[0-9]+ RUNNING$'
both "squeue -j ID -o with widths" squeue -o "%.10i|%8t|%.4D|%j|%5u" -j "$sid"
for s in slurm storm; do [ "$s" = storm ] && sed -i "s/^ *$tid|/ID|/" "$T/$s.out" ||
	sed -i "s/^ *$sid|/ID|/" "$T/$s.out"; done
if cmp -s "$T/slurm.out" "$T/storm.out"; then ok "  the same header and row"; else
	bad "  the same header and row"; diff "$T/slurm.out" "$T/storm.out" | head; fi
both "squeue --name -h -o %A" squeue --name holder -h -o %A
both_match "  the id" '^[0-9]+$'
both "squeue -t PD -h" squeue -t PD -h
[ ! -s "$T/slurm.out" ] && [ ! -s "$T/storm.out" ] && ok "  nothing pending" || bad "  nothing pending"

on slurm scontrol show job "$sid" >"$T/slurm.out" 2>&1
on storm scontrol show job "$tid" >"$T/storm.out" 2>&1
missing=$(comm -13 <(keys slurm) <(keys storm) | tr '\n' ' ')
[ -z "$missing" ] && ok "scontrol show job: every key storm shows is one of Slurm's" ||
	bad "scontrol show job: keys Slurm does not have: $missing"
grep -q "JobState=RUNNING" "$T/storm.out" && ok "  JobState=RUNNING" || bad "  JobState=RUNNING"
on slurm scontrol show node bn1 >"$T/slurm.out" 2>&1
on storm scontrol show node node00 >"$T/storm.out" 2>&1
missing=$(comm -13 <(keys slurm) <(keys storm) | tr '\n' ' ')
[ -z "$missing" ] && ok "scontrol show node: every key storm shows is one of Slurm's" ||
	bad "scontrol show node: keys Slurm does not have: $missing"
on slurm scontrol show partition >"$T/slurm.out" 2>&1
on storm scontrol show partition >"$T/storm.out" 2>&1
missing=$(comm -13 <(keys slurm) <(keys storm) | tr '\n' ' ')
[ -z "$missing" ] && ok "scontrol show partition: every key storm shows is one of Slurm's" ||
	bad "scontrol show partition: keys Slurm does not have: $missing"
on slurm scontrol -o show job "$sid" >"$T/slurm.out" 2>&1
on storm scontrol -o show job "$tid" >"$T/storm.out" 2>&1
[ "$(wc -l <"$T/slurm.out")" = 1 ] && [ "$(wc -l <"$T/storm.out")" = 1 ] &&
	ok "scontrol -o: one line" || bad "scontrol -o: one line"

both "scontrol show hostnames" scontrol show hostnames "n[1-2]"
if cmp -s "$T/slurm.out" "$T/storm.out"; then ok "  the same names"; else bad "  the same names"; fi

on slurm scancel "$sid" >"$T/slurm.out" 2>&1; echo $? >"$T/slurm.rc"
on storm scancel "$tid" >"$T/storm.out" 2>&1; echo $? >"$T/storm.rc"
[ "$(cat "$T/slurm.rc" "$T/storm.rc")" = "0
0" ] && [ ! -s "$T/slurm.out" ] && [ ! -s "$T/storm.out" ] && ok "scancel: silent, exit 0" ||
	bad "scancel: $(cat "$T/slurm.rc") '$(cat "$T/slurm.out")' on Slurm, $(cat "$T/storm.rc") '$(cat "$T/storm.out")' on storm"
# #SBATCH lines as sbatch's command line writes them: a prefix, a value
# attached or after a space; the job each side makes of them
cat >"$T/lines.sh" <<'EOF'
#!/bin/sh
#SBATCH --job-n=lines
#SBATCH -N2
#SBATCH --ntasks-per-node 1
#SBATCH -t 10
exec sleep 600
EOF
both "sbatch of #SBATCH --job-n=, -N2, --ntasks-per-node 1, -t 10" sbatch --parsable lines.sh
both_match "  the job id alone" '^[0-9]+$'
sid=$(cat "$T/slurm.out") tid=$(cat "$T/storm.out")
wait_running slurm "$sid" && ok "  RUNNING on Slurm" || bad "  RUNNING on Slurm"
wait_running storm "$tid" && ok "  RUNNING on storm" || bad "  RUNNING on storm"
on slurm squeue -h -j "$sid" -o "%j %D" >"$T/slurm.out" 2>&1
on storm squeue -h -j "$tid" -o "%j %D" >"$T/storm.out" 2>&1
if [ "$(cat "$T/slurm.out")" = "lines 2" ] && cmp -s "$T/slurm.out" "$T/storm.out"; then
	ok "  the same name and node count: $(cat "$T/storm.out")"
else bad "  name and nodes: '$(cat "$T/slurm.out")' on Slurm, '$(cat "$T/storm.out")' on storm"; fi
# squeue's time left: the limit less the time used, as TIME writes it
on slurm squeue -j "$sid" -o "%.10L|%l|%L" >"$T/slurm.out" 2>&1
on storm squeue -j "$tid" -o "%.10L|%l|%L" >"$T/storm.out" 2>&1
same_line 1 "squeue -o '%.10L|%l|%L': the same header"
for s in slurm storm; do
	if sed -n 2p "$T/$s.out" | grep -qE '^ {5,6}[0-9]{1,2}:[0-5][0-9]\|10:00\|[0-9]{1,2}:[0-5][0-9]$'; then
		ok "  $s: a time left under -t 10, right-justified in 10"
	else bad "  $s: '$(sed -n 2p "$T/$s.out")'"; fi
done
on slurm scancel "$sid"
on storm scancel "$tid"
printf '#!/bin/sh\n#SBATCH --bogus=1\ntrue\n' >"$T/bogus.sh"
# (storm's usage errors exit 2, Slurm's sbatch 1: the status is not compared)
for s in slurm storm; do
	on "$s" sbatch --parsable bogus.sh >"$T/$s.out" 2>"$T/$s.err"
	echo $? >"$T/$s.rc"
	if [ "$(cat "$T/$s.rc")" != 0 ] && [ ! -s "$T/$s.out" ] && grep -q -- "--bogus" "$T/$s.err"; then
		ok "sbatch of an #SBATCH option Slurm does not have, $s: an error naming it, no job"
	else bad "sbatch of #SBATCH --bogus, $s: $(cat "$T/$s.rc") '$(cat "$T/$s.err")'"; fi
done

both "squeue -j of no job" squeue -j 999999
for s in slurm storm; do grep -q "Invalid job id specified" "$T/$s.err" && ok "  $s: Invalid job id specified" ||
	bad "  $s: $(cat "$T/$s.err")"; done

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
