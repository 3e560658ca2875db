/* storm cluster down: the MM asked to shut down, every daemon waited for or
 * killed, namespaces and run-time files removed (logs stay). */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster.h"
#include "opts.h"

static const char down_help[] =
	"Usage: storm cluster down [--dir DIR]\n"
	"\n"
	"Asks the machine manager to shut down, waits for every daemon of the\n"
	"virtual cluster (DIR/pids) to exit, kills those that do not, stops the\n"
	"cluster's munged (each host's too with --hosts), kills whatever is left\n"
	"in its network namespaces and removes them, and removes DIR/fabric,\n"
	"DIR/state, DIR/mm.sock, DIR/pids, DIR/munge, DIR/cluster.key and each\n"
	"host's files but its log; DIR/log stays. On a\n"
	"cluster that is not up it removes what is left and says so (exit 0).\n"
	"\n"
	"      --dir DIR  the virtual cluster in DIR (default: the usual search)\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n";

int vc_cmd_down(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "dir", 0, 1, C_DIR }, { "conf", 0, 1, C_CONF }, { "help", 'h', 0, C_HELP },
		{ NULL, 0, 0, 0 },
	};
	const char *cmd = "storm cluster down", *dir_opt = NULL;
	int id;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case C_DIR: dir_opt = p.arg; break;
		case C_CONF: c->conf_opt = p.arg; break;
		case C_HELP: fputs(down_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error(cmd, "unexpected argument '%s'", p.arg);
		default: return usage_error(cmd, "%s", p.err);
		}
	}
	char err[512];
	if (vc_locate(c, dir_opt, err, sizeof(err)) != 0) {
		printf("storm: no cluster is up (%s); nothing to take down\n", err);
		return EXIT_OK;
	}
	char dir[PATH_MAX], tmp[PATH_MAX], pids[PATH_MAX + 8], sock[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s", c->conf_path);
	snprintf(dir, sizeof(dir), "%s", dirname(tmp));
	vc_path_join(pids, sizeof(pids), dir, "pids");
	struct storm_conf conf;
	int have_conf = conf_load(c->conf_path, &conf, err, sizeof(err)) == 0;
	snprintf(sock, sizeof(sock), "%s/mm.sock", dir);
	/* only a virtual cluster's own layout is cleaned: never a real
	 * cluster's state directory */
	int is_virtual = access(pids, F_OK) == 0;
	if (have_conf) {
		char st[PATH_MAX + 8];
		snprintf(st, sizeof(st), "%s/state", dir);
		is_virtual |= !strcmp(conf.socket, sock) && !strcmp(conf.state_dir, st);
		/* --hosts, or a Slurm allocation's MM on another node: its
		 * ctl_address */
		snprintf(sock, sizeof(sock), "%s", vc_mm_where(&conf));
		ctl_set_munge_socket(conf.munge_socket);
		conf_free(&conf);
	} else if (!is_virtual) {
		printf("storm: no cluster is up (%s); nothing to take down\n", err);
		return EXIT_OK;
	}
	int e;
	int rc = vc_send_shutdown(sock, &e);
	if (rc > 0)
		return EXIT_STORM; /* refused, e.g. not root's: message printed */
	int was_up = rc == 0;
	if (!is_virtual) {
		if (was_up)
			printf("storm: the machine manager on %s is shutting down\n", sock);
		else
			printf("storm: no cluster is up (cannot connect to %s: %s)\n", sock,
			       strerror(-e));
		return EXIT_OK;
	}
	struct daemon *d;
	int n = vc_read_pids(pids, &d);
	free(d);
	int running = vc_stop_daemons(pids, c->conf_path, was_up ? 5.0 + 0.1 * n : 0.0, !was_up);
	int removed = vc_remove_runtime(dir);
	if (was_up)
		printf("storm: cluster down (%s)\n", dir);
	else if (running || removed)
		printf("storm: no cluster was up in %s; cleaned up what was left (%d daemons)\n", dir,
		       running);
	else
		printf("storm: no cluster is up in %s; nothing to take down\n", dir);
	return EXIT_OK;
}
