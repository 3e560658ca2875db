#!/bin/sh
# `make demo`: bring up an 8-node virtual cluster, run a 32-rank job whose
# 12 MiB program is multicast to every node, show the cluster, take it down.
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
storm jobs --all
storm cluster down --dir "$DIR"
