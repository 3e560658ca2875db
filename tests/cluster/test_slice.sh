#!/bin/bash
# Per-row slices on a virtual cluster of 10 ms slices (MPL 2, quantum 1): a
# BCS-MPI job asking for 1 ms slices (storm run --timeslice-us 1000) makes
# the MM strobe every 1 ms while its row runs, and every 10 ms in the row of
# a CPU-bound job sharing the nodes; its row's turn still lasts 10 ms (ten
# slices of 1 ms, not one); once it ends the slice is 10 ms again. Read off
# the MM's trace (STORM_TRACE): a "slice" line at each change of the slice
# in force, a "strobe" line per strobe with its send time; `storm matrix`
# shows each row's slice meanwhile. Asks outside
# min_timeslice_us..timeslice_us are refused.
# Every daemon is taken down on exit, pass or fail.
# Usage: test_slice.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-slicetest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
SPIN=storm-slicetest-${T##*.}-spin
TR=$T/trace/mm.trace

trap cluster_teardown EXIT
trap 'exit 1' INT TERM

# wait_slice US FROM STROBES SECS: the MM's trace (as it grows) shows the
# slice at US with STROBES strobes from line FROM on and no change since;
# 1 if not within SECS
wait_slice() {
	python3 - "$TR" "$@" <<'PY'
import subprocess, sys
path, want, start, need, secs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
tail = subprocess.Popen(["timeout", secs, "tail", "-n", "+1", "-F", path],
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
cur, after, n = None, 0, 0
for l in tail.stdout:
    n += 1
    p = l.split()
    if len(p) != 5: # the line being written
        continue
    if p[0] == "slice":
        cur, after = p[2], 0
    elif p[0] == "strobe" and cur == want and n >= start:
        after += 1
    if cur == want and after >= need:
        break
tail.kill()
sys.exit(0 if cur == want and after >= need else 1)
PY
}

expect "bcs-mpicc stencil.c" 0 bcs-mpicc -O2 -I "$TOP/bench/mpi" "$TOP/bench/mpi/stencil.c" \
	-o "$T/stencil" -lm
mkdir -p "$T/trace"
STORM_TRACE=$T/trace expect "cluster up (2 nodes, MPL 2, 10 ms slices)" 0 \
	storm cluster up --nodes 2 --dir "$C" --mpl 2 --quantum 1 --timeslice-us 10000 \
	--down-after-ms 5000 --realtime
[ -s "$STORM_CONF" ] || exit 1
cd "$T" || exit 1
if wait_slice 10000 1 0 10; then ok "slices start at the cluster's 10 ms"
else bad "no 'slice 1 10000' line in the MM's trace"; fi

expect "a slice under min_timeslice_us is refused" 1 storm run --timeslice-us 500 /bin/true
has "  naming the range" err "--timeslice-us 500 is outside this cluster's 1000-10000 us"
expect "a slice over timeslice_us is refused" 1 storm submit --timeslice-us 20000 /bin/true
has "  naming the range" err "--timeslice-us 20000 is outside"
expect "--timeslice-us wants a number" 2 storm run --timeslice-us fast /bin/true

storm submit -N 2 -o /dev/null --mpi=none /bin/sh -c 'while :; do :; done' "$SPIN" >"$T/spin"
spin=$(awk '{print $3}' "$T/spin")
wait_log "$C/log/node00.log" "job $spin: started ranks" 30 || bad "the spinning job never started"
# the stencil shares the nodes with it: its row runs 1 ms slices, the spin's 10 ms
storm submit -W -N 2 -n 2 --timeslice-us 1000 -o "$T/stencil.out" \
	./stencil --nx 32 --ny 32 --nz 32 --steps 300 --hold >/dev/null 2>"$T/stencil.err" &
mpi=$!
if wait_slice 1000 1 0 30; then
	ok "the MM strobes at 1 ms once the MPI job runs"
else bad "no 'slice N 1000' line in the MM's trace"; fi
expect "storm matrix --json while it runs" 0 storm matrix --json
if python3 -c 'import json,sys; sys.exit(sorted(json.load(open(sys.argv[1]))["row_slice_us"]) != [1000, 10000])' "$T/out"
then ok "  its row at 1 ms, the other at 10 ms"
else bad "  row_slice_us: $(grep -o '"row_slice_us[^]]*]' "$T/out")"; fi
expect "storm matrix shows the rows' slices" 0 storm matrix
has "  in a line of its own" out "slices: row 0"
# it held its row until here, whatever the machine's speed
touch "$T/stencil.go"
wait $mpi
rc=$?
if [ $rc = 0 ]; then ok "a BCS-MPI job at 1 ms slices beside a CPU-bound job (exit 0)"
else bad "the stencil at 1 ms slices: exit $rc ($(head -c 300 "$T/stencil.err"))"; fi
cp "$T/stencil.out" "$T/out"
has "  the stencil ran to its end" out '"steps":300'
mpi_done=$(wc -l <"$TR")
# after its end the slice is 10 ms, and stays so for 30 more strobes (the
# spin's row alone)
if wait_slice 10000 "$mpi_done" 30 20; then ok "the slice is 10 ms again once the MPI job ended"
else bad "the slice did not return to 10 ms: $(grep '^slice' "$TR" | tail -3 | tr '\n' ';')"; fi
storm cancel "$spin" >/dev/null 2>&1

# the trace: strobes inside the 1 ms stretches came about 1 ms apart, and a
# 1 ms turn held about ten of them (as long as a 10 ms turn); the other
# row's stretches held one strobe each
python3 - "$TR" >"$T/check" <<'PY'
import sys
cur, runs, gaps, last = None, [], [], None
for l in open(sys.argv[1]):
    p = l.split()
    if len(p) != 5: # the line being written
        continue
    if p[0] == "slice":
        cur = int(p[2]); runs.append([cur, 0]); last = None
    elif p[0] == "strobe" and runs:
        t = float(p[4])
        runs[-1][1] += 1
        if cur == 1000 and last is not None:
            gaps.append(t - last)
        last = t
short = [n for us, n in runs if us == 1000][:-1] # the last may be cut short by the end
long_ = [n for us, n in runs[1:] if us == 10000][:-1]
bad = 0
if len(short) < 5:
    print(f"only {len(short)} turns at 1 ms slices"); sys.exit(1)
short.sort(); gaps.sort()
med_n, med_gap = short[len(short) // 2], gaps[len(gaps) // 2] / 1e6
print(f"{len(short)} turns at 1 ms: median {med_n} strobes a turn, strobes median "
      f"{med_gap:.2f} ms apart; 10 ms turns: {sorted(long_)[len(long_) // 2] if long_ else '-'} strobes")
# ten per turn when the MM keeps up; a late MM steps the rotation without a
# strobe for the slices it slept through, so a loaded host shows fewer
if not 5 <= med_n <= 10: bad = 1; print("a 1 ms turn is not ten 1 ms slices")
if not med_gap < 3: bad = 1; print("strobes in the 1 ms row were not 1 ms apart")
if long_ and sorted(long_)[len(long_) // 2] != 1: bad = 1; print("a 10 ms turn held more than one strobe")
sys.exit(bad)
PY
if [ $? = 0 ]; then ok "1 ms strobes in the MPI job's row, ten to its turn; 10 ms in the other"
else bad "trace check"; fi
sed 's/^/     | /' "$T/check"
echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
