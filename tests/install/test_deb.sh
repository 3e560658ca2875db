#!/bin/bash
# The Debian package as a site gets it, without installing it on this host:
#  1. make deb builds it into build/deb and leaves the tree as it was (no
#     file changed or added, nothing written beside the tree);
#  2. its control data: the version is the one storm --version prints, the
#     dependencies name munge and the libraries storm links, storm.conf is a
#     conffile, the postinst of a fresh install enables no unit (a site
#     configures storm.conf and the cluster key first), lintian finds no error;
#  3. its files: the binaries, libbcsmpi, mpi.h, bcsmpi.pc, the man pages, the
#     units, storm.conf, unpacked (dpkg -x) into a scratch root: linked with
#     the hardening flags, every library they need is found, the programs run
#     (--version, --help), the man pages render without warnings, a program
#     compiles against the packaged mpi.h and links the packaged libbcsmpi.
# Starts no daemon or cluster. Usage: tests/install/test_deb.sh (make debtest)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
. "$TOP/tests/cluster/lib.sh"
T=$(mktemp -d /tmp/storm-debtest.XXXXXX)
fails=0 checks=0
cleanup() {
	fail_report
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
D=$TOP/build/deb

# ---- 1. the build, and the tree after it
tree_state() {
	git -C "$TOP" status --porcelain --untracked-files=all 2>/dev/null
	# dpkg-buildpackage's own output directory is the tree's parent
	for f in "$TOP"/../storm[-_]*.{deb,changes,buildinfo}; do [ -e "$f" ] && echo "$f"; done
}
tree_state >"$T/before"
# a whole build from scratch is slow, not stuck, on a loaded machine: its
# bound is for a hang only
STEP_LIMIT=2400 expect "make deb" 0 make -s -C "$TOP" deb
tree_state >"$T/after"
if cmp -s "$T/before" "$T/after"; then ok "  the tree and its parent are as they were"
else bad "  make deb changed the tree:"; diff "$T/before" "$T/after" | sed 's/^/     | /' | head -20; fi
debs=("$D"/storm_*.deb)
if [ ${#debs[@]} -eq 1 ] && [ -f "${debs[0]}" ]; then ok "  one storm .deb in build/deb"
else bad "  build/deb holds: $(ls "$D" 2>&1)"; echo "debtest: $checks checks, $fails failed"; exit 1; fi
DEB=${debs[0]}

# ---- 2. control data
X=$T/root
dpkg-deb -x "$DEB" "$X" && dpkg-deb -e "$DEB" "$T/DEBIAN" || bad "dpkg-deb cannot unpack $DEB"
ver=$(dpkg-deb -f "$DEB" Version)
sv=$(LD_LIBRARY_PATH=$X/usr/lib "$X/usr/bin/storm" --version | awk '{print $2}')
[ -n "$ver" ] && [ "$ver" = "$sv" ] && ok "package version $ver is storm --version's" ||
	bad "package version '$ver', storm --version '$sv' (debian/changelog against cli/main.c)"
dep=$(dpkg-deb -f "$DEB" Depends)
lack=""
for p in munge libfabric1 libmunge2 libprotobuf-c1 libpmix2 libsqlite3-0 libc6; do
	case "$dep," in "$p "* | "$p,"* | *" $p "* | *" $p,"*) ;; *) lack="$lack $p" ;; esac
done
[ -z "$lack" ] && ok "Depends names munge and the linked libraries" || bad "Depends lacks$lack: $dep"
grep -qx /etc/storm/storm.conf "$T/DEBIAN/conffiles" && ok "/etc/storm/storm.conf is a conffile" ||
	bad "conffiles: $(cat "$T/DEBIAN/conffiles" 2>&1)"
# the postinst of a first install, against a system where the units were
# never installed: what it asks of systemd's helpers is logged, not done
mkdir -p "$T/stub"
for c in deb-systemd-helper deb-systemd-invoke systemctl; do
	cat >"$T/stub/$c" <<EOF
#!/bin/sh
echo "$c \$*" >>"$T/calls"
# as on a system that never had the units: not installed by dpkg before,
# and new units count as enabled (what makes a default postinst enable them)
case "\$*" in *debian-installed*) exit 1 ;; esac
exit 0
EOF
	chmod +x "$T/stub/$c"
done
: >"$T/calls"
expect "postinst configure (first install, systemd helpers stubbed)" 0 \
	env PATH="$T/stub:$PATH" sh "$T/DEBIAN/postinst" configure ""
if grep -qE ' enable|systemctl.* (start|enable)' "$T/calls"; then
	bad "  the postinst enables or starts a unit: $(grep -E 'enable|start' "$T/calls")"
else ok "  enables and starts no unit"; fi
if command -v lintian >/dev/null; then
	# the overrides' reasons are in debian/storm.lintian-overrides
	lintian --fail-on error "$DEB" >"$T/lintian" 2>&1 &&
		ok "lintian: no errors ($(grep -c '^W:' "$T/lintian") warnings)" ||
		{ bad "lintian errors:"; grep '^E:' "$T/lintian" | sed 's/^/     | /'; }
else bad "lintian is not installed (scripts/install-deps.sh)"; fi

# ---- 3. the files, unpacked
for f in usr/bin/storm usr/bin/stormmm usr/bin/stormnd usr/bin/storm-cluster usr/bin/storm-ckpt \
	usr/bin/bcs-mpicc usr/bin/bcs-mpicxx usr/bin/bcs-mpic++ usr/lib/libbcsmpi.so \
	usr/lib/libbcsmpi.a usr/lib/pkgconfig/bcsmpi.pc usr/include/bcsmpi/mpi.h \
	usr/share/man/man1/storm.1.gz usr/share/man/man5/storm.conf.5.gz \
	lib/systemd/system/stormmm.service lib/systemd/system/stormnd.service etc/storm/storm.conf \
	usr/share/doc/storm/copyright usr/lib/storm/slurm/bin/sbatch usr/lib/storm/slurm/bin/sacct \
	usr/lib/storm/slurm/bin/squeue usr/lib/storm/slurm/bin/scancel usr/lib/storm/slurm/bin/srun; do
	[ -e "$X/$f" ] || lack="$lack /$f"
done
[ -z "$lack" ] && ok "the package holds the programs, BCS-MPI, man pages, units and storm.conf" ||
	bad "not in the package:$lack"
grep -qx "ExecStart=/usr/bin/stormnd -c /etc/storm/storm.conf -n %l" \
	"$X/lib/systemd/system/stormnd.service" && ok "stormnd.service runs /usr/bin/stormnd on /etc/storm" ||
	bad "stormnd.service: $(grep ExecStart "$X/lib/systemd/system/stormnd.service")"
soft=""
for f in "$X"/usr/bin/storm* "$X"/usr/lib/libbcsmpi.so; do
	readelf -d "$f" | grep -q 'FLAGS.*NOW' && readelf -lW "$f" | grep -q GNU_RELRO || soft="$soft ${f#"$X"}"
done
[ -z "$soft" ] && ok "the programs and libbcsmpi are linked read-only after relocation (relro, bindnow)" ||
	bad "not relro+bindnow (dpkg-buildflags' LDFLAGS unused?):$soft"
refs=$(grep -rlF -- "$TOP" "$X")
[ -z "$refs" ] && ok "no packaged file names the tree" || bad "naming $TOP: $refs"

# the packaged libbcsmpi in place of any installed one; each program's other
# libraries from the system, as the Depends promise
export LD_LIBRARY_PATH=$X/usr/lib
missing=$(for f in "$X"/usr/bin/* "$X"/usr/lib/libbcsmpi.so; do
	readelf -h "$f" >/dev/null 2>&1 && ldd "$f" | grep 'not found' | sed "s|^|${f#"$X"}: |"; done)
[ -z "$missing" ] && ok "every library the programs need is found" || bad "unresolved: $missing"
expect "packaged storm --version" 0 "$X/usr/bin/storm" --version
has "  prints its version" out "storm $ver"
for b in storm stormmm stormnd storm-cluster storm-ckpt; do
	expect "packaged $b --help" 0 "$X/usr/bin/$b" --help
done
for m in man1/storm.1.gz man5/storm.conf.5.gz; do
	MANWIDTH=80 man --warnings -l "$X/usr/share/man/$m" >"$T/out" 2>"$T/err"
	if [ -s "$T/err" ]; then bad "man -l $m warns: $(head -3 "$T/err")"
	elif grep -q "^NAME" "$T/out"; then ok "man -l $m renders without warnings"
	else bad "man -l $m: no NAME section"; fi
done
expect "packaged bcs-mpicc -show" 0 "$X/usr/bin/bcs-mpicc" -show sum.c
has "  includes /usr/include/bcsmpi, links /usr/lib" out \
	"-I/usr/include/bcsmpi sum.c -L/usr/lib -Wl,-rpath,/usr/lib -lbcsmpi"
cat >"$T/sum.c" <<'EOF'
#include <mpi.h>
int main(int argc, char **argv)
{
	int rank, sum;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
EOF
# the wrapper's own command with the unpacked root's directories: the
# packaged mpi.h and libbcsmpi.so (not installed here) are what it uses
cmd=$("$X/usr/bin/bcs-mpicc" -show "$T/sum.c" -o "$T/sum" | sed -e "s| -I/usr/| -I$X/usr/|" -e "s| -L/usr/| -L$X/usr/|")
# shellcheck disable=SC2086
expect "an MPI program compiles and links against the packaged BCS-MPI" 0 $cmd -Wall -Werror
lib=$(ldd "$T/sum" 2>&1 | grep libbcsmpi)
case $lib in *"=> $X/usr/lib/libbcsmpi.so"*) ok "  it needs the packaged libbcsmpi.so" ;;
*) bad "  libbcsmpi: $lib" ;; esac

echo "debtest: $checks checks, $fails failed"
[ "$fails" -eq 0 ]
