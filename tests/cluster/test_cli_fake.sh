#!/bin/bash
# The storm CLI against a scripted stand-in machine manager (fake_ctl_mm):
# streaming, --label, exit codes, Ctrl-C, progress, submit, jobs/nodes/cancel,
# usage errors, and `cluster up/status/down` with fake daemons.
# Usage: test_cli_fake.sh BUILD_BIN_DIR (make clitest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
T=$(mktemp -d /tmp/storm-clitest.XXXXXX)
S=$BIN/storm
fails=0 checks=0
MM_PID= MUNGED_PID=

cleanup() {
	fail_report
	[ -n "$MM_PID" ] && kill "$MM_PID" 2>/dev/null
	[ -n "$MUNGED_PID" ] && kill "$MUNGED_PID" 2>/dev/null
	[ -f "$T/c/pids" ] && "$T/bin/storm" cluster down --dir "$T/c" >/dev/null 2>&1
	rm -rf "$T"
}
trap cleanup EXIT

cd "$T"
# ---- no cluster, usage
export STORM_CONF=$T/none/storm.conf
expect "run without a cluster" 1 "$S" run /bin/true
has_line "no-cluster message" err "storm: error: no cluster is up (cannot read configuration $T/none/storm.conf: No such file or directory); start one with 'storm cluster up --nodes N'"
mkdir -p "$T/none" && printf '[cluster]\nsocket = %s/none/mm.sock\n[nodes]\nnames = n0\n' "$T" >"$T/none/storm.conf"
expect "jobs without a cluster" 1 "$S" jobs
has_line "no-cluster message" err "storm: error: no cluster is up (cannot connect to $T/none/mm.sock: No such file or directory); start one with 'storm cluster up --nodes N'"
expect "unknown option" 2 "$S" run --frob x
has_line "unknown option message" err "storm run: error: unknown option '--frob'; see 'storm run --help'"
expect "missing value" 2 "$S" run -N
expect "bad count" 2 "$S" run -n zero /bin/true
expect "no program" 2 "$S" run -N 2
expect "unknown command" 2 "$S" frob
expect "missing program" 1 "$S" run ./nope
has_line "missing program message" err "storm: error: ./nope: No such file or directory"
touch noexec
expect "not executable" 1 "$S" run ./noexec
has_line "not executable message" err "storm: error: ./noexec: Permission denied (not executable)"
expect "directory" 1 "$S" run /tmp
expect "not in PATH" 1 "$S" run no-such-command-xyz
expect "missing --file" 1 "$S" run --file nofile /bin/true
expect "bad signal" 2 "$S" cancel -s NOPE 5
expect "bad job id" 2 "$S" cancel abc
expect "netns needs a network provider" 2 "$S" cluster up --nodes 2 --netns --provider shm
for c in run submit jobs nodes cancel cluster "cluster up" "cluster status" "cluster down"; do
	expect "help: $c" 0 "$S" $c --help
done

# ---- against the fake MM
start_munged "$T/munge" || bad "munged did not start"
mkfifo "$T/mm.fifo"
"$BIN/fake_ctl_mm" "$T/mm.sock" "$T/munge/munge.socket" >"$T/mm.fifo" & MM_PID=$!
read -r ready <"$T/mm.fifo" # "listening", once the socket accepts
[ "$ready" = listening ] || bad "fake MM did not start"
printf '[cluster]\nname = fake\nsocket = %s/mm.sock\nmunge_socket = %s/munge/munge.socket\n[nodes]\nnames = node[00-02]\n' "$T" "$T" >"$T/storm.conf"
export STORM_CONF=$T/storm.conf

expect "run streams" 0 "$S" run /bin/true hello
has_line "raw stdout" out "second line"
expect "run --label" 0 "$S" run -l -n 3 /bin/true hello
has_line "label line" out "1: hello from rank 1"
has_line "label joined pieces" out "2: second line"
has_line "label partial at the end" out "0: tail"
has_line "label stderr" err "2: warn 2"
[ "$(grep -c '^0: ' out)" = 3 ] && ok "rank 0 has 3 stdout lines" || bad "rank 0 lines: $(cat out)"
expect "run --timing" 0 "$S" run --timing /bin/true hello
grep -qE '^storm: job [0-9]+ timing: transfer 12\.3 ms, execute 20\.1 ms, total 35\.0 ms$' err &&
	ok "timing line" || bad "timing line: $(cat err)"
expect "job exit status" 3 "$S" run /bin/true exit 3
grep -qE '^storm: error: job [0-9]+: rank 1 exited with status 3$' err && ok "job failure reason" || bad "reason: $(cat err)"
expect "refused" 1 "$S" run /bin/true refuse
has_line "refusal message" err "storm: error: 64 ranks need 16 nodes of 4 CPUs, the cluster has 8"
expect "lost connection" 1 "$S" run /bin/true drop
has "lost connection message" err "storm: error: lost the connection to the machine manager"
expect "request contents" 0 "$S" run -N 2 -n 4 -J myjob env env
has_line "argv0, program, cwd, env" out "argv0=env program=$(readlink -f "$(command -v env)") cwd=$T HOME=$HOME name=myjob N=2 n=4"
echo hello >data.txt
expect "--file descriptors" 0 "$S" run --file data.txt --file "$T/storm.conf" /bin/true files
has_line "file 1" out "file data.txt 6 bytes"
has_line "file 2" out "file storm.conf $(stat -c %s "$T/storm.conf") bytes"
expect "--no-bcast sends no program" 0 "$S" run --no-bcast --file data.txt /bin/true files
expect "progress" 0 "$S" run /bin/true progress
grep -qE '^storm: job [0-9]+: transferring .* of 48\.0 MiB' err && ok "progress line" || bad "progress: $(cat err)"

# the job's first line says it runs; storm's stdout goes through a FIFO so
# the test reads it as it comes (and keeps a copy in out)
mkfifo "$T/run.fifo"
env --default-signal=INT "$S" run /bin/true intr >"$T/run.fifo" 2>"$T/err" & P=$!
exec 8<"$T/run.fifo"
read -r line <&8 # "waiting": the job runs
kill -INT $P
cat <&8 >"$T/out"
exec 8<&-
wait $P; rc=$?
[ $rc = 130 ] && ok "Ctrl-C: exit 130" || bad "Ctrl-C: exit $rc, err: $(cat "$T/err")"
has_line "Ctrl-C reached the job" out "got signal 2"
env --default-signal=INT "$S" run /bin/true hang >"$T/run.fifo" 2>"$T/err" & P=$!
exec 8<"$T/run.fifo"
read -r line <&8 # "waiting"
kill -INT $P
read -r line <&8 # "got signal 2": the first Ctrl-C arrived
kill -INT $P # a second one within 1 s
cat <&8 >"$T/out"
exec 8<&-
wait $P; rc=$?
[ $rc = 137 ] && ok "double Ctrl-C: exit 137" || bad "double Ctrl-C: exit $rc"
has_line "SIGKILL reached the job" out "got signal 9"

expect "submit" 0 "$S" submit -o "out-%j.txt" /bin/true
grep -qE '^Submitted job [0-9]+$' out && ok "submit message" || bad "submit: $(cat out)"
id=$(awk '{print $3}' out)
[ -f "$T/out-$id.txt" ] && ok "-o made absolute, %j expanded" || bad "no $T/out-$id.txt"
expect "submit --parsable" 0 "$S" submit --parsable /bin/true
grep -qE '^[0-9]+$' out && ok "parsable id" || bad "parsable: $(cat out)"

expect "jobs" 0 "$S" jobs
grep -qE '^JOBID +NAME +USER +STATE +NODES +RANKS +TIME +NODELIST\(REASON\)$' out && ok "jobs header" || bad "header: $(head -1 out)"
grep -qE '^ +7 big +bob +QUEUED +64 +256 +0:00 \(Resources\)$' out && ok "queued row" || bad "rows: $(cat out)"
expect "jobs --all --json" 0 "$S" jobs --all --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["jobs"])==3 and d["jobs"][2]["state"]=="COMPLETED"' out &&
	ok "jobs JSON" || bad "jobs JSON: $(cat out)"
expect "nodes" 0 "$S" nodes
grep -qE '^node02 +DOWN +4 -$' out && ok "nodes row" || bad "nodes: $(cat out)"
expect "nodes --json" 0 "$S" nodes --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes"][0]["jobs"]==[6]' out && ok "nodes JSON" || bad "nodes JSON"
expect "cluster status" 0 "$S" cluster status
has_line "status not-up list" out "not up: node02"
expect "cluster status --json" 0 "$S" cluster status --json
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["nodes_not_up"]==["node02"]' out && ok "status JSON" || bad "status JSON"
expect "cancel" 0 "$S" cancel -s USR1 7
expect "cancel not found / permission" 1 "$S" cancel 404 13 7
has_line "not found" err "storm: error: cancel 404: no job 404"
has_line "permission" err "storm: error: cancel 13: job 13 belongs to alice, not to you"
kill $MM_PID; wait $MM_PID 2>/dev/null; MM_PID=
expect "connection refused, no hang" 1 timeout 10 "$S" jobs
unset STORM_CONF

# ---- cluster up/status/down with stand-in daemons next to a copy of storm
mkdir -p "$T/bin"
cp "$S" "$T/bin/storm"
cp "$BIN/storm-cluster" "$T/bin/storm-cluster"
cp "$BIN/fake_ctl_mm" "$T/bin/stormmm"
cp "$HERE/fake_stormnd" "$T/bin/stormnd"
expect "cluster up" 0 "$T/bin/storm" cluster up --nodes 12 --dir "$T/c" --timeslice-us 500
has_line "up line" out "storm: cluster 'storm' up: 12 nodes node[00-11], tcp;ofi_rxm, timeslice 500 us ($T/c)"
[ "$(wc -l <"$T/c/pids")" = 13 ] && ok "13 pids" || bad "pids: $(cat "$T/c/pids")"
expect "up again refused" 1 "$T/bin/storm" cluster up --nodes 2 --dir "$T/c"
expect "status --dir" 0 "$T/bin/storm" cluster status --dir "$T/c"
expect "jobs via --conf" 0 "$T/bin/storm" --conf "$T/c/storm.conf" jobs
expect "cluster down" 0 "$T/bin/storm" cluster down --dir "$T/c"
has_line "down line" out "storm: cluster down ($T/c)"
[ ! -e "$T/c/pids" ] && [ ! -e "$T/c/state" ] && [ ! -e "$T/c/fabric" ] && [ ! -e "$T/c/munge" ] &&
	[ ! -e "$T/c/cluster.key" ] && [ -d "$T/c/log" ] &&
	ok "runtime files removed, logs kept" || bad "left: $(ls "$T/c")"
expect "down again" 0 "$T/bin/storm" cluster down --dir "$T/c"
# a stale cluster: the MM killed, its nodes still there
"$T/bin/storm" cluster up --nodes 3 --dir "$T/c" >/dev/null 2>&1
mm=$(awk '$2 == "mm" {print $1}' "$T/c/pids")
kill -9 "$mm"
gone "$mm"
expect "up over a stale cluster" 0 "$T/bin/storm" cluster up --nodes 2 --dir "$T/c"
has_line "stale cleaned" err "storm: cleaned up a stale cluster in $T/c"
mm=$(awk '$2 == "mm" {print $1}' "$T/c/pids")
kill -9 "$mm"
gone "$mm"
expect "down on a dead cluster" 0 "$T/bin/storm" cluster down --dir "$T/c"
grep -q "no cluster was up in $T/c; cleaned up" out && ok "dead cluster cleaned" || bad "down: $(cat out)"
FAKE_ND_FAIL=node01 expect "a node that dies at start" 1 "$T/bin/storm" cluster up --nodes 3 --dir "$T/c"
has_line "dead node named" err "storm: error: node01 exited with status 3 during start-up:"
[ ! -e "$T/c/pids" ] && ok "failed up cleaned" || bad "pids left after a failed up"
expect "--up-timeout 0 refused" 2 "$T/bin/storm" cluster up --nodes 2 --dir "$T/c" --up-timeout 0
FAKE_ND_SILENT=node01 expect "a node that never comes up, --up-timeout 2" 1 \
	"$T/bin/storm" cluster up --nodes 2 --dir "$T/c" --up-timeout 2
has_line "the wait's bound and the node named" err \
	"storm: error: the cluster did not come up within 2 s: 1 of 2 nodes never came up: node01"
[ ! -e "$T/c/pids" ] && ok "timed-out up cleaned" || bad "pids left after a timed-out up"

# ---- scripts/install-deps.sh: `make demo` installs what building and running
# storm needs, `make check` the suites' tools too (--test). Its sets, printed
# by --list, are checked against this machine: every library the Makefile
# links and every tool the build and the demo run come from a package of the
# demo's set; the tests' tools are in --test's only
DEPS=$HERE/../../scripts/install-deps.sh
expect "install-deps.sh --list: make demo's set" 0 sh "$DEPS" --list
cp "$T/out" "$T/demo.set"
paths=""
for l in fabric protobuf-c inih jansson munge sodium sqlite3 microhttpd xxhash elf cunit; do
	paths="$paths $(realpath -s "$(cc -print-file-name=lib$l.so)")"
done
for c in protoc-c pkg-config munged cc make; do
	paths="$paths $(realpath -s "$(PATH=$PATH:/usr/sbin command -v "$c")")"
done
# dpkg names the package of each path (make: build-essential's)
dpkg -S $paths "$(pkg-config --variable=pcfiledir pmix)/pmix.pc" 2>/dev/null |
	sed 's/[:,].*//' | sort -u >"$T/owners"
missing=""
while read -r pkg; do
	case $pkg in
	gcc | gcc-* | cpp* | make | binutils*) pkg=build-essential ;;
	pkgconf | pkgconf-bin) pkg=pkg-config ;; # what the package pkg-config brings
	esac
	grep -qx "$pkg" "$T/demo.set" || missing="$missing $pkg"
done <"$T/owners"
[ "$(grep -c . "$T/owners")" -ge 13 ] && [ -z "$missing" ] &&
	ok "  every linked library and build/run tool is in it ($(tr '\n' ' ' <"$T/owners"))" ||
	bad "  every linked library and build/run tool is in it (missing:$missing; owners: $(tr '\n' ' ' <"$T/owners"))"
extra=$(grep -xE 'chromium|slurm-wlm|slurmd|lintian|debhelper|pandoc|valgrind|mpich|linux-perf|clang|cmake' "$T/demo.set" | tr '\n' ' ')
[ -z "$extra" ] && ok "  no test-only package in it" || bad "  test-only packages in make demo's set: $extra"
expect "install-deps.sh --test --list: make check's set" 0 sh "$DEPS" --test --list
cp "$T/out" "$T/test.set"
[ -z "$(comm -23 "$T/demo.set" "$T/test.set")" ] &&
	[ "$(grep -cxE 'chromium|slurm-wlm|lintian|debhelper|pandoc|snakemake' "$T/test.set")" = 6 ] &&
	ok "  the demo's set and the tests' tools" || bad "  --test's set: $(tr '\n' ' ' <"$T/test.set")"
expect "install-deps.sh --bench --list" 0 sh "$DEPS" --bench --list
grep -qx hyperfine "$T/out" && grep -qx chromium "$T/out" && ok "  the benchmarks' tools and the tests'" ||
	bad "  --bench's set"
expect "install-deps.sh --kernel --list" 0 sh "$DEPS" --kernel --list
grep -qx qemu-system-x86 "$T/out" && grep -qx libpmix-dev "$T/out" && ! grep -qx chromium "$T/out" &&
	ok "  storm.ko's and the demo's" || bad "  --kernel's set"
expect "install-deps.sh --test --dry-run installs nothing" 0 sh "$DEPS" --test --dry-run
grep -q '^install-deps: would install: ' "$T/out" && ok "  says what it would install" || bad "  --dry-run: $(cat "$T/out")"
# make demo on a machine without OpenPMIx yet: the Makefile, read before
# deps installs it, says nothing of the missing package (a dry run: make
# reads the Makefile and prints each recipe, the sub-make's too)
mkdir -p "$T/nopc"
PKG_CONFIG_LIBDIR=$T/nopc make -n -C "$HERE/../.." demo BUILD="$T/demo-build" >/dev/null 2>"$T/demo.err"
[ "$?" = 0 ] && ! grep -qiE "pkg-config|was not found|pmix.pc" "$T/demo.err" &&
	ok "make -n demo without pmix.pc: no pkg-config errors" ||
	bad "make -n demo without pmix.pc: $(head -1 "$T/demo.err")"
expect "install-deps.sh --frob" 2 sh "$DEPS" --frob
has_line "  ... names it" err "install-deps: error: unknown option '--frob'"

echo "$checks checks, $fails failed"
[ $fails = 0 ]
