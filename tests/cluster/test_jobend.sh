#!/bin/bash
# The job's end combined up the tree (job_end_combined = 1, the default)
# on a 16-node virtual cluster: the reports the MM consumes for a launch of 16 nodes
# (storm_job_reports_total) bounded by a small constant, not two a node; storm
# acct's CPU time summed over every rank and the peak RSS of a rank on a
# node that sent no report; storm trace of a job all of whose nodes but the
# first ended quietly shows every node's starts and ends; a job with one failing rank on a node other
# than the first: its exit code and the rank named, the nodes whose ranks
# all exited 0 still quiet; a failing node's DONE not yet taken when the MM
# reads the done words (test point drop_done_from): its exit not lost; the MM killed (kill -9) with a job running and
# started again (storm cluster restart mm): the job ends COMPLETED with all
# its output; the MM stopped right after its read of a job's quiet ends
# started (test point end_check): the restarted MM reads them again and
# ends the job.
# Usage: test_jobend.sh BUILD_BIN_DIR   (part of make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-jobendtest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
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
cd "$T" || exit 1
kill9() { local p; p=$(daemon_pid "$1"); kill -9 "$p"; gone "$p"; }

MPORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir "$T/sync"
if storm cluster up $UP_MODE $(shared "$T/sync") --nodes 16 \
	--metrics-port "$MPORT" --down-after-ms 10000 --dir "$C" >"$T/up.out" 2>&1; then
	ok "cluster up with 16 nodes, job_end_combined = 1"
else bad "cluster up"; cat "$T/up.out"; exit 1; fi
grep -q "job_end_combined" "$C/storm.conf" && bad "  storm.conf names job_end_combined (the default is 1)" ||
	ok "  storm.conf leaves job_end_combined at its default, 1"
storm cluster status --wait "$(patience 20)" >/dev/null || bad "every node UP"

# metric NAME: the MM's counter NAME now
metric() {
	curl -s "http://127.0.0.1:$MPORT/metrics" | awk -v m="$1" '$1 == m { print $2 }'
}

# ---- the reports of a launch. Those with a record of the job
# (storm_job_reports_total: exits, notes, output) are the first node's
# only, whatever the load: 2 a launch (at most 4 asked), not one or two a node. All
# reports (storm_reports_total) also hold the nodes' heartbeats (every
# report_every strobes while the MM's liveness lease lapses, as it does on
# a loaded machine), which fall within a launch or not: shown, not bounded.
# Before the change every node sent two: 33.6 a launch on average.
expect "a first launch of 16 nodes" 0 storm run -N 16 -n 16 true
most=0 jobs="" all=""
for i in 1 2 3 4 5 6 7 8; do
	a=$(metric storm_job_reports_total) r=$(metric storm_reports_total)
	storm run -N 16 -n 16 true >/dev/null 2>&1 || bad "  launch $i exits 0"
	b=$(metric storm_job_reports_total) r2=$(metric storm_reports_total)
	n=$((b - a))
	jobs="$jobs $n" all="$all $((r2 - r))"
	[ "$n" -gt "$most" ] && most=$n
done
[ "$most" -le 4 ] &&
	ok "  the MM took at most $most reports with the job's records a launch of 16 nodes (each:$jobs; all reports, heartbeats too:$all)" ||
	bad "  reports with the job's records a launch of 16 nodes: at most $most (each:$jobs), wanted at most 4"
q=$(grep -l "its end written for the MM's read (no report)" "$C"/log/node*.log | wc -l)
[ "$q" = 15 ] && ok "  the 15 nodes other than the first ended quietly" ||
	bad "  nodes that ended quietly: $q, wanted 15"

# ---- storm trace of a job whose 15 nodes other than the first ended
# quietly: their parts come with their next heartbeat, after the job's end,
# and storm trace waits for them
expect "a job of 16 nodes, 32 ranks, submitted" 0 storm submit --wait --parsable -N 16 -n 32 -o /dev/null true
TJ=$(head -1 "$T/out")
expect "  storm trace of it" 0 storm trace -o "$T/quiet.json" "$TJ"
python3 - "$T/quiet.json" <<'PY' && ok "  every node's 2 execs and 2 exits are in it (15 nodes sent no report of the end)" ||
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
nodes = [p for p in names if names[p].startswith("node")]
def count(pid, suffix):
    return sum(1 for e in ev if e["pid"] == pid and e["ph"] != "M" and e["name"].endswith(suffix))
bad = [names[p] for p in nodes if count(p, " exec") != 2 or count(p, " exit") != 2]
if len(nodes) != 16 or bad:
    print("nodes in the trace: %d; without 2 execs and 2 exits: %s" % (len(nodes), bad))
    sys.exit(1)
PY
	bad "  every node's starts and ends in its trace"
[ ! -s "$T/err" ] && ok "  ... with no warning of a part missing" || { bad "  no warning"; cat "$T/err"; }

# ---- accounting: each rank says how much CPU it used; the ranks of the 15
# quiet nodes' are known to the MM only through the read's sum. Rank 9 (on
# a quiet node) holds 64 MiB: the job's peak RSS.
cat >"$T/burn.py" <<'PY'
import os
r = int(os.environ["STORM_RANK"])
keep = bytearray(64 << 20) if r == 9 else None
if keep:
    for i in range(0, len(keep), 4096):
        keep[i] = 1
x = 0
for i in range(400000):
    x += i * i
t = os.times()
# one write: the lines of ranks without labels are not kept whole otherwise
os.write(1, b"cpu %d %.2f\n" % (r, t.user + t.system))
PY
expect "a job of 16 ranks that burn CPU, rank 9 with 64 MiB" 0 storm run -N 16 -n 16 python3 "$T/burn.py"
[ "$(grep -c '^cpu ' "$T/out")" = 16 ] && ok "  every rank's output came (quiet nodes' too)" ||
	{ bad "  every rank's output came"; cat "$T/out"; }
said=$(awk '$1 == "cpu" { s += $3 } END { printf "%.2f", s }' "$T/out")
expect "  storm acct --json" 0 storm acct --json
python3 - "$T/out" "$said" <<'PY' && ok "  acct: CPU time summed over the 16 ranks (>= the $said s they said), peak RSS >= 64 MiB" ||
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
j = max(jobs, key=lambda j: j["job"])
said = float(sys.argv[2])
ok = j["state"] == "COMPLETED" and j["cpu_seconds"] >= said - 0.05 and j["max_rss_kb"] >= 65536
if not ok:
    print("job %d: %s, cpu %.3f s (ranks said %.2f), max rss %d KiB"
          % (j["job"], j["state"], j["cpu_seconds"], said, j["max_rss_kb"]))
sys.exit(0 if ok else 1)
PY
	bad "  acct: CPU time summed and peak RSS"

# ---- one rank fails on a node other than the first: that node reports,
# the others stay quiet, the job's exit and reason are that rank's
expect "a job of 32 ranks, rank 21 exits 7" 7 storm run -N 16 -n 32 \
	sh -c '[ "$STORM_RANK" = 21 ] && exit 7; exit 0'
grep -q "rank 21 exited with status 7" "$T/err" && ok "  storm run names rank 21" ||
	{ bad "  storm run names rank 21"; cat "$T/err"; }
expect "  storm acct" 0 storm acct
awk 'NR > 1 { l = $0 } END { print l }' "$T/out" | grep -qE " FAILED +16 +32 .* 7 node" &&
	ok "  acct: FAILED, exit 7" || { bad "  acct: FAILED, exit 7"; tail -2 "$T/out"; }

# ---- a node that reports its end (its rank exited 3) whose DONE the MM has
# not taken when it reads the other nodes' done words (test point
# drop_done_from: node01's DONE dropped until that read answers; rank 0
# ends once the MM logged the drop): the node writes its done word only
# once its DONE is acknowledged, so the read does not take it for quiet and
# its rank's exit is not lost
kill9 mm
expect "  MM restarted with the drop_done_from test point" 0 \
	env STORM_TEST_TAMPER=drop_done_from=2 storm cluster restart mm --dir "$C"
storm cluster status --wait "$(patience 20)" >/dev/null || bad "  every node UP"
expect "a job of 2 nodes, rank 1 exits 3, its DONE not taken when the MM reads" 3 \
	storm run -N 2 -n 2 bash -c '[ "$STORM_RANK" = 1 ] && exit 3
		exec 3< <(exec timeout 60 tail -n +1 -F "$1" 2>/dev/null)
		grep -q -m1 "report with the DONE of job $STORM_JOBID dropped" <&3
		kill $! 2>/dev/null; exit 0' bash "$C/log/mm.log"
grep -q "rank 1 exited with status 3" "$T/err" && ok "  storm run names rank 1, not a quiet node" ||
	{ bad "  storm run names rank 1"; cat "$T/err"; grep "dropped" "$C/log/mm.log"; }

# ---- the MM killed with a job running, started again: the job ends
mkfifo "$T/sync/go"
exec 9<>"$T/sync/go"
expect "a batch job of 16 nodes that waits" 0 storm submit -N 16 -n 16 -o "$T/held.out" \
	sh -c "read _ < $T/sync/go; echo done \$STORM_RANK"
HELD=$(sed -n 's/^Submitted job //p' "$T/out")
wait_log "$C/log/mm.log" "job $HELD starts" 30 || bad "  job $HELD starts"
for n in 00 07 15; do
	wait_log "$C/log/node$n.log" "job $HELD: started ranks" 30 || bad "  job $HELD started on node$n"
done
kill9 mm
expect "  MM killed, restarted" 0 storm cluster restart mm --dir "$C"
storm cluster status --wait "$(patience 20)" >/dev/null && ok "  every node UP again" || bad "  every node UP again"
for i in $(seq 16); do echo go >&9; done
wait_log "$C/log/mm.log" "job $HELD ended" 60
expect "  storm acct -j $HELD" 0 storm acct -j "$HELD"
grep -qE "^ +$HELD .* COMPLETED .* 0 node" "$T/out" && ok "  it ended COMPLETED, exit 0" ||
	{ bad "  it ended COMPLETED"; cat "$T/out"; grep "job $HELD" "$C/log/mm.log"; }
M=$(in_host mm "$T")
[ "$(grep -c '^done ' "$M/held.out")" = 16 ] && ok "  all 16 ranks' output in its file" ||
	{ bad "  all 16 ranks' output"; cat "$M/held.out"; }

# ---- the MM stops right after the first node's DONE is saved and its read
# of the others' ends started: the restarted MM reads them again
kill9 mm
expect "  MM restarted with the end_check test point" 0 \
	env STORM_TEST_TAMPER=end_check=1 storm cluster restart mm --dir "$C"
storm cluster status --wait "$(patience 20)" >/dev/null || bad "  every node UP"
expect "a job of 16 nodes that ends at once" 0 storm submit -N 16 -n 16 -o "$T/endchk.out" true
ENDCHK=$(sed -n 's/^Submitted job //p' "$T/out")
wait_log "$C/log/mm.log" "test hook: the MM stops" 60 &&
	ok "  the MM stopped after its read of the quiet ends started" ||
	bad "  the MM stopped after its read of the quiet ends started"
gone "$(daemon_pid mm)"
expect "  MM restarted" 0 storm cluster restart mm --dir "$C"
wait_log "$C/log/mm.log" "job $ENDCHK ended" 60
expect "  storm acct -j $ENDCHK" 0 storm acct -j "$ENDCHK"
grep -qE "^ +$ENDCHK .* COMPLETED " "$T/out" && ok "  it ended COMPLETED after the restart" ||
	{ bad "  it ended COMPLETED after the restart"; cat "$T/out"; grep "job $ENDCHK" "$C/log/mm.log"; }

expect "cluster down" 0 storm cluster down --dir "$C"
echo "$((checks - fails))/$checks checks passed"
[ "$fails" = 0 ]
