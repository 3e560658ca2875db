#!/bin/bash
# Node-to-node mailbox messages lost for good, and a lossy, slow link, under
# BCS-MPI jobs and MPICH's PMI-1 fences, on 4-node clusters:
#  1. a plain cluster: the test hook mb_drop_every=4 makes node01 skip the
#     first transmission of every 4th mailbox message it sends (what a
#     provider that failed the send for good, or a packet its reliability
#     gave up on, leaves: no error here, a hole in the stream), and
#     mb_ack_drop_every=5 loses every 5th ack it writes. Each job must still complete: the sender resends what
#     has no ack, the receiver takes each number once, in order, and
#     acknowledges a resend of what it had again; at the end every stream of
#     node01 is acknowledged up to what it sent (its SIGUSR1 dump);
#  2. a --netns cluster with the same hooks and, on top of them, 10% loss
#     and 5 ms delay on node02's and node03's egress (NFQUEUE + nfq_netem):
#     the same jobs complete. (--netns clusters share one subnet: while
#     another one runs on this host, this cluster runs in a network
#     namespace of its own and every link gets the loss, on its loopback.)
# Without resends the first hole stalls its stream: the job never ends.
# Needs root. Every daemon and nfq_netem goes down on exit.
# Usage: test_mbox_loss.sh BUILD_BIN_DIR
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-mboxloss.XXXXXX)
C=$T/c1
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0 NETEM="" LOSSY="" PRIV=""
cleanup() {
	for p in $NETEM; do kill "$p" 2>/dev/null; done
	for ns in $LOSSY; do ip netns exec "$ns" iptables -F OUTPUT 2>/dev/null; done
	cluster_teardown
	[ -n "$PRIV" ] && ip netns del "$PRIV"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ "$(id -u)" != 0 ]; then
	echo "FAIL test_mbox_loss.sh needs root (network namespaces)"
	exit 1
fi
cd "$T" || exit 1
# a stalled stream is a hang: each job 3 minutes at most
storm() { timeout 180 "$BIN/storm" "$@"; }
ns_of() { echo "$(cut -d' ' -f1 "$C/netns")-n$1"; }

for p in ring coll; do
	bcs-mpicc -O2 -o "$T/$p" "$HERE/mpi/$p.c" || { bad "bcs-mpicc $p.c"; exit 1; }
done
mpicc.mpich -O2 -o "$T/pmiprog" "$HERE/mpi/pmiprog.c" || { bad "mpicc.mpich pmiprog.c"; exit 1; }

# the jobs of one round: BCS-MPI point to point and collectives, and an
# MPICH program whose wire-up is PMI-1 fences across the 4 nodes
jobs() {
	expect "$1: BCS-MPI ring, 8 ranks on 4 nodes" 0 storm run -N 4 -n 8 ./ring
	has "  the token went round 3 times" out "ring: token 84 (expected 84)"
	expect "$1: BCS-MPI collectives, 8 ranks on 4 nodes" 0 storm run -N 4 -n 8 ./coll
	expect "$1: MPICH over PMI-1 fences, 8 ranks on 4 nodes" 0 storm run -N 4 -n 8 ./pmiprog ring
}

# every stream of node01 acknowledged up to what it sent, nothing queued
# (its last acks may still be on their way, or lost and due again at a
# resend: asked again until then, 30 s at most). An ack taken in logs
# nothing and a resend's line is rate-limited, so no event says the count
# moved: this dump, read on its own "state: end" line, is asked once a second.
all_acked() {
	local pid log from i
	pid=$(daemon_pid node01) log=$C/log/node01.log
	for i in $(seq 30); do
		from=$(($(wc -l <"$log") + 1))
		kill -USR1 "$pid"
		wait_log "$log" "state: end" 10 >/dev/null
		tail -n +"$from" "$log" | sed -n '/state: slice/,/state: end/p' >"$T/dump"
		grep -q "mailbox with node" "$T/dump" &&
			! grep "mailbox with node" "$T/dump" |
				awk '{ for (i = 1; i <= NF; i++) { if ($i == "sent") s = $(i + 1);
					if ($i == "acknowledged") a = $(i + 1); if ($i == "queued,") q = $(i - 1) }
					if (s + 0 != a + 0 || q + 0 != 0) bad = 1 } END { exit !bad }' &&
			return 0
		sleep 1
	done
	return 1
}

# up MODE [PREFIX]: the cluster $C, node01 with the hooks (PREFIX: a
# command it starts under, ip netns exec NS)
up() {
	STORM_TEST_TAMPER_NODE=node01 STORM_TEST_TAMPER=mb_drop_every=4,mb_ack_drop_every=5 \
		expect "cluster up $1, 4 nodes; node01 loses every 4th mailbox message and 5th ack" 0 \
		${2:-} timeout 180 "$BIN/storm" cluster up $1 --nodes 4 --down-after-ms 10000 --dir "$C"
	[ "$fails" = 0 ] || exit 1
}
up "$UP_MODE"

# ---- 1. messages lost for good at the sender
jobs "lost messages"
n=$(grep -c "test hook: mailbox message .* dropped" "$C/log/node01.log")
[ "$n" -gt 0 ] && ok "  node01 dropped $n mailbox messages" || bad "  node01 dropped mailbox messages"
n=$(grep -c "test hook: mailbox ack .* dropped" "$C/log/node01.log")
[ "$n" -gt 0 ] && ok "  node01 dropped $n acks" || bad "  node01 dropped acks"
grep -q "mailbox: no ack from node .* sending them again" "$C/log/node01.log" &&
	ok "  node01 sent the unacknowledged ones again" || bad "  node01 resent"
if all_acked; then
	ok "  every stream of node01 acknowledged up to what it sent"
else
	bad "  node01's streams acknowledged"; sed 's/^/     | /' "$T/dump"
fi
grep -h "mailbox with node" "$T/dump" | sed 's/^/     | /'
# a duplicate (a resend whose ack was lost) is re-acked, never delivered
# twice: the jobs' results above say the latter; the dumps count the former
dups=0
for n in node00 node02 node03; do
	pid=$(daemon_pid $n)
	from=$(($(wc -l <"$C/log/$n.log") + 1))
	kill -USR1 "$pid"
	wait_log "$C/log/$n.log" "state: end" 10 >/dev/null
	d=$(tail -n +"$from" "$C/log/$n.log" | sed -n 's/.*mailbox with node 1:.* \([0-9]*\) duplicates.*/\1/p')
	dups=$((dups + ${d:-0}))
done
echo "     duplicates of node01's messages seen: $dups"

# ---- 2. and real loss and delay on two links
cluster_kill
C=$T/c2 STORM_CONF=$T/c2/storm.conf
if [ -z "$NETNS_MODE" ] || ! ip -br addr | grep -q "10\.213\.255\.254/"; then
	up "$NETNS_MODE"
	LOSSY="$(ns_of 2) $(ns_of 3)" DEV=eth0 WHERE="node02's and node03's egress"
else
	# another --netns cluster on this host holds its subnet: this one in a
	# network namespace of its own, loss and delay on its loopback (every
	# link of the cluster: node to node and MM)
	PRIV=mbl$$
	ip netns add "$PRIV" && ip -n "$PRIV" link set lo up
	up "" "ip netns exec $PRIV"
	LOSSY=$PRIV DEV=lo WHERE="every link (the cluster in a private namespace: another --netns cluster runs here)"
fi
for ns in $LOSSY; do
	ip netns exec "$ns" iptables -A OUTPUT -o $DEV -p tcp -j NFQUEUE --queue-num 1 --queue-bypass
	ip netns exec "$ns" "$BIN/nfq_netem" 1 10 5 >"$T/netem.$ns" 2>&1 &
	NETEM="$NETEM $!"
	wait_log "$T/netem.$ns" "nfq_netem: ready" 10 || bad "nfq_netem did not start in $ns"
done
ok "loss 10% and delay 5 ms on $WHERE"
jobs "lossy links"
for p in $NETEM; do kill "$p"; wait "$p" 2>/dev/null; done
NETEM=""
for ns in $LOSSY; do ip netns exec "$ns" iptables -F OUTPUT; done
LOSSY=""
grep -h "dropped" "$T"/netem.* | sed 's/^/     /'
expect "a job on all 4 after it" 0 storm run -N 4 -n 8 ./ring

echo "test_mbox_loss: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
