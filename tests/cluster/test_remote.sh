#!/bin/bash
# storm from another host: the machine manager also takes control
# connections over TCP at ctl_address (storm cluster up --ctl-port), and
# storm reaches it with the local socket out of its sight (a storm.conf copy
# whose socket points nowhere): a streamed run, Ctrl-C cancelling the job,
# --record and replay (the program and the trace travel inside the request:
# TCP carries no descriptors), jobs --json, matrix; --mm and STORM_MM;
# requests without a valid MUNGE credential (none, a made-up one, another
# munged's) refused with one line, the MM serving on.
# Usage: test_remote.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-remotetest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
fails=0 checks=0 BG= MUNGED_PID=

cleanup() {
	for p in $BG $MUNGED_PID; do kill "$p" 2>/dev/null; done
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
ADDR=127.0.0.1:$PORT
if storm cluster up --nodes 2 --dir "$C" --ctl-port "$PORT" >"$T/up.out" 2>&1; then
	ok "cluster up with --ctl-port $PORT"
else bad "cluster up --ctl-port"; cat "$T/up.out"; exit 1; fi
grep -qx "ctl_address = $ADDR" "$C/storm.conf" && ok "  storm.conf has ctl_address = $ADDR" ||
	bad "  storm.conf has ctl_address = $ADDR"
wait_log "$C/log/mm.log" "taking control connections on $ADDR" 10 &&
	ok "  the MM listens there" || bad "  the MM listens on $ADDR"

# a login node's view: the same storm.conf, the MM's socket not there
sed "s|^socket = .*|socket = $T/elsewhere/mm.sock|" "$C/storm.conf" >"$T/remote.conf"
export STORM_CONF=$T/remote.conf

expect "storm jobs --json over TCP" 0 storm jobs --json
python3 -c 'import json, sys; json.load(open(sys.argv[1]))["jobs"]' "$T/out" &&
	ok "  ... is JSON with a job list" || bad "  ... is JSON with a job list"
expect "storm run over TCP: the program travels in the request" 0 storm run -N 2 -l echo remote-hi
has_line "  rank 0's output" out "0: remote-hi"
has_line "  rank 1's output" out "1: remote-hi"
expect "storm matrix over TCP" 0 storm matrix
has "  draws the matrix" out "policy gang, MPL 2"

start_bg watch storm matrix --watch --interval 100
n=0
while read -r -t 10 line <&7; do case $line in "policy gang"*) n=$((n + 1)); [ $n = 2 ] && break ;; esac; done
[ $n = 2 ] && ok "storm matrix --watch over TCP redraws" || bad "storm matrix --watch over TCP redraws ($n)"
kill "$BGPID"
wait "$BGPID" 2>/dev/null
exec 7<&-

# streamed: the first line arrives while the job still runs; Ctrl-C then
# cancels it over a second TCP connection
MARK=remote-$$
start_bg intr env --default-signal=INT storm run -N 2 sh -c "echo up; exec sleep 600 # $MARK"
if read -r -t 30 line <&7 && [ "$line" = up ]; then ok "output streams over TCP while the job runs"
else bad "output streams over TCP while the job runs (got '${line:-}')"; fi
kill -INT "$BGPID"
wait "$BGPID"
rc=$?
exec 7<&-
[ $rc = 130 ] && ok "Ctrl-C cancels it: exit 128+SIGINT" || {
	bad "Ctrl-C cancels it: exit 128+SIGINT (got $rc)"; cat "$T/intr.err"; }
st=$(storm jobs --all --json | python3 -c '
import json, sys
print([j["state"] for j in json.load(sys.stdin)["jobs"] if j["name"] == "sh"][-1])')
[ "$st" = CANCELLED ] && ok "  the job is CANCELLED" || bad "  the job is CANCELLED (is $st)"
pgrep -f "sleep 600 # $MARK" >/dev/null && bad "  its ranks are gone" || ok "  its ranks are gone"

# --record and replay: the trace goes to the MM as bytes too
expect "bcs-mpicc testloop.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/testloop.c" -o "$T/testloop"
expect "storm run --record over TCP" 0 storm run -N 2 -n 2 --record "$T/loop.trace" ./testloop 3
cp "$T/out" "$T/loop.rec"
has "  it ran" loop.rec "round 2: value"
expect "storm replay over TCP" 0 storm replay "$T/loop.trace"
if cmp -s "$T/out" "$T/loop.rec"; then ok "  the replay's output is the recorded one"; else
	bad "  the replay's output differs:"; diff "$T/loop.rec" "$T/out" | head; fi

# --mm and STORM_MM name the address without ctl_address in storm.conf
grep -v '^ctl_address' "$T/remote.conf" >"$T/plain.conf"
expect "without ctl_address or a socket: no cluster" 1 env STORM_CONF="$T/plain.conf" storm jobs
expect "STORM_MM=$ADDR" 0 env STORM_CONF="$T/plain.conf" STORM_MM="$ADDR" storm jobs
expect "--mm $ADDR" 0 env STORM_CONF="$T/plain.conf" storm --mm "$ADDR" jobs
expect "--mm [::1]:1 (nothing there)" 1 storm --mm "[::1]:1" jobs
has_line "  one line naming it" err \
	"storm: error: cannot reach the machine manager at [::1]:1: Connection refused"
expect "--mm that is not HOST:PORT" 2 storm --mm "$ADDR:9" jobs
has "  ... says what it wants" err "--mm wants HOST:PORT"

# no valid credential: one line back, and the MM serves on
ctl_forge --conf "$STORM_CONF" --tcp "$ADDR" nocred >"$T/forge.out" 2>&1
has "no credential over TCP: refused" forge.out "reply: error: request not authenticated: unknown envelope kind"
ctl_forge --conf "$STORM_CONF" --tcp "$ADDR" badcred >"$T/forge.out" 2>&1
has "a made-up credential over TCP: refused" forge.out "reply: error: request not authenticated: invalid MUNGE credential"
ctl_forge --conf "$STORM_CONF" --tcp "$ADDR" replay >"$T/forge.out" 2>&1
has "a replayed credential over TCP: refused" forge.out "replayed MUNGE credential"
start_munged "$T/m2" && ok "a second munged with another key" || bad "a second munged"
sed "s|^munge_socket = .*|munge_socket = $T/m2/munge.socket|" "$T/remote.conf" >"$T/foreign.conf"
expect "storm with another munged's credential: refused" 1 env STORM_CONF="$T/foreign.conf" storm jobs
[ "$(wc -l <"$T/err")" = 1 ] && ok "  in one line" || bad "  in one line: $(cat "$T/err")"
has "  ... naming the cause" err "request not authenticated: invalid MUNGE credential"
grep -q "refused a request from 127.0.0.1:[0-9]* (TCP): " "$C/log/mm.log" &&
	ok "  the MM logs the peer's address" || bad "  the MM logs the peer's address"
expect "the MM serves on" 0 storm run -N 2 true
storm jobs --all --json | python3 -c '
import json, os, sys
uids = {j["uid"] for j in json.load(sys.stdin)["jobs"]}
sys.exit(uids != {os.getuid()})' && ok "  jobs run as MUNGE's uid" || bad "  jobs run as MUNGE's uid"

echo "$checks checks, $fails failed"
[ $fails = 0 ]
