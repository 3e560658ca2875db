#!/bin/sh
# make kernel-check: boots Debian's kernel (the version storm.ko was built
# against) under QEMU with software emulation, from an initramfs holding
# busybox, storm.ko, the guest test (tests/kernel/guest.c), storm's daemons
# and CLI with munged and every library they load, and
# tests/kernel/guest_cluster.sh; its /init loads the module, tests it on its
# own, then brings a storm cluster up whose stormnd switches through it, and
# powers off. The verdict is read from the serial console. The kernel package
# is unpacked into BUILD/kernel/image, never installed.
#     tests/kernel/run_vm.sh BUILD
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
cp "$build/kernel/storm.ko" "$build/kernel/storm_guest" tests/kernel/guest_cluster.sh "$root/"
# storm's programs at the paths an install gives them, with their libraries
mkdir -p "$root/usr/bin" "$root/usr/sbin" "$root/etc" "$root/tmp"
for b in storm storm-cluster stormmm stormnd; do cp "$build/bin/$b" "$root/usr/bin/"; done
cp /usr/sbin/munged "$root/usr/sbin/"
for b in "$root"/usr/bin/* "$root/usr/sbin/munged"; do
	ldd "$b" | awk '/=> \//{ print $3 } /^\t\/lib/{ print $1 }'
done | sort -u | while read -r lib; do
	mkdir -p "$root${lib%/*}"
	cp -L "$lib" "$root$lib"
done
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
	/storm_guest
	rc=$?
	if [ $rc = 0 ]; then
		ip link set lo up
		mount -t tmpfs tmp /tmp
		mkdir -p /dev/shm && mount -t tmpfs shm /dev/shm
		mkdir -p /sys/fs/cgroup && mount -t cgroup2 cgroup2 /sys/fs/cgroup
		export PATH=/usr/bin:/usr/sbin:/bin
		/guest_cluster.sh signals && /guest_cluster.sh freezer || rc=1
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
