#!/bin/sh
# make kernel-check: boots Debian's kernel (the version storm.ko was built
# against) under QEMU with software emulation, from an initramfs holding
# busybox, storm.ko and the guest test (tests/kernel/guest.c); its /init loads
# the module, runs the test and powers off. The verdict is read from the serial
# console. The kernel package is unpacked into BUILD/kernel/image, never
# installed.
#     tests/kernel/run_vm.sh BUILD
set -eu
build=${1:?usage: run_vm.sh BUILD}
timeout_s=${STORM_VM_TIMEOUT:-300}
kdir=$(cat "$build/kernel/kdir")
kver=${kdir##*/linux-headers-}
img="$build/kernel/image"
vmlinuz="$img/boot/vmlinuz-$kver"
if [ ! -f "$vmlinuz" ]; then
	mkdir -p "$img"
	# apt-get download writes into the current folder as the _apt user
	tmp=$(mktemp -d)
	chmod 777 "$tmp"
	(cd "$tmp" && apt-get download -q "linux-image-$kver" >/dev/null)
	dpkg -x "$tmp"/linux-image-"$kver"_*.deb "$img"
	rm -rf "$tmp"
fi

root="$build/kernel/initramfs"
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev"
cp /bin/busybox "$root/bin/busybox"
for c in sh mount insmod rmmod poweroff cat echo dmesg sleep; do ln -s busybox "$root/bin/$c"; done
cp "$build/kernel/storm.ko" "$build/kernel/storm_guest" "$root/"
cat > "$root/init" <<'INIT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
echo "guest: $(cat /proc/version)"
if insmod /storm.ko bound_us=100000; then
	/storm_guest
	echo "guest-exit: $?"
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
timeout "$timeout_s" qemu-system-x86_64 -accel tcg -m 512M -smp 2 -nographic -no-reboot \
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
