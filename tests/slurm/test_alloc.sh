#!/bin/bash
# storm inside a Slurm allocation (`storm cluster up --slurm`), as Flux runs
# inside one: a private Slurm cluster of 3 nodes on this host
# (bench/launch/slurm-cluster.sh: its own munged, slurmctld, one slurmd per
# node), and an unprivileged user who gets an allocation and starts storm in
# it. Checked: salloc with a command (multi-node and BCS-MPI jobs, the ranks
# as the user, the command's exit status, everything gone after); sbatch with
# storm left up until the allocation ends, then scancel of a running one
# (daemons and ranks gone); a SIGTERM to `storm cluster up` while its command
# runs. Synchronised on output lines and process exits, not on sleeps.
# Usage: test_alloc.sh BUILD_BIN_DIR   (make slurmtest; root: it adds a user)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$ROOT/tests/cluster/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "test_alloc.sh: error: must run as root (it adds a user and starts slurmd)" >&2
	exit 1
fi
for c in salloc sbatch scancel slurmctld slurmd munged; do
	command -v $c >/dev/null || {
		echo "test_alloc.sh: error: $c not found; scripts/install-deps.sh installs slurm-wlm" >&2
		exit 1
	}
done
T=$(mktemp -d /tmp/storm-alloctest.XXXXXX)
chmod 755 "$T"
U=stormalloc
H=$T/home
export STORM_SLURM_DIR=$T/slurm STORM_SLURM_PORT=${STORM_SLURM_PORT:-28817}
export SLURM_CONF=$T/slurm/slurm.conf
SLURM_SH=$ROOT/bench/launch/slurm-cluster.sh
export PATH=$BIN:$PATH
MARK=storm-alloctest-${T##*.}
fails=0 checks=0 JOBS= BG=

# daemons (and their sruns) of the allocation JOB's storm, by their config
storm_pids() {
	local p
	for p in $(grep -lzxF "/tmp/storm-slurm-$1/storm.conf" /proc/[0-9]*/cmdline 2>/dev/null |
		cut -d/ -f3); do
		case $(cat "/proc/$p/comm" 2>/dev/null) in "" | grep) ;; *) echo "$p" ;; esac
	done
}
cleanup() {
	fail_report
	for p in $BG; do kill -9 "$p" 2>/dev/null; done
	"$SLURM_SH" down >/dev/null 2>&1 # every step, task and Slurm daemon
	for j in $JOBS; do
		for p in $(storm_pids "$j"); do kill -9 "$p" 2>/dev/null; done
		rm -rf "/tmp/storm-slurm-$j"
	done
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

id "$U" >/dev/null 2>&1 || useradd -M -N -d "$H" -s /bin/sh "$U" || exit 1
mkdir -p "$H" && chown "$U" "$H" || exit 1
# the user's environment: Slurm's and storm's commands, nothing of ours;
# FI_TCP_IFACE: the nodes are this one host, reached over loopback
as_user() {
	(cd "$H" && runuser -u "$U" -- env -i HOME="$H" PATH="$BIN:/usr/bin:/bin" \
		SLURM_CONF="$SLURM_CONF" FI_TCP_IFACE=lo "$@")
}
# all_gone NAME PID...: each process exits within 10 s (woken by its pidfd)
all_gone() {
	local name=$1 p left=""
	shift
	for p in "$@"; do gone "$p" || left="$left $p"; done
	if [ -z "$left" ]; then ok "$name"; else
		bad "$name: still running:$left"
		for p in $left; do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | sed 's/^/     | /'; echo; done
	fi
}

if "$SLURM_SH" up 3 >"$T/slurm-up.log" 2>&1; then ok "a private Slurm cluster of 3 nodes"
else bad "slurm-cluster.sh up 3"; cat "$T/slurm-up.log"; exit 1; fi

expect "outside an allocation: refused" 1 as_user storm cluster up --slurm
has "  ... saying why" err "not inside a Slurm allocation"

# ---- salloc with a command: storm's jobs inside, then everything gone
bcs-mpicc "$ROOT/tests/cluster/mpi/ring.c" -o "$H/ring" || bad "bcs-mpicc ring.c"
cat >"$H/in_alloc.sh" <<'EOF'
echo "job $SLURM_JOB_ID"
storm run -N 3 -n 6 -l sh -c 'echo "$STORM_NODENAME $(id -un)"' || exit 1
storm run -N 3 -n 3 ./ring || exit 1
# found without STORM_CONF: by the allocation's id
env -u STORM_CONF storm cluster status --json | grep '"cluster"'
grep -E '^(mm|ctl)_address = ' "$STORM_CONF"
exit 7
EOF
# --exclusive: each node's 4 CPUs (storm's cpus per node are the allocation's)
expect "salloc -N 3 storm cluster up --slurm -- sh in_alloc.sh: the command's exit status" 7 \
	as_user salloc -N 3 --exclusive storm cluster up --slurm -- sh in_alloc.sh
J=$(sed -n 's/^job //p' "$T/out")
JOBS="$JOBS $J"
has "  storm came up on the allocation's nodes" out "3 nodes bn[1-3]"
# the MM's ports, chosen before it binds them, lie below the ephemeral range,
# which an outgoing connection of any process could take from it meanwhile
low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range)
ports=$(sed -n 's/^\(mm\|ctl\)_address = .*:\([0-9]*\)$/\2/p' "$T/out" | tr '\n' ' ')
[ "$(echo $ports | wc -w)" = 2 ] && for p in $ports; do [ "$p" -lt "$low" ] || ports=""; done &&
	[ -n "$ports" ] && ok "  the MM's two ports below the ephemeral range ($ports< $low)" ||
	bad "  the MM's two ports below the ephemeral range ($low): $(grep _address "$T/out")"
for l in "0: bn1 $U" "1: bn1 $U" "2: bn2 $U" "3: bn2 $U" "4: bn3 $U" "5: bn3 $U"; do
	has_line "  rank on its node, as the user: $l" out "$l"
done
has "  a BCS-MPI ring across the 3 nodes" out "ring: token 9 (expected 9)"
has "  storm run finds it by SLURM_JOB_ID" out "\"cluster\": \"slurm-$J\""
has "  taken down after the command" out "storm: cluster down (/tmp/storm-slurm-$J)"
left=$(storm_pids "$J")
[ -z "$left" ] && ok "  no daemon left" || bad "  daemons left: $left"
[ ! -e "/tmp/storm-slurm-$J/cluster.key" ] && [ -e "/tmp/storm-slurm-$J/log/mm.log" ] &&
	ok "  its run-time files removed, its logs kept" || bad "  run-time files removed, logs kept"

# ---- sbatch: storm stays up until the allocation ends
mkfifo "$H/release" && chown "$U" "$H/release"
cat >"$H/batch.sh" <<'EOF'
#!/bin/sh
storm cluster up --slurm || exit 1
storm run -N 3 -l echo batch-hi || exit 1
echo ready
read -r _ <release
EOF
J=$(as_user sbatch --parsable -N 3 -o "$H/batch-%j.out" batch.sh)
JOBS="$JOBS $J"
if wait_log "$H/batch-$J.out" ready 60; then ok "sbatch: storm up in the batch script, a job ran"
else bad "sbatch: storm up and a job"; cat "$H/batch-$J.out"; fi
has_line "  rank 2's output" "home/batch-$J.out" "2: batch-hi"
pids=$(storm_pids "$J")
[ "$(echo $pids | wc -w)" -ge 6 ] && ok "  the MM, 3 node daemons and their sruns run" ||
	bad "  the daemons run: only '$pids'"
echo go >"$H/release"
# shellcheck disable=SC2086
all_gone "  all gone once the batch script ends the allocation" $pids

# ---- storm cluster down inside the allocation, which goes on
cat >"$H/down.sh" <<'EOF'
#!/bin/sh
storm cluster up --slurm || exit 1
storm run -N 3 true || exit 1
storm cluster down || exit 1
echo "down $SLURM_JOB_ID"
read -r _ <release
EOF
start_bg down as_user salloc -N 3 sh down.sh
word=
while read -r -t 60 word J <&7 && [ "$word" != down ]; do :; done
JOBS="$JOBS ${J:-}"
if [ "$word" = down ]; then ok "storm cluster down in an allocation"
else bad "storm cluster down in an allocation"; cat "$T/down.err"; fi
left=$(storm_pids "$J")
[ -z "$left" ] && ok "  no daemon left while the allocation lasts" || bad "  daemons left: $left"
echo go >"$H/release"
wait "$BGPID" && ok "  the allocation ends as usual" || bad "  salloc's exit"
exec 7<&-

# ---- scancel of a running allocation: daemons and ranks gone
cat >"$H/cancel.sh" <<EOF
#!/bin/sh
storm cluster up --slurm || exit 1
storm run -N 3 -l sh -c 'echo started; sleep 300; echo $MARK' &
read -r _ <release
EOF
J=$(as_user sbatch --parsable -N 3 -o "$H/cancel-%j.out" cancel.sh)
JOBS="$JOBS $J"
if n=$(wait_count "$H/cancel-$J.out" started 3 60); then ok "scancel: a 3-node job runs in the allocation"
else bad "scancel: 3 ranks started ($n)"; cat "$H/cancel-$J.out"; fi
ranks=
for p in $(grep -lzF "$MARK" /proc/[0-9]*/cmdline 2>/dev/null | cut -d/ -f3); do
	parent=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null)
	[ "$(cat "/proc/$parent/comm" 2>/dev/null)" = stormnd ] && ranks="$ranks $p"
done
[ "$(echo $ranks | wc -w)" = 3 ] && ok "  its 3 ranks run" || bad "  3 ranks run: '$ranks'"
pids=$(storm_pids "$J")
as_user scancel "$J" || bad "  scancel $J"
# shellcheck disable=SC2086
all_gone "  daemons and ranks gone after scancel" $pids $ranks

# ---- Ctrl-C, then SIGTERM to `storm cluster up` while its command runs
start_bg int as_user salloc -N 3 storm cluster up --slurm -- sh -c 'echo "ready $SLURM_JOB_ID $$"; exec sleep 300'
word=
while read -r -t 60 word J cmd <&7 && [ "$word" != ready ]; do :; done
JOBS="$JOBS ${J:-}"
if [ "$word" = ready ]; then ok "salloc with storm and a long command"
else bad "salloc with storm and a long command"; cat "$T/int.err"; fi
up=$(awk '{ print $4 }' "/proc/$cmd/stat" 2>/dev/null)
pids=$(storm_pids "$J")
kill -INT "$up"
expect "  Ctrl-C is the command's: the cluster stays up" 0 \
	as_user env SLURM_JOB_ID="$J" storm run -N 3 -l echo still-up
has_line "  ... and runs a job" out "2: still-up"
kill -TERM "$up"
wait "$BGPID"
rc=$?
[ "$rc" != 0 ] && ok "  SIGTERM: storm cluster up took it down (exit $rc)" || bad "  exit 0 after SIGTERM"
cat <&7 >"$T/int.rest"
grep -qF "storm: cluster down" "$T/int.rest" && ok "  ... saying so" || bad "  no 'cluster down' line"
# shellcheck disable=SC2086
all_gone "  daemons and the command gone" $pids $cmd
exec 7<&-

# nothing of the user's is left: no watcher of a detached cluster, srun or
# daemon outlives its allocation
# shellcheck disable=SC2046
all_gone "no process of $U left" $(ps -u "$U" -o pid= 2>/dev/null)

echo "$((checks - fails)) of $checks checks passed"
[ "$fails" = 0 ]
