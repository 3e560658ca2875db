#!/bin/bash
# The node reports the MM consumes for a launch (its storm_reports_total),
# less what an idle cluster sends over as many slices (storm_slices_total):
# an N-node virtual cluster of its own under /tmp, RUNS launches of
# `storm run -N N -n N true`, then taken down. Options after BINDIR go to
# `storm cluster up` (e.g. --job-end-combined 0, each node reporting its end).
#   bench/scale/count-reports.sh [NODES [RUNS [BINDIR [UP-OPTIONS...]]]]  (defaults 16 6 build/bin)
set -u
TOP=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-16}; RUNS=${2:-6}; B=${3:-$TOP/build/bin}
shift $(($# < 3 ? $# : 3))
export PATH=$B:$PATH
C=$(mktemp -d /tmp/storm-count-reports.XXXXXX); export STORM_CONF=$C/storm.conf
trap 'storm cluster down --dir "$C" >/dev/null 2>&1; rm -rf "$C"' EXIT
MPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
storm cluster up --nodes "$N" --metrics-port "$MPORT" --dir "$C" "$@" >/dev/null 2>&1 ||
	{ echo "count-reports.sh: cluster up failed (log: $C/log)" >&2; exit 1; }
m() { curl -s "http://127.0.0.1:$MPORT/metrics" |
	awk '$1 ~ /^storm_slices_total/ { s = $2 } $1 ~ /^storm_reports_total/ { r = $2 } END { print s, r }'; }
sleep 3
read -r s0 r0 < <(m); sleep 5; read -r s1 r1 < <(m)
echo "idle: $((r1 - r0)) reports in $((s1 - s0)) slices"
tot=0; sl=0
for i in $(seq "$RUNS"); do
	read -r a ra < <(m)
	storm run -N "$N" -n "$N" true >/dev/null
	read -r b rb < <(m)
	echo "launch $i: $((rb - ra)) reports in $((b - a)) slices"
	tot=$((tot + rb - ra)); sl=$((sl + b - a))
	sleep 1
done
python3 -c "
idle = ($r1 - $r0) / max(1, $s1 - $s0) * $sl
print('%d nodes: %.1f reports a launch (%d in %d launches, less %.1f at the idle rate)'
      % ($N, ($tot - idle) / $RUNS, $tot, $RUNS, idle))"
