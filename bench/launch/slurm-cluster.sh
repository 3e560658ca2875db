#!/bin/sh
# A private Slurm cluster on this one host, the peer of `storm cluster up` for
# bench/launch (and the Slurm that tests/slurm/test_alloc.sh runs storm inside):
# munged, one slurmctld and N slurmd daemons (`slurmd -N bnI`),
# each node with its own port, 4 CPUs, spool directory, log and pid file.
#
#   bench/launch/slurm-cluster.sh up N     start (or keep) a cluster of N nodes, wait until idle
#   bench/launch/slurm-cluster.sh down     stop everything it started, remove leftovers
#   bench/launch/slurm-cluster.sh status   print sinfo; exit 0 when up and all nodes idle
#   bench/launch/slurm-cluster.sh env      print `export SLURM_CONF=...` for srun/sinfo/scancel
#   bench/launch/slurm-cluster.sh pids     list the processes `down` would stop, stop nothing
#
# Debian's slurm-wlm 22.05 is built with multiple-slurmd support (`scontrol show
# config` prints MULTIPLE_SLURMD = Yes), so several slurmd processes share this
# host: NodeName=bnI NodeHostname=localhost NodeAddr=127.0.0.1 Port=P_I, and
# SlurmdSpoolDir/SlurmdPidFile/SlurmdLogFile contain %n. `srun --bcast=DIR/`
# (trailing slash) makes every node write its own slurm_bcast_JOB.STEP_NODE file.
#
# STORM_SLURM_CONF_EXTRA (bench/gang): slurm.conf lines, one a line, that
# replace the generated lines with the same key (PartitionName=... replaces
# the partition line, SelectType=... the select plugin) or are appended when
# no generated line has that key; KEY= (nothing after '=') only removes the
# generated KEY line; NodeName lines are never replaced. Unset,
# the configuration is the launch benchmark's.
#
# Everything lives under $STORM_SLURM_DIR (default /tmp/storm-bench-slurm): the
# munge key and socket, slurm.conf, state, spool, logs. The system's Slurm and
# munge (/etc/slurm, /etc/munge, /run/munge, ports 6817/6818) are not used;
# this cluster uses ports $STORM_SLURM_PORT (default 26817) for slurmctld and
# $STORM_SLURM_PORT+I for node bnI. Debian packages: slurm-wlm munge
# (`make bench-deps`). Runs as root (tested); as another user, SlurmUser and
# SlurmdUser are that user and jobs run only as that user.
set -u

BASE=${STORM_SLURM_DIR:-/tmp/storm-bench-slurm}
PORT=${STORM_SLURM_PORT:-26817}
TIMEOUT=${STORM_SLURM_TIMEOUT:-90} # seconds for `up` to reach all-idle
MAX_NODES=128
CONF=$BASE/slurm.conf
export SLURM_CONF="$CONF"

die() { echo "slurm-cluster: $*" >&2; exit 1; }
say() { echo "slurm-cluster: $*" >&2; }

# $BASE is wiped by `up`: it must be a directory of its own, not /tmp or a
# system directory.
case $BASE in
/*/?*) ;;
*) die "STORM_SLURM_DIR must be an absolute path at least two levels deep: $BASE" ;;
esac
case ${BASE%/} in
/home/*/*) ;;
/var/tmp | /var/lib | /var/log | /home/* | /usr/* | /etc/* | /proc/* | /sys/* | /dev/* | /run/* | /boot/*)
	die "refusing STORM_SLURM_DIR=$BASE" ;;
esac

now_ms() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

# Processes of this cluster, matched exactly, never by program name alone (a
# system Slurm or another cluster is left alone): daemons with an argument
# that is exactly this cluster's slurm.conf or munge socket; slurmstepd
# processes whose working directory or an open file is under $BASE (only when
# $BASE carries this script's marker); srun/sbcast/salloc/sbatch/scancel
# whose environment holds exactly SLURM_CONF=$CONF; then the descendants of
# those (job tasks). PID 1 and everything in this script's own session (this
# shell, its helpers, its callers) are never included. The daemons and
# slurmstepd detach into sessions of their own.
MARKER=.storm-bench-slurm-cluster
sid() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f4; }
ours() {
	mysid=$(sid $$)
	{
		grep -lzxF -e "$CONF" -e "--socket=$BASE/munge/munge.socket" /proc/[0-9]*/cmdline \
			2>/dev/null | cut -d/ -f3
		if [ -f "$BASE/$MARKER" ]; then
			find /proc/[0-9]*/cwd /proc/[0-9]*/fd -maxdepth 1 -lname "$BASE/*" 2>/dev/null |
				cut -d/ -f3 | sort -u | while read -r p; do
					[ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] && echo "$p"
				done
		fi
		grep -lzxF -- "SLURM_CONF=$CONF" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 |
			while read -r p; do
				case $(cat "/proc/$p/comm" 2>/dev/null) in srun | sbcast | salloc | sbatch | scancel) echo "$p" ;; esac
			done
	} | sort -u | while read -r p; do
		s=$(sid "$p")
		[ "$p" != 1 ] && [ -n "$s" ] && [ "$s" != "$mysid" ] && echo "$p"
	done
}

descendants() { # pids... -> those pids and their descendants, never PID 1 or our session
	ps -e -o pid=,ppid=,sid= | awk -v roots="$*" -v mysid="$(sid $$)" '
		BEGIN { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1 }
		$3 != mysid && $1 != 1 { parent[$1] = $2 }
		END {
			do { changed = 0
				for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; changed = 1 }
			} while (changed)
			for (p in keep) print p
		}'
}

# pids still running (a zombie is not: here PID 1 may take a while to reap them)
alive() {
	for p in "$@"; do
		st=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
		[ -n "$st" ] && [ "$st" != Z ] && echo "$p"
	done
}

# Job steps, tasks and clients get SIGKILL at once (slurmstepd and srun take
# SIGTERM as something to forward); the daemons SIGTERM, then SIGKILL if they
# are still there after 5 s.
cmd_down() {
	roots=$(ours | tr '\n' ' ')
	if [ -z "$roots" ]; then
		[ "${1:-}" = quiet ] || say "nothing running under $BASE"
		return 0
	fi
	# shellcheck disable=SC2086
	pids=$(descendants $roots | tr '\n' ' ')
	daemons="" others=""
	for p in $pids; do
		case $(cat "/proc/$p/comm" 2>/dev/null) in
		munged | slurmctld | slurmd | slurmscriptd) daemons="$daemons $p" ;;
		*) others="$others $p" ;;
		esac
	done
	# shellcheck disable=SC2086
	[ -n "$others" ] && kill -KILL $others 2>/dev/null
	# shellcheck disable=SC2086
	[ -n "$daemons" ] && kill -TERM $daemons 2>/dev/null
	t0=$(now_ms)
	# shellcheck disable=SC2086
	while [ -n "$(alive $pids)" ] && [ $(($(now_ms) - t0)) -lt 5000 ]; do
		sleep 0.1
	done
	# shellcheck disable=SC2086
	left=$(alive $pids | tr '\n' ' ')
	if [ -n "$left" ]; then
		say "still running after 5 s, killing: $left"
		# shellcheck disable=SC2086
		kill -KILL $left 2>/dev/null
	fi
	[ "${1:-}" = quiet ] || say "stopped $(echo "$pids" | wc -w) processes"
	return 0
}

# Waits (polling, bounded) until a command succeeds: wait_for SECONDS WHAT cmd...
wait_for() {
	limit=$(($1 * 1000)) what=$2
	shift 2
	t0=$(now_ms)
	until "$@" >/dev/null 2>&1; do
		[ $(($(now_ms) - t0)) -ge $limit ] && { say "timed out after $((limit / 1000)) s waiting for $what"; return 1; }
		sleep 0.1
	done
	say "$what after $(($(now_ms) - t0)) ms"
}

all_idle() { # N: true when sinfo lists exactly N nodes, all idle
	out=$(sinfo -h -N -o '%N %t' 2>/dev/null) || return 1
	[ "$(echo "$out" | wc -l)" -eq "$1" ] || return 1
	[ "$(echo "$out" | awk '$2 == "idle"' | wc -l)" -eq "$1" ]
}

port_busy() { # port: true when something listens on it
	ss -Htln "sport = :$1" 2>/dev/null | grep -q .
}

write_conf() { # N
	user=$(id -un)
	cat >"$CONF" <<EOF
# Generated by bench/launch/slurm-cluster.sh: a private cluster of $1 virtual nodes.
ClusterName=stormbench
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$PORT
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
AuthInfo=socket=$BASE/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$BASE/state
SlurmdSpoolDir=$BASE/spool/%n
SlurmctldPidFile=$BASE/run/slurmctld.pid
SlurmdPidFile=$BASE/run/slurmd-%n.pid
SlurmctldLogFile=$BASE/log/slurmctld.log
SlurmdLogFile=$BASE/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$BASE/plugstack.conf
# no cgroups, accounting or PMI: the cheapest launch path Slurm offers
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# the nodes claim 4 CPUs each on a host with fewer
SlurmdParameters=config_overrides
ReturnToService=2
SlurmdTimeout=300
MessageTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=30
EOF
	i=1
	while [ $i -le "$1" ]; do
		echo "NodeName=bn$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + i)) CPUs=4 RealMemory=256 State=UNKNOWN"
		i=$((i + 1))
	done >>"$CONF"
	echo "PartitionName=bench Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >>"$CONF"
	if [ -n "${STORM_SLURM_CONF_EXTRA:-}" ]; then
		printf '%s\n' "$STORM_SLURM_CONF_EXTRA" >"$BASE/extra.conf"
		awk -F= 'NR == FNR { if (NF > 1 && $1 != "NodeName") over[$1] = 1; next }
			!(NF > 1 && ($1 in over)) { print }' "$BASE/extra.conf" "$CONF" >"$CONF.tmp" &&
			{ echo "# STORM_SLURM_CONF_EXTRA"; grep -v -e '^[[:space:]]*$' -e '^[^=]*=[[:space:]]*$' "$BASE/extra.conf"; } >>"$CONF.tmp" &&
			mv "$CONF.tmp" "$CONF" || die "cannot apply STORM_SLURM_CONF_EXTRA"
	fi
	: >"$BASE/plugstack.conf"
}

cmd_up() {
	n=${1:-}
	case $n in '' | *[!0-9]*) die "usage: $0 up N (1..$MAX_NODES)" ;; esac
	if [ "$n" -lt 1 ] || [ "$n" -gt $MAX_NODES ]; then die "N must be 1..$MAX_NODES"; fi
	for c in munged slurmctld slurmd sinfo srun ss; do
		command -v $c >/dev/null || die "$c not found: apt-get install slurm-wlm munge iproute2 (make bench-deps)"
	done
	if [ "$(cat "$BASE/nodes" 2>/dev/null)" = "$n" ] &&
		[ "$(cat "$BASE/extra.conf" 2>/dev/null)" = "${STORM_SLURM_CONF_EXTRA:-}" ] && all_idle "$n"; then
		say "already up: $n nodes idle ($CONF)"
		return 0
	fi
	if [ -d "$BASE" ] && [ -n "$(ls -A "$BASE")" ] && [ ! -f "$BASE/$MARKER" ] &&
		! grep -qs '^# Generated by bench/launch/slurm-cluster.sh' "$CONF"; then
		die "$BASE holds something else than a cluster of this script: not wiping it"
	fi
	cmd_down quiet
	i=0
	while [ $i -le "$n" ]; do
		port_busy $((PORT + i)) && die "port $((PORT + i)) is in use by another program (set STORM_SLURM_PORT)"
		i=$((i + 1))
	done
	t_up=$(now_ms)
	rm -rf "$BASE"
	mkdir -p "$BASE/munge" "$BASE/state" "$BASE/spool" "$BASE/log" "$BASE/run" "$BASE/bcast" ||
		die "cannot create $BASE"
	# munged insists: socket directory traversable by all, key readable only by its owner
	: >"$BASE/$MARKER"
	chmod 755 "$BASE" "$BASE/munge"
	(umask 077 && head -c 1024 /dev/urandom >"$BASE/munge/munge.key")
	munged --key-file="$BASE/munge/munge.key" --socket="$BASE/munge/munge.socket" \
		--pid-file="$BASE/munge/munged.pid" --log-file="$BASE/munge/munged.log" \
		--seed-file="$BASE/munge/munged.seed" || die "munged failed: $BASE/munge/munged.log"
	wait_for 10 "munged" sh -c "munge -S '$BASE/munge/munge.socket' -n | unmunge -S '$BASE/munge/munge.socket'" ||
		die "munged does not answer: $BASE/munge/munged.log"

	write_conf "$n"
	echo "$n" >"$BASE/nodes"
	slurmctld -f "$CONF" -c || die "slurmctld failed: $BASE/log/slurmctld.log"
	wait_for 30 "slurmctld" scontrol ping || { tail -5 "$BASE/log/slurmctld.log" >&2; cmd_down quiet; exit 1; }
	i=1
	while [ $i -le "$n" ]; do
		mkdir -p "$BASE/spool/bn$i"
		slurmd -f "$CONF" -N "bn$i" || { say "slurmd bn$i failed: $BASE/log/slurmd-bn$i.log"; cmd_down quiet; exit 1; }
		i=$((i + 1))
	done
	if ! wait_for "$TIMEOUT" "$n nodes idle" all_idle "$n"; then
		sinfo >&2
		cmd_down quiet
		exit 1
	fi
	say "up: $n nodes in $(($(now_ms) - t_up)) ms; export SLURM_CONF=$CONF"
}

cmd_status() {
	[ -f "$CONF" ] || { say "not up ($CONF missing)"; return 1; }
	sinfo || return 1
	all_idle "$(cat "$BASE/nodes" 2>/dev/null || echo 0)"
}

cmd_pids() { # what down would stop
	roots=$(ours | tr '\n' ' ')
	# shellcheck disable=SC2086
	[ -n "$roots" ] && descendants $roots | sort -n
}

case ${1:-} in
up) cmd_up "${2:-}" ;;
down) cmd_down ;;
status) cmd_status ;;
env) echo "export SLURM_CONF=$CONF" ;;
pids) cmd_pids ;;
*) die "usage: $0 up N | down | status | env | pids" ;;
esac
