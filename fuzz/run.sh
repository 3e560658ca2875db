#!/bin/sh
# fuzz/run.sh BUILD_FUZZ_DIR SECONDS TARGET...: runs each libFuzzer harness
# for SECONDS at nice 19 (the machine is shared), from its seed corpus and
# regressions plus the corpus it grew before. New crashing inputs go to
# BUILD_FUZZ_DIR/crashes/TARGET/. Exits 1 if any target found one.
set -u
dir=$1 secs=$2
shift 2
failed=""
for t in "$@"; do
	mkdir -p "$dir/corpus/$t" "$dir/crashes/$t"
	seeds=""
	for s in tests/fuzz/corpus/$t tests/fuzz/regress/$t; do
		[ -d "$s" ] && seeds="$seeds $s"
	done
	case $t in
	# messages that must reach a command slot's size (64 KiB)
	ctl_request | ctl_reply | mm_report | nd_command) maxlen=70000 ;;
	*) maxlen=4096 ;;
	esac
	echo "== fuzz $t: ${secs}s" >&2
	# shellcheck disable=SC2086
	if ! nice -n 19 "$dir/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-max_len=$maxlen -print_final_stats=1 -artifact_prefix="$dir/crashes/$t/" \
		"$dir/corpus/$t" $seeds 2>"$dir/$t.log"; then
		failed="$failed $t"
		grep -E "ERROR|property failed|SUMMARY" "$dir/$t.log" | head -5 >&2
	fi
	grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$dir/$t.log" |
		sed "s/^/   $t /" >&2
done
if [ -n "$failed" ]; then
	echo "fuzz: crashes in:$failed (inputs in $dir/crashes/; log in $dir/TARGET.log)" >&2
	exit 1
fi
echo "fuzz: no crash in $*" >&2
