#!/bin/sh
# Builds the do-nothing program of the launch experiment: main returns 0 at
# once, and an initialised data array of random bytes (.incbin into .data)
# pads the executable to exactly SIZE_MIB MiB, so every byte is really in the
# file and no transfer can compress it away or skip a sparse hole. Statically
# linked, so the binary alone is the whole program (nothing else to transfer).
#
#   bench/launch/make-app.sh SIZE_MIB OUT      e.g. make-app.sh 12 build/bench/app-12M
set -eu

usage() { echo "usage: $0 SIZE_MIB OUT" >&2; exit 2; }
[ $# -eq 2 ] || usage
size_mib=$1 out=$2
case $size_mib in '' | *[!0-9]*) usage ;; esac
[ "$size_mib" -ge 1 ] || usage
CC=${CC:-cc}
target=$((size_mib * 1048576))

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/app.c" <<'EOF'
/* bench/launch do-nothing program; storm_pad is what makes it big. */
__asm__(".section .data\n"
	".balign 64\n"
	".globl storm_pad\n"
	".type storm_pad, @object\n"
	"storm_pad:\n"
	".incbin \"" PADFILE "\"\n"
	".size storm_pad, . - storm_pad\n"
	".previous\n");

int main(void)
{
	return 0;
}
EOF

static=-static
build() { # pad bytes -> $tmp/app
	head -c "$1" /dev/urandom >"$tmp/pad.bin"
	# shellcheck disable=SC2086
	$CC -O2 $static -DPADFILE="\"$tmp/pad.bin\"" -o "$tmp/app" "$tmp/app.c"
}
if ! build 0 2>/dev/null; then
	static="" # no static libc: a dynamic binary still carries its padding
	build 0
fi
# The size without padding, then padding for the rest; alignment moves the
# result by a few bytes, which random bytes appended after the ELF contents
# make up (the loader ignores them; they are transferred like the rest).
base=$(stat -c %s "$tmp/app")
[ "$base" -lt "$target" ] || { echo "$0: the empty program is already $base bytes" >&2; exit 1; }
pad=$((target - base))
build "$pad"
while [ "$(stat -c %s "$tmp/app")" -gt "$target" ]; do
	pad=$((pad - 64))
	build "$pad"
done
got=$(stat -c %s "$tmp/app")
head -c $((target - got)) /dev/urandom >>"$tmp/app"
mkdir -p "$(dirname "$out")"
mv "$tmp/app" "$out"
chmod 755 "$out"
