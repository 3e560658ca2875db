#!/bin/sh
# The launch experiment (the STORM paper's launch experiment): do-nothing programs of
# 4, 8 and 12 MiB started on 1..64 virtual nodes with 4 processes a node, by
#   srun_bcast  srun --bcast=DIR/ -N n -n 4n app   (Slurm sends the binary, each node writes it)
#   srun        srun -N n -n 4n app                (binary on a path all nodes see)
#   mpiexec     mpiexec -n 4n app                  (MPICH hydra: launch without transfer)
#   copy_floor  copy_floor app DIR n               (the binary copied n times, one process)
#   copy_floor_shm  the same into /dev/shm         (memory only, as a memfd launcher would)
#   cp          n x `cp app DIR/i`                 (the same with one cp process per copy)
#   storm       storm run --timing -N n -n 4n app  (and storm_nobcast with --no-bcast)
# on a private Slurm cluster (bench/launch/slurm-cluster.sh) and, for storm, a
# virtual storm cluster of as many nodes. Each command: warm-up, then REPS
# timed runs (bench/launch/timeit.py, monotonic clock), median reported; the
# runs of one point go round-robin over the methods.
#
# Run by `make bench`; alone: bench/launch/run.sh. Settings (environment):
#   BENCH_QUICK=1                   sizes 4 12, nodes 1 8 64, 3 repetitions
#   BENCH_LAUNCH_SIZES="4 8 12"     MiB
#   BENCH_LAUNCH_NODES="1 2 4 8 16 32 64"
#   BENCH_LAUNCH_METHODS="srun_bcast srun mpiexec copy_floor copy_floor_shm cp storm"
#   BENCH_LAUNCH_REPS=5             timed runs per point (after 1 warm-up)
#   BENCH_LAUNCH_REPORT=0           do not rewrite docs/BENCHMARKS.md / docs/launch.png
# Results: bench/results/launch-<date>/results.jsonl (+ log.txt); then the
# "## Launch (bench/launch)" section of docs/BENCHMARKS.md and docs/launch.png.
#
# Phases: Slurm's cluster is up while srun, mpiexec and the copies run (its 64
# idle slurmd use no CPU); it is taken down before storm's cluster comes up, so
# that neither cluster's daemons run while the other is measured.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	SIZES=${BENCH_LAUNCH_SIZES:-4 12}
	NODES=${BENCH_LAUNCH_NODES:-1 8 64}
	REPS=${BENCH_LAUNCH_REPS:-3}
else
	SIZES=${BENCH_LAUNCH_SIZES:-4 8 12}
	NODES=${BENCH_LAUNCH_NODES:-1 2 4 8 16 32 64}
	REPS=${BENCH_LAUNCH_REPS:-5}
fi
METHODS=${BENCH_LAUNCH_METHODS:-srun_bcast srun mpiexec copy_floor copy_floor_shm cp storm}
PPN=4          # processes per node
RUN=0          # run number of the current point (0: warm-up)
RUN_TIMEOUT=120 # seconds, per run (timeit.py kills the command's process group)
CMD_TIMEOUT=300 # seconds, per record (timeit.py and its --prepare included)
method() { case " $METHODS " in *" $1 "*) return 0 ;; esac; return 1; }

stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/launch-$stamp
mkdir -p "$RES" build/bench
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "launch-$stamp" bench/results/launch-latest
started=$(date +%s)
MAXN=$(echo "$NODES" | tr ' ' '\n' | sort -n | tail -1)

# Scratch space for the copies: Slurm's bcast directory lives in its cluster
# directory; the copy floor's in its own.
SLURM_DIR=${STORM_SLURM_DIR:-/tmp/storm-bench-slurm}
export STORM_SLURM_DIR="$SLURM_DIR"
BCAST_DIR=$SLURM_DIR/bcast
COPY_DIR=/tmp/storm-bench-launch-copies
SHM_DIR=/dev/shm/storm-bench-launch-copies # the same in memory (tmpfs): no disk, no writeback

log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$LOG" >&2; }
load1() { cut -d' ' -f1 /proc/loadavg; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }

# Runs a command once (bench/launch/timeit.py: fork to exit on the monotonic
# clock) and appends its JSON line to $OUT, tagged with the run number $RUN
# (0 is the warm-up, which the report leaves out) and the 1-minute load
# average at its start. timeit.py writes an "error" line itself when the run
# fails; if it dies without one, an error line is written here.
# usage: record METHOD SIZE_MIB NODES PROCS [timeit options] -- command...
record() {
	r_m=$1 r_size=$2 r_n=$3 r_np=$4  # sh has no locals: names of their own
	shift 4
	l=$(load1)
	echo "[$(date +%H:%M:%S)] run $RUN: $r_m ${r_size} MiB, $r_n nodes / $r_np processes (load $l): $*" >>"$LOG"
	tmp=$RES/.out
	timeout "$CMD_TIMEOUT" python3 bench/launch/timeit.py --reps 1 --warmup 0 \
		--timeout $RUN_TIMEOUT --field bench=launch --field method="$r_m" \
		--field size_mib="$r_size" --field nodes="$r_n" --field procs="$r_np" --field run="$RUN" \
		"$@" >"$tmp" 2>>"$LOG"
	rc=$?
	if [ -s "$tmp" ]; then
		sed "s/}\$/,\"load1\":$l}/" "$tmp" >>"$OUT"
	else
		printf '{"bench":"launch","method":"%s","size_mib":%s,"nodes":%s,"procs":%s,"run":%s,"error":"exit %s","load1":%s}\n' \
			"$r_m" "$r_size" "$r_n" "$r_np" "$RUN" "$rc" "$l" >>"$OUT"
	fi
	if [ $rc -eq 0 ]; then
		printf '  %-14s %2s MiB %3s nodes  run %s: %s ms\n' "$r_m" "$r_size" "$r_n" "$RUN" \
			"$(sed 's/.*"median_ms":\([0-9.]*\).*/\1/' "$tmp")" >&2
	else
		log "FAILED ($rc): $r_m ${r_size} MiB, $r_n nodes, run $RUN"
	fi
	rm -f "$tmp"
}

skip() { # METHOD WHY: a line saying a method did not run, and why
	log "skipping $1: $2"
	printf '{"bench":"launch","method":"%s","skipped":"%s"}\n' "$1" "$(json_str "$2")" >>"$OUT"
}

# ---------------------------------------------------------------- build
log "building the programs (sizes: $SIZES MiB)"
for s in $SIZES; do
	[ -f "build/bench/app-${s}M" ] && [ "$(stat -c %s "build/bench/app-${s}M")" -eq $((s << 20)) ] &&
		continue
	bench/launch/make-app.sh "$s" "build/bench/app-${s}M" 2>>"$LOG" || { log "make-app.sh $s failed"; exit 1; }
done
${CC:-cc} -O2 -Wall -Wextra -std=c11 -o build/bench/copy_floor bench/launch/copy_floor.c 2>>"$LOG" ||
	{ log "cannot build copy_floor"; exit 1; }

{
	echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"quick\":$QUICK,\"reps\":$REPS,\"ppn\":$PPN,\"nproc\":$(nproc),\"cpu\":\"$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")\",\"kernel\":\"$(uname -r)\",\"mpich\":\"$(mpichversion 2>/dev/null | awk '/MPICH Version/ {print $3}')\",\"tmp_fs\":\"$(df -T /tmp | awk 'NR == 2 {print $2}')\",\"load1_start\":$(load1)}"
} >>"$OUT"

# ---------------------------------------------------------------- peers
SLURM_UP=0
if method srun_bcast || method srun; then
	if ! command -v srun >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
		skip srun "slurm-wlm/munge not installed (make bench-deps)"
	elif bench/launch/slurm-cluster.sh up "$MAXN" 2>>"$LOG"; then
		SLURM_UP=1
		eval "$(bench/launch/slurm-cluster.sh env)"
		export SLURM_CONF
		echo "{\"bench\":\"meta_slurm\",\"nodes\":$MAXN,\"slurm\":\"$(srun --version | awk '{print $2}')\",\"tree_width\":\"$(scontrol show config | awk '$1 == "TreeWidth" {print $3}')\",\"multiple_slurmd\":\"$(scontrol show config | awk '$1 == "MULTIPLE_SLURMD" {print $3}')\"}" >>"$OUT"
	else
		skip srun "slurm-cluster.sh up $MAXN failed (see log.txt)"
	fi
fi
HAVE_MPI=0
if method mpiexec; then
	if command -v mpiexec.mpich >/dev/null; then HAVE_MPI=1; else skip mpiexec "mpiexec not found (mpich)"; fi
fi
mkdir -p "$COPY_DIR" "$BCAST_DIR"
if method copy_floor_shm && ! mkdir -p "$SHM_DIR" 2>/dev/null; then
	skip copy_floor_shm "cannot create $SHM_DIR"
	METHODS=$(echo " $METHODS " | sed 's/ copy_floor_shm / /')
fi

# Round-robin: every run of a point (size, nodes) goes through all methods
# once, so a burst of load from the machine's other users hits them alike.
for s in $SIZES; do
	app=$TOP/build/bench/app-${s}M
	for n in $NODES; do
		np=$((n * PPN))
		log "${s} MiB, $n nodes / $np processes: $REPS runs after a warm-up (load $(load1))"
		RUN=0
		while [ $RUN -le "$REPS" ]; do
			if [ $SLURM_UP = 1 ]; then
				# srun's own allocation (no salloc); jobs run in /tmp so that
				# nothing lands in the repository
				method srun_bcast && record srun_bcast "$s" "$n" "$np" \
					--prepare "rm -f '$BCAST_DIR'/slurm_bcast_*" \
					-- srun --chdir=/tmp --bcast="$BCAST_DIR/" -N "$n" -n "$np" "$app"
				method srun && record srun "$s" "$n" "$np" \
					-- srun --chdir=/tmp -N "$n" -n "$np" "$app"
				# one task: slurmstepd sleeps 100 ms before it reaps the second
				# and later tasks of a node (see report.py); this shows it
				[ "$n" = 1 ] && method srun && record srun_1task "$s" 1 1 \
					-- srun --chdir=/tmp -N 1 -n 1 "$app"
			fi
			[ $HAVE_MPI = 1 ] && record mpiexec "$s" "$n" "$np" -- mpiexec.mpich -n "$np" "$app"
			method copy_floor && record copy_floor "$s" "$n" "$np" \
				--prepare "rm -f '$COPY_DIR'/copy-*" \
				-- build/bench/copy_floor "$app" "$COPY_DIR" "$n"
			method copy_floor_shm && record copy_floor_shm "$s" "$n" "$np" \
				--prepare "rm -f '$SHM_DIR'/copy-*" \
				-- build/bench/copy_floor "$app" "$SHM_DIR" "$n"
			# shellcheck disable=SC2016
			method cp && record cp "$s" "$n" "$np" --prepare "rm -f '$COPY_DIR'/copy-*" \
				-- sh -c 'i=0; while [ $i -lt "$3" ]; do cp "$1" "$2/copy-$i" || exit 1; i=$((i + 1)); done' \
				cp "$app" "$COPY_DIR" "$n"
			RUN=$((RUN + 1))
		done
	done
done
rm -rf "$COPY_DIR" "$SHM_DIR"
rm -f "$BCAST_DIR"/slurm_bcast_*
[ $SLURM_UP = 1 ] && bench/launch/slurm-cluster.sh down 2>>"$LOG"

# ---------------------------------------------------------------- storm
# >>> STORM HOOK. Everything storm-specific is here. It expects:
#   storm cluster up --nodes N      a virtual cluster of N node daemons, found by later commands
#   storm run --timing -N n -n 4n ./app [--no-bcast]
#       --timing: one line on stderr, parsed by timeit.py --storm-timing:
#       storm: job 5 timing: transfer 12.3 ms, execute 20.1 ms, total 35.0 ms
#   storm cluster down
# Until build/bin/storm exists this records a "skipped" line and no numbers.
STORM=build/bin/storm
run_storm() {
	if [ ! -x "$STORM" ]; then
		skip storm "$STORM not built yet: no storm numbers in this run"
		return 0
	fi
	if ! timeout 300 "$STORM" cluster up --nodes "$MAXN" >>"$LOG" 2>&1; then
		skip storm "storm cluster up --nodes $MAXN failed (see log.txt)"
		timeout 60 "$STORM" cluster down >>"$LOG" 2>&1
		return 0
	fi
	for s in $SIZES; do
		for n in $NODES; do
			np=$((n * PPN))
			RUN=0
			while [ $RUN -le "$REPS" ]; do
				# ./app-SM run from build/bench, as a user would: storm sends it
				record storm "$s" "$n" "$np" --storm-timing --cwd build/bench \
					-- "$TOP/$STORM" run --timing -N "$n" -n "$np" "./app-${s}M"
				record storm_nobcast "$s" "$n" "$np" --storm-timing --cwd build/bench \
					-- "$TOP/$STORM" run --timing --no-bcast -N "$n" -n "$np" "./app-${s}M"
				RUN=$((RUN + 1))
			done
		done
	done
	timeout 60 "$STORM" cluster down >>"$LOG" 2>&1
}
# <<< STORM HOOK
method storm && run_storm

ended=$(date +%s)
echo "{\"bench\":\"meta_end\",\"seconds\":$((ended - started)),\"load1_end\":$(load1)}" >>"$OUT"
log "done in $((ended - started)) s: $OUT"

[ "${BENCH_LAUNCH_REPORT:-1}" = 0 ] && exit 0
python3 bench/launch/report.py "$OUT" docs/BENCHMARKS.md docs/launch.png || exit 1
log "wrote the launch section of docs/BENCHMARKS.md and docs/launch.png"
