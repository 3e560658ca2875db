#!/bin/bash
# A virtual cluster with one network namespace per node (storm cluster up
# --netns): cut a node's link, see it DOWN and its job fail naming it, run on
# the others, restore the link, see it UP and run on all; storm inside a
# node's namespace reaches the MM over the bridge at ctl_address (TCP), the
# MM's socket out of its sight. Needs root.
# Usage: test_netns.sh BUILD_BIN_DIR   (part of make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-netnstest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
cleanup() {
	fail_report
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	storm cluster down --dir "$T/c2" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ "$(id -u)" != 0 ]; then
	echo "FAIL test_netns.sh needs root (network namespaces)"
	exit 1
fi
cd "$T" || exit 1
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')
if storm cluster up --netns --nodes 4 --dir "$C" --down-after-ms 500 --ctl-port "$PORT" >"$T/up.out" 2>&1; then
	ok "cluster up --netns with 4 nodes"
else bad "cluster up --netns"; cat "$T/up.out"; exit 1; fi
storm run -N 4 sh -c 'ip -4 -o addr show eth0 | wc -l' >"$T/out" 2>&1
[ "$(grep -c '^1$' "$T/out")" = 4 ] && ok "each node daemon's ranks see only their own eth0" ||
	bad "each node in its own namespace: $(cat "$T/out")"
# this cluster's own (DIR/netns names its prefix): another cluster on the
# machine has a node02 too
NS="$(cut -d' ' -f1 "$C/netns")-n2"
ip netns list | grep -q -- "^$NS\b" || NS=
[ -n "$NS" ] && ok "node02's namespace exists ($NS)" || bad "node02's namespace exists"

# from another network (node02's namespace), over the bridge, by TCP only
ADDR=$(sed -n 's/^ctl_address = //p' "$C/storm.conf")
sed "s|^socket = .*|socket = $T/elsewhere/mm.sock|" "$C/storm.conf" >"$T/remote.conf"
expect "storm run from node02's namespace over TCP to $ADDR" 0 \
	ip netns exec "$NS" env STORM_CONF="$T/remote.conf" storm run -N 4 -l echo over-the-bridge
[ "$(grep -c ': over-the-bridge$' "$T/out")" = 4 ] && ok "  every rank's output streamed back" ||
	bad "  every rank's output streamed back"
expect "storm jobs --json from there" 0 ip netns exec "$NS" env STORM_CONF="$T/remote.conf" storm jobs --json

mkfifo "$T/f"
storm run -N 4 sh -c 'echo up; exec sleep 600' >"$T/f" 2>"$T/run.err" &
RUN=$!
exec 7<"$T/f"
for i in 1 2 3 4; do read -r _ <&7; done
ip -n "$NS" link set eth0 down
wait_log "$C/log/mm.log" "node node02 is DOWN" 20 && ok "a cut link makes the node DOWN" ||
	bad "a cut link makes the node DOWN"
wait "$RUN"
rc=$?
exec 7<&-
[ $rc != 0 ] && grep -q node02 "$T/run.err" && ok "its job fails naming node02 (exit $rc)" ||
	{ bad "its job fails naming node02 (exit $rc)"; cat "$T/run.err"; }
storm run -N 3 /bin/true && ok "the 3 others still run jobs" || bad "the 3 others still run jobs"
ip -n "$NS" link set eth0 up
storm cluster status --wait "$(patience 30)" >/dev/null && ok "the restored link brings it UP again" ||
	bad "the node comes back UP"
# its ranks of the failed job are strays now: the MM has them killed, and
# the node daemon logs the job's end once they are
id=$(sed -n 's/^storm: error: job \([0-9]*\):.*/\1/p' "$T/run.err" | head -1)
if wait_log "$C/log/node02.log" "job $id done" 20 && [ "$(ip netns pids "$NS" | wc -l)" = 1 ]; then
	ok "the failed job's ranks on the returning node are killed"
else bad "the failed job's ranks on the returning node are killed: $(ip netns pids "$NS" | xargs ps -o args= -p)"; fi
storm run -N 4 hostname >/dev/null && ok "a job on all 4 after it returns" || bad "a job on all 4 after it returns"

# a second --netns cluster beside it on this machine: a network of its own
# (each bridge's address was 10.213.255.254, and the second cluster's nodes
# never reached their MM)
if storm cluster up --netns --nodes 2 --dir "$T/c2" >"$T/up2.out" 2>&1; then
	ok "a second --netns cluster comes up beside the first"
else bad "a second --netns cluster comes up beside the first"; sed 's/^/     | /' "$T/up2.out" | head -5; fi
net1=$(sed -n 's/^mm_address = \(10\.[0-9]*\)\..*/\1/p' "$C/storm.conf")
net2=$(sed -n 's/^mm_address = \(10\.[0-9]*\)\..*/\1/p' "$T/c2/storm.conf")
[ -n "$net1" ] && [ -n "$net2" ] && [ "$net1" != "$net2" ] &&
	ok "  on a network of its own ($net1.0.0/16, $net2.0.0/16)" ||
	bad "  on a network of its own ('$net1', '$net2')"
storm run -N 4 -n 4 echo one >"$T/one.out" 2>&1 &
ONE=$!
STORM_CONF=$T/c2/storm.conf storm run -N 2 -n 2 echo two >"$T/two.out" 2>&1 &&
	[ "$(grep -c '^two$' "$T/two.out")" = 2 ] && ok "  its jobs run" || bad "  its jobs run: $(cat "$T/two.out")"
wait "$ONE" && [ "$(grep -c '^one$' "$T/one.out")" = 4 ] && ok "  and the first cluster's beside them" ||
	bad "  and the first cluster's beside them: $(cat "$T/one.out")"
storm cluster down --dir "$T/c2" >/dev/null 2>&1
storm cluster down --dir "$C" >/dev/null 2>&1
ip netns list | grep -q -- "^${NS%-n2}-" && bad "cluster down removes the namespaces" ||
	ok "cluster down removes the namespaces and the bridge"
echo "$checks checks, $fails failed"
[ $fails = 0 ]
