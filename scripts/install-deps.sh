#!/bin/sh
# Installs the Debian packages storm needs to build and test, only those missing.
# Called by `make demo` and `make check`; safe to run repeatedly. Needs root (or sudo).
set -eu

build_pkgs="build-essential pkg-config libfabric-dev libfabric-bin libprotobuf-c-dev
protobuf-c-compiler libcunit1-dev libinih-dev libjansson-dev libsodium-dev
libclang-rt-14-dev clang valgrind python3 iproute2 munge libmunge-dev passwd gdb
mpich libmpich-dev libsqlite3-dev sqlite3 iptables libnetfilter-queue-dev libxxhash-dev
libmicrohttpd-dev python3-prometheus-client chromium libelf-dev cmake
libpmix-dev openmpi-bin libopenmpi-dev pandoc man-db linux-perf
slurm-wlm slurmctld slurmd slurm-client debhelper dpkg-dev lintian"
# munge, libmunge-dev: control-message credentials (the virtual cluster runs its
# own munged); passwd: useradd/groupadd for tests/cluster/test_users.sh;
# gdb: storm replay --debug (tests/cluster/test_mpi.sh);
# libpmix-dev: the node daemon's PMIx server for Open MPI jobs (daemons/node/pmix.c);
# openmpi-bin, libopenmpi-dev: Open MPI programs under it (tests/cluster/test_pmix.sh)
# mpich, libmpich-dev: tests/mpi checks BCS-MPI's output against MPICH's (make mpitest)
# libsqlite3-dev: the MM's database; iptables, libnetfilter-queue-dev: packet
# loss and delay in tests/cluster/test_faults.sh (nfq_netem); libmicrohttpd-dev: the
# MM's metrics endpoint and storm web; python3-prometheus-client: its test parses
# the exposition; chromium: storm web's page is tested headless; cmake:
# tests/mpi/test_wrapper.sh builds a CMake project with bcs-mpicc and bcs-mpicxx;
# libelf-dev: storm run reads which MPI a program is linked with (--mpi=auto)
# pandoc: the man pages (make man); man-db: tests/install renders them
# debhelper, dpkg-dev: make deb (debian/); lintian: tests/install/test_deb.sh checks its result
# linux-perf: tests/cluster/gang_overlap.py traces sched_switch for the exact overlap
# slurm-wlm (slurmctld, slurmd, slurm-client): tests/slurm/test_alloc.sh runs storm
# inside allocations of a private Slurm cluster, and bench/launch compares with it
# (bench/launch/slurm-cluster.sh runs its own munged/slurmctld/slurmd; the system
# services are not used)
bench_pkgs="gnuplot-nox hyperfine"
# make kernel / kernel-check only: storm.ko's kbuild (linux-headers-amd64 names the
# versioned headers), and the VM that loads it: QEMU, a static busybox and cpio for
# its initramfs (the matching linux-image is unpacked into build/, not installed)
kernel_pkgs="linux-headers-amd64 qemu-system-x86 busybox-static cpio"

want="$build_pkgs"
[ "${1:-}" = "--bench" ] && want="$want $bench_pkgs"
[ "${1:-}" = "--kernel" ] && want="$want $kernel_pkgs"

missing=""
for p in $want; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
