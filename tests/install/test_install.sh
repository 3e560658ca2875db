#!/bin/bash
# make install as a site runs it, then storm from the installed files alone.
#  1. DESTDIR staging with PREFIX=/usr: the files and where they go (/etc for
#     the configuration), no installed file names the source or build tree,
#     no RPATH/RUNPATH into it, a site's edited storm.conf is kept; make
#     uninstall leaves no file behind.
#  2. PREFIX=<scratch root>/usr/local, then in a private mount namespace where
#     the whole source tree (build/ included) is an empty tmpfs: the man pages
#     render without warnings, bcs-mpicc compiles an MPI program against the
#     installed mpi.h and libbcsmpi, `storm cluster up` brings up a virtual
#     cluster of the installed daemons, the program runs on it; then the
#     installed systemd units' ExecStart lines (systemd is not booted here) run
#     on a fresh root: only the directories the units declare
#     (RuntimeDirectory=, StateDirectory=) are made, and the node daemon
#     joins and runs a job.
# Everything started is taken down on exit, pass or fail. Starts clusters:
# run under flock /tmp/storm-cluster.lock (make installtest does).
# Usage: tests/install/test_install.sh   (after make all man)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

if [ "${1:-}" != --hidden ]; then
	T=$(mktemp -d /tmp/storm-installtest.XXXXXX)
	# lib.sh and this script from a copy: the tree is hidden below
	cp "$HERE/test_install.sh" "$TOP/tests/cluster/lib.sh" "$T/"
	. "$T/lib.sh"
	fails=0 checks=0
	cleanup() { [ -n "${KEEP:-}" ] || rm -rf "$T"; }
	trap cleanup EXIT
	trap 'exit 1' INT TERM
	MK=(make -s -C "$TOP")

	# ---- 1. staged, PREFIX=/usr
	S=$T/stage
	expect "make install DESTDIR PREFIX=/usr" 0 "${MK[@]}" install DESTDIR="$S" PREFIX=/usr
	for f in bin/storm bin/stormmm bin/stormnd bin/storm-cluster bin/storm-ckpt bin/bcs-mpicc \
		bin/bcs-mpicxx bin/bcs-mpic++ lib/libbcsmpi.so lib/libbcsmpi.a lib/pkgconfig/bcsmpi.pc \
		include/bcsmpi/mpi.h share/man/man1/storm.1 share/man/man5/storm.conf.5 \
		lib/systemd/system/stormmm.service lib/systemd/system/stormnd.service \
		lib/storm/slurm/bin/sbatch lib/storm/slurm/bin/squeue lib/storm/slurm/bin/scancel \
		lib/storm/slurm/bin/sacct lib/storm/slurm/bin/sacctmgr lib/storm/slurm/bin/sinfo \
		lib/storm/slurm/bin/scontrol \
		lib/storm/slurm/bin/srun lib/storm/slurm/bin/salloc; do
		[ -e "$S/usr/$f" ] || bad "installed: /usr/$f missing"
	done
	[ -f "$S/etc/storm/storm.conf" ] && ok "storm.conf in /etc/storm for PREFIX=/usr" ||
		bad "no $S/etc/storm/storm.conf"
	if grep -qx "ExecStart=/usr/bin/stormnd -c /etc/storm/storm.conf -n %l" \
		"$S/usr/lib/systemd/system/stormnd.service"; then ok "stormnd.service runs /usr/bin/stormnd"
	else bad "stormnd.service ExecStart: $(grep ExecStart "$S/usr/lib/systemd/system/stormnd.service")"; fi
	expect "installed bcs-mpicc -show" 0 "$S/usr/bin/bcs-mpicc" -show x.c
	has "  includes /usr/include/bcsmpi, links /usr/lib" out \
		"-I/usr/include/bcsmpi x.c -L/usr/lib -Wl,-rpath,/usr/lib -lbcsmpi"
	refs=$(grep -rlF -- "$TOP" "$S")
	[ -z "$refs" ] && ok "no installed file names $TOP" || bad "naming $TOP: $refs"
	rp=""
	for f in "$S"/usr/bin/* "$S"/usr/lib/*.so; do
		readelf -h "$f" >/dev/null 2>&1 || continue
		p=$(readelf -d "$f" | grep -E 'R(UN)?PATH')
		case $p in *"$TOP"*) rp="$rp $f: $p" ;; esac
	done
	[ -z "$rp" ] && ok "no RPATH/RUNPATH into the tree" || bad "RPATH into the tree:$rp"
	echo "# site edit" >>"$S/etc/storm/storm.conf"
	expect "install again over an edited storm.conf" 0 "${MK[@]}" install DESTDIR="$S" PREFIX=/usr
	grep -q "site edit" "$S/etc/storm/storm.conf" && [ -f "$S/etc/storm/storm.conf.example" ] &&
		ok "  the site's storm.conf kept, the new one as storm.conf.example" ||
		bad "  the edited storm.conf was not kept beside a storm.conf.example"
	expect "make uninstall" 0 "${MK[@]}" uninstall DESTDIR="$S" PREFIX=/usr
	left=$(find "$S" ! -type d | grep -v "^$S/etc/storm/storm.conf$")
	[ -z "$left" ] && ok "  leaves only the site's edited storm.conf" || bad "  left: $left"
	rm -f "$S/etc/storm/storm.conf"
	expect "install + uninstall" 0 sh -c "${MK[*]} install DESTDIR=$S PREFIX=/usr && ${MK[*]} uninstall DESTDIR=$S PREFIX=/usr"
	left=$(find "$S" ! -type d)
	[ -z "$left" ] && ok "  leave the DESTDIR without a file" || bad "  left: $left"

	# ---- 2. a real prefix, run with the tree hidden
	cd "$T" || exit 1
	P=$T/root/usr/local
	expect "make install PREFIX=$P" 0 "${MK[@]}" install PREFIX="$P"
	# the tree out of reach: an empty tmpfs over it, for this process and
	# every one it starts (the daemons, munged, the ranks)
	unshare --mount --propagation private sh -c \
		'mount -t tmpfs -o size=1m storm-hidden "$1" && shift && exec "$@"' \
		sh "$TOP" bash "$T/test_install.sh" --hidden "$T" "$P" "$TOP" "$checks" "$fails"
	rc=$?
	[ $rc -eq 0 ] || fails=$((fails + 1))
	echo "install test: done (tree hidden: exit $rc)"
	[ $fails -eq 0 ] && exit 0 || exit 1
fi

# ---- inside the namespace: only the installed files
T=$2 P=$3 TOP=$4 checks=$5 fails=$6
. "$T/lib.sh"
C=$T/c
NAME=$(hostname -s)
MUNGED_PID="" UNIT_PIDS=""
cleanup() {
	for p in $UNIT_PIDS; do kill "$p" 2>/dev/null; done
	for p in $UNIT_PIDS; do gone "$p" || kill -9 "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	cluster_teardown_keep
	[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID" 2>/dev/null
}
# cluster_teardown without removing $T (the outer script does)
cluster_teardown_keep() {
	storm cluster down --dir "$C" >/dev/null 2>&1
	if [ -f "$C/pids" ]; then
		while read -r pid _; do kill -9 "$pid" 2>/dev/null; done <"$C/pids"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
export PATH=$P/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LD_LIBRARY_PATH=$P/lib
unset STORM_CONF PKG_CONFIG_PATH
cd "$T" || exit 1

[ ! -e "$TOP/Makefile" ] && ok "the source tree is hidden" || bad "the source tree is reachable"

for m in man1/storm.1 man5/storm.conf.5; do
	MANWIDTH=80 man --warnings -l "$P/share/man/$m" >"$T/out" 2>"$T/err"
	if [ -s "$T/err" ]; then bad "man -l $m warns: $(head -3 "$T/err")"
	elif grep -q "^NAME" "$T/out"; then ok "man -l $m renders without warnings"
	else bad "man -l $m: no NAME section"; fi
done

cat >"$T/sum.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
	int rank, size, sum;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank %d of %d: sum %d\n", rank, size, sum);
	MPI_Finalize();
	return 0;
}
EOF
expect "installed bcs-mpicc compiles an MPI program" 0 bcs-mpicc -O2 -Wall -Werror sum.c -o sum
lib=$(env -u LD_LIBRARY_PATH ldd "$T/sum" 2>&1 | grep libbcsmpi)
case $lib in *"=> $P/lib/libbcsmpi.so"*) ok "  it finds $P/lib/libbcsmpi.so by its run path" ;;
*) bad "  libbcsmpi: $lib" ;; esac
expect "pkg-config on the installed bcsmpi.pc" 0 env PKG_CONFIG_PATH="$P/lib/pkgconfig" pkg-config --cflags bcsmpi
has "  names the installed mpi.h" out "-I$P/include/bcsmpi"

expect "installed storm cluster up --nodes 2" 0 storm cluster up --nodes 2 --dir "$C"
export STORM_CONF=$C/storm.conf
exes=""
while read -r pid _; do exes="$exes $(readlink "/proc/$pid/exe")"; done <"$C/pids"
case $exes in *" $P/bin/stormmm"*" $P/bin/stormnd"*) ok "  its daemons are the installed ones" ;;
*) bad "  daemons:$exes" ;; esac
expect "the program runs: storm run -N 2 -n 4" 0 timeout 60 storm run -N 2 -n 4 ./sum
for r in 0 1 2 3; do has_line "  rank $r's line" out "rank $r of 4: sum 6"; done
expect "installed storm cluster down" 0 storm cluster down --dir "$C"
unset STORM_CONF

# ---- the units' ExecStart lines on a fresh root F: what systemd would make
# for each (RuntimeDirectory= below /run, StateDirectory= below /var/lib), and
# nothing else; the shipped storm.conf with the node list, munged's socket
# and those roots changed as a site (here: a test) must
F=$T/fresh
U=$P/lib/systemd/system
ETC=$P/etc/storm
mkdir -p "$F"
for unit in stormmm stormnd; do
	for d in $(sed -n 's/^RuntimeDirectory=//p' "$U/$unit.service"); do mkdir -p "$F/run/$d"; done
	for d in $(sed -n 's/^StateDirectory=//p' "$U/$unit.service"); do mkdir -p "$F/var/lib/$d"; done
done
start_munged "$T/munge" || bad "munged did not start"
sed -i -e "s|^names = .*|names = $NAME|" -e "s|/run/|$F/run/|" -e "s|/var/lib/|$F/var/lib/|" \
	-e "s|^\[cluster\]|[cluster]\nmunge_socket = $T/munge/munge.socket|" "$ETC/storm.conf"
key=$(sed -n 's/^AssertPathExists=//p' "$U/stormnd.service")
[ "$key" = "$ETC/cluster.key" ] && ok "the units assert the installed cluster key" ||
	bad "AssertPathExists=$key"
head -c 32 /dev/urandom >"$ETC/cluster.key" && chmod 600 "$ETC/cluster.key"
for unit in stormmm stormnd; do
	cmd=$(sed -n 's/^ExecStart=//p' "$U/$unit.service" | sed "s/%l/$NAME/g")
	# shellcheck disable=SC2086
	$cmd >"$T/$unit.log" 2>&1 &
	UNIT_PIDS="$UNIT_PIDS $!"
done
# the node's "up" line comes once its own endpoint is open; its first strobe
# is what proves the MM (which listens before it joins) reached it
if wait_log "$T/stormnd.log" "first strobe" 30; then ok "stormnd from its unit joins the MM from its unit"
else bad "stormnd did not come up"; sed 's/^/     | /' "$T/stormmm.log" "$T/stormnd.log" | tail -20; fi
[ -S "$F/run/storm/mm.sock" ] && ok "  the MM listens in its RuntimeDirectory" || bad "  no $F/run/storm/mm.sock"
[ -d "$F/var/lib/storm/$NAME/jobs" ] && ok "  the node's state below its StateDirectory" ||
	bad "  no $F/var/lib/storm/$NAME/jobs"
# the installed storm finds PREFIX/etc/storm/storm.conf by itself, unless a
# virtual cluster of root's (/tmp/storm-0) comes first
conf=()
[ -e /tmp/storm-0/storm.conf ] && conf=(--conf "$ETC/storm.conf")
expect "the installed storm finds $ETC/storm.conf and runs a job there" 0 \
	timeout 60 storm "${conf[@]}" run -N 1 -n 2 ./sum
for r in 0 1; do has_line "  rank $r's line" out "rank $r of 2: sum 1"; done

echo "install test (tree hidden): $checks checks, $fails failed"
[ "$fails" -eq 0 ]
