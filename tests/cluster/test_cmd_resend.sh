#!/bin/bash
# A command whose sends to a node failed while the node stayed UP (cut off
# for less than down_after_ms, once the provider's queue for it was full)
# never comes by the multicast. The node would give it up after three
# operation timeouts, or skip it as never sent to it as soon as a later
# command is in its ring. The MM keeps the commands the ring holds, leaves
# such a node out of the multicasts and sends it each command its reports
# say it lacks, on its own and in order, until it holds the last one.
# Here the test hook cmd_lost keeps the first command (the launch of a job
# on all 3 nodes) from node02: the job must still run there, and node02
# must skip nothing. Every daemon goes down on exit.
# Usage: test_cmd_resend.sh BUILD_BIN_DIR   (make clustertest)
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
. "$(dirname "$0")/lib.sh"
T=$(mktemp -d /tmp/storm-cmdresend.XXXXXX)
C=$T/c
export PATH=$BIN:$PATH STORM_CONF=$C/storm.conf
fails=0 checks=0
trap cluster_teardown EXIT
trap 'exit 1' INT TERM
cd "$T" || exit 1
# a job that never starts on node02 fails its check instead of holding the suite
storm() { timeout 60 "$BIN/storm" "$@"; }

STORM_TEST_TAMPER=cmd_lost=1 expect "cluster up with 3 nodes (command 1 kept from node02)" 0 \
	storm cluster up $UP_MODE --nodes 3 --dir "$C"
expect "a job on all 3: its launch never reaches node02 by the multicast" 0 \
	storm run -N 3 -n 3 true
has_log() { grep -q "$2" "$C/log/$1.log"; }
has_log mm "test hook: command 1 left out for node02" && ok "  the hook kept command 1 from node02" ||
	bad "  the hook kept command 1 from node02"
has_log mm "node node02 lacks commands 1\.\.[0-9]*: sent to it on its own" &&
	ok "  node02's report said it lacked it; the MM sent it on its own" ||
	bad "  the MM sent node02 the command it lacked"
has_log node02 "job 1: started ranks 2\.\.2" && ok "  node02 started its rank" ||
	bad "  node02 started its rank"
expect "a job on all 3 after it" 0 storm run -N 3 -n 3 true
wait_log "$C/log/mm.log" "node node02 holds every command again" 30 &&
	ok "  node02 back in the multicasts" || bad "  node02 back in the multicasts"
expect "and one more" 0 storm run -N 3 -n 3 true
has_log node02 "never reached this node\|were not sent to this node\|overwritten before" &&
	bad "  node02 skipped commands: $(grep "never reached\|were not sent\|overwritten" "$C/log/node02.log" | tail -1)" ||
	ok "  node02 skipped no command"

echo "test_cmd_resend: $((checks - fails))/$checks passed"
[ "$fails" = 0 ]
