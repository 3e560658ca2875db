/* `storm cluster up --netns`: each node daemon in its own network namespace,
 * joined to the machine manager by a veth pair on one bridge, so a test can
 * cut a node off (`ip -n NS link set eth0 down`). Root only. DIR/netns
 * records what was made, for `cluster down`. */
#ifndef STORM_CLI_NETNS_H
#define STORM_CLI_NETNS_H

#include <stddef.h>

/* The MM's address on the bridge, where the nodes reach it. */
#define NETNS_MM_ADDR "10.213.255.254"

/* Creates the bridge and one namespace per node. 0, or -1 with err set. */
int netns_up(const char *dir, int nnodes, char *err, size_t errlen);
/* Removes what DIR/netns records; quiet and idempotent. Returns 1 if there
 * was something to remove. */
int netns_down(const char *dir);
/* In a forked child before exec: enter node i's namespace (i >= 0) or stay
 * in ours (the MM, i < 0), and point libfabric at the right interface.
 * 0 or -errno. */
int netns_enter(const char *dir, int node);
/* The namespace name of node i, for tests and messages. */
void netns_name(const char *dir, int node, char *out, size_t len);

#endif
