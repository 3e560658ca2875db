#!/bin/sh
# Before/after comparison of the 8 B XFER ping-pong against fi_pingpong, with
# every measurement interleaved so that all three see the same machine load
# (on a shared 2-core machine the load changes from minute to minute).
#
# usage: bench/primitives/ab_lat.sh OLD_SN_BENCH NEW_SN_BENCH [ROUNDS]
#
# OLD_SN_BENCH is an sn_bench built from an older commit (run with its own
# defaults), NEW_SN_BENCH the current one (run as `make bench` runs it, and
# again with --local-ev 1). Per provider and round: fi_pingpong, old, new,
# new --local-ev 1. Prints one line per measurement: provider, what, µs
# (fi_pingpong's mean; sn_bench's median and mean).
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-3}
ITERS=20000 BUDGET=2
CPUS=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/self/status)
CPU_A=$(echo "$CPUS" | sed 's/[-,].*//')
CPU_B=$(echo "$CPUS" | awk -F'[-,]' '{ print (NF > 1 ? $2 : $1) }')
PORT=$((30000 + $$ % 20000))

pingpong() { # provider -> mean usec/xfer (as in run.sh)
	PORT=$((PORT + 1))
	timeout 60 taskset -c "$CPU_A" fi_pingpong -p "$1" -e rdm -I $ITERS -S 8 -B "$PORT" \
		>/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	timeout 60 taskset -c "$CPU_B" fi_pingpong -p "$1" -e rdm -I $ITERS -S 8 -P "$PORT" \
		127.0.0.1 2>/dev/null | awk 'NR > 1 && NF >= 8 { print $7 }'
	wait "$srv" 2>/dev/null
}

snb() { # binary provider extra-args -> "median mean"
	bin=$1 p=$2
	shift 2
	timeout 120 "$bin" --provider "$p" --nodes 2 --test lat --size 8 --pin 1 \
		--iters $ITERS --budget-s $BUDGET "$@" 2>/dev/null |
		grep -o '"median_us":[0-9.]*\|"mean_us":[0-9.]*' | tr -d '"' | paste -sd' '
}

for p in "tcp;ofi_rxm" shm "udp;ofi_rxd"; do
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		echo "$p fi_pingpong $(pingpong "$p")"
		echo "$p old $(snb "$OLD" "$p")"
		echo "$p new $(snb "$NEW" "$p")"
		echo "$p new_local_ev $(snb "$NEW" "$p" --local-ev 1)"
		r=$((r + 1))
	done
done
