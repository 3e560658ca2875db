#!/bin/bash
# Programs nobody here wrote the logic of: equivalents of the OSU
# micro-benchmarks (point to point, collectives and one-sided) and of the
# mpitutorial.com examples (tests/mpi/thirdparty: our own code, behaving and
# printing as the originals, which Debian does not package). Each is built
# with bcs-mpicc/bcs-mpicxx and run under storm run on a 4-node virtual
# cluster this script starts; every rank's lines (labelled, each rank's in
# its order) must be MPICH's (mpicc/mpicxx, mpiexec). The timing columns are
# masked (the sizes, rows and validation columns stay); the processor names
# of mpi_hello_world too. MPICH's outputs, so masked, are kept as sha256
# sums in mpich.sums with the sums of the sources and runs they came from:
# a source or run changed since fails the suite until they are written
# again (--mpich-only --write-sums); an output that differs runs MPICH there
# and then to show the difference. The largest run of each program is
# recorded (storm run --record) and `storm replay` must print it again.
# Every daemon is taken down on exit.
#
# Usage: run.sh [--mpich-only [--write-sums]] [BUILD_BIN_DIR]
#   --mpich-only   only MPICH's runs (each must exit 0)
#   --write-sums   and, if they all did, tests/mpi/thirdparty/mpich.sums
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../cluster/lib.sh
. "$HERE/../../cluster/lib.sh"
MPICH_ONLY=0 WRITE_SUMS=0 BIN=build/bin
while [ $# -gt 0 ]; do
	case $1 in
	--mpich-only) MPICH_ONLY=1 ;;
	--write-sums) WRITE_SUMS=1 ;;
	-h | --help) sed -n '2,24s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
	*) BIN=$1 ;;
	esac
	shift
done
BIN=$(cd "$BIN" && pwd) || exit 2
T=$(mktemp -d "${TMPDIR:-/tmp}/storm-thirdparty.XXXXXX")
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
LIMIT=${MPI_TEST_TIMEOUT:-120}
CFLAGS=(-O1 -Wall -Wextra -Werror)
# GCC 12 warns (wrongly) on MPICH's MPI_STATUSES_IGNORE passed as an array
MPICH_CFLAGS=("${CFLAGS[@]}" -Wno-stringop-overflow)

# NAME|RANKS|ARGS|MODE: the runs (MODE: exact, timing or procname). Sizes
# and iterations are cut down from the originals' defaults: under BCS-MPI a
# blocking call costs a timeslice or two. The seeds stand for the
# originals' time(NULL).
RUNS=(
	"osu_latency|2|-m 65536 -i 10 -x 2 -c|timing"
	"osu_bw|2|-m 1048576 -i 3 -x 1 -W 16 -c|timing"
	"osu_bibw|2|-m 1048576 -i 3 -x 1 -W 16 -c|timing"
	"osu_bcast|4 8|-m 262144 -i 8 -x 2 -c|timing"
	"osu_reduce|4 8|-m 262144 -i 8 -x 2 -c|timing"
	"osu_allreduce|3 4 8|-m 262144 -i 8 -x 2 -c|timing"
	"osu_alltoall|4 8|-m 65536 -i 8 -x 2 -c|timing"
	"osu_barrier|2 8|-i 20 -x 2|timing"
	"osu_put_latency|2|-m 65536 -i 10 -x 2 -c -w dynamic -s flush|timing"
	"osu_get_latency|2|-m 65536 -i 10 -x 2 -c -w create -s lock|timing"
	"osu_put_bw|2|-m 262144 -i 3 -x 1 -W 16 -c -w allocate -s lock_all|timing"
	"osu_get_bw|2|-m 262144 -i 3 -x 1 -W 16 -c -w dynamic -s flush_local|timing"
	"mpi_hello_world|1 4 8||procname"
	"send_recv|2 4||exact"
	"ping_pong|2||exact"
	"ring|2 3 8||exact"
	"check_status|2|4711|exact"
	"probe|2|4711|exact"
	"random_walk|2 4|100 500 20 7|exact"
	"avg|4 8|1000 3|exact"
	"all_avg|4 8|1000 3|exact"
	"reduce_avg|2 4 8|1000 3|exact"
	"reduce_stddev|2 4 8|1000 3|exact"
	"my_bcast|4 8||exact"
	"compare_bcast|4|10000 10|timing"
	"split|4 8||exact"
	"groups|4 8||exact"
)

cleanup() {
	if [ -f "$C/storm.conf" ]; then storm cluster down --dir "$C" >/dev/null 2>&1; fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# nodes N: the virtual nodes for N ranks (two ranks a node past 4)
nodes() { if [ "$1" -gt 4 ]; then echo 4; else echo "$1"; fi; }

# norm MODE FILE: FILE's labelled lines, each rank's in its order, with
# what may differ masked
norm() {
	local mask
	case $1 in
	timing) mask='/^[0-9]+: #/!s/[[:space:]]*[0-9]+\.[0-9]+/ T/g' ;;
	procname) mask='s/from processor [^,]*,/from processor P,/' ;;
	*) mask='' ;;
	esac
	sort -s -t: -k1,1n "$2" | sed -E "$mask"
}

# same NAME MODE WANT GOT: normalized, GOT equals WANT (and WANT has lines)
same() {
	if [ -s "$3" ] && [ "$(norm "$2" "$3")" = "$(norm "$2" "$4")" ]; then ok "$1"; else
		bad "$1"
		diff <(norm "$2" "$3") <(norm "$2" "$4") | head -10 | sed 's/^/     /'
	fi
}

mkdir -p "$T/mpich" "$T/bcs"
cc -O2 -shared -fPIC -o "$T/mpich_yield.so" "$HERE/../mpich_yield.c" -ldl || bad "cc mpich_yield.c"
# build IMPL P: P with MPICH's compiler (mpich) or BCS-MPI's (bcs), its
# compiler's name in $T/IMPL/P.cc, its errors in $T/IMPL/P.cc.err, a file
# $T/IMPL/P.built if it built
build() {
	local impl=$1 p=$2 src cc std
	if [ -f "$HERE/$p.cpp" ]; then
		src=$HERE/$p.cpp cc=bcs-mpicxx std=-std=c++17
		[ "$impl" = bcs ] || cc=mpicxx.mpich
	else
		src=$HERE/$p.c cc=bcs-mpicc std=-std=c11
		[ "$impl" = bcs ] || cc=mpicc.mpich
	fi
	echo "$cc" >"$T/$impl/$p.cc"
	if [ "$impl" = bcs ]; then
		$cc $std "${CFLAGS[@]}" -o "$T/bcs/$p" "$src" -lm 2>"$T/bcs/$p.cc.err"
	else
		$cc $std "${MPICH_CFLAGS[@]}" -o "$T/mpich/$p" "$src" -lm 2>"$T/mpich/$p.cc.err"
	fi && : >"$T/$impl/$p.built"
}
build_bcs() { build bcs "$1"; }
build_mpich() { build mpich "$1"; }
# built IMPL: a check for each program's build
built() {
	local r p
	for r in "${RUNS[@]}"; do
		p=${r%%|*}
		if [ -f "$T/$1/$p.built" ]; then
			ok "$p: $(cat "$T/$1/$p.cc")"
		else
			bad "$p: build with $(cat "$T/$1/$p.cc")"
			head -20 "$T/$1/$p.cc.err" | sed 's/^/     /'
		fi
	done
}
# mpich_run P N ARGS: P's run on N ranks under MPICH, its labelled output in
# $T/mpich/P.N.out (each rank's stdout in a file of its own, labelled here:
# mpiexec's own labels, -prepend-pattern, go by the chunks it reads, not by
# lines), its exit code returned
mpich_run() {
	local p=$1 n=$2 m=$T/mpich/$1.$2.out rc i
	rm -f "$m".rank.*
	# shellcheck disable=SC2086 # ARGS are words
	timeout "$LIMIT" mpiexec.mpich -genv LD_PRELOAD "$T/mpich_yield.so" \
		-outfile-pattern "$m.rank.%r" -n "$n" "$T/mpich/$p" $3 >"$m.err" 2>&1
	rc=$?
	for i in $(seq 0 $((n - 1))); do
		[ ! -f "$m.rank.$i" ] || sed "s/^/$i: /" "$m.rank.$i"
	done >"$m"
	return $rc
}

# MPICH's outputs as sums (mpich.sums): "src FILE SUM" for each source, "runs
# SUM" for the table of runs, "out PROG RANKS SUM" for each masked output
SUMS=$HERE/mpich.sums
# shellcheck source=../sums.sh
. "$HERE/../sums.sh"
sources() { (cd "$HERE" && ls ./*.c ./*.cpp ./*.h | sed 's|^\./||'); }
runs_sum() { printf '%s\n' "${RUNS[@]}" | sum_of; }

if [ "$MPICH_ONLY" = 1 ]; then
	echo "# MPICH ($(mpiexec.mpich --version 2>/dev/null | sed -n 's/^ *Version: *//p'))"
	par_each 2 build_mpich "${RUNS[@]%%|*}"
	built mpich
	: >"$T/outs"
	for r in "${RUNS[@]}"; do
		IFS='|' read -r p ranks args mode <<<"$r"
		for n in $ranks; do
			mpich_run "$p" "$n" "$args"
			rc=$?
			if [ $rc = 0 ] && [ -s "$T/mpich/$p.$n.out" ]; then
				ok "MPICH $p, $n ranks: exit 0"
			else
				bad "MPICH $p, $n ranks: exit $rc"
				head -5 "$T/mpich/$p.$n.out.err" | sed 's/^/     /'
			fi
			echo "out $p $n $(norm "$mode" "$T/mpich/$p.$n.out" | sum_of)" >>"$T/outs"
		done
	done
	if [ "$WRITE_SUMS" = 1 ] && [ "$fails" = 0 ]; then
		{
			echo "# MPICH's outputs of tests/mpi/thirdparty's runs, masked as run.sh"
			echo "# compares them, as sha256 sums. Written by run.sh --mpich-only"
			echo "# --write-sums; the sources' and the runs' sums say what they came from."
			echo "mpich $(mpiexec.mpich --version 2>/dev/null | sed -n 's/^ *Version: *//p')"
			for f in $(sources); do echo "src $f $(sum_of <"$HERE/$f")"; done
			echo "runs $(runs_sum)"
			cat "$T/outs"
		} >"$SUMS"
		echo "info: wrote $SUMS"
	fi
	echo "$checks checks, $fails failed (MPICH only)"
	[ "$fails" = 0 ]
	exit
fi

# same_as_mpich NAME P N ARGS MODE OUT: OUT, masked, is MPICH's; if not,
# MPICH's run here and now shows how it differs
same_as_mpich() {
	local want
	want=$(mpich_sum "$2" "$3")
	if [ -n "$want" ] && [ "$(norm "$5" "$6" | sum_of)" = "$want" ]; then
		ok "$1"
		return
	fi
	if [ -z "$want" ]; then bad "$1: mpich.sums holds no output of $2 on $3 ranks"; else bad "$1"; fi
	if ! command -v mpicc.mpich >/dev/null; then
		echo "     (no MPICH here to show how: install mpich)"
	elif build mpich "$2"; then
		mpich_run "$2" "$3" "$4"
		echo "     MPICH's run here (exit $?) against this one:"
		diff <(norm "$5" "$T/mpich/$2.$3.out") <(norm "$5" "$6") | head -10 | sed 's/^/     /'
		[ "$(norm "$5" "$T/mpich/$2.$3.out")" != "$(norm "$5" "$6")" ] ||
			echo "     the same: mpich.sums is not this MPICH's (--mpich-only --write-sums)"
	fi
}

echo "# build (BCS-MPI), beside the cluster's start"
par_each 2 build_bcs "${RUNS[@]%%|*}" &
builds=$!
expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up --nodes 4 --dir "$C" \
	--timeslice-us 2000 --down-after-ms 10000
wait "$builds"
built bcs
# shellcheck disable=SC2046 # file names are words
mapfile -t stale < <(sums_stale "$HERE" $(sources))
[ "$(sed -n 's/^runs //p' "$SUMS")" = "$(runs_sum)" ] || stale+=("the table of runs")
if [ ${#stale[@]} = 0 ]; then
	ok "MPICH's outputs (mpich.sums, MPICH $(sed -n 's/^mpich //p' "$SUMS")) are of the sources and runs here"
else
	bad "mpich.sums is older than ${stale[*]}: run tests/mpi/thirdparty/run.sh --mpich-only --write-sums"
fi

start=$(date +%s%N)
for r in "${RUNS[@]}"; do
	IFS='|' read -r p ranks args mode <<<"$r"
	last=${ranks##* }
	for n in $ranks; do
		b=$T/bcs/$p.$n.out rec=()
		[ "$n" = "$last" ] && rec=(--record "$T/$p.trace")
		t0=$(date +%s%N)
		# shellcheck disable=SC2086 # ARGS are words
		timeout "$LIMIT" storm run -l "${rec[@]}" -N "$(nodes "$n")" -n "$n" \
			"$T/bcs/$p" $args >"$b" 2>"$b.err"
		brc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		if [ $brc = 0 ]; then
			ok "$p, $n ranks${rec:+, recorded}: exit 0 ($ms ms)"
		else
			bad "$p, $n ranks: exit $brc"
			head -5 "$b.err" | sed 's/^/     /'
		fi
		case $mode in
		timing) what=" (timings masked)" ;;
		procname) what=" (processor names masked)" ;;
		*) what= ;;
		esac
		same_as_mpich "  same output as MPICH's$what" "$p" "$n" "$args" "$mode" "$b"
	done
	# the recorded run again
	r=$T/bcs/$p.replay.out
	timeout "$LIMIT" storm replay -l "$T/$p.trace" >"$r" 2>"$r.err"
	rc=$?
	if [ $rc = 0 ]; then ok "  storm replay (exit 0)"; else
		bad "  storm replay: exit $rc"
		head -5 "$r.err" | sed 's/^/     /'
	fi
	same "  replay prints the recorded run's output" "$mode" "$T/bcs/$p.$last.out" "$r"
done
echo "info: the runs took $((($(date +%s%N) - start) / 1000000)) ms"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
