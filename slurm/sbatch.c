/* sbatch on storm: its options parsed by the client's sbatch parser
 * (sbatchopt.h) and the script submitted through its client, which reads
 * the #SBATCH lines with the same parser and takes these over them; with
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
	"is a step on them. #SBATCH lines at its head say the options below as this\n"
	"command line says them (one parser); the command line's options win.\n"
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

/* storm submit's argv: the script and its arguments; the options go as
 * c->sbatch, taken over the script's #SBATCH lines by the same parser */
static int add(struct sl_args *a, const char *opt, const char *val)
{
	return sl_add("sbatch", a, opt, val);
}

struct sb {
	struct sl_args a;
	struct sbatch_opts o;
	char tmpdir[PATH_MAX - 16], script[PATH_MAX];
};

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
	if (f && s->o.wrap) {
		bad = fprintf(f, "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n%s\n",
			      s->o.wrap) < 0;
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
	if (s->o.wrap && ind < argc)
		return usage_error("sbatch", "--wrap takes no script, not '%s'", argv[ind]);
	if (ind >= argc) {
		if (!s->o.wrap && isatty(0))
			return usage_error("sbatch", "no script given, and stdin is a terminal");
		if ((rc = make_script(s, s->o.wrap ? "wrap" : "sbatch")) != 0)
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
	int ind, rc = sbatch_parse(c, "sbatch", "", argc, argv, 1, &s->o, &ind);
	if (s->o.help) {
		fputs(help, stdout);
		return EXIT_OK;
	}
	if (rc >= 0)
		return rc;
	s->a.v[s->a.n++] = "sbatch";
	c->sbatch = &s->o;
	return add_script(s, argc, argv, ind);
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
