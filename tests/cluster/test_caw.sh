#!/bin/bash
# COMPARE-AND-WRITE does not hold the machine manager's loop. A job's rank
# on node03 ends at once; once node03 has written that end for the MM's
# read (it ends quietly, as a node that is not the job's first and whose
# ranks exited 0 does), node03's daemon hangs for 4 s (test hook "silent").
# The other ranks end then, and the MM's read of the nodes' ends, a
# COMPARE-AND-WRITE over the job's nodes, waits for node03 meanwhile: the strobes go on every 10 ms all along (the
# MM's trace), other jobs on the other nodes start and end with their own
# checks, and the check's answer, once node03 is back, ends the job as
# completed. Then jobs on overlapping node sets, all at once: each ends
# completed (their checks run side by side). That concurrent calls on
# overlapping sets agree is shown on the primitive itself: the scenario
# overlap of tests/net/sn_mptest.c.
# A job's end written late by a node into its slot, after the next job's in
# that slot, does not hide the next job's end (test point done_late).
# Every daemon is taken down on exit, pass or fail.
# Usage: test_caw.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-cawtest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
SILENT_MS=4000
BG=""
cleanup() {
	for p in $BG; do kill "$p" 2>/dev/null; done
	cluster_teardown
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$T/trace"
# down_after_ms well past the silence: node03 is late, not DOWN
STORM_TRACE=$T/trace STORM_TEST_TAMPER_NODE=node03 \
	STORM_TEST_TAMPER="silent=1,silent_ms=$SILENT_MS,done_late=1" \
	expect "cluster up (4 nodes, 10 ms slices, node03 silent after its first job's end)" 0 \
	storm cluster up --nodes 4 --dir "$C" --timeslice-us 10000 --down-after-ms 30000 --mpl 2
[ -s "$STORM_CONF" ] || exit 1

# the other ranks end once node03 is silent
storm run -N 4 bash -c 'if [ "$STORM_NODENAME" != node03 ]; then
		exec 3< <(exec timeout 60 tail -n +1 -F "$1" 2>/dev/null)
		grep -q -m1 "test hook: silent for" <&3
		kill $! 2>/dev/null
	fi
	echo "$STORM_NODENAME"' bash "$C/log/node03.log" >"$T/run.out" 2>"$T/run.err" &
RUN=$!
BG="$RUN"
if wait_log "$C/log/node03.log" "test hook: silent for" 60; then
	ok "node03 went silent once the MM had its rank's end"
else
	bad "node03 never went silent"
	exit 1
fi
# while the check waits on node03: a job on three other nodes (MPL 2, the
# second row) starts and ends
storm run -N 3 sh -c 'echo meanwhile' >"$T/mid.out" 2>"$T/mid.err"
mid=$?
if grep -q "test hook: silent no more" "$C/log/node03.log"; then
	bad "the job beside could not run while node03 was silent (exit $mid)"
elif [ "$mid" = 0 ] && [ "$(grep -c '^meanwhile$' "$T/mid.out")" = 3 ]; then
	ok "a job on the other nodes started and ended while node03 was silent"
else
	bad "the job beside: exit $mid: $(cat "$T/mid.err")"
fi
wait "$RUN"
rc=$?
BG=""
if [ "$rc" = 0 ] && [ "$(sort "$T/run.out" | paste -sd,)" = node00,node01,node02,node03 ]; then
	ok "the job ended completed once node03 answered (exit 0)"
else
	bad "the job: exit $rc, out: $(paste -sd' ' "$T/run.out") err: $(cat "$T/run.err")"
fi
grep -q "node node03 is DOWN" "$C/log/mm.log" && bad "node03 was declared DOWN" ||
	ok "node03 was late, not DOWN"

# A node back from DOWN kills what it still ran of a job that ended
# without it, and that end can come after the next job in the job's done
# slot ended there. Test point done_late on node03: the first job whose end
# it writes into a slot that held another job's end (this one, in the first
# job's slot) is followed by the earlier job's end written again.
expect "a job in the first job's slot, with node03 writing the first job's end after its own" 0 \
	storm run -N 4 true
# the hook names the earlier job and its slot; node03 must leave that slot,
# for that job, to the later one
hook=$(grep -m1 "test hook done_late" "$C/log/node03.log")
late=$(echo "$hook" | sed -n "s/.*: job \([0-9]*\)'s end written again into slot \([0-9]*\)$/\1 \2/p")
if [ -z "$late" ]; then
	bad "  node03 left the slot to the later job (the hook did not fire: '$hook')"
elif grep -q "job ${late% *} ended here after job [0-9]* was launched in its done slot ${late#* };" \
	"$C/log/node03.log"; then
	ok "  node03 left the slot to the later job"
else
	bad "  node03 left the slot to the later job (job ${late% *}'s late end in slot ${late#* } was written)"
fi

# jobs on overlapping node sets, all at once
pids=""
for i in 1 2 3 4 5 6; do
	storm submit --wait -o "$T/ov$i.out" -N $((2 + i % 3)) sh -c 'echo ok' >/dev/null 2>&1 &
	pids="$pids $!"
done
BG="$pids"
n_ok=0
for p in $pids; do wait_bg "$p" 120 "a job on overlapping node sets" && n_ok=$((n_ok + 1)); done
BG=""
[ "$n_ok" = 6 ] && ok "six jobs on overlapping node sets at once all completed" ||
	bad "jobs on overlapping node sets: $n_ok of 6 completed"
grep -q "termination check" "$C/log/mm.log" &&
	bad "a termination check did not confirm: $(grep -m1 'termination check' "$C/log/mm.log")" ||
	ok "every termination check confirmed its job's end at once"

# the trace is whole once the MM has stopped
storm cluster down --dir "$C" >/dev/null 2>&1

# the check waited for node03 (the job ended once it was back), and the
# strobes went on meanwhile
python3 - "$C/log/node03.log" "$C/log/mm.log" "$T/trace/mm.trace" "$SILENT_MS" \
	>"$T/check" 2>&1 <<'PY'
import datetime, re, sys, time
nd_log, mm_log, trace, silent_ms = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def stamp(line):
    return datetime.datetime.strptime(line.split()[0], "%Y-%m-%dT%H:%M:%S.%f").timestamp()
t_silent = t_back = t_end = job = None
for line in open(nd_log):
    m = re.search(r"job (\d+) done", line)
    if m and t_silent is None: job = m.group(1)  # the last one before the silence
    if "test hook: silent for" in line: t_silent = stamp(line)
    if "test hook: silent no more" in line: t_back = stamp(line)
for line in open(mm_log):
    m = re.search(r"job (\d+) ended: (\w+)", line)
    if m and m.group(1) == job:
        t_end, state = stamp(line), m.group(2)
bad = 0
if None in (t_silent, t_back, t_end):
    print("missing lines: silent", t_silent, "back", t_back, "end", t_end); sys.exit(1)
print(f"node03 silent {t_back - t_silent:.2f} s; its job {job} ended {t_end - t_silent:.2f} s "
      f"after it went silent ({state})")
if t_end < t_back - 0.05:
    print("the job ended before node03 answered its termination check"); bad = 1
# the trace's times are CLOCK_MONOTONIC, the logs' the wall clock: the
# same host, so one offset turns one into the other
off = time.time() - time.monotonic()
lo, hi = (t_silent - off) * 1e9, (t_end - off) * 1e9
times = [int(l.split()[4]) for l in open(trace)  # whole lines only
         if l.startswith("strobe ") and l.endswith("\n") and len(l.split()) == 5]
before = [t for t in times if t < lo][-1:]
after = [t for t in times if t > hi][:1]
inside = before + [t for t in times if lo <= t <= hi] + after
gaps = sorted(b - a for a, b in zip(inside, inside[1:]))
mx = gaps[-1] / 1e6 if gaps and before and after else 1e9
print(f"{len(inside) - 2} strobes while the job's end waited on node03 ({(hi - lo) / 1e9:.1f} s), "
      f"longest gap {mx:.0f} ms")
# a blocked loop shows as a gap of the rest of the silence (over 3.5 s);
# a loaded host stalls a daemon for a fraction of a second
if mx > 1000:
    print("the strobe stopped while the check waited"); bad = 1
sys.exit(bad)
PY
if [ $? = 0 ]; then ok "the check waited on node03 while the strobes went on"
else bad "the strobes or the check's wait"; fi
sed 's/^/     | /' "$T/check"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
