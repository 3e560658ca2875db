#!/bin/bash
# Gang scheduling on a virtual cluster, through the real CLI: jobs sharing
# nodes run only in their own rows (sampled at random moments), a job's end
# frees its cells for a waiting job, jobs smaller than a row share it, and
# bad scheduler settings are refused. Run once with signals and once with the
# freezer (a writable cgroup v2 hierarchy: one is mounted for the test if
# the machine has none; the test fails, saying why, if it cannot).
# Every daemon is taken down on exit, pass or fail.
# Usage: test_gang.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-gangtest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
fails=0 checks=0
# in the ranks' names: a test running beside this one (another checkout)
# must neither be killed by our cleanup nor counted by our sampler
SPIN=storm-gangtest-${T##*.}-spin

cleanup() {
	fail_report
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	pkill -9 -f "$SPIN-" 2>/dev/null
	mountpoint -q "$T/cgroup2" && umount -l "$T/cgroup2"
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# spinner NAME: a CPU-bound rank that runs until killed, findable by NAME
spin() { storm submit -o /dev/null "$@" /bin/sh -c 'while :; do :; done' "$SPIN-$NAME"; }
# pids_of NAME JOB N: the comma-separated pids of the N ranks of spinner NAME,
# once every node of JOB has logged that its ranks exist (a rank halted at
# its exec already has its command line)
pids_of() {
	local node
	for node in $(storm jobs --json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["job"] == int(sys.argv[1]): print(j["nodelist"])' "$2" | xargs -r python3 -c '
import re, sys
m = re.fullmatch(r"(.*)\[(\d+)-(\d+)\]", sys.argv[1])
w = len(m.group(2)) if m else 0
print(" ".join(f"{m.group(1)}{i:0{w}d}" for i in range(int(m.group(2)), int(m.group(3)) + 1)) if m else sys.argv[1])'); do
		wait_log "$C/log/$node.log" "job $2: started ranks" 30 || return 1
	done
	local p
	p=$(pgrep -f "$SPIN-$1\$" | sort -n | paste -sd,)
	[ "$(echo "$p" | tr ',' '\n' | grep -c .)" = "$3" ] && echo "$p"
}
job_field() { # job_field JOB FIELD: from storm jobs --json
	storm jobs --json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["job"] == int(sys.argv[1]): print(j[sys.argv[2]])' "$1" "$2"
}

# ---- bad settings are refused before anything starts
expect "cluster up --mpl 0 refused" 2 storm cluster up --nodes 2 --dir "$C" --mpl 0
has "  names the flag" err "--mpl wants 1 to 16"
expect "cluster up --policy fcfs --mpl 2 refused" 2 storm cluster up --nodes 2 --dir "$C" \
	--policy fcfs --mpl 2
expect "cluster up --switch bogus refused" 2 storm cluster up --nodes 2 --dir "$C" --switch bogus
mkdir -p "$T/bad"
for setting in "mpl = 99|mpl = 99 is out of range [1, 16]" \
	"quantum = 0|quantum = 0 is out of range" \
	"policy = lottery|policy must be one of gang, fcfs, not 'lottery'" \
	"switch = magic|switch must be one of signals, freezer"; do
	printf '[cluster]\nsocket = %s/bad/mm.sock\nbootstrap = dir:%s/bad/fabric\n[scheduler]\n%s\n[nodes]\nnames = n0\n' \
		"$T" "$T" "${setting%%|*}" >"$T/bad/storm.conf"
	expect "stormmm refuses '${setting%%|*}'" 1 stormmm -c "$T/bad/storm.conf"
	has "  with the reason on one line" err "${setting#*|}"
done

run_mode() {
	local mode=$1
	echo "# switch = $mode"
	# real-time node daemons, as on a cluster: they switch as the strobe lands
	expect "cluster up (MPL 2, quantum 25 x 10 ms, $mode)" 0 storm cluster up $UP_MODE --nodes 4 \
		--dir "$C" --mpl 2 --quantum 25 --timeslice-us 10000 --switch "$mode" --realtime
	[ -s "$STORM_CONF" ] || return

	# two jobs on the same nodes, and two half-width ones sharing a row
	NAME=a spin -N 4 >"$T/job_a" && NAME=b spin -N 2 >"$T/job_b" && NAME=c spin -N 2 >"$T/job_c"
	local a b c
	a=$(awk '{print $3}' "$T/job_a") b=$(awk '{print $3}' "$T/job_b") c=$(awk '{print $3}' "$T/job_c")
	local pa pb pc
	if pa=$(pids_of a "$a" 4) && pb=$(pids_of b "$b" 2) && pc=$(pids_of c "$c" 2); then
		ok "three jobs launched on 4 nodes (jobs $a $b $c)"
	else
		bad "ranks of the three jobs never all appeared"
		return
	fi
	storm matrix --json >"$T/m.json"
	python3 - "$T/m.json" "$a" "$b" "$c" <<'EOF' >"$T/layout" 2>&1
import json, sys
m = json.load(open(sys.argv[1]))
a, b, c = (int(x) for x in sys.argv[2:5])
rows = [set(r) for r in m["rows"]]
home = {j["job"]: j["row"] for j in m["jobs"]}
ra, rb = home[a], home[b]
assert rows[ra] == {a}, f"job {a} fills row {ra}: {m['rows']}"
assert home[c] == rb and rows[rb] == {b, c}, f"jobs {b} and {c} share row {rb}: {m['rows']}"
print("layout ok", m["rows"])
EOF
	if [ $? = 0 ]; then ok "jobs smaller than a row share it"; else
		bad "matrix layout"; sed 's/^/     | /' "$T/layout"; fi
	storm jobs >"$T/jobs"
	has "storm jobs shows a SUSPENDED job" jobs SUSPENDED
	has "storm jobs shows a RUNNING job" jobs RUNNING
	storm matrix >"$T/draw"
	has "storm matrix marks the running row" draw ">row"

	# the daemons: the sampler waits for them (and the ranks) to get the
	# CPU before it calls a mixed state a violation. The MM too: a node
	# that held its schedule ahead to the end holds its last row until the
	# MM's next strobe, and nodes that missed different strobes hold
	# different rows meanwhile
	nds=$(awk '$2 ~ /^(node|mm$)/ { printf "%s%s", s, $1; s = "," }' "$C/pids")
	if GANG_DAEMONS=$nds python3 "$HERE/gang_sample.py" 3 "$a:$pa" "$b:$pb" "$c:$pc" <"$T/m.json" >"$T/sample"; then
		ok "sampled: each job runs only in its row, on all its nodes at once ($(tail -1 "$T/sample"))"
	else
		bad "gang property violated"; sed 's/^/     | /' "$T/sample" | tail -20
	fi

	# the matrix is full: a 4-node job waits, with the reason
	storm submit -N 4 -o "$T/late.out" /bin/echo late >"$T/job_d"
	local d
	d=$(awk '{print $3}' "$T/job_d")
	if [ "$(job_field "$d" state)" = QUEUED ]; then ok "a job submitted to a full matrix waits"
	else bad "job $d is $(job_field "$d" state), wanted QUEUED"; fi
	job_field "$d" reason >"$T/reason"
	has "  and says why" reason "free in one row of the matrix"

	# the end of job a frees row ... for d, which then runs to its end
	storm cancel "$a" >/dev/null
	if wait_log "$C/log/mm.log" "job $d ended: COMPLETED" 30; then
		ok "cancelling a job freed its cells and the waiting job ran"
	else bad "job $d never completed after job $a ended"; fi
	# the MM writes it (--hosts: in its host's files)
	grep -qx late "$(in_host mm "$T")/late.out" && ok "  its output" || bad "  its output"
	# with a gone, b and c have a row to themselves and its alternate
	storm matrix --json >"$T/m2.json"
	python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
b, c = int(sys.argv[2]), int(sys.argv[3])
assert all(set(r) == {b, c} for r in m["rows"]), m["rows"]' "$T/m2.json" "$b" "$c" 2>"$T/alt"
	if [ $? = 0 ]; then ok "compaction and backfill: the remaining jobs fill every row"
	else bad "remaining jobs not backfilled"; sed 's/^/     | /' "$T/alt"; fi

	# an interactive job on the loaded cluster gets its row and its output
	expect "storm run on a loaded cluster" 0 storm run -N 4 /bin/echo interactive
	has "  its output" out interactive
	storm cancel "$b" "$c" >/dev/null
}

run_mode signals
expect "cluster down" 0 storm cluster down --dir "$C"
# the node daemons make their cgroups below their own one in the first
# cgroup v2 mount (daemons/node/gang.c): that one must take a new cgroup
cg_probe() {
	local mnt own
	mnt=$(awk '$9 == "cgroup2" {print $5; exit}' /proc/self/mountinfo)
	own=$(sed -n 's/^0:://p' /proc/self/cgroup)
	[ -n "$mnt" ] || { echo "no cgroup v2 hierarchy is mounted"; return 1; }
	[ "$own" = / ] && own=
	local probe=$mnt$own/storm-gangtest-probe.$$ rc=0
	mkdir "$probe" 2>/dev/null || { echo "cannot create a cgroup in $mnt$own"; return 1; }
	[ -w "$probe/cgroup.freeze" ] || { echo "$probe/cgroup.freeze is missing or not writable"; rc=1; }
	rmdir "$probe"
	return $rc
}
if ! awk '$9 == "cgroup2" { f = 1 } END { exit !f }' /proc/self/mountinfo && [ "$(id -u)" = 0 ]; then
	mkdir -p "$T/cgroup2" && mount -t cgroup2 cgroup2 "$T/cgroup2" &&
		echo "# no cgroup v2 hierarchy was mounted: mounted one on $T/cgroup2"
fi
if why=$(cg_probe); then
	run_mode freezer
	expect "cluster down" 0 storm cluster down --dir "$C"
else
	bad "switch = freezer: not run: $why (it needs a writable cgroup v2 hierarchy: run as root, or mount one)"
fi
echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
