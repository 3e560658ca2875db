/* storm cluster up: starts the MM and N node daemons detached (pids in
 * DIR/pids, logs in DIR/log) on the configuration up_conf.c wrote, and
 * waits until every node is UP; on failure says why and takes it down. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cluster.h"
#include "netns.h"
#include "fmt.h"

volatile sig_atomic_t vc_interrupted;
void vc_on_sigint(int sig)
{
	(void)sig;
	vc_interrupted = 1;
}

/* Describes why nodes never came up: names from NodeList, their log tails. */
static void report_missing(const char *dir, const char *sock, const struct storm_conf *conf,
			   double waited)
{
	int err;
	Storm__Ctl__Reply *rep = vc_ask_nodes(sock, &err);
	const char **missing = calloc((size_t)conf->nnodes, sizeof(*missing));
	int nmissing = 0;
	if (!missing)
		return;
	if (rep && rep->body_case == STORM__CTL__REPLY__BODY_NODES) {
		for (size_t i = 0; i < rep->nodes->n_nodes; i++)
			if (rep->nodes->nodes[i]->state != STORM__CTL__NODE_STATE__UP)
				missing[nmissing++] = rep->nodes->nodes[i]->name;
	} else {
		/* the nodes may be up: it is the MM that does not answer here */
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_ERROR)
			cli_print_error(rep->error, "cluster status");
		else
			fprintf(stderr, "storm: error: the machine manager at %s did not answer "
					"within %.0f s (%s)\n", sock, waited,
				rep ? "an unexpected reply" : strerror(-err));
		vc_log_tail(dir, "mm", 5);
		char mm_host[PATH_MAX];
		vc_path_join(mm_host, sizeof(mm_host), dir, "hosts/mm");
		vc_log_tail(netns_of_hosts(dir) ? mm_host : dir, "munged", 5);
		free(missing);
		ctl_reply_free(rep);
		return;
	}
	char list[4096];
	hostlist_compress(missing, nmissing, list, sizeof(list));
	fprintf(stderr,
		"storm: error: the cluster did not come up within %.0f s: %d of %d nodes never "
		"came up: %s\n",
		waited, nmissing, conf->nnodes, list);
	for (int i = 0; i < nmissing && i < 4; i++)
		vc_log_tail(dir, missing[i], 3);
	if (nmissing > 4)
		fprintf(stderr, "  (logs of the others in %s/log)\n", dir);
	free(missing);
	ctl_reply_free(rep);
}

/* Takes down what `up` started after a failure. */
static void teardown(const char *dir, const char *sock, const char *conf_path)
{
	int err;
	vc_send_shutdown(sock, &err);
	char pids[PATH_MAX];
	vc_path_join(pids, sizeof(pids), dir, "pids");
	vc_stop_daemons(pids, conf_path, 3.0, 1);
	vc_remove_runtime(dir);
	fprintf(stderr, "storm: took the partial cluster down (logs in %s/log)\n", dir);
}

/* A child that exited during `up`: its name, or NULL. */
static const char *dead_child(struct daemon *d, int n, int *status)
{
	for (int i = 0; i < n; i++)
		if (!d[i].gone && waitpid(d[i].pid, status, WNOHANG) == d[i].pid) {
			d[i].gone = 1;
			return d[i].name;
		}
	return NULL;
}

static void describe_exit(const char *name, int status)
{
	if (WIFEXITED(status))
		fprintf(stderr, "storm: error: %s exited with status %d during start-up:\n", name,
			WEXITSTATUS(status));
	else
		fprintf(stderr, "storm: error: %s was killed by signal %d during start-up:\n", name,
			WTERMSIG(status));
}
/* The MM and every node daemon, detached, all at once: each node daemon
 * registers its fabric address with the MM (retrying until the MM listens)
 * and learns the others' from it; none waits for the others. The started
 * ones are in d[0..*nd). 0, or -1 (printed). */
static int start_daemons(const struct up_opts *o, const char *dir, const char *conf_path,
			 const struct storm_conf *conf, struct daemon *d, int *nd)
{
	char mm_bin[PATH_MAX + 16], nd_bin[PATH_MAX + 16], log[PATH_MAX], pids[PATH_MAX];
	if (vc_find_daemon("stormmm", mm_bin, sizeof(mm_bin)) ||
	    vc_find_daemon("stormnd", nd_bin, sizeof(nd_bin)))
		return -1;
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	vc_daemon_log(dir, HOSTS_MM, log, sizeof(log));
	char *mm_argv[] = { mm_bin, "-c", (char *)conf_path, NULL };
	if (!o->realtime)
		vc_rt_share(conf->nnodes);
	pid_t host = 0;
	if (o->hosts && (host = vc_host_of(dir, HOSTS_MM)) == 0)
		return -1;
	pid_t pid = vc_spawn_detached(mm_argv, log, dir, o->netns || o->hosts ? NETNS_MM : NO_NETNS,
				   host, VC_SPAWN_GUARDED);
	if (pid < 0) {
		fprintf(stderr, "storm: error: cannot start %s: %s\n", mm_bin, strerror(-(int)pid));
		return -1;
	}
	vc_mm_priority(pid, o->realtime);
	d[*nd].pid = pid;
	snprintf(d[(*nd)++].name, HOSTNAME_MAX, "mm");
	vc_append_pid(pids, pid, "mm");
	for (int i = 0; i < conf->nnodes; i++) {
		vc_daemon_log(dir, conf->nodes[i], log, sizeof(log));
		/* SCHED_FIFO is for a node with one daemon: 64 real-time daemons
		 * on a few cores would starve everything else if one spun */
		char *nd_argv[] = { nd_bin, "-c", (char *)conf_path, "-n", conf->nodes[i],
				    o->realtime ? NULL : "--no-realtime", NULL };
		if (o->hosts && (host = vc_host_of(dir, conf->nodes[i])) == 0)
			return -1;
		pid = vc_spawn_detached(nd_argv, log, dir, o->netns || o->hosts ? i : NO_NETNS, host, 0);
		if (pid < 0) {
			fprintf(stderr, "storm: error: cannot start %s for %s: %s\n", nd_bin,
				conf->nodes[i], strerror(-(int)pid));
			return -1;
		}
		d[*nd].pid = pid;
		snprintf(d[(*nd)++].name, HOSTNAME_MAX, "%s", conf->nodes[i]);
		vc_append_pid(pids, pid, conf->nodes[i]);
	}
	return 0;
}

/* Waits until the MM says every node is UP: its status reply (the caller
 * frees it), or NULL (printed) when a daemon died, the wait timed out or
 * Ctrl-C came (*interrupt set). */
Storm__Ctl__Reply *vc_wait_up(const char *dir, const char *sock,
			      const struct storm_conf *conf, struct daemon *d, int nd,
			      unsigned timeout_s, bool *interrupt)
{
	double start = now_s(), limit = timeout_s ? timeout_s : 30.0 + 0.5 * conf->nnodes;
	int err, status;
	const char *dead;
	for (;;) {
		if ((dead = dead_child(d, nd, &status))) {
			describe_exit(!strcmp(dead, "mm") ? "the machine manager" : dead, status);
			vc_log_tail(dir, dead, 5);
			return NULL;
		}
		if (vc_interrupted) {
			*interrupt = true;
			return NULL;
		}
		double left = limit - (now_s() - start);
		if (left <= 0) {
			report_missing(dir, sock, conf, limit);
			return NULL;
		}
		/* short waits so a dead daemon or Ctrl-C is noticed quickly */
		Storm__Ctl__Reply *rep = vc_ask_status(sock, left < 1.0 ? (unsigned)(left * 1000) : 1000,
						    &err);
		if (!rep) {
			/* not listening yet, or still joining the fabric */
			if (err == -ENOENT || err == -ECONNREFUSED || err == -ETIMEDOUT ||
			    err == -EHOSTUNREACH) {
				if (err != -ETIMEDOUT)
					usleep(20000);
				continue;
			}
			fprintf(stderr, "storm: error: the machine manager stopped answering: %s\n",
				strerror(-err));
			vc_log_tail(dir, "mm", 5);
			return NULL;
		}
		if (rep->body_case == STORM__CTL__REPLY__BODY_STATUS &&
		    rep->status->nodes_up == rep->status->nodes_total &&
		    rep->status->nodes_total == (uint32_t)conf->nnodes)
			return rep;
		if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR) {
			cli_print_error(rep->error, "cluster status");
			ctl_reply_free(rep);
			return NULL;
		}
		ctl_reply_free(rep);
	}
}

/* The line a script reads: the cluster's name, nodes, provider, slice. */
void vc_print_up(const char *dir, const char *conf_path, const struct storm_conf *conf,
		 const Storm__Ctl__Status *st, bool hint)
{
	char list[4096], ts[32];
	const char **names = malloc(sizeof(*names) * (size_t)conf->nnodes);
	for (int i = 0; names && i < conf->nnodes; i++)
		names[i] = conf->nodes[i];
	if (names)
		hostlist_compress(names, conf->nnodes, list, sizeof(list));
	else
		list[0] = '\0';
	free(names);
	fmt_timeslice(st->timeslice_us ? st->timeslice_us : conf->timeslice_us, ts, sizeof(ts));
	printf("storm: cluster '%s' up: %d nodes %s, %s, timeslice %s (%s)\n", st->cluster,
	       conf->nnodes, list, st->provider[0] ? st->provider : conf->provider, ts, dir);
	fflush(stdout);
	char def[64];
	snprintf(def, sizeof(def), "/tmp/storm-%u", (unsigned)getuid());
	if (hint && strcmp(dir, def) != 0)
		fprintf(stderr, "storm: other commands find it with --conf %s or STORM_CONF=%s\n",
			conf_path, conf_path);
}

int vc_cluster_up(const struct up_opts *o)
{
	char dir[DIR_MAX], conf_path[PATH_MAX], sock[PATH_MAX], pids[PATH_MAX];
	if (vc_resolve_dir(o, NULL, dir) < 0)
		return EXIT_STORM;
	snprintf(conf_path, sizeof(conf_path), "%s/storm.conf", dir);
	snprintf(sock, sizeof(sock), "%s/mm.sock", dir);
	snprintf(pids, sizeof(pids), "%s/pids", dir);
	char probe[PATH_MAX + 16];
	if (vc_find_daemon("stormmm", probe, sizeof(probe)) ||
	    vc_find_daemon("stormnd", probe, sizeof(probe)))
		return EXIT_STORM;
	if (vc_clear_dir(o, dir, conf_path, sock, pids) < 0 || vc_prepare_dir(dir) != 0)
		return EXIT_STORM;
	char cerr[512];
	if ((o->netns || o->hosts) && netns_up(dir, (int)o->nodes, o->hosts, cerr, sizeof(cerr)) != 0) {
		fprintf(stderr, "storm: error: %s\n", cerr);
		return EXIT_STORM;
	}
	struct storm_conf conf;
	if (vc_configure(o, dir, conf_path, sock, &conf) < 0)
		return EXIT_STORM;
	struct daemon *d = calloc(o->nodes + 1, sizeof(*d));
	if (!d) {
		conf_free(&conf);
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	struct sigaction sa = { .sa_handler = vc_on_sigint };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int nd = 0, code = EXIT_STORM;
	bool interrupt = false;
	Storm__Ctl__Reply *rep = NULL;
	/* --hosts: over TCP, as from any machine but the MM's */
	const char *where = o->hosts ? conf.ctl_address : sock;
	if (start_daemons(o, dir, conf_path, &conf, d, &nd) == 0 &&
	    (rep = vc_wait_up(dir, where, &conf, d, nd, o->up_timeout, &interrupt))) {
		vc_print_up(dir, conf_path, &conf, rep->status, true);
		ctl_reply_free(rep);
		code = EXIT_OK;
	} else {
		if (interrupt)
			fprintf(stderr, "storm: vc_interrupted while the cluster was coming up\n");
		teardown(dir, where, conf_path);
	}
	free(d);
	conf_free(&conf);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	return code;
}
