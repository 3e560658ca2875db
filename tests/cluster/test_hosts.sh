#!/bin/bash
# storm cluster up --hosts: the MM and each node daemon on a host that shares
# only the network: its own host name, address, /tmp, state and munged, none
# of the test's files, and storm here reaching the MM by TCP alone. The
# systemd units' ExecStart lines boot the MM and a node daemon again inside
# their hosts. cluster down leaves no namespace, mount or process, also
# after the MM and a host's munged were killed. storm's programs under /tmp
# reach every host; a plain cluster after one of hosts in the same directory
# is a plain one. Needs root.
# Usage: test_hosts.sh BUILD_BIN_DIR   (make hoststest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-hoststest.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
trap cluster_teardown EXIT
trap 'exit 1' INT TERM
if [ "$(id -u)" != 0 ]; then
	echo "FAIL test_hosts.sh needs root (namespaces)"
	exit 1
fi
cd "$T" || exit 1

# anchor HOST: the pid whose namespaces are the host's (its munged)
anchor() { cat "$C/hosts/$1/munge/munged.pid"; }
# none_left PREFIX: no namespace, process in one, or mount of the cluster's
# (the links too: a namespace's veth pair goes only when the kernel gets to
# it, unless cluster down deletes the host's end itself)
none_left() {
	! ip netns list | grep -q -- "^$1-" &&
		! ip -br link | grep -q -- "^$1" &&
		! grep -q -- "$C" /proc/self/mountinfo &&
		! pgrep -f -- "$C/" >/dev/null
}

expect "cluster up --hosts with 3 nodes" 0 storm cluster up --hosts --nodes 3 --dir "$C"
P=$(cut -d' ' -f1 "$C/netns")
expect "storm run here, over TCP" 0 storm run -N 3 -l hostname
for i in 0 1 2; do has_line "  node0$i's host name is its node name" out "$i: node0$i"; done
[ ! -e "$C/mm.sock" ] && ok "  the MM's socket is not here (its host has it)" ||
	bad "  the MM's socket is not here"
[ "$(on_host mm hostname)" = mm ] && ok "the MM's host is 'mm'" || bad "the MM's host is 'mm'"
on_host mm test -S "$C/mm.sock" && ok "  its socket is in its own $C" || bad "  its socket is in its own $C"
grep -qx "ctl_address = 10\.[0-9]*\.255\.253:[0-9]*" "$C/storm.conf" &&
	ok "  ctl_address is the MM host's address" || bad "  ctl_address: $(grep ctl_address "$C/storm.conf")"

echo secret >"$T/mine"
expect "a rank sees none of this machine's /tmp" 0 storm run -N 3 -l sh -c "test -e '$T/mine' && echo seen || echo private"
[ "$(grep -c ': private$' "$T/out")" = 3 ] && ok "  on all 3 nodes" || bad "  on all 3 nodes"
expect "nor another node's" 0 storm run -N 3 -l sh -c 'echo "$STORM_RANK" >/tmp/who; cat /tmp/who'
for i in 0 1 2; do has_line "  rank $i reads its own /tmp/who" out "$i: $i"; done
# once every rank has written (the job ended), each host's file still holds
# its own rank: one /tmp shared by two would hold the last writer's
for i in 0 1 2; do
	[ "$(cat "$C/hosts/node0$i/tmp/who")" = "$i" ] && ok "  node0$i's /tmp is DIR/hosts/node0$i/tmp here, its own" ||
		bad "  node0$i's /tmp is DIR/hosts/node0$i/tmp here, its own: '$(cat "$C/hosts/node0$i/tmp/who")'"
done
expect "each host its own state directory" 0 storm run -N 3 -l sh -c "ls '$C/state'"
for i in 0 1 2; do has_line "  node0$i has only its own" out "$i: node0$i"; done
n=0
for h in mm node00 node01 node02; do
	[ "$(on_host "$h" sh -c 'ls "$0/munge/munge.socket" >/dev/null && munge -S "$0/munge/munge.socket" -n | unmunge -S "$0/munge/munge.socket" >/dev/null && echo ok' "$C")" = ok ] && n=$((n + 1))
done
[ $n = 4 ] && ok "each host has a munged of its own ($n)" || bad "each host has a munged of its own ($n of 4)"
on_host node00 munge -S "$C/munge/munge.socket" -n | unmunge -S "$C/munge/munge.socket" >/dev/null &&
	ok "  with the one key: node00's credential decodes here" || bad "  node00's credential decodes here"
expect "storm inside a node's host reaches the MM over TCP" 0 on_host node02 env STORM_CONF="$C/storm.conf" storm jobs

# ---- the units' ExecStart lines, run where systemd would start them: a
# node daemon and the MM killed, then booted again by their units' commands
# (the paths a make install would write: bin here, the host's /etc/storm in
# its own $C/etc)
unit_cmd() { # UNIT HOST: its ExecStart, %l the host's name
	sed -n -e "s|@BINDIR@|$BIN|g" -e "s|@SYSCONFDIR@|$C/etc|g" -e 's/^ExecStart=//p' \
		"$SRC/systemd/$1.service.in" | sed "s/%l/$(on_host "$2" hostname -s)/g"
}
for h in mm node01; do
	mkdir -p "$C/hosts/$h/etc/storm"
	cp "$C/hosts/$h/storm.conf" "$C/hosts/$h/cluster.key" "$C/hosts/$h/etc/storm/"
done
ND=$(awk '$2 == "node01" { p = $1 } END { print p }' "$C/pids")
MM=$(awk '$2 == "mm" { p = $1 } END { print p }' "$C/pids")
kill -9 "$ND" "$MM"
gone "$ND" && gone "$MM"
cmd=$(unit_cmd stormnd node01)
[ "$cmd" = "$BIN/stormnd -c $C/etc/storm/storm.conf -n node01" ] && ok "stormnd.service runs '$cmd'" ||
	bad "stormnd.service's ExecStart: '$cmd'"
(on_host node01 setsid sh -c "exec $cmd >>'$C/log/node01.log' 2>&1 </dev/null" &)
cmd=$(unit_cmd stormmm mm)
(on_host mm setsid sh -c "exec $cmd >>'$C/log/mm.log' 2>&1 </dev/null" &)
# the second MM's log line that it listens
wait_count "$C/log/mm.log" "taking control connections on" 2 30 >/dev/null
storm cluster status --wait "$(patience 30)" >"$T/out" 2>&1 && ok "  booted by the units' commands: every node UP again" ||
	{ bad "  booted by the units' commands: every node UP"; cat "$T/out"; }
expect "  and they run a job" 0 storm run -N 3 true

# ---- down after failures: the MM killed, a host's munged killed
kill -9 "$(pgrep -f "stormmm -c $C/etc/storm/storm.conf")" "$(anchor node02)"
expect "cluster down after the MM and node02's munged were killed" 0 storm cluster down --dir "$C"
none_left "$P" && ok "  no namespace, mount or process of the cluster is left" ||
	bad "  left: $(ip netns list | grep -- "^$P-") $(pgrep -af -- "$C/")"
[ -z "$(ls "$C/hosts/node00")" ] || [ "$(ls "$C/hosts/node00")" = log ] &&
	ok "  each host keeps only its log" || bad "  each host keeps only its log: $(ls "$C/hosts/node00")"
[ -s "$C/log/node00.log" ] && ok "  read here through DIR/log" || bad "  node00's log through DIR/log"

# ---- a second up in the same directory, and down from a half-made one.
# The old MM's address, its bridge gone, routes wherever this machine's
# default route goes, where something may answer (a CI network did): an
# address of this machine's own, whose listener takes each connection and
# hangs up, stands in for it
old=$(sed -n 's/^ctl_address = //p' "$C/storm.conf")
ip addr add "${old%:*}/32" dev lo
trap 'ip addr del "${old%:*}/32" dev lo 2>/dev/null; cluster_teardown' EXIT
coproc ANSWER { exec timeout 300 python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2])))
s.listen(16)
print("ready", flush=True)
while True:
    s.accept()[0].close()' "${old%:*}" "${old##*:}"; }
answer=$ANSWER_PID
read -r -t 30 ready <&"${ANSWER[0]}"
[ "${ready:-}" = ready ] && ok "  something answers on the old MM's address $old" ||
	bad "  a listener on the old MM's address $old"
expect "cluster up --hosts again in the same directory" 0 storm cluster up --hosts --nodes 2 --dir "$C"
kill "$answer" 2>/dev/null
wait "$answer" 2>/dev/null
ip addr del "${old%:*}/32" dev lo
trap cluster_teardown EXIT
kill -9 "$(anchor node01)"
kill -9 "$(awk '$2 == "node01" { p = $1 } END { print p }' "$C/pids")"
expect "cluster down" 0 storm cluster down --dir "$C"
none_left "$P" && ok "  nothing is left" || bad "  left: $(ip netns list | grep -- "^$P-") $(pgrep -af -- "$C/")"
expect "--hosts with --netns is refused" 2 storm cluster up --hosts --netns --nodes 2 --dir "$C"

# ---- storm's programs under /tmp (a clone or an install there), which each
# host's own /tmp hides: the hosts are shown them, read-only, beside bin
# (a build's or an install's lib), and still nothing else of this /tmp
I=$T/inst
mkdir -p "$I/bin" "$I/lib"
cp -a "$BIN/storm" "$BIN/storm-cluster" "$BIN/stormmm" "$BIN/stormnd" "$I/bin/"
echo lib >"$I/lib/beside"
expect "cluster up --hosts with storm's programs in $I/bin" 0 "$I/bin/storm" cluster up --hosts --nodes 2 --dir "$C"
pgrep -f -- "^$I/bin/stormnd -c $C/storm.conf" >/dev/null && ok "  its daemons are those copies" ||
	bad "  its daemons are those copies: $(pgrep -af -- "stormnd -c $C/")"
expect "  a job runs" 0 storm run -N 2 -l sh -c "cat '$I/lib/beside'; test -e '$T/mine' && echo seen || echo private; touch '$I/bin/x' 2>/dev/null && echo written || echo read-only"
for i in 0 1; do
	has_line "  node0$i sees the lib beside bin" out "$i: lib"
	has_line "  node0$i still sees none of this machine's /tmp" out "$i: private"
	has_line "  node0$i cannot write storm's programs" out "$i: read-only"
done
expect "  cluster down" 0 "$I/bin/storm" cluster down --dir "$C"
none_left "$P" && ok "  nothing is left" || bad "  left: $(ip netns list | grep -- "^$P-") $(pgrep -af -- "$C/")"

# ---- a plain cluster in a directory a cluster of hosts was taken down in:
# what the hosts kept (their logs) must not make it one of hosts
expect "cluster up --hosts with 4 nodes" 0 storm cluster up --hosts --nodes 4 --dir "$C"
expect "  and down" 0 storm cluster down --dir "$C"
expect "then a plain cluster up in the same directory" 0 storm cluster up --nodes 4 --dir "$C"
[ ! -L "$C/log/mm.log" ] && [ ! -e "$C/hosts" ] && ok "  its logs are its own, not the old hosts'" ||
	bad "  its logs are its own: $(ls -l "$C/log/mm.log") $(ls "$C/hosts" 2>&1)"
MM=$(awk '$2 == "mm" { p = $1 } END { print p }' "$C/pids")
kill -9 "$MM"
gone "$MM"
expect "  its MM, killed, restarts" 0 storm cluster restart mm
expect "  a job runs" 0 storm run -N 4 true
all=$(awk '{ print $1 }' "$C/pids")
expect "  cluster down" 0 storm cluster down --dir "$C"
has "  says it was up" out "cluster down ("
left=
for p in $all; do gone "$p" 5 || left="$left $p"; done
[ -z "$left" ] && ok "  every daemon is gone" || bad "  still running:$left"
echo "$checks checks, $fails failed"
[ $fails = 0 ]
