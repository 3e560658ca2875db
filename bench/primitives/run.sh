#!/bin/sh
# Primitive benchmarks: storm's XFER-AND-SIGNAL / COMPARE-AND-WRITE (sn_bench)
# against fi_pingpong on the same libfabric provider and against MPICH.
# Run by `make bench` (after `make all`); BENCH_QUICK=1 for a shorter run,
# BENCH_PHASES="lat coll mpi" (the default) to choose what runs.
# Results: bench/results/primitives-<date>/results.jsonl (+ log.txt), and the
# "## Primitives (bench/primitives)" section of docs/BENCHMARKS.md.
set -u
cd "$(dirname "$0")/../.." || exit 1

QUICK=${BENCH_QUICK:-0}
PHASES=${BENCH_PHASES:-lat coll mpi}
phase() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }
PROVIDERS="tcp;ofi_rxm
shm
sockets
udp;ofi_rxd"
if [ "$QUICK" = 1 ]; then
	NODES="2 8 32"
	LAT_ITERS=300 LAT_BUDGET=2
	MCAST_ITERS=8 MCAST_BUDGET=6
	CAW_ITERS=100 CAW_BUDGET=2
	MPI_ITERS=20 MPI_BUDGET=2
	PP_RUNS=1
else
	NODES="2 4 8 16 32"
	LAT_ITERS=1000 LAT_BUDGET=5
	MCAST_ITERS=20 MCAST_BUDGET=15
	CAW_ITERS=200 CAW_BUDGET=4
	MPI_ITERS=30 MPI_BUDGET=6
	PP_RUNS=3
fi
CMD_TIMEOUT=420 # seconds, per command

stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/primitives-$stamp
mkdir -p "$RES" build/bench
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "primitives-$stamp" bench/results/primitives-latest
started=$(date +%s)

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

# Appends the JSON lines of a command to $OUT, tagged with the 1-minute load
# average at its start; a failed command leaves an "error" line instead.
# usage: record BENCH PROVIDER NODES -- command...
record() {
	bench=$1 prov=$2 nodes=$3
	shift 4
	l=$(load1)
	log "run: $*  (load $l)"
	tmp=$RES/.out
	timeout "$CMD_TIMEOUT" "$@" >"$tmp" 2>>"$LOG"
	rc=$?
	sed "s/}\$/,\"load1\":$l}/" "$tmp" | tee -a "$OUT" >&2
	if [ $rc -ne 0 ]; then
		log "FAILED ($rc): $*"
		printf '{"bench":"%s","provider":"%s","nodes":%s,"error":"exit %s","load1":%s}\n' \
			"$bench" "$(json_str "$prov")" "$nodes" "$rc" "$l" >>"$OUT"
	fi
	rm -f "$tmp"
}

# fi_pingpong: server and client on 127.0.0.1, RDM endpoints, pinned to two
# different CPUs (as sn_bench --pin 1 pins its two nodes): unpinned, the
# scheduler sometimes stacks both busy-polling processes on one CPU and each
# message then waits for a time slice (~4 ms). fi_pingpong prints the mean
# time per one-way transfer (usec/xfer, i.e. half a round trip), recorded as
# mean_us. sockets needs -d lo: its default domain is the first interface
# (eth0), on which the client's 127.0.0.1 control connection finds no peer.
CPUS=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
CPU_A=$(echo "$CPUS" | sed 's/[-,].*//')
CPU_B=$(echo "$CPUS" | awk -F'[-,]' '{ print (NF > 1 ? $2 : $1) }')
PP_PORT=$((20000 + $$ % 20000))
pingpong_once() { # provider size iterations -> usec/xfer or nothing
	dom=""
	[ "$1" = sockets ] && dom="-d lo"
	PP_PORT=$((PP_PORT + 1))
	# shellcheck disable=SC2086
	timeout 60 taskset -c "$CPU_A" fi_pingpong -p "$1" $dom -e rdm -I "$3" -S "$2" \
		-B "$PP_PORT" >/dev/null 2>>"$LOG" &
	srv=$!
	sleep 0.5
	# shellcheck disable=SC2086
	timeout 60 taskset -c "$CPU_B" fi_pingpong -p "$1" $dom -e rdm -I "$3" -S "$2" \
		-P "$PP_PORT" 127.0.0.1 2>>"$LOG" | awk 'NR > 1 && NF >= 8 { print $7 }'
	wait "$srv" 2>/dev/null
}

# Iterations for about one second per run, from a short probe (0: failed).
pingpong_iters() { # provider size
	if [ "$2" -ge 65536 ]; then probe_it=5 min_it=5; else probe_it=50 min_it=100; fi
	probe=$(pingpong_once "$1" "$2" $probe_it)
	[ -z "$probe" ] && { echo 0; return; }
	awk -v u="$probe" -v m=$min_it 'BEGIN { i = int(1e6 / (2 * u)); if (i < m) i = m;
		if (i > 5000) i = 5000; print i }'
}

pingpong() { # provider size iterations: one run, one JSON line
	l=$(load1)
	v=""
	[ "$3" -gt 0 ] && v=$(pingpong_once "$1" "$2" "$3")
	log "fi_pingpong -p '$1' -e rdm -S $2 -I $3: ${v:-failed} us/xfer"
	if [ -z "$v" ]; then
		printf '{"bench":"fi_pingpong","provider":"%s","nodes":2,"size":%s,"error":"no result","load1":%s}\n' \
			"$(json_str "$1")" "$2" "$l" >>"$OUT"
		return
	fi
	printf '{"bench":"fi_pingpong","provider":"%s","nodes":2,"size":%s,"mean_us":%s,"iters":%s,"spin":true,"pinned":true,"load1":%s}\n' \
		"$(json_str "$1")" "$2" "$v" "$3" "$l" | tee -a "$OUT" >&2
}

# ---------------------------------------------------------------- build
log "building sn_bench and mpi_peer"
make -s build/bin/sn_bench >>"$LOG" 2>&1 || { log "cannot build sn_bench"; exit 1; }
SN=build/bin/sn_bench
MPI_OK=1
if command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null; then
	mpicc.mpich -O2 -Wall -o build/bench/mpi_peer bench/primitives/mpi_peer.c >>"$LOG" 2>&1 || MPI_OK=0
else
	MPI_OK=0
fi
[ $MPI_OK = 1 ] || log "MPICH not available (make bench-deps): skipping the MPI reference"
command -v fi_pingpong >/dev/null || log "fi_pingpong not found (libfabric-bin): no baseline"
command -v taskset >/dev/null || log "taskset not found (util-linux): no fi_pingpong baseline"

{
	echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"quick\":$QUICK,\"nproc\":$(nproc),\"cpu\":\"$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")\",\"kernel\":\"$(uname -r)\",\"libfabric\":\"$(fi_info --version 2>/dev/null | awk '/^libfabric:/ {print $2}')\",\"mpich\":\"$(mpichversion 2>/dev/null | awk '/MPICH Version/ {print $3}')\",\"mpich_device\":\"$(mpichversion 2>/dev/null | awk '/MPICH Device/ {print $3}')\",\"load1_start\":$(load1)}"
} >>"$OUT"

# ---------------------------------------------------------------- latency
# 8 B: $PP_RUNS fi_pingpong runs interleaved with as many sn_bench runs (the
# report takes the run with the median value of each); then 64 KiB and 1 MiB
# once each, 8 B without busy polling, and 8 B with a local event per XFER.
# sn_bench's XFERs ask for no local event unless --local-ev 1: the pong is
# the confirmation, as in fi_pingpong and in a daemon answering a request.
HAVE_PP=0
command -v fi_pingpong >/dev/null && command -v taskset >/dev/null && HAVE_PP=1
phase lat && echo "$PROVIDERS" | while IFS= read -r p; do
	for size in 8 65536 1048576; do
		it=0
		[ $HAVE_PP = 1 ] && it=$(pingpong_iters "$p" $size)
		r=0
		runs=1
		[ $size = 8 ] && runs=$PP_RUNS
		while [ $r -lt $runs ]; do
			[ $HAVE_PP = 1 ] && pingpong "$p" $size "$it"
			record xfer_lat "$p" 2 -- $SN --provider "$p" --nodes 2 --test lat --size $size \
				--pin 1 --iters $LAT_ITERS --budget-s $LAT_BUDGET
			r=$((r + 1))
		done
	done
	record xfer_lat "$p" 2 -- $SN --provider "$p" --nodes 2 --test lat --size 8 --spin 0 \
		--pin 1 --iters $LAT_ITERS --budget-s $LAT_BUDGET
	# the same ping-pong with a local event on every XFER (so every XFER
	# is acknowledged by its destination): what delivery confirmation costs
	record xfer_lat "$p" 2 -- $SN --provider "$p" --nodes 2 --test lat --size 8 --local-ev 1 \
		--pin 1 --iters $LAT_ITERS --budget-s $LAT_BUDGET
done

# ---------------------------------------------------------------- multicast, CAW
phase coll && for n in $NODES; do
	echo "$PROVIDERS" | while IFS= read -r p; do
		record xfer_mcast "$p" "$n" -- $SN --provider "$p" --nodes "$n" --test mcast \
			--iters $MCAST_ITERS --budget-s $MCAST_BUDGET
		# busy polling only where the nodes fit on the cores
		[ "$n" = 2 ] && record xfer_mcast "$p" "$n" -- $SN --provider "$p" --nodes "$n" \
			--test mcast --spin 1000000 --iters $MCAST_ITERS --budget-s $CAW_BUDGET
		record caw "$p" "$n" -- $SN --provider "$p" --nodes "$n" --test caw \
			--iters $CAW_ITERS --budget-s $CAW_BUDGET
		record caw "$p" "$n" -- $SN --provider "$p" --nodes "$n" --test caw --spin 1000000 \
			--iters $CAW_ITERS --budget-s $CAW_BUDGET
		# a write: prepare and commit, two round trips to the answer
		record caw_write "$p" "$n" -- $SN --provider "$p" --nodes "$n" --test caw_write \
			--iters $CAW_ITERS --budget-s $CAW_BUDGET
	done
done

# ---------------------------------------------------------------- MPICH
# Hydra's default (no binding; -bind-to none measured the same). MPICH's ch4
# device busy-polls without yielding (MPIR_CVAR_POLLS_BEFORE_YIELD is ch3
# only), so with more ranks than cores every step waits for a time slice.
if [ $MPI_OK = 1 ] && phase mpi; then
	for n in $NODES; do
		record mpi mpich "$n" -- mpiexec.mpich -n "$n" build/bench/mpi_peer \
			--iters $MPI_ITERS --budget-s $MPI_BUDGET
	done
fi

ended=$(date +%s)
echo "{\"bench\":\"meta_end\",\"seconds\":$((ended - started)),\"load1_end\":$(load1)}" >>"$OUT"
log "done in $((ended - started)) s: $OUT"

python3 bench/primitives/report.py "$OUT" docs/BENCHMARKS.md || exit 1
log "wrote docs/BENCHMARKS.md"
