/* storm cluster restart: one daemon of the virtual cluster started again
 * as up started it. */
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cluster.h"
#include "netns.h"
#include "opts.h"

/* ---- restart: one daemon of the virtual cluster, started again as up did */

static const char restart_help[] =
	"Usage: storm cluster restart mm|NODE [--dir DIR]\n"
	"\n"
	"Starts the machine manager (mm) or node NODE's daemon of the virtual cluster\n"
	"again, as 'cluster up' started it (detached, its log appended, in its\n"
	"network namespace with --netns, in its host with --hosts), after it died\n"
	"or was killed. The machine\n"
	"manager takes its jobs back from its database and the node daemons\n"
	"re-register with it; a restarted node daemon kills the ranks it lost and\n"
	"reports their jobs failed. For the machine manager, waits until it\n"
	"answers. Refused while that daemon still runs.\n"
	"\n"
	"      --dir DIR   the cluster's directory (default: where storm.conf is found)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

/* The daemon NAME of the cluster at conf_path still runs: told, 1. */
static int daemon_still_runs(const char *pids, const char *name, const char *conf_path)
{
	struct daemon *d;
	int n = vc_read_pids(pids, &d);
	for (int i = 0; i < n; i++)
		if (!strcmp(d[i].name, name) && kill(d[i].pid, 0) == 0 &&
		    vc_runs_with_conf(d[i].pid, conf_path)) {
			fprintf(stderr, "storm: error: %s still runs (pid %d); it must die first\n",
				name, (int)d[i].pid);
			free(d);
			return 1;
		}
	free(d);
	return 0;
}

/* Waits for the restarted machine manager (pid) to answer: EXIT_OK, or
 * EXIT_STORM once it died or 30 s went by. */
static int wait_mm_again(const struct storm_conf *conf, pid_t pid, double start,
			 const char *log)
{
	/* the MM listens at once, answers once it has joined the fabric */
	ctl_set_munge_socket(conf->munge_socket);
	for (;;) {
		int e;
		Storm__Ctl__Reply *rep = vc_ask_status(vc_mm_where(conf), 1000, &e);
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_STATUS) {
			printf("storm: machine manager started again (pid %d) in %.2f s: %u of %u "
			       "nodes up, %u jobs running, %u queued\n",
			       (int)pid, now_s() - start, rep->status->nodes_up,
			       rep->status->nodes_total, rep->status->jobs_running,
			       rep->status->jobs_queued);
			ctl_reply_free(rep);
			return EXIT_OK;
		}
		ctl_reply_free(rep);
		if (kill(pid, 0) != 0 || now_s() - start > 30) {
			fprintf(stderr, "storm: error: the machine manager did not answer; see %s\n",
				log);
			return EXIT_STORM;
		}
		if (!rep) {
			struct timespec ts = { 0, 20 * 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

int vc_cluster_restart(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "dir", 0, 1, C_DIR }, { "conf", 0, 1, C_CONF }, { "help", 'h', 0, C_HELP },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster restart", *dir_opt = NULL, *name = NULL;
	int id;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_DIR: dir_opt = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_HELP: fputs(restart_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			if (name)
				return usage_error(cmd, "unexpected argument '%s'", p.arg);
			name = p.arg;
			break;
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	if (!name)
		return usage_error(cmd, "which daemon? 'mm' or a node name");
	char err[512];
	if (vc_locate(c, dir_opt, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: no virtual cluster found (%s)\n", err);
		return EXIT_STORM;
	}
	char dir[PATH_MAX], tmp[PATH_MAX], pids[PATH_MAX + 8], log[PATH_MAX + 80], nsf[PATH_MAX + 8];
	snprintf(tmp, sizeof(tmp), "%s", c->conf_path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	vc_path_join(pids, sizeof(pids), dir, "pids");
	vc_path_join(nsf, sizeof(nsf), dir, "netns");
	if (access(pids, F_OK) != 0) {
		fprintf(stderr, "storm: error: %s is not a virtual cluster's directory (no pids file)\n",
			dir);
		return EXIT_STORM;
	}
	struct storm_conf conf;
	if (conf_load(c->conf_path, &conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "storm: error: %s\n", err);
		return EXIT_STORM;
	}
	int is_mm = !strcmp(name, "mm"), idx = is_mm ? -1 : conf_node_index(&conf, name);
	vc_rt_share(conf.nnodes);
	int rc = EXIT_STORM;
	if (!is_mm && idx < 0) {
		rc = usage_error(cmd, "'%s' is neither mm nor a node of %s", name, c->conf_path);
		goto out;
	}
	if (daemon_still_runs(pids, name, c->conf_path))
		goto out;
	char bin[PATH_MAX + 16];
	if (vc_find_daemon(is_mm ? "stormmm" : "stormnd", bin, sizeof(bin)))
		goto out;
	int netns = access(nsf, F_OK) == 0;
	pid_t host = 0;
	if (netns_of_hosts(dir) && (host = vc_host_of(dir, is_mm ? HOSTS_MM : name)) == 0)
		goto out;
	vc_daemon_log(dir, is_mm ? HOSTS_MM : name, log, sizeof(log));
	char *mm_argv[] = { bin, "-c", c->conf_path, NULL };
	char *nd_argv[] = { bin, "-c", c->conf_path, "-n", (char *)name, "--no-realtime", NULL };
	double start = now_s();
	pid_t pid = vc_spawn_detached(is_mm ? mm_argv : nd_argv, log, dir,
				   netns ? (is_mm ? NETNS_MM : idx) : NO_NETNS, host,
				   VC_SPAWN_APPEND | (is_mm ? VC_SPAWN_GUARDED : 0));
	if (pid < 0) {
		fprintf(stderr, "storm: error: cannot start %s: %s\n", bin, strerror(-(int)pid));
		goto out;
	}
	vc_append_pid(pids, pid, name);
	if (is_mm)
		vc_mm_priority(pid, 0);
	if (!is_mm) {
		printf("storm: %s's node daemon started again (pid %d)\n", name, (int)pid);
		rc = EXIT_OK;
		goto out;
	}
	rc = wait_mm_again(&conf, pid, start, log);
out:
	conf_free(&conf);
	return rc;
}
