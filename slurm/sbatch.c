/* sbatch on storm: Slurm's options turned into storm submit's and the
 * script submitted through its client (its #SBATCH lines read there), with
 * Slurm's messages and its slurm-%j.out; --wrap and a script on stdin
 * become a script file of their own. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmt.h"
#include "slurm.h"

static const char help[] =
	"Usage: sbatch [OPTIONS] [SCRIPT [ARGS...]]\n"
	"       sbatch [OPTIONS] --wrap=COMMAND\n"
	"\n"
	"Slurm's sbatch on a storm cluster: queues SCRIPT (or, without one, the\n"
	"script on stdin) as a batch job and prints 'Submitted batch job N'. The\n"
	"script runs once, on the first of its nodes; each srun (or storm run) in it\n"
	"is a step on them. #SBATCH lines at its head are read as storm submit reads\n"
	"them; the command line's options win.\n"
	"\n"
	"  -N, --nodes N             nodes to allocate\n"
	"  -n, --ntasks N            tasks (ranks) of the job's steps\n"
	"      --ntasks-per-node K   K tasks on each of the -N nodes\n"
	"  -J, --job-name NAME       the job's name (default: the script's base name,\n"
	"                            'wrap' for --wrap, 'sbatch' for stdin)\n"
	"  -o, --output FILE         its output (default slurm-%j.out, slurm-%A_%a.out\n"
	"                            for an array); %j, %A, %a as Slurm's\n"
	"  -e, --error FILE          stderr goes to the output file: only the same\n"
	"                            file is taken, another is ignored with a warning\n"
	"  -t, --time T              its time limit, as Slurm's (M, M:S, H:M:S, D-H...)\n"
	"  -d, --dependency LIST     afterok, afterany, afternotok, after:ID[:ID]...\n"
	"  -a, --array LIST[%N]      one job per task id (0-9, 1,3,5-7, 0-15:4)\n"
	"      --export LIST         ALL, NONE or NAME[=VALUE],...\n"
	"  -D, --chdir DIR           the job's working directory (and its output's)\n"
	"      --wrap COMMAND        the job is 'sh -c COMMAND'\n"
	"  -W, --wait                wait for the job to end; exit with its status\n"
	"      --parsable            print only the job id\n"
	"  -O, --overcommit          more tasks than CPUs on a node\n"
	"      --mpi TYPE            as storm run's --mpi\n"
	"  -Q, --quiet, -v, --verbose  taken\n"
	"      --conf FILE           the cluster's storm.conf\n"
	"  -h, --help                this help\n"
	"  -p, --partition P, -A, --account A  taken when they name storm's one\n"
	"                            partition or account (the cluster's name)\n"
	"\n"
	"Ignored with a warning (storm gang-schedules whole nodes of one partition):\n"
	"another -A/--account or -p/--partition, -q/--qos, --mem*, -c/--cpus-per-task,\n"
	"--gres, -G/--gpus*, -C/--constraint, --comment, --mail-*, -M/--clusters,\n"
	"--nice, --priority, -x/--exclude, -w/--nodelist, --reservation,\n"
	"-L/--licenses, --tmp, --wckey, --open-mode, --signal, --hint,\n"
	"-m/--distribution, --exclusive, --requeue, --no-requeue, --propagate,\n"
	"--get-user-env, -k/--no-kill, -s/--oversubscribe, --time-min, --profile.\n"
	"Refused (ignoring them would change what runs): -H/--hold, --begin,\n"
	"-i/--input other than /dev/null, --uid, --gid, --test-only, -F/--nodefile,\n"
	"--export-file, a node range -N MIN-MAX.\n";

enum {
	O_NODES = 1, O_NTASKS, O_PERNODE, O_NAME, O_OUTPUT, O_ERROR, O_TIME, O_DEP, O_ARRAY,
	O_EXPORT, O_CHDIR, O_WRAP, O_WAIT, O_PARSABLE, O_OVERCOMMIT, O_MPI, O_QUIET, O_CONF,
	O_HELP, O_INPUT
};
static const struct cli_opt opts[] = {
	{ "nodes", 'N', 1, O_NODES },	      { "ntasks", 'n', 1, O_NTASKS },
	{ "ntasks-per-node", 0, 1, O_PERNODE }, { "job-name", 'J', 1, O_NAME },
	{ "output", 'o', 1, O_OUTPUT },	      { "error", 'e', 1, O_ERROR },
	{ "time", 't', 1, O_TIME },	      { "dependency", 'd', 1, O_DEP },
	{ "array", 'a', 1, O_ARRAY },	      { "export", 0, 1, O_EXPORT },
	{ "chdir", 'D', 1, O_CHDIR },	      { "wrap", 0, 1, O_WRAP },
	{ "wait", 'W', 0, O_WAIT },	      { "parsable", 0, 0, O_PARSABLE },
	{ "overcommit", 'O', 0, O_OVERCOMMIT }, { "mpi", 0, 1, O_MPI },
	{ "quiet", 'Q', 0, O_QUIET },	      { "verbose", 'v', 0, O_QUIET },
	{ "conf", 0, 1, O_CONF },	      { "help", 'h', 0, O_HELP },
	{ "input", 'i', 1, O_INPUT },
	/* what storm does not have, ignoring it changes only where or how well */
	{ "account", 'A', 1, SL_ACCOUNT },    { "partition", 'p', 1, SL_PARTITION },
	{ "qos", 'q', 1, SL_IGNORE },	      { "mem", 0, 1, SL_IGNORE },
	{ "mem-per-cpu", 0, 1, SL_IGNORE },   { "mem-per-gpu", 0, 1, SL_IGNORE },
	{ "cpus-per-task", 'c', 1, SL_IGNORE }, { "gres", 0, 1, SL_IGNORE },
	{ "gpus", 'G', 1, SL_IGNORE },	      { "gpus-per-node", 0, 1, SL_IGNORE },
	{ "gpus-per-task", 0, 1, SL_IGNORE }, { "cpus-per-gpu", 0, 1, SL_IGNORE },
	{ "constraint", 'C', 1, SL_IGNORE },  { "comment", 0, 1, SL_IGNORE },
	{ "mail-type", 0, 1, SL_IGNORE },     { "mail-user", 0, 1, SL_IGNORE },
	{ "clusters", 'M', 1, SL_IGNORE },    { "nice", 0, OPT_OPTIONAL, SL_IGNORE },
	{ "priority", 0, 1, SL_IGNORE },      { "exclude", 'x', 1, SL_IGNORE },
	{ "nodelist", 'w', 1, SL_IGNORE },    { "reservation", 0, 1, SL_IGNORE },
	{ "licenses", 'L', 1, SL_IGNORE },    { "tmp", 0, 1, SL_IGNORE },
	{ "wckey", 0, 1, SL_IGNORE },	      { "open-mode", 0, 1, SL_IGNORE },
	{ "signal", 0, 1, SL_IGNORE },	      { "hint", 0, 1, SL_IGNORE },
	{ "distribution", 'm', 1, SL_IGNORE }, { "exclusive", 0, OPT_OPTIONAL, SL_IGNORE },
	{ "requeue", 0, 0, SL_IGNORE },	      { "no-requeue", 0, 0, SL_IGNORE },
	{ "propagate", 0, OPT_OPTIONAL, SL_IGNORE },
	{ "get-user-env", 0, OPT_OPTIONAL, SL_IGNORE },
	{ "no-kill", 'k', OPT_OPTIONAL, SL_IGNORE }, { "oversubscribe", 's', 0, SL_IGNORE },
	{ "time-min", 0, 1, SL_IGNORE },      { "profile", 0, 1, SL_IGNORE },
	{ "threads-per-core", 0, 1, SL_IGNORE }, { "acctg-freq", 0, 1, SL_IGNORE },
	{ "kill-on-invalid-dep", 0, 1, SL_IGNORE },
	/* what would run otherwise than asked */
	{ "hold", 'H', 0, SL_REFUSE },	      { "begin", 'b', 1, SL_REFUSE },
	{ "uid", 0, 1, SL_REFUSE },	      { "gid", 0, 1, SL_REFUSE },
	{ "test-only", 0, 0, SL_REFUSE },     { "nodefile", 'F', 1, SL_REFUSE },
	{ "export-file", 0, 1, SL_REFUSE },   { NULL, 0, 0, 0 },
};

/* storm submit's argv, built up */
static int add(struct sl_args *a, const char *opt, const char *val)
{
	return sl_add("sbatch", a, opt, val);
}

struct sb {
	struct sl_args a;
	struct sl_names names;
	uint64_t nodes, ntasks, per_node;
	const char *output, *error, *chdir, *wrap;
	char nbuf[24], tbuf[24];
	char tmpdir[PATH_MAX - 16], script[PATH_MAX];
};

/* -N N, or N-M with M = N: storm allocates exactly N nodes */
static int nodes_opt(struct sb *s, const struct cli_optparse *p)
{
	char *end;
	unsigned long long lo = strtoull(p->arg, &end, 10), hi = lo;
	if (*end == '-')
		hi = strtoull(end + 1, &end, 10);
	if (end == p->arg || *end || lo < 1 || lo > (1u << 20))
		return usage_error("sbatch", "-N/--nodes wants a whole number from 1, not '%s'",
				   p->arg);
	if (hi != lo)
		return sl_refuse("sbatch", p, "storm allocates an exact node count, not a range");
	s->nodes = lo;
	return -1;
}

static int one_opt(struct cli *c, struct sb *s, int id, const struct cli_optparse *p)
{
	switch (id) {
	case O_NODES: return nodes_opt(s, p);
	case O_NTASKS: return sl_count("sbatch", "-n/--ntasks", p->arg, &s->ntasks);
	case O_PERNODE: return sl_count("sbatch", "--ntasks-per-node", p->arg, &s->per_node);
	case O_NAME: return add(&s->a, "-J", p->arg);
	case O_OUTPUT: s->output = p->arg; return add(&s->a, "-o", p->arg);
	case O_ERROR: s->error = p->arg; return -1;
	case O_TIME: return add(&s->a, "-t", p->arg);
	case O_DEP: return add(&s->a, "-d", p->arg);
	case O_ARRAY: return add(&s->a, "-a", p->arg);
	case O_EXPORT: return add(&s->a, "--export", p->arg);
	case O_CHDIR: s->chdir = p->arg; return -1;
	case O_WRAP: s->wrap = p->arg; return -1;
	case O_WAIT: return add(&s->a, "-W", NULL);
	case O_PARSABLE: return add(&s->a, "--parsable", NULL);
	case O_OVERCOMMIT: return add(&s->a, "-O", NULL);
	case O_MPI: return add(&s->a, "--mpi", p->arg);
	case O_QUIET: return -1;
	case O_CONF: c->conf_opt = p->arg; return -1;
	case O_HELP: fputs(help, stdout); return EXIT_OK;
	case O_INPUT:
		if (strcmp(p->arg, "/dev/null") != 0)
			return sl_refuse("sbatch", p, "a batch job reads /dev/null");
		return -1;
	case SL_IGNORE:
		sl_warn_ignored("sbatch", p, "storm does not have it");
		return -1;
	case SL_REFUSE: return sl_refuse("sbatch", p, "storm would run the job otherwise");
	case SL_PARTITION:
	case SL_ACCOUNT: sl_names_take(&s->names, id, p->arg); return -1;
	}
	return usage_error("sbatch", "%s", p->err);
}

/* --ntasks-per-node: the tasks of -N nodes, or the nodes of -n tasks */
static int shape(struct sb *s)
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
		rc = add(&s->a, "-N", s->nbuf);
	}
	if (rc < 0 && s->ntasks) {
		snprintf(s->tbuf, sizeof(s->tbuf), "%llu", (unsigned long long)s->ntasks);
		rc = add(&s->a, "-n", s->tbuf);
	}
	if (rc < 0 && s->error && (!s->output || strcmp(s->error, s->output)))
		fprintf(stderr, "sbatch: warning: --error %s ignored: a storm job's stderr goes "
			"to its --output file\n", s->error);
	return rc;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* --wrap's command or stdin's script as a file named NAME (the job's
 * default name, as Slurm's) in a directory of its own. 0, or exit code. */
static int make_script(struct sb *s, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(s->tmpdir, sizeof(s->tmpdir), "%s/sbatch.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(s->tmpdir)) {
		fprintf(stderr, "sbatch: error: cannot make %s: %s\n", s->tmpdir, strerror(errno));
		s->tmpdir[0] = '\0';
		return EXIT_STORM;
	}
	snprintf(s->script, sizeof(s->script), "%s/%s", s->tmpdir, name);
	FILE *f = fopen(s->script, "w");
	int bad = !f;
	if (f && s->wrap) {
		bad = fprintf(f, "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n%s\n",
			      s->wrap) < 0;
	} else if (f) {
		char buf[65536];
		size_t n;
		while (!bad && (n = fread(buf, 1, sizeof(buf), stdin)) > 0)
			bad = write_all(fileno(f), buf, n) < 0;
		bad = bad || ferror(stdin);
	}
	if (f && fclose(f) != 0)
		bad = 1;
	if (bad || chmod(s->script, 0755) < 0) {
		fprintf(stderr, "sbatch: error: cannot write the script %s: %s\n", s->script,
			strerror(errno));
		return EXIT_STORM;
	}
	return 0;
}

static void remove_script(struct sb *s)
{
	if (!s->tmpdir[0])
		return;
	unlink(s->script);
	rmdir(s->tmpdir);
}

/* As sbatch: a batch script starts with #! (storm submit takes a program
 * too). -1 to go on, else the exit code. */
static int check_script(const char *path, const char *shown)
{
	char head[2] = { 0, 0 };
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(head, 1, 2, f) : 0;
	if (f)
		fclose(f);
	if (!f) {
		fprintf(stderr, "sbatch: error: Unable to open file %s\n", shown);
		return EXIT_STORM;
	}
	if (n == 0) {
		fprintf(stderr, "sbatch: error: Batch script is empty!\n");
		return EXIT_STORM;
	}
	if (n < 2 || head[0] != '#' || head[1] != '!') {
		fprintf(stderr, "sbatch: error: This does not look like a batch script. The first "
			"line must start with #! followed by the path to an interpreter.\n");
		return EXIT_STORM;
	}
	return -1;
}

/* The script and its arguments after the options: a file made absolute
 * before -D moves us, or the one made of --wrap or stdin. */
static int add_script(struct sb *s, int argc, char **argv, int ind)
{
	int rc = -1;
	if (s->wrap && ind < argc)
		return usage_error("sbatch", "--wrap takes no script, not '%s'", argv[ind]);
	if (ind >= argc) {
		if (!s->wrap && isatty(0))
			return usage_error("sbatch", "no script given, and stdin is a terminal");
		if ((rc = make_script(s, s->wrap ? "wrap" : "sbatch")) != 0)
			return rc;
		if ((rc = check_script(s->script, "(stdin)")) >= 0)
			return rc;
		return add(&s->a, s->script, NULL);
	}
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof(cwd)) ||
	    absolute_path(cwd, argv[ind], s->script, sizeof(s->script)) < 0)
		return usage_error("sbatch", "%s: path too long", argv[ind]);
	if ((rc = check_script(s->script, argv[ind])) >= 0)
		return rc;
	rc = add(&s->a, "--", NULL);
	for (int i = ind; rc < 0 && i < argc; i++)
		rc = add(&s->a, i == ind ? s->script : argv[i], NULL);
	return rc;
}

static int parse(struct cli *c, int argc, char **argv, struct sb *s)
{
	struct cli_optparse p;
	int id, rc = -1;
	sl_opt_init(&p, argc, argv, 1); /* options end at the script */
	s->a.v[s->a.n++] = "sbatch";
	while (rc < 0 && (id = cli_opt_next(&p, opts)) > 0)
		rc = one_opt(c, s, id, &p);
	if (rc >= 0)
		return rc;
	if (id == OPT_ERROR)
		return usage_error("sbatch", "%s", p.err);
	if ((rc = sl_names_check(c, "sbatch", &s->names)) >= 0 || (rc = shape(s)) >= 0 ||
	    (rc = add_script(s, argc, argv, p.ind)) >= 0)
		return rc;
	if (s->chdir && chdir(s->chdir) < 0) {
		fprintf(stderr, "sbatch: error: chdir(%s): %s\n", s->chdir, strerror(errno));
		return EXIT_STORM;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "sbatch" };
	struct sb *s = calloc(1, sizeof(*s));
	if (!s)
		return EXIT_STORM;
	int rc = parse(&c, argc, argv, s);
	if (rc < 0) {
		s->a.v[s->a.n] = NULL;
		fflush(stdout);
		rc = cmd_submit(&c, s->a.n, s->a.v);
	}
	remove_script(s);
	free(s);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
