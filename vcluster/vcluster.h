/* The virtual-cluster manager: storm cluster up, down, status, restart. */
#ifndef STORM_VCLUSTER_H
#define STORM_VCLUSTER_H

#include "cli.h"

/* argv[0] is "cluster", argv[1] the subcommand; an exit code. */
int cmd_cluster(struct cli *c, int argc, char **argv);

#endif
