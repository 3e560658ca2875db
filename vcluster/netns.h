/* `storm cluster up --netns`: each node daemon in its own network namespace,
 * joined to the machine manager by a veth pair on one bridge, so a test can
 * cut a node off (`ip -n NS link set eth0 down`). With --hosts the MM has a
 * namespace of its own on the bridge too, and this machine (where storm
 * runs) keeps only the bridge's address. Root only. DIR/netns records what
 * was made, for `cluster down`. */
#ifndef STORM_CLI_NETNS_H
#define STORM_CLI_NETNS_H

#include <stddef.h>

/* netns_enter's and netns_addr's node for the MM: on --hosts its own
 * namespace's address 10.X.255.253. */
#define NETNS_MM (-1)
/* netns_addr's node for the bridge, 10.X.255.254: the MM's with --netns,
 * this machine's with --hosts. */
#define NETNS_BRIDGE (-2)

/* Creates the bridge and one namespace per node, and one for the MM when
 * mm_ns. 0, or -1 with err set. */
int netns_up(const char *dir, int nnodes, int mm_ns, char *err, size_t errlen);
/* Kills every process left in the namespaces DIR/netns records and removes
 * them and the bridge; quiet and idempotent. Returns 1 if there was
 * something to remove. */
int netns_down(const char *dir);
/* In a forked child before exec: enter node i's namespace (i >= 0) or the
 * MM's (NETNS_MM: its own with --hosts, else stay in ours on the bridge),
 * and point libfabric at the right interface. own_uts: a host name and IPC
 * namespace of the node's own too (--netns; --hosts makes them itself).
 * 0 or -errno. */
int netns_enter(const char *dir, int node, int own_uts);
/* Does DIR/netns record a namespace of the MM's own: is the cluster in DIR
 * one of hosts (--hosts), up or left there by a crash? What the hosts of an
 * earlier cluster leave once it is down (their logs) does not make it one. */
int netns_of_hosts(const char *dir);
/* The address of node i (node I: 10.X.I/250.I%250+1), NETNS_MM or
 * NETNS_BRIDGE in the cluster of DIR: X is the cluster's own network,
 * 10.X.0.0/16, chosen by netns_up among those no address of this machine
 * is in, so two clusters on one machine never share one. */
void netns_addr(const char *dir, int node, char *out, size_t len);
/* The namespace name of node i (NETNS_MM: the MM's), for tests and messages. */
void netns_name(const char *dir, int node, char *out, size_t len);

#endif
