#!/bin/bash
# How long a virtual cluster's daemons wait for a core beside busy ranks and
# a CPU hog: a 4-node --netns cluster (MPL 2, switch = signals), two looping
# MPICH jobs of 8 polling ranks each (test_pmi.sh's pair), `yes` in a session
# of its own, and every daemon's main thread sampled for SECONDS
# (wait_sample.py: its longest single wait for a core, its worst second, its
# CPU time and its total wait). MODE: as-built | session-nice (the daemons'
# autogroups set to nice -10 from outside: what writing /proc/self/autogroup
# would do). Extra `storm cluster up` options in UPARGS (e.g. --realtime).
# Needs root (namespaces, chrt).
# Usage: bench/sched/daemon_wait.sh [BUILD_BIN_DIR [MODE [SECONDS]]]
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
MODE=${2:-as-built} DUR=${3:-60}
HERE=$(cd "$(dirname "$0")" && pwd)
T=$(mktemp -d /tmp/storm-daemonwait.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
HOG="" J1="" J2=""
cleanup() {
	[ -n "$HOG" ] && kill "$HOG" 2>/dev/null
	[ -n "$J1" ] && kill "$J1" 2>/dev/null
	[ -n "$J2" ] && kill "$J2" 2>/dev/null
	storm cluster down --dir "$C" >/dev/null 2>&1
	[ -f "$C/pids" ] && while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1
mpicc.mpich -O2 -o "$T/pmiprog" "$HERE/../../tests/cluster/mpi/pmiprog.c" || exit 1
# shellcheck disable=SC2086
storm cluster up --netns --nodes 4 --mpl 2 --switch signals ${UPARGS:-} --dir "$C" >up.out 2>&1 ||
	{ echo "cluster up failed:"; cat up.out; exit 1; }
args=()
while read -r pid name; do args+=("$pid:$name"); done <"$C/pids"
if [ "$MODE" = session-nice ]; then
	for a in "${args[@]}"; do echo -10 >"/proc/${a%%:*}/autogroup"; done
fi
mkfifo f1 f2
storm run -N 4 -n 8 "$T/pmiprog" loop >f1 2>j1.err &
J1=$!
read -r _ <f1
cat f1 >/dev/null &
storm run -N 4 -n 8 "$T/pmiprog" loop >f2 2>j2.err &
J2=$!
read -r _ <f2
cat f2 >/dev/null &
setsid sh -c 'echo $$ >hog.pid; exec yes >/dev/null' &
while [ ! -s hog.pid ]; do sleep 0.05; done
HOG=$(cat hog.pid)
echo "mode $MODE ${UPARGS:-}, $DUR s; daemons $(ps -o cls=,ni= -p "${args[0]%%:*}" | xargs), their session $(cut -d' ' -f2- "/proc/${args[1]%%:*}/autogroup")"
chrt -f 20 python3 "$HERE/wait_sample.py" "$DUR" "${args[@]}"
echo "stall reports: $(cat "$C"/log/node*.log | grep -c 'stall: over\|not run for'), nodes DOWN: $(grep -c ' is DOWN' "$C/log/mm.log"); load $(cut -d' ' -f1-3 /proc/loadavg)"
