#!/bin/bash
# BCS-MPI against MPICH: the same plain-MPI programs of
# bench/mpi built twice, with MPICH's mpicc and with storm's bcs-mpicc, and
# run in the same run, like with like:
#   shm  BCS-MPI on a virtual cluster over libfabric's `shm` provider
#        against MPICH 4.0.2 (Debian: ch4:ucx) with its shared memory (defaults)
#   tcp  BCS-MPI over `tcp;ofi_rxm` against MPICH forced onto TCP:
#        MPIR_CVAR_NOLOCAL=1 (no intra-node shared memory in ch4) and
#        UCX_TLS=tcp,self UCX_NET_DEVICES=lo (UCX's TCP transport on loopback);
#        verified each run by the loopback byte counter: a streaming-bandwidth
#        run must put at least its payload through `lo` (and the shm one must not).
# BCS-MPI runs with `storm run -N NODES -n RANKS` on a fresh `storm cluster up`
# (one rank per virtual node unless BENCH_MPI_RPN says otherwise, so messages
# cross the fabric as on a real cluster); MPICH with `mpiexec -n RANKS` while no
# storm cluster is up. Repetitions alternate which goes first.
#
# Phases (BENCH_MPI_PHASES, default all):
#   apps    sweep (blocking), sweep --nb, stencil and micro --allreduce at each
#           of BENCH_MPI_RANKS, both transports, BENCH_MPI_REPS repetitions
#   slices  BCS-MPI (shm, BENCH_MPI_SLICE_RANKS ranks) over a sweep of timeslices
#   micro   ping-pong latency and streaming bandwidth, 2 ranks, both transports
#   record  `storm run --record` against without (sweep --nb, stencil, racy):
#           run time and trace bytes (per wildcard receive for racy)
#   racy    bench/mpi/racy.c BENCH_MPI_RACY_RUNS times under each: distinct
#           outcomes; and one BCS-MPI run recorded and replayed (storm replay)
#           10 times: the replays' outcomes against the recorded one
#
# usage: bench/mpi/run.sh [--quick]
#   --quick  a smoke run (about a minute): 4 ranks, shm, small problems, one
#            repetition; exits non-zero when a run fails, when a checksum
#            differs between MPICH and BCS-MPI or when a replayed BCS-MPI
#            racy run does not reproduce the recorded outcome. Results go to bench/results/mpi-quick-<date>.
# Settings (environment):
#   BENCH_MPI_RANKS="4 8 16"  BENCH_MPI_TRANSPORTS="shm tcp"  BENCH_MPI_REPS=3
#   BENCH_MPI_TIMESLICE=1000 (us, the BCS-MPI cluster of the apps/micro/record/racy phases)
#   BENCH_MPI_SLICES="250 500 1000 2000 5000"  BENCH_MPI_SLICE_RANKS=8
#   BENCH_MPI_RECORD_RANKS="8 16 64" (the record phase; at RPN 1, as many nodes)
#   BENCH_MPI_RECORD_RACY_RANKS (those of the record phase's rank counts racy
#                    runs at, default all of them; the mini-apps run at each)
#   BENCH_MPI_RPN=1 (ranks per virtual node; 2: the micro phase's two ranks
#                    share a node)  BENCH_MPI_RACY_RUNS=20
#   BENCH_MPI_MICRO_MAX=1048576 (the micro phase's largest message; bandwidth
#                    goes by 4 from 256 KiB: 4194304 adds 4 MiB)
#   BENCH_MPI_SWEEP="--nx 64 --ny 64 --nz 64 --mk 16 --iters 2" (sweep's problem)
#   BENCH_MPI_STENCIL="--steps 30" (stencil's problem)
#   BENCH_MPI_STORM_BUILD=DIR  storm and bcs-mpicc from DIR/bin (default build/)
#   BENCH_MPI_NOTE="..."  a sentence for the report (where that storm came from)
#   BENCH_MPI_UP_ARGS="..."  more `storm cluster up` options (e.g. --bcs-data-tags 0)
#   BENCH_MPI_BCS=0  MPICH only (also what happens when bcs-mpicc or storm is missing
#                    or a BCS-MPI smoke run fails: the results say so)
# Results: bench/results/mpi-<date>/results.jsonl (+ log.txt), symlink
# bench/results/mpi-latest; `make bench-mpi` then runs bench/mpi/report.py,
# which writes the "## BCS-MPI" section of docs/BENCHMARKS.md.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)

QUICK=${BENCH_QUICK:-0}
case "${1:-}" in
--quick) QUICK=1 ;;
"") ;;
-h | --help)
	sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "bench/mpi/run.sh: unknown option '$1' (see --help)" >&2
	exit 2
	;;
esac

if [ "$QUICK" = 1 ]; then
	RANKS=${BENCH_MPI_RANKS:-4}
	TRANSPORTS=${BENCH_MPI_TRANSPORTS:-shm}
	REPS=${BENCH_MPI_REPS:-1}
	SLICES=${BENCH_MPI_SLICES:-}
	RACY_RUNS=${BENCH_MPI_RACY_RUNS:-5}
	REPLAYS=3
	SWEEP_ARGS=${BENCH_MPI_SWEEP:---nx 24 --ny 24 --nz 16 --mk 4 --iters 2}
	STENCIL_ARGS=${BENCH_MPI_STENCIL:---nx 24 --ny 24 --nz 24 --steps 10}
	PHASES=${BENCH_MPI_PHASES:-apps micro record racy}
	MICRO_MAX=4096 BUDGET_MS=50
	RUN_TIMEOUT=60
	TAG=mpi-quick
else
	RANKS=${BENCH_MPI_RANKS:-4 8 16}
	TRANSPORTS=${BENCH_MPI_TRANSPORTS:-shm tcp}
	REPS=${BENCH_MPI_REPS:-3}
	SLICES=${BENCH_MPI_SLICES-250 500 1000 2000 5000}
	RACY_RUNS=${BENCH_MPI_RACY_RUNS:-20}
	REPLAYS=10
	SWEEP_ARGS=${BENCH_MPI_SWEEP:---nx 64 --ny 64 --nz 64 --mk 16 --iters 2}
	STENCIL_ARGS=${BENCH_MPI_STENCIL:---steps 30}
	PHASES=${BENCH_MPI_PHASES:-apps slices micro record racy}
	MICRO_MAX=1048576 BUDGET_MS=300
	RUN_TIMEOUT=600
	TAG=mpi
fi
MICRO_MAX=${BENCH_MPI_MICRO_MAX:-$MICRO_MAX}
TS=${BENCH_MPI_TIMESLICE:-1000}
SLICE_RANKS=${BENCH_MPI_SLICE_RANKS:-8}
# the record phase's rank counts: its overhead where traces are largest
if [ "$QUICK" = 1 ]; then RECORD_RANKS=${BENCH_MPI_RECORD_RANKS:-$RANKS}
else RECORD_RANKS=${BENCH_MPI_RECORD_RANKS:-8 16 64}; fi
RECORD_RACY_RANKS=${BENCH_MPI_RECORD_RACY_RANKS:-$RECORD_RANKS}
RPN=${BENCH_MPI_RPN:-1}
WANT_BCS=${BENCH_MPI_BCS:-1}
phase() { case " $PHASES " in *" $1 "*) return 0 ;; esac; return 1; }

SB=${BENCH_MPI_STORM_BUILD:-$TOP/build} # where storm and bcs-mpicc come from
STORM=$SB/bin/storm
BCSCC=$SB/bin/bcs-mpicc
BIN=$TOP/build/bench/mpi
CDIR=${STORM_MPIBENCH_DIR:-/tmp/mpibench/cluster}
mkdir -p "$(dirname "$CDIR")" # cluster up creates the directory, not its parents
export STORM_CONF=$CDIR/storm.conf
WORK=$(mktemp -d /tmp/mpibench-work.XXXXXX)

stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/$TAG-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "$TAG-$stamp" "bench/results/$TAG-latest"
started=$(date +%s)
FAILS=0

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", b - a }'; }
lo_bytes() { awk '/^ *lo:/ { print $2 }' /proc/net/dev; }
skip() { # WHAT WHY
	log "skipping $1: $2"
	printf '{"bench":"skip","what":"%s","why":"%s"}\n' "$1" "$(json_str "$2")" >>"$OUT"
}

CLUSTER_UP=0
cleanup() {
	[ $CLUSTER_UP = 1 ] && timeout 60 "$STORM" cluster down --dir "$CDIR" >>"$LOG" 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM

# ------------------------------------------------------------------ build
CFLAGS="-std=c11 -O2 -Wall -Wextra -Werror"
PROGS="sweep stencil micro racy"
build() { # CC DIR
	mkdir -p "$2"
	for p in $PROGS; do
		"$1" $CFLAGS bench/mpi/$p.c -o "$2/$p" -lm >>"$LOG" 2>&1 || return 1
	done
}
command -v mpicc.mpich >/dev/null && command -v mpiexec.mpich >/dev/null ||
	{ log "mpicc/mpiexec missing (Debian: mpich libmpich-dev; make bench-deps)"; exit 1; }
build mpicc.mpich "$BIN/mpich" || { log "building with mpicc failed (see $LOG)"; exit 1; }

# cluster_up NODES PROVIDER TIMESLICE_US
cluster_up() {
	# DOWN after 10 s of silence: at a load of 40 on 2 cores a node daemon
	# can miss 2 s of strobes and take a job down with it
	[ $CLUSTER_UP = 1 ] && cluster_down
	if timeout 120 "$STORM" cluster up --nodes "$1" --dir "$CDIR" --provider "$2" \
		--timeslice-us "$3" --down-after-ms 10000 ${BENCH_MPI_UP_ARGS:-} >>"$LOG" 2>&1; then
		CLUSTER_UP=1
		return 0
	fi
	timeout 60 "$STORM" cluster down --dir "$CDIR" >>"$LOG" 2>&1
	return 1
}
cluster_down() {
	timeout 60 "$STORM" cluster down --dir "$CDIR" >>"$LOG" 2>&1
	CLUSTER_UP=0
}
provider() { [ "$1" = tcp ] && echo 'tcp;ofi_rxm' || echo shm; }
nodes_for() { echo $((($1 + RPN - 1) / RPN)); }

BCS=0
if [ "$WANT_BCS" = 0 ]; then
	skip bcs "BENCH_MPI_BCS=0: MPICH only"
elif [ ! -x "$BCSCC" ] || [ ! -x "$STORM" ]; then
	skip bcs "build/bin/bcs-mpicc or build/bin/storm missing (make all): MPICH only"
elif ! build "$BCSCC" "$BIN/bcs"; then
	skip bcs "building with bcs-mpicc failed (see log.txt): MPICH only"
elif ! cluster_up 2 shm "$TS"; then
	skip bcs "storm cluster up (2 nodes, shm) failed (see log.txt): MPICH only"
elif ! timeout 60 "$STORM" run -N 2 -n 2 "$BIN/bcs/micro" --pingpong --max-bytes 8 \
	--budget-ms 10 >"$WORK/smoke" 2>>"$LOG" || ! grep -q '"test":"pingpong"' "$WORK/smoke"; then
	cat "$WORK/smoke" >>"$LOG"
	skip bcs "BCS-MPI smoke run (micro --pingpong on 2 nodes) failed (see log.txt): MPICH only"
	cluster_down
else
	BCS=1
	cluster_down
fi

echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"quick\":$QUICK,\"bcs\":$BCS,\"reps\":$REPS,\"ranks\":\"$RANKS\",\"transports\":\"$TRANSPORTS\",\"timeslice_us\":$TS,\"slices\":\"$SLICES\",\"rpn\":$RPN,\"phases\":\"$PHASES\",\"sweep_args\":\"$SWEEP_ARGS\",\"stencil_args\":\"$STENCIL_ARGS\",\"mpich\":\"$(json_str "$(mpichversion 2>/dev/null | sed -n 's/^MPICH \(Version\|Device\):[[:space:]]*/\1 /p' | tr '\n' ' ')")\",\"nproc\":$(nproc),\"cpu\":\"$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")\",\"kernel\":\"$(uname -r)\",\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null)\",\"storm_build\":\"$(json_str "$SB")\",\"note\":\"$(json_str "${BENCH_MPI_NOTE:-}")\",\"up_args\":\"$(json_str "${BENCH_MPI_UP_ARGS:-}")\",\"load1_start\":$(load1)}" >>"$OUT"
log "bench/mpi: BCS-MPI $([ $BCS = 1 ] && echo yes || echo 'NO (MPICH only)'), ranks $RANKS, transports $TRANSPORTS, $REPS reps, timeslice $TS us"

# ------------------------------------------------------------------ running
# watch_run: MPICH ended 3 s after "results complete" if it hangs in MPI_Finalize
# shellcheck source=bench/lib/watch_run.sh
. "$TOP/bench/lib/watch_run.sh"

# One program run; its JSON lines go to $OUT with the run's facts in front.
# run IMPL TRANSPORT RANKS BENCH EXTRA_JSON [--record|--replay FILE] -- PROG ARGS...
# (with --replay, `storm replay FILE` reruns the recorded PROG ARGS)
run() {
	local impl=$1 tr=$2 np=$3 bench=$4 extra=$5 rec=() replay=""
	shift 5
	if [ "$1" = --record ]; then
		rec=(--record "$2")
		shift 2
	elif [ "$1" = --replay ]; then
		replay=$2
		shift 2
	fi
	shift # --
	local prog=$1
	shift
	local nodes=1 cmd l t0 t1 rc lo0 lo1
	if [ "$impl" = mpich ]; then
		cmd=(mpiexec.mpich -n "$np" "$BIN/mpich/$prog" "$@")
		[ "$tr" = tcp ] && cmd=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp,self UCX_NET_DEVICES=lo "${cmd[@]}")
	else
		nodes=$(nodes_for "$np")
		cmd=("$STORM" run -N "$nodes" -n "$np" "${rec[@]}" "$BIN/bcs/$prog" "$@")
		[ -n "$replay" ] && cmd=("$STORM" replay "$replay")
	fi
	local try
	for try in 1 2; do
		l=$(load1)
		lo0=$(lo_bytes)
		t0=$(now)
		watch_run "$([ "$impl" = mpich ] && echo 1 || echo 0)" '^bench/mpi: results complete' err "${cmd[@]}"
		rc=$?
		t1=$(now)
		lo1=$(lo_bytes)
		# a run that failed before any result (MPICH's UCX now and then
		# fails init_worker with "No such device") is tried once more
		[ $rc = 0 ] || [ $rc = 124 ] || grep -q '^{"prog"' "$WORK/out" || [ $try = 2 ] && break
		log "  $impl $tr $np $prog: exit $rc before any result ($(tail -1 "$WORK/err")): once more"
		cat "$WORK/err" >>"$LOG"
		extra="$extra${extra:+,}\"retried\":true"
	done
	[ $HUNG = 1 ] && extra="$extra${extra:+,}\"finalize_hang\":true" && rc=0
	local pre="\"bench\":\"$bench\",\"impl\":\"$impl\",\"transport\":\"$tr\",\"nodes\":$nodes,\"timeslice_us\":$([ "$impl" = bcs ] && echo "$CUR_TS" || echo null),\"wall_s\":$(elapsed "$t0" "$t1"),\"lo_bytes\":$((lo1 - lo0)),\"load1\":$l${extra:+,$extra}"
	if [ $rc = 0 ] && grep -q '^{"prog"' "$WORK/out"; then
		grep '^{"prog"' "$WORK/out" | sed "s/^{/{$pre,/" >>"$OUT"
		log "  $impl $tr $np $prog $*${rec[*]:+ ${rec[*]}}: $(grep '^{"prog"' "$WORK/out" | head -1 |
			grep -o '"time_s":[0-9.]*\|"lat_us":[0-9.]*' | head -1)$([ $HUNG = 1 ] && echo ' (hung in MPI_Finalize, ended)')"
		return 0
	fi
	FAILS=$((FAILS + 1))
	cat "$WORK/err" >>"$LOG"
	local why="exit $rc$([ $rc = 124 ] && echo " (timeout ${RUN_TIMEOUT}s)"): $(tail -1 "$WORK/err")"
	printf '{%s,"prog":"%s","args":"%s","ranks":%s,"error":"%s"}\n' "$pre" "$prog" "$(json_str "$*")" \
		"$np" "$(json_str "$why")" >>"$OUT"
	log "  FAILED $impl $tr $np $prog $*: $why"
	return 1
}

APP_NAMES="sweep sweep_nb stencil allreduce"
app_cmd() { # NAME: the program and its arguments
	case $1 in
	sweep) echo "sweep $SWEEP_ARGS" ;;
	sweep_nb) echo "sweep --nb $SWEEP_ARGS" ;;
	stencil) echo "stencil $STENCIL_ARGS" ;;
	allreduce) echo "micro --allreduce --budget-ms $BUDGET_MS" ;;
	esac
}
CUR_TS=$TS

# all apps once under IMPL (the BCS cluster is up for bcs)
apps_once() { # IMPL TRANSPORT RANKS REP
	local a
	for a in $APP_NAMES; do
		# shellcheck disable=SC2046
		run "$1" "$2" "$3" app "\"app\":\"$a\",\"rep\":$4" -- $(app_cmd $a)
	done
}
bcs_block() { # TRANSPORT RANKS FN ARGS...: FN with a fresh cluster for RANKS
	local tr=$1 np=$2
	shift 2
	if ! cluster_up "$(nodes_for "$np")" "$(provider "$tr")" "$CUR_TS"; then
		FAILS=$((FAILS + 1))
		log "  FAILED: storm cluster up $(nodes_for "$np") nodes $(provider "$tr") ${CUR_TS} us"
		printf '{"bench":"cluster","impl":"bcs","transport":"%s","ranks":%s,"timeslice_us":%s,"error":"cluster up failed"}\n' \
			"$tr" "$np" "$CUR_TS" >>"$OUT"
		return 1
	fi
	"$@"
	cluster_down
}

# MPICH over TCP really is over TCP: a bandwidth run's payload crosses lo
verify_tcp() {
	local tr lo payload
	for tr in shm tcp; do
		run mpich "$tr" 2 verify "\"check\":\"lo_bytes\"" -- micro --bw --max-bytes 1048576 --budget-ms 100 || continue
		lo=$(tail -n 1 "$OUT" | grep -o '"lo_bytes":[0-9-]*' | cut -d: -f2)
		payload=$(tail -n 7 "$OUT" | python3 -c 'import json, sys
print(sum(r["iters"] * r["window"] * r["bytes"] for r in map(json.loads, sys.stdin) if r.get("test") == "bw"))')
		local ok=false
		if [ "$tr" = tcp ]; then [ "$lo" -ge "$payload" ] && ok=true; else [ "$lo" -lt $((payload / 10)) ] && ok=true; fi
		printf '{"bench":"verify","transport":"%s","payload_bytes":%s,"lo_bytes":%s,"ok":%s}\n' "$tr" "$payload" "$lo" $ok >>"$OUT"
		log "  MPICH $tr: bandwidth payload $payload B, loopback $lo B: $([ $ok = true ] && echo as expected || echo UNEXPECTED)"
		[ $ok = true ] || FAILS=$((FAILS + 1))
	done
}

# ------------------------------------------------------------------ phases
if phase apps; then
	case " $TRANSPORTS " in *" tcp "*) verify_tcp ;; esac
	for np in $RANKS; do
		for tr in $TRANSPORTS; do
			log "apps: $np ranks, $tr (load $(load1))"
			for ((rep = 1; rep <= REPS; rep++)); do
				# alternate which implementation goes first
				if [ $((rep % 2)) = 1 ] || [ $BCS = 0 ]; then
					apps_once mpich "$tr" "$np" $rep
					[ $BCS = 1 ] && bcs_block "$tr" "$np" apps_once bcs "$tr" "$np" $rep
				else
					bcs_block "$tr" "$np" apps_once bcs "$tr" "$np" $rep
					apps_once mpich "$tr" "$np" $rep
				fi
			done
		done
	done
fi

if phase slices && [ -n "$SLICES" ]; then
	if [ $BCS = 1 ]; then
		slice_reps() {
			local rep a
			for ((rep = 1; rep <= REPS; rep++)); do
				for a in sweep sweep_nb stencil; do
					# shellcheck disable=SC2046
					run bcs shm "$SLICE_RANKS" slice "\"app\":\"$a\",\"rep\":$rep" -- $(app_cmd $a)
				done
			done
		}
		for CUR_TS in $SLICES; do
			log "slices: BCS-MPI $SLICE_RANKS ranks, shm, timeslice $CUR_TS us (load $(load1))"
			bcs_block shm "$SLICE_RANKS" slice_reps
		done
		CUR_TS=$TS
	else
		skip slices "no BCS-MPI"
	fi
fi

if phase micro; then
	micro_once() { # IMPL TRANSPORT REP
		run "$1" "$2" 2 micro "\"rep\":$3" -- micro --pingpong --bw --max-bytes $MICRO_MAX --budget-ms $BUDGET_MS
	}
	for tr in $TRANSPORTS; do
		log "micro: ping-pong and bandwidth, 2 ranks, $tr (load $(load1))"
		for ((rep = 1; rep <= REPS; rep++)); do
			micro_once mpich "$tr" $rep
			[ $BCS = 1 ] && bcs_block "$tr" 2 micro_once bcs "$tr" $rep
		done
	done
fi

if phase record; then
	if [ $BCS = 1 ]; then
		record_with() { # RANKS APP REP TRACE PROG ARGS...: the run with --record
			local np=$1 a=$2 rep=$3 f=$4 sz
			shift 4
			if run bcs shm "$np" record "\"app\":\"$a\",\"rep\":$rep,\"record\":true" --record "$f" -- "$@"; then
				sz=$(stat -c %s "$f" 2>/dev/null || echo null)
				sed -i '$ s/}$/,"trace_bytes":'"$sz"'}/' "$OUT"
				log "    trace: $sz bytes"
			fi
		}
		record_reps() {
			local np=$1 rep a f
			for ((rep = 1; rep <= REPS; rep++)); do
				for a in sweep_nb stencil racy; do
					[ $a = racy ] && case " $RECORD_RACY_RANKS " in *" $np "*) ;; *) continue ;; esac
					f=$WORK/trace.$a.$rep
					rm -f "$f"
					local cmd
					if [ $a = racy ]; then cmd="racy"; else cmd=$(app_cmd $a); fi
					# alternate which goes first: a load that rises or falls
					# through a pair weighs on both sides alike
					# shellcheck disable=SC2086
					[ $((rep % 2)) = 0 ] && record_with "$np" "$a" "$rep" "$f" $cmd
					# shellcheck disable=SC2086
					run bcs shm "$np" record "\"app\":\"$a\",\"rep\":$rep,\"record\":false" -- $cmd
					# shellcheck disable=SC2086
					[ $((rep % 2)) = 1 ] && record_with "$np" "$a" "$rep" "$f" $cmd
					rm -f "$f"
				done
			done
		}
		for np in $RECORD_RANKS; do
			log "record: BCS-MPI $np ranks, shm, with and without --record (load $(load1))"
			bcs_block shm "$np" record_reps "$np"
		done
	else
		skip record "no BCS-MPI"
	fi
fi

if phase racy; then
	np=${SLICE_RANKS}
	[ "$QUICK" = 1 ] && np=$RANKS
	racy_runs() { # IMPL
		local i
		for ((i = 1; i <= RACY_RUNS; i++)); do
			run "$1" shm "$np" racy "\"rep\":$i" -- racy
		done
	}
	# BCS-MPI's matching depends on (slice, source, post order) only, but which
	# slice a send falls in is timing: one recorded run, replayed, is the
	# reproducible one
	racy_replays() {
		local f=$WORK/racy.trace i
		rm -f "$f"
		run bcs shm "$np" racy_replay "\"rep\":0,\"recorded\":true" --record "$f" -- racy || return
		for ((i = 1; i <= REPLAYS; i++)); do
			run bcs shm "$np" racy_replay "\"rep\":$i,\"replayed\":true" --replay "$f" -- racy
		done
	}
	log "racy: $RACY_RUNS runs of racy on $np ranks under each, $REPLAYS replays of one recorded BCS-MPI run (load $(load1))"
	racy_runs mpich
	[ $BCS = 1 ] && bcs_block shm "$np" racy_runs bcs && bcs_block shm "$np" racy_replays
fi

ended=$(date +%s)
echo "{\"bench\":\"meta_end\",\"seconds\":$((ended - started)),\"load1_end\":$(load1),\"failures\":$FAILS}" >>"$OUT"
log "done in $((ended - started)) s, $FAILS failure(s): $OUT"

if [ "$QUICK" = 1 ]; then
	# the smoke verdict: every run worked, checksums agree, BCS racy is deterministic
	python3 - "$OUT" <<'EOF' || FAILS=$((FAILS + 1))
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
meta = next((r for r in rows if r.get("bench") == "meta"), {})
bad = 0
sums = {}
for r in rows:
    if r.get("bench") == "app" and "checksum" in r:
        sums.setdefault((r["prog"], r.get("variant")), set()).add(r["checksum"])
for k, v in sorted(sums.items()):
    ok = len(v) == 1
    bad += not ok
    print("quick: %s %s checksums %s: %s" % (k[0], k[1], " ".join(sorted(v)), "agree" if ok else "DIFFER"))
for impl in ("mpich", "bcs"):
    outs = {r["outcome"] for r in rows if r.get("bench") == "racy" and r.get("impl") == impl and "outcome" in r}
    if outs:
        print("quick: racy under %s: %d distinct outcome(s) in %d runs" % (impl, len(outs), len(
            [r for r in rows if r.get("bench") == "racy" and r.get("impl") == impl])))
rec = [r["outcome"] for r in rows if r.get("bench") == "racy_replay" and r.get("recorded") and "outcome" in r]
rep = [r["outcome"] for r in rows if r.get("bench") == "racy_replay" and r.get("replayed") and "outcome" in r]
if meta.get("bcs") and "racy" in meta.get("phases", "racy"):
    ok = len(rec) == 1 and rep and all(o == rec[0] for o in rep)
    bad += not ok
    print("quick: racy recorded %s, replayed %s: %s" % (rec, sorted(set(rep)), "reproduced" if ok else "NOT REPRODUCED"))
if not meta.get("bcs"):
    print("quick: BCS-MPI was not run (see the skip line): MPICH only")
sys.exit(1 if bad else 0)
EOF
	[ $FAILS = 0 ] || { log "quick: $FAILS problem(s)"; exit 1; }
	log "quick: ok"
fi
exit 0
