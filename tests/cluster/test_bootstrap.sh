#!/bin/bash
# Fabric addresses by registration with the machine manager (bootstrap = mm),
# no shared directory: a cluster whose third node daemon is not started runs
# jobs on the other two and reports it DOWN; started late, it registers and
# runs a job; killed and started again, well before the MM would miss its
# reports, the new daemon's registration marks the node DOWN at once (the job
# that ran there fails, naming the restart) and it runs a job; a daemon with a wrong key, an unknown name or a node already
# served is refused with one line, and the MM goes on serving. With
# bootstrap = dir: (no registration) a restarted daemon's first report marks
# its node DOWN, the job there fails, and the node runs jobs again.
# Usage: test_bootstrap.sh BUILD_BIN_DIR   (part of make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-boottest.XXXXXX)
export STORM_CONF=$T/storm.conf PATH=$BIN:$PATH
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
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$STORM_CONF" <<CONF
[cluster]
state_dir = $T/state
socket = $T/mm.sock
mm_address = 127.0.0.1:$PORT
key_file = $T/cluster.key
munge_socket = $T/munge/munge.socket
# only a restart marks a node DOWN here: the new daemon registers long
# before the old one's silence would
down_after_ms = 600000
[nodes]
names = node[00-02]
CONF
mkdir -p "$T/state"
head -c 32 /dev/urandom >"$T/cluster.key" && chmod 600 "$T/cluster.key"
start_munged "$T/munge" || { bad "munged did not start"; exit 1; }
# loopback, as storm cluster up does
export FI_TCP_IFACE=lo FI_SOCKETS_IFACE=lo

stormmm -c "$STORM_CONF" >"$T/mm.log" 2>&1 &
MM=$!
PIDS="$PIDS $MM"
start_nd() { # NAME [CONF]: a node daemon, its log in $T/NAME.log; pid in $ND
	stormnd -c "${2:-$STORM_CONF}" -n "$1" --no-realtime >>"$T/$1.log" 2>&1 &
	ND=$!
	PIDS="$PIDS $ND"
}
# held_fails NODE ERR: the job $HELD, which ran on NODE's old daemon, fails
# naming the restart (its storm run's stderr in ERR)
held_fails() {
	gone "$HELD" 10 && ! wait "$HELD" && grep -q "node $1: the node daemon restarted" "$2" &&
		ok "  the job that ran there fails, naming the restart" ||
		{ bad "  the job that ran on $1's old daemon"; cat "$2"; }
}
start_nd node00
N0=$ND
start_nd node01
wait_log "$T/mm.log" "taking node registrations on 127.0.0.1:$PORT" 30 &&
	ok "bootstrap defaults to mm when mm_address is set" || bad "the MM takes registrations"
wait_log "$T/mm.log" "node node00 registered" 30 && wait_log "$T/mm.log" "node node01 registered" 30 &&
	ok "two node daemons register" || bad "two node daemons register"
wait_log "$T/mm.log" "node node01 is UP" 60 && wait_log "$T/mm.log" "node node00 is UP" 60 &&
	ok "they come UP without the third" || bad "they come UP without the third"
[ "$(storm run -N 2 -n 2 sh -c 'echo hi' 2>"$T/run.err" | wc -l)" = 2 ] &&
	ok "a job runs on the two while node02 never started" || { bad "a job on two"; cat "$T/run.err"; }
storm cluster status >"$T/status" 2>&1
grep -q '^not up: node02$' "$T/status" && ok "node02 is reported not up (DOWN)" ||
	{ bad "node02 is reported DOWN"; cat "$T/status"; }

start_nd node02
N2=$ND
wait_log "$T/mm.log" "node node02 registered" 30 && ok "node02, started late, registers" ||
	bad "node02 registers late"
storm cluster status --wait "$(patience 60)" >/dev/null && ok "all three UP" || bad "all three UP"
[ "$(storm run -N 3 -n 3 sh -c 'echo hi' 2>"$T/run.err" | wc -l)" = 3 ] &&
	ok "a job on all three, node02 included" || { bad "a job on all three"; cat "$T/run.err"; }

storm run -N 3 -n 3 sh -c 'echo up; exec sleep 300' >"$T/held.out" 2>"$T/held.err" &
HELD=$!
PIDS="$PIDS $HELD"
wait_count "$T/held.out" up 3 30 >/dev/null || bad "a job holds all three"
kill -9 "$N2"
wait "$N2" 2>/dev/null
start_nd node02
N2=$ND
wait_count "$T/mm.log" "node node02 registered" 2 30 >/dev/null &&
	ok "node02, killed and started again, registers again" || bad "node02 registers again"
wait_log "$T/mm.log" "node node02 is DOWN: its daemon restarted" 10 &&
	ok "  its registration marks it DOWN: the daemon restarted" ||
	bad "  node02 is not marked DOWN on its new daemon's registration"
held_fails node02 "$T/held.err"
storm cluster status --wait "$(patience 60)" >/dev/null && ok "all three UP again" || bad "all three UP again"
[ "$(storm run -N 3 -n 3 sh -c 'echo hi' 2>"$T/run.err" | wc -l)" = 3 ] &&
	ok "a job on all three after the restart" || { bad "a job after the restart"; cat "$T/run.err"; }

# refusals: one line on the daemon's side (exit 1), one in the MM's log
sed "s|^key_file = .*|key_file = $T/other.key|" "$STORM_CONF" >"$T/wrongkey.conf"
head -c 32 /dev/urandom >"$T/other.key" && chmod 600 "$T/other.key"
refused() { # NAME CONF WANT_MM_TEXT WANT_ND_TEXT
	stormnd -c "$2" -n "$1" --no-realtime >"$T/bad.out" 2>&1
	local rc=$?
	local lines
	lines=$(grep -c 'error' "$T/bad.out")
	if [ $rc = 1 ] && [ "$lines" = 1 ] && grep -qF -- "$4" "$T/bad.out"; then
		ok "$1: the daemon exits 1 with one line: $(grep error "$T/bad.out" | cut -c1-110)"
	else
		bad "$1: exit $rc, $lines error lines"
		sed 's/^/     | /' "$T/bad.out"
	fi
	wait_log "$T/mm.log" "$3" 10 && ok "  the MM logs it" || bad "  the MM logs '$3'"
}
refused node01 "$T/wrongkey.conf" "node node01: wrong cluster key" "wrong cluster key"
sed "s|^names = .*|names = node[00-02],node99|" "$STORM_CONF" >"$T/unknown.conf"
refused node99 "$T/unknown.conf" "unknown node name 'node99'" "unknown node name 'node99'"
refused node00 "$STORM_CONF" "node node00 is already registered" "two daemons claim it"
kill -0 "$N0" 2>/dev/null && ok "the daemon that holds node00 still runs" || bad "node00's daemon died"
[ "$(storm run -N 3 -n 3 sh -c 'echo hi' 2>"$T/run.err" | wc -l)" = 3 ] &&
	ok "the MM goes on serving: a job on all three" || { bad "a job after the refusals"; cat "$T/run.err"; }

# bootstrap = dir: no registration: a restarted daemon is seen by the
# incarnation its first report names
sed -e "s|^mm_address = .*|bootstrap = dir:$T/fabric|" -e "s|^socket = .*|socket = $T/dir-mm.sock|" \
	-e "s|^state_dir = .*|state_dir = $T/dir-state|" "$STORM_CONF" >"$T/dir.conf"
mkdir -p "$T/fabric" "$T/dir-state"
stormmm -c "$T/dir.conf" >"$T/dir-mm.log" 2>&1 &
PIDS="$PIDS $!"
start_nd node00 "$T/dir.conf"
start_nd node01 "$T/dir.conf"
D1=$ND
wait_log "$T/dir-mm.log" "node node00 is UP" 60 && wait_log "$T/dir-mm.log" "node node01 is UP" 60 && ok "bootstrap = dir: two nodes UP" ||
	bad "bootstrap = dir: two nodes UP"
STORM_CONF=$T/dir.conf storm run -N 2 -n 2 sh -c 'echo up; exec sleep 300' >"$T/dheld.out" 2>"$T/dheld.err" &
HELD=$!
PIDS="$PIDS $HELD"
wait_count "$T/dheld.out" up 2 30 >/dev/null || bad "a job holds both"
kill -9 "$D1"
wait "$D1" 2>/dev/null
start_nd node01 "$T/dir.conf"
wait_log "$T/dir-mm.log" "node node01 is DOWN: its daemon restarted" 30 &&
	ok "  node01's daemon restarted: its first report marks it DOWN" ||
	bad "  node01 is not marked DOWN on its new daemon's first report"
held_fails node01 "$T/dheld.err"
wait_count "$T/dir-mm.log" "node node01 is UP" 2 30 >/dev/null &&
	[ "$(STORM_CONF=$T/dir.conf storm run -N 2 -n 2 sh -c 'echo hi' 2>"$T/run.err" | wc -l)" = 2 ] &&
	ok "  UP again, a job on both runs" || { bad "  a job on both after the restart"; cat "$T/run.err"; }

echo "$((checks - fails))/$checks passed"
[ "$fails" = 0 ]
