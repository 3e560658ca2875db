#!/bin/sh
# Builds storm.ko (kernel/) with kbuild against the newest Debian
# linux-headers-*-amd64 installed, out of the source tree: the sources are
# copied to BUILD/kernel/src (kbuild writes its objects beside them).
#     scripts/kmod.sh BUILD        -> BUILD/kernel/storm.ko, BUILD/kernel/kdir
set -eu
build=${1:?usage: kmod.sh BUILD}
kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -n1)
if [ -z "$kdir" ]; then
	echo "kmod: no /usr/src/linux-headers-*-amd64 (install linux-headers-amd64: make kernel-deps)" >&2
	exit 1
fi
src="$build/kernel/src"
mkdir -p "$src/uapi/linux"
# copy only what changed, so kbuild rebuilds only that
for f in Kbuild storm_main.c storm_sched.c storm_sched.h uapi/linux/storm.h; do
	cmp -s "kernel/$f" "$src/$f" || cp "kernel/$f" "$src/$f"
done
make -s -C "$kdir" M="$(cd "$src" && pwd)" modules
cp "$src/storm.ko" "$build/kernel/storm.ko"
echo "$kdir" > "$build/kernel/kdir"
echo "kmod: $build/kernel/storm.ko built against $kdir"
