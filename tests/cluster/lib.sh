# Shared by the cluster test scripts (bash): waiting on events, not on time.

# The suites call python3 dozens of times, for Debian's python3 and its
# packages (scripts/install-deps.sh). A version manager's shim first in PATH
# (pyenv's is a shell script that starts several more) costs seconds a call
# on a loaded machine, more than the step it serves: the system's own then.
if [ -x /usr/bin/python3 ]; then
	python3() { /usr/bin/python3 "$@"; }
	export -f python3
fi

# STORM_HOSTS=1 (make hoststest): the suites' clusters as hosts that share
# only the network (storm cluster up --hosts): no daemon, and not storm
# here, sees a file of another's. UP_MODE goes into a suite's plain `cluster
# up`, NETNS_MODE into one that needs network namespaces (--netns, which
# --hosts includes). The harness may still look into a host's files from
# here: node_state, mm_socket; DIR/log/NAME.log links into the host.
if [ "${STORM_HOSTS:-}" = 1 ]; then
	UP_MODE=--hosts NETNS_MODE=--hosts
else
	UP_MODE= NETNS_MODE=--netns
fi
# shared DIR: with --hosts, the option that shows DIR on every host (a
# site's network file system): for a suite whose ranks write files in their
# working directory and are restarted elsewhere from a checkpoint
shared() {
	[ "${STORM_HOSTS:-}" = 1 ] && echo "--share $1"
}
# node_state NODE: node NODE's state directory (its jobs and checkpoints)
node_state() {
	if [ "${STORM_HOSTS:-}" = 1 ]; then echo "$C/hosts/$1/state/$1"; else echo "$C/state/$1"; fi
}
# in_host HOST PATH: PATH as host HOST has it, from here (--hosts: its
# private /tmp is DIR/hosts/HOST/tmp); PATH itself without --hosts
in_host() {
	case ${STORM_HOSTS:-}:$2 in
	1:/tmp/*) echo "$C/hosts/$1/tmp/${2#/tmp/}" ;;
	*) echo "$2" ;;
	esac
}
# on_host HOST CMD...: CMD inside host HOST of a --hosts cluster, as its own
# processes run (the namespaces of its munged, the host's first process)
on_host() {
	local h=$1
	shift
	nsenter -t "$(cat "$C/hosts/$h/munge/munged.pid")" --net --mount --uts --ipc "$@"
}
# forge_via: ctl_forge's way to the MM: its socket, or --tcp its ctl_address
forge_via() {
	[ "${STORM_HOSTS:-}" = 1 ] && echo "--tcp $(sed -n 's/^ctl_address = //p' "$C/storm.conf")"
}
# mm_socket: the MM's control socket
mm_socket() {
	if [ "${STORM_HOSTS:-}" = 1 ]; then echo "$C/hosts/mm/mm.sock"; else echo "$C/mm.sock"; fi
}

# Every wait below is for an event; its SECONDS only bound a hang, and are
# multiplied by STORM_TEST_PATIENCE (default 4): a machine loaded by a CPU
# hog or other tests is slower than the one a deadline was written on, and
# waiting longer for an event that comes costs nothing.
patience() { echo $(($1 * ${STORM_TEST_PATIENCE:-4})); }

# wait_log FILE TEXT SECONDS: returns 0 as soon as a line of FILE (already
# there or appended later: tail -F follows it) contains TEXT, 1 if none does
# within SECONDS.
wait_log() {
	local rc=1 pid
	coproc WAIT_LOG_TAIL { exec timeout "$(patience "$3")" tail -n +1 -F "$1" 2>/dev/null; }
	pid=$WAIT_LOG_TAIL_PID # bash unsets it when the coprocess ends
	grep -q -m1 -F -- "$2" <&"${WAIT_LOG_TAIL[0]}" && rc=0
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return $rc
}

# cluster_dump: every daemon of $C writes what it holds to its log
# (SIGUSR1: commands taken, jobs, mailboxes, exchanges) and its lines are
# printed, for a test that found a job stuck.
cluster_dump() {
	local pid name log from fd
	[ -f "$C/pids" ] || return 0
	while read -r pid name; do
		log=$C/log/$name.log
		[ -f "$log" ] || continue
		from=$(($(wc -l <"$log") + 1))
		kill -USR1 "$pid" 2>/dev/null || continue
		coproc DUMP_TAIL { exec timeout 10 tail -n +"$from" -F "$log" 2>/dev/null; }
		pid=$DUMP_TAIL_PID
		# a pipeline's subshell does not get the coprocess's descriptor
		exec {fd}<&"${DUMP_TAIL[0]}"
		sed -n '/state: slice/,/state: end/p; /state: end/q' <&$fd | sed "s#^#     | $name: #"
		exec {fd}<&-
		kill "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done <"$C/pids"
}

# gone PID [SECONDS]: returns once the process (not necessarily our child)
# has exited, woken by its pidfd; 1 if it still runs after SECONDS (10).
gone() {
	python3 -c '
import os, select, sys
try:
    fd = os.pidfd_open(int(sys.argv[1]))
except ProcessLookupError:
    sys.exit(0)
sys.exit(0 if select.select([fd], [], [], float(sys.argv[2]))[0] else 1)' "$1" "$(patience "${2:-10}")"
}

# daemon_pid NAME: the pid of the cluster $C's daemon NAME (mm, node00, ...)
daemon_pid() { awk -v n="$1" '$2 == n { p = $1 } END { print p }' "$C/pids"; }

# stacks PATTERN: where each process whose command line matches PATTERN
# waits (its kernel wait channel and, with gdb, every thread's frames)
stacks() {
	local p
	for p in $(pgrep -f "$1"); do
		echo "     | pid $p waits in $(cat /proc/$p/wchan 2>/dev/null)"
		command -v gdb >/dev/null &&
			gdb -p "$p" -batch -ex "thread apply all bt 10" 2>/dev/null |
			grep -E "^#|^Thread" | sed 's/^/     |   /'
	done
}

# run_or_dump SECONDS OUT ERR CMD...: CMD, its stdout in OUT and stderr in
# ERR; if it still runs after SECONDS, the daemons' state is printed
# (cluster_dump; and the stacks of the processes matching $STACKS_OF) while
# it is stuck, then it is ended. Returns its status, 124 if it was ended.
run_or_dump() {
	local secs=$1 out=$2 err=$3 p
	shift 3
	"$@" >"$out" 2>"$err" &
	p=$!
	if ! gone "$p" "$secs"; then
		echo "     ... still running after $secs s; the daemons' state:"
		cluster_dump
		[ -n "${STACKS_OF:-}" ] && stacks "$STACKS_OF"
		kill "$p" 2>/dev/null
		wait "$p"
		return 124
	fi
	wait "$p"
}

# proc_cpu PID: "STATE TICKS" of a process: its state letter (R running,
# S asleep in a wait such as poll) and its user+system CPU time in clock ticks
proc_cpu() {
	sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | awk '{ print $1, $12 + $13 }'
}

# wait_stopped PID SECONDS: returns 0 once every thread of PID is stopped
# (state T in /proc), 1 if one still is not after SECONDS. A process that
# takes a SIGSTOP raises no event another process can wait on (its parent's
# waitid WSTOPPED is ours only for our own children, not for a restored
# process), so this is the one place that looks again, every 10 ms.
wait_stopped() {
	local end=$((SECONDS + $(patience "$2"))) s st
	while :; do
		[ -d "/proc/$1" ] || return 1
		st=T
		for s in /proc/"$1"/task/*/stat; do
			[ -e "$s" ] || { st=; break; }
			[ "$(sed 's/.*) \([A-Za-z]\).*/\1/' "$s" 2>/dev/null)" = T ] || { st=; break; }
		done
		[ "$st" = T ] && return 0
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.01
	done
}

# wait_bg PID SECONDS WHAT: waits for our background child PID to end, at
# most SECONDS, and returns its status; if it still runs then, prints WHAT,
# its state and CPU time, where it waits and the daemons' state, and kills
# it: 124.
wait_bg() {
	local p=$1
	if ! gone "$p" "$2"; then
		echo "     ... $3: pid $p still runs after $2 s (state, CPU ticks: $(proc_cpu "$p"))"
		echo "     | pid $p waits in $(cat "/proc/$p/wchan" 2>/dev/null)"
		cluster_dump
		kill -9 "$p" 2>/dev/null
		wait "$p" 2>/dev/null
		return 124
	fi
	wait "$p"
}

# Checks: ok/bad count them in $checks and $fails; expect and has keep the
# command's output in $T/out and $T/err (T: the test's scratch directory).
# A check that came 2 s or more after the one before it says how long it
# took, so that a suite's log shows where its time went.
CHECK_AT=${EPOCHREALTIME/./}
# check_gap: the gap since the last check, if 2 s or more, in $gap
check_gap() {
	local now=${EPOCHREALTIME/./} d
	d=$(((now - CHECK_AT) / 100000))
	CHECK_AT=$now
	gap=
	[ "$d" -lt 20 ] || gap=$(printf '   [%d.%d s]' $((d / 10)) $((d % 10)))
}
ok() { checks=$((checks + 1)); check_gap; echo "ok   $1$gap"; }
FAILED_CHECKS=()
bad() {
	checks=$((checks + 1)) fails=$((fails + 1))
	FAILED_CHECKS+=("$1")
	check_gap
	echo "FAIL $1$gap"
}
# fail_report: after a failed check, the tails of the cluster's daemon logs
# and the failed checks again (the last lines of a long run are what a CI
# summary shows)
fail_report() {
	[ "${fails:-0}" -gt 0 ] && [ -n "${C:-}" ] || return 0
	# a daemon that stood still said why (common/stall.h): a node made
	# DOWN by its silence fails checks far from the cause
	if grep -q "stall:" "$C"/log/*.log 2>/dev/null; then
		echo "     --- the daemons' stalls"
		grep -h -A14 "stall:" "$C"/log/*.log | grep -v "^--$" | head -80 | cut -c1-220 |
			sed 's/^/     | /'
	fi
	log_tails 12 "$C"/log/*.log
	# the whole logs, for a rare failure whose cause is before the tails
	# (scripts/suite.sh names the place)
	if [ -n "${SUITE_KEEP:-}" ] && [ -d "$C/log" ]; then
		mkdir -p "$SUITE_KEEP" && cp -r "$C/log" "$SUITE_KEEP/log.$$" 2>/dev/null &&
			echo "     --- whole logs kept in $SUITE_KEEP/log.$$"
	fi
	echo "     failed: $(printf '%s; ' "${FAILED_CHECKS[@]}")"
}
# log_tails N FILE...: the last N lines of each log that exists
log_tails() {
	local n=$1 f
	shift
	for f in "$@"; do
		[ -e "$f" ] || continue
		echo "     --- ${f##*/} (last $n lines)"
		tail -n "$n" "$f" 2>&1 | cut -c1-220 | sed 's/^/     | /'
	done
}
# expect NAME WANT_RC CMD...: runs CMD with stdout in $T/out, stderr in $T/err.
# A program (not a shell function) still running after STEP_LIMIT seconds
# (default 600) is a hang: the cluster's state and its logs' tails are
# printed and the suite stops, so one stuck step costs minutes, not the
# whole run's time limit.
STEP_LIMIT=${STEP_LIMIT:-600}
expect() {
	local name=$1 want=$2 rc t0=$SECONDS kind
	shift 2
	kind=$(type -t "$1")
	if [ "$kind" = file ]; then
		timeout --foreground -k 10 "$STEP_LIMIT" "$@" >"$T/out" 2>"$T/err"
	else
		"$@" >"$T/out" 2>"$T/err"
	fi
	rc=$?
	if [ "$rc" = "$want" ]; then ok "$name (exit $rc)"; return; fi
	# 124: the limit's TERM; 137: its KILL 10 s later (a step's own shorter
	# timeout also exits 124, and is an ordinary failure)
	if { [ "$rc" = 124 ] || [ "$rc" = 137 ]; } && [ $((SECONDS - t0)) -ge "$STEP_LIMIT" ]; then
		bad "$name: still running after $STEP_LIMIT s"
		hang_report
		exit 1
	fi
	bad "$name: exit $rc, wanted $want"
	sed 's/^/     out: /' "$T/out" | head -20
	sed 's/^/     err: /' "$T/err" | head -20
}
# hang_report: what the cluster $C looked like when a step hung (the
# suite's cleanup adds its logs: fail_report)
hang_report() {
	sed 's/^/     out: /' "$T/out" | tail -20
	sed 's/^/     err: /' "$T/err" | tail -20
	[ -n "${C:-}" ] || return 0
	local cmd
	for cmd in "cluster status" "jobs --all" nodes matrix; do
		echo "     --- storm $cmd"
		# shellcheck disable=SC2086
		timeout -k 5 15 storm $cmd 2>&1 | sed 's/^/     | /' | head -40
	done
}
# has NAME FILE TEXT: FILE contains TEXT (a fixed string)
has() {
	if grep -qF -- "$3" "$T/$2"; then ok "$1"; else
		bad "$1: no '$3' in $2"
		sed 's/^/     | /' "$T/$2" | head -20
	fi
}

# wait_count FILE TEXT N SECONDS: returns 0 once N lines of FILE (there
# already or appended later) contain TEXT, 1 if fewer do within SECONDS.
# Prints how many it saw.
wait_count() {
	python3 - "$1" "$2" "$3" "$(patience "$4")" <<'PY'
import os, select, subprocess, sys, time
path, text, n, secs = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3]), float(sys.argv[4])
tail = subprocess.Popen(["tail", "-n", "+1", "-F", path], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL)
deadline, k, buf = time.monotonic() + secs, 0, b""
while k < n:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([tail.stdout], [], [], left)[0]:
        break
    data = os.read(tail.stdout.fileno(), 65536)
    if not data:
        break
    buf += data
    *lines, buf = buf.split(b"\n")
    k += sum(1 for l in lines if text in l)
tail.kill()
tail.wait()
print(k)
sys.exit(0 if k >= n else 1)
PY
}

# has_line NAME FILE TEXT: FILE has a line that is exactly TEXT
has_line() {
	if grep -qxF -- "$3" "$T/$2"; then ok "$1"; else
		bad "$1: no line '$3' in $2"
		sed 's/^/     | /' "$T/$2" | head -20
	fi
}

# start_munged DIR: a private munged (own key, socket DIR/munge.socket) for
# tests that talk to a machine manager without `storm cluster up`; its pid
# in $MUNGED_PID (the caller kills it in its trap). Returns once it answers.
start_munged() {
	local d=$1
	mkdir -p "$d" && chmod 755 "$d"
	head -c 128 /dev/urandom >"$d/munge.key" && chmod 600 "$d/munge.key"
	/usr/sbin/munged --foreground --force --socket="$d/munge.socket" --key-file="$d/munge.key" \
		--pid-file="$d/munged.pid" --seed-file="$d/munged.seed" 2>"$d/munged.log" &
	MUNGED_PID=$!
	# in the foreground it logs to stderr: its work threads once its socket listens
	wait_log "$d/munged.log" "work threads" 10 && munge -S "$d/munge.socket" -n >/dev/null
}

# cluster_kill: the virtual cluster $C down and any of its daemons left
# killed (before $C is removed for another cluster).
cluster_kill() {
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
}

# cluster_teardown: the end of every test's cleanup trap: cluster_kill, and
# the scratch dir $T gone (kept with KEEP=1).
cluster_teardown() {
	fail_report
	cluster_kill
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}

# job_nodes JOB: the job's node list, from storm jobs --all --json
job_nodes() {
	storm jobs --all --json | python3 -c '
import json, sys
for j in json.load(sys.stdin)["jobs"]:
    if j["job"] == int(sys.argv[1]): print(j["nodelist"])' "$1"
}

# kill_job JOB: cancels JOB with SIGKILL and returns once the MM logged its
# end, its nodes released (storm cancel returns before they are free: a job
# submitted right after could be placed around it). 1 if not within 30 s.
kill_job() {
	storm cancel --signal KILL "$1" >/dev/null
	wait_log "$C/log/mm.log" "job $1 ended:" 30 ||
		{ echo "job $1 not ended 30 s after its cancel" >&2; return 1; }
}

# wait_written DIR SECONDS: prints "watching" once it watches DIR, then
# returns 0 once a file in a directory made in DIR after that (a job's
# directory in a node's storage) is closed after writing (a transferred chunk
# is written out), 1 if none is within SECONDS. Read its first line before
# starting what it waits for.
wait_written() {
	python3 - "$@" <<'PY'
import ctypes, os, select, struct, sys, time
d, secs = sys.argv[1], float(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
IN_CLOSE_WRITE, IN_CREATE, IN_ONLYDIR = 0x8, 0x100, 0x1000000
fd = libc.inotify_init1(os.O_NONBLOCK)
top = libc.inotify_add_watch(fd, d.encode(), IN_CREATE | IN_ONLYDIR)
print("watching", flush=True)
deadline = time.monotonic() + secs
while True:
    left = deadline - time.monotonic()
    if left <= 0 or not select.select([fd], [], [], left)[0]:
        sys.exit(1)
    buf = os.read(fd, 65536)
    i = 0
    while i < len(buf):
        wd, mask, _, ln = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16:i + 16 + ln].rstrip(b"\0")
        i += 16 + ln
        if wd == top and mask & IN_CREATE:
            sub = os.path.join(d.encode(), name)
            libc.inotify_add_watch(fd, sub, IN_CLOSE_WRITE)
            # a file written and closed before the watch was added sent
            # its event to no one: what it holds says so
            try:
                if any(e.is_file() and e.stat().st_size > 0 for e in os.scandir(sub)):
                    sys.exit(0)
            except OSError:
                pass
        elif wd != top and mask & IN_CLOSE_WRITE:
            sys.exit(0)
PY
}

# start_bg NAME CMD...: runs CMD in the background with stdout into FIFO
# $T/NAME.fifo (read by the test) and stderr in $T/NAME.err; sets BGPID and adds it to $BG
# (the test kills $BG on exit)
start_bg() {
	local name=$1
	shift
	mkfifo "$T/$name.fifo"
	"$@" >"$T/$name.fifo" 2>"$T/$name.err" &
	BGPID=$!
	BG="$BG $BGPID"
	exec 7<"$T/$name.fifo"
}

# par_each JOBS FUNC ARG...: FUNC ARG for each ARG, at most JOBS at a time,
# returning once all have ended. For a suite's builds, two at a time (this
# machine's cores): a compiler's run is mostly process start-up and linking,
# which a second one overlaps; run in the background (par_each ... &), the
# builds also overlap a cluster's start. FUNC says how each went in files
# of its own, for the suite to check once they are done.
par_each() {
	local n=$1 fn=$2 a
	shift 2
	for a in "$@"; do
		while [ "$(jobs -rp | wc -l)" -ge "$n" ]; do wait -n; done
		"$fn" "$a" &
	done
	wait
}
