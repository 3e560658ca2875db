/* Runs one function as N local node processes, each its own fabric endpoint.
 * Used by the multi-process tests, the demo and the benchmarks. */
#ifndef STORM_SPAWN_H
#define STORM_SPAWN_H

#include <stdint.h>

#include "sn.h"

struct spawn_node {
	uint32_t id, n;
	const char *bootstrap; /* "dir:PATH", fresh per run */
	void *arg;
};

/* sn_config_defaults plus this node's id, the node count and the bootstrap. */
void spawn_sn_config(const struct spawn_node *nd, struct sn_config *c);

/* Forks n children (before the parent touches libfabric), runs fn in each and
 * exits with its return value. Waits on pidfds until all have ended or
 * timeout_ms passes, then kills the rest with SIGKILL. status[i] receives the
 * wait status of child i. Returns 0 if all were reaped in time, -ETIMEDOUT
 * otherwise. The bootstrap directory is removed afterwards. */
int spawn_run(uint32_t n, int (*fn)(const struct spawn_node *), void *arg,
	      unsigned timeout_ms, int *status);

/* 0 if every child exited 0; otherwise prints which did not and returns -1.
 * Children listed in expect_killed must instead have died of SIGKILL. */
int spawn_check(uint32_t n, const int *status, int expect_killed);

#endif
