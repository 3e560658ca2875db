/* storm replay: reruns a job recorded with storm run --record, the trace
 * sent along (--file) and STORM_BCS_REPLAY naming it, so each rank forces
 * its recorded outcomes (the trace format: docs/bcs-trace.md). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "trace_codec.h"
#include "bcs.h"
#include "cli.h"
#include "opts.h"

#define TRACE_MAX (256u << 20) /* a trace file this storm reads at most */

static const char replay_help[] =
	"Usage: storm replay [OPTIONS] TRACE\n"
	"\n"
	"Reruns the BCS-MPI job recorded with 'storm run --record TRACE': the same\n"
	"program and arguments (found from the current directory as when recorded),\n"
	"on as many nodes and ranks, with every recorded outcome forced — wildcard\n"
	"receives, MPI_Test*, MPI_Iprobe, MPI_Waitany/Waitsome. A rank whose run\n"
	"departs from the trace stops the job with a line naming the rank, the call\n"
	"and the expected against the actual outcome (exit status 3).\n"
	"\n"
	"  --debug RANK   hold RANK in MPI_Init under a debugger: gdb in this\n"
	"                 terminal when there is one (the other ranks replay around\n"
	"                 it), otherwise the rank prints how to attach (gdbserver's\n"
	"                 address when gdbserver is installed)\n"
	"  -l, --label    prefix every output line with 'RANK: '\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n"
	"\n"
	"Exit status: the job's, as for storm run; 1 when the trace cannot be read.\n";

enum { R_DEBUG = 1, R_LABEL, R_CONF, R_HELP };
static const struct cli_opt replay_opts[] = {
	{ "debug", 0, 1, R_DEBUG }, { "label", 'l', 0, R_LABEL },
	{ "conf", 0, 1, R_CONF },   { "help", 'h', 0, R_HELP },
	{ NULL, 0, 0, 0 },
};

int cmd_replay(struct cli *c, int argc, char **argv)
{
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1);
	int id, label = 0;
	long debug = -1;
	while ((id = cli_opt_next(&p, replay_opts)) > 0) {
		switch (id) {
		case R_DEBUG: {
			char *end;
			errno = 0;
			debug = strtol(p.arg, &end, 10);
			if (errno || *end || end == p.arg || debug < 0) {
				fprintf(stderr, "storm replay: error: --debug wants a rank, not '%s'\n",
					p.arg);
				return EXIT_USAGE;
			}
			break;
		}
		case R_LABEL: label = 1; break;
		case R_CONF: c->conf_opt = p.arg; break;
		case R_HELP: fputs(replay_help, stdout); return EXIT_OK;
		}
	}
	if (id == OPT_ERROR) {
		fprintf(stderr, "storm replay: error: %s (see --help)\n", p.err);
		return EXIT_USAGE;
	}
	if (p.ind != argc - 1) {
		fprintf(stderr, "storm replay: error: %s (see --help)\n",
			p.ind >= argc ? "no trace given" : "one trace only");
		return EXIT_USAGE;
	}
	const char *path = argv[p.ind];
	FILE *in = fopen(path, "rb");
	if (!in) {
		fprintf(stderr, "storm replay: error: cannot open %s: %s\n", path, strerror(errno));
		return EXIT_STORM;
	}
	uint8_t *buf = malloc(TRACE_MAX);
	size_t len = buf ? fread(buf, 1, TRACE_MAX, in) : 0;
	fclose(in);
	struct bcs_trace t;
	char why[256];
	if (!buf || bcs_trace_decode(buf, len, &t, why, sizeof(why)) < 0) {
		fprintf(stderr, "storm replay: error: %s: %s\n", path, buf ? why : "out of memory");
		free(buf);
		return EXIT_STORM;
	}
	free(buf);
	if (debug >= 0 && (uint32_t)debug >= t.ranks) {
		fprintf(stderr, "storm replay: error: --debug %ld: the job had ranks 0..%u\n", debug,
			t.ranks - 1);
		bcs_trace_free(&t);
		return EXIT_USAGE;
	}
	/* storm run -N nodes -n ranks --file TRACE [-l] PROGRAM ARGS... */
	char nodes[16], ranks[16], dbg[24], tmp[PATH_MAX];
	snprintf(nodes, sizeof(nodes), "%u", t.nodes);
	snprintf(ranks, sizeof(ranks), "%u", t.ranks);
	char **av = calloc(t.argc + 12, sizeof(char *));
	if (!av) {
		bcs_trace_free(&t);
		return EXIT_STORM;
	}
	int n = 0;
	av[n++] = "storm replay";
	if (t.nodes) {
		av[n++] = "-N";
		av[n++] = nodes;
	}
	av[n++] = "-n";
	av[n++] = ranks;
	av[n++] = "--file";
	av[n++] = (char *)path;
	if (label)
		av[n++] = "-l";
	for (uint32_t i = 0; i < t.argc; i++)
		av[n++] = t.argv[i];
	snprintf(tmp, sizeof(tmp), "%s", path);
	setenv("STORM_BCS_REPLAY", basename(tmp), 1);
	if (debug >= 0) {
		snprintf(dbg, sizeof(dbg), "%ld", debug);
		setenv("STORM_BCS_DEBUG", dbg, 1);
		/* with a terminal the CLI runs gdb itself (on_debug_line) */
		setenv("STORM_BCS_DEBUG_TTY", isatty(0) && isatty(1) ? "1" : "0", 1);
	}
	int rc = run_bcs_job(c, n, av, NULL);
	free(av);
	bcs_trace_free(&t);
	return rc;
}
