#!/bin/sh
# In the guest, after the module's own test: a one-node storm cluster whose
# stormnd finds /dev/storm, and two jobs that it gang-schedules through the
# module (each job fills the node, so they take turns in two rows);
# storm_guest observe judges them from the module's ring and the ranks' run
# time. Then the same with the cgroup v2 freezer. Prints PASS/FAIL lines.
#     guest_cluster.sh SWITCH      (signals or freezer)
set -u
switch=$1
dir=/tmp/storm-0
fail() {
	echo "FAIL: $switch: $*"
	for f in "$dir"/log/*.log; do
		echo "--- $f"
		tail -n 40 "$f"
	done
	storm cluster down >/dev/null 2>&1
	exit 1
}
# 50 ms slices: the emulated CPU runs the daemons some tens of times slower;
# on a loaded host joining the fabric alone has taken the guest's MM 23 s,
# so the wait for the node is a bound against a hang only
storm cluster up --nodes 1 --cpus 2 --timeslice-us 50000 --switch "$switch" --realtime \
	--up-timeout 900 \
	>/tmp/up.out 2>&1 || {
	rc=$?
	# the console keeps lines that say whose they are
	sed 's/^/guest: up: /' /tmp/up.out
	fail "storm cluster up: exit $rc"
}
if grep -q "switching through /dev/storm" "$dir/log/node00.log"; then
	echo "PASS: $switch: stormnd switches through /dev/storm"
else
	fail "stormnd did not take /dev/storm"
fi
a=$(storm submit --parsable -N 1 -n 2 -o /tmp/a.out /storm_guest spin A) || fail "submit A"
b=$(storm submit --parsable -N 1 -n 2 -o /tmp/b.out /storm_guest spin B) || fail "submit B"
/storm_guest observe "${a%%.*}" A "${b%%.*}" B 40 || fail "observing jobs $a and $b"
# with the freezer, the job out of its row sits in a frozen cgroup (both may
# be for the instant of a switch); with signals no cgroup is frozen. The
# files are read one after the other, and a switch between two reads shows
# each job running: with the freezer, a few reads find a consistent one
for try in 1 2 3 4 5 6 7 8 9 10; do
	frozen=$(find /sys/fs/cgroup -name cgroup.freeze | xargs cat | grep -c '^1$')
	[ "$switch:$frozen" != freezer:0 ] && break
done
case "$switch:$frozen" in
freezer:1 | freezer:2 | signals:0) echo "PASS: $switch: $frozen job cgroups frozen" ;;
*)
	# which cgroups, in what state, and what the daemon saw
	find /sys/fs/cgroup -name cgroup.freeze | while read -r f; do
		echo "note: $f: $(cat "$f"), $(tr '\n' ' ' <"${f%/*}/cgroup.events")," \
			"procs $(tr '\n' ' ' <"${f%/*}/cgroup.procs")"
	done
	dmesg | grep -i storm | tail -n 20 | sed 's/^/note: dmesg: /'
	fail "$frozen job cgroups frozen"
	;;
esac
storm cancel "$a" "$b" || fail "cancel"
storm cluster down >/dev/null || fail "storm cluster down"
# the controller's close continues whatever it left stopped; nothing is left
if left=$(/storm_guest ranks A) && left=$(/storm_guest ranks B); then
	echo "PASS: $switch: no rank outlives the cluster"
else
	fail "$left ranks left"
fi
