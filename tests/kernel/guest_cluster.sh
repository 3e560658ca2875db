#!/bin/sh
# In the guest, after the module's own test: a one-node storm cluster whose
# stormnd finds /dev/storm, and two jobs that it gang-schedules through the
# module (each job fills the node, so they take turns in two rows);
# storm_guest observe judges them from the module's ring and the ranks' run
# time. Then an allocation (storm alloc) whose two steps run at once beside
# a job, each step registered on its own and switched with the allocation's
# turn; with signals, a checkpoint of a job beside another (its ranks stay
# stopped through the slots that come while it is held) and its restart.
# Then the same with the cgroup v2 freezer. Prints PASS/FAIL lines.
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
# so the wait for the node is a bound against a hang only. The checkpoint
# below: the most slices ahead (8), and the test hook ckpt_deaf_for: the
# node hears no strobe for 8 slices after a Checkpoint command, as one that
# lags, so the module plays the entries pushed before it (the job's slots
# among them) while the job is held
STORM_TEST_TAMPER=ckpt_deaf_for=8 STORM_TEST_TAMPER_NODE=node00 \
	storm cluster up --nodes 1 --cpus 2 --timeslice-us 50000 --switch "$switch" --realtime \
	--ahead 8 --up-timeout 900 \
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

# An allocation holding the node in one row, two steps in it at once (a
# rank each, tag S), and a job filling the node in the other row: the
# module holds three registrations, each step its own under the
# allocation's run id, and both steps stop and continue with its turn.
# The allocation's command says its id first (through a FIFO: read as it
# comes, not polled)
rm -f /tmp/alloc.fifo
mkfifo /tmp/alloc.fifo || fail "mkfifo"
storm alloc -N 1 -J steps sh -c 'echo "$STORM_JOBID"
	storm run -n 1 /storm_guest spin S & storm run -n 1 /storm_guest spin S & wait' \
	</dev/null >/tmp/alloc.fifo 2>/tmp/alloc.err &
apid=$!
exec 3</tmp/alloc.fifo
read -r alloc <&3 || fail "storm alloc: $(tail -n 1 /tmp/alloc.err)"
e=$(storm submit --parsable -N 1 -n 2 -o /tmp/e.out /storm_guest spin E) || fail "submit E"
/storm_guest observe "$alloc" S "${e%%.*}" E 40 3 ||
	fail "observing allocation $alloc's two steps and job $e"
storm cancel "$alloc" "$e" || fail "cancel"
wait $apid # storm alloc ends with its allocation (status 1: revoked)
exec 3<&-

if [ "$switch" = signals ]; then
	# A checkpoint of job C (two ranks that compute, then wait at a gate)
	# while job D fills the other row: ckptwatch runs `storm checkpoint`
	# and samples C's ranks; the node, deaf for 8 slices (the test hook),
	# starts the dump late. Then C is cancelled, the gate opened, and the
	# restart must print the uninterrupted computation's value from each
	# rank. (With the freezer, stormnd stops a job for its checkpoint by
	# SIGSTOP, which a thaw does not undo: signals are where a continue
	# would show.)
	rm -f /tmp/gate
	d=$(storm submit --parsable -N 1 -n 2 -o /tmp/d.out /storm_guest spin D) || fail "submit D"
	storm run -N 1 -n 2 /storm_guest spin C /tmp/gate </dev/null >/tmp/c.out 2>&1 &
	cpid=$!
	/storm_guest ckptwatch C >/tmp/cw.out 2>&1
	rc=$?
	sed 's/^checkpoint /guest: checkpoint /' /tmp/cw.out
	[ $rc = 0 ] || fail "checkpoint of job C beside job $d"
	# the last checkpoint ckptwatch took (it takes another when none of
	# the job's slots came while the first held it)
	set -- $(sed -n 's/^checkpoint \([0-9]*\) of job \([0-9]*\) .*/\1 \2/p' /tmp/cw.out | tail -n 1)
	[ $# = 2 ] || fail "storm checkpoint printed no checkpoint id"
	ck=$1 c=$2
	storm cancel "$c" || fail "cancel job $c"
	wait $cpid # its storm run ends with the job
	: >/tmp/gate
	storm restart "$ck" </dev/null >/tmp/r.out 2>&1 ||
		fail "storm restart $ck: exit $?: $(tail -n 3 /tmp/r.out | tr '\n' ' ')"
	want=$(/storm_guest sum)
	got=$(grep -c "^$want\$" /tmp/r.out)
	[ "$got" = 2 ] ||
		fail "restart of checkpoint $ck: $got of 2 ranks printed '$want': $(head -n 3 /tmp/r.out | tr '\n' ' ')"
	echo "PASS: $switch: checkpoint $ck of job $c restarted: each rank printed '$want'"
	storm cancel "$d" || fail "cancel job $d"
fi

storm cluster down >/dev/null || fail "storm cluster down"
# the controller's close continues whatever it left stopped; nothing is left
for tag in A B S E C D; do
	left=$(/storm_guest ranks $tag) || fail "$left ranks of $tag left"
done
echo "PASS: $switch: no rank outlives the cluster"
