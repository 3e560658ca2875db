/* storm.conf: one INI file (parsed with inih) read by the MM, the node
 * daemons and the CLI. Format and every key: docs/storm.conf.md. */
#ifndef STORM_CONFIG_H
#define STORM_CONFIG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hostlist.h"

#define STORM_CONF_MAX_NODES 1000
#define STORM_MAX_MPL 16

enum storm_policy { POLICY_GANG, POLICY_FCFS };
enum storm_switch { SWITCH_SIGNALS, SWITCH_FREEZER };
enum storm_db_sync { DB_SYNC_NORMAL, DB_SYNC_FULL };
extern const char *const storm_db_sync_names[]; /* "normal", "full" */
extern const char *const storm_policy_names[];  /* "gang", "fcfs" */
extern const char *const storm_switch_names[];  /* "signals", "freezer" */

struct storm_conf;
/* Timeslices the MM counts before a silent node is DOWN: down_after_ms
 * rounded up to whole slices. The MM steps its slice at most once a
 * timeslice, so counting this many takes at least down_after_ms. */
unsigned conf_down_slices(const struct storm_conf *c);
/* The deprecated down_after (timeslices) as milliseconds, rounded up. */
unsigned conf_slices_to_ms(unsigned slices, unsigned timeslice_us);

struct storm_conf {
	char path[PATH_MAX];
	char name[64];
	char provider[64];
	char sys_provider[64];   /* "" when there is no second rail */
	unsigned timeslice_us;
	unsigned down_after_ms;  /* silence before a node is DOWN */
	unsigned down_after;     /* the deprecated key as read (timeslices); finish()
				  * converts it to down_after_ms and clears it */
	unsigned report_every;   /* an idle node reports (heartbeat) every N strobes */
	unsigned fanout;
	unsigned op_timeout_ms;
	unsigned kill_wait_ms;   /* SIGTERM to SIGKILL on cancel */
	unsigned checkpoint_copies; /* 1: a job of >= 2 nodes checkpoints to a buddy too */
	unsigned bcs_data_tags;     /* 1: BCS-MPI bulk data is tagged and checked */
	/* 1: BCS-MPI data between nodes goes from the sending rank's own
	 * endpoint into the receiving rank's pool where both wait in MPI */
	unsigned bcs_rank_writes;
	/* 1: a node whose ranks all exited 0 ends a job by words the MM reads
	 * in one COMPARE-AND-WRITE, and takes a command without a report */
	unsigned job_end_combined;
	char state_dir[PATH_MAX]; /* node state: <state_dir>/<node name> */
	char socket[PATH_MAX];   /* the MM's control socket */
	/* how the daemons learn fabric addresses: "mm" (register with the MM
	 * at mm_address), "static:PORT" or "dir:PATH" (docs/storm.conf.md) */
	char bootstrap[PATH_MAX];
	char mm_address[300];    /* HOST:PORT the MM takes registrations on, or "" */
	char ctl_address[300];   /* HOST:PORT the MM takes control connections on
				  * (remote storm commands), or "" */
	char database[PATH_MAX]; /* the MM's SQLite file; "": <state_dir>/mm.db */
	int database_sync;       /* enum storm_db_sync */
	char key_file[PATH_MAX]; /* the cluster key: MACs on MM <-> node messages */
	char munge_socket[PATH_MAX]; /* munged's socket, "": MUNGE's default */
	unsigned cpus;           /* per node */
	/* [scheduler] */
	unsigned quantum;        /* timeslices a matrix row runs before the next */
	unsigned min_timeslice_us; /* the shortest slice a job may ask for */
	unsigned mpl;            /* rows of the matrix (multiprogramming level) */
	int policy;              /* enum storm_policy */
	int switch_mode;         /* enum storm_switch: how nodes stop and continue jobs */
	unsigned ahead;          /* slices of the schedule each strobe carries, 0: none */
	unsigned switch_wait_pct; /* strict switch: % of a slice a node waits for the
				   * outgoing ranks to leave the CPU, 0: does not wait */
	/* [metrics] */
	unsigned metrics_port;   /* the MM's Prometheus endpoint, 0: off */
	char metrics_address[64]; /* the address it listens on */
	int nnodes;
	char (*nodes)[HOSTNAME_MAX];
};

/* Defaults, then the file. Returns 0, or -1 with "FILE:LINE: reason" in err.
 * Out-of-range values are refused, not clamped. */
int conf_load(const char *path, struct storm_conf *c, char *err, size_t errlen);
/* Same, from a string (tests, fuzzing); path names it in messages. */
int conf_load_string(const char *text, const char *path, struct storm_conf *c,
		     char *err, size_t errlen);
void conf_free(struct storm_conf *c);
/* Splits an address (mm_address, ctl_address, STORM_MM) into host and port:
 * 0, or -1 when it is not HOST:PORT ("[v6]:PORT" for an IPv6 literal). */
int conf_address(const char *addr, char *host, size_t hostlen, char *port, size_t portlen);
/* Index of the node with this name, or -1. */
int conf_node_index(const struct storm_conf *c, const char *name);
/* Writes c as a file conf_load reads back to the same values. */
int conf_write(const struct storm_conf *c, const char *path);
/* The same text on f. 0 or -errno. */
int conf_print(const struct storm_conf *c, FILE *f);

#endif
