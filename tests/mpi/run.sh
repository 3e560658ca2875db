#!/bin/bash
# MPI conformance: the programs of tests/mpi built against BCS-MPI
# (bcs-mpicc, storm run on a 4-node virtual cluster this script starts), run
# on 1, 2, 4 and 8 ranks; every output must say the checks passed and equal
# MPICH's byte for byte. MPICH's outputs are kept as sha256 sums in
# tests/mpi/mpich.sums, with the sums of the sources they came from: a
# source changed since fails the suite until the sums are written again
# (--mpich-only --write-sums, which runs the same programs under MPICH's
# mpicc and mpiexec); an output that differs runs MPICH there and then to
# show the difference. Then
# the jobs that end badly (MPI_Abort, ERRORS_ARE_FATAL), MPI_Cancel's own
# answers (cancel.c: BCS-MPI only), MPI-4 persistent collectives (pcoll.c:
# BCS-MPI only), MPI_Isendrecv (isendrecv.c: BCS-MPI only), one-sided
# accesses a dynamic window cannot serve (rma_range.c: BCS-MPI only, on 1, 2 and 4 nodes), the racy
# ANY_SOURCE program 50 times under BCS-MPI (one outcome; with
# --mpich-racy-runs, MPICH's count of outcomes for comparison), the
# intercommunicator program on 1, 2 and 4 nodes and its refusals, and recorded
# runs (the racy program, the non-blocking collectives, the
# intercommunicators, persistent requests, non-blocking duplicates, the v-
# and w- non-blocking collectives, scans, neighborhood collectives, the
# collectives between an intercommunicator's groups) that
# `storm replay` must reproduce byte
# for byte. Every daemon is taken
# down on exit.
#
# Usage: run.sh [--mpich-only [--write-sums]] [--ranks "1 2 4 8"]
#               [--racy-runs N] [--mpich-racy-runs N] [BUILD_BIN_DIR]
#   --mpich-only         only the MPICH half (the suite's own validation:
#                        every program's checks pass under MPICH too)
#   --write-sums         and, if they all passed, tests/mpi/mpich.sums
#   --racy-runs N        runs of the racy program under BCS-MPI (default 50)
#   --mpich-racy-runs N  with --mpich-only, runs under MPICH, to count its
#                        outcomes (default 0: one run of 8 ranks on 2 cores
#                        takes about 1.4 s)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
. "$HERE/../cluster/lib.sh"
MPICH_ONLY=0 WRITE_SUMS=0 RANKS="1 2 4 8" RACY_RUNS=50 MPICH_RACY_RUNS=0 BIN=build/bin
while [ $# -gt 0 ]; do
	case $1 in
	--mpich-only) MPICH_ONLY=1 ;;
	--write-sums) WRITE_SUMS=1 ;;
	--ranks) RANKS=$2; shift ;;
	--racy-runs) RACY_RUNS=$2; shift ;;
	--mpich-racy-runs) MPICH_RACY_RUNS=$2; shift ;;
	-h | --help) sed -n '2,35s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) BIN=$1 ;;
	esac
	shift
done
BIN=$(cd "$BIN" && pwd) || exit 2
T=$(mktemp -d "${TMPDIR:-/tmp}/storm-mpitest.XXXXXX")
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
PROGS="env p2p coll ops ops_complex comm groups cart dtypes names nbcoll rma intercomm rma_dyn info attr persist bsend reduce_local idup nbcollv graph subarray nbscan neighbor typeenv icoll bigcount reqstat errh mprobe profile"
CFLAGS=(-std=c11 -O1 -Wall -Wextra -Werror)
# GCC 12 warns (wrongly) on MPICH's MPI_STATUSES_IGNORE passed as an array
MPICH_CFLAGS=("${CFLAGS[@]}" -Wno-stringop-overflow)
# each program's run, whatever the implementation; a hang is a failure
LIMIT=${MPI_TEST_TIMEOUT:-120}

cleanup() {
	fail_report
	if [ -f "$C/storm.conf" ]; then storm cluster down --dir "$C" >/dev/null 2>&1; fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# nodes N: the virtual nodes for N ranks (two ranks a node past 4)
nodes() { if [ "$1" -gt 4 ]; then echo 4; else echo "$1"; fi; }

# timed CMD...: runs CMD under the time limit, its run time in ms in $ms
timed() {
	local t0 rc
	t0=$(date +%s%N)
	timeout "$LIMIT" "$@"
	rc=$?
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	return $rc
}

# passed NAME OUT RC: a suite program exited 0, its totals line counts no
# failure and no line says FAIL
passed() {
	local name=$1 out=$2 rc=$3
	if [ "$rc" = 0 ] && grep -q '^[a-z0-9_]*: [0-9]* checks, 0 failed$' "$out" &&
		! grep -q FAIL "$out"; then
		ok "$name: $(grep -o '[0-9]* checks, 0 failed$' "$out") ($ms ms)"
	else
		bad "$name: exit $rc"
		grep -v '^[0-9]* ok ' "$out" | head -20 | sed 's/^/     out: /'
		head -10 "$out.err" | sed 's/^/     err: /'
	fi
}

# bad_end NAME OUT RC MODE: a job that must end badly did, after "before" only
# (MPICH's hydra may drop a rank's last line when another rank aborts the
# job before it forwarded it: for MPICH, BEFORE_OPTIONAL=1 waives the
# "before" line; storm must deliver it)
bad_end() {
	if [ "$3" != 0 ] && { [ "${BEFORE_OPTIONAL:-0}" = 1 ] || grep -qx "$4: before" "$2"; } &&
		! grep -q "$4: after" "$2"; then
		ok "$1 (exit $3)"
	else
		bad "$1: exit $3"
		head -10 "$2" "$2.err" | sed 's/^/     | /'
	fi
}

# ---- the builds, two at a time: the programs of the half this run is
[ "$MPICH_ONLY" = 0 ] || echo "# MPICH ($(mpiexec.mpich --version 2>/dev/null | sed -n 's/^ *Version: *//p'))"
mkdir -p "$T/mpich" "$T/bcs"
cc -O2 -shared -fPIC -o "$T/mpich_yield.so" "$HERE/mpich_yield.c" -ldl || bad "cc mpich_yield.c"
# the suite's ranks yield when idle (mpich_yield.c); the racy program's do not
mpiexec_yield=(mpiexec.mpich -genv LD_PRELOAD "$T/mpich_yield.so")
# build IMPL:P: P with MPICH's compiler (mpich) or BCS-MPI's (bcs), its
# errors in $T/IMPL/P.cc, a file $T/IMPL/P.built if it built
build() {
	local impl=${1%%:*} p=${1#*:}
	if [ "$impl" = mpich ]; then
		mpicc.mpich "${MPICH_CFLAGS[@]}" -o "$T/mpich/$p" "$HERE/$p.c" 2>"$T/mpich/$p.cc"
	else
		"$BIN/bcs-mpicc" "${CFLAGS[@]}" -o "$T/bcs/$p" "$HERE/$p.c" 2>"$T/bcs/$p.cc"
	fi && : >"$T/$impl/$p.built"
}
# built IMPL COMPILER P...: a check failed for each program that did not build
built() {
	local impl=$1 cc=$2 p
	shift 2
	for p in "$@"; do
		[ -f "$T/$impl/$p.built" ] && continue
		bad "$cc $p.c"
		head -20 "$T/$impl/$p.cc"
	done
}
BCS_PROGS="$PROGS abort racy cancel rma_range pcoll isendrecv"
want=()
if [ "$MPICH_ONLY" = 1 ]; then
	for p in $PROGS abort racy; do want+=("mpich:$p"); done
else
	for p in $BCS_PROGS; do want+=("bcs:$p"); done
fi
par_each 2 build "${want[@]}"
[ "$MPICH_ONLY" = 0 ] || built mpich mpicc $PROGS abort racy

# MPICH's outputs as sums (mpich.sums): "src FILE SUM" for each source they
# came from, "out PROG RANKS SUM" for each output
SUMS=$HERE/mpich.sums
SUM_SRCS="suite.h ops.h $(printf '%s.c ' $PROGS)"
# shellcheck source=sums.sh
. "$HERE/sums.sh"
mpich_version() { mpiexec.mpich --version 2>/dev/null | sed -n 's/^ *Version: *//p'; }
# write_sums: MPICH's outputs of every program on every rank count
write_sums() {
	local f n p
	{
		echo "# MPICH's outputs of the programs of tests/mpi as sha256 sums, which"
		echo "# BCS-MPI's outputs must equal (run.sh). Written by run.sh --mpich-only"
		echo "# --write-sums; the sources' sums say which programs they came from."
		echo "mpich $(mpich_version)"
		for f in $SUM_SRCS; do echo "src $f $(sum_of <"$HERE/$f")"; done
		for n in $RANKS; do
			for p in $PROGS; do echo "out $p $n $(sum_of <"$T/mpich/$p.$n.out")"; done
		done
	} >"$SUMS"
}
# mpich_diff P N OUT: MPICH's run of P on N ranks, here and now, and how
# OUT differs from it (only once an output differed: the sums hold no text)
mpich_diff() {
	local m=$T/mpich/$1.$2.out
	if ! command -v mpicc.mpich >/dev/null; then
		echo "     (no MPICH here to show how: install mpich)"
		return
	fi
	[ -f "$T/mpich/$1.built" ] || build "mpich:$1" || {
		head -5 "$T/mpich/$1.cc" | sed 's/^/     | /'
		return
	}
	timeout "$LIMIT" "${mpiexec_yield[@]}" -n "$2" "$T/mpich/$1" >"$m" 2>"$m.err"
	echo "     MPICH's run here (exit $?) against this one:"
	diff "$m" "$3" | head -20 | sed 's/^/     /'
	cmp -s "$m" "$3" && echo "     the same: mpich.sums is not this MPICH's (--mpich-only --write-sums)"
}
# same_as_mpich NAME P N OUT: OUT is MPICH's output of P on N ranks
same_as_mpich() {
	local want
	want=$(mpich_sum "$2" "$3")
	if [ -n "$want" ] && [ "$(sum_of <"$4")" = "$want" ]; then
		ok "$1"
	elif [ -z "$want" ]; then
		bad "$1: mpich.sums holds no output of $2 on $3 ranks"
	else
		bad "$1: differs"
		mpich_diff "$2" "$3" "$4"
	fi
}

# mpich_runs: the suite under MPICH, each output in $T/mpich/P.N.out
mpich_runs() {
	local n p o m start
	start=$(date +%s%N)
	for n in $RANKS; do
		for p in $PROGS; do
			o=$T/mpich/$p.$n.out
			timed "${mpiexec_yield[@]}" -n "$n" "$T/mpich/$p" >"$o" 2>"$o.err"
			passed "MPICH $p, $n ranks" "$o" $?
		done
	done
	for m in abort fatal fatal-dup; do
		o=$T/mpich/$m.out
		timeout "$LIMIT" "${mpiexec_yield[@]}" -n 4 "$T/mpich/abort" "$m" >"$o" 2>"$o.err"
		BEFORE_OPTIONAL=1 bad_end "MPICH $m on 4 ranks ends the job" "$o" $? "$m"
	done
	echo "info: MPICH suite runs took $(( ($(date +%s%N) - start) / 1000000 )) ms"
}
[ "$MPICH_ONLY" = 0 ] || mpich_runs

# distinct NAME RUNS CMD...: runs CMD RUNS times, the count of distinct
# outputs in $distinct, each output's last line in $T/racy.all (a failed run
# counts as a failure of NAME)
distinct() {
	local name=$1 runs=$2 i rc
	shift 2
	: >"$T/racy.all"
	: >"$T/racy.sums"
	for i in $(seq "$runs"); do
		timeout "$LIMIT" "$@" >"$T/racy.one" 2>"$T/racy.one.err"
		rc=$?
		if [ $rc != 0 ]; then
			bad "$name: run $i exit $rc"
			head -5 "$T/racy.one" "$T/racy.one.err"
			distinct=-1
			return
		fi
		md5sum <"$T/racy.one" >>"$T/racy.sums"
		tail -n 1 "$T/racy.one" >>"$T/racy.all"
	done
	distinct=$(sort -u "$T/racy.sums" | wc -l)
}
if [ "$MPICH_ONLY" = 1 ]; then
	if [ "$MPICH_RACY_RUNS" -gt 0 ]; then
		distinct "MPICH racy" "$MPICH_RACY_RUNS" mpiexec.mpich -n 8 "$T/mpich/racy"
		echo "info: the racy program under MPICH, 8 ranks: $distinct distinct outcomes in $MPICH_RACY_RUNS runs"
	fi
	if [ "$WRITE_SUMS" = 1 ]; then
		if [ "$fails" = 0 ]; then
			write_sums
			echo "info: wrote $SUMS"
		else
			echo "info: $SUMS not written: a check failed"
		fi
	fi
	echo "$checks checks, $fails failed (MPICH only)"
	[ "$fails" = 0 ]
	exit
fi

# ---- BCS-MPI: the same programs, MPICH's outputs
echo "# BCS-MPI"
built bcs bcs-mpicc $BCS_PROGS
# shellcheck disable=SC2086 # file names are words
mapfile -t stale < <(sums_stale "$HERE" $SUM_SRCS)
if [ ${#stale[@]} = 0 ]; then
	ok "MPICH's outputs (mpich.sums, MPICH $(sed -n 's/^mpich //p' "$SUMS")) are of the sources here"
else
	bad "mpich.sums is older than ${stale[*]}: run tests/mpi/run.sh --mpich-only --write-sums"
fi
# 2 ms slices: a blocking call costs a slice or two; 10 s before a node that
# misses strobes is DOWN, as this machine may be loaded by other jobs
# outside the subset: a clear build error, never a wrong result
printf '#include <mpi.h>\nint main(int c, char **v)\n{\n\tMPI_Comm ic;\n\tMPI_Init(&c, &v);\n\tMPI_Comm_spawn("x", NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &ic, NULL);\n\treturn MPI_Finalize();\n}\n' >"$T/outside.c"
expect "bcs-mpicc refuses MPI_Comm_spawn (outside the subset)" 1 "$BIN/bcs-mpicc" -o "$T/outside" "$T/outside.c"
has "  naming it" err "MPI_Comm_spawn"

expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up $UP_MODE --nodes 4 --dir "$C" \
	--timeslice-us 2000 --down-after-ms 10000
# the programs whose run of 8 ranks on 4 nodes `storm replay` must give
# again (record and replay, below): that run here is the recorded one, as a
# second run of the same program, nodes and ranks only to record it would
# check the same path again
RECORDED="nbcoll persist rma intercomm rma_dyn idup nbcollv graph subarray nbscan neighbor icoll p2p reqstat pcoll isendrecv"
# record_arg P N: storm run's --record for P's run of N ranks, if recorded
record_arg() {
	rec=()
	if [ "$2" = 8 ] && [[ " $RECORDED " == *" $1 "* ]]; then rec=(--record "$T/$1.trace"); fi
}
start=$(date +%s%N)
for n in $RANKS; do
	for p in $PROGS; do
		o=$T/bcs/$p.$n.out
		record_arg "$p" "$n"
		timed storm run "${rec[@]}" -N "$(nodes "$n")" -n "$n" "$T/bcs/$p" >"$o" 2>"$o.err"
		passed "BCS-MPI $p, $n ranks" "$o" $?
		same_as_mpich "  same output as MPICH" "$p" "$n" "$o"
	done
done
echo "info: BCS-MPI suite runs took $(( ($(date +%s%N) - start) / 1000000 )) ms"
for m in abort fatal fatal-dup; do
	o=$T/bcs/$m.out
	timeout "$LIMIT" storm run -N 4 -n 4 "$T/bcs/abort" "$m" >"$o" 2>"$o.err"
	bad_end "BCS-MPI $m on 4 ranks ends the job" "$o" $? "$m"
done
expect "a job runs after those" 0 storm run -N 4 -n 4 "$T/bcs/racy" 1

start=$(date +%s%N)
distinct "BCS-MPI racy" "$RACY_RUNS" storm run -N 4 -n 8 "$T/bcs/racy"
echo "info: $RACY_RUNS racy runs under BCS-MPI took $(( ($(date +%s%N) - start) / 1000000 )) ms"
if [ "$distinct" = 1 ]; then
	ok "BCS-MPI racy, 8 ranks: one outcome in $RACY_RUNS runs"
else
	bad "BCS-MPI racy, 8 ranks: $distinct distinct outcomes in $RACY_RUNS runs"
	sort "$T/racy.all" | uniq -c | sort -rn | head -5 | sed 's/^/     /'
fi

# one-sided: 4 ranks on 1 and 2 nodes too (shared windows of several ranks),
# MPICH's 4-rank answers; accesses a dynamic window cannot serve (MPICH does
# not check them: BCS-MPI's own answers), the same on 1, 2 and 4 nodes
for nn in 1 2; do
	o=$T/bcs/rma_dyn.4.on$nn.out
	timed storm run -N "$nn" -n 4 "$T/bcs/rma_dyn" >"$o" 2>"$o.err"
	passed "BCS-MPI rma_dyn, 4 ranks on $nn nodes" "$o" $?
	same_as_mpich "  same output as MPICH" rma_dyn 4 "$o"
done
for nn in "1 1" "1 4" "2 4" "4 4"; do
	set -- $nn
	o=$T/bcs/rma_range.$1.$2.out
	timed storm run -N "$1" -n "$2" "$T/bcs/rma_range" >"$o" 2>"$o.err"
	passed "BCS-MPI rma_range, $2 ranks on $1 nodes" "$o" $?
	if [ "$2" = 4 ] && [ "$1" != 1 ]; then
		if cmp -s "$T/bcs/rma_range.1.4.out" "$o"; then
			ok "  same output as on 1 node"
		else
			bad "  output differs from 1 node's"
			diff "$T/bcs/rma_range.1.4.out" "$o" | head -10 | sed 's/^/     /'
		fi
	fi
done
o=$T/bcs/rma_range.fatal.out
timeout "$LIMIT" storm run -N 4 -n 4 "$T/bcs/rma_range" fatal >"$o" 2>"$o.err"
bad_end "BCS-MPI put into detached memory ends the job (ERRORS_ARE_FATAL)" "$o" $? fatal
if grep -q 'MPI_Win_unlock: rank [0-9] has no memory attached at address 0x[0-9a-f]* of its dynamic window' "$o.err"; then
	ok "  the origin names the target and the address"
else
	bad "  no message naming the target and the address"
	head -5 "$o.err" | sed 's/^/     | /'
fi
expect "a job runs after that" 0 storm run -N 4 -n 4 "$T/bcs/rma_range"

# MPI_Cancel: MPI leaves a send's outcome to the implementation (Debian's
# MPICH cancels only one to its own rank), so BCS-MPI's own answers: on one
# node, across two, and 8 ranks on 4; then a replay of a recorded run
for nn in "1 2" "2 2" "4 8"; do
	set -- $nn
	o=$T/bcs/cancel.$1.$2.out
	timed storm run -N "$1" -n "$2" "$T/bcs/cancel" >"$o" 2>"$o.err"
	passed "BCS-MPI cancel, $2 ranks on $1 nodes" "$o" $?
done
# record_replay PROG NODES RANKS [mpich]: a recorded run of PROG and
# its replay give the same output, and no check of it failed (with
# "mpich": and that output is MPICH's). The run is the suite's own above
# when that one was recorded (record_arg), else one here.
record_replay() {
	if [ -f "$T/$1.trace" ] && [ "$2" = "$(nodes "$3")" ] && [ -f "$T/bcs/$1.$3.out" ]; then
		if [ -s "$T/$1.trace" ]; then
			ok "storm run --record $1 ($3 ranks): its run above, trace written"
		else
			bad "storm run --record $1 ($3 ranks): its run above wrote no trace"
		fi
		cp "$T/bcs/$1.$3.out" "$T/$1.recorded"
	else
		expect "storm run --record $1 ($3 ranks)" 0 storm run --record "$T/$1.trace" \
			-N "$2" -n "$3" "$T/bcs/$1"
		cp "$T/out" "$T/$1.recorded"
	fi
	expect "storm replay $1" 0 storm replay "$T/$1.trace"
	if [ -n "${4:-}" ]; then
		[ "$(sum_of <"$T/out")" = "$(mpich_sum "$1" "$3")" ]
		set -- "$1" "$?" " and MPICH's"
	else
		grep -q "^$1: [0-9]* checks, 0 failed\$" "$T/out"
		set -- "$1" "$?" ", no check failed"
	fi
	if cmp -s "$T/$1.recorded" "$T/out" && [ "$2" = 0 ]; then
		ok "  output equals the recorded run's$3"
	else
		bad "  output differs from the recorded run's$3"
		diff "$T/$1.recorded" "$T/out" | head -10 | sed 's/^/     /'
	fi
}
record_replay cancel 2 4

# MPI-4 persistent collectives (pcoll.c: BCS-MPI only, Debian's MPICH 4.0.2
# gets some wrong) and MPI_Isendrecv (isendrecv.c: BCS-MPI only, MPICH
# 4.0.2 leaves its statuses empty and crashes on MPI_PROC_NULL): every check
# passes on each rank count, and a replay of a recorded run gives its output
for p in pcoll isendrecv; do
	for n in $RANKS; do
		o=$T/bcs/$p.$n.out
		record_arg "$p" "$n"
		timed storm run "${rec[@]}" -N "$(nodes "$n")" -n "$n" "$T/bcs/$p" >"$o" 2>"$o.err"
		passed "BCS-MPI $p, $n ranks" "$o" $?
	done
	record_replay "$p" 4 8
done

# intercommunicators (even and odd ranks): MPICH's answer on 1, 2 and 4
# nodes alike (the main loop ran 4 and 8 ranks on 4); then the calls
# BCS-MPI refuses on one (MPICH supports them): MPI_ERR_COMM each, and a
# fatal one ends the job naming the call
for nn in "1 4" "2 4" "1 8" "2 8"; do
	set -- $nn
	oc=()
	[ "$2" -gt $((4 * $1)) ] && oc=(--overcommit) # more ranks than CPUs
	o=$T/bcs/intercomm.$1.$2.out
	timed storm run "${oc[@]}" -N "$1" -n "$2" "$T/bcs/intercomm" >"$o" 2>"$o.err"
	passed "BCS-MPI intercomm, $2 ranks on $1 nodes" "$o" $?
	same_as_mpich "  same output as MPICH" intercomm "$2" "$o"
done
o=$T/bcs/refuse.out
timeout "$LIMIT" storm run -N 2 -n 4 "$T/bcs/intercomm" refuse >"$o" 2>"$o.err"
bad_end "BCS-MPI intercomm: a refused collective under ERRORS_ARE_FATAL ends the job" "$o" $? \
	refuse
if ! grep -q FAIL "$o" && grep -q 'MPI_Scan on an intercommunicator' "$o.err"; then
	ok "  MPI_ERR_COMM for each refused call, the fatal one named"
else
	bad "  a refused call answered otherwise, or the fatal one was not named"
	head -10 "$o" "$o.err" | sed 's/^/     | /'
fi

# ---- record and replay
# 16 rounds: an outcome among very many
expect "storm run --record" 0 storm run --record "$T/racy.trace" -N 4 -n 8 "$T/bcs/racy" 16
cp "$T/out" "$T/recorded.out"
check_size=$(stat -c %s "$T/racy.trace" 2>/dev/null || echo 0)
if [ "$check_size" -gt 0 ]; then ok "trace written ($check_size bytes)"; else bad "no trace"; fi
# three replays, so that an outcome that merely recurs cannot pass for one
for i in 1 2 3; do
	expect "storm replay ($i)" 0 storm replay "$T/racy.trace"
	if cmp -s "$T/recorded.out" "$T/out"; then
		ok "  output equals the recorded run's"
	else
		bad "  output differs from the recorded run's"
		diff "$T/recorded.out" "$T/out" | head -10 | sed 's/^/     /'
	fi
done

# non-blocking collectives: Test loops, Waitany and a wildcard receive
record_replay nbcoll 4 8
same_as_mpich "  recorded nbcoll output equals MPICH's" nbcoll 8 "$T/nbcoll.recorded"
# recorded at 8 ranks and replayed, the output both the recorded run's and
# MPICH's: persistent requests (a wildcard receive started again and again,
# Test loops), one-sided epochs (lock epochs ordered at quiescence),
# intercommunicators (wildcard receives name remote ranks), request-based
# one-sided operations (progress ships their batches), non-blocking
# duplicates, the v- and w- non-blocking collectives, graph topologies,
# subarray and darray types, Iscan/Iexscan, neighborhood collectives, the
# collectives between an intercommunicator's groups, the Wait/Test family (Testsome),
# ready sends, MPI_Request_get_status, generalized requests and MPI_Win_test
for p in persist rma intercomm rma_dyn idup nbcollv graph subarray nbscan neighbor icoll p2p reqstat; do
	record_replay "$p" 4 8 mpich
done

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
