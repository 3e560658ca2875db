/* squeue on storm: the cluster's queued and running jobs, in squeue's
 * -o/--format (%[.][N]X fields, '.' right-justified, N the width a value is
 * cut to), from the machine manager's job list. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "fmt.h"
#include "jobid.h"
#include "slurm.h"

static const char help[] =
	"Usage: squeue [OPTIONS]\n"
	"\n"
	"Slurm's squeue on a storm cluster: its pending, running and suspended jobs\n"
	"(with -j, the jobs named, whatever their state while the machine manager\n"
	"keeps them).\n"
	"\n"
	"  -j, --jobs LIST     these jobs (12, 12_3), comma-separated\n"
	"  -u, --user LIST     these users' jobs (names or uids); --me: mine\n"
	"  -n, --name LIST     jobs of these names\n"
	"  -t, --states LIST   jobs in these states (PD, R, CD, F, CA, TO, NF, S, their\n"
	"                      long names, or all)\n"
	"  -s, --steps         list steps instead of jobs\n"
	"  -o, --format FMT    squeue's format: %[.][N]X fields (X: i A j u U T t M D N\n"
	"                      R r P C l L S V e a F K Z o; '.' right-justifies, N the\n"
	"                      width) and literal text\n"
	"  -l, --long          the long format\n"
	"  -h, --noheader      no header line\n"
	"  -i, --iterate S     print again every S seconds\n"
	"      --conf FILE     the cluster's storm.conf\n"
	"      --help          this help\n"
	"\n"
	"Ignored with a warning: -p/--partition, -M/--clusters, -A/--account,\n"
	"-q/--qos, -S/--sort, -w/--nodelist, -R/--reservation, -L/--licenses.\n"
	"Taken quietly: -a/--all, -r/--array, -v/--verbose. Refused: -O/--Format,\n"
	"--json, --yaml.\n";

enum {
	O_JOBS = 1, O_USER, O_ME, O_NAME, O_STATES, O_STEPS, O_FORMAT, O_LONG, O_NOHDR,
	O_ITER, O_CONF, O_HELP, O_QUIET
};
static const struct cli_opt opts[] = {
	{ "jobs", 'j', 1, O_JOBS },	   { "job", 0, 1, O_JOBS },
	{ "user", 'u', 1, O_USER },	   { "me", 0, 0, O_ME },
	{ "name", 'n', 1, O_NAME },	   { "states", 't', 1, O_STATES },
	{ "state", 0, 1, O_STATES },	   { "steps", 's', 0, O_STEPS },
	{ "format", 'o', 1, O_FORMAT },	   { "long", 'l', 0, O_LONG },
	{ "noheader", 'h', 0, O_NOHDR },   { "iterate", 'i', 1, O_ITER },
	{ "conf", 0, 1, O_CONF },	   { "help", 0, 0, O_HELP },
	{ "all", 'a', 0, O_QUIET },	   { "array", 'r', 0, O_QUIET },
	{ "verbose", 'v', 0, O_QUIET },	   { "partition", 'p', 1, SL_IGNORE },
	{ "clusters", 'M', 1, SL_IGNORE }, { "account", 'A', 1, SL_IGNORE },
	{ "qos", 'q', 1, SL_IGNORE },	   { "sort", 'S', 1, SL_IGNORE },
	{ "nodelist", 'w', 1, SL_IGNORE }, { "reservation", 'R', 1, SL_IGNORE },
	{ "licenses", 'L', 1, SL_IGNORE }, { "Format", 'O', 1, SL_REFUSE },
	{ "json", 0, 0, SL_REFUSE },	   { "yaml", 0, 0, SL_REFUSE },
	{ NULL, 0, 0, 0 },
};

#define FMT_DEFAULT "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
#define FMT_LONG "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
#define FMT_STEPS "%.15i %.8j %.9P %.8u %.9M %N"

struct want {
	const char *jobs, *users, *names, *states, *format;
	bool steps, noheader, date;
	unsigned iterate;
};

/* ---- one field */

static void time_of(double t, char *o, size_t l)
{
	if (t <= 0) {
		snprintf(o, l, "N/A");
		return;
	}
	time_t s = (time_t)t;
	struct tm tm;
	localtime_r(&s, &tm);
	strftime(o, l, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* squeue's job_time_used: whole seconds from its start to its end (or
 * now), none for a job that has not started; %M and %L both count them so
 * that the time used and the time left add up to the limit. */
static long used_of(const struct job_row *r)
{
	if (r->start <= 0 || r->state == STORM__CTL__JOB_STATE__QUEUED)
		return 0;
	long e = (long)(r->end > 0 ? r->end : r->now) - (long)r->start;
	return e > 0 ? e : 0;
}

static const char *header_of(char x, bool steps)
{
	switch (x) {
	case 'i': return steps ? "STEPID" : "JOBID";
	case 'A': return "JOBID";
	case 'j': return "NAME";
	case 'u': return "USER";
	case 'U': return "UID";
	case 'T': return "STATE";
	case 't': return "ST";
	case 'M': return "TIME";
	case 'D': return "NODES";
	case 'N': return "NODELIST";
	case 'R': return "NODELIST(REASON)";
	case 'r': return "REASON";
	case 'P': return "PARTITION";
	case 'C': return "CPUS";
	case 'l': return "TIME_LIMIT";
	case 'L': return "TIME_LEFT";
	case 'S': return "START_TIME";
	case 'V': return "SUBMIT_TIME";
	case 'e': return "END_TIME";
	case 'a': return "ACCOUNT";
	case 'F': return "ARRAY_JOB_ID";
	case 'K': return "ARRAY_TASK_ID";
	case 'Z': return "WORK_DIR";
	case 'o': return "COMMAND";
	}
	return NULL;
}

static void value_of(char x, const struct sl_row *v, char *o, size_t l)
{
	const struct job_row *r = &v->r;
	const char *us = strchr(r->jobid, '_');
	switch (x) {
	case 'i': snprintf(o, l, "%s", r->jobid); break;
	case 'A': snprintf(o, l, "%s", r->jobid_raw); break;
	case 'j': snprintf(o, l, "%s", r->name); break;
	case 'u': snprintf(o, l, "%s", r->user[0] ? r->user : "?"); break;
	case 'U': snprintf(o, l, "%u", r->uid); break;
	case 'T': snprintf(o, l, "%s", r->slurm_state); break;
	case 't': snprintf(o, l, "%s", sl_state_short(r->slurm_state)); break;
	case 'M': fmt_squeue_secs(used_of(r), o, l); break;
	case 'D': snprintf(o, l, "%u", r->nodes); break;
	case 'N': snprintf(o, l, "%s", r->nodelist); break;
	case 'R':
		if (r->state == STORM__CTL__JOB_STATE__QUEUED || !r->nodelist[0])
			snprintf(o, l, "(%s)", r->reason[0] ? r->reason : "None");
		else
			snprintf(o, l, "%s", r->nodelist);
		break;
	case 'r': snprintf(o, l, "%s", r->reason[0] ? r->reason : "None"); break;
	case 'P': snprintf(o, l, "%s", r->partition); break;
	case 'C': snprintf(o, l, "%u", r->ranks); break;
	case 'l': /* squeue's form is TIME's: M:SS, H:MM:SS, D-HH:MM:SS */
		if (r->time_limit)
			fmt_squeue_secs(r->time_limit, o, l);
		else
			snprintf(o, l, "UNLIMITED");
		break;
	case 'L': /* the limit less the time used; a pending job has it all */
		if (r->time_limit)
			fmt_squeue_secs((long)r->time_limit - used_of(r), o, l);
		else
			snprintf(o, l, "UNLIMITED");
		break;
	case 'S': time_of(r->start, o, l); break;
	case 'V': time_of(r->submit, o, l); break;
	case 'e': time_of(r->end, o, l); break;
	case 'a': snprintf(o, l, "%s", r->account); break;
	case 'F': snprintf(o, l, "%.*s", us ? (int)(us - r->jobid) : 64, us ? r->jobid : r->jobid_raw); break;
	case 'K': snprintf(o, l, "%s", us ? us + 1 : "N/A"); break;
	case 'Z': snprintf(o, l, "%s", r->workdir ? r->workdir : ""); break;
	case 'o': snprintf(o, l, "%s", r->name); break;
	default: o[0] = '\0';
	}
}

struct fctx {
	const struct sl_row *v;
	bool steps;
};

static bool field(char x, const void *row, char *out, size_t len)
{
	const struct fctx *f = row;
	const char *h = header_of(x, f && f->steps);
	if (!h)
		return false;
	if (f && f->v)
		value_of(x, f->v, out, len);
	else
		snprintf(out, len, "%s", h);
	return true;
}

/* ---- which jobs */

static bool list_has_state(const char *list, const char *state)
{
	for (const char *p = list; *p;) {
		size_t w = strcspn(p, ",");
		const char *s = sl_state_short(state);
		if ((w == 3 && !strncasecmp(p, "all", 3)) ||
		    (strlen(state) == w && !strncasecmp(p, state, w)) ||
		    (strlen(s) == w && !strncasecmp(p, s, w)))
			return true;
		p += w + (p[w] == ',');
	}
	return false;
}

static bool id_in(const char *list, const struct sl_row *v)
{
	for (const char *p = list; *p;) {
		char id[64];
		size_t n = strcspn(p, ",");
		snprintf(id, sizeof(id), "%.*s", (int)(n < 63 ? n : 63), p);
		if (sl_row_matches_id(v, id))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

static bool wanted(const struct want *w, const struct sl_row *v)
{
	const struct job_row *r = &v->r;
	char uid[16];
	if (v->batch || v->step != w->steps)
		return false;
	if (w->jobs && !id_in(w->jobs, v))
		return false;
	snprintf(uid, sizeof(uid), "%u", r->uid);
	if (w->users && !sl_in_list(w->users, r->user) && !sl_in_list(w->users, uid))
		return false;
	if (w->names && !sl_in_list(w->names, r->name))
		return false;
	if (w->states)
		return list_has_state(w->states, r->slurm_state);
	/* squeue's default: what is still in the queue, or the jobs named */
	return w->jobs || r->end <= 0;
}

static int show(struct cli *c, const struct want *w)
{
	struct sl_jobs j;
	int rc = sl_jobs_load(c, true, false, &j);
	if (rc != EXIT_OK)
		return rc;
	const char *f = w->format ? w->format : w->steps ? FMT_STEPS : FMT_DEFAULT;
	size_t shown = 0;
	struct fctx fc = { NULL, w->steps };
	for (size_t i = 0; i < j.n; i++)
		shown += wanted(w, &j.v[i]);
	if (w->jobs && !shown && !w->steps) { /* as squeue: no header then */
		sl_jobs_free(&j);
		fprintf(stderr, "slurm_load_jobs error: Invalid job id specified\n");
		return EXIT_STORM;
	}
	if (w->date)
		sl_print_date();
	if (!w->noheader)
		sl_format_line(f, field, &fc);
	for (size_t i = 0; i < j.n; i++)
		if (wanted(w, &j.v[i])) {
			fc.v = &j.v[i];
			sl_format_line(f, field, &fc);
		}
	sl_jobs_free(&j);
	return fflush(stdout) == 0 ? EXIT_OK : EXIT_STORM;
}

static int parse(struct cli *c, int argc, char **argv, struct want *w)
{
	struct cli_optparse p;
	uint64_t v;
	char bad;
	int id;
	sl_opt_init(&p, argc, argv, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case O_JOBS: w->jobs = p.arg; break;
		case O_USER: w->users = p.arg; break;
		case O_ME: {
			struct passwd *pw = getpwuid(getuid());
			w->users = pw ? strdup(pw->pw_name) : NULL;
			break;
		}
		case O_NAME: w->names = p.arg; break;
		case O_STATES: w->states = p.arg; break;
		case O_STEPS: w->steps = true; break;
		case O_FORMAT:
			if (sl_format_check(p.arg, field, &bad) < 0)
				return usage_error("squeue", "Invalid job format specification: %c", bad);
			w->format = p.arg;
			break;
		case O_LONG: w->format = FMT_LONG; w->date = true; break;
		case O_NOHDR: w->noheader = true; break;
		case O_ITER:
			if (parse_uint(p.arg, 1, 86400, &v) < 0)
				return usage_error("squeue", "-i wants seconds, not '%s'", p.arg);
			w->iterate = (unsigned)v;
			break;
		case O_CONF: c->conf_opt = p.arg; break;
		case O_HELP: fputs(help, stdout); return EXIT_OK;
		case O_QUIET: break;
		case SL_IGNORE: sl_warn_ignored("squeue", "", &p, "storm does not have it"); break;
		case SL_REFUSE: return sl_refuse("squeue", "", &p, "use -o/--format");
		case OPT_OPERAND: return usage_error("squeue", "unexpected argument '%s'", p.arg);
		default: return usage_error("squeue", "%s", p.err);
		}
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct cli c = { .slurm_cmd = "squeue" };
	struct want w = { 0 };
	int rc = parse(&c, argc, argv, &w);
	if (rc >= 0)
		return rc;
	for (;;) {
		rc = show(&c, &w);
		if (!w.iterate || rc != EXIT_OK)
			break;
		putchar('\n');
		fflush(stdout);
		sleep(w.iterate);
	}
	if (c.have_conf)
		conf_free(&c.conf);
	return rc;
}
