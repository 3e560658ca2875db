#!/bin/bash
# Gang scheduling (the STORM paper's Figure 3): two CPU-bound
# jobs A and B (build/bin/gang_spin, one rank per node on every node of a
# virtual cluster) run alone, one after the other (Ta, Tb), and together
# (both submitted at once: T, from the first submit until both ended), on a
# storm cluster with MPL 2, quantum 1, for a sweep of timeslices; the figure
# of merit is T / (Ta + Tb) (1: gang scheduling costs nothing; the work is the
# same, the two jobs only take turns).
#
# For each point (nodes, timeslice) a fresh cluster comes up with
# STORM_TRACE set, and bench/gang/trace.py turns the daemons' traces into
# strobe latency, switch skew and missed strobes. Then, at 1 ms and 8 nodes:
# the same with --switch freezer (cgroup v2) instead of signals; the start
# latency of `storm run -N 8 /bin/true` on an idle cluster and with the two
# CPU-bound jobs running (MPL 3, so a row is free); and Slurm's gang
# scheduling (PreemptMode=GANG, SchedulerTimeSlice=5, select/linear,
# OverSubscribe=FORCE:2) on the private cluster of bench/launch/slurm-cluster.sh
# with the same two jobs (sbatch of a script that sruns gang_spin on 8 nodes).
#
# Run by `make bench-gang` (and `make bench`), which then runs report.py.
# Alone: bench/gang/run.sh; settings (environment):
#   BENCH_QUICK=1                 timeslices 100 us, 1 ms, 100 ms, 1 s; 1 repetition
#   BENCH_GANG_NODES="8 32"
#   BENCH_GANG_SLICES="100 250 1000 10000 100000 1000000 8000000"   (us)
#   BENCH_GANG_REPS=3             repetitions of alone+together per point
#   BENCH_GANG_WORK=200000000     gang_spin iterations per rank at 8 nodes
#                                 (scaled by 8/nodes: the same total work)
#   BENCH_GANG_SLURM=0            leave Slurm out
#   BENCH_GANG_REALTIME=0         node daemons at normal priority
# Results: bench/results/gang-<date>/results.jsonl (+ log.txt), symlink
# bench/results/gang-latest; then `bench/gang/report.py` writes the
# "## Gang scheduling" section of docs/BENCHMARKS.md and docs/gang.svg.
#
# Storm's clusters live in /tmp/gangbench-storm (STORM_GANG_DIR), Slurm's in
# /tmp/gangbench-slurm (STORM_SLURM_DIR) on ports from 27817
# (STORM_SLURM_PORT): neither collides with bench/launch's. Only one of the
# two systems is up at a time.
set -u
cd "$(dirname "$0")/../.." || exit 1
TOP=$(pwd)

QUICK=${BENCH_QUICK:-0}
if [ "$QUICK" = 1 ]; then
	SLICES=${BENCH_GANG_SLICES:-100 1000 100000 1000000}
	REPS=${BENCH_GANG_REPS:-1}
	IREPS=5
else
	SLICES=${BENCH_GANG_SLICES:-100 250 1000 10000 100000 1000000 8000000}
	REPS=${BENCH_GANG_REPS:-3}
	IREPS=9
fi
NODES=${BENCH_GANG_NODES-8 32}
WORK8=${BENCH_GANG_WORK:-200000000}
REALTIME=${BENCH_GANG_REALTIME:-1}
MPL=2
QUANTUM=1
JOB_TIMEOUT=300 # seconds for one alone or together measurement

STORM=$TOP/build/bin/storm
SPIN=$TOP/build/bin/gang_spin
SDIR=${STORM_GANG_DIR:-/tmp/gangbench-storm}
export STORM_CONF=$SDIR/storm.conf
export STORM_SLURM_DIR=${STORM_SLURM_DIR:-/tmp/gangbench-slurm}
export STORM_SLURM_PORT=${STORM_SLURM_PORT:-27817}
WORKDIR=$(mktemp -d /tmp/gangbench-work.XXXXXX) # job outputs, traces while analysed

stamp=$(date +%Y%m%d-%H%M%S)
RES=bench/results/gang-$stamp
mkdir -p "$RES"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
: >"$OUT"
ln -sfn "gang-$stamp" bench/results/gang-latest
started=$(date +%s)

. bench/gang/lib.sh
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
skip() { # SYSTEM WHY
	log "skipping $1: $2"
	printf '{"bench":"gang","system":"%s","skipped":"%s"}\n' "$1" "$(json_str "$2")" >>"$OUT"
}

STORM_UP=0
SLURM_UP=0
cleanup() {
	[ $STORM_UP = 1 ] && timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	[ $SLURM_UP = 1 ] && bench/launch/slurm-cluster.sh down >>"$LOG" 2>&1
	rm -rf "$WORKDIR"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 1' INT TERM

for f in "$STORM" "$SPIN"; do
	[ -x "$f" ] || { log "$f missing: make all build/bin/gang_spin"; exit 1; }
done

echo "{\"bench\":\"meta\",\"date\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\",\"quick\":$QUICK,\"reps\":$REPS,\"work8\":$WORK8,\"mpl\":$MPL,\"quantum\":$QUANTUM,\"nproc\":$(nproc),\"cpu\":\"$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")\",\"kernel\":\"$(uname -r)\",\"commit\":\"$(git rev-parse --short HEAD 2>/dev/null)\",\"load1_start\":$(load1)}" >>"$OUT"

# ---------------------------------------------------------------- storm
# storm_up NODES TIMESLICE_US MPL SWITCH TRACEDIR: a fresh cluster; sets RT
# to 1 if its node daemons run at SCHED_FIFO (--realtime, unless refused)
storm_up() {
	local n=$1 ts=$2 mpl=$3 sw=$4 tdir=$5
	rm -rf "$tdir"
	mkdir -p "$tdir"
	local args=(cluster up --nodes "$n" --dir "$SDIR" --timeslice-us "$ts" --quantum "$QUANTUM"
		--mpl "$mpl" --switch "$sw" --down-after-ms 2000)
	RT=0
	if [ "$REALTIME" = 1 ]; then
		if STORM_TRACE=$tdir timeout 120 "$STORM" "${args[@]}" --realtime >>"$LOG" 2>&1; then
			RT=1
			STORM_UP=1
			return 0
		fi
		log "cluster up --realtime refused or failed: without it"
		timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	fi
	if STORM_TRACE=$tdir timeout 120 "$STORM" "${args[@]}" >>"$LOG" 2>&1; then
		STORM_UP=1
		return 0
	fi
	timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	return 1
}
storm_down() {
	timeout 60 "$STORM" cluster down --dir "$SDIR" >>"$LOG" 2>&1
	STORM_UP=0
}

# One job through `storm submit --wait` (batch, waits for the end).
# storm_job NODES WORK NAME
storm_job() {
	timeout $JOB_TIMEOUT "$STORM" submit --wait -N "$1" -J "$3" -o "$WORKDIR/storm-%j.out" \
		"$SPIN" "$2" >>"$LOG" 2>&1
}

# measure SYSTEM NODES TIMESLICE SWITCH REP WORK RT JOBFN: alone A, alone B,
# then both at once; one JSON line
measure() {
	local sys=$1 n=$2 ts=$3 sw=$4 rep=$5 work=$6 rt=$7 fn=$8
	local l t0 t1 ta tb t ra rb r1 r2 err=""
	l=$(load1)
	t0=$(now); $fn "$n" "$work" A; ra=$?; t1=$(now); ta=$(elapsed "$t0" "$t1")
	t0=$(now); $fn "$n" "$work" B; rb=$?; t1=$(now); tb=$(elapsed "$t0" "$t1")
	t0=$(now)
	$fn "$n" "$work" A2 & local p1=$!
	$fn "$n" "$work" B2 & local p2=$!
	wait $p1; r1=$?
	wait $p2; r2=$?
	t1=$(now); t=$(elapsed "$t0" "$t1")
	[ $ra$rb$r1$r2 = 0000 ] || err=",\"error\":\"exit statuses alone $ra $rb, together $r1 $r2\""
	local ratio
	if [ "$sys" = slurm ]; then
		local retries
		retries=$(awk '{ s += $1 } END { print s + 0 }' "$WORKDIR/srun-retries" 2>/dev/null || echo 0)
		rm -f "$WORKDIR/srun-retries"
		err="$err,\"srun_retries\":${retries:-0}"
	fi
	ratio=$(awk -v a="$ta" -v b="$tb" -v t="$t" 'BEGIN { printf "%.4f", t / (a + b) }')
	printf '{"bench":"gang","system":"%s","switch":"%s","nodes":%s,"timeslice_us":%s,"mpl":%s,"quantum":%s,"realtime":%s,"rep":%s,"work":%s,"ta_s":%s,"tb_s":%s,"t_s":%s,"ratio":%s,"load1":%s%s}\n' \
		"$sys" "$sw" "$n" "$ts" "$MPL" "$QUANTUM" "$rt" "$rep" "$work" "$ta" "$tb" "$t" "$ratio" "$l" "$err" >>"$OUT"
	log "  $sys $sw $n nodes, timeslice $ts us, rep $rep: Ta $ta s, Tb $tb s, together $t s, ratio $ratio (load $l)${err:+ $err}"
}

# A storm point: cluster up, REPS measurements, cluster down, trace summary.
storm_point() { # NODES TIMESLICE SWITCH
	local n=$1 ts=$2 sw=$3 work=$((WORK8 * 8 / $1))
	local tdir=$WORKDIR/trace
	log "storm: $n nodes, timeslice $ts us, switch $sw, MPL $MPL (load $(load1))"
	if ! storm_up "$n" "$ts" $MPL "$sw" "$tdir"; then
		log "FAILED: storm cluster up ($n nodes, $ts us, $sw)"
		printf '{"bench":"gang","system":"storm","switch":"%s","nodes":%s,"timeslice_us":%s,"error":"cluster up failed"}\n' \
			"$sw" "$n" "$ts" >>"$OUT"
		return 1
	fi
	local rep=1
	while [ $rep -le "$REPS" ]; do
		measure storm "$n" "$ts" "$sw" $rep $work $RT storm_job
		rep=$((rep + 1))
	done
	local down
	down=$("$STORM" nodes --json 2>/dev/null | grep -c '"DOWN"')
	storm_down
	python3 bench/gang/trace.py "$tdir" system=storm switch="$sw" nodes="$n" timeslice_us="$ts" \
		mpl=$MPL realtime=$RT nodes_down_at_end="${down:-0}" >>"$OUT" 2>>"$LOG" ||
		log "trace.py failed on $tdir"
	tail -1 "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); print("  trace: latency p50/p99 %s/%s us, skew p50/p99 %s/%s us, missed %s (max %s a node)" % (r.get("latency_p50_us"), r.get("latency_p99_us"), r.get("skew_p50_us"), r.get("skew_p99_us"), r.get("missed_total"), r.get("missed_max_per_node")))' 2>/dev/null | tee -a "$LOG" >&2
	rm -rf "$tdir" "$WORKDIR"/storm-*.out
}

freezer_ok() { # a 1-node cluster with --switch freezer comes up and runs a job
	local ok=1
	storm_up 1 10000 2 freezer "$WORKDIR/probe" || return 1
	timeout 60 "$STORM" run -N 1 /bin/true >>"$LOG" 2>&1 || ok=0
	storm_down
	rm -rf "$WORKDIR/probe"
	[ $ok = 1 ]
}

for n in $NODES; do
	for ts in $SLICES; do
		storm_point "$n" "$ts" signals
	done
	if [ "$n" = 8 ]; then
		if freezer_ok; then
			storm_point 8 1000 freezer
		else
			skip storm_freezer "storm cluster up --switch freezer (cgroup v2) did not work here (see log.txt)"
		fi
	fi
done

# Interactive start latency: `storm run -N 8 /bin/true` on an idle cluster,
# then with the two CPU-bound jobs (4x the work, so they outlast the runs)
# running, MPL 3 (a free row for it), 1 ms.
interactive() {
	local ts=1000 n=8 samples="" i t0 t1 rc
	log "storm: interactive start latency, $n nodes, MPL 3, timeslice $ts us"
	storm_up $n $ts 3 signals "$WORKDIR/itrace" || { skip storm_interactive "cluster up failed"; return; }
	for loaded in false true; do
		if [ $loaded = true ]; then
			"$STORM" submit -N $n -J loadA -o "$WORKDIR/load-%j.out" "$SPIN" $((WORK8 * 4)) >>"$LOG" 2>&1
			"$STORM" submit -N $n -J loadB -o "$WORKDIR/load-%j.out" "$SPIN" $((WORK8 * 4)) >>"$LOG" 2>&1
			sleep 1 # both placed and running (one row each) before the first run
		fi
		samples=""
		for ((i = 0; i <= IREPS; i++)); do # run 0: warm-up
			t0=$(now)
			timeout 60 "$STORM" run -N $n /bin/true >>"$LOG" 2>&1
			rc=$?
			t1=$(now)
			[ $i = 0 ] && continue
			[ $rc = 0 ] || { log "  storm run /bin/true failed ($rc)"; continue; }
			samples="$samples${samples:+,}$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", (b - a) * 1000 }')"
		done
		local running
		running=$("$STORM" jobs --json 2>/dev/null | grep -c '"name": "load')
		printf '{"bench":"gang_interactive","system":"storm","nodes":%s,"timeslice_us":%s,"mpl":3,"realtime":%s,"loaded":%s,"load_jobs_at_end":%s,"samples_ms":[%s],"load1":%s}\n' \
			$n $ts $RT $loaded "$running" "$samples" "$(load1)" >>"$OUT"
		log "  loaded=$loaded: $samples ms (load jobs still there: $running)"
	done
	log "  cancelling the load jobs"
	"$STORM" jobs --json 2>/dev/null | python3 -c 'import json,sys; [print(j["job"]) for j in json.load(sys.stdin)["jobs"]]' |
		while read -r j; do "$STORM" cancel "$j" >>"$LOG" 2>&1; done
	storm_down
	rm -rf "$WORKDIR/itrace" "$WORKDIR"/load-*.out
}
interactive

# ---------------------------------------------------------------- Slurm
SLURM_EXTRA='SelectType=select/linear
SelectTypeParameters=
PreemptType=preempt/none
PreemptMode=GANG
SchedulerTimeSlice=5
PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:2'
# One job: sbatch of a script (slurm-job.sh below) that sruns gang_spin on
# every node and then writes its exit status and the time; we poll for that
# file every 20 ms (sbatch --wait polls slurmctld with growing pauses). The
# gang scheduler suspends the second job a moment after its batch script has
# started, and an srun that asks for its step in that moment is refused
# ("step creation temporarily disabled") and then waits with a long back-off:
# two jobs of 1 s each took 124 s that way (and so did two srun from outside
# an allocation). So the script watches srun's stderr and, when it says
# that, kills it (no step exists yet) and asks again at once; the script is
# stopped while its job is suspended, so the new request comes when the job
# runs. The retries are counted (srun_retries).
slurm_job() { # NODES WORK NAME
	local done=$WORKDIR/slurm-done.$3 t0
	rm -f "$done" "$done.err"
	sbatch --chdir=/tmp -o /dev/null -J "gang$3" -N "$1" -n "$1" "$WORKDIR/slurm-job.sh" \
		"$SPIN" "$2" "$1" "$done" >>"$LOG" 2>&1 || return 1
	t0=$SECONDS
	while [ ! -s "$done" ]; do
		[ $((SECONDS - t0)) -gt $JOB_TIMEOUT ] && return 124
		sleep 0.02
	done
	cut -d' ' -f3 "$done" >>"$WORKDIR/srun-retries"
	cat "$done.err" >>"$LOG" 2>/dev/null
	return "$(cut -d' ' -f1 "$done")"
}
run_slurm() {
	if [ "${BENCH_GANG_SLURM:-1}" = 0 ]; then
		skip slurm "BENCH_GANG_SLURM=0"
		return
	fi
	if ! command -v sbatch >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
		skip slurm "slurm-wlm/munge not installed (make bench-deps)"
		return
	fi
	local n=8
	if ! STORM_SLURM_CONF_EXTRA=$SLURM_EXTRA bench/launch/slurm-cluster.sh up $n 2>>"$LOG"; then
		skip slurm "slurm-cluster.sh up $n with gang scheduling failed (see log.txt)"
		return
	fi
	SLURM_UP=1
	eval "$(bench/launch/slurm-cluster.sh env)"
	export SLURM_CONF
	cat >"$WORKDIR/slurm-job.sh" <<'EOF'
#!/bin/bash
# bench/gang: SPIN WORK NODES DONEFILE (see slurm_job in run.sh)
tries=0
while :; do
	srun -N "$3" -n "$3" "$1" "$2" >/dev/null 2>"$4.err" &
	p=$!
	refused=0
	while kill -0 $p 2>/dev/null; do
		if grep -q 'temporarily disabled' "$4.err" && ! grep -q 'Step created' "$4.err"; then
			kill -KILL $p
			refused=1
			break
		fi
		sleep 0.05
	done
	wait $p
	rc=$?
	[ $refused = 1 ] && [ $tries -lt 200 ] || break
	tries=$((tries + 1))
	sleep 0.02
done
echo "$rc $(date +%s.%N) $tries" >"$4.tmp" && mv "$4.tmp" "$4"
EOF
	chmod +x "$WORKDIR/slurm-job.sh"
	local ts
	ts=$(scontrol show config | awk '$1 == "SchedulerTimeSlice" {print $3}')
	echo "{\"bench\":\"meta_slurm\",\"nodes\":$n,\"slurm\":\"$(sbatch --version | awk '{print $2}')\",\"preempt_mode\":\"$(scontrol show config | awk '$1 == "PreemptMode" {print $3}')\",\"select\":\"$(scontrol show config | awk '$1 == "SelectType" {print $3}')\",\"timeslice_s\":${ts:-0}}" >>"$OUT"
	log "Slurm: $n nodes, gang scheduling, SchedulerTimeSlice $ts s (load $(load1))"
	local rep=1
	while [ $rep -le "$REPS" ]; do
		measure slurm $n $((ts * 1000000)) gang $rep "$WORK8" false slurm_job
		rep=$((rep + 1))
	done
	bench/launch/slurm-cluster.sh down >>"$LOG" 2>&1
	SLURM_UP=0
}
run_slurm

ended=$(date +%s)
echo "{\"bench\":\"meta_end\",\"seconds\":$((ended - started)),\"load1_end\":$(load1)}" >>"$OUT"
log "done in $((ended - started)) s: $OUT"
