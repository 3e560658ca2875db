#!/bin/sh
# fuzz/merge.sh BUILD_FUZZ_DIR TARGET...: folds the corpus `make fuzz` grew
# (BUILD_FUZZ_DIR/corpus/T) into the checked-in one (tests/fuzz/corpus/T),
# minimised by libFuzzer to the inputs that add coverage, so `make fuzz-check`
# replays them too. The named seeds stay; new inputs are named by their hash.
set -eu
dir=$1
shift
for t in "$@"; do
	out="$dir/merged/$t"
	rm -rf "$out"
	mkdir -p "$out" "tests/fuzz/corpus/$t"
	nice -n 19 "$dir/$t" -merge=1 -rss_limit_mb=2048 "$out" "tests/fuzz/corpus/$t" \
		"$dir/corpus/$t" >"$dir/$t.merge.log" 2>&1
	before=$(ls "tests/fuzz/corpus/$t" | wc -l)
	cp -n "$out"/* "tests/fuzz/corpus/$t/" 2>/dev/null || true
	echo "fuzz-merge $t: $before -> $(ls "tests/fuzz/corpus/$t" | wc -l) inputs" >&2
done
