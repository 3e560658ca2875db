#!/bin/bash
# Programs nobody here wrote the logic of: equivalents of the OSU
# micro-benchmarks (point to point, collectives and one-sided) and of the
# mpitutorial.com examples (tests/mpi/thirdparty: our own code, behaving and
# printing as the originals, which Debian does not package). Each is built
# with MPICH's mpicc/mpicxx and with bcs-mpicc/bcs-mpicxx, run under
# mpiexec and under storm run on a 4-node virtual cluster this script
# starts; every rank's lines (labelled, each rank's in its order) must be
# the same. The timing columns are masked (the sizes, rows and validation
# columns stay); the processor names of mpi_hello_world too. The largest
# run of each program is recorded (storm run --record) and `storm replay`
# must print it again. Every daemon is taken down on exit.
#
# Usage: run.sh [BUILD_BIN_DIR]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../../cluster/lib.sh
. "$HERE/../../cluster/lib.sh"
BIN=$(cd "${1:-build/bin}" && pwd) || exit 2
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
	if [ -n "${MPICH_PID:-}" ]; then
		# its running timeout too, which passes the TERM on to mpiexec
		local kids
		kids=$(pgrep -P "$MPICH_PID")
		kill "$MPICH_PID" $kids 2>/dev/null
	fi
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

echo "# build (MPICH, BCS-MPI), beside the cluster's start"
mkdir -p "$T/mpich" "$T/bcs"
cc -O2 -shared -fPIC -o "$T/mpich_yield.so" "$HERE/../mpich_yield.c" -ldl || bad "cc mpich_yield.c"
# build P: P with MPICH's compiler and with BCS-MPI's; its compilers' names
# in $T/P.cc, its errors in $T/P.cc.err, a file $T/P.built if both built
build() {
	local p=$1 src mcc bcc std
	if [ -f "$HERE/$p.cpp" ]; then
		src=$HERE/$p.cpp mcc=mpicxx.mpich bcc=bcs-mpicxx std=-std=c++17
	else
		src=$HERE/$p.c mcc=mpicc.mpich bcc=bcs-mpicc std=-std=c11
	fi
	echo "$mcc and $bcc" >"$T/$p.cc"
	$mcc $std "${MPICH_CFLAGS[@]}" -o "$T/mpich/$p" "$src" -lm 2>"$T/$p.cc.err" &&
		$bcc $std "${CFLAGS[@]}" -o "$T/bcs/$p" "$src" -lm 2>>"$T/$p.cc.err" &&
		: >"$T/$p.built"
}
par_each 2 build "${RUNS[@]%%|*}" &
builds=$!
expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up --nodes 4 --dir "$C" \
	--timeslice-us 2000 --down-after-ms 10000
wait "$builds"
for r in "${RUNS[@]}"; do
	p=${r%%|*}
	if [ -f "$T/$p.built" ]; then
		ok "$p: $(cat "$T/$p.cc")"
	else
		bad "$p: build"
		head -20 "$T/$p.cc.err" | sed 's/^/     /'
	fi
done

# mpich_runs: every run under MPICH, one after another, beside BCS-MPI's
# runs and replays (the two share nothing but the CPUs, and a BCS-MPI job
# mostly waits for its slices): each run's output in $T/mpich/P.N.out, its
# exit code in P.N.rc, then a line "ran P N." in $T/mpich/progress, which
# BCS-MPI's side waits for before it compares
mpich_runs() {
	local r p ranks args mode n m i
	for r in "${RUNS[@]}"; do
		IFS='|' read -r p ranks args mode <<<"$r"
		for n in $ranks; do
			m=$T/mpich/$p.$n.out
			# each rank's stdout in a file of its own, labelled here:
			# mpiexec's own labels (-prepend-pattern) go by the chunks
			# it reads, not by lines
			rm -f "$m".rank.*
			# shellcheck disable=SC2086 # ARGS are words
			timeout "$LIMIT" mpiexec.mpich -genv LD_PRELOAD "$T/mpich_yield.so" \
				-outfile-pattern "$m.rank.%r" -n "$n" "$T/mpich/$p" $args >"$m.err" 2>&1
			echo $? >"$m.rc"
			for i in $(seq 0 $((n - 1))); do
				[ ! -f "$m.rank.$i" ] || sed "s/^/$i: /" "$m.rank.$i"
			done >"$m"
			echo "ran $p $n." >>"$T/mpich/progress"
		done
	done
}
: >"$T/mpich/progress"
mpich_runs &
MPICH_PID=$!

start=$(date +%s%N)
for r in "${RUNS[@]}"; do
	IFS='|' read -r p ranks args mode <<<"$r"
	last=${ranks##* }
	for n in $ranks; do
		m=$T/mpich/$p.$n.out b=$T/bcs/$p.$n.out rec=()
		[ "$n" = "$last" ] && rec=(--record "$T/$p.trace")
		t0=$(date +%s%N)
		# shellcheck disable=SC2086 # ARGS are words
		timeout "$LIMIT" storm run -l "${rec[@]}" -N "$(nodes "$n")" -n "$n" \
			"$T/bcs/$p" $args >"$b" 2>"$b.err"
		brc=$?
		ms=$((($(date +%s%N) - t0) / 1000000))
		wait_log "$T/mpich/progress" "ran $p $n." "$LIMIT" >/dev/null
		mrc=$(cat "$m.rc" 2>/dev/null || echo "none")
		if [ "$mrc" = 0 ] && [ $brc = 0 ]; then
			ok "$p, $n ranks${rec:+, recorded}: exit 0 under both ($ms ms)"
		else
			bad "$p, $n ranks: exit $mrc under MPICH, $brc under BCS-MPI"
			head -5 "$m.err" "$b.err" | sed 's/^/     /'
		fi
		case $mode in
		timing) what=" (timings masked)" ;;
		procname) what=" (processor names masked)" ;;
		*) what= ;;
		esac
		same "  same output as MPICH's$what" "$mode" "$m" "$b"
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
wait "$MPICH_PID"
MPICH_PID=
echo "info: the runs took $((($(date +%s%N) - start) / 1000000)) ms"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
