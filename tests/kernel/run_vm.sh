#!/bin/sh
# make kernel-check: boots Debian's kernel (the version storm.ko was built
# against) under QEMU with software emulation, from an initramfs holding
# busybox, storm.ko, the guest test (tests/kernel/guest.c), storm's daemons
# and CLI with munged and every library they load, and
# tests/kernel/guest_cluster.sh; its /init loads the module, tests it on its
# own, then brings a storm cluster up whose stormnd switches through it, then
# runs the network layer and BCS-MPI over verbs on soft-RoCE
# (tests/kernel/guest_rdma.sh), and powers off. The verdict is read from the serial console. The kernel package
# is unpacked into BUILD/kernel/image, never installed.
#     tests/kernel/run_vm.sh BUILD
# STORM_VM_ONLY=rdma runs guest_rdma.sh alone (no module test, no
# scheduling cluster): minutes shorter, to work on the RDMA path.
set -eu
build=${1:?usage: run_vm.sh BUILD}
# a deadline against a hang only: under TCG on a loaded host the boot alone
# has taken over 300 s
timeout_s=${STORM_VM_TIMEOUT:-1200}
kdir=$(cat "$build/kernel/kdir")
kver=${kdir##*/linux-headers-}
img="$build/kernel/image"
vmlinuz="$img/boot/vmlinuz-$kver"
if [ ! -f "$vmlinuz" ]; then
	mkdir -p "$img"
	# apt-get download writes into the current folder as the _apt user
	tmp=$(mktemp -d)
	chmod 777 "$tmp"
	# a mirror's hiccup is not the module's failure: three tries
	tries=0
	until (cd "$tmp" && apt-get download -q "linux-image-$kver" >/dev/null); do
		tries=$((tries + 1))
		if [ $tries = 3 ]; then
			echo "kernel-check: FAIL: cannot download linux-image-$kver (3 tries)" >&2
			exit 1
		fi
		sleep 5
	done
	dpkg -x "$tmp"/linux-image-"$kver"_*.deb "$img"
	rm -rf "$tmp"
fi

root="$build/kernel/initramfs"
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
cp /bin/busybox "$root/bin/busybox"
for c in sh mount insmod rmmod poweroff cat echo dmesg sleep ip grep tail mkdir find xargs; do
	ln -s busybox "$root/bin/$c"
done
cp "$build/kernel/storm.ko" "$build/kernel/storm_guest" tests/kernel/guest_cluster.sh \
	tests/kernel/guest_rdma.sh "$root/"
# storm's programs at the paths an install gives them, with their libraries
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/etc" "$root/tmp"
for b in storm storm-cluster stormmm stormnd sn_mptest; do cp "$build/bin/$b" "$root/usr/bin/"; done
cp /usr/sbin/munged "$root/usr/sbin/"
# soft-RoCE (tests/kernel/guest_rdma.sh): the kernel package's rdma_rxe and
# the modules it and the RDMA connection manager need, in the order they
# load (the package has no modules.dep: depmod makes it on install), with
# the crc32 hash rxe asks the crypto layer for (the guest has no modprobe to
# load it on demand: without it adding a device fails with ENOENT);
# rdma-core's rxe provider; iproute2's ip (ahead of busybox's on the
# guest's PATH: the veth pair, and `ip -n -batch` for --netns) and rdma;
# a BCS-MPI ring
kmod="$img/lib/modules/$kver/kernel"
mkdir -p "$root/lib/modules/rdma"
for m in crypto/crc32_generic drivers/infiniband/core/ib_core drivers/infiniband/core/ib_uverbs \
	net/ipv4/udp_tunnel net/ipv6/ip6_udp_tunnel drivers/infiniband/sw/rxe/rdma_rxe \
	drivers/infiniband/core/ib_cm drivers/infiniband/core/iw_cm fs/configfs/configfs \
	drivers/infiniband/core/rdma_cm drivers/infiniband/core/rdma_ucm drivers/net/veth; do
	cp "$kmod/$m.ko" "$root/lib/modules/rdma/"
	echo "${m##*/}" >> "$root/lib/modules/rdma/order"
done
verbs=/usr/lib/x86_64-linux-gnu/libibverbs
mkdir -p "$root$verbs" "$root/etc/libibverbs.d"
cp "$verbs/librxe-rdmav34.so" "$root$verbs/"
cp /etc/libibverbs.d/rxe.driver "$root/etc/libibverbs.d/"
cp /usr/bin/rdma "$root/usr/bin/"
cp /usr/bin/ip "$root/usr/sbin/ip"
"$build/bin/bcs-mpicc" tests/cluster/mpi/ring.c -o "$root/usr/bin/ring"
# the ranks' endpoint library, which libbcsmpi.so loads from beside itself
# (not a link-time dependency: ldd does not name it)
eplib=$(ldd "$root/usr/bin/ring" | awk '/libbcsmpi.so => \//{ print $3 }')
eplib=${eplib%/*}/libbcsmpi_ep.so
mkdir -p "$root${eplib%/*}"
cp -L "$eplib" "$root$eplib"
for b in "$root"/usr/bin/* "$root/usr/sbin/munged" "$root/usr/sbin/ip" "$root$verbs"/*.so "$root$eplib"; do
	ldd "$b" | awk '/=> \//{ print $3 } /^\t\/lib/{ print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$root${lib%/*}"
	cp -L "$lib" "$root$lib"
done
# the guest mounts its own /tmp: a build there (a clone in /tmp) would be
# hidden, so its libraries go where the loader looks anyway, the endpoint
# library beside them
case $eplib in /tmp/*)
	for l in "${eplib%/*}"/*.so*; do cp -L "$l" "$root/usr/lib/x86_64-linux-gnu/"; done ;;
esac
echo 'root:x:0:0:root:/root:/bin/sh' > "$root/etc/passwd"
echo 'root:x:0:' > "$root/etc/group"
cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "guest: $(cat /proc/version)"
# a bound of minutes: a deadline against a hang only; each switch waits
# for its event (every outgoing task off the CPU), however slow the guest
if insmod /storm.ko bound_us=120000000; then
	rc=0
	[ -f /only-rdma ] || /storm_guest || rc=$?
	if [ $rc = 0 ]; then
		ip link set lo up
		mount -t tmpfs tmp /tmp
		mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
		mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
		export PATH=/usr/bin:/usr/sbin:/bin
		if [ ! -f /only-rdma ]; then
			/guest_cluster.sh signals && /guest_cluster.sh freezer || rc=1
		fi
		/guest_rdma.sh || rc=1
	fi
	echo "guest-exit: $rc"
	rmmod storm && echo "guest: storm unloaded"
else
	echo "FAIL: insmod storm.ko"
	echo "guest-exit: 1"
fi
dmesg | grep -i storm
poweroff -f
INIT
chmod +x "$root/init"
case ${STORM_VM_ONLY:-} in
'') ;;
rdma) touch "$root/only-rdma" ;;
*) echo "kernel-check: STORM_VM_ONLY=$STORM_VM_ONLY: only 'rdma' is known" >&2; exit 2 ;;
esac
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 > "$build/kernel/initramfs.cpio.gz"

log="$build/kernel/console.log"
start=$(date +%s)
# -no-reboot: a panic or reboot ends QEMU too
timeout "$timeout_s" qemu-system-x86_64 -accel tcg -m 1024M -smp 2 -nographic -no-reboot \
	-kernel "$vmlinuz" -initrd "$build/kernel/initramfs.cpio.gz" \
	-append "console=ttyS0 panic=-1 quiet loglevel=4" </dev/null >"$log" 2>&1 || true
took=$(($(date +%s) - start))
tr -d '\r' <"$log" | grep -E '^(PASS|FAIL|note|guest|kernel-check)|storm' || true
echo "kernel-check: boot and test took ${took}s under TCG (console log: $log)"
if grep -q '^guest-exit: 0' "$log" && ! grep -q '^FAIL' "$log"; then
	exit 0
fi
echo "kernel-check: FAIL (no clean verdict on the console)" >&2
exit 1
