/* The options of storm run and storm submit (jobopt.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "jobopt.h"
#include "mpikind.h"
#include "opts.h"
#include "sbatchopt.h"

static const char run_help[] =
	"Usage: storm run [OPTIONS] PROGRAM [ARGS...]\n"
	"\n"
	"Runs PROGRAM as a job on the cluster, streams every rank's stdout and\n"
	"stderr as it comes, and exits with the job's status. Options end at\n"
	"PROGRAM, like srun. PROGRAM is found in PATH when it has no '/', and is\n"
	"sent to the nodes (no shared file system needed).\n"
	"\n"
	"  -N, --nodes N       nodes to allocate (default: as many as the ranks need)\n"
	"  -n, --ntasks N      ranks to start (default: one per node)\n"
	"  -l, --label         prefix every output line with 'RANK: '\n"
	"      --no-bcast      do not send PROGRAM: it is on a path every node sees\n"
	"      --file F        send F along too (repeatable, up to 15); ranks find it\n"
	"                      as $STORM_JOB_DIR/NAME (NAME: its base name)\n"
	"      --timing        print transfer, execute and total time on stderr\n"
	"      --record FILE   BCS-MPI programs: write every timing-dependent outcome\n"
	"                      (wildcard receives, MPI_Test*, MPI_Iprobe, MPI_Waitany,\n"
	"                      MPI_Waitsome) to FILE, for 'storm replay FILE'\n"
	"      --mpi=auto|bcs|pmi1|pmix|none  how the ranks wire up as one MPI job\n"
	"                      (default auto: from the MPI PROGRAM is linked with --\n"
	"                      BCS-MPI: bcs, MPICH: pmi1, Open MPI: pmix; see storm(1))\n"
	"      --timeslice-us US  run at slices of US microseconds while this job's\n"
	"                      row runs (from the cluster's min_timeslice_us up to\n"
	"                      its timeslice_us): BCS-MPI moves messages once a\n"
	"                      slice; the row's turn lasts as long as the others'\n"
	"  -J, --job-name NAME the job's name (default: PROGRAM's base name)\n"
	"  -O, --overcommit    allow more ranks than CPUs on a node\n"
	"  -t, --time T        stop the job once it has run T (minutes, M:S, H:M:S,\n"
	"                      D-H, D-H:M or D-H:M:S, as Slurm): SIGTERM, then\n"
	"                      SIGKILL after the cluster's kill_wait; state TIMEOUT\n"
	"      --checkpoint-interval S  checkpoint the job every S seconds\n"
	"      --restart-on-failure     if a node of the job dies, restart it from its\n"
	"                      latest complete checkpoint on the nodes left\n"
	"  -d, --dependency=afterok|afterany|afternotok|after:ID[:ID...][,...]\n"
	"                      start only once those jobs ended (ok: status 0; notok:\n"
	"                      otherwise; any: either) or, with after, started\n"
	"      --export=ALL|NONE|NAME[=VALUE][,...]  the environment the ranks get\n"
	"                      (default ALL: this one)\n"
	"  -i, --input=0|none  where this command's stdin goes: to rank 0 (default;\n"
	"                      not when storm run is in the background of a terminal)\n"
	"                      or nowhere (every rank reads /dev/null)\n"
	"      --pty           rank 0 runs on a pseudo-terminal (its stdin, stdout and\n"
	"                      stderr) the size of this one, which goes raw meanwhile;\n"
	"                      Ctrl-C still interrupts the job\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Inside a batch script or a 'storm alloc' shell (STORM_JOBID set), the job is\n"
	"a step of that allocation: it runs on its nodes, in its turn of the\n"
	"matrix, as JOBID.STEP.\n"
	"\n"
	"Ctrl-C sends SIGINT to the job; a second Ctrl-C within 1 s kills it.\n"
	"Exit status: the job's (first non-zero rank status, 128+N for a rank killed\n"
	"by signal N); 1 when storm failed or the job did not run; 2 on bad usage.\n";

static const char submit_help[] =
	"Usage: storm submit [OPTIONS] PROGRAM [ARGS...]\n"
	"\n"
	"Queues PROGRAM as a batch job and prints its id. Its output (every rank's\n"
	"stdout and stderr) goes to storm-JOBID.out in the current directory, or to\n"
	"the file given with -o. Options end at PROGRAM.\n"
	"\n"
	"A PROGRAM starting with #! is a batch script: it runs once, on the first\n"
	"of its -N nodes, and each 'storm run' in it is a step on those nodes.\n"
	"Options may come from '#STORM' lines at its head (these options), and from\n"
	"'#SBATCH' lines (sbatch's, as its command line takes them: what storm does\n"
	"not have is ignored with a warning or refused); the command line's win.\n"
	"\n"
	"  -N, --nodes N       nodes to allocate (default: as many as the ranks need)\n"
	"  -n, --ntasks N      ranks to start (default: one per node)\n"
	"  -o, --output FILE   output file; %j becomes the job id\n"
	"      --parsable      print only the job id\n"
	"  -W, --wait          wait for the job to end and exit with its status\n"
	"      --no-bcast      do not send PROGRAM: it is on a path every node sees\n"
	"      --file F        send F along too (repeatable, up to 15)\n"
	"      --mpi=...       as for storm run\n"
	"      --timeslice-us US  as for storm run\n"
	"  -J, --job-name NAME the job's name (default: PROGRAM's base name)\n"
	"  -O, --overcommit    allow more ranks than CPUs on a node\n"
	"  -t, --time T        stop the job once it has run T (as for storm run)\n"
	"      --checkpoint-interval S  checkpoint the job every S seconds\n"
	"      --restart-on-failure     if a node of the job dies, restart it from its\n"
	"                      latest complete checkpoint on the nodes left\n"
	"  -d, --dependency=...  as for storm run\n"
	"  -a, --array=LIST[%N]  one job per task id in LIST (0-99, 1,3,5-7, 0-15:4),\n"
	"                      at most N started at once; each gets\n"
	"                      STORM_ARRAY_TASK_ID; in -o, %A is the array's id and %a\n"
	"                      the task's (default storm-%A_%a.out)\n"
	"      --export=...    as for storm run\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0 when the job was accepted, 1 when refused or no cluster is\n"
	"up, 2 on bad usage; with --wait, the job's status as for storm run.\n";

static const struct cli_opt run_opts[] = {
	{ "nodes", 'N', 1, J_NODES },	  { "ntasks", 'n', 1, J_RANKS },
	{ "label", 'l', 0, J_LABEL },	  { "no-bcast", 0, 0, J_NOBCAST },
	{ "file", 0, 1, J_FILE },	  { "timing", 0, 0, J_TIMING },
	{ "job-name", 'J', 1, J_NAME },	  { "overcommit", 'O', 0, J_OVERCOMMIT },
	{ "conf", 0, 1, J_CONF },	  { "help", 'h', 0, J_HELP },
	{ "checkpoint-interval", 0, 1, J_CKPT_INTERVAL },
	{ "restart-on-failure", 0, 0, J_RESTART_ON_FAILURE },
	{ "record", 0, 1, J_RECORD },
	{ "time", 't', 1, J_TIME },
	{ "dependency", 'd', 1, J_DEPENDENCY },
	{ "export", 0, 1, J_EXPORT },
	{ "input", 'i', 1, J_INPUT },
	{ "pty", 0, 0, J_PTY },
	{ "mpi", 0, 1, J_MPI },
	{ "timeslice-us", 0, 1, J_TIMESLICE },
	{ NULL, 0, 0, 0 },
};
static const struct cli_opt submit_opts[] = {
	{ "nodes", 'N', 1, J_NODES },	  { "ntasks", 'n', 1, J_RANKS },
	{ "output", 'o', 1, J_OUTPUT },	  { "parsable", 0, 0, J_PARSABLE },
	{ "wait", 'W', 0, J_WAIT },
	{ "no-bcast", 0, 0, J_NOBCAST },  { "file", 0, 1, J_FILE },
	{ "job-name", 'J', 1, J_NAME },	  { "overcommit", 'O', 0, J_OVERCOMMIT },
	{ "conf", 0, 1, J_CONF },	  { "help", 'h', 0, J_HELP },
	{ "checkpoint-interval", 0, 1, J_CKPT_INTERVAL },
	{ "restart-on-failure", 0, 0, J_RESTART_ON_FAILURE },
	{ "time", 't', 1, J_TIME },
	{ "dependency", 'd', 1, J_DEPENDENCY },
	{ "array", 'a', 1, J_ARRAY },
	{ "export", 0, 1, J_EXPORT },
	{ "mpi", 0, 1, J_MPI },
	{ "timeslice-us", 0, 1, J_TIMESLICE },
	{ NULL, 0, 0, 0 },
};
/* what a batch script's directives may say: the job's shape, not how
 * this command talks to the cluster */
static const struct cli_opt directive_opts[] = {
	{ "nodes", 'N', 1, J_NODES },	  { "ntasks", 'n', 1, J_RANKS },
	{ "output", 'o', 1, J_OUTPUT },	  { "parsable", 0, 0, J_PARSABLE },
	{ "wait", 'W', 0, J_WAIT },
	{ "job-name", 'J', 1, J_NAME },	  { "overcommit", 'O', 0, J_OVERCOMMIT },
	{ "checkpoint-interval", 0, 1, J_CKPT_INTERVAL },
	{ "restart-on-failure", 0, 0, J_RESTART_ON_FAILURE },
	{ "time", 't', 1, J_TIME },
	{ "dependency", 'd', 1, J_DEPENDENCY },
	{ "array", 'a', 1, J_ARRAY },
	{ "export", 0, 1, J_EXPORT },
	{ "mpi", 0, 1, J_MPI },
	{ "timeslice-us", 0, 1, J_TIMESLICE },
	{ NULL, 0, 0, 0 },
};

int job_opt_apply(struct cli *c, struct job_opts *o, int id, const char *arg, const char *where)
{
	uint64_t v;
	char why[256];
	switch (id) {
	case J_NODES:
	case J_RANKS:
		if (parse_uint(arg, 1, 1u << 20, &v) != 0)
			return usage_error(o->cmd, "%s%s wants a whole number from 1, not '%s'", where,
					   id == J_NODES ? "-N/--nodes" : "-n/--ntasks", arg);
		*(id == J_NODES ? &o->nodes : &o->ranks) = (unsigned)v;
		break;
	case J_LABEL: o->label = 1; break;
	case J_NOBCAST: o->no_bcast = 1; break;
	case J_TIMING: o->timing = 1; break;
	case J_OVERCOMMIT: o->overcommit = 1; break;
	case J_PARSABLE: o->parsable = 1; break;
	case J_WAIT: o->wait = 1; break;
	case J_RESTART_ON_FAILURE: o->restart_on_failure = 1; break;
	case J_CKPT_INTERVAL:
		if (parse_uint(arg, 1, 1u << 30, &v) != 0)
			return usage_error(o->cmd, "%s--checkpoint-interval wants seconds, a whole "
					   "number from 1, not '%s'", where, arg);
		o->ckpt_interval = (unsigned)v;
		break;
	case J_TIME:
		if (parse_time_limit(arg, &v) != 0)
			return usage_error(o->cmd, "%s-t/--time wants minutes, M:S, H:M:S, D-H, "
					   "D-H:M or D-H:M:S, not '%s'", where, arg);
		o->time_limit = (unsigned)v;
		break;
	case J_TIMESLICE:
		if (parse_uint(arg, 1, 10000000, &v) != 0)
			return usage_error(o->cmd, "%s--timeslice-us wants microseconds, a whole "
					   "number from 1 to 10000000, not '%s'", where, arg);
		o->timeslice_us = (unsigned)v;
		break;
	case J_NAME: o->name = arg; break;
	case J_OUTPUT:
		if (!arg[0])
			return usage_error(o->cmd, "%s-o wants a file name", where);
		o->output = arg;
		break;
	case J_CONF: c->conf_opt = arg; break;
	case J_RECORD:
		if (!arg[0])
			return usage_error(o->cmd, "%s--record wants a file name", where);
		o->record = arg;
		break;
	case J_FILE:
		if (o->nfiles == MAX_FILES)
			return usage_error(o->cmd, "%sat most %d --file options", where, MAX_FILES);
		o->files[o->nfiles++] = arg;
		break;
	case J_DEPENDENCY:
		if (parse_dependency(arg, o->deps, &o->ndeps, why, sizeof(why)) < 0)
			return usage_error(o->cmd, "%s%s", where, why);
		break;
	case J_ARRAY:
		free(o->array_tasks);
		o->array_tasks = NULL;
		if (parse_array(arg, &o->array_tasks, &o->ntasks, &o->array_limit, why,
				sizeof(why)) < 0)
			return usage_error(o->cmd, "%s%s", where, why);
		break;
	case J_EXPORT: {
		/* checked now; applied to the environment when the job is sent */
		char **env, *buf, *none[] = { NULL };
		size_t n;
		if (export_env(arg, none, &env, &n, &buf, why, sizeof(why)) < 0)
			return usage_error(o->cmd, "%s%s", where, why);
		free(env);
		free(buf);
		o->export_spec = arg;
		break;
	}
	case J_INPUT:
		if (!strcmp(arg, "none"))
			o->no_stdin = 1;
		else if (!strcmp(arg, "0"))
			o->no_stdin = 0;
		else
			return usage_error(o->cmd, "%s-i/--input wants 0 (rank 0, the default) or none, "
					   "not '%s'", where, arg);
		break;
	case J_PTY: o->pty = 1; break;
	case J_MPI:
		if (!strcmp(arg, "auto"))
			o->mpi = -1;
		else if ((o->mpi = mpi_kind_parse(arg)) < 0)
			return usage_error(o->cmd, "%s--mpi wants auto, bcs, pmi1, pmix or none, not '%s'",
					   where, arg);
		break;
	case J_HELP:
		fputs(o->batch ? submit_help : run_help, stdout);
		return EXIT_OK;
	}
	return -1;
}

int parse_job_opts(struct cli *c, int argc, char **argv, struct job_opts *o)
{
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 1);
	int id;
	while ((id = cli_opt_next(&p, o->batch ? submit_opts : run_opts)) > 0) {
		int rc = job_opt_apply(c, o, id, p.arg, "");
		if (rc >= 0)
			return rc;
	}
	if (id == OPT_ERROR)
		return usage_error(o->cmd, "%s", p.err);
	if (p.ind >= argc)
		return usage_error(o->cmd, "no program given");
	o->argv = argv + p.ind;
	o->argc = argc - p.ind;
	return -1;
}

/* ---- a batch script's directives */

/* The script's #SBATCH lines go through sbatch's parser, as on its command
 * line (an option storm does not have is ignored with a warning or
 * refused, one Slurm does not have is an error); its #STORM lines through
 * storm submit's, after them. */
struct directives {
	struct cli *c;
	struct job_opts *o;
	const char *path;
	bool sbatch;           /* this pass reads the #SBATCH lines, else #STORM */
	struct sbatch_opts sb; /* what the #SBATCH lines said */
};

static int one_directive(void *arg, int line, bool sbatch, int argc, char **argv)
{
	struct directives *d = arg;
	if (sbatch != d->sbatch)
		return 0;
	char where[PATH_MAX + 32];
	snprintf(where, sizeof(where), "%s:%d: ", d->path, line);
	/* the values must outlive this line's buffer */
	if (d->o->nkeep == JOBOPT_KEEP)
		return usage_error(d->o->cmd, "%smore than %d directives", where, JOBOPT_KEEP);
	char **keep = calloc((size_t)argc + 1, sizeof(char *));
	if (!keep)
		return usage_error(d->o->cmd, "out of memory");
	d->o->keep[d->o->nkeep++] = keep;
	for (int i = 0; i < argc; i++)
		if (!(keep[i] = strdup(argv[i])))
			return usage_error(d->o->cmd, "out of memory");
	if (sbatch) {
		int rc = sbatch_parse(d->c, d->o->cmd, where, argc, keep, 1, &d->sb, NULL);
		return rc < 0 ? 0 : rc;
	}
	struct cli_optparse p;
	cli_opt_init(&p, argc, keep, 1, 0);
	int id;
	while ((id = cli_opt_next(&p, directive_opts)) != OPT_DONE) {
		if (id == OPT_ERROR)
			return usage_error(d->o->cmd, "%s%s", where, p.err);
		if (id == OPT_OPERAND)
			return usage_error(d->o->cmd, "%s%s: a directive takes no program", where,
					   p.arg);
		int rc = job_opt_apply(d->c, d->o, id, p.arg, where);
		if (rc >= 0)
			return rc;
	}
	return 0;
}

/* The directives of one kind (#SBATCH or #STORM): -1 to go on, else the
 * exit code. */
static int directives_pass(struct directives *d, const char *text, size_t len, bool sbatch)
{
	char why[256];
	d->sbatch = sbatch;
	int rc = script_directives(text, len, one_directive, d, why, sizeof(why));
	if (rc == -1)
		return usage_error(d->o->cmd, "%s: %s", d->path, why);
	if (rc)
		return rc;
	if (!sbatch)
		return -1;
	char where[PATH_MAX + 8];
	snprintf(where, sizeof(where), "%s: ", d->path);
	return sbatch_apply(d->c, where, &d->sb, NULL, d->o);
}

int apply_directives(struct cli *c, const char *path, struct job_opts *o)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "storm: error: %s: %s\n", path, strerror(errno));
		return EXIT_STORM;
	}
	/* directives sit in the header: the first 1 MiB is plenty */
	size_t cap = 1 << 20, len = 0;
	char *text = malloc(cap);
	ssize_t n;
	while (text && len < cap && (n = read(fd, text + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (!text) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	struct directives d = { .c = c, .o = o, .path = path };
	int rc = directives_pass(&d, text, len, true);
	if (rc < 0)
		rc = directives_pass(&d, text, len, false);
	free(text);
	if (rc < 0 && c->sbatch)
		rc = sbatch_apply(c, "", c->sbatch, &d.sb, o);
	return rc;
}

void job_opts_free(struct job_opts *o)
{
	free(o->array_tasks);
	o->array_tasks = NULL;
	for (int i = 0; i < o->nkeep; i++) {
		for (char **a = o->keep[i]; *a; a++)
			free(*a);
		free(o->keep[i]);
	}
	o->nkeep = 0;
}
