/* Pieces shared by the files of storm cluster (cluster.c and the files of
 * each subcommand; not for the other folders: vcluster.h is their entry). */
#ifndef STORM_VCLUSTER_CLUSTER_H
#define STORM_VCLUSTER_CLUSTER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "cli.h"
#include "hosts.h"

#define MAX_VIRTUAL_NODES 1000 /* STORM_CONF_MAX_NODES; tested up to 64 */
/* DIR/mm.sock must fit a socket address (108 bytes), so DIR is short */
#define DIR_MAX 96

struct daemon {
	pid_t pid;
	char name[HOSTNAME_MAX]; /* "mm" or the node name */
	int pidfd;
	int gone;
};

/* The options of the subcommands (cli_opt ids). */
enum { C_NODES = 1, C_DIR, C_PROVIDER, C_TIMESLICE, C_CPUS, C_DOWN_AFTER, C_DOWN_AFTER_MS,
       C_NETNS, C_REALTIME, C_WAIT, C_JSON, C_CONF, C_HELP, C_MPL, C_QUANTUM, C_POLICY, C_SWITCH, C_COPIES, C_DATA_TAGS, C_RANK_WRITES, C_JOB_END, C_METRICS, C_CTL_PORT, C_AHEAD,
       C_SWITCH_WAIT, C_SLURM, C_HOSTS, C_SHARE, C_UP_TIMEOUT };

/* storm cluster up's options (up_opts.c reads them). */
struct up_opts {
	unsigned nodes, timeslice_us, cpus, down_after, down_after_ms, mpl, quantum, metrics_port, ctl_port;
	unsigned up_timeout; /* s; 0: 30 + half a second a node */
	int netns, hosts, realtime, slurm;
	char **cmd; /* --slurm: the command to run with the cluster up, or NULL */
	char *shares[HOSTS_MAX_SHARES]; /* --share, absolute */
	int nshares;
	int policy, switch_mode, copies, data_tags, rank_writes, job_end; /* -1: the default */
	int ahead, switch_wait_pct;      /* -1: the default */
	const char *dir, *provider;
};

/* ---- the daemons (daemons.c) */

int vc_path_join(char *out, size_t len, const char *dir, const char *name);

/* Prints the last `lines` lines of a log, each prefixed with its name. */
void vc_log_tail(const char *dir, const char *name, int lines);

/* stormmm/stormnd next to this storm (a build tree or an install), else PATH. */
int vc_find_daemon(const char *name, char *out, size_t len);

/* Starts argv detached: own session, stdin /dev/null, stdout+stderr to log.
 * A CLOEXEC pipe carries an exec failure back. pid or -errno.
 * netns_node: the node's namespace (>= 0), the MM's (NETNS_MM), or no
 * namespace at all (NO_NETNS); host: with --hosts, the process whose mount,
 * UTS and IPC namespaces it joins (hosts.h), else 0. flags: VC_SPAWN_*. */
#define NO_NETNS (-1000)
#define VC_SPAWN_APPEND 1u  /* the log appended to, not truncated */
/* the caller puts it under the real-time guard (vc_mm_priority) as soon as
 * it has exec'd, maybe before it installed its SIGXCPU handler: SIGXCPU
 * ignored until then, which an exec keeps */
#define VC_SPAWN_GUARDED 2u
pid_t vc_spawn_detached(char *const argv[], const char *log, const char *dir, int netns_node,
			pid_t host, unsigned flags);

/* The MM just started: SCHED_FIFO; without realtime under the guard of
 * common/rtguard.h (nice -10 where real-time is refused). */
void vc_mm_priority(pid_t pid, int realtime);
/* STORM_RT_SHARE for the daemons about to start (common/rtguard.h), unless
 * the environment has it already */
void vc_rt_share(int nnodes);

int vc_append_pid(const char *pids_file, pid_t pid, const char *name);

/* DIR/pids: "PID NAME" lines. Count, 0 without a file. */
int vc_read_pids(const char *pids_file, struct daemon **out);

/* A pid from DIR/pids is ours only while it still runs with "-c CONF":
 * pids are reused, and an unrelated process must never be killed. */
int vc_runs_with_conf(pid_t pid, const char *conf);

/* Stops the daemons listed in pids_file: waits up to grace_s for them to
 * leave on their own (after a Shutdown), then SIGTERM, then SIGKILL. Names
 * the stubborn ones. Returns how many were still running at the start. */
int vc_stop_daemons(const char *pids_file, const char *conf, double grace_s, int quiet);

/* Before a cluster that is not of hosts: what the hosts of an earlier one
 * in DIR kept, their logs and DIR/log's links to them, which this one's
 * daemons would otherwise write through (its logs start afresh anyway). */
void vc_forget_hosts(const char *dir);

/* Removes what a cluster leaves at run time; DIR/log and storm.conf stay.
 * The munged daemons go too: after the daemons, which may still ask them;
 * then whatever still runs in the cluster's namespaces. */
int vc_remove_runtime(const char *dir);

/* Where daemon NAME writes its log (vc_spawn_detached): DIR/log/NAME.log, or
 * with --hosts the same in its host (DIR/log links to it). */
void vc_daemon_log(const char *dir, const char *name, char *out, size_t len);

/* --hosts: the process whose namespaces host NAME's daemon joins, or 0
 * (printed): without it the daemon would see this machine's files. */
pid_t vc_host_of(const char *dir, const char *name);

/* ---- which cluster, and its MM (mm_ctl.c) */

/* --dir DIR means DIR/storm.conf; else the usual search. 0 or -1 when there
 * is no configuration at all (err says where it looked). */
int vc_locate(struct cli *c, const char *dir, char *err, size_t errlen);

/* The MM where a command reaches it: its socket, or its ctl_address when
 * that socket is not here (cli_conf_remote: --hosts, whose MM has it in its
 * own host, or a Slurm allocation's MM on another node). */
const char *vc_mm_where(const struct storm_conf *conf);

Storm__Ctl__Reply *vc_ask_status(const char *sock, unsigned wait_ms, int *err);
Storm__Ctl__Reply *vc_ask_nodes(const char *sock, int *err);
int vc_send_shutdown(const char *sock, int *err);

/* ---- up's directory and configuration (up_conf.c) */

int vc_prepare_dir(const char *dir);

/* The cluster's directory, absolute: --dir, else def, else /tmp/storm-$UID;
 * -1 (printed). */
int vc_resolve_dir(const struct up_opts *o, const char *def, char *dir);

/* A cluster that answers in dir is left alone (-1, printed); a dead one is
 * cleaned up. */
int vc_clear_dir(const struct up_opts *o, const char *dir, const char *conf_path,
		 const char *sock, const char *pids);

/* A TCP port no one listens on now: below the ephemeral range when it is
 * bound here later (bound_here), else the kernel's pick; or -errno. */
int vc_free_tcp_port(bool bound_here);

/* The defaults with the options' values over them; paths, addresses and
 * nodes are the caller's. 0, or -1 (printed). */
int vc_conf_from_opts(const struct up_opts *o, const char *conf_path, struct storm_conf *conf);

/* storm.conf for the options, a fresh cluster key and the cluster's own
 * munged (docs/design/security.md): the daemons and this CLI read their
 * paths from storm.conf. 0 with *conf filled, or -1 (printed). */
int vc_configure(const struct up_opts *o, const char *dir, const char *conf_path,
		 const char *sock, struct storm_conf *conf);

/* ---- up (up.c) */

/* Set by SIGINT and SIGTERM while a cluster comes up (vc_on_sigint). */
extern volatile sig_atomic_t vc_interrupted;
void vc_on_sigint(int sig);

/* Waits until the MM says every node is UP: its status reply (the caller
 * frees it), or NULL (printed) when a daemon died, the wait timed out or
 * Ctrl-C came (*interrupt set). */
Storm__Ctl__Reply *vc_wait_up(const char *dir, const char *sock,
			      const struct storm_conf *conf, struct daemon *d, int nd,
			      unsigned timeout_s, bool *interrupt);

/* The line a script reads: the cluster's name, nodes, provider, slice. */
void vc_print_up(const char *dir, const char *conf_path, const struct storm_conf *conf,
		 const Storm__Ctl__Status *st, bool hint);

int vc_cluster_up(const struct up_opts *o);

/* ---- up --slurm (up_slurm.c) */

/* storm-cluster slurm-task mm|nd DAEMON CONF [--realtime]: one task of a job
 * step `up --slurm` started, on an allocated node. Writes the configuration
 * and key from its environment into CONF's directory on this node (the MM's
 * task first takes two free ports here and prints them), then becomes the
 * daemon, its log in DIR/log. */
int vc_slurm_task(int argc, char **argv);

int vc_cluster_up_slurm(const struct up_opts *o);

/* ---- the subcommands; each returns an exit code */

int vc_cmd_up(int argc, char **argv);                     /* up_opts.c */
int vc_cmd_status(struct cli *c, int argc, char **argv);  /* status.c */
int vc_cmd_down(struct cli *c, int argc, char **argv);    /* down.c */
int vc_cluster_restart(struct cli *c, int argc, char **argv); /* restart.c */

#endif
