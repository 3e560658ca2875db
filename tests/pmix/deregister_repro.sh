#!/bin/bash
# OpenPMIx 4.2's PMIx_server_deregister_client bug, reproduced outside storm
# (deregister_repro.c): once as storm did before (the killed client
# deregistered, then its namespace), where the next client must hang in
# PMIx_Init, and once with the node daemon's workaround (the namespace only),
# where it must initialise. ~15 s. Exit 0 when both do as
# docs/RELIABILITY.md says, 1 otherwise.
# Usage: deregister_repro.sh BUILD_BIN_DIR   (make pmix-repro)
set -u
R="${1:-build/bin}/pmix_deregister_repro"
"$R"; bug=$?
"$R" --workaround; fix=$?
if [ $bug = 1 ] && [ $fix = 0 ]; then
	echo "pmix-repro: the bug is in this OpenPMIx, and the workaround avoids it"
	exit 0
fi
[ $bug = 0 ] && echo "pmix-repro: not reproduced: this OpenPMIx may have the fix"
[ $bug = 2 ] || [ $fix = 2 ] && echo "pmix-repro: a run could not be set up, or client 2 hung otherwise"
[ $fix = 1 ] && echo "pmix-repro: client 2 hung with the workaround too"
exit 1
