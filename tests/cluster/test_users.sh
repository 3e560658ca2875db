#!/bin/bash
# Users and authentication on a real virtual cluster, through the real CLI
# (run as root: it creates users). Two non-root users in their own group and
# a supplementary one run jobs with `runuser`; the job sees their uid, gid
# and groups; one may not cancel the other's job, root may, anyone may list.
# Forged, altered, replayed and relayed control frames (ctl_forge) are
# refused and logged; an altered strobe, an altered report and a replayed
# report (STORM_TEST_TAMPER) are refused and logged while the cluster keeps
# running jobs; a key file others may read is refused. Synchronisation is on
# log lines and FIFOs; every daemon, user and group is removed on exit.
# Usage: test_users.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "test_users.sh: error: must run as root (it creates users with useradd)" >&2
	exit 1
fi
T=$(mktemp -d /tmp/storm-userstest.XXXXXX)
chmod 755 "$T" # the test users run CLIs and jobs below it
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
UA=stormtest_alice UB=stormtest_bob G=stormtest_grp G2=stormtest_extra
fails=0 checks=0
BG="" MUNGED_PID=""

cleanup() {
	fail_report
	for p in $BG; do kill -9 "$p" 2>/dev/null; done
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
	[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID" 2>/dev/null
	for u in $UA $UB; do id "$u" >/dev/null 2>&1 && userdel "$u" 2>/dev/null; done
	for g in $G $G2; do getent group "$g" >/dev/null && groupdel "$g" 2>/dev/null; done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---- users (idempotent: a run killed before its trap leaves them behind)
for g in $G $G2; do getent group "$g" >/dev/null || groupadd "$g" || exit 1; done
for u in $UA $UB; do
	id "$u" >/dev/null 2>&1 || useradd -M -N -d "$T/$u" -s /bin/sh -g "$G" -G "$G2" "$u" || exit 1
	mkdir -p "$T/$u" && chown "$u:$G" "$T/$u"
done
# as USER CMD...: CMD as USER from its own directory, output to $T/out, $T/err
as() {
	local u=$1
	shift
	(cd "$T/$u" && runuser -u "$u" -- env STORM_CONF="$STORM_CONF" PATH="$PATH" "$@")
}

# ---- a cluster whose node01 sends an altered report 6 and report 2 again in
# place of report 12, and whose MM sends strobe 150 altered
STORM_TEST_TAMPER_NODE=node01 STORM_TEST_TAMPER="report=6,replay=12,strobe=150" \
	expect "cluster up" 0 storm cluster up $UP_MODE --nodes 4 --dir "$C"
key_mode=$(stat -c %a "$C/cluster.key")
[ "$key_mode" = 600 ] && ok "cluster key is mode 600" || bad "cluster key mode $key_mode"

# ---- the job runs as its user, with its groups
want_a=$(id "$UA")
expect "alice runs a job" 0 as "$UA" storm run -N 2 -n 2 id
[ "$(sort -u "$T/out")" = "$want_a" ] && [ "$(wc -l <"$T/out")" = 2 ] &&
	ok "id in the job: $want_a" || bad "id in the job: '$(cat "$T/out")', wanted '$want_a'"
grep -q "($G2)" "$T/out" && ok "  ... with the supplementary group" || bad "  ... no $G2 in '$(cat "$T/out")'"
expect "bob runs a job" 0 as "$UB" storm run -N 1 id -un
has "  ... as bob" out "$UB"

# ---- ownership: alice's job, bob may not cancel it, anyone may list it
mkfifo "$T/a.fifo"
as "$UA" storm run -N 2 sh -c 'echo up; exec sleep 600' >"$T/a.fifo" 2>"$T/a.err" &
BG="$BG $!"
APID=$!
exec 7<"$T/a.fifo"
read -r -t 30 line <&7 && [ "$line" = up ] && ok "alice's long job started" || bad "alice's job: '$line'"
job=$(as "$UB" storm jobs --json | python3 -c '
import json, sys
print([j["job"] for j in json.load(sys.stdin)["jobs"] if j["state"] == "RUNNING"][0])')
expect "bob lists the jobs" 0 as "$UB" storm jobs
grep -qE "^ +$job +sh +$UA +RUNNING" "$T/out" && ok "  ... and sees alice's job" || bad "  ... jobs: $(cat "$T/out")"
expect "bob may not cancel alice's job" 1 as "$UB" storm cancel "$job"
has "  ... one line saying why" err "storm: error: cancel $job: job $job belongs to $UA; only its owner or root may cancel it"
[ "$(wc -l <"$T/err")" = 1 ] && ok "  ... exactly one line" || bad "  ... $(wc -l <"$T/err") lines"
expect "  ... and the job still runs" 0 as "$UB" storm jobs
grep -qE "^ +$job .*RUNNING" "$T/out" && ok "  ... RUNNING" || bad "  ... $(cat "$T/out")"
expect "root may cancel alice's job" 0 storm cancel "$job"
cat <&7 >/dev/null
exec 7<&-
wait "$APID"
rc=$?
[ "$rc" = 143 ] && ok "alice's run ends with SIGTERM's status (143)" || bad "alice's run exit $rc"
# the owner may cancel her own
mkfifo "$T/b.fifo"
as "$UA" storm run -N 1 sh -c 'echo up; exec sleep 600' >"$T/b.fifo" 2>"$T/b.err" &
BG="$BG $!"
APID=$!
exec 7<"$T/b.fifo"
read -r -t 30 line <&7
job=$(storm jobs --json | python3 -c '
import json, sys
print([j["job"] for j in json.load(sys.stdin)["jobs"] if j["state"] == "RUNNING"][0])')
expect "alice may cancel her own job" 0 as "$UA" storm cancel "$job"
cat <&7 >/dev/null
exec 7<&-
wait "$APID"

# ---- forged, altered, replayed and relayed control frames
start_munged "$T/foreign" || bad "a second munged (another key) did not start"
# on the MM's own socket, which checks the peer's uid: with --hosts, as if
# logged in on the MM's host
FORGE_CONF=$STORM_CONF
if [ "${STORM_HOSTS:-}" = 1 ]; then
	FORGE_CONF=$T/mmhost.conf
	sed "s|^socket = .*|socket = $(mm_socket)|" "$STORM_CONF" >"$FORGE_CONF"
	chmod 644 "$FORGE_CONF"
fi
forge() { # forge NAME CASE TEXT [USER]: ctl_forge's output has TEXT
	if [ -n "${4:-}" ]; then
		as "$4" ctl_forge --conf "$FORGE_CONF" "$2" >"$T/forge.out" 2>&1
	else
		ctl_forge --conf "$FORGE_CONF" "$2" >"$T/forge.out" 2>&1
	fi
	if grep -qF -- "$3" "$T/forge.out" && grep -qx closed "$T/forge.out"; then ok "$1"; else
		bad "$1: no '$3' (and a close) in:"
		sed 's/^/     | /' "$T/forge.out"
	fi
}
forge "a request without a credential is refused" nocred "request not authenticated: unknown envelope kind" "$UB"
forge "a made-up credential is refused" badcred "request not authenticated: invalid MUNGE credential" "$UB"
forge "a credential from another MUNGE key is refused" "foreign=$T/foreign/munge.socket" \
	"request not authenticated: invalid MUNGE credential" "$UB"
forge "a request altered after signing is refused" altered "request not authenticated: request altered" "$UB"
forge "a replayed credential is refused" replay "request not authenticated: replayed MUNGE credential" "$UB"
forge "a frame with a bad tag is refused" badtag "request not authenticated: frame 2 forged or altered" "$UB"
forge "a replayed frame in a session is refused" seqreplay "frame 2 out of sequence (expected 3): replayed" "$UB"
as "$UA" ctl_forge --conf "$FORGE_CONF" "mint=$T/$UA/frame" >/dev/null 2>&1
uid_a=$(id -u "$UA") uid_b=$(id -u "$UB")
forge "alice's credential sent by bob is refused" "send=$T/$UA/frame" \
	"request not authenticated: credential of uid $uid_a sent by uid $uid_b" "$UB"
for t in "unknown envelope kind" "invalid MUNGE credential" "request altered" \
	"replayed MUNGE credential" "forged or altered (bad tag)" "out of sequence" \
	"credential of uid $uid_a sent by uid $uid_b"; do
	grep "refused a request from uid" "$C/log/mm.log" | grep -qF -- "$t" &&
		ok "  MM logged: $t" || bad "  MM did not log: $t"
done
expect "the MM serves everyone after them" 0 as "$UB" storm run -N 4 true

# ---- altered and replayed messages in global memory (STORM_TEST_TAMPER)
wait_log "$C/log/node01.log" "test hook: report 6 goes out altered" 30 &&
	ok "node01 sent report 6 altered" || bad "node01 did not alter report 6"
wait_log "$C/log/mm.log" "node node01: report slot holds" 30 && grep -q "node node01: report slot holds .* bad tag (forged or altered); ignored" "$C/log/mm.log" &&
	ok "  ... the MM refused and logged it" || bad "  ... the MM did not log it"
wait_log "$C/log/mm.log" "node node01: report 2 is older than the last consumed" 30 &&
	ok "a replayed report is refused and logged" || bad "no replayed report in the MM's log"
wait_log "$C/log/mm.log" "test hook: strobe 150 goes out altered" 30 &&
	ok "the MM sent strobe 150 altered" || bad "the MM did not alter strobe 150"
for n in 00 01 02 03; do
	wait_log "$C/log/node$n.log" "strobe 150 has a bad tag (forged or altered); refused" 30 &&
		ok "  ... node$n refused and logged it" || bad "  ... node$n did not log it"
done
grep -q "is DOWN" "$C/log/mm.log" && bad "a node went DOWN: $(grep 'is DOWN' "$C/log/mm.log")" ||
	ok "no node went DOWN meanwhile"
expect "the cluster still runs jobs on every node" 0 as "$UA" storm run -N 4 -n 4 hostname

# ---- a key file others may read is refused
sed "s|^key_file = .*|key_file = $T/loose.key|" "$C/storm.conf" >"$T/loose.conf"
cp "$C/cluster.key" "$T/loose.key"
chmod 644 "$T/loose.key"
expect "stormnd refuses a key others may read" 1 stormnd -c "$T/loose.conf" -n node00 --no-realtime
has "  ... saying why" err "refusing the cluster key $T/loose.key: group or others may read or write it"
expect "stormmm refuses it too" 1 stormmm -c "$T/loose.conf"
has "  ... saying why" err "refusing the cluster key $T/loose.key"

expect "cluster down" 0 storm cluster down --dir "$C"
[ ! -e "$C/munge" ] && [ ! -e "$C/cluster.key" ] && ok "munged stopped, key removed" || bad "left: $(ls "$C")"

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
