#!/bin/bash
# Integration tests: the real stormmm and 8 real stormnd on a virtual cluster
# on this machine, driven only through the real storm CLI. Synchronisation is
# on events (a job's first output line read from a FIFO, the CLI's own
# waits), never on sleeps. Every daemon is taken down on exit, pass or fail.
# Usage: test_cluster.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
T=$(mktemp -d /tmp/storm-clustertest.XXXXXX)
# in the ranks' command lines: our cleanup must not kill the ranks of a
# test running beside this one (another checkout)
MARK=storm-clustertest-${T##*.}-marker
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
. "$(dirname "$0")/lib.sh"
fails=0 checks=0
BG="" LEFT=""

cleanup() {
	fail_report
	for p in $BG; do kill -9 "$p" 2>/dev/null; done
	storm cluster down --dir "$C" >/dev/null 2>&1
	# whatever survived the orderly way (a test that failed half-way)
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	pkill -9 -f "$MARK" 2>/dev/null
	[ -n "$LEFT" ] && kill -9 "$LEFT" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# same NAME FILE_A FILE_B
same() {
	if cmp -s "$2" "$3"; then ok "$1"; else
		bad "$1"
		diff "$2" "$3" | head -20 | sed 's/^/     | /'
	fi
}
# jobid_of_running: the id of the only running job
running_job() {
	storm jobs --json | python3 -c '
import json, sys
jobs = [j for j in json.load(sys.stdin)["jobs"] if j["state"] == "RUNNING"]
print(jobs[0]["job"] if len(jobs) == 1 else "")'
}

cd "$T" || exit 1

# ---- no cluster
export STORM_CONF=$T/none/storm.conf
expect "a cluster that is not up is a clear error, not a hang" 1 timeout 20 storm run /bin/true
has "  ... and says so" err "no cluster is up"
export STORM_CONF=$C/storm.conf

# ---- up
# DOWN after 3 s without a report: short enough for the node-death checks,
# long enough that a loaded machine does not lose healthy nodes
# node00 takes the first 10 reads of a leftover's environment as empty (a
# test point), as they are while the process is inside execve
STORM_TEST_TAMPER=environ_unread=10 STORM_TEST_TAMPER_NODE=node00 \
	expect "cluster up with 8 nodes" 0 storm cluster up $UP_MODE --nodes 8 --dir "$C" --down-after-ms 3000
expect "nodes --json" 0 storm nodes --json
if python3 -c 'import json,sys; n=json.load(open(sys.argv[1]))["nodes"]; sys.exit(not (len(n)==8 and all(x["state"]=="UP" for x in n)))' "$T/out"; then
	ok "all 8 nodes UP"
else bad "all 8 nodes UP"; fi
# the path transfers take: RMA writes where the provider has them (the
# default), messages with SN_RMA=0
want_path="RMA write"
[ "${SN_RMA:-1}" = 0 ] && want_path="message"
if grep -q "transfers by $want_path" "$C"/log/node00.log; then ok "transfers by $want_path"
else bad "transfers by $want_path (node00.log: $(grep -o 'transfers by [a-zA-Z ]*' "$C"/log/node00.log))"; fi

# ---- output, labels, environment, cwd
expect "run -N 8 -n 32" 0 storm run -N 8 -n 32 --label sh -c \
	'echo "$STORM_RANK $STORM_SIZE $STORM_LOCAL_RANK $STORM_NODEID $STORM_NODENAME $STORM_NNODES $(pwd)"'
sort -n "$T/out" >"$T/got"
for r in $(seq 0 31); do
	n=$((r / 4))
	printf '%d: %d 32 %d %d node%02d 8 %s\n' $r $r $((r % 4)) $n $n "$T"
done | sort -n >"$T/want"
same "every rank once, with its rank, size, local rank, node and the caller's cwd" "$T/want" "$T/got"
expect "STORM_JOBID is the job's id" 0 storm run -n 1 sh -c 'echo "id=$STORM_JOBID"'
if grep -qE '^id=[0-9]+$' "$T/out"; then ok "STORM_JOBID set"; else bad "STORM_JOBID set"; fi
expect "stdout and stderr stay apart" 0 storm run -n 1 sh -c 'echo to-out; echo to-err >&2'
has "  stdout" out to-out
has "  stderr" err to-err
if grep -q to-err "$T/out"; then bad "  stderr leaked into stdout"; else ok "  no stderr in stdout"; fi
expect "the caller's environment reaches the ranks" 0 env STORM_TEST_VAR=xyzzy storm run -N 2 sh -c 'echo "v=$STORM_TEST_VAR"'
if [ "$(grep -c '^v=xyzzy$' "$T/out")" = 2 ]; then ok "  on both nodes"; else bad "  on both nodes"; fi

# ---- exit statuses
expect "exit status of the job" 3 storm run -n 2 sh -c 'exit 3'
expect "first non-zero rank status (lowest rank)" 2 storm run -N 4 -n 4 sh -c \
	'[ "$STORM_RANK" -ge 2 ] && exit "$STORM_RANK"; exit 0'
expect "a rank killed by SIGSEGV gives 128+11" 139 storm run -n 2 sh -c 'kill -SEGV $$'
has "  ... and says which rank" err "signal 11"

# ---- a 12 MiB binary arrives intact on every node
SELF=$BIN/storm_selfsum
"$SELF" >"$T/local.sum"
expect "12 MiB program on 8 nodes" 0 storm run -N 8 -n 8 "$SELF"
if [ "$(wc -l <"$T/out")" = 8 ] && [ "$(sort -u "$T/out")" = "$(cat "$T/local.sum")" ]; then
	ok "  every node ran an identical copy ($(cut -d' ' -f2 "$T/local.sum") bytes)"
else
	bad "  every node ran an identical copy"
	sed 's/^/     | /' "$T/out"
fi
expect "--no-bcast runs the program from its path" 0 storm run --no-bcast -N 2 /bin/echo shared
if [ "$(grep -c '^shared$' "$T/out")" = 2 ]; then ok "  on both nodes"; else bad "  on both nodes"; fi
printf 'payload-%s\n' "$$" >"$T/data.txt"
expect "--file arrives in STORM_JOB_DIR" 0 storm run -N 2 --file "$T/data.txt" sh -c 'cat "$STORM_JOB_DIR/data.txt"'
if [ "$(grep -c "^payload-$$\$" "$T/out")" = 2 ]; then ok "  on both nodes"; else bad "  on both nodes"; fi

# ---- batch
# the MM writes a batch job's output file (with --hosts: in its host's
# files, where the harness looks for it)
expect "submit --wait writes storm-JOBID.out" 0 storm submit --wait -N 2 -n 4 sh -c 'echo "batch $STORM_RANK"'
id=$(sed -n 's/^Submitted job \([0-9]*\)$/\1/p' "$T/out")
if [ -n "$id" ] && [ "$(grep -c '^batch [0-3]$' "$(in_host mm "$T")/storm-$id.out")" = 4 ]; then
	ok "  the output file holds every rank's line"
else bad "  the output file holds every rank's line (job '$id')"; fi
expect "submit -o with %j" 0 storm submit --wait --parsable -o "$T/named-%j.txt" -n 1 echo named
id=$(head -1 "$T/out")
grep -qx named "$(in_host mm "$T")/named-$id.txt" && ok "  output in the named file" ||
	bad "  output in the named file"
expect "submit --wait returns the job's status" 5 storm submit --wait -n 1 sh -c 'exit 5'

# ---- several shells at once (6 jobs of 2 nodes on 8 nodes: some queue)
pids=""
for k in 1 2 3 4 5 6; do
	storm run -N 2 -n 4 sh -c "echo job$k \$STORM_RANK" >"$T/par$k.out" 2>"$T/par$k.err" &
	pids="$pids $!"
done
allok=1
k=0
for p in $pids; do
	k=$((k + 1))
	wait "$p" || allok=0
	[ "$(sort "$T/par$k.out" | tr '\n' ' ')" = "job$k 0 job$k 1 job$k 2 job$k 3 " ] || allok=0
done
if [ $allok = 1 ]; then ok "6 concurrent storm run, each with its own output"; else
	bad "6 concurrent storm run"
	head -5 "$T"/par*.out "$T"/par*.err
fi

# ---- cancel
start_bg cancel storm run -N 2 -n 2 sh -c "echo up; exec sleep 600 # $MARK"
read -r line <&7
[ "$line" = up ] && ok "cancel: the job runs" || bad "cancel: the job runs ('$line')"
id=$(running_job)
expect "storm cancel" 0 storm cancel "$id"
wait "$BGPID"
rc=$?
exec 7<&-
[ $rc = 143 ] && ok "  storm run exits 128+SIGTERM" || bad "  storm run exits 128+SIGTERM (got $rc)"
has "  ... and says who cancelled" cancel.err "cancelled by"
expect "cancelling an ended job is refused" 1 storm cancel "$id"
expect "cancelling a job that does not exist" 1 storm cancel 99999
has "  ... names it" err "no job 99999"

# ---- time limit: stopped with SIGTERM once it has run 2 s, state TIMEOUT
expect "storm run -t 0:02 of a rank that would sleep 600 s is stopped" 143 \
	timeout 60 storm run -N 2 -n 2 -t 0:02 sh -c "exec sleep 600 # $MARK"
has "  ... saying why" err "time limit 0:00:02 reached"
id=$(storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
storm acct -j "$id" --json >"$T/acct.time"
grep -q '"state": "TIMEOUT"' "$T/acct.time" && ok "  acct says TIMEOUT" ||
	{ bad "  acct says TIMEOUT"; cat "$T/acct.time"; }
expect "a job within its limit completes" 0 storm run -N 1 -t 1 true
expect "-t that is no time is refused" 2 storm run -t 1:2:3:4 true
has "  ... naming the forms" err "-t/--time wants minutes, M:S, H:M:S"

# ---- a process that left the job's process group for its own session (as
# Open MPI's singleton starts its orted) ends with the job: the rank prints
# its pid once it has its session, then exits. This one ignores SIGTERM,
# so SIGKILL ends it kill_wait_ms later. The rank on node00 leaves it: the
# daemon's first reads of its environment come back empty (the test point),
# and no later job's end comes to look again.
expect "storm run of a rank that leaves a process in a session of its own" 0 \
	storm run -N 8 sh -c "[ \$STORM_NODENAME = node00 ] || exit 0
		(setsid sh -c 'trap \"\" TERM; echo \$\$; exec sleep 600' </dev/null 2>/dev/null &) | head -1"
LEFT=$(head -1 "$T/out")
if [ -n "$LEFT" ] && gone "$LEFT" 30; then ok "  ... it ended after the job"
else bad "  ... it ended after the job (pid '$LEFT' still runs)"; fi
grep -q "environ_unread: process $LEFT's environment taken as empty" "$C/log/node00.log" &&
	ok "  ... though its environment read empty at first" ||
	bad "  ... though its environment read empty at first: $(grep environ_unread "$C/log/node00.log")"
if grep -q "process $LEFT (.*outlived it; SIGTERM" "$C"/log/node*.log &&
	grep -q "process $LEFT (.*outlived it; SIGKILL" "$C"/log/node*.log; then
	ok "  ... the node daemon sent it SIGTERM, then SIGKILL"
else bad "  ... the node daemon sent it SIGTERM, then SIGKILL"; fi

# ---- Ctrl-C
start_bg intr env --default-signal=INT storm run -N 2 sh -c "echo up; exec sleep 600 # $MARK"
read -r line <&7
kill -INT "$BGPID"
wait "$BGPID"
rc=$?
exec 7<&-
[ $rc = 130 ] && ok "Ctrl-C cancels: exit 128+SIGINT" || bad "Ctrl-C cancels: exit 128+SIGINT (got $rc)"

# ---- bad input
expect "a program that does not exist" 1 storm run ./no-such-program
has "  ... named" err "no-such-program: No such file or directory"
printf '#!/bin/sh\n' >"$T/noexec.sh"
chmod 644 "$T/noexec.sh"
expect "a program that is not executable" 1 storm run "$T/noexec.sh"
has "  ... said so" err "not executable"
expect "-N larger than the cluster" 1 storm run -N 9 /bin/true
has "  ... says why" err "9 nodes requested but the cluster has 8"
expect "more ranks than the cluster holds" 1 storm run -n 40 /bin/true
has "  ... says why" err "40 ranks need 10 nodes"
expect "an unknown flag" 2 storm run --frobnicate /bin/true
expect "--no-bcast with a program that is not there" 1 storm run --no-bcast -n 1 /bin/true-not-here-either
has "  ... named" err "true-not-here-either: No such file or directory"
python3 - "$(mm_socket)" >"$T/proto.out" 2>&1 <<'EOF'
import socket, struct, sys
def ask(payload):
    s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(10)
    s.sendall(payload)
    data = b""
    while True:
        b = s.recv(65536)
        if not b: break
        data += b
    return data
print("unauthenticated:", ask(struct.pack(">I", 5) + b"\xff\xff\xff\xff\xff"))
print("oversize:", ask(struct.pack(">I", 0xFFFFFFF0)))
EOF
# authenticated but malformed or of another version: ctl_forge signs them
"$BIN/ctl_forge" --conf "$C/storm.conf" $(forge_via) garbage >>"$T/proto.out" 2>&1
"$BIN/ctl_forge" --conf "$C/storm.conf" $(forge_via) version=7 >>"$T/proto.out" 2>&1
has "an unauthenticated control message gets an error reply" proto.out "request not authenticated"
has "a malformed control message gets an error reply" proto.out "malformed request"
has "an oversize control message gets an error reply" proto.out "larger than"
has "a wrong-version control message gets an error reply" proto.out "version 7 is not supported"
expect "  ... and the MM serves everyone else" 0 storm jobs

# ---- a node stops answering during a launch (its daemon frozen with SIGSTOP
# before a 12 MiB transfer to all 8 nodes): the job fails naming it, nothing
# hangs, and the node is UP again once it runs again
ndpid=$(awk '$2 == "node05" { print $1 }' "$C/pids")
kill -STOP "$ndpid"
expect "a node frozen during the program transfer fails the launch" 1 timeout 60 storm run -N 8 -n 8 "$SELF"
has "  ... naming the node" err "node05"
kill -CONT "$ndpid"
storm cluster status --wait "$(patience 30)" >/dev/null && ok "  node05 is UP again after SIGCONT" ||
	bad "  node05 is UP again after SIGCONT"
expect "  ... and runs jobs again" 0 storm run -N 8 -n 8 "$SELF"

# ---- a node dies during a job, after its own rank died and it reported
# its part done: the job still fails, and its ranks elsewhere die with it
# (the ranks there may be waiting on the one it ran)
start_bg death storm run -N 8 -n 8 sh -c "echo up; exec sleep 600 # $MARK"
for i in 1 2 3 4 5 6 7 8; do read -r line <&7; done
DJ=$(storm jobs --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
ndpid=$(awk '$2 == "node03" { print $1 }' "$C/pids")
pkill -9 -P "$ndpid"
wait_log "$C/log/node03.log" "job $DJ done" 60 || bad "node03 reported job $DJ done once its rank died"
kill -9 "$ndpid"
# the job's other ranks sleep 600 s: a job left running is a failure
gone "$BGPID" 120 || { bad "the job ended once node03 died"; kill "$BGPID"; }
wait "$BGPID"
rc=$?
exec 7<&-
[ $rc != 0 ] && ok "a node's death fails its job (exit $rc)" || bad "a node's death fails its job"
has "  ... naming the node" death.err "node03"
if pgrep -f "sleep 600 # $MARK" >/dev/null; then
	bad "  the job's processes on the other nodes are gone"
else ok "  the job's processes on the other nodes are gone"; fi
expect "nodes shows it DOWN" 0 storm nodes
if grep -E '^node03 +DOWN' "$T/out" >/dev/null; then ok "  node03 DOWN"; else bad "  node03 DOWN"; sed 's/^/     | /' "$T/out"; fi
expect "the other 7 nodes still run jobs" 0 storm run -N 7 /bin/true

# ---- down
expect "cluster down" 0 storm cluster down --dir "$C"
if pgrep -f "$C/storm.conf" >/dev/null; then bad "every daemon gone"; else ok "every daemon gone"; fi
n=$(grep -l "shutdown requested by the MM" "$C"/log/node*.log | wc -l)
[ "$n" = 7 ] && ok "  the 7 live node daemons stopped on the MM's command, not killed" ||
	bad "  the live node daemons stopped on the MM's command ($n of 7)"

echo "$checks checks, $fails failed"
[ $fails = 0 ]
