#!/bin/bash
# Scale of the --hosts mode (every daemon on a host of its own: network,
# mount, UTS and IPC namespaces, a munged per host) on this one machine: for
# each size, the time to bring the cluster up, the memory of each daemon
# (RSS and PSS, /proc/PID/smaps_rollup: PSS splits shared pages among their
# users), a trivial launch (`storm run --timing -N N /bin/true`), a 12 MiB
# program multicast to every node and run (storm_selfsum, 4 ranks a node),
# and gang scheduling: two CPU-bound jobs on every node alone and together
# at 10 ms (T/(Ta+Tb)). The same on the plain virtual cluster (daemons
# sharing the host's file system) at the same size is the peer.
# Prints a markdown table (docs/BENCHMARKS.md, "Scale: separate hosts").
#     bench/scale/run.sh              BENCH_SCALE_NODES="8 64" BENCH_SCALE_REPS=5
set -u
cd "$(dirname "$0")/../.." || exit 1
export PATH=$PWD/build/bin:$PATH
NODES=${BENCH_SCALE_NODES:-8 64}
REPS=${BENCH_SCALE_REPS:-5}
WORK8=${BENCH_GANG_WORK:-200000000}
D=/tmp/storm-scale
export STORM_CONF=$D/storm.conf
trap 'storm cluster down --dir $D >/dev/null 2>&1' EXIT
trap 'exit 1' INT TERM
for f in storm stormnd storm_selfsum gang_spin; do
	command -v $f >/dev/null || { echo "build/bin/$f missing: make all build/bin/gang_spin build/bin/storm_selfsum" >&2; exit 1; }
done
med() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mem() { # COMMAND: "n rss_mean_kib pss_mean_kib" over its processes
	for p in $(pgrep -x "$1"); do
		awk '/^Rss:/ { r = $2 } /^Pss:/ { s = $2 } END { print r, s }' /proc/$p/smaps_rollup
	done | awk '{ n++; r += $1; s += $2 } END { if (n) printf "%d %.0f %.0f", n, r / n, s / n }'
}
mib() { awk -v k="$1" 'BEGIN { printf "%.1f MiB", k / 1024 }'; }
now() { echo "$EPOCHREALTIME"; }
el() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
job() { storm submit --wait -N "$1" -o /dev/null gang_spin "$2" >/dev/null 2>&1; }

echo "| mode | nodes | up | stormnd RSS / PSS | stormmm RSS / PSS | munged PSS | launch /bin/true | 12 MiB, 4 ranks a node | T/(Ta+Tb), 10 ms | load |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for n in $NODES; do
	for mode in hosts plain; do
		storm cluster down --dir $D >/dev/null 2>&1
		rm -rf $D
		args=(--nodes "$n" --dir $D)
		[ $mode = hosts ] && args+=(--hosts)
		t0=$(now)
		if ! storm cluster up "${args[@]}" >/tmp/storm-scale.up 2>&1; then
			echo "| $mode | $n | failed: $(tail -1 /tmp/storm-scale.up) | | | | | | | |"
			continue
		fi
		up=$(el "$t0" "$(now)")
		read -r _ nr np < <(mem stormnd)
		read -r _ mr mp < <(mem stormmm)
		read -r _ _ gp < <(mem munged)
		storm run -N "$n" /bin/true >/dev/null 2>&1 # warm-up
		l=$(for ((i = 0; i < REPS; i++)); do
			storm run --timing -N "$n" -n "$n" /bin/true 2>&1 >/dev/null | sed -n 's/.*total \([0-9.]*\) ms.*/\1/p'
		done | med)
		b=$(for ((i = 0; i < 3; i++)); do
			t0=$(now)
			storm run -N "$n" -n $((4 * n)) storm_selfsum >/dev/null 2>&1 && el "$t0" "$(now)" && echo
		done | med)
		w=$((WORK8 * 8 / n))
		t0=$(now); job "$n" $w; ta=$(el "$t0" "$(now)")
		t0=$(now); job "$n" $w; tb=$(el "$t0" "$(now)")
		t0=$(now); job "$n" $w & p=$!; job "$n" $w; wait $p; t=$(el "$t0" "$(now)")
		r=$(awk -v a="$ta" -v b="$tb" -v t="$t" 'BEGIN { printf "%.2fx", t / (a + b) }')
		echo "| $mode | $n | ${up} s | $(mib "$nr") / $(mib "$np") | $(mib "$mr") / $(mib "$mp") | $(mib "${gp:-0}") | ${l} ms | ${b} s | $r ($ta / $tb / $t s) | $(cut -d' ' -f1 /proc/loadavg) |"
		storm cluster down --dir $D >/dev/null 2>&1
	done
done
