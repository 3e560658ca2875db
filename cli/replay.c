/* storm replay: reruns a job recorded with storm run --record, the trace
 * sent along (--file) and STORM_BCS_REPLAY naming it, so each rank forces
 * its recorded outcomes (the trace format: docs/bcs-trace.md). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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
	"on as many ranks (and nodes, unless -N), every recorded outcome forced — wildcard\n"
	"receives, MPI_Test*, MPI_Iprobe, MPI_Waitany/Waitsome. A rank whose run\n"
	"departs from the trace stops the job with a line naming the rank, the call\n"
	"and the expected against the actual outcome (exit status 3).\n"
	"\n"
	"  --from CHECKPOINT  restore that checkpoint of the recorded job (as\n"
	"                 storm checkpoints lists it) and replay from where it was\n"
	"                 taken: each rank forces the outcomes recorded after the\n"
	"                 checkpoint's mark in TRACE (read here and sent to every\n"
	"                 node of the restart); calls are numbered on from the\n"
	"                 checkpoint (not with --debug or --stop)\n"
	"  --debug RANK   hold RANK in MPI_Init under a debugger: gdb in this\n"
	"                 terminal when there is one (the other ranks replay around\n"
	"                 it), otherwise the rank prints how to attach (gdbserver's\n"
	"                 address when gdbserver is installed)\n"
	"  --list RANK    print RANK's recorded MPI calls, numbered (--json: as JSON),\n"
	"                 and run nothing\n"
	"  --stop RANK:N  hold RANK at its N-th MPI call (RANK:last: the call where\n"
	"                 its recorded run ended) for a debugger, as --debug does\n"
	"  -N, --nodes N  run the ranks on N nodes rather than on as many as\n"
	"                 recorded (fewer: several ranks share a node, as on a\n"
	"                 laptop's virtual cluster); the outcomes are the same\n"
	"  -l, --label    prefix every output line with 'RANK: '\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help     this help\n"
	"\n"
	"When every rank of a run cancelled in a deadlock waits again in the call it\n"
	"waited in, each rank's call is named and the replay ends (exit status 4).\n"
	"\n"
	"Exit status: the job's, as for storm run; 1 when the trace cannot be read.\n";

enum { R_DEBUG = 1, R_LABEL, R_CONF, R_HELP, R_FROM, R_LIST, R_JSON, R_STOP, R_NODES };
static const struct cli_opt replay_opts[] = {
	{ "debug", 0, 1, R_DEBUG }, { "label", 'l', 0, R_LABEL },
	{ "conf", 0, 1, R_CONF },   { "help", 'h', 0, R_HELP },
	{ "from", 0, 1, R_FROM },   { "list", 0, 1, R_LIST },
	{ "json", 0, 0, R_JSON },   { "stop", 0, 1, R_STOP },
	{ "nodes", 'N', 1, R_NODES },
	{ NULL, 0, 0, 0 },
};

/* ---- storm replay --from CHECKPOINT: a restart of that checkpoint whose
 * ranks replay the trace from the checkpoint's mark (bcs_mpi/trace.c) */

/* The checkpoint is the recorded job's and every rank's section of t has
 * its mark; 0, or EXIT_STORM with the one-line reason printed. */
static int from_check(struct cli *c, const struct bcs_trace *t, const char *path, uint64_t ckpt)
{
	Storm__Ctl__ListCheckpoints lc = STORM__CTL__LIST_CHECKPOINTS__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_CHECKPOINTS;
	req.checkpoints = &lc;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS,
					      STORM__CTL__REPLY__BODY_CHECKPOINTS, &rc);
	if (!rep)
		return rc ? rc : EXIT_STORM;
	const Storm__Ctl__CheckpointInfo *k = NULL;
	for (size_t i = 0; i < rep->checkpoints->n_checkpoints; i++)
		if (rep->checkpoints->checkpoints[i]->id == ckpt)
			k = rep->checkpoints->checkpoints[i];
	uint64_t job = k ? k->job : 0;
	ctl_reply_free(rep);
	if (!k) {
		fprintf(stderr, "storm replay: error: no checkpoint %llu (see storm checkpoints)\n",
			(unsigned long long)ckpt);
		return EXIT_STORM;
	}
	if (!t->job) {
		fprintf(stderr, "storm replay: error: %s names no job (written by an older storm): it "
			"has no checkpoint marks\n", path);
		return EXIT_STORM;
	}
	if (job != t->job) {
		fprintf(stderr, "storm replay: error: checkpoint %llu is of job %llu, not of the "
			"recorded job %llu\n", (unsigned long long)ckpt, (unsigned long long)job,
			(unsigned long long)t->job);
		return EXIT_STORM;
	}
	for (uint32_t i = 0; i < t->nsections; i++)
		if (!bcs_trace_mark(&t->sec[i], ckpt)) {
			fprintf(stderr, "storm replay: error: %s has no mark for checkpoint %llu "
				"(rank %u's trace holds %zu mark%s; a trace taken before the "
				"checkpoint?)\n", path, (unsigned long long)ckpt, t->sec[i].rank,
				t->sec[i].nmarks, t->sec[i].nmarks == 1 ? "" : "s");
			return EXIT_STORM;
		}
	return 0;
}

static int replay_from(struct cli *c, const struct bcs_trace *t, const char *path, int fd,
		       uint64_t ckpt, uint32_t nodes, int label)
{
	int rc = from_check(c, t, path, ckpt);
	if (rc)
		return rc;
	Storm__Ctl__Restart rs = STORM__CTL__RESTART__INIT;
	rs.checkpoint = ckpt;
	rs.nodes = nodes;
	/* the trace read here goes along, as storm run's --file does */
	return cli_restart(c, &rs, "storm replay", label, fd);
}

/* storm replay's command line. */
struct replay_args {
	int label, json;
	const char *list, *stop, *path;
	int fd;     /* the trace, open: what --from sends is what was read */
	long debug; /* -1: none */
	long nodes; /* 0: as recorded */
	unsigned long long from;
};

/* An option's number: --debug's rank, --from's checkpoint id, --nodes'
 * count. 0, or EXIT_USAGE (said). */
static int replay_number(int id, const char *arg, struct replay_args *a)
{
	char *end;
	errno = 0;
	if (id == R_DEBUG) {
		a->debug = strtol(arg, &end, 10);
		if (errno || *end || end == arg || a->debug < 0) {
			fprintf(stderr, "storm replay: error: --debug wants a rank, not '%s'\n", arg);
			return EXIT_USAGE;
		}
		return 0;
	}
	if (id == R_NODES) {
		a->nodes = strtol(arg, &end, 10);
		if (errno || *end || end == arg || a->nodes < 1 || a->nodes > 65536) {
			fprintf(stderr, "storm replay: error: --nodes wants a count of nodes, "
				"not '%s'\n", arg);
			return EXIT_USAGE;
		}
		return 0;
	}
	a->from = strtoull(arg, &end, 10);
	if (errno || *end || end == arg || !a->from || arg[0] == '-') {
		fprintf(stderr, "storm replay: error: --from wants a checkpoint id "
			"(storm checkpoints), not '%s'\n", arg);
		return EXIT_USAGE;
	}
	return 0;
}

/* The options and the one trace into *a: -1, or an exit code (--help,
 * or an error said). */
static int replay_parse(struct cli *c, int argc, char **argv, struct replay_args *a)
{
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1);
	int id, rc;
	while ((id = cli_opt_next(&p, replay_opts)) > 0) {
		switch (id) {
		case R_DEBUG:
		case R_FROM:
		case R_NODES:
			if ((rc = replay_number(id, p.arg, a)))
				return rc;
			break;
		case R_LABEL: a->label = 1; break;
		case R_LIST: a->list = p.arg; break;
		case R_JSON: a->json = 1; break;
		case R_STOP: a->stop = p.arg; break;
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
	a->path = argv[p.ind];
	return -1;
}

/* The trace file at path opened (*fd) and decoded into *t: 0, or
 * EXIT_STORM (said). */
static int replay_read(const char *path, int *fd, struct bcs_trace *t)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (*fd < 0 || fstat(*fd, &st) < 0) {
		fprintf(stderr, "storm replay: error: cannot open %s: %s\n", path, strerror(errno));
		return EXIT_STORM;
	}
	if (!S_ISREG(st.st_mode)) {
		fprintf(stderr, "storm replay: error: %s: %s, not a trace\n", path,
			S_ISDIR(st.st_mode) ? "a directory" : "not a regular file");
		return EXIT_STORM;
	}
	uint8_t *buf = malloc(TRACE_MAX);
	size_t len = 0;
	while (buf && len < TRACE_MAX) {
		ssize_t n = pread(*fd, buf + len, TRACE_MAX - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "storm replay: error: cannot read %s: %s\n", path,
				strerror(errno));
			free(buf);
			return EXIT_STORM;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	char why[256];
	if (!buf || bcs_trace_decode(buf, len, t, why, sizeof(why)) < 0) {
		fprintf(stderr, "storm replay: error: %s: %s\n", path, buf ? why : "out of memory");
		free(buf);
		return EXIT_STORM;
	}
	free(buf);
	return 0;
}

/* The recorded job run again on its trace:
 * storm run -N nodes -n ranks --file TRACE [-l] PROGRAM ARGS... */
static int replay_run(struct cli *c, const struct bcs_trace *t, const struct replay_args *a)
{
	char nodes[16], ranks[16], dbg[24], tmp[PATH_MAX];
	/* outcomes are per rank, so they hold on any layout of the same ranks */
	uint32_t nnodes = a->nodes ? (uint32_t)a->nodes : t->nodes;
	snprintf(nodes, sizeof(nodes), "%u", nnodes);
	snprintf(ranks, sizeof(ranks), "%u", t->ranks);
	char **av = calloc(t->argc + 12, sizeof(char *));
	if (!av)
		return EXIT_STORM;
	int n = 0;
	av[n++] = "storm replay";
	if (nnodes) {
		av[n++] = "-N";
		av[n++] = nodes;
	}
	av[n++] = "-n";
	av[n++] = ranks;
	av[n++] = "--file";
	av[n++] = (char *)a->path;
	if (a->label)
		av[n++] = "-l";
	for (uint32_t i = 0; i < t->argc; i++)
		av[n++] = t->argv[i];
	snprintf(tmp, sizeof(tmp), "%s", a->path);
	setenv("STORM_BCS_REPLAY", basename(tmp), 1);
	if (a->debug >= 0) {
		snprintf(dbg, sizeof(dbg), "%ld", a->debug);
		setenv("STORM_BCS_DEBUG", dbg, 1);
		/* with a terminal the CLI runs gdb itself (on_debug_line) */
		setenv("STORM_BCS_DEBUG_TTY", isatty(0) && isatty(1) ? "1" : "0", 1);
	}
	int rc = run_bcs_job(c, n, av, NULL);
	free(av);
	return rc;
}

/* What the trace is asked for, once read: a restart --from a checkpoint,
 * its calls listed, or the job run again. */
static int replay_trace(struct cli *c, const struct bcs_trace *t, const struct replay_args *a)
{
	if (a->from && a->stop) {
		/* the restored ranks keep the environment of the recorded run */
		fprintf(stderr, "storm replay: error: --stop cannot be combined with --from: ranks "
			"restored from a checkpoint are given no call to stop at (replay the "
			"whole trace with --stop)\n");
		return EXIT_USAGE;
	}
	if (a->from && !a->list) {
		if (a->debug < 0)
			return replay_from(c, t, a->path, a->fd, a->from, (uint32_t)a->nodes,
					   a->label);
		fprintf(stderr, "storm replay: error: --debug holds a rank in MPI_Init, which "
			"a replay --from a checkpoint does not run\n");
		return EXIT_USAGE;
	}
	if (a->nodes > (long)t->ranks) {
		fprintf(stderr, "storm replay: error: --nodes %ld: the job had %u rank%s\n",
			a->nodes, t->ranks, t->ranks == 1 ? "" : "s");
		return EXIT_USAGE;
	}
	if (a->debug >= 0 && (uint32_t)a->debug >= t->ranks) {
		fprintf(stderr, "storm replay: error: --debug %ld: the job had ranks 0..%u\n",
			a->debug, t->ranks - 1);
		return EXIT_USAGE;
	}
	int rc = replay_calls(t, a->list, a->json, a->stop);
	return rc >= 0 ? rc : replay_run(c, t, a);
}

int cmd_replay(struct cli *c, int argc, char **argv)
{
	struct replay_args a = { .debug = -1, .fd = -1 };
	int rc = replay_parse(c, argc, argv, &a);
	if (rc >= 0)
		return rc;
	struct bcs_trace t;
	if ((rc = replay_read(a.path, &a.fd, &t)) == 0) {
		rc = replay_trace(c, &t, &a);
		bcs_trace_free(&t);
	}
	if (a.fd >= 0)
		close(a.fd);
	return rc;
}
