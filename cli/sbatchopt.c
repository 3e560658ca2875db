/* sbatch's options for its command line and #SBATCH lines (sbatchopt.h). */
#include "sbatchopt.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "jobopt.h"

enum {
	O_NODES = 1, O_NTASKS, O_PERNODE, O_NAME, O_OUTPUT, O_ERROR, O_TIME, O_DEP, O_ARRAY,
	O_EXPORT, O_CHDIR, O_WRAP, O_WAIT, O_PARSABLE, O_OVERCOMMIT, O_MPI, O_QUIET, O_CONF,
	O_HELP, O_INPUT
};
static const struct cli_opt sbatch_table[] = {
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

void sl_opt_init(struct cli_optparse *p, int argc, char **argv, int stop_at_operand)
{
	cli_opt_init(p, argc, argv, 1, stop_at_operand);
	p->abbrev = 1;
}

void sl_names_take(struct sl_names *n, int id, const char *arg)
{
	if (id == SL_PARTITION)
		n->partition = arg;
	else
		n->account = arg;
}

bool sl_in_list(const char *list, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		if (w == n && !strncmp(p, word, n))
			return true;
		p += w;
		if (*p == ',')
			p++;
	}
	return false;
}

int sl_names_check(struct cli *c, const char *cmd, const char *where, const struct sl_names *n)
{
	if (!n->partition && !n->account)
		return -1;
	if (cli_load_conf(c) != 0)
		return EXIT_STORM;
	const char *ours = c->conf.name[0] ? c->conf.name : "storm";
	/* Slurm takes a list of partitions, the job runs in one of them */
	if (n->partition && !sl_in_list(n->partition, ours))
		fprintf(stderr, "%s: warning: %s-p %s ignored: storm's one partition is %s\n", cmd,
			where, n->partition, ours);
	if (n->account && strcmp(n->account, ours))
		fprintf(stderr, "%s: warning: %s-A %s ignored: storm's one account is %s\n", cmd,
			where, n->account, ours);
	return -1;
}

/* The option: a long one's full name (also when typed as a prefix of it),
 * else the word as typed without a value after '='. */
static void opt_word(const struct cli_optparse *p, char *out, size_t len)
{
	if (p->name) {
		snprintf(out, len, "--%s", p->name);
		return;
	}
	int i = p->ind - 1;
	if (p->arg && i > 0 && p->argv[i] == p->arg)
		i--; /* its value was the next word */
	const char *w = i >= 0 && i < p->argc ? p->argv[i] : "?";
	snprintf(out, len, "%.*s", (int)strcspn(w, "="), w);
}

void sl_warn_ignored(const char *cmd, const char *where, const struct cli_optparse *p,
		     const char *why)
{
	char w[64];
	opt_word(p, w, sizeof(w));
	fprintf(stderr, "%s: warning: %s%s ignored: %s\n", cmd, where, w, why);
}

int sl_refuse(const char *cmd, const char *where, const struct cli_optparse *p, const char *why)
{
	char w[64];
	opt_word(p, w, sizeof(w));
	fprintf(stderr, "%s: error: %s%s is not supported: %s\n", cmd, where, w, why);
	return EXIT_USAGE;
}

int sl_count(const char *cmd, const char *what, const char *arg, uint64_t *out)
{
	if (parse_uint(arg, 1, 1u << 20, out) < 0)
		return usage_error(cmd, "%s wants a whole number from 1, not '%s'", what, arg);
	return -1;
}

/* -N N, or N-M with M = N: storm allocates exactly N nodes */
static int nodes_opt(const char *cmd, const char *where, struct sbatch_opts *s,
		     const struct cli_optparse *p)
{
	char *end;
	unsigned long long lo = strtoull(p->arg, &end, 10), hi = lo;
	if (*end == '-')
		hi = strtoull(end + 1, &end, 10);
	if (end == p->arg || *end || lo < 1 || lo > (1u << 20))
		return usage_error(cmd, "%s-N/--nodes wants a whole number from 1, not '%s'", where,
				   p->arg);
	if (hi != lo)
		return sl_refuse(cmd, where, p, "storm allocates an exact node count, not a range");
	s->nodes = lo;
	return -1;
}

/* A value storm submit checks (time, dependency, array, export, mpi):
 * checked where it is written, so the error names the line. */
static int check(struct cli *c, const char *cmd, const char *where, int jid, const char *arg,
		 const char **out)
{
	struct job_opts t = { .cmd = cmd, .batch = 1, .mpi = -1 };
	int rc = job_opt_apply(c, &t, jid, arg, where);
	job_opts_free(&t);
	if (rc < 0)
		*out = arg;
	return rc;
}

/* What has no place on an #SBATCH line */
static int command_line_only(const char *cmd, const char *where, const struct cli_optparse *p)
{
	return usage_error(cmd, "%s--%s belongs on sbatch's command line, not in the script",
			   where, p->name ? p->name : "?");
}

static int one_opt(struct cli *c, const char *cmd, const char *where, struct sbatch_opts *s,
		   struct sl_names *names, int id, const struct cli_optparse *p)
{
	const char *a = p->arg;
	switch (id) {
	case O_NODES: return nodes_opt(cmd, where, s, p);
	case O_NTASKS: return sl_count(cmd, "-n/--ntasks", a, &s->ntasks);
	case O_PERNODE: return sl_count(cmd, "--ntasks-per-node", a, &s->per_node);
	case O_NAME: s->name = a; return -1;
	case O_OUTPUT: return check(c, cmd, where, J_OUTPUT, a, &s->output);
	case O_ERROR: s->error = a; return -1;
	case O_TIME: return check(c, cmd, where, J_TIME, a, &s->time);
	case O_DEP: return check(c, cmd, where, J_DEPENDENCY, a, &s->dep);
	case O_ARRAY: return check(c, cmd, where, J_ARRAY, a, &s->array);
	case O_EXPORT: return check(c, cmd, where, J_EXPORT, a, &s->export);
	case O_MPI: return check(c, cmd, where, J_MPI, a, &s->mpi);
	case O_CHDIR:
		if (!a[0])
			return usage_error(cmd, "%s-D/--chdir wants a directory", where);
		s->chdir = a;
		return -1;
	case O_WAIT: s->wait = 1; return -1;
	case O_PARSABLE: s->parsable = 1; return -1;
	case O_OVERCOMMIT: s->overcommit = 1; return -1;
	case O_QUIET: return -1;
	case O_WRAP:
		if (where[0])
			return command_line_only(cmd, where, p);
		s->wrap = a;
		return -1;
	case O_CONF:
		if (where[0])
			return command_line_only(cmd, where, p);
		c->conf_opt = a;
		return -1;
	case O_HELP:
		if (where[0])
			return command_line_only(cmd, where, p);
		s->help = 1;
		return EXIT_OK;
	case O_INPUT:
		if (strcmp(a, "/dev/null") != 0)
			return sl_refuse(cmd, where, p, "a batch job reads /dev/null");
		return -1;
	case SL_IGNORE: sl_warn_ignored(cmd, where, p, "storm does not have it"); return -1;
	case SL_REFUSE: return sl_refuse(cmd, where, p, "storm would run the job otherwise");
	case SL_PARTITION:
	case SL_ACCOUNT:
		sl_names_take(&s->names, id, a);
		sl_names_take(names, id, a);
		return -1;
	}
	return usage_error(cmd, "%s%s", where, p->err);
}

int sbatch_parse(struct cli *c, const char *cmd, const char *where, int argc, char **argv,
		 int first, struct sbatch_opts *s, int *ind)
{
	struct cli_optparse p;
	struct sl_names names = { 0 };
	int id, rc = -1;
	sl_opt_init(&p, argc, argv, 1);
	p.ind = first;
	while (rc < 0 && (id = cli_opt_next(&p, sbatch_table)) > 0)
		rc = one_opt(c, cmd, where, s, &names, id, &p);
	if (rc >= 0)
		return rc;
	if (id == OPT_ERROR)
		return usage_error(cmd, "%s%s", where, p.err);
	if (where[0] && p.ind < argc) {
		/* sbatch would stop reading options there */
		fprintf(stderr, "%s: warning: %s%s: not an option; the rest of the line ignored\n",
			cmd, where, argv[p.ind]);
	}
	if (ind)
		*ind = p.ind;
	return sl_names_check(c, cmd, where, &names);
}

static int put(struct cli *c, struct job_opts *o, int jid, const char *arg, const char *where)
{
	return arg ? job_opt_apply(c, o, jid, arg, where) : -1;
}

int sbatch_apply(struct cli *c, const char *where, const struct sbatch_opts *s,
		 const struct sbatch_opts *under, struct job_opts *o)
{
	struct sbatch_opts m = *s;
	bool shape = m.nodes || m.ntasks || m.per_node;
	if (under && shape) {
		m.nodes = m.nodes ? m.nodes : under->nodes;
		m.ntasks = m.ntasks ? m.ntasks : under->ntasks;
		m.per_node = m.per_node ? m.per_node : under->per_node;
	}
	/* --ntasks-per-node: the tasks of -N nodes, or the nodes of -n tasks */
	if (m.per_node) {
		if (!m.ntasks)
			m.ntasks = (m.nodes ? m.nodes : 1) * m.per_node;
		else if (!m.nodes)
			m.nodes = (m.ntasks + m.per_node - 1) / m.per_node;
	}
	char nb[24], tb[24];
	snprintf(nb, sizeof(nb), "%llu", (unsigned long long)m.nodes);
	snprintf(tb, sizeof(tb), "%llu", (unsigned long long)m.ntasks);
	int rc = put(c, o, J_NODES, m.nodes ? nb : NULL, where);
	if (rc < 0)
		rc = put(c, o, J_RANKS, m.ntasks ? tb : NULL, where);
	if (rc < 0)
		rc = put(c, o, J_NAME, m.name, where);
	if (rc < 0)
		rc = put(c, o, J_OUTPUT, s->output, where);
	if (rc < 0)
		rc = put(c, o, J_TIME, m.time, where);
	if (rc < 0)
		rc = put(c, o, J_DEPENDENCY, m.dep, where);
	if (rc < 0)
		rc = put(c, o, J_ARRAY, m.array, where);
	if (rc < 0)
		rc = put(c, o, J_EXPORT, m.export, where);
	if (rc < 0)
		rc = put(c, o, J_MPI, m.mpi, where);
	if (rc >= 0)
		return rc;
	o->wait |= m.wait;
	o->parsable |= m.parsable;
	o->overcommit |= m.overcommit;
	if (m.chdir)
		o->chdir = m.chdir;
	if (m.error) {
		o->error = m.error;
		snprintf(o->error_where, sizeof(o->error_where), "%s", where);
	}
	return -1;
}

/* A sample job's %j (its id), %A (its array's) and %a (its task): a job
 * outside an array is its own array's task 0. */
static const char *sample_value(char x, bool array)
{
	if (x == 'j' || (x == 'A' && !array))
		return "1001";
	if (x == 'A')
		return "1000";
	return array ? "7" : "0";
}

/* pattern as the machine manager names the sample job's file, absolute
 * from here, its directory resolved where it exists: two spellings of one
 * file come out the same. */
static void sample_file(const char *pattern, bool array, char *out, size_t len)
{
	char name[PATH_MAX], cwd[PATH_MAX], abs[PATH_MAX], dir[PATH_MAX];
	size_t w = 0;
	for (const char *p = pattern; *p && w + 24 < sizeof(name); p++) {
		if (p[0] == '%' && (p[1] == 'j' || p[1] == 'A' || p[1] == 'a')) {
			w += (size_t)snprintf(name + w, sizeof(name) - w, "%s",
					      sample_value(p[1], array));
			p++;
		} else {
			name[w++] = *p;
		}
	}
	name[w] = '\0';
	if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, name, abs, sizeof(abs)) < 0) {
		snprintf(out, len, "%s", name);
		return;
	}
	char *slash = strrchr(abs, '/');
	*slash = '\0';
	if (realpath(abs[0] ? abs : "/", dir))
		snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", slash + 1);
	else
		snprintf(out, len, "%s/%s", abs, slash + 1);
}

void sbatch_check_error(const char *cmd, const struct job_opts *o, const char *output)
{
	char e[PATH_MAX + 32], f[PATH_MAX + 32];
	if (!o->error)
		return;
	sample_file(o->error, o->ntasks > 0, e, sizeof(e));
	sample_file(output, o->ntasks > 0, f, sizeof(f));
	if (strcmp(e, f))
		fprintf(stderr, "%s: warning: %s--error %s ignored: a storm job's stderr goes "
			"to its output file, %s\n", cmd, o->error_where, o->error, output);
}
