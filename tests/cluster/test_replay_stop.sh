#!/bin/bash
# storm replay --list, --stop and a recorded deadlock, on a virtual 3-node
# cluster: a recorded run's calls listed per rank (numbered as the trace
# numbers them, a polling loop one line); a replay holding a rank at a
# chosen call, after a timing-dependent polling loop, where gdb attached in
# batch mode sees the MPI call's frame from the program's source; and a
# deadlock recorded, cancelled and replayed to the same deadlock with each
# rank's waiting call named. Every daemon is taken down on exit, pass or
# fail. Usage: test_replay_stop.sh BUILD_BIN_DIR   (make cluster-replay_stop)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-replaystop.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
bg=()

cleanup() {
	fail_report
	for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

last_job() { storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))'; }
# json_calls FILE RANK EXPR: EXPR over --list RANK --json's "calls" (as c)
json_calls() {
	storm replay --list "$2" --json "$1" | python3 -c "import json,sys; c = json.load(sys.stdin)['calls']; print($3)"
}
# held_pid FILE: the pid a held rank printed in FILE
held_pid() { sed -n 's/.*is held at call #[0-9]* .*gdb -p \([0-9]*\) .*/\1/p' "$1" | head -1; }
# ranks_lines FILE: every rank's labelled lines, for comparing runs
ranks_lines() { grep -E '^[0-9]+: ' "$1" | sort -s -n -k1,1; }

expect "bcs-mpicc -g deadlock.c" 0 bcs-mpicc -g -O0 -Wall -Werror "$HERE/../mpi/deadlock.c" -o "$T/deadlock"
expect "cluster up (3 nodes)" 0 storm cluster up $UP_MODE --nodes 3 --dir "$C" --timeslice-us 2000 --down-after-ms 5000
cd "$T" || exit 1

# (a) a recorded run that ends well, its calls listed
expect "storm run --record of a run that ends well" 0 storm run -N 3 -n 3 -l --record ok.bcs ./deadlock ok
cp "$T/out" ok.out
expect "storm replay --list 0" 0 storm replay --list 0 ok.bcs
has "  says how many calls and how the rank ended" out "rank 0 made "
has "  the wildcard receive, as the program wrote it" out "MPI_Irecv(source=MPI_ANY_SOURCE, tag=50, 4 bytes)"
if grep -qE '^ *[0-9]+-[0-9]+  MPI_Test\(source=MPI_ANY_SOURCE, tag=50, 4 bytes\), [0-9]+ times$' "$T/out"; then
	ok "  the polling loop, one line with its numbers"
else bad "  no polling loop line"; sed 's/^/     | /' "$T/out" | head; fi
has "  the ring's calls with peer and tag" out "MPI_Sendrecv(dest=1, tag=2, 4 bytes)"
has "  MPI_Finalize last" out "MPI_Finalize(0 bytes)"
expect "storm replay --list 1" 0 storm replay --list 1 ok.bcs
if grep -qE '^ +1  MPI_Send\(dest=0, tag=50, 4 bytes\)$' "$T/out"; then ok "  rank 1's first call is #1, its MPI_Send"
else bad "  rank 1's first call"; sed 's/^/     | /' "$T/out" | head; fi
barrier=$(json_calls ok.bcs 0 '[x["call"] for x in c if x["function"] == "MPI_Barrier"][0]')
polls=$(json_calls ok.bcs 0 '[x["last"] - x["call"] + 1 for x in c if x["function"] == "MPI_Test"][0]')
if [ -n "$barrier" ] && [ "$barrier" -gt 5 ]; then ok "  --json numbers them: rank 0's MPI_Barrier is call #$barrier, after $polls MPI_Test"
else bad "  --json: no MPI_Barrier of rank 0"; fi
expect "--list of a rank beyond the job" 2 storm replay --list 3 ok.bcs
has "  says which ranks there were" err "--list 3: the job had ranks 0..2"
expect "--stop beyond the recorded calls" 2 storm replay --stop "1:100000" ok.bcs
has "  says how many there were" err "the recorded rank 1 made"
expect "--stop without a call" 2 storm replay --stop 1 ok.bcs
has "  says what it wants" err "--stop wants RANK:N or RANK:last"
expect "--json without --list" 2 storm replay --json ok.bcs
has "  says what it is for" err "--json is for --list"

# (b) --stop: rank 0 held at its MPI_Barrier, past the polling loop whose
# length only the forced test flags make the recorded one
storm replay -l --stop "0:$barrier" ok.bcs >stop.out 2>stop.err &
run=$!
bg+=("$run")
if wait_log stop.err "is held at call #$barrier MPI_Barrier(0 bytes)" 60; then
	ok "storm replay --stop 0:$barrier holds rank 0 at its MPI_Barrier"
else bad "no hold line: $(tail -3 stop.err)"; fi
has "  the CLI said where first" stop.err "storm replay: rank 0 will be held at its call #$barrier, MPI_Barrier(0 bytes)"
pid=$(held_pid "$T/stop.err")
if [ -n "$pid" ]; then ok "  and how to attach (gdb -p $pid)"; else bad "  no pid to attach to"; fi
if [ -n "$pid" ]; then
	timeout 60 gdb -p "$pid" -batch -ex bt >gdb.out 2>&1
	if grep -q 'MPI_Barrier (comm=' gdb.out && grep -qE 'in main .*deadlock\.c:[0-9]+' gdb.out; then
		ok "  gdb -p -batch -ex bt sees MPI_Barrier called from main in deadlock.c"
	else bad "  gdb's backtrace:"; sed 's/^/     | /' gdb.out | tail -15; fi
	expect "  gdb lets it go on" 0 timeout 60 gdb -p "$pid" -batch -ex 'set var bcs_debug_hold = 0'
fi
wait_bg "$run" 60 "the replay let go"
rc=$?
if [ "$rc" = 0 ]; then ok "  the replay ends as recorded (exit 0)"; else bad "  the replay: exit $rc: $(tail -3 stop.err)"; fi
if [ "$(ranks_lines ok.out)" = "$(ranks_lines stop.out)" ]; then ok "  with the recorded output (the same polls)"
else bad "  output differs:"; diff <(ranks_lines ok.out) <(ranks_lines stop.out) | head | sed 's/^/     | /'; fi

# (c) a deadlock, recorded and cancelled once every rank waits in it
storm run -N 3 -n 3 -l --record dead.bcs ./deadlock deadlock >dead.out 2>dead.err &
run=$!
bg+=("$run")
if wait_count dead.out "waits for rank" 3 60 >/dev/null; then ok "a recorded job deadlocks (every rank says it waits)"
else bad "no deadlock lines: $(tail -3 dead.err)"; fi
dead_job=$(last_job)
# the calls stream as they are made: every rank's MPI_Recv in the record
# means each is in it (the daemon's wait flag follows within the call)
inrecv=0
for _ in $(seq 1 "$(patience 150)"); do
	storm trace --bcs -o now.bcs "$dead_job" >/dev/null 2>&1 &&
		n=$(for r in 0 1 2; do json_calls now.bcs "$r" 'c[-1]["text"]'; done | grep -c 'MPI_Recv(source=[0-9], tag=99') &&
		[ "$n" = 3 ] && { inrecv=1; break; }
	sleep 0.2
done
if [ "$inrecv" = 1 ]; then ok "  the record has every rank's MPI_Recv"; else bad "  the record lacks the MPI_Recv calls"; fi
expect "storm cancel of it" 0 storm cancel "$dead_job"
wait "$run"
rc=$?
if [ "$rc" != 0 ]; then ok "  storm run ends (exit $rc)"; else bad "  exit 0 for a cancelled job"; fi
expect "storm replay --list 2 of the deadlock" 0 storm replay --list 2 dead.bcs
has "  says the rank ended waiting in its last call" out "waiting in its last call"
last2=$(json_calls dead.bcs 2 'c[-1]["last"]')
storm replay -l dead.bcs >rdead.out 2>rdead.err &
run=$!
bg+=("$run")
wait_bg "$run" 60 "the replay of the deadlock"
rc=$?
if [ "$rc" = 4 ]; then ok "its replay ends in the same deadlock (exit 4)"; else bad "the replay: exit $rc: $(tail -3 rdead.err)"; fi
cp rdead.err "$T/err"
has "  naming rank 0's waiting call" err "storm replay: rank 0 waits in MPI_Recv(source=2, tag=99, 4 bytes) call #"
has "  rank 1's" err "storm replay: rank 1 waits in MPI_Recv(source=0, tag=99, 4 bytes) call #"
has "  rank 2's, with the number --list gives" err "storm replay: rank 2 waits in MPI_Recv(source=1, tag=99, 4 bytes) call #$last2"
has "  and saying it is the recorded deadlock" err "every rank waits where its recorded run was waiting"
if [ "$(ranks_lines dead.out)" = "$(ranks_lines rdead.out)" ]; then ok "  with the recorded output"
else bad "  output differs:"; diff <(ranks_lines dead.out) <(ranks_lines rdead.out) | head | sed 's/^/     | /'; fi

# (d) --stop RANK:last: the call the recorded run ended in
storm replay -l --stop 1:last dead.bcs >last.out 2>last.err &
run=$!
bg+=("$run")
if wait_log last.err "is held at call #" 60; then ok "--stop 1:last holds rank 1"
else bad "no hold line: $(tail -3 last.err)"; fi
has "  at the MPI_Recv its recorded run waited in" last.err "MPI_Recv(source=0, tag=99, 4 bytes)"
pid=$(held_pid "$T/last.err")
[ -n "$pid" ] && timeout 60 gdb -p "$pid" -batch -ex 'set var bcs_debug_hold = 0' >/dev/null 2>&1
wait_bg "$run" 60 "the replay of the deadlock, let go"
rc=$?
if [ "$rc" = 4 ]; then ok "  let go, it waits there too: the deadlock named (exit 4)"
else bad "  exit $rc: $(tail -3 last.err)"; fi

echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
