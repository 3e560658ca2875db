#!/bin/sh
# In the guest: the network layer over libfabric's verbs provider (under
# ofi_rxm, as a cluster names it: `verbs;ofi_rxm`) on soft-RoCE, rdma_rxe,
# the kernel's software RDMA device: the three primitives between node
# processes and COMPARE-AND-WRITE under contention (sn_mptest), then a
# BCS-MPI ring on a 2-node storm cluster, whose payloads go from the
# sending rank's own verbs endpoint.
# Prints PASS/FAIL lines.
#
# One rxe device, on one end of a veth pair in the initial network
# namespace, carries every endpoint (each its own queue pairs, connected
# through the RDMA connection manager to the same address). Not one device
# per namespace: this kernel's rxe opens its UDP port (4791) and routes what
# it sends in the initial namespace only, so a device on an interface moved
# into another namespace neither receives nor reaches its peer.
#     guest_rdma.sh
set -u
dir=/tmp/storm-0
fail() {
	echo "FAIL: rdma: $*"
	for f in "$dir"/log/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f"
		tail -n 15 "$f"
	done
	storm cluster down >/dev/null 2>&1
	exit 1
}
for m in $(cat /lib/modules/rdma/order); do
	insmod "/lib/modules/rdma/$m.ko" || fail "insmod $m"
done
# iproute2's ip by its path: the guest's busybox sh runs its own applets
# ahead of PATH
ip=/usr/sbin/ip
$ip link add rxa type veth peer name rxb || fail "veth pair"
$ip addr add 10.77.0.1/24 dev rxa || fail "address on rxa"
$ip link set rxb up && $ip link set rxa up || fail "veth up"
rdma link add rxe0 type rxe netdev rxa || fail "rdma link add rxe0"
# libfabric's verbs provider resolves a name (rdma_getaddrinfo) even for an
# endpoint bound to no address; with no /etc/hosts the guest's resolver
# asks DNS, there is none, and the provider offers nothing (EAI_AGAIN)
busybox hostname rdma-guest
printf '127.0.0.1 localhost\n10.77.0.1 rdma-guest\n' >/etc/hosts
echo 'hosts: files' >/etc/nsswitch.conf
echo "guest: rdma: $(rdma link show | tr '\n' ' ')"
echo "PASS: rdma: soft-RoCE device rxe0 on rxa"

# the three primitives: XFER-AND-SIGNAL with its events (integrity),
# TEST-EVENT (events) and COMPARE-AND-WRITE (caw), 2 node processes each;
# then COMPARE-AND-WRITE under contention, 8 node processes each: every
# one writing over its overlapping window and over all at one instant
# (contend), and all racing for one value (concurrent)
# (CUnit's verdicts on stdout; the scenarios' notes and libfabric's
# warnings on stderr, shown on a failure). Each operation's bound is a
# minute, against a hang only: rxe hashes every packet (crc32) on the
# emulated CPU, and integrity's 16 MiB transfer missed the 6 s a host's
# run allows on a loaded host
scen='integrity x2|events x2|caw x2|contend x8|concurrent x8'
SN_TEST_PROVIDERS='verbs;ofi_rxm' SN_TEST_ONLY=$scen \
	SN_TEST_OP_TIMEOUT_MS=60000 FI_LOG_LEVEL=warn sn_mptest >/tmp/sn_mptest.out 2>/tmp/sn_mptest.err
rc=$?
sed -n 's/^ *Test: \(.*\) \.\.\.passed$/PASS: rdma: verbs;ofi_rxm: \1/p' /tmp/sn_mptest.out
# each scenario's time and its nodes' CPU
grep '^time: ' /tmp/sn_mptest.err | sed 's/^/guest: sn_mptest: /'
n=$(grep -c '\.\.\.passed$' /tmp/sn_mptest.out)
want=$(echo "$scen" | tr '|' '\n' | grep -c .)
if [ $rc != 0 ] || [ "$n" != "$want" ]; then
	cat /tmp/sn_mptest.out /tmp/sn_mptest.err | grep -v '^ *$' | tail -n 40 |
		sed 's/^/guest: sn_mptest: /'
	fail "sn_mptest on verbs;ofi_rxm: exit $rc, $n of $want passed"
fi

# a BCS-MPI ring of 2 ranks on 2 nodes, the cluster's fabric on verbs
storm cluster up --nodes 2 --cpus 1 --timeslice-us 50000 --provider 'verbs;ofi_rxm' \
	--up-timeout 900 >/tmp/up.out 2>&1 || {
	rc=$?
	sed 's/^/guest: up: /' /tmp/up.out
	fail "storm cluster up --provider 'verbs;ofi_rxm': exit $rc"
}
# each node daemon names its fabric's provider when it is up
grep -h ' up (fabric id' "$dir"/log/node*.log | sed 's/^/guest: rdma: /'
up=$(grep -h ' up (fabric id.*provider verbs;ofi_rxm' "$dir"/log/node*.log | wc -l)
[ "$up" = 2 ] || fail "$up of 2 node daemons up on verbs;ofi_rxm"
storm run -N 2 -n 2 /usr/bin/ring >/tmp/ring.out 2>&1 || {
	sed 's/^/guest: ring: /' /tmp/ring.out
	fail "storm run -N 2 -n 2 ring"
}
grep -q '^ring: token 3 (expected 3)$' /tmp/ring.out || fail "ring: $(cat /tmp/ring.out)"
echo "PASS: rdma: BCS-MPI ring on 2 nodes over verbs;ofi_rxm"
# The receiving node daemons' counts of a job's message data from the
# other node, as each logs them when the job ends here: "X Y" summed over
# the nodes, X written by the sending ranks, Y through the daemons. Waits
# for the job's line from each of the 2 nodes (the job's end reaches them
# in their own time), a deadline against a hang only.
data_lines() {
	cat "$dir"/log/node*.log | grep -c 'message data from other nodes'
}
data_after() {
	want=$(($1 + 2)) t=0
	while [ "$(data_lines)" -lt $want ] && [ $t -lt 600 ]; do
		sleep 1
		t=$((t + 1))
	done
	for f in "$dir"/log/node*.log; do
		grep -h 'message data from other nodes' "$f" | tail -n 1
	done | sed -n 's/.*: \([0-9]*\) bytes written by the sending ranks, \([0-9]*\) through this daemon.*/\1 \2/p' |
		awk '{ r += $1; d += $2; n++ } END { print r + 0, d + 0, n + 0 }'
}
# the same with 256 KiB payloads, big enough for rank writes (the default):
# the sending rank writes each piece from its own verbs endpoint into the
# receiving rank's pool, which the receiving node daemons count (each piece
# that cannot go that way goes through them); checked intact, and the
# ranks' own words on their endpoints shown. (The first ring logged no
# such line: its tokens went inline in their descriptors.)
before=$(data_lines)
storm run -N 2 -n 2 /usr/bin/ring 262144 >/tmp/ring.out 2>&1 || {
	sed 's/^/guest: ring: /' /tmp/ring.out
	fail "storm run -N 2 -n 2 ring 262144"
}
grep -q '^ring: 262144-byte payloads intact$' /tmp/ring.out || fail "ring 262144: $(cat /tmp/ring.out)"
grep -h 'endpoint' /tmp/ring.out | sed 's/^/guest: ring: /'
echo "PASS: rdma: BCS-MPI 256 KiB payloads on 2 nodes over verbs;ofi_rxm"
set -- $(data_after $before)
echo "guest: rdma: ring 262144: $1 bytes from the other node written rank to rank, $2 through the daemons ($3 of 2 nodes' counts)"
[ "$3" = 2 ] || fail "ring 262144: $3 of 2 node daemons logged the job's message data"
# 3 laps, each a payload either way between the 2 nodes
[ "$1" -gt 0 ] || fail "ring 262144: no byte went rank to rank over verbs ($2 through the daemons)"
echo "PASS: rdma: BCS-MPI payloads written rank to rank over verbs;ofi_rxm ($1 of $((6 * 262144)) bytes)"
storm cluster down >/dev/null || fail "storm cluster down"
