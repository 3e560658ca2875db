#!/bin/bash
# BCS-MPI on a virtual 4-node cluster, through bcs-mpicc and the real CLI:
# a ring, wildcard receives, a message over several slices (with strided
# datatypes, truncation, zero-length and self messages), collectives and
# communicator splits, thousands of outstanding requests and the completion
# calls, MPI_Abort, two MPI jobs gang-scheduled on the same
# nodes, and storm run --record / storm replay (the replayed output equals
# the recorded one byte for byte, a doctored trace forces its outcomes, a
# trace the program departs from is reported as a divergence), and message
# data altered in the receiver's global memory refused before a rank sees it
# (and, with bcs_data_tags = 0, not), and wildcard receives resolved while a
# node misses every other strobe.
# Every daemon is taken down on exit, pass or fail.
# Usage: test_mpi.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-mpitest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0

cleanup() {
	fail_report
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for p in ring wildcard bigmsg coll testloop abort many bcastwild; do
	expect "bcs-mpicc $p.c" 0 bcs-mpicc -O2 -Wall -Werror "$HERE/mpi/$p.c" -o "$T/$p"
done
expect "bcs-mpicc -c then link" 0 sh -c "bcs-mpicc -c '$HERE/mpi/ring.c' -o '$T/ring.o' && bcs-mpicc '$T/ring.o' -o '$T/ring2'"
expect "pkg-config finds bcsmpi" 0 env PKG_CONFIG_PATH="$BIN/../lib/pkgconfig" pkg-config --cflags --libs bcsmpi
has "  with the include path" out "-I$(cd "$BIN/.." && pwd)/include"
expect "outside storm: a clear error" 1 "$T/ring"
has "  says how to start it" err "start the program with 'storm run'"

# a loaded machine can starve a daemon for a while: DOWN only after 5 s
expect "cluster up (4 nodes, 2 ms slices)" 0 storm cluster up $UP_MODE --nodes 4 --dir "$C" --timeslice-us 2000 --down-after-ms 5000
cd "$T" || exit 1

expect "ring on 4 nodes, 8 ranks" 0 storm run -N 4 -n 8 ./ring
has "  the token went round 3 times" out "ring: token 84 (expected 84)"
expect "ring linked from an object" 0 storm run -N 2 -n 3 ./ring2
has "  on 2 nodes" out "ring: token 9 (expected 9)"

expect "wildcard receives" 0 storm run -N 4 -n 4 ./wildcard
cp "$T/out" "$T/wild1"
if python3 - "$T/wild1" <<'PY'
import sys
lines = open(sys.argv[1]).read().split("\n")[:3]
ok = len(lines) == 3 and all(sorted(l.split(":")[1].split()) == ["1", "2", "3"] for l in lines)
sys.exit(0 if ok and "BAD" not in "".join(lines) else 1)
PY
then ok "  each round got ranks 1-3 once, values intact"; else bad "  wildcard rounds wrong: $(cat "$T/wild1")"; fi

expect "12 MiB message, datatypes, truncation, self" 0 storm run -N 4 -n 4 ./bigmsg
has "  the big message is intact" out "bigmsg: 3145745 ints from 0 tag 5, intact"
has "  the vector type" out "vector: 0 -1 2 -1 4 -1 6 -1 8 -1"
has "  truncation reported" out "truncate: MPI_ERR_TRUNCATE, got 1 2"
has "  zero-length and self" out "self and zero-length: ok"
expect "  the same within one node" 0 storm run -N 1 -n 2 ./bigmsg
has "    intact" out "bigmsg: 3145745 ints from 0 tag 5, intact"

expect "collectives on 4 nodes, 8 ranks" 0 storm run -N 4 -n 8 ./coll
has "  every check holds" out "coll: maxloc 7 at 3, ordered reduce"
has "  no errors" out "errors 0"

# a Bcast before each round of wildcard receives (bench/mpi/racy.c's loop)
# once never reached quiescence: bounded, so a hang fails instead of waiting
expect "Bcast then MPI_ANY_SOURCE, 20 rounds on 8 ranks" 0 timeout 120 storm run -N 4 -n 8 ./bcastwild 20
has "  every round intact" out "bcastwild: 20 rounds on 8 ranks, 0 errors"

expect "5000 outstanding requests, completion calls, probes, cancel, v-collectives, in place, errors" 0 storm run -N 4 -n 5 ./many
has "  every check holds" out "many: 0 errors"

expect "MPI_Abort ends the job" 7 storm run -N 4 -n 4 ./abort
has "  with rank 1's message" err "rank 1 aborts"

# two MPI jobs on the same nodes share them by gang scheduling; submit -W
# returns at each job's end with its status
gang=(coll ring)
pids=()
for i in 0 1; do
	timeout --foreground -k 5 "$STEP_LIMIT" storm submit -W -N 4 -n 8 -o "$T/g$i.out" \
		"./${gang[$i]}" >"$T/g$i.id" 2>&1 &
	pids+=($!)
done
for i in 0 1; do
	wait "${pids[$i]}"
	rc=$?
	what="two MPI jobs gang-scheduled together: the ${gang[$i]} job"
	if [ "$rc" = 0 ]; then ok "$what ended (exit 0)"
	elif [ "$rc" = 124 ]; then bad "$what still running after $STEP_LIMIT s"; hang_report; exit 1
	else bad "$what: exit $rc"; sed 's/^/     | /' "$T/g$i.id"; fi
done
cp "$(in_host mm "$T")/g0.out" "$T/gang1"; cp "$(in_host mm "$T")/g1.out" "$T/gang2" # the MM writes them
has "  the collectives job is right" gang1 "errors 0"
has "  the ring job is right" gang2 "ring: token 84 (expected 84)"

# record and replay
expect "record a timing-dependent run" 0 storm run -N 4 -n 4 --record "$T/loop.trace" ./testloop 3
cp "$T/out" "$T/loop.rec"
has "  it ran" loop.rec "round 2: value 1002"
size=$(stat -c %s "$T/loop.trace")
events=$(grep -o 'after [0-9]* failed probes and [0-9]* tests' "$T/loop.rec" | awk '{s += $2 + $6 + 2} END {print s}')
if [ "$size" -le $((16 * events + 200)) ]; then ok "  trace of $size bytes for $events outcomes"; else bad "  trace of $size bytes for $events outcomes"; fi
expect "replay it" 0 storm replay "$T/loop.trace"
if cmp -s "$T/out" "$T/loop.rec"; then ok "  the replay's output is the recorded one, byte for byte"; else
	bad "  replay differs:"; diff "$T/loop.rec" "$T/out" | head; fi
expect "record wildcard receives" 0 storm run -N 4 -n 4 --record "$T/wild.trace" ./wildcard 2
cp "$T/out" "$T/wild.rec"
# doctor the trace: rank 0's wildcard outcomes in the reverse order per round
python3 - "$T/wild.trace" "$T/wild.doctored" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
def varint(b, i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if not c & 0x80: return v, i
def enc(v):
    o = bytearray()
    while True:
        c = v & 0x7f; v >>= 7
        o.append(c | (0x80 if v else 0))
        if not v: return bytes(o)
assert b[:4] == b"BCST"
i = 4
ver, i = varint(b, i); _, i = varint(b, i); _, i = varint(b, i)
if ver >= 3:
    _, i = varint(b, i)  # the job's id
argc, i = varint(b, i)
for _ in range(argc):
    n, i = varint(b, i); i += n
nsec, i = varint(b, i)
out = bytearray(b[:i])
for _ in range(nsec):
    n, i = varint(b, i); sec = b[i:i + n]; i += n
    rank, j = varint(sec, 0)
    if rank == 0:
        nw, j = varint(sec, j)
        w = []
        for _ in range(nw):
            s, j = varint(sec, j); t, j = varint(sec, j); w.append((s, t))
        w = [x for r in range(0, nw, 3) for x in reversed(w[r:r + 3])]
        sec = enc(rank) + enc(nw) + b"".join(enc(s) + enc(t) for s, t in w) + sec[j:]
    out += enc(len(sec)) + sec
open(sys.argv[2], "wb").write(bytes(out))
PY
expect "replay a doctored trace" 0 storm replay "$T/wild.doctored"
# the recorded order, reversed in every round
awk -F': ' '{ n = split($2, a, " "); s = ""; for (i = n; i >= 1; i--) s = s " " a[i]; print $1 ":" s }' \
	"$T/wild.rec" >"$T/wild.want"
if cmp -s "$T/out" "$T/wild.want"; then ok "  its outcomes are forced ($(head -1 "$T/out"))"; else
	bad "  outcomes not forced:"; diff "$T/wild.want" "$T/out" | head; fi
# --debug without a terminal: the rank waits in MPI_Init saying how to attach;
# gdb releases it and the replay goes on to the recorded output
storm replay --debug 2 "$T/wild.trace" >"$T/dbg.out" 2>"$T/dbg.err" </dev/null &
dbg=$!
if wait_log "$T/dbg.err" "is held in MPI_Init: gdb -p" 60; then
	ok "replay --debug 2 holds rank 2 and says how to attach"
	pid=$(sed -n 's/.*rank 2 (pid \([0-9]*\) .*/\1/p' "$T/dbg.err" | head -1)
	if timeout 60 gdb -q -p "$pid" -batch -ex 'set var bcs_debug_hold = 0' >"$T/gdb.out" 2>&1; then
		ok "  gdb attaches and releases it"; else bad "  gdb: $(tail -2 "$T/gdb.out")"; fi
else
	bad "replay --debug 2: no hold line: $(cat "$T/dbg.err")"
	kill "$dbg" 2>/dev/null
fi
if wait "$dbg"; then ok "  the replay then ends normally"; else bad "  the replay failed: $(tail -3 "$T/dbg.err")"; fi
if cmp -s "$T/dbg.out" "$T/wild.rec"; then ok "  with the recorded output"; else bad "  output differs"; fi
# a program that departs from its trace: one round more than recorded
sed 's/wildcard.2/wildcard.3/' "$T/wild.trace" >/dev/null
python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
i = b.index(b"wildcard") + len(b"wildcard")
assert b[i + 1:i + 2] == b"2"
open(sys.argv[2], "wb").write(b[:i + 1] + b"3" + b[i + 2:])' "$T/wild.trace" "$T/wild.longer"
expect "replay diverges" 3 storm replay "$T/wild.longer"
# every rank's call past the recorded ones differs from the recorded call
# there (MPI_Finalize's place): whichever rank gets there first says so
if grep -qE '^storm replay: divergence at rank [0-3], call #[0-9]+: expected MPI_[A-Za-z]+\(.*\), made MPI_[A-Za-z]+\(' "$T/err"; then
	ok "  names rank, call number, expected and actual call"
else bad "  no divergence line naming the call:"; sed 's/^/     | /' "$T/err" | head -5; fi
expect "replay of a missing trace" 1 storm replay "$T/nope.trace"
has "  says why" err "cannot open"
printf 'BCST\001garbage' >"$T/bad.trace"
expect "replay of a corrupt trace" 1 storm replay "$T/bad.trace"
has "  says why" err "bad.trace:"

expect "cluster down" 0 storm cluster down --dir "$C"

# ---- message data is checked before a rank sees it: node00 alters its
# first bulk block after tagging it, as a write by anyone on the fabric into
# node01's area would; node01 refuses it and the receive fails instead of
# handing the rank altered bytes. node00 tags with Poly1305 (no_gmac: a node
# without AES instructions), the other jobs here with AES-GMAC. The tags are
# on the daemons' path (--bcs-rank-writes 0, a site's choice where others
# reach the fabric); rank writes would carry this message untagged
STORM_TEST_TAMPER_NODE=node00 STORM_TEST_TAMPER=bulk_flip=1,no_gmac=1 \
	expect "cluster up (node00 alters its first message block)" 0 \
	storm cluster up $UP_MODE --nodes 2 --dir "$C" --timeslice-us 2000 --down-after-ms 5000 \
	--bcs-rank-writes 0
timeout 60 storm run -N 2 -n 2 ./bigmsg >"$T/out" 2>"$T/err"
rc=$?
case $rc in 0 | 124) bad "12 MiB message with an altered block: exit $rc, wanted a failed job" ;;
*) ok "12 MiB message with an altered block fails the job (exit $rc)" ;; esac
if grep -q "CORRUPT" "$T/out"; then bad "  the rank got the altered bytes"; else
	ok "  no rank got the altered bytes"; fi
BJ=$(storm jobs --all --json | python3 -c 'import json,sys; print(max(j["job"] for j in json.load(sys.stdin)["jobs"]))')
grep -q "job $BJ: message data from node 0 in buffer [0-9]* has a bad tag" "$C/log/node01.log" &&
	ok "  node01 refused the block and said so" || bad "  node01 logged no refusal"
expect "  the next job runs" 0 storm run -N 2 -n 2 ./ring
expect "cluster down" 0 storm cluster down --dir "$C"
# the same untagged (bcs_data_tags = 0): nothing checks the block, so the
# altered bytes reach the rank, which finds them wrong
STORM_TEST_TAMPER_NODE=node00 STORM_TEST_TAMPER=bulk_flip=1 \
	expect "cluster up untagged (--bcs-data-tags 0)" 0 storm cluster up $UP_MODE --nodes 2 \
	--dir "$C" --timeslice-us 2000 --down-after-ms 5000 --bcs-data-tags 0 --bcs-rank-writes 0
has "  storm.conf says so" c/storm.conf "bcs_data_tags = 0"
expect "  the altered block reaches the rank" 1 timeout 60 storm run -N 2 -n 2 ./bigmsg
has "    which finds it wrong" out "bigmsg: 3145745 ints from 0 tag 5, CORRUPT"
expect "cluster down" 0 storm cluster down --dir "$C"

# ---- a node on a loaded machine misses strobes (one overtaken by the next
# before it reads it, or read torn and refused) and runs no phase in those
# slices. Wildcards resolve only when every node reported quiet two slices
# running; counted busy, node01's skipped slices (it hears every other
# strobe here) kept the job from ever being quiescent, and rank 0 waited in
# its first MPI_ANY_SOURCE receive for ever
STORM_TEST_TAMPER_NODE=node01 STORM_TEST_TAMPER=hear_every=2 \
	expect "cluster up (node01 hears every other strobe)" 0 \
	storm cluster up $UP_MODE --nodes 4 --dir "$C" --timeslice-us 2000 --down-after-ms 5000
expect "Bcast then MPI_ANY_SOURCE with a node missing strobes" 0 \
	timeout 60 storm run -N 4 -n 4 ./bcastwild 5
has "  every round intact" out "bcastwild: 5 rounds on 4 ranks, 0 errors"
expect "cluster down" 0 storm cluster down --dir "$C"
echo "test_mpi: $((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
