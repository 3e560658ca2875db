/* sacct on storm: the cluster's jobs, running and ended, with their batch
 * lines and steps, in sacct's fields and formats (--parsable2, --noheader,
 * --format with widths), from the machine manager's job list and its
 * accounting database. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "slurm.h"

static const char help[] =
	"Usage: sacct [OPTIONS]\n"
	"\n"
	"Slurm's sacct on a storm cluster: its jobs, queued, running and ended, each\n"
	"followed by its batch line (JOB.batch) and its steps (JOB.0, JOB.1, ...).\n"
	"Without -j, the jobs since midnight (or -S), of this user (root: all).\n"
	"\n"
	"  -j, --jobs LIST       these jobs (12, 12_3, 12.0, 12.batch), comma-separated\n"
	"  -X, --allocations     the jobs only, not their batch lines and steps\n"
	"      --name LIST       jobs of these names (also --jobname)\n"
	"  -u, --user LIST       these users' jobs (names or uids); -a, --allusers: all\n"
	"  -s, --state LIST      jobs in these states (PD, R, CD, F, CA, TO, NF, S or\n"
	"                        their long names)\n"
	"  -S, --starttime T     jobs not ended before T: YYYY-MM-DD[THH:MM[:SS]] or a\n"
	"                        duration back from now (90s, 30m, 2h, 1d)\n"
	"  -E, --endtime T       jobs submitted before T\n"
	"  -o, --format FIELDS   these fields, each with an optional %WIDTH: JobID,\n"
	"                        JobIDRaw, JobName, Partition, Account, AllocCPUS,\n"
	"                        State, ExitCode, User, UID, Elapsed, NodeList, NNodes,\n"
	"                        NTasks, Reason, Submit, Start, End, MaxRSS, TotalCPU,\n"
	"                        Timelimit\n"
	"  -b, --brief           JobID,State,ExitCode\n"
	"  -l, --long            most fields\n"
	"  -p, --parsable        fields separated by '|', one after the last too\n"
	"  -P, --parsable2       fields separated by '|'\n"
	"      --delimiter C     the separator of -p/-P\n"
	"  -n, --noheader        no header line\n"
	"      --conf FILE       the cluster's storm.conf\n"
	"  -h, --help            this help\n"
	"\n"
	"Ignored with a warning: -A/--accounts, -r/--partition, -M/--clusters,\n"
	"-L/--allclusters, -D/--duplicates, -q/--qos, -N/--nodelist, --units,\n"
	"-T/--truncate, -c/--completion, -x/--associations, -W/--wckeys.\n"
	"Partition and Account are the cluster's name (its one partition and account).\n";

enum {
	O_JOBS = 1, O_X, O_NAME, O_USER, O_ALL, O_STATE, O_START, O_END, O_FORMAT, O_BRIEF,
	O_LONG, O_P1, O_P2, O_DELIM, O_NOHDR, O_CONF, O_HELP, O_HELPFMT
};
static const struct cli_opt opts[] = {
	{ "jobs", 'j', 1, O_JOBS },	   { "allocations", 'X', 0, O_X },
	{ "name", 0, 1, O_NAME },	   { "jobname", 0, 1, O_NAME },
	{ "user", 'u', 1, O_USER },	   { "uid", 0, 1, O_USER },
	{ "allusers", 'a', 0, O_ALL },	   { "state", 's', 1, O_STATE },
	{ "starttime", 'S', 1, O_START },  { "endtime", 'E', 1, O_END },
	{ "format", 'o', 1, O_FORMAT },	   { "brief", 'b', 0, O_BRIEF },
	{ "long", 'l', 0, O_LONG },	   { "parsable", 'p', 0, O_P1 },
	{ "parsable2", 'P', 0, O_P2 },	   { "delimiter", 0, 1, O_DELIM },
	{ "noheader", 'n', 0, O_NOHDR },   { "conf", 0, 1, O_CONF },
	{ "help", 'h', 0, O_HELP },	   { "helpformat", 'e', 0, O_HELPFMT },
	{ "accounts", 'A', 1, SL_IGNORE }, { "partition", 'r', 1, SL_IGNORE },
	{ "clusters", 'M', 1, SL_IGNORE }, { "allclusters", 'L', 0, SL_IGNORE },
	{ "duplicates", 'D', 0, SL_IGNORE }, { "qos", 'q', 1, SL_IGNORE },
	{ "nodelist", 'N', 1, SL_IGNORE }, { "units", 0, 1, SL_IGNORE },
	{ "truncate", 'T', 0, SL_IGNORE }, { "completion", 'c', 0, SL_IGNORE },
	{ "associations", 'x', 1, SL_IGNORE }, { "wckeys", 'W', 1, SL_IGNORE },
	{ "local", 0, 0, SL_IGNORE },	   { "array", 0, 0, SL_IGNORE },
	{ NULL, 0, 0, 0 },
};

struct want {
	const char *jobs, *names, *users, *states, *delim;
	bool x, all;
	double start, end;
	uid_t me;
};

static int parse_time(const char *cmd, const char *what, const char *s, double *out)
{
	if (parse_since(s, sl_now(), out) == 0)
		return 0;
	return usage_error(cmd, "%s wants YYYY-MM-DD[THH:MM[:SS]] or a duration like 2h, not '%s'",
			   what, s);
}

static bool user_in(const char *list, const struct job_row *r)
{
	char uid[16];
	snprintf(uid, sizeof(uid), "%u", r->uid);
	return sl_in_list(list, r->user) || sl_in_list(list, uid);
}

static bool state_in(const char *list, const char *state)
{
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		if ((strlen(state) == w && !strncasecmp(p, state, w)) ||
		    (strlen(sl_state_short(state)) == w && !strncasecmp(p, sl_state_short(state), w)))
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

/* A job (its own line) sacct shows; its batch line and steps go with it. */
static bool job_wanted(const struct want *w, const struct sl_row *v)
{
	const struct job_row *r = &v->r;
	if (w->names && !sl_in_list(w->names, r->name))
		return false;
	if (w->users ? !user_in(w->users, r) : !w->all && r->uid != w->me)
		return false;
	if (w->states && !state_in(w->states, r->slurm_state))
		return false;
	if (!w->jobs && r->end > 0 && r->end < w->start)
		return false;
	return !(w->end > 0 && r->submit > w->end);
}

static bool row_wanted(const struct want *w, const struct sl_jobs *j, size_t i, bool *job_ok)
{
	const struct sl_row *v = &j->v[i];
	if (!v->batch && !v->step)
		*job_ok = job_wanted(w, v);
	if (w->x && (v->batch || v->step))
		return false;
	if (w->jobs) {
		bool named = false;
		for (const char *p = w->jobs; *p && !named;) {
			char id[64];
			size_t n = strcspn(p, ",");
			snprintf(id, sizeof(id), "%.*s", (int)(n < 63 ? n : 63), p);
			named = sl_row_matches_id(v, id);
			p += n + (p[n] == ',');
		}
		if (!named)
			return false;
	}
	return *job_ok;
}

static int print(const struct want *w, const struct sl_jobs *j, const struct job_col *cols,
		 int ncol, const struct jobtable_style *st)
{
	struct job_row *rows = calloc(j->n + 1, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "sacct: error: out of memory\n");
		return EXIT_STORM;
	}
	size_t n = 0;
	bool job_ok = false;
	for (size_t i = 0; i < j->n; i++)
		if (row_wanted(w, j, i, &job_ok))
			rows[n++] = j->v[i].r;
	jobtable_print_style(stdout, cols, ncol, rows, n, st);
	free(rows);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_STORM;
}

static double midnight(void)
{
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
	return (double)mktime(&tm);
}

static int set_format(const char *spec, struct job_col *cols, int *ncol)
{
	char why[512];
	if (jobtable_parse(spec, cols, ncol, why, sizeof(why)) < 0)
		return usage_error("sacct", "--format: %s", why);
	return -1;
}

static int parse(struct cli *c, int argc, char **argv, struct want *w, struct job_col *cols,
		 int *ncol, struct jobtable_style *st)
{
	struct cli_optparse p;
	int id, rc = -1;
	sl_opt_init(&p, argc, argv, 0);
	while (rc < 0 && (id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_JOBS: w->jobs = p.arg; break;
		case O_X: w->x = true; break;
		case O_NAME: w->names = p.arg; break;
		case O_USER: w->users = p.arg; break;
		case O_ALL: w->all = true; break;
		case O_STATE: w->states = p.arg; break;
		case O_START: rc = parse_time("sacct", "-S", p.arg, &w->start) ? EXIT_USAGE : -1; break;
		case O_END: rc = parse_time("sacct", "-E", p.arg, &w->end) ? EXIT_USAGE : -1; break;
		case O_FORMAT: rc = set_format(p.arg, cols, ncol); break;
		case O_BRIEF: rc = set_format("JobID,State,ExitCode", cols, ncol); break;
		case O_LONG:
			rc = set_format("JobID,JobIDRaw,JobName,Partition,MaxRSS,AllocCPUS,TotalCPU,"
					"Elapsed,State,ExitCode,NNodes,NTasks,NodeList", cols, ncol);
			break;
		case O_P1: st->delim = st->delim ? st->delim : "|"; st->delim_last = true; break;
		case O_P2: st->delim = st->delim ? st->delim : "|"; st->delim_last = false; break;
		case O_DELIM: w->delim = p.arg; break;
		case O_NOHDR: st->noheader = true; break;
		case O_CONF: c->conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); return EXIT_OK;
		case O_HELPFMT:
			puts("JobID JobIDRaw JobName Partition Account AllocCPUS State ExitCode User UID\n"
			     "Elapsed NodeList NNodes NTasks Reason Submit Start End MaxRSS TotalCPU\n"
			     "Timelimit WorkDir");
			return EXIT_OK;
		case SL_IGNORE: sl_warn_ignored("sacct", "", &p, "storm does not have it"); break;
		case OPT_OPERAND: return usage_error("sacct", "unexpected argument '%s'", p.arg);
		default: return usage_error("sacct", "%s", p.err);
		}
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "sacct" };
	struct want w = { .me = getuid(), .start = midnight() };
	struct job_col cols[JOBTABLE_MAX_COLS];
	int ncol = 0;
	struct jobtable_style st = { .slurm_widths = true };
	int rc = parse(&c, argc, argv, &w, cols, &ncol, &st);
	if (rc >= 0)
		return rc;
	if (!ncol && set_format("JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode", cols,
				&ncol) >= 0)
		return EXIT_STORM;
	w.all = w.all || w.me == 0;
	if (st.delim && w.delim) /* as sacct: only with -p or -P */
		st.delim = w.delim;
	struct sl_jobs j;
	if ((rc = sl_jobs_load(&c, true, true, &j)) != EXIT_OK)
		return rc;
	rc = print(&w, &j, cols, ncol, &st);
	sl_jobs_free(&j);
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
