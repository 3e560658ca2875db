#!/bin/sh
# `make demo`: bring up an 8-node virtual cluster, run a 32-rank job whose
# 12 MiB program is multicast to every node, gang-schedule two jobs on the
# same nodes, show the cluster, take it down.
set -u
BIN=$(cd "${1:-build/bin}" && pwd)
export PATH=$BIN:$PATH
DIR=$(mktemp -d /tmp/storm-demo.XXXXXX)
export STORM_CONF=$DIR/storm.conf
trap 'storm cluster down --dir "$DIR" >/dev/null 2>&1; rm -rf "$DIR"' EXIT INT TERM
set -x
storm cluster up --nodes 8 --dir "$DIR" || exit 1
storm nodes
storm run -N 8 -n 32 --label --timing sh -c 'echo "rank $STORM_RANK of $STORM_SIZE on $STORM_NODENAME"' || exit 1
storm run -N 8 -n 32 --timing "$BIN/storm_selfsum" | sort | uniq -c || exit 1
# two CPU-bound jobs on the same 8 nodes take turns, one matrix row each
spin='i=0; while [ $i -lt 400000 ]; do i=$((i+1)); done; echo "rank $STORM_RANK done"'
storm submit -N 8 -J first -o "$DIR/first.out" sh -c "$spin"
storm submit -N 8 -J second -o "$DIR/second.out" sh -c "$spin"
storm matrix
storm jobs
storm submit -N 8 -W -J after -o /dev/null true # queued behind both; returns when it ran
storm jobs --all
storm cluster down --dir "$DIR"
