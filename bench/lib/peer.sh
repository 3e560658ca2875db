# Sourced by the benchmarks that build a user's MPI program twice (bcs-mpicc
# and MPICH's mpicc) and run both on this host: bench/osu, bench/comd. Set
# NAME (the results' prefix), TOP, SB (a storm build) and STORM first.
# Gives RES, OUT, LOG, WORK and a cluster directory C (STORM_CONF), log,
# load1, json_str, down (the cluster), watch_run, host_json (the meta
# line's host fields) and the traps that take the cluster down.
for c in mpicc.mpich mpiexec.mpich; do
	command -v $c >/dev/null || { echo "bench/$NAME/run.sh: $c missing (Debian: mpich libmpich-dev; make bench-deps)" >&2; exit 1; }
done
[ -x "$STORM" ] && [ -x "$SB/bin/bcs-mpicc" ] || { echo "bench/$NAME/run.sh: no storm build in $SB (make all)" >&2; exit 1; }

RES=$TOP/bench/results/$NAME-$(date -u +%Y%m%d-%H%M%S)
mkdir -p "$RES"
ln -sfn "$(basename "$RES")" "$TOP/bench/results/$NAME-latest"
OUT=$RES/results.jsonl
LOG=$RES/log.txt
WORK=$(mktemp -d "/tmp/storm-$NAME.XXXXXX")
C=$WORK/cluster
export STORM_CONF=$C/storm.conf
log() { echo "$(date +%T) $*" | tee -a "$LOG"; }
load1() { cut -d' ' -f1 /proc/loadavg; }
json_str() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
down() { [ -e "$C/storm.conf" ] && "$STORM" cluster down --dir "$C" >>"$LOG" 2>&1; rm -rf "$C"; }
# the date, MPICH's version, the host and tree, the load now: JSON fields
host_json() {
	printf '"date":"%s","mpich":"%s","nproc":%s,"cpu":"%s","kernel":"%s","commit":"%s","load1_start":%s' \
		"$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		"$(json_str "$(mpichversion 2>/dev/null | sed -n 's/^MPICH \(Version\|Device\):[[:space:]]*/\1 /p' | tr '\n' ' ')")" \
		"$(nproc)" "$(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')")" \
		"$(uname -r)" "$(git rev-parse --short HEAD 2>/dev/null)" "$(load1)"
}
# shellcheck source=bench/lib/watch_run.sh
. "$TOP/bench/lib/watch_run.sh"
trap 'down; rm -rf "$WORK"' EXIT
trap 'exit 1' INT TERM
