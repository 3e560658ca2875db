/* scancel on storm: cancels or signals jobs named by id, or chosen by name,
 * user and state, through storm cancel's client. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fmt.h"
#include "jobid.h"
#include "slurm.h"

static const char help[] =
	"Usage: scancel [OPTIONS] [JOB_ID[_TASK][.STEP]]...\n"
	"\n"
	"Slurm's scancel on a storm cluster: without -s a job's ranks get SIGTERM,\n"
	"then SIGKILL after the cluster's kill_wait; a pending job is removed. With\n"
	"-n, -u, -t or --me and no JOB_ID, every pending or running job they choose.\n"
	"\n"
	"  -s, --signal SIG    send only SIG (a name such as USR1 or INT, or a number)\n"
	"  -n, --name LIST     jobs of these names (also --jobname)\n"
	"  -u, --user LIST     these users' jobs; --me: mine\n"
	"  -t, --state LIST    jobs in these states (PENDING/PD, RUNNING/R, SUSPENDED/S)\n"
	"  -Q, --quiet         no message for a job that cannot be cancelled, and\n"
	"                      exit 0 then\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"  -h, --help          this help\n"
	"\n"
	"Ignored with a warning: -M/--clusters, -p/--partition, -A/--account,\n"
	"-q/--qos, -H/--hurry, -f/--full, -v/--verbose. Refused: -b/--batch,\n"
	"-i/--interactive, -w/--nodelist, --sibling, -R/--reservation.\n";

enum { O_SIGNAL = 1, O_NAME, O_USER, O_ME, O_STATE, O_QUIET, O_CONF, O_HELP };
static const struct cli_opt opts[] = {
	{ "signal", 's', 1, O_SIGNAL },	      { "name", 'n', 1, O_NAME },
	{ "jobname", 0, 1, O_NAME },	      { "user", 'u', 1, O_USER },
	{ "me", 0, 0, O_ME },		      { "state", 't', 1, O_STATE },
	{ "quiet", 'Q', 0, O_QUIET },	      { "conf", 0, 1, O_CONF },
	{ "help", 'h', 0, O_HELP },	      { "clusters", 'M', 1, SL_IGNORE },
	{ "partition", 'p', 1, SL_IGNORE },   { "account", 'A', 1, SL_IGNORE },
	{ "qos", 'q', 1, SL_IGNORE },	      { "hurry", 'H', 0, SL_IGNORE },
	{ "full", 'f', 0, SL_IGNORE },	      { "verbose", 'v', 0, SL_IGNORE },
	{ "batch", 'b', 0, SL_REFUSE },	      { "interactive", 'i', 0, SL_REFUSE },
	{ "nodelist", 'w', 1, SL_REFUSE },    { "sibling", 0, 1, SL_REFUSE },
	{ "reservation", 'R', 1, SL_REFUSE }, { NULL, 0, 0, 0 },
};

struct want {
	const char *sig, *names, *users, *states;
	char me[256];
	bool quiet;
	char **ids;
	int nids;
};

static bool state_ok(const char *list, const char *state)
{
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		const char *s = sl_state_short(state);
		if ((strlen(state) == w && !strncasecmp(p, state, w)) ||
		    (strlen(s) == w && !strncasecmp(p, s, w)))
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

/* A pending or running job the filters choose. */
static bool chosen(const struct want *w, const struct sl_row *v)
{
	const struct job_row *r = &v->r;
	char uid[16];
	if (v->batch || v->step || r->end > 0)
		return false;
	snprintf(uid, sizeof(uid), "%u", r->uid);
	if (w->names && !sl_in_list(w->names, r->name))
		return false;
	if (w->users && !sl_in_list(w->users, r->user) && !sl_in_list(w->users, uid))
		return false;
	if (w->states && !state_ok(w->states, r->slurm_state))
		return false;
	if (!w->nids)
		return true;
	for (int i = 0; i < w->nids; i++)
		if (sl_row_matches_id(v, w->ids[i]))
			return true;
	return false;
}

/* storm cancel's argv: "cancel" [-s SIG] ids... */
static int cancel(struct cli *c, const struct want *w, char **ids, int n)
{
	char **av = calloc((size_t)n + 4, sizeof(char *));
	int k = 0;
	if (!av) {
		fprintf(stderr, "scancel: error: out of memory\n");
		return EXIT_STORM;
	}
	av[k++] = "scancel";
	if (w->sig) {
		av[k++] = "-s";
		av[k++] = (char *)w->sig;
	}
	for (int i = 0; i < n; i++)
		av[k++] = ids[i];
	int rc = cmd_cancel(c, k, av);
	free(av);
	return rc;
}

/* -n/-u/-t: the ids of the jobs they choose, then cancel them. */
static int cancel_chosen(struct cli *c, const struct want *w)
{
	struct sl_jobs j;
	int rc = sl_jobs_load(c, true, false, &j);
	if (rc != EXIT_OK)
		return rc;
	char **ids = calloc(j.n + 1, sizeof(char *));
	int n = 0;
	for (size_t i = 0; ids && i < j.n; i++)
		if (chosen(w, &j.v[i]))
			ids[n++] = j.v[i].r.jobid;
	rc = !ids ? EXIT_STORM : n ? cancel(c, w, ids, n) : EXIT_OK;
	free(ids);
	sl_jobs_free(&j);
	return rc;
}

static int parse(struct cli *c, int argc, char **argv, struct want *w)
{
	struct cli_optparse p;
	struct jobref ref;
	int id;
	sl_opt_init(&p, argc, argv, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_SIGNAL:
			if (parse_signal(p.arg) < 0)
				return usage_error("scancel", "Unknown job signal: %s", p.arg);
			w->sig = p.arg;
			break;
		case O_NAME: w->names = p.arg; break;
		case O_USER: w->users = p.arg; break;
		case O_ME: {
			struct passwd *pw = getpwuid(getuid());
			snprintf(w->me, sizeof(w->me), "%s", pw ? pw->pw_name : "?");
			w->users = w->me;
			break;
		}
		case O_STATE: w->states = p.arg; break;
		case O_QUIET: w->quiet = true; break;
		case O_CONF: c->conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); return EXIT_OK;
		case SL_IGNORE: sl_warn_ignored("scancel", "", &p, "storm does not have it"); break;
		case SL_REFUSE: return sl_refuse("scancel", "", &p, "storm cannot choose jobs so");
		case OPT_OPERAND:
			if (jobid_parse(p.arg, &ref) != 0)
				return usage_error("scancel", "Invalid job id %s", p.arg);
			w->ids[w->nids++] = (char *)p.arg;
			break;
		default: return usage_error("scancel", "%s", p.err);
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "scancel" };
	struct want w = { .ids = calloc((size_t)argc + 1, sizeof(char *)) };
	if (!w.ids)
		return EXIT_STORM;
	int rc = parse(&c, argc, argv, &w);
	if (rc < 0 && w.quiet && !freopen("/dev/null", "w", stderr))
		rc = EXIT_STORM;
	if (rc < 0) {
		if (!w.nids && !w.names && !w.users && !w.states)
			rc = usage_error("scancel", "No job identification provided");
		else if (w.names || w.users || w.states)
			rc = cancel_chosen(&c, &w);
		else
			rc = cancel(&c, &w, w.ids, w.nids);
	}
	/* -Q: a job that cannot be cancelled is no failure of the command */
	if (w.quiet && rc == EXIT_STORM)
		rc = EXIT_OK;
	free(w.ids);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
