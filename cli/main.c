/* storm: the user's command for a storm cluster. Global options, then one
 * command; each command parses its own options (see docs/storm.1.md). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"

#define STORM_VERSION "0.1"

static const char usage[] =
	"Usage: storm [--conf FILE] [--mm HOST:PORT] COMMAND [OPTIONS] [ARGS]\n"
	"\n"
	"Commands:\n"
	"  run      run a program on the cluster and stream its output (like srun)\n"
	"  submit   queue a program or a batch script and print its id (like sbatch)\n"
	"  alloc    obtain an allocation and run a shell in it (like salloc)\n"
	"  jobs     list jobs (like squeue)\n"
	"  nodes    list nodes (like sinfo -N)\n"
	"  cancel   signal or cancel jobs (like scancel)\n"
	"  acct     list ended jobs from the accounting (like sacct)\n"
	"  matrix   draw the gang-scheduling matrix, once or live (--watch)\n"
	"  web      serve a live page of the matrix, the nodes and the jobs\n"
	"  trace    write a job's trace as Chrome Trace Event JSON (Perfetto), or\n"
	"           with --bcs its BCS-MPI record as a trace for storm replay\n"
	"  traces   list or delete the BCS-MPI records ('storm run --record')\n"
	"  replay   rerun a BCS-MPI job recorded with 'storm run --record'\n"
	"  cluster  bring a virtual cluster up or down on this machine; its status\n"
	"  checkpoint   checkpoint a running job\n"
	"  restart      start a job again from a checkpoint, streaming its output\n"
	"  checkpoints  list or delete checkpoints\n"
	"\n"
	"Global options:\n"
	"  --conf FILE   the cluster's storm.conf (default: $STORM_CONF, then\n"
	"                /tmp/storm-$UID/storm.conf, /tmp/storm-0/storm.conf,\n"
	"                PREFIX/etc/storm/storm.conf of an install in PREFIX,\n"
	"                /etc/storm/storm.conf)\n"
	"  --mm HOST:PORT  reach the machine manager over TCP at its ctl_address\n"
	"                (default: $STORM_MM, then storm.conf's ctl_address when\n"
	"                its local socket is absent); MUNGE authenticates you\n"
	"  -h, --help    this help; 'storm COMMAND --help' for a command\n"
	"  --version     print the version\n"
	"\n"
	"Exit codes: 0 success, 1 storm error (no cluster, request refused, job not\n"
	"found), 2 usage error; storm run exits with the job's status.\n";

enum { O_CONF = 1, O_MM, O_HELP, O_VERSION };
static const struct cli_opt global_opts[] = {
	{ "conf", 0, 1, O_CONF },
	{ "mm", 0, 1, O_MM },
	{ "help", 'h', 0, O_HELP },
	{ "version", 0, 0, O_VERSION },
	{ NULL, 0, 0, 0 },
};

/* storm cluster is the virtual-cluster manager, a program of its own
 * (vcluster/) installed beside this one: it runs with the same arguments. */
static int cmd_cluster(struct cli *c, int argc, char **argv)
{
	char self[PATH_MAX], prog[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		fprintf(stderr, "storm: error: cannot find storm-cluster: %s\n", strerror(errno));
		return EXIT_STORM;
	}
	self[n] = '\0';
	snprintf(prog, sizeof(prog), "%s/storm-cluster", dirname(self));
	char **av = calloc((size_t)argc + 3, sizeof(char *));
	if (!av) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	int k = 0;
	av[k++] = prog;
	if (c->conf_opt) {
		av[k++] = "--conf";
		av[k++] = (char *)c->conf_opt;
	}
	for (int i = 1; i < argc; i++)
		av[k++] = argv[i];
	execv(prog, av);
	fprintf(stderr, "storm: error: cannot run %s: %s (build it with 'make')\n", prog,
		strerror(errno));
	free(av);
	return EXIT_STORM;
}

static const struct {
	const char *name;
	int (*fn)(struct cli *, int, char **);
} commands[] = {
	{ "run", cmd_run },	  { "submit", cmd_submit }, { "jobs", cmd_jobs },
	{ "nodes", cmd_nodes },	  { "cancel", cmd_cancel }, { "cluster", cmd_cluster },
	{ "matrix", cmd_matrix }, { "checkpoint", cmd_checkpoint }, { "restart", cmd_restart },
	{ "checkpoints", cmd_checkpoints },
	{ "replay", cmd_replay }, { "acct", cmd_acct }, { "alloc", cmd_alloc },
	{ "web", cmd_web }, { "trace", cmd_trace }, { "traces", cmd_traces },
};

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1);
	int id;
	while ((id = cli_opt_next(&p, global_opts)) > 0) {
		switch (id) {
		case O_CONF:
			c.conf_opt = p.arg;
			break;
		case O_MM: {
			char host[256], port[16];
			if (conf_address(p.arg, host, sizeof(host), port, sizeof(port)) < 0)
				return usage_error("storm", "--mm wants HOST:PORT ([IPv6]:PORT), "
							    "not '%s'", p.arg);
			c.mm_opt = p.arg;
			break;
		}
		case O_HELP:
			fputs(usage, stdout);
			return EXIT_OK;
		case O_VERSION:
			printf("storm %s (control protocol %d)\n", STORM_VERSION, CTL_VERSION);
			return EXIT_OK;
		}
	}
	if (id == OPT_ERROR)
		return usage_error("storm", "%s", p.err);
	if (p.ind >= argc) {
		fputs(usage, stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[p.ind];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(commands[i].name, name) != 0)
			continue;
		int rc = commands[i].fn(&c, argc - p.ind, argv + p.ind);
		if (c.have_conf)
			conf_free(&c.conf);
		return rc;
	}
	return usage_error("storm", "unknown command '%s'", name);
}
