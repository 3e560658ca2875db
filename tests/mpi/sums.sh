# MPICH's outputs kept as sums, for tests/mpi/run.sh and
# tests/mpi/thirdparty/run.sh: a file $SUMS of lines "mpich VERSION",
# "src FILE SUM" (the sources the outputs came from) and "out PROG RANKS SUM".

# sum_of: the sha256 of stdin
sum_of() { sha256sum | cut -c1-64; }
# mpich_sum P N: the sum of MPICH's output of P on N ranks
mpich_sum() { awk -v p="$1" -v n="$2" '$1 == "out" && $2 == p && $3 == n { print $4 }' "$SUMS"; }
# sums_stale DIR FILE...: the FILEs of DIR whose sum is not the one $SUMS holds
sums_stale() {
	local dir=$1 f
	shift
	for f in "$@"; do
		[ "$(awk -v f="$f" '$1 == "src" && $2 == f { print $3 }' "$SUMS")" = "$(sum_of <"$dir/$f")" ] ||
			echo "$f"
	done
}
