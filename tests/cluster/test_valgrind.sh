#!/bin/bash
# The machine manager and two node daemons under valgrind through a run, a
# --file, a failing batch job, a cancel, a malformed control message and an
# orderly shutdown: no memory error, no leak, in any of them.
# Usage: test_valgrind.sh BUILD_BIN_DIR   (part of make check)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-vgtest.XXXXXX)
export STORM_CONF=$T/storm.conf PATH=$BIN:$PATH
# the daemons are started here, not by storm cluster up, which puts a plain
# cluster's fabric on loopback: the providers' default is the first other
# interface, which can be another cluster's bridge; when its network
# namespaces go, every connection on it stalls in TCP's retransmission
# back-off (up to 2 minutes) and the nodes look dead
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo FI_UDP_IFACE=lo
PIDS="" MUNGED_PID=""
cleanup() {
	fail_report
	for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
	[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fails=0 checks=0
# valgrind runs the daemons tens of times slower (more beside other work):
# a node silent for 10 s is not lost here; liveness is other suites' concern
cat >"$STORM_CONF" <<CONF
[cluster]
state_dir = $T/state
socket = $T/mm.sock
bootstrap = dir:$T/fabric
key_file = $T/cluster.key
munge_socket = $T/munge/munge.socket
op_timeout_ms = 20000
down_after_ms = 60000
[nodes]
names = node[00-01]
CONF
mkdir -p "$T/fabric" "$T/state"
head -c 32 /dev/urandom >"$T/cluster.key" && chmod 600 "$T/cluster.key"
start_munged "$T/munge" || { bad "munged did not start"; exit 1; }
VG="valgrind -q --leak-check=full --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect --error-exitcode=9"
$VG stormmm -c "$STORM_CONF" >"$T/mm.log" 2>&1 &
PIDS="$PIDS $!"
for n in node00 node01; do
	$VG stormnd -c "$STORM_CONF" -n $n --no-realtime >"$T/$n.log" 2>&1 &
	PIDS="$PIDS $!"
done
# the MM says when it listens; then it answers once every node is UP
wait_log "$T/mm.log" "listening on" 60 || { bad "the MM never listened"; exit 1; }
# under valgrind and a loaded machine the nodes take minutes to come UP
storm cluster status --wait "$(patience 120)" >/dev/null || { bad "nodes never came up"; exit 1; }
# every TCP socket the daemons listen on is on loopback
away=$(ss -Htlnp | grep -E "pid=($(echo $PIDS | tr ' ' '|'))," | awk '{ print $4 }' |
	grep -vE '^(127\.0\.0\.1|\[::1\]):')
[ -z "$away" ] && ok "the daemons listen on loopback only" ||
	bad "the daemons listen on loopback only: also on $(echo $away)"
[ "$(storm run -N 2 -n 4 sh -c 'echo hi' | wc -l)" = 4 ] && ok "run" || bad "run"
[ "$(storm run -N 2 --file /etc/hostname cat /etc/hostname | wc -l)" = 2 ] && ok "--file" || bad "--file"
storm submit --wait -o "$T/b.out" -N 2 sh -c 'exit 3' >/dev/null 2>&1
[ $? = 3 ] && ok "failing batch job" || bad "failing batch job"
mkfifo "$T/f"
storm run -N 2 sh -c 'echo up; exec sleep 600' >"$T/f" 2>/dev/null &
RUN=$!
exec 7<"$T/f"
read -r _ <&7
storm cancel "$(storm jobs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["job"])')" >/dev/null
wait $RUN
[ $? = 143 ] && ok "cancel" || bad "cancel"
exec 7<&-
# a BCS-MPI job checkpointed while it runs (the drain, the sealed
# operations, the helper; a restart cannot run under valgrind: the restorer
# would be a valgrind-run process, with valgrind's vDSO)
if bcs-mpicc -O2 "$(dirname "$0")/mpi/ckptapp.c" -o "$T/ckptapp" 2>"$T/cc.err"; then
	# rank 0 holds after its last step until $T/res.end exists: the job
	# still runs when the checkpoint lands
	storm run -N 2 -n 2 "$T/ckptapp" 30 2 2 20 "$T/res" -1 end >"$T/app.out" 2>&1 &
	APP=$!
	wait_log "$T/app.out" "step 5 big message" 120
	J=$(storm jobs --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["jobs"][0]["job"])')
	storm checkpoint "$J" >/dev/null 2>"$T/ck.err" && ok "checkpoint of a BCS-MPI job" ||
		{ bad "checkpoint of a BCS-MPI job"; cat "$T/ck.err"; }
	: >"$T/res.end"
	wait $APP && [ -s "$T/res" ] && ok "  it runs on to its end" || bad "  it runs on to its end"
else
	bad "bcs-mpicc ckptapp.c"
	cat "$T/cc.err"
fi
python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'\0\0\0\5hello')
print(s.recv(1000))" "$T/mm.sock" | grep -q "not authenticated" && ok "unauthenticated message refused" ||
	bad "unauthenticated message"
ctl_forge --conf "$STORM_CONF" garbage | grep -q malformed && ok "malformed message refused" ||
	bad "malformed message"
ctl_forge --conf "$STORM_CONF" replay | grep -q "replayed MUNGE credential" && ok "replay refused" ||
	bad "replay"
# a node that takes no strobe for a second logs the kernel's view of its
# TCP from the MM, as a loaded machine can make it do here: that too
# without a report (an ioctl valgrind does not know once warned of itself)
MM=$(echo $PIDS | cut -d' ' -f1)
kill -STOP "$MM"
for n in node00 node01; do
	wait_log "$T/$n.log" "the kernel's TCP to the MM" 60 &&
		ok "$n, without strobes, logs its TCP from the MM" ||
		bad "$n, without strobes for 60 s, logged no TCP view"
done
kill -CONT "$MM"
storm cluster down --dir "$T" >/dev/null 2>&1
for p in $PIDS; do
	# a daemon that missed the shutdown would wait for its MM for ever
	gone "$p" 120 || { bad "a daemon under valgrind did not stop (pid $p)"; kill -9 "$p"; }
	wait "$p"
	rc=$?
	[ $rc = 0 ] || bad "a daemon under valgrind exited with $rc"
done
PIDS=""
for f in mm node00 node01; do
	if grep -q "==[0-9]*==" "$T/$f.log"; then
		bad "valgrind reports for $f:"
		grep "==[0-9]*==" "$T/$f.log" | head -30
	else ok "$f: no valgrind error or leak"; fi
done
echo "$fails failed"
[ $fails = 0 ]
