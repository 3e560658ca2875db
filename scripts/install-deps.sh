#!/bin/sh
# Installs the Debian packages storm needs, only those missing; safe to run
# repeatedly. Needs root (or sudo) when something is missing.
#
# Usage: install-deps.sh [--test | --bench | --kernel] [--list | --dry-run]
#   (none)    building storm and running it: `make demo`, `make all`
#   --test    and the test suites' tools: `make check`
#   --bench   and the benchmarks' peers: `make bench` (the test set too)
#   --kernel  and storm.ko's build and its VM: `make kernel`, `make kernel-check`
#   --list    print the set's packages, one a line; install nothing
#   --dry-run print the set's missing packages; install nothing
set -eu

# building (make all: the daemons, the CLI, BCS-MPI, the unit tests'
# binary) and running: munge's munged signs control messages (the virtual
# cluster runs its own); libpmix-dev: the node daemon's PMIx server
# (daemons/node/pmix.c); libelf-dev: storm run reads which MPI a program is
# linked with; libcunit1-dev: make all links build/bin/unit_tests
build_pkgs="build-essential pkg-config libfabric-dev libprotobuf-c-dev protobuf-c-compiler
libcunit1-dev libinih-dev libjansson-dev libsodium-dev munge libmunge-dev libsqlite3-dev
libxxhash-dev libmicrohttpd-dev libelf-dev libpmix-dev"
# the tests only (make check):
# clang, libclang-rt-14-dev: the fuzzers (make fuzz-check); valgrind: test_valgrind.sh;
# python3: the suites' helpers and make layers; iproute2: network namespaces
# (storm cluster up --netns/--hosts, test_netns.sh, make hoststest); passwd:
# useradd/groupadd for tests/cluster/test_users.sh; util-linux: setpriv runs
# storm as another user (tests/cluster/test_ckpt.sh); gdb: storm replay --debug
# (tests/cluster/test_mpi.sh) and a stuck test's stacks;
# openmpi-bin, libopenmpi-dev: Open MPI programs under PMIx (tests/cluster/test_pmix.sh);
# mpich, libmpich-dev: tests/mpi checks BCS-MPI's output against MPICH's (make mpitest);
# sqlite3: the database's upgrade test; iptables, libnetfilter-queue-dev: packet
# loss and delay in tests/cluster/test_faults.sh (nfq_netem); python3-prometheus-client:
# the metrics test parses the exposition; chromium: storm web's page is tested headless;
# cmake: tests/mpi/test_wrapper.sh builds a CMake project with bcs-mpicc and bcs-mpicxx;
# pandoc: the man pages (make man); man-db: tests/install renders them;
# debhelper, dpkg-dev: make deb (debian/); lintian: tests/install/test_deb.sh checks its result;
# ccache: make check's package build takes what the tree's build compiled;
# linux-perf: tests/cluster/gang_overlap.py traces sched_switch for the exact overlap;
# slurm-wlm (slurmctld, slurmd, slurm-client): tests/slurm/test_alloc.sh runs storm
# inside allocations of a private Slurm cluster, and bench/launch compares with it
# (bench/launch/slurm-cluster.sh runs its own munged/slurmctld/slurmd; the system
# services are not used); snakemake: a real workflow manager drives storm's
# Slurm commands with its --slurm executor (tests/cluster/test_snakemake.sh)
test_pkgs="clang libclang-rt-14-dev valgrind python3 iproute2 passwd util-linux gdb
openmpi-bin libopenmpi-dev mpich libmpich-dev sqlite3 iptables libnetfilter-queue-dev
python3-prometheus-client chromium cmake pandoc man-db debhelper dpkg-dev lintian ccache
linux-perf slurm-wlm slurmctld slurmd slurm-client snakemake"
# libfabric-bin: fi_pingpong, the primitives' peer; python3-matplotlib: the scale
# model's plots (make bench-scale, bench/scale/model/plots.py)
bench_pkgs="libfabric-bin gnuplot-nox hyperfine python3-matplotlib"
# make kernel / kernel-check only: storm.ko's kbuild (linux-headers-amd64 names the
# versioned headers), and the VM that loads it: QEMU, a static busybox and cpio for
# its initramfs (the matching linux-image is unpacked into build/, not installed);
# for soft-RoCE in the guest, rdma-core's rxe provider and iproute2's rdma
kernel_pkgs="linux-headers-amd64 qemu-system-x86 busybox-static cpio ibverbs-providers iproute2"

usage() {
	echo "usage: install-deps.sh [--test | --bench | --kernel] [--list | --dry-run]" >&2
	exit 2
}

want="$build_pkgs" mode=install
for a in "$@"; do
	case $a in
	--test) want="$want $test_pkgs" ;;
	--bench) want="$want $test_pkgs $bench_pkgs" ;;
	--kernel) want="$want $kernel_pkgs" ;;
	--list) mode=list ;;
	--dry-run) mode=dry ;;
	*) echo "install-deps: error: unknown option '$a'" >&2; usage ;;
	esac
done

if [ $mode = list ]; then
	# shellcheck disable=SC2086
	printf '%s\n' $want | sort -u
	exit 0
fi

missing=""
for p in $want; do
	case " $missing " in *" $p "*) continue ;; esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ $mode = dry ]; then
	echo "install-deps: would install:${missing:- nothing}"
	exit 0
fi
[ -z "$missing" ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
