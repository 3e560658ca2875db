/* salloc on storm: Slurm's options turned into storm alloc's and the
 * allocation obtained through its client; the command runs here with
 * SLURM_JOB_ID and STORM_JOBID set, each srun in it a step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"

static const char help[] =
	"Usage: salloc [OPTIONS] [COMMAND [ARGS...]]\n"
	"\n"
	"Slurm's salloc on a storm cluster: obtains an allocation, then runs COMMAND\n"
	"(default: $SHELL) here with SLURM_JOB_ID, SLURM_JOB_NODELIST,\n"
	"SLURM_JOB_NUM_NODES and their STORM_* names set; each srun in it is a step\n"
	"on its nodes. The allocation ends when COMMAND exits.\n"
	"\n"
	"  -N, --nodes N       nodes (default 1)\n"
	"  -n, --ntasks N      taken when it is the node count (one task a node,\n"
	"                      what srun in the allocation starts); refused otherwise\n"
	"  -J, --job-name NAME the allocation's name\n"
	"  -t, --time T        end the allocation after T, as Slurm's\n"
	"  -Q, --quiet, -v, --verbose  taken\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"  -p P, -A A          taken when they name storm's one partition or account\n"
	"\n"
	"Ignored with a warning: another -A or -p, -q, --mem*, -c, --gres, -G/--gpus*, -C,\n"
	"--comment, -M, -x, -w, --exclusive, --mail-*, --signal.\n"
	"Refused: -H/--hold, --begin, --uid, --gid, --test-only, --no-shell,\n"
	"--ntasks-per-node.\n";

enum { O_NODES = 1, O_NTASKS, O_NAME, O_TIME, O_QUIET, O_CONF, O_HELP };
static const struct cli_opt opts[] = {
	{ "nodes", 'N', 1, O_NODES },	      { "ntasks", 'n', 1, O_NTASKS },
	{ "job-name", 'J', 1, O_NAME },	      { "time", 't', 1, O_TIME },
	{ "quiet", 'Q', 0, O_QUIET },	      { "verbose", 'v', 0, O_QUIET },
	{ "conf", 0, 1, O_CONF },	      { "help", 'h', 0, O_HELP },
	{ "account", 'A', 1, SL_ACCOUNT },    { "partition", 'p', 1, SL_PARTITION },
	{ "qos", 'q', 1, SL_IGNORE },	      { "mem", 0, 1, SL_IGNORE },
	{ "mem-per-cpu", 0, 1, SL_IGNORE },   { "cpus-per-task", 'c', 1, SL_IGNORE },
	{ "gres", 0, 1, SL_IGNORE },	      { "gpus", 'G', 1, SL_IGNORE },
	{ "gpus-per-node", 0, 1, SL_IGNORE }, { "constraint", 'C', 1, SL_IGNORE },
	{ "comment", 0, 1, SL_IGNORE },	      { "clusters", 'M', 1, SL_IGNORE },
	{ "exclude", 'x', 1, SL_IGNORE },     { "nodelist", 'w', 1, SL_IGNORE },
	{ "exclusive", 0, OPT_OPTIONAL, SL_IGNORE }, { "mail-type", 0, 1, SL_IGNORE },
	{ "mail-user", 0, 1, SL_IGNORE },     { "signal", 0, 1, SL_IGNORE },
	{ "hold", 'H', 0, SL_REFUSE },	      { "begin", 'b', 1, SL_REFUSE },
	{ "uid", 0, 1, SL_REFUSE },	      { "gid", 0, 1, SL_REFUSE },
	{ "test-only", 0, 0, SL_REFUSE },     { "no-shell", 0, 0, SL_REFUSE },
	{ "ntasks-per-node", 0, 1, SL_REFUSE }, { NULL, 0, 0, 0 },
};

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "salloc" };
	char **av = calloc(2 * (size_t)argc + 8, sizeof(char *)); /* -Jx: two words */
	struct cli_optparse p;
	uint64_t nodes = 1, ntasks = 0;
	struct sl_names names = { 0 };
	int id, k = 0, rc = -1;
	if (!av)
		return EXIT_STORM;
	av[k++] = "salloc";
	sl_opt_init(&p, argc, argv, 1); /* options end at the command */
	while (rc < 0 && (id = cli_opt_next(&p, opts)) > 0) {
		switch (id) {
		case O_NODES:
			if (parse_uint(p.arg, 1, 1u << 20, &nodes) < 0)
				rc = usage_error("salloc", "-N wants a whole number from 1, not '%s'", p.arg);
			break;
		case O_NTASKS:
			if (parse_uint(p.arg, 1, 1u << 20, &ntasks) < 0)
				rc = usage_error("salloc", "-n wants a whole number from 1, not '%s'", p.arg);
			break;
		case O_NAME: av[k++] = "-J"; av[k++] = (char *)p.arg; break;
		case O_TIME: av[k++] = "-t"; av[k++] = (char *)p.arg; break;
		case O_QUIET: break;
		case O_CONF: c.conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); rc = EXIT_OK; break;
		case SL_IGNORE: sl_warn_ignored("salloc", "", &p, "storm does not have it"); break;
		case SL_REFUSE: rc = sl_refuse("salloc", "", &p, "storm would allocate otherwise"); break;
		case SL_PARTITION: case SL_ACCOUNT: sl_names_take(&names, id, p.arg); break;
		}
	}
	if (rc < 0 && id == OPT_ERROR)
		rc = usage_error("salloc", "%s", p.err);
	if (rc < 0)
		rc = sl_names_check(&c, "salloc", "", &names);
	if (rc < 0 && ntasks && ntasks != nodes)
		rc = usage_error("salloc", "-n %llu on %llu node(s): storm's allocation starts one "
				 "task a node (give srun -n inside it)", (unsigned long long)ntasks,
				 (unsigned long long)nodes);
	char nbuf[24];
	if (rc < 0) {
		snprintf(nbuf, sizeof(nbuf), "%llu", (unsigned long long)nodes);
		av[k++] = "-N";
		av[k++] = nbuf;
		av[k++] = "--";
		for (int i = p.ind; i < argc; i++)
			av[k++] = argv[i];
		av[k] = NULL;
		rc = cmd_alloc(&c, k, av);
	}
	free(av);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
