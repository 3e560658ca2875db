#!/bin/bash
# The checkpointer on its own (storm-ckpt, libstormckpt): a program with a
# 64 MiB heap, an open file it writes, a signal handler and clock_gettime
# pacing is checkpointed several times mid-run (left running, and killed),
# restored from each image, and must end with output byte-identical to an
# uninterrupted run; so must a pthread and an OpenMP program. Corrupted and
# truncated images must fail with a clear error naming the file and the
# section.
# usage: tests/ckpt/test_ckpt.sh BINDIR
set -u
B=$(cd "$1" && pwd)
CK=$B/storm-ckpt
PROG=$B/ckpt_prog
. "$(dirname "$0")/../cluster/lib.sh"
T=$(mktemp -d /tmp/ckpt-test.XXXXXX)
checks=0 fails=0
started=()
cleanup() {
	fail_report
	for p in "${started[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
# descriptors this shell got from whatever started it would reach the
# programs, and one of another process's pipe is (rightly) refused
for fd in /proc/$$/fd/*; do
	fd=${fd##*/}
	[ "$fd" -gt 2 ] && [ "$fd" != 255 ] && eval "exec $fd>&-"
done

# A program dumped at step K holds there (hold K,...) until the test creates
# gate.K in $T once the dump is done: it is still running however slow the
# machine, and a restore of an image taken while it held finds the gate open.
# gone_gates: a new program's steps held again
gone_gates() { rm -f "$T"/gate.*; }
# the pid a restore says it made, from its stderr FILE
new_pid() { sed -n 's/.*as pid \([0-9]*\).*/\1/p' "$1"; }
# restore_bg WHAT ERRFILE IMAGE [OPTIONS...]: storm-ckpt restore in the
# background (R), once it says so the restored process (NP)
restore_bg() {
	local what=$1 errf=$2
	shift 2
	"$CK" restore "$@" 2>"$errf" &
	R=$!
	started+=("$R")
	wait_log "$errf" "as pid" 60 || bad "$what started"
	NP=$(new_pid "$errf")
	started+=("$NP")
}
STEPS=400 HEAP=64
cd "$T" || exit 1
"$PROG" $STEPS $HEAP ref.f >ref.out 2>ref.err || { echo "FAIL reference run"; exit 1; }

# 1. run; dump it while it keeps running, then dump and kill it
"$PROG" $STEPS $HEAP run.f 5 hold 20,30,40,80 >run.out 2>run.err &
P=$!
started+=("$P")
wait_log run.out "step 20 " 60 || bad "program reached step 20"
expect "dump a running process (left running)" 0 "$CK" dump "$P" img1
: >gate.20
wait_log run.out "step 30 " 60 || bad "program kept running after the dump"
# its memory read from a copy-on-write fork while it runs on
expect "dump from a snapshot" 0 "$CK" dump "$P" img1s --snapshot
has "the snapshot was taken" err "memory read from a snapshot"
: >gate.30
wait_log run.out "step 40 " 60 || bad "program kept running after the snapshot dump"
expect "dump and kill" 0 "$CK" dump "$P" img2 --kill
wait "$P" 2>/dev/null
: >gate.40
[ -s img1 ] && [ -s img2 ] && ok "images written" || bad "images written"

# 2. restore img2; dump and kill the restored process; restore that image
restore_bg "restore img2" r2.err img2
wait_log run.out "step 80 " 60 || bad "restored process runs on"
expect "dump the restored process" 0 "$CK" dump "$NP" img3 --kill
wait "$R"
[ $? = 137 ] && ok "restored process was killed" || bad "restored process was killed"
: >gate.80
expect "restore the second-generation image to the end" 0 "$CK" restore img3
if cmp -s run.out ref.out && cmp -s run.f ref.f; then
	ok "output after 2 kills and 2 restores is byte-identical"
else
	bad "output after 2 kills and 2 restores is byte-identical"
	diff ref.out run.out | head -5
fi

# 3. the first image (taken while it ran on) restores to the same end: its
# output file, written since without O_APPEND, is cut back to its size at
# the checkpoint, which the restore says, and the bytes cut are kept beside it
cp run.f run.f.before
expect "restore the image of a process that ran on" 0 "$CK" restore img1
if cmp -s run.out ref.out && cmp -s run.f ref.f; then
	ok "restart from the earliest image is byte-identical too"
else
	bad "restart from the earliest image is byte-identical too"
fi
has "the cut is said, naming the file" err "restore: $T/run.f: cut back from $(stat -c %s run.f.before) to "
kept=$(sed -n "s|.*$T/run.f: cut back from [0-9]* to \([0-9]*\) bytes (the size at the checkpoint); the [0-9]* bytes cut are kept in \(.*\)|\1 \2|p" "$T/err")
if [ -n "$kept" ] && cmp -s <(tail -c +$((${kept%% *} + 1)) run.f.before) "${kept#* }"; then
	ok "the bytes cut are kept in ${kept#* }"
else
	bad "the bytes cut are kept ($kept)"
fi
# the snapshot's image too
expect "restore the image read from a snapshot" 0 "$CK" restore img1s
if cmp -s run.out ref.out && cmp -s run.f ref.f; then
	ok "restart from the snapshot image is byte-identical too"
else
	bad "restart from the snapshot image is byte-identical too"
fi
expect "verify a good image" 0 "$CK" verify img3

# held still, dumped from itself and from a snapshot: the same pages (the
# fork is faithful, and the syscall gadget is not in the snapshot's text)
# on one CPU: the kernel rewrites the rseq area's cpu ids whenever it runs
# (our injected calls too), which would differ between dumps otherwise
taskset -c 0 "$PROG" 100000 16 still.f 10 sleep >still.out 2>&1 &
S=$!
started+=("$S")
wait_log still.out "step 5 " 60 || bad "second program started"
kill -STOP "$S"
# stopped for good first (a dump of a process with its SIGSTOP still
# pending lets it run on a moment before the stop takes)
wait_stopped "$S" 5 || bad "the held program stopped"
"$CK" dump "$S" still1 2>/dev/null
"$CK" dump "$S" still2 --snapshot 2>/dev/null
kill -9 "$S"
pages() {
	python3 -c '
import struct,sys
b=open(sys.argv[1],"rb").read()
n=struct.unpack_from("<I",b,12)[0]
for i in range(n):
    t,idx,o,l,h=struct.unpack_from("<IIQQQ",b,40+32*i)
    if t==4: print(idx,l,h)' "$1"
}
if [ -n "$(pages still1)" ] && [ "$(pages still1)" = "$(pages still2)" ]; then
	ok "a snapshot saves the same pages as the stopped process"
else
	bad "a snapshot saves the same pages as the stopped process"
	diff <(pages still1) <(pages still2) | head -5
fi

# 5. descriptors: a pipe with both ends and bytes in it, an eventfd, a
# timerfd, a signalfd, nested epolls over them, memfds, shared anonymous
# memory mapped twice, a FIFO, a directory, devices; restored working
FDS=$B/fds_prog
touch fds.marker
"$FDS" objects 400 >fref.out 2>&1 || bad "descriptor program: reference run"
gone_gates
"$FDS" objects 400 hold 60,120,180 >frun.out 2>&1 &
P=$!
started+=("$P")
wait_log frun.out "step 60 " 60 || bad "descriptor program reached step 60"
expect "dump a process holding pipes, epolls, memfds... (left running)" 0 "$CK" dump "$P" fimg1
: >gate.60
wait_log frun.out "step 120 " 60 || bad "it kept running after the dump"
expect "a memfd's content keeps it stopped: no snapshot" 0 "$CK" dump "$P" fimg1s --snapshot
grep -q "memory read from a snapshot" "$T/err" && bad "no snapshot with a memfd" ||
	ok "no snapshot with a memfd"
: >gate.120
wait_log frun.out "step 180 " 60 || bad "it kept running after the second dump"
expect "dump and kill it" 0 "$CK" dump "$P" fimg2 --kill
wait "$P" 2>/dev/null
: >gate.180
expect "restore it to the end" 0 "$CK" restore fimg2
if cmp -s frun.out fref.out; then
	ok "its output is byte-identical: every object works after the restore"
else
	bad "its output is byte-identical: every object works after the restore"
	diff fref.out frun.out | head -5
fi
expect "restore the image taken while it ran on" 0 "$CK" restore fimg1
cmp -s frun.out fref.out && ok "from that image too" || bad "from that image too"

# refused: the dump fails naming the pid, the fd and what it is, and the
# process runs on untouched
refused() { # NAME ARGS... ; then the text the error must hold
	local name=$1 want=$2
	shift 2
	"$FDS" "$@" >s.out 2>&1 &
	P=$!
	started+=("$P")
	wait_log s.out "tick 3" 60 || bad "$name: program started"
	expect "$name: the dump fails" 1 "$CK" dump "$P" simg
	has "$name: the error names pid, fd and kind" err "pid $P: $want"
	[ "$(wc -l <"$T/err")" = 1 ] && ok "$name: one line" || bad "$name: one line"
	[ ! -e simg ] && [ ! -e simg.tmp ] && ok "$name: no image left" || bad "$name: no image left"
	local n
	n=$(tail -n1 s.out | sed 's/tick //')
	if wait_log s.out "tick $((n + 3))" 60 && ! grep -q '^State:.*[tT] (' /proc/$P/status; then
		ok "$name: it runs on"
	else
		bad "$name: it runs on"
	fi
	kill -9 "$P"
	wait "$P" 2>/dev/null
}
refused "TCP socket" "fd 3 is a TCP socket (127.0.0.1:" tcp
has "TCP socket: the reason" err "-> 127.0.0.1:"
has "TCP socket: why" err "sockets cannot be checkpointed"
refused "Unix socket" "fd 3 is a Unix datagram socket (bound to fds.sock): sockets cannot be checkpointed" unix
refused "SysV shared memory" "area 0x" sysv
has "SysV shared memory: why" err "is SysV shared memory (key 0x00000000): SysV shared memory cannot be checkpointed"
refused "a pipe another process holds" "fd 5 is a pipe (pipe:[" tick 5> >(cat >/dev/null)
has "the pipe's other holder is named" err "also held by pid"
# state outside the descriptors that a restore could not make again
refused "a POSIX timer" "it holds 1 POSIX timer (timer_create, clock 1; /proc/" ptimer
has "POSIX timer: why" err "POSIX timers are not restored"
refused "a seccomp filter" "it runs under seccomp (thread " seccomp
has "seccomp: why" err ": filter mode, 1 filter; the checkpointer 0): seccomp filters are not restored"

# an O_APPEND file (a log) that another process appends to after the
# checkpoint keeps those bytes: the restore leaves it as it is, says so,
# and the restored process appends after them
: >app.log
"$FDS" tick >>app.log 2>&1 &
P=$!
started+=("$P")
wait_log app.log "tick 3" 60 || bad "O_APPEND: program started"
expect "O_APPEND: dump and kill" 0 "$CK" dump "$P" aimg --kill
wait "$P" 2>/dev/null
at=$(stat -c %s app.log)
echo "another writer" >>app.log
restore_bg "O_APPEND: restore" ar.err aimg
last=$(head -c "$at" app.log | tail -n1 | sed 's/tick //')
wait_log app.log "tick $((last + 3))" 60 || bad "O_APPEND: the restored process runs on"
kill -9 "$NP" 2>/dev/null
wait "$R" 2>/dev/null
grep -qx "another writer" app.log && ok "O_APPEND: the other writer's line is kept" ||
	bad "O_APPEND: the other writer's line is kept"
[ "$(grep -A1 -x "another writer" app.log | tail -n1)" = "tick $((last + 1))" ] &&
	ok "O_APPEND: the restored process appends after it" ||
	bad "O_APPEND: the restored process appends after it: $(grep -A1 -x "another writer" app.log | paste -sd' ')"
grep -qF "restore: $T/app.log: opened O_APPEND; left as it is ($((at + 15)) bytes, $at at the checkpoint)" ar.err &&
	ok "O_APPEND: the restore says it left the file as it is" ||
	{ bad "O_APPEND: the restore says it left the file as it is"; head -3 ar.err; }

# 4. damaged images: a clear one-line error naming the file and the section
size=$(stat -c %s img3)
cp img3 flipped
# one byte inverted (writing a fixed byte may leave it as it was)
python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0xff]))' flipped $((size / 3))
expect "restore a corrupted image fails" 1 "$CK" restore flipped
has "corruption error names file and section" err "flipped: section pages["
has "corruption error says checksum" err "checksum mismatch"
# (besides what it did to the files before the pages were found damaged:
# run.f, written since img3, cut back, its bytes kept)
[ "$(grep -vc '^storm-ckpt: restore: ' "$T/err")" = 1 ] && ok "one-line error" || bad "one-line error"
has "what the failed restore did to the files is said" err "restore: $T/run.f: cut back from "
expect "verify finds the corruption" 1 "$CK" verify flipped
has "verify names the section" err "flipped: section pages["
head -c $((size / 2)) img3 >truncated
expect "restore a truncated image fails" 1 "$CK" restore truncated
has "truncation error names file and section" err "truncated: truncated in section pages["
head -c 20 img3 >stub
expect "restore a 20-byte stub fails" 1 "$CK" restore stub
has "stub error names the header" err "stub: header: truncated"
cp img3 hdrflip
printf '\x01' | dd of=hdrflip bs=1 seek=9 conv=notrunc status=none
expect "restore with a damaged header fails" 1 "$CK" restore hdrflip
has "header error" err "hdrflip: header: checksum mismatch"
# the section table damaged behind a valid header checksum
cp img3 metaflip
off=$(python3 -c '
import struct,sys
b=open("img3","rb").read()
n=struct.unpack_from("<I",b,12)[0]
for i in range(n):
    t,idx,o,l,h=struct.unpack_from("<IIQQQ",b,40+32*i)
    if t==1: print(o+l//2)')
printf '\xff' | dd of=metaflip bs=1 seek="$off" conv=notrunc status=none
expect "restore with damaged metadata fails" 1 "$CK" restore metaflip
has "metadata error names the section" err "metaflip: section meta: checksum mismatch"
expect "dump of a missing process fails" 1 "$CK" dump 999999999 nothing
has "missing process error" err "no such process"

# 5. multi-threaded programs: a pthread one (a mutex, a barrier each step, a
# thread asleep in pthread_cond_wait, signals pending for a thread and for
# the process) and an OpenMP one (a parallel for with a reduction, a
# barrier). Each is dumped running, from a snapshot and killed; every image
# restores to an output byte-identical to an uninterrupted run, with its
# original pid and tids where free and with others where they are taken.
tids() { ls "/proc/$1/task" 2>/dev/null | sort -n | paste -sd' '; }
# the states of a process's threads, each once (T: stopped)
states() { for s in /proc/"$1"/task/*/stat; do sed 's/.*) \([A-Z]\).*/\1/' "$s"; done | sort -u | paste -sd' '; }
# garble FILE TEXT: the bytes from the line starting with TEXT on are
# overwritten (the size stays): a restore that resumes before that line
# must write them all again
garble() {
	python3 -c '
import sys
b = open(sys.argv[1], "rb").read()
i = b.find(b"\n" + sys.argv[2].encode()) + 1
open(sys.argv[1], "r+b").write(b[:i] + b"#" * (len(b) - i)) if i else sys.exit(1)' "$1" "$2"
}
same() {
	if cmp -s "$2" "$3"; then ok "$1"; else
		bad "$1"
		diff "$3" "$2" | head -5
	fi
}

# threaded NAME THREADS PROGRAM ARGS...
threaded() {
	local n=$1 nt=$2
	shift 2
	"$@" >"$n.ref" 2>/dev/null || bad "$n: reference run"
	gone_gates
	"$@" hold 20,30,40 >"$n.out" 2>"$n.err" &
	local P=$! R NP orig
	started+=("$P")
	wait_log "$n.out" "step 20 " 60 || bad "$n: program reached step 20"
	expect "$n: dump of $nt threads, left running" 0 "$CK" dump "$P" "$n.img1"
	: >gate.20
	wait_log "$n.out" "step 30 " 60 || bad "$n: program kept running after the dump"
	expect "$n: dump from a snapshot" 0 "$CK" dump "$P" "$n.img1s" --snapshot
	has "$n: the snapshot was taken" err "memory read from a snapshot"
	: >gate.30
	wait_log "$n.out" "step 40 " 60 || bad "$n: program kept running after the snapshot"
	orig=$(tids "$P")
	[ "$(wc -w <<<"$orig")" = "$nt" ] && ok "$n: $nt threads" || bad "$n: $nt threads: $orig"
	expect "$n: dump and kill" 0 "$CK" dump "$P" "$n.img2" --kill
	wait "$P" 2>/dev/null
	: >gate.40

	# the killed one's pid and tids are free: it gets them back (looked at
	# while it is held stopped, then continued)
	restore_bg "$n: restore of the killed one" "$n.r2" "$n.img2" --stopped
	[ "$(tids "$NP")" = "$orig" ] && ok "$n: restored with its pid and tids" ||
		bad "$n: restored with its pid and tids: $orig became $(tids "$NP")"
	kill -CONT "$NP"
	wait "$R" && ok "$n: the restored process ended well" || bad "$n: the restored process ended well"
	same "$n: output after a kill and a restore is byte-identical" "$n.out" "$n.ref"

	# the snapshot's image, left stopped: it holds the pid and tids meanwhile
	restore_bg "$n: restore of the snapshot image" "$n.r3" "$n.img1s" --stopped
	# let go with a SIGSTOP pending: each thread takes it before it runs
	wait_stopped "$NP" 5
	[ "$(tids "$NP" | wc -w)" = "$nt" ] && [ "$(states "$NP")" = T ] &&
		ok "$n: restored stopped, every thread" ||
		bad "$n: restored stopped, every thread: $(tids "$NP") in $(states "$NP")"
	# the first image while they are taken: a new pid and tids
	expect "$n: restore while its pid and tids are taken" 0 "$CK" restore "$n.img1"
	[ "$(new_pid "$T/err")" != "$P" ] && ok "$n: it got another pid" || bad "$n: it got another pid"
	same "$n: with other tids, the output is byte-identical" "$n.out" "$n.ref"
	# the stopped one resumes before step 40: it writes from there on again
	garble "$n.out" "step 40 " || bad "$n: output reached step 40"
	kill -CONT "$NP"
	wait "$R" && ok "$n: continued, it ended well" || bad "$n: continued, it ended well"
	same "$n: from the snapshot's image, continued, the output is byte-identical" "$n.out" "$n.ref"
}
threaded pthread 5 "$B/ckpt_threads" 90 10
# as another user, as storm restores a job's ranks: the process may not
# choose its tids, the restorer picks them (ns_last_pid, which another fork
# on the machine may beat: the tids are not compared)
# (the directory writable too: a restore keeps the bytes it cuts from a file
# written since the checkpoint in a file beside it, or cuts nothing and fails)
chmod 1777 "$T" && chmod 666 pthread.out pthread.err
restore_bg "pthread: restore as another user" pthread.r5 pthread.img2 --user 65534:65534 \
	--stopped
[ "$(awk '/^Uid:/ { print $2 }' "/proc/$NP/status")" = 65534 ] &&
	[ "$(tids "$NP" | wc -w)" = 5 ] && ok "pthread: restored as another user, every thread" ||
	bad "pthread: restored as another user, every thread"
kill -CONT "$NP"
wait "$R" && ok "pthread: as another user, it ended well" ||
	bad "pthread: as another user, it ended well"
same "pthread: as another user, the output is byte-identical" pthread.out pthread.ref
threaded openmp 4 "$B/ckpt_omp" 90 10

# CPU affinity, scheduling policy and nice, each thread's own, come back
# equal (a restored thread would have the restorer's otherwise)
sched_of() { # each thread's CPUs, policy and nice, in tid order
	local t
	for t in $(ls "/proc/$1/task" | sort -n); do
		echo "$(taskset -pc "$t" | sed 's/.*: //') $(chrt -p "$t" | sed -n 's/.*policy: //p')" \
			"nice $(sed 's/.*) //' "/proc/$1/task/$t/stat" | awk '{ print $17 }')"
	done | paste -sd';'
}
taskset -c 1 nice -n 3 "$B/ckpt_threads" 100000 10 >sched.out 2>/dev/null &
P=$!
started+=("$P")
wait_log sched.out "step 5 " 60 || bad "sched: program started"
mapfile -t tl < <(ls "/proc/$P/task" | sort -n)
taskset -pc 0 "${tl[1]}" >/dev/null && renice -n 7 -p "${tl[2]}" >/dev/null &&
	chrt --batch -p 0 "${tl[3]}" || bad "sched: setting its threads' affinity, nice and policy"
before=$(sched_of "$P")
expect "sched: dump and kill" 0 "$CK" dump "$P" sched.img --kill
wait "$P" 2>/dev/null
restore_bg "sched: restore" sched.r sched.img --stopped
after=$(sched_of "$NP")
[ "$before" = "$after" ] && ok "sched: every thread's affinity, policy and nice as they were" ||
	bad "sched: every thread's affinity, policy and nice: $before became $after"
kill -9 "$NP"
wait "$R" 2>/dev/null

# 6. a process tree: a parent, its child and grandchild over pipes (requests
# left buffered at the dump), a counter in shared anonymous memory, each
# waiting for its child at the end. Run under a child subreaper (as storm's
# node daemon is) so a tree killed at its dump leaves its pids free: the
# restored parent waits for its child by the pid it kept.
TP=$B/tree_prog
"$TP" 150 >tref.out || bad "tree: reference run"
# every process of the tree holds its stdout and stderr: appended to
# (O_APPEND), as a file shared over a fork must be to be restored
: >trun.out
: >tw.err
gone_gates
"$TP" reaper hold 20,40 150 >>trun.out 2>>tw.err &
W=$!
started+=("$W")
wait_log trun.out "step 20 " 60 || bad "tree: program reached step 20"
TR=$(sed -n 's/^root //p' tw.err)
expect "tree: dump a running tree (left running)" 0 "$CK" dump "$TR" timg1
: >gate.20
wait_log trun.out "step 40 " 60 || bad "tree: kept running after the dump"
expect "tree: dump and kill" 0 "$CK" dump "$TR" timg2 --kill
wait "$W"
: >gate.40
expect "tree: restore the killed tree" 0 "$CK" restore timg2
wait_log trun.out "child exited" 10
cmp -s tref.out trun.out && ok "tree: output identical to an uninterrupted run" ||
	{ bad "tree: output differs after the restore of the killed tree"; diff tref.out trun.out | head -4; }
tail -1 trun.out | grep -q "^child exited 8, counter 150" && ok "tree: the restored parent reaped its child" ||
	bad "tree: the restored parent reaped its child ($(tail -1 trun.out))"
# the image of the tree left running, restored once it ended: its output,
# appended to (O_APPEND), is never cut (another process may append to it
# too); the restored tree appends what it writes from the dump on after it
full=$(stat -c %s trun.out)
expect "tree: restore the tree dumped running" 0 "$CK" restore timg1
has "tree: the restore says it left the output as it is" err \
	"restore: $T/trun.out: opened O_APPEND; left as it is ($full bytes, "
at=$(sed -n "s|.*$T/trun.out: opened O_APPEND; left as it is ($full bytes, \([0-9]*\) at the checkpoint)|\1|p" "$T/err" | head -n1)
wait_count trun.out "child exited" 2 10 >/dev/null
if [ -n "$at" ] && cmp -s <(head -c "$full" trun.out) tref.out &&
	cmp -s <(tail -c +$((full + 1)) trun.out) <(tail -c +$((at + 1)) tref.out); then
	ok "tree: the first run's output kept, the restored run's appended after it"
else
	bad "tree: the first run's output kept, the restored run's appended after it ($full, $at)"
	tail -c +$((full + 1)) trun.out | head -3
fi
expect "tree: verify its image" 0 "$CK" verify timg1
# a file shared over a fork that is not only appended to: refused (each
# process would come back with its own offset)
# (it holds after step 3 until it is killed)
"$TP" hold 3 1000 >tshared.out 2>>tw.err &
TS=$!
started+=("$TS")
wait_log tshared.out "step 3 " 60 || bad "tree: a tree writing a shared file started"
expect "tree: a regular file shared over a fork is refused" 1 "$CK" dump "$TS" tsimg
has "  naming the file and the other process" err "tshared.out, one open file with pid "
has "  and why" err "restored each with its own"
kill "$TS"

# the dumper leaks nothing and reads no uninitialised byte, threads and all
"$B/ckpt_threads" 100000 10 >vg.out 2>/dev/null &
V=$!
started+=("$V")
wait_log vg.out "step 5 " 60 || bad "valgrind's program started"
expect "valgrind: dump a threaded process, clean" 0 valgrind -q --error-exitcode=9 \
	--leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	"$CK" dump "$V" vg.img --snapshot
expect "valgrind: dump and kill it, clean" 0 valgrind -q --error-exitcode=9 \
	--leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	"$CK" dump "$V" vg.img --kill

echo "test_ckpt: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
