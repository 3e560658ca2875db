#!/bin/bash
# Fault injection on a 4-node --netns virtual cluster (each node daemon in its
# own network namespace on a bridge):
#  1. a node's link goes down under two jobs: DOWN; the plain one fails
#     naming it, the one with --restart-on-failure restarts from its latest
#     checkpoint on the nodes still up and ends as an uninterrupted run; the
#     link comes back: UP, and it runs jobs again;
#  2. 20% packet loss and 5 ms delay on two nodes' links while jobs run
#     (NFQUEUE + nfq_netem: this kernel has no sch_netem): every job finishes
#     with the right output, a 12 MiB program arrives intact everywhere;
#  3. the machine manager killed (kill -9) at the start of launches, in the
#     middle of a 12 MiB program's multicast, and while a node is cut off
#     from a launch, and started again: each job completes or is reported
#     failed, none is lost, and the cluster serves new jobs;
#  4. a node's local storage (a 2 MiB tmpfs) fills up during a 12 MiB
#     transfer: the job fails naming the node and the cause, and nothing
#     half-written is left on any node.
# Ends with the count of jobs lost (submitted, but neither completed nor
# reported failed in storm acct): must be 0. Needs root.
# Usage: test_faults.sh BUILD_BIN_DIR   (make clustertest, make faulttest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-faulttest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
NETEM="" MNT="" BG=""
cleanup() {
	for p in $NETEM $BG; do kill "$p" 2>/dev/null; done
	for ns in ${LOSSY:-}; do ip netns exec "$ns" iptables -F OUTPUT 2>/dev/null; done
	for ns in ${DROPS:-}; do ip netns exec "$ns" iptables -F INPUT 2>/dev/null; done
	[ -n "$MNT" ] && umount "$MNT" 2>/dev/null
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
if [ "$(id -u)" != 0 ]; then
	echo "FAIL test_faults.sh needs root (network namespaces)"
	exit 1
fi
cd "$T" || exit 1
: >"$T/ids"
# no storm command may hang the test (make check): 2 minutes at most each
storm() { timeout 120 "$BIN/storm" "$@"; }
# what the daemons said while node01 was cut off (the end of the run's
# logs, which fail_report shows, is long after)
part1_logs() { log_tails 25 "$C"/log/mm.log "$C"/log/node0[0-3].log; }
# node i's namespace: DIR/netns records the cluster's prefix
ns_of() { echo "$(cut -d' ' -f1 "$C/netns")-n$1"; }
# submitted jobs, for the final count of lost ones
track() { sed -n 's/^Submitted job \([0-9]*\)$/\1/p' "$T/out" >>"$T/ids"; }
SELF=$BIN/storm_selfsum
SUM=$("$SELF" | cut -d' ' -f2-)

# down_after_ms 10000: 20% loss makes TCP back off for seconds. The
# checkpointed job's files are reopened by path where it is restarted: with
# --hosts its directory is shared, as a site's /home would be
mkdir -p "$T/ck" "$T/ref"
if storm cluster up $NETNS_MODE $(shared "$T/ck") --nodes 4 --down-after-ms 10000 --dir "$C" >"$T/up.out" 2>&1; then
	ok "cluster up $NETNS_MODE with 4 nodes"
else bad "cluster up $NETNS_MODE"; cat "$T/up.out"; exit 1; fi

# ---- 1. a link goes down under two jobs, and comes back
NS1=$(ns_of 1)
mkfifo "$T/f"
storm run -N 4 sh -c 'echo up; exec sleep 600' >"$T/f" 2>"$T/run.err" &
RUN=$!
BG=$RUN
exec 7<"$T/f"
for i in 1 2 3 4; do read -r -t 60 _ <&7; done
# with --restart-on-failure: on node00 and node01 in the matrix's other row
# (the first is full), checkpointed every second
# (its ranks hold after step 5 until the test creates $T/ck/gate.5 once the
# restart is under way: it still runs when node01 is declared DOWN)
CK="$BIN/ckpt_prog 1000 4 ck%r.f 10 sleep"
(cd "$T/ref" && STORM_RANK=0 exec $CK >/dev/null) & # the uninterrupted run's file
REF=$!
(cd "$T/ck" && storm run -N 2 -n 2 --checkpoint-interval 1 --restart-on-failure $CK hold 5) \
	>"$T/ck.out" 2>"$T/ck.err" &
CKRUN=$!
BG="$RUN $CKRUN $REF"
wait_log "$T/ck.out" "step 1 " 30
CKJ=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
wait_log "$C/log/mm.log" "job $CKJ: complete checkpoint" 30 || bad "job $CKJ: a periodic checkpoint completed"
ip -n "$NS1" link set eth0 down
wait_log "$C/log/mm.log" "node node01 is DOWN" 30 && ok "link down: node01 DOWN" || bad "link down: node01 DOWN"
wait_log "$T/ck.err" "; job $CKJ restarts from checkpoint" 300 ||
	bad "job $CKJ restarts once node01 is DOWN"
: >"$T/ck/gate.5"
wait "$RUN"
rc=$?
exec 7<&-
[ $rc != 0 ] && grep -q "node node01 stopped responding" "$T/run.err" &&
	ok "  a job fails naming node01 (exit $rc)" || { bad "  a job fails naming node01"; cat "$T/run.err"; }
wait "$CKRUN"
rc=$?
BG=""
[ $rc = 0 ] && grep -q "node node01 stopped responding (no report for [0-9.]* s); job $CKJ restarts from checkpoint" "$T/ck.err" &&
	ok "  a job with --restart-on-failure restarts from its checkpoint and ends (exit 0)" ||
	{ bad "  a job with --restart-on-failure recovers (exit $rc)"; tail -5 "$T/ck.err"; part1_logs; }
wait "$REF"
cmp -s "$T/ref/ck0.f" "$T/ck/ck0.f" && cmp -s "$T/ref/ck0.f" "$T/ck/ck1.f" && grep -q "^done " "$T/ck.out" &&
	ok "  ... its files are those of an uninterrupted run" || bad "  ... its files are an uninterrupted run's"
ip -n "$NS1" link set eth0 up
# TCP's retransmissions back off while the link is down (0.2 s doubling,
# ~25 s and ~51 s after it went): what was sent to node01 and lost goes
# again only at the next one, up to a minute after the link returns
storm cluster status --wait "$(patience 75)" >/dev/null && ok "  link up: node01 UP again" ||
	{ bad "  node01 UP again"; part1_logs; }
expect "  a job on all 4 after it returns" 0 storm run -N 4 true

# ---- 2. 20% loss and 5 ms delay on node02's and node03's links
LOSSY="$(ns_of 2) $(ns_of 3)"
for ns in $LOSSY; do
	ip netns exec "$ns" iptables -A OUTPUT -o eth0 -j NFQUEUE --queue-num 1 --queue-bypass
	ip netns exec "$ns" "$BIN/nfq_netem" 1 20 5 >"$T/netem.$ns" 2>&1 &
	NETEM="$NETEM $!"
	wait_log "$T/netem.$ns" "nfq_netem: ready" 10 || bad "nfq_netem did not start in $ns"
done
ok "loss 20% and delay 5 ms on node02 and node03 (egress)"
good=0
for i in 1 2 3; do
	storm run -N 4 -n 8 sh -c 'echo "rank $STORM_RANK of $STORM_SIZE"' >"$T/lossy.$i" 2>&1 &&
		[ "$(sort "$T/lossy.$i" | uniq | wc -l)" = 8 ] && good=$((good + 1))
done
[ $good = 3 ] && ok "  3 runs of 8 ranks: every rank's line" || bad "  $good of 3 runs complete"
expect "  a batch job" 0 storm submit --wait -N 4 -n 4 -o "$T/lossy.batch" sh -c 'seq 1 2000 | sed "s/^/$STORM_RANK /"'
track
# the MM writes it (--hosts: in its host's files)
B=$(in_host mm "$T/lossy.batch")
[ "$(wc -l <"$B")" = 8000 ] && ok "  ... all 8000 lines of its output" ||
	bad "  batch output: $(wc -l <"$B") of 8000 lines"
expect "  a 12 MiB program on 4 nodes" 0 storm run -N 4 -n 4 "$SELF"
[ "$(cut -d' ' -f2- "$T/out" | sort -u)" = "$SUM" ] && [ "$(wc -l <"$T/out")" = 4 ] &&
	ok "  ... arrives intact on every node (checksum)" || { bad "  checksums"; cat "$T/out"; }
grep -h "packets" "$T"/netem.* 2>/dev/null
for p in $NETEM; do kill "$p"; wait "$p" 2>/dev/null; done
NETEM=""
for ns in $LOSSY; do ip netns exec "$ns" iptables -F OUTPUT; done
cat "$T"/netem.* | grep "dropped" | sed 's/^/     /'
LOSSY=""

# ---- 3. the MM killed in the middle of launches, and started again
for round in transfer launch; do
	if [ $round = transfer ]; then
		expect "MM killed as a program transfer starts" 0 storm submit -N 4 -n 4 -o "$T/k.$round" /bin/true
	else
		# no transfer: the kill lands around the launch command itself
		expect "MM killed at a launch command" 0 storm submit -N 4 -n 4 --no-bcast \
			-o "$T/k.$round" /bin/sh -c 'echo "ran $STORM_RANK"'
	fi
	track
	id=$(tail -1 "$T/ids")
	wait_log "$C/log/mm.log" "job $id starts" 10
	kill -9 "$(daemon_pid mm)"
	gone "$(daemon_pid mm)"
	expect "  restarted" 0 storm cluster restart mm --dir "$C"
	if wait_log "$C/log/mm.log" "job $id ended" 60; then
		state=$(storm acct -j "$id" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["state"])')
		ok "  job $id ended after the restart: $state"
		grep "job $id ended" "$C/log/mm.log" | tail -1 | sed 's/^/     /'
	else bad "  job $id ended after the restart"; fi
done

# killed once node00 has written the first 4 MiB chunk of a 12 MiB program
# and a 24 MiB file: the other chunks are on the wire. The nodes must hear
# the new MM (a receive the provider had matched to the dead sender's
# message is given back and posted again) and the transfer starts over.
# (with --hosts storm sends the files' bytes over TCP, 16 MiB at most in
# all: a 2 MiB file)
# The MM runs with the test point transfer_hold: two chunks go out and the
# rest only after its restart, so the kill lands in the transfer however
# fast the machine moves it.
kill -9 "$(daemon_pid mm)"
gone "$(daemon_pid mm)"
expect "MM restarted with the transfer_hold test point" 0 \
	env STORM_TEST_TAMPER=transfer_hold=2 storm cluster restart mm --dir "$C"
head -c "$([ "${STORM_HOSTS:-}" = 1 ] && echo 2097152 || echo 25165824)" /dev/urandom >"$T/big"
exec 8< <(wait_written "$(node_state node00)/jobs" 30; echo "written $?")
read -r _ <&8 # watching
expect "MM killed in the middle of a 12 MiB multicast" 0 storm submit -N 4 -n 4 -o "$T/k.mid" \
	--file "$T/big" "$SELF"
track
id=$(tail -1 "$T/ids")
read -r _ w <&8
exec 8<&-
[ "$w" = 0 ] || bad "  node00 wrote a chunk of job $id"
wait_log "$C/log/mm.log" "test hook: job $id's transfer held" 30 || bad "  job $id's transfer held"
kill -9 "$(daemon_pid mm)"
gone "$(daemon_pid mm)"
expect "  restarted" 0 storm cluster restart mm --dir "$C"
grep -q "job $id restored from the database: QUEUED" "$C/log/mm.log" &&
	ok "  job $id was still transferring: restored QUEUED" || bad "  job $id restored QUEUED"
if wait_log "$C/log/mm.log" "job $id ended" 60; then
	storm acct -j "$id" --json >"$T/acct.mid"
	K=$(in_host mm "$T/k.mid")
	grep -q '"state": "COMPLETED"' "$T/acct.mid" && [ "$(cut -d' ' -f2- "$K" | sort -u)" = "$SUM" ] &&
		[ "$(wc -l <"$K")" = 4 ] &&
		ok "  job $id transferred again and completed: one checksum on all 4 ranks" ||
		{ bad "  job $id completed with the right checksums"; cat "$T/acct.mid" "$K"; }
else bad "  job $id ended after the restart"; fi
expect "  the cluster runs new jobs" 0 storm run -N 4 -n 4 "$SELF"
[ "$(cut -d' ' -f2- "$T/out" | sort -u)" = "$SUM" ] && ok "  ... a 12 MiB program arrives intact" ||
	bad "  ... a 12 MiB program arrives intact"

# a launch command that one node never got (its link was down) when the MM
# died: the restarted MM learns it from that node's reports and fails the
# job. The dead MM's sockets would still deliver the command once the link is
# back (the kernel retransmits for an exited process): node03 drops their
# packets, as if they had been lost for good. node02 is cut off while the MM
# restarts, so it is not UP when the job fails: its ranks must be killed when
# it comes back (they once ran on, and the job never ended).
NS2=$(ns_of 2) NS3=$(ns_of 3)
ip -n "$NS3" link set eth0 down
expect "MM killed while node03 is cut off from a launch" 0 storm submit -N 4 --no-bcast -o "$T/k.cut" \
	/bin/sh -c 'echo "ran $STORM_RANK"; exec sleep 600'
track
id=$(tail -1 "$T/ids")
for n in node00 node01 node02; do wait_log "$C/log/$n.log" "job $id: started ranks" 20; done
mm=$(daemon_pid mm)
# the old MM's fabric connections to node03, not its registration port,
# which the restarted MM listens on again for node03 to register
reg=$(sed -n 's/^mm_address = .*:\([0-9]*\)$/\1/p' "$C/storm.conf")
# (--hosts: the MM has an address and a namespace of its own)
# (the cluster's network, 10.X.0.0/16, is in its mm_address)
MM_IP=$(sed -n 's/^mm_address = \(.*\):[0-9]*$/\1/p' "$C/storm.conf") MM_NET=()
NET=${MM_IP%.255.25?}
[ "${STORM_HOSTS:-}" = 1 ] && MM_NET=(ip netns exec "$(cut -d" " -f1 "$C/netns")-mm")
for port in $("${MM_NET[@]}" ss -tnpH | grep "pid=$mm," | awk -v reg="$reg" -v n3="$NET.0.4:" 'index($5, n3) == 1 { sub(/.*:/, "", $4); if ($4 != reg) print $4 }'); do
	ip netns exec "$NS3" iptables -A INPUT -s "$MM_IP" -p tcp --sport "$port" -j DROP
done
DROPS=$NS3
kill -9 "$mm"
gone "$mm"
ip -n "$NS2" link set eth0 down
ip -n "$NS3" link set eth0 up
expect "  restarted, node02 cut off" 0 storm cluster restart mm --dir "$C"
wait_log "$C/log/node00.log" "job $id done" 30 && ok "  the job fails: its ranks on node00 are killed" ||
	bad "  the job fails: its ranks on node00 are killed"
ip -n "$NS2" link set eth0 up
wait_log "$C/log/mm.log" "job $id: node node02 is back; it gets the signal that stops the job" 30 &&
	ok "  node02 is back and told to kill the job's ranks" || bad "  node02 told to kill the job's ranks"
if wait_log "$C/log/mm.log" "job $id ended" 30; then
	storm acct -j "$id" --json >"$T/acct.cut"
	grep -q '"state": "FAILED"' "$T/acct.cut" && grep -q "node03 never received its launch command" "$T/acct.cut" &&
		ok "  the job is reported FAILED naming node03, which never got the launch" ||
		{ bad "  the job fails naming node03"; cat "$T/acct.cut"; }
else bad "  job $id ended after the restart"; fi
ip netns exec "$NS3" iptables -F INPUT
DROPS=""
left=""
for n in node00 node01 node02; do left="$left$(pgrep -f "sleep 600" -P "$(daemon_pid $n)")"; done
[ -z "$left" ] && ok "  its ranks on the other nodes are gone" || bad "  its ranks on the other nodes are gone: $left"

# ---- 4. node03's local storage fills up during a transfer (with --hosts
# mounted in node03's own mount namespace, as its administrator would)
if [ "${STORM_HOSTS:-}" = 1 ]; then
	AT03=(on_host node03) J03=$C/state/node03/jobs
else
	AT03=() J03=$(node_state node03)/jobs
	MNT=$J03
fi
"${AT03[@]}" mount -t tmpfs -o size=2m,mode=0711 storm-faulttest "$J03"
storm run -N 4 -n 4 "$SELF" >"$T/out" 2>"$T/err"
rc=$?
[ $rc != 0 ] && ok "a 12 MiB program with node03's storage 2 MiB fails (exit $rc)" ||
	bad "a 12 MiB program with node03's storage 2 MiB fails (exit $rc)"
grep -q "node03" "$T/err" && grep -q "No space left on device" "$T/err" &&
	ok "  fails naming node03 and 'No space left on device'" || { bad "  names node03 and the cause"; cat "$T/err"; }
left=$("${AT03[@]}" find "$J03" -mindepth 1 | wc -l)
[ "$left" = 0 ] && ok "  nothing half-written left in node03's storage" ||
	{ bad "  $left files left in node03's storage"; "${AT03[@]}" find "$J03"; }
JOBDIRS=$(for n in node00 node01 node02 node03; do echo "$(node_state $n)/jobs"; done)
left=$(find $JOBDIRS -mindepth 1 | wc -l)
[ "$left" = 0 ] && ok "  nor on any other node" || { bad "  $left files left"; find $JOBDIRS -mindepth 1; }
expect "  node03 still runs small jobs" 0 storm run -N 4 true
"${AT03[@]}" umount "$J03" && MNT=""

# ---- jobs lost: submitted but not accounted as ended
storm acct --json >"$T/acct.json"
lost=$(python3 - "$T/acct.json" "$T/ids" <<'EOF'
import json, sys
acct = {j["job"]: j["state"] for j in json.load(open(sys.argv[1]))["jobs"]}
ids = [int(l) for l in open(sys.argv[2]) if l.strip()]
print(sum(1 for i in ids if acct.get(i) not in ("COMPLETED", "FAILED", "CANCELLED")))
EOF
)
[ "$lost" = 0 ] && ok "jobs lost: 0 of $(wc -l <"$T/ids") submitted" || bad "jobs lost: $lost"
expect "cluster down" 0 storm cluster down --dir "$C"
echo "$checks checks, $fails failed"
[ $fails = 0 ]
