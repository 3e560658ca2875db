#!/bin/bash
# bcs-mpicc and bcs-mpicxx as drop-in compilers: what -show, -compile-info,
# -link-info, -show-compile-info, -show-link-info, -v and -help print; no
# recursion into a wrapper whatever CC, CXX, BCS_MPICC_CC or -cc= name; the
# project of tests/mpi/wrapper built with `make CC=bcs-mpicc`, `CC=bcs-mpicc
# make`, pkg-config, and CMake three ways (the compilers as wrappers by
# -DCMAKE_*_COMPILER and by CC/CXX, or FindMPI's MPI_*_COMPILER); every
# program built runs on a 2-node virtual cluster and prints what MPICH's
# build prints under mpiexec.
#
# Usage: test_wrapper.sh [BUILD_BIN_DIR]
#   BUILT_CC, BUILT_CXX: the compilers storm was built with (the wrappers'
#   defaults; make mpitest passes them)
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../cluster/lib.sh
. "$HERE/../cluster/lib.sh"
BIN=$(cd "${1:-build/bin}" && pwd) || exit 2
PREFIX=$(dirname "$BIN")
T=$(mktemp -d "${TMPDIR:-/tmp}/storm-wrapper.XXXXXX")
C=$T/c
export PATH=$BIN:$PATH
export STORM_CONF=$C/storm.conf
export PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig
unset BCS_MPICC_CC BCS_MPICXX_CXX BCS_CC BCS_MPI_WRAPPER_ACTIVE
fails=0 checks=0
W=$HERE/wrapper
# a wrapper that loops forever would hang a check: it must fail it instead
# (LIMIT); a build gets longer (BUILD_LIMIT), as a CMake configuration takes
# ten times its usual second or two on this machine when other tests load it
LIMIT=60 BUILD_LIMIT=${MPI_TEST_TIMEOUT:-300}

cleanup() {
	fail_report
	if [ -f "$C/storm.conf" ]; then storm cluster down --dir "$C" >/dev/null 2>&1; fi
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# same NAME WANT: $T/out is exactly WANT (one line; trailing blanks aside)
same() {
	if [ "$(sed 's/[[:space:]]*$//' "$T/out")" = "$2" ]; then ok "$1"; else
		bad "$1"
		echo "     want: $2"
		sed 's/^/     got:  /' "$T/out" | head -5
	fi
}
# bcs_linked NAME PROG: PROG needs libbcsmpi.so from this build, not MPICH
bcs_linked() {
	local d
	d=$(readelf -d "$2" 2>/dev/null)
	if grep -q 'NEEDED.*\[libbcsmpi\.so\]' <<<"$d" && ! grep -q 'libmpi' <<<"$d" &&
		grep -q "PATH.*\[$PREFIX/lib\]" <<<"$d"; then
		ok "$1"
	else
		bad "$1: not linked against $PREFIX/lib/libbcsmpi.so"
		grep -E 'NEEDED|PATH' <<<"$d" | sed 's/^/     /'
	fi
}

INC="-I$PREFIX/include"
LIBS="-L$PREFIX/lib -Wl,-rpath,$PREFIX/lib -lbcsmpi"
CCDEF=${BUILT_CC:-cc} CXXDEF=${BUILT_CXX:-g++}

# ---- what the wrappers print
echo "# options"
expect "bcs-mpicc -show" 0 bcs-mpicc -show -O2 x.c -o x
same "  the link command, not run" "$CCDEF $INC -O2 x.c -o x $LIBS"
expect "bcs-mpicc -show -c" 0 bcs-mpicc -c x.c -show
same "  the compile command" "$CCDEF $INC -c x.c"
expect "bcs-mpicc -compile-info" 0 bcs-mpicc -compile-info x.c
same "  as -show (MPICH's)" "$CCDEF $INC x.c $LIBS"
expect "bcs-mpicc -link-info" 0 bcs-mpicc -link-info x.o -o x
same "  as -show (MPICH's)" "$CCDEF $INC x.o -o x $LIBS"
expect "bcs-mpicc -show-compile-info" 0 bcs-mpicc -show-compile-info
same "  the compile flags" "$INC"
expect "bcs-mpicc -show-link-info" 0 bcs-mpicc -show-link-info
same "  the link flags" "$LIBS"
expect "pkg-config --cflags --libs bcsmpi" 0 pkg-config --cflags --libs bcsmpi
same "  the same flags" "$INC $LIBS"
expect "bcs-mpicxx -show" 0 bcs-mpicxx -show a.cpp -o a
same "  with the C++ compiler" "$CXXDEF $INC a.cpp -o a $LIBS"
expect "bcs-mpic++ -show -c" 0 bcs-mpic++ -show -c a.cpp
same "  the same wrapper" "$CXXDEF $INC -c a.cpp"
expect "BCS_MPICC_CC=clang bcs-mpicc -show" 0 env BCS_MPICC_CC=clang bcs-mpicc -show x.c
same "  names clang" "clang $INC x.c $LIBS"
expect "bcs-mpicc -cc=clang -show" 0 bcs-mpicc -cc=clang -show -c x.c
same "  names clang" "clang $INC -c x.c"
expect "BCS_MPICXX_CXX=clang++ bcs-mpicxx -show" 0 env BCS_MPICXX_CXX=clang++ bcs-mpicxx -show -c a.cpp
same "  names clang++" "clang++ $INC -c a.cpp"
expect "CC=clang bcs-mpicc -show (CC is not read)" 0 env CC=clang bcs-mpicc -show -c x.c
same "  names the built-in compiler" "$CCDEF $INC -c x.c"
expect "bcs-mpicc -show -o T/never (nothing runs)" 0 bcs-mpicc -show "$W/hello.c" -o "$T/never"
if [ -e "$T/never" ]; then bad "  -show built it"; else ok "  nothing built"; fi
expect "bcs-mpicc -v" 0 bcs-mpicc -v
has "  its version line" out "bcs-mpicc for BCS-MPI (storm), MPI 3.1"
has "  then the compiler's" err "version"
expect "bcs-mpicc --version (the compiler's)" 0 bcs-mpicc --version
has "  a version" out "$("$CCDEF" --version | head -1)"
expect "bcs-mpicc -help" 0 bcs-mpicc -help
has "  usage" out "Usage: bcs-mpicc"
expect "bcs-mpicxx --help" 0 bcs-mpicxx --help
has "  usage" out "Usage: bcs-mpicxx"
expect "bcs-mpicc (no argument)" 1 bcs-mpicc
has "  says so" err "no arguments"

# ---- never into itself
echo "# recursion"
cp "$W/hello.c" "$T/h.c"
rec() {
	local name=$1 out=$2
	shift 2
	rm -f "$out"
	expect "$name" 0 timeout "$BUILD_LIMIT" "$@" </dev/null
	bcs_linked "  linked" "$out"
}
rec "CC=bcs-mpicc bcs-mpicc" "$T/h1" env CC=bcs-mpicc bcs-mpicc "$T/h.c" -o "$T/h1"
rec "CC=CXX=(wrappers) bcs-mpicxx" "$T/r1" env CC=bcs-mpicc CXX=bcs-mpicxx \
	bcs-mpicxx -std=c++17 -Wall -Wextra -Werror "$W/ring.cpp" -o "$T/r1"
rec "BCS_MPICC_CC=bcs-mpicc" "$T/h2" env BCS_MPICC_CC=bcs-mpicc bcs-mpicc "$T/h.c" -o "$T/h2"
rec "BCS_MPICXX_CXX=bcs-mpic++ bcs-mpicxx" "$T/r2" env BCS_MPICXX_CXX=bcs-mpic++ \
	bcs-mpicxx "$W/ring.cpp" -o "$T/r2"
rec "bcs-mpicc -cc=BIN/bcs-mpicc" "$T/h3" bcs-mpicc -cc="$BIN/bcs-mpicc" "$T/h.c" -o "$T/h3"
ln -s "$BIN/bcs-mpicc" "$T/mpicc"
rec "BCS_MPICC_CC=a symlink named mpicc" "$T/h4" env BCS_MPICC_CC="$T/mpicc" bcs-mpicc "$T/h.c" -o "$T/h4"
cp "$BIN/bcs-mpicc" "$T/mycc"
rec "BCS_MPICC_CC=a copy named mycc" "$T/h5" env BCS_MPICC_CC="$T/mycc" bcs-mpicc "$T/h.c" -o "$T/h5"
# a compiler that itself calls the wrapper: stopped on the second entry
printf '#!/bin/sh\nexec bcs-mpicc "$@"\n' >"$T/indirect"
chmod +x "$T/indirect"
expect "BCS_MPICC_CC=a script running bcs-mpicc fails" 1 timeout "$LIMIT" \
	env BCS_MPICC_CC="$T/indirect" bcs-mpicc "$T/h.c" -o "$T/h6"
has "  saying why" err "runs a BCS-MPI wrapper"
# and what the wrappers build, their C++ programs included, is this build's
rec "bcs-mpicxx -Wall -Wextra -Werror -pedantic ring.cpp" "$T/ring" \
	bcs-mpicxx -std=c++17 -O1 -Wall -Wextra -Werror -pedantic "$W/ring.cpp" -o "$T/ring"
rec "bcs-mpicc -c, then link" "$T/h7" sh -c "bcs-mpicc -c '$T/h.c' -o '$T/h7.o' && bcs-mpicc '$T/h7.o' -o '$T/h7'"

# ---- make
echo "# make"
mk() {
	local name=$1 dir=$T/$2
	shift 2
	mkdir -p "$dir"
	cp "$W/Makefile" "$W/hello.c" "$dir/"
	expect "$name" 0 timeout "$BUILD_LIMIT" "$@" -C "$dir" </dev/null
	bcs_linked "  hello linked" "$dir/hello"
}
mk "make CC=bcs-mpicc" mk1 make CC=bcs-mpicc
mk "CC=bcs-mpicc make" mk2 env CC=bcs-mpicc make
mk "CC=BIN/bcs-mpicc make (a path)" mk3 env CC="$BIN/bcs-mpicc" make
mk "make PKG_CONFIG=1 (pkg-config bcsmpi, plain cc)" mk4 make CC=cc PKG_CONFIG=1
has "  the flags came from pkg-config" out "$INC"

# ---- CMake
echo "# cmake"
cm() {
	local name=$1 dir=$T/$2
	shift 2
	expect "$name: configure" 0 timeout "$BUILD_LIMIT" "$@" -S "$W" -B "$dir" </dev/null
	has "  compiler checks and MPI_Init" out "Looking for MPI_Init - found"
	has "  FindMPI takes the wrappers" out "MPI through $BIN/bcs-mpicc and $BIN/bcs-mpicxx"
	expect "$name: build" 0 timeout "$BUILD_LIMIT" cmake --build "$dir" </dev/null
	bcs_linked "  hello linked" "$dir/hello"
	bcs_linked "  ring linked" "$dir/ring"
}
cm "cmake -DCMAKE_C_COMPILER=bcs-mpicc -DCMAKE_CXX_COMPILER=bcs-mpicxx" cm1 \
	cmake -DCMAKE_C_COMPILER=bcs-mpicc -DCMAKE_CXX_COMPILER=bcs-mpicxx
cm "CC=bcs-mpicc CXX=bcs-mpicxx cmake" cm2 env CC=bcs-mpicc CXX=bcs-mpicxx cmake
expect "cmake, plain compilers, FindMPI on MPI_C_COMPILER=bcs-mpicc: configure" 0 \
	timeout "$BUILD_LIMIT" env CC=cc CXX=c++ cmake -DTHROUGH_COMPILER=OFF \
	-DMPI_C_COMPILER=bcs-mpicc -DMPI_CXX_COMPILER=bcs-mpicxx -S "$W" -B "$T/cm3" </dev/null
has "  FindMPI takes the wrappers" out "MPI through $BIN/bcs-mpicc and $BIN/bcs-mpicxx"
expect "  build" 0 timeout "$BUILD_LIMIT" cmake --build "$T/cm3" </dev/null
bcs_linked "  hello linked" "$T/cm3/hello"
bcs_linked "  ring linked" "$T/cm3/ring"
# the MPI_Init check is a real one: a plain compiler does not pass it
expect "cmake with plain compilers does not find MPI_Init" 1 timeout "$BUILD_LIMIT" \
	env CC=cc CXX=c++ cmake -S "$W" -B "$T/cm4" </dev/null
has "  says so" out "Looking for MPI_Init - not found"

# ---- what they built runs, and prints what MPICH's build prints
echo "# runs"
mpicc.mpich -std=c11 -O1 -Wall -Wextra -Werror "$W/hello.c" -o "$T/hello.mpich" || bad "mpicc.mpich hello.c"
mpicxx.mpich -std=c++17 -O1 -Wall -Wextra -Werror -pedantic "$W/ring.cpp" -o "$T/ring.mpich" ||
	bad "mpicxx.mpich ring.cpp"
expect "cluster up (2 nodes, 2 ms slices)" 0 storm cluster up --nodes 2 --dir "$C" \
	--timeslice-us 2000 --down-after-ms 10000
for n in 1 3 4; do
	timeout "$LIMIT" mpiexec.mpich -n "$n" "$T/hello.mpich" >"$T/hello.$n.want" 2>&1
	timeout "$LIMIT" mpiexec.mpich -n "$n" "$T/ring.mpich" >"$T/ring.$n.want" 2>&1
	for p in h1 mk1/hello mk2/hello mk4/hello cm1/hello cm2/hello cm3/hello \
		ring r1 cm1/ring cm2/ring cm3/ring; do
		case ${p##*/} in h*) want=$T/hello.$n.want ;; *) want=$T/ring.$n.want ;; esac
		expect "storm run -n $n $p" 0 timeout "$LIMIT" storm run -N "$((n < 2 ? n : 2))" -n "$n" "$T/$p"
		if [ -s "$want" ] && cmp -s "$want" "$T/out"; then ok "  MPICH's output"; else
			bad "  output differs from MPICH's"
			diff "$want" "$T/out" | head -10 | sed 's/^/     /'
		fi
	done
done

echo "$checks checks, $fails failed"
[ "$fails" = 0 ]
