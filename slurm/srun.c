/* srun on storm: Slurm's options turned into storm run's and the program
 * run through its client; inside a batch job or an allocation it is a step
 * of it, as storm run is. -o/-e write the streamed output to a file. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "slurm.h"

static const char help[] =
	"Usage: srun [OPTIONS] PROGRAM [ARGS...]\n"
	"\n"
	"Slurm's srun on a storm cluster: runs PROGRAM's tasks as a job and streams\n"
	"their output; inside a batch job or an salloc shell (STORM_JOBID set, or\n"
	"SLURM_JOB_ID without it) a step of it, on its nodes. Options end at PROGRAM.\n"
	"\n"
	"  -N, --nodes N             nodes\n"
	"  -n, --ntasks N            tasks (ranks)\n"
	"      --ntasks-per-node K   K tasks on each of the -N nodes\n"
	"  -J, --job-name NAME       the job's name\n"
	"  -l, --label               prefix each line with its task's number\n"
	"  -t, --time T              its time limit, as Slurm's\n"
	"  -o, --output FILE         its stdout (and stderr, without -e) into FILE;\n"
	"  -e, --error FILE          its stderr into FILE; %j: the allocation's id\n"
	"                            (inside one), %t: 0 for a job of one task, %%\n"
	"      --open-mode append|truncate  of -o and -e (default truncate)\n"
	"  -D, --chdir DIR           the tasks' working directory\n"
	"      --export LIST         ALL, NONE or NAME[=VALUE],...\n"
	"      --mpi TYPE            none, pmi1 (pmi2 too), pmix, bcs, or auto\n"
	"  -i, --input none|0        stdin to no task, or to task 0 (default)\n"
	"      --pty                 task 0 on a pseudo-terminal\n"
	"  -O, --overcommit          more tasks than CPUs on a node\n"
	"  -d, --dependency LIST     as sbatch's\n"
	"      --jobid JOB           a step of the running job JOB (a batch job or\n"
	"                            an allocation), from outside it too\n"
	"      --overlap             taken: storm's steps always share their job's\n"
	"                            nodes and CPUs\n"
	"      --cpu-bind none|quiet|verbose  taken: storm binds no task to CPUs\n"
	"  -u, --unbuffered, -Q, --quiet, -v, --verbose  taken (output is streamed)\n"
	"      --conf FILE           the cluster's storm.conf\n"
	"  -h, --help                this help\n"
	"  -p, --partition P, -A, --account A  taken when they name storm's one\n"
	"                            partition or account (the cluster's name)\n"
	"\n"
	"Ignored with a warning: another -A or -p, -q, --mem*, -c, --gres, -G/--gpus*, -C,\n"
	"--comment, -M, -x, -w, --exclusive, --exact, another --cpu-bind, --hint,\n"
	"-m/--distribution, -K/--kill-on-bad-exit, -W/--wait, --signal,\n"
	"--threads-per-core, --mem-bind, --accel-bind, --propagate.\n"
	"Refused: --het-group, --multi-prog, -H/--hold, --begin, --uid,\n"
	"--gid, --test-only, -b/--bcast, -i FILE.\n";

enum {
	O_NODES = 1, O_NTASKS, O_PERNODE, O_NAME, O_LABEL, O_TIME, O_OUTPUT, O_ERROR, O_MODE,
	O_CHDIR, O_EXPORT, O_MPI, O_INPUT, O_PTY, O_OVERCOMMIT, O_DEP, O_QUIET, O_CONF, O_HELP,
	O_JOBID, O_CPU_BIND
};
static const struct cli_opt opts[] = {
	{ "nodes", 'N', 1, O_NODES },	      { "ntasks", 'n', 1, O_NTASKS },
	{ "ntasks-per-node", 0, 1, O_PERNODE }, { "job-name", 'J', 1, O_NAME },
	{ "label", 'l', 0, O_LABEL },	      { "time", 't', 1, O_TIME },
	{ "output", 'o', 1, O_OUTPUT },	      { "error", 'e', 1, O_ERROR },
	{ "open-mode", 0, 1, O_MODE },	      { "chdir", 'D', 1, O_CHDIR },
	{ "export", 0, 1, O_EXPORT },	      { "mpi", 0, 1, O_MPI },
	{ "input", 'i', 1, O_INPUT },	      { "pty", 0, 0, O_PTY },
	{ "overcommit", 'O', 0, O_OVERCOMMIT }, { "dependency", 'd', 1, O_DEP },
	{ "unbuffered", 'u', 0, O_QUIET },    { "quiet", 'Q', 0, O_QUIET },
	{ "verbose", 'v', 0, O_QUIET },	      { "conf", 0, 1, O_CONF },
	{ "help", 'h', 0, O_HELP },
	{ "account", 'A', 1, SL_ACCOUNT },    { "partition", 'p', 1, SL_PARTITION },
	{ "qos", 'q', 1, SL_IGNORE },	      { "mem", 0, 1, SL_IGNORE },
	{ "mem-per-cpu", 0, 1, SL_IGNORE },   { "mem-per-gpu", 0, 1, SL_IGNORE },
	{ "cpus-per-task", 'c', 1, SL_IGNORE }, { "gres", 0, 1, SL_IGNORE },
	{ "gpus", 'G', 1, SL_IGNORE },	      { "gpus-per-node", 0, 1, SL_IGNORE },
	{ "gpus-per-task", 0, 1, SL_IGNORE }, { "constraint", 'C', 1, SL_IGNORE },
	{ "comment", 0, 1, SL_IGNORE },	      { "clusters", 'M', 1, SL_IGNORE },
	{ "exclude", 'x', 1, SL_IGNORE },     { "nodelist", 'w', 1, SL_IGNORE },
	{ "exclusive", 0, OPT_OPTIONAL, SL_IGNORE },
	/* storm's steps always share their allocation's nodes and CPUs */
	{ "overlap", 0, 0, O_QUIET },	      { "exact", 0, 0, SL_IGNORE },
	{ "cpu-bind", 0, 1, O_CPU_BIND },      { "hint", 0, 1, SL_IGNORE },
	{ "distribution", 'm', 1, SL_IGNORE }, { "kill-on-bad-exit", 'K', OPT_OPTIONAL, SL_IGNORE },
	{ "wait", 'W', 1, SL_IGNORE },	      { "signal", 0, 1, SL_IGNORE },
	{ "threads-per-core", 0, 1, SL_IGNORE }, { "mem-bind", 0, 1, SL_IGNORE },
	{ "accel-bind", 0, 1, SL_IGNORE },    { "propagate", 0, OPT_OPTIONAL, SL_IGNORE },
	{ "jobid", 0, 1, O_JOBID },	      { "het-group", 0, 1, SL_REFUSE },
	{ "multi-prog", 0, 0, SL_REFUSE },    { "hold", 'H', 0, SL_REFUSE },
	{ "begin", 0, 1, SL_REFUSE },	      { "uid", 0, 1, SL_REFUSE },
	{ "gid", 0, 1, SL_REFUSE },	      { "test-only", 0, 0, SL_REFUSE },
	{ "bcast", 'b', OPT_OPTIONAL, SL_REFUSE }, { NULL, 0, 0, 0 },
};

struct sr {
	struct sl_args a;
	struct sl_names names;
	uint64_t nodes, ntasks, per_node;
	const char *output, *error, *chdir, *jobid;
	int append;
	char nbuf[24], tbuf[24];
};

static int add(struct sr *s, const char *opt, const char *val)
{
	return sl_add("srun", &s->a, opt, val);
}

/* --cpu-bind's words that ask for no binding: none, and quiet/verbose
 * (whether srun reports the binding) */
static bool cpu_bind_none(const char *arg)
{
	static const char *const none[] = { "none", "no", "q", "quiet", "v", "verbose" };
	for (const char *w = arg; *w;) {
		size_t n = strcspn(w, ","), i = 0;
		while (i < sizeof(none) / sizeof(none[0]) &&
		       (strlen(none[i]) != n || strncmp(w, none[i], n)))
			i++;
		if (i == sizeof(none) / sizeof(none[0]))
			return false;
		w += n + (w[n] == ',');
	}
	return true;
}

static int one_opt(struct cli *c, struct sr *s, int id, const struct cli_optparse *p)
{
	switch (id) {
	case O_NODES: return sl_count("srun", "-N/--nodes", p->arg, &s->nodes);
	case O_NTASKS: return sl_count("srun", "-n/--ntasks", p->arg, &s->ntasks);
	case O_PERNODE: return sl_count("srun", "--ntasks-per-node", p->arg, &s->per_node);
	case O_NAME: return add(s, "-J", p->arg);
	case O_LABEL: return add(s, "-l", NULL);
	case O_TIME: return add(s, "-t", p->arg);
	case O_OUTPUT: s->output = p->arg; return -1;
	case O_ERROR: s->error = p->arg; return -1;
	case O_MODE:
		if (strcmp(p->arg, "append") && strcmp(p->arg, "truncate"))
			return usage_error("srun", "--open-mode wants append or truncate");
		s->append = !strcmp(p->arg, "append");
		return -1;
	case O_CHDIR: s->chdir = p->arg; return -1;
	case O_EXPORT: return add(s, "--export", p->arg);
	case O_MPI: return add(s, "--mpi", !strcmp(p->arg, "pmi2") ? "pmi1" : p->arg);
	case O_INPUT:
		if (strcmp(p->arg, "none") && strcmp(p->arg, "0") && strcmp(p->arg, "all"))
			return sl_refuse("srun", "", p, "stdin goes to task 0 or to none");
		return add(s, "-i", !strcmp(p->arg, "none") ? "none" : "0");
	case O_PTY: return add(s, "--pty", NULL);
	case O_OVERCOMMIT: return add(s, "-O", NULL);
	case O_DEP: return add(s, "-d", p->arg);
	case O_QUIET: return -1;
	case O_JOBID:
		if (!p->arg[0] || strspn(p->arg, "0123456789") != strlen(p->arg))
			return usage_error("srun", "--jobid wants a job's number, not '%s'", p->arg);
		s->jobid = p->arg;
		return -1;
	case O_CPU_BIND:
		/* storm binds no task: binding none, and saying so or not, is its way */
		if (!cpu_bind_none(p->arg))
			sl_warn_ignored("srun", "", p, "storm binds no task to CPUs");
		return -1;
	case O_CONF: c->conf_opt = p->arg; return -1;
	case O_HELP: fputs(help, stdout); return EXIT_OK;
	case SL_IGNORE: sl_warn_ignored("srun", "", p, "storm does not have it"); return -1;
	case SL_REFUSE: return sl_refuse("srun", "", p, "storm would run the job otherwise");
	case SL_PARTITION:
	case SL_ACCOUNT: sl_names_take(&s->names, id, p->arg); return -1;
	}
	return usage_error("srun", "%s", p->err);
}

/* The step runs one task: -n 1, or one node without -n (storm run starts
 * a task a node of its -N, or of its allocation's). */
static bool one_task(const struct sr *s)
{
	if (s->ntasks)
		return s->ntasks == 1;
	if (s->nodes)
		return s->nodes == 1;
	const char *alloc = getenv("STORM_JOBID"), *n = getenv("STORM_JOB_NUM_NODES");
	return !alloc || !*alloc || !n || !strcmp(n, "1");
}

/* -o/-e's name: %j the allocation's id, %t task 0 of a one-task job */
static int expand(const struct sr *s, const char *pat, char *out, size_t len)
{
	const char *job = getenv("SLURM_JOB_ID");
	if (!job || !*job)
		job = getenv("STORM_JOBID");
	size_t k = 0;
	for (const char *p = pat; *p && k + 32 < len; p++) {
		if (*p != '%') {
			out[k++] = *p;
			continue;
		}
		p++;
		if (*p == '%')
			out[k++] = '%';
		else if (*p == 'j' && job && *job)
			k += (size_t)snprintf(out + k, len - k, "%s", job);
		else if ((*p == 't' || *p == 'n') && one_task(s))
			out[k++] = '0';
		else
			return usage_error("srun", "-o/-e %s: %%%c is not supported here (storm writes "
					   "one file: %%j inside an allocation, %%t of one task)",
					   pat, *p ? *p : ' ');
	}
	out[k] = '\0';
	return -1;
}

static int redirect(const struct sr *s, const char *pat, int fd)
{
	char path[PATH_MAX];
	int rc = expand(s, pat, path, sizeof(path));
	if (rc >= 0)
		return rc;
	int f = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | (s->append ? O_APPEND : O_TRUNC),
		     0644);
	if (f < 0 || dup2(f, fd) < 0) {
		fprintf(stderr, "srun: error: %s: %s\n", path, strerror(errno));
		if (f >= 0)
			close(f);
		return EXIT_STORM;
	}
	close(f);
	return -1;
}

static int shape(struct sr *s)
{
	if (s->per_node) {
		if (!s->ntasks)
			s->ntasks = (s->nodes ? s->nodes : 1) * s->per_node;
		else if (!s->nodes)
			s->nodes = (s->ntasks + s->per_node - 1) / s->per_node;
	}
	int rc = -1;
	if (s->nodes) {
		snprintf(s->nbuf, sizeof(s->nbuf), "%llu", (unsigned long long)s->nodes);
		rc = add(s, "-N", s->nbuf);
	}
	if (rc < 0 && s->ntasks) {
		snprintf(s->tbuf, sizeof(s->tbuf), "%llu", (unsigned long long)s->ntasks);
		rc = add(s, "-n", s->tbuf);
	}
	return rc;
}

/* The job the step runs in, as storm run finds it in STORM_JOBID: --jobid,
 * else Slurm's SLURM_JOB_ID (or SLURM_JOBID) where storm's is not set (a
 * tool's own environment), but not the Slurm allocation that storm's
 * cluster itself runs in (its storm.conf in /tmp/storm-slurm-ID). -1. */
static int allocation(struct cli *c, struct sr *s)
{
	const char *id = s->jobid, *own = getenv("STORM_JOBID");
	if (!id && (!own || !*own)) {
		id = getenv("SLURM_JOB_ID");
		if (!id || !*id)
			id = getenv("SLURM_JOBID");
		char err[256], outer[64];
		snprintf(outer, sizeof(outer), "/tmp/storm-slurm-%.19s/", id ? id : "");
		if (id && *id && cli_find_conf(c, err, sizeof(err)) == 0 &&
		    !strncmp(c->conf_path, outer, strlen(outer)))
			id = NULL;
	}
	if (!id || !*id || (own && !strcmp(own, id)))
		return -1;
	/* another job's: its node count is not ours to know */
	setenv("STORM_JOBID", id, 1);
	setenv("SLURM_JOB_ID", id, 1);
	unsetenv("STORM_JOB_NUM_NODES");
	return -1;
}

static int parse(struct cli *c, int argc, char **argv, struct sr *s)
{
	struct cli_optparse p;
	int id, rc = -1;
	sl_opt_init(&p, argc, argv, 1);
	s->a.v[s->a.n++] = "srun";
	while (rc < 0 && (id = cli_opt_next(&p, opts)) > 0)
		rc = one_opt(c, s, id, &p);
	if (rc >= 0)
		return rc;
	if (id == OPT_ERROR)
		return usage_error("srun", "%s", p.err);
	if (p.ind >= argc)
		return usage_error("srun", "no program given");
	if ((rc = sl_names_check(c, "srun", "", &s->names)) >= 0 || (rc = shape(s)) >= 0 ||
	    (rc = allocation(c, s)) >= 0)
		return rc;
	if (s->chdir && chdir(s->chdir) < 0) {
		fprintf(stderr, "srun: error: chdir(%s): %s\n", s->chdir, strerror(errno));
		return EXIT_STORM;
	}
	if (s->output && (rc = redirect(s, s->output, 1)) >= 0)
		return rc;
	if (s->error && (rc = redirect(s, s->error, 2)) >= 0)
		return rc;
	if (s->output && !s->error && dup2(1, 2) < 0) /* one file, one offset */
		return EXIT_STORM;
	rc = add(s, "--", NULL);
	for (int i = p.ind; rc < 0 && i < argc; i++)
		rc = add(s, argv[i], NULL);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "srun" };
	struct sr *s = calloc(1, sizeof(*s));
	if (!s)
		return EXIT_STORM;
	int rc = parse(&c, argc, argv, s);
	if (rc < 0) {
		s->a.v[s->a.n] = NULL;
		rc = cmd_run(&c, s->a.n, s->a.v);
	}
	free(s);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
