/* storm cluster up|status|down|restart: the virtual cluster on this machine,
 * the embedded default. Each subcommand has its file (README.md's table);
 * this one picks it. */
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "opts.h"

static const char cluster_help[] =
	"Usage: storm cluster up|status|down|restart [OPTIONS]\n"
	"\n"
	"  up --nodes N   start a virtual cluster on this machine\n"
	"  status         the cluster's state\n"
	"  down           stop the virtual cluster and clean up\n"
	"  restart NAME   start its machine manager (mm) or a node daemon again\n"
	"\n"
	"'storm cluster SUBCOMMAND --help' for the options.\n";

int cmd_cluster(struct cli *c, int argc, char **argv)
{
	if (argc < 2) {
		fputs(cluster_help, stderr);
		return EXIT_USAGE;
	}
	const char *sub = argv[1];
	if (!strcmp(sub, "-h") || !strcmp(sub, "--help")) {
		fputs(cluster_help, stdout);
		return EXIT_OK;
	}
	if (!strcmp(sub, "up")) {
		if (c->conf_opt) /* up writes a configuration, it reads none */
			return usage_error("storm cluster up",
					   "--conf does not apply; --dir DIR chooses where it goes");
		return vc_cmd_up(argc - 1, argv + 1);
	}
	if (!strcmp(sub, "status"))
		return vc_cmd_status(c, argc - 1, argv + 1);
	if (!strcmp(sub, "down"))
		return vc_cmd_down(c, argc - 1, argv + 1);
	if (!strcmp(sub, "restart"))
		return vc_cluster_restart(c, argc - 1, argv + 1);
	if (!strcmp(sub, "slurm-task")) /* not for users: up --slurm's job steps */
		return vc_slurm_task(argc - 1, argv + 1);
	return usage_error("storm cluster", "unknown subcommand '%s'", sub);
}
