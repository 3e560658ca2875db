/* storm acct: ended jobs from the machine manager's database, like sacct. */
#include <errno.h>
#include <jansson.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "fmt.h"
#include "jobid.h"
#include "jobtable.h"
#include "opts.h"

static const char acct_help[] =
	"Usage: storm acct [-u USER] [-j JOB] [--since WHEN] [--json | --format FIELDS]\n"
	"\n"
	"Lists ended jobs (completed, failed, cancelled) from the machine manager's\n"
	"database, oldest first, like sacct. The database outlives restarts of the\n"
	"machine manager.\n"
	"\n"
	"  -u, --user USER   only USER's jobs (a name or a uid)\n"
	"  -j, --job JOB     only job JOB and its steps, or one step: JOB.STEP, or\n"
	"                    JOB.batch (a batch script's own shell)\n"
	"  -S, --since WHEN  only jobs that ended at or after WHEN: a local time\n"
	"                    YYYY-MM-DD[THH:MM[:SS]], or a duration back from now\n"
	"                    such as 90s, 30m, 2h, 1d\n"
	"      --json        print {\"jobs\": [...]} for scripts\n"
	"  -o, --format FIELDS  these columns, as sacct's: comma-separated, each with\n"
	"                    an optional %WIDTH: JobID, JobName, User, UID, State,\n"
	"                    Elapsed, NodeList, NNodes, NTasks, ExitCode, Reason,\n"
	"                    Submit, Start, End, MaxRSS (the largest peak resident\n"
	"                    set of its ranks), TotalCPU (their CPU time, summed),\n"
	"                    Timelimit (its -t, UNLIMITED without)\n"
	"      --conf FILE   the cluster's storm.conf\n"
	"  -h, --help        this help\n"
	"\n"
	"Columns: JOBID NAME USER STATE NODES RANKS START END ELAPSED EXIT NODELIST.\n"
	"A job's steps follow it, as sacct lists them: JOB.batch for a batch script's\n"
	"own shell (on its first node), then JOB.0, JOB.1, ... for each storm run in\n"
	"the script or in a storm alloc command.\n"
	"EXIT is the job's status (storm run's exit code): 0, the first non-zero\n"
	"rank status, or 128+N for a rank killed by signal N.\n";

enum { A_USER = 1, A_JOB, A_SINCE, A_JSON, A_CONF, A_HELP, A_FORMAT };

static void fmt_time(double t, char *out, size_t len)
{
	if (t <= 0) {
		snprintf(out, len, "Unknown");
		return;
	}
	time_t s = (time_t)t;
	struct tm tm;
	localtime_r(&s, &tm);
	strftime(out, len, "%Y-%m-%dT%H:%M:%S", &tm);
}

/* "12", "12.0", "7_3", or a batch script's own shell: "12.batch" */
static void acct_jobid(const Storm__Ctl__AcctEntry *e, char *out, size_t len)
{
	jobid_format(e->job, e->array_job, e->array_task, out, len);
	if (e->batch) {
		size_t n = strlen(out);
		snprintf(out + n, len - n, ".batch");
	}
}

static double elapsed_of(const Storm__Ctl__AcctEntry *e)
{
	return e->start_time > 0 && e->end_time > e->start_time ? e->end_time - e->start_time : 0;
}

static int print_json(const Storm__Ctl__AcctList *l)
{
	json_t *arr = json_array();
	for (size_t i = 0; i < l->n_jobs; i++) {
		const Storm__Ctl__AcctEntry *e = l->jobs[i];
		char id[48];
		acct_jobid(e, id, sizeof(id));
		json_array_append_new(
			arr, json_pack("{s:I, s:s, s:s, s:s, s:i, s:s, s:i, s:i, s:s, s:f, s:f, s:f, "
				       "s:f, s:i, s:s}",
				       "job", (json_int_t)e->job, "jobid", id, "name", e->name, "user", e->user,
				       "uid", (int)e->uid, "state", job_state_name(e->state), "nodes",
				       (int)e->nodes, "ranks", (int)e->ranks, "nodelist", e->nodelist,
				       "submit_time", e->submit_time, "start_time", e->start_time,
				       "end_time", e->end_time, "elapsed", elapsed_of(e),
				       "exit_status", (int)e->exit_status, "reason", e->reason));
		json_t *last = json_array_get(arr, json_array_size(arr) - 1);
		json_object_set_new(last, "max_rss_kb", json_integer((json_int_t)e->max_rss_kb));
		json_object_set_new(last, "cpu_seconds", json_real(e->cpu_seconds));
		json_object_set_new(last, "time_limit", json_integer(e->time_limit)); /* 0: none */
		/* a batch script's line repeats its job's end: a count of jobs skips it */
		json_object_set_new(last, "batch", json_boolean(e->batch));
	}
	json_t *root = json_pack("{s:o}", "jobs", arr);
	int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc != 0 || fputc('\n', stdout) == EOF) {
		fprintf(stderr, "storm: error: cannot write JSON: %s\n", strerror(errno));
		return EXIT_STORM;
	}
	return EXIT_OK;
}

#define NCOL 11

static int print_table(const Storm__Ctl__AcctList *l)
{
	static const char *const hdr[NCOL] = { "JOBID", "NAME",  "USER",    "STATE",
					       "NODES", "RANKS", "START",   "END",
					       "ELAPSED", "EXIT", "NODELIST" };
	static const int numeric[NCOL] = { 1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 0 };
	size_t n = l->n_jobs;
	char (*cells)[NCOL][96] = calloc(n ? n : 1, sizeof(*cells));
	if (!cells) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	int w[NCOL];
	for (int k = 0; k < NCOL; k++)
		w[k] = (int)strlen(hdr[k]);
	for (size_t i = 0; i < n; i++) {
		const Storm__Ctl__AcctEntry *e = l->jobs[i];
		acct_jobid(e, cells[i][0], 96);
		snprintf(cells[i][1], 96, "%.40s", e->name);
		snprintf(cells[i][2], 96, "%.40s", e->user[0] ? e->user : "?");
		snprintf(cells[i][3], 96, "%s", job_state_name(e->state));
		snprintf(cells[i][4], 96, "%u", e->nodes);
		snprintf(cells[i][5], 96, "%u", e->ranks);
		fmt_time(e->start_time, cells[i][6], 96);
		fmt_time(e->end_time, cells[i][7], 96);
		fmt_elapsed(elapsed_of(e), cells[i][8], 96);
		snprintf(cells[i][9], 96, "%d", e->exit_status);
		snprintf(cells[i][10], 96, "%.90s", e->nodelist[0] ? e->nodelist : "None");
		for (int k = 0; k < NCOL; k++)
			if ((int)strlen(cells[i][k]) > w[k])
				w[k] = (int)strlen(cells[i][k]);
	}
	for (int k = 0; k < NCOL; k++)
		printf("%*s%s", k == NCOL - 1 ? 0 : numeric[k] ? w[k] : -w[k], hdr[k],
		       k < NCOL - 1 ? " " : "\n");
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < NCOL; k++)
			printf("%*s%s", k == NCOL - 1 ? 0 : numeric[k] ? w[k] : -w[k], cells[i][k],
			       k < NCOL - 1 ? " " : "\n");
	free(cells);
	return EXIT_OK;
}

static int print_fields(const Storm__Ctl__AcctList *l, const struct job_col *cols, int ncol)
{
	struct job_row *rows = calloc(l->n_jobs ? l->n_jobs : 1, sizeof(*rows));
	if (!rows) {
		fprintf(stderr, "storm: error: out of memory\n");
		return EXIT_STORM;
	}
	for (size_t i = 0; i < l->n_jobs; i++) {
		const Storm__Ctl__AcctEntry *e = l->jobs[i];
		struct job_row *r = &rows[i];
		acct_jobid(e, r->jobid, sizeof(r->jobid));
		r->name = e->name;
		r->user = e->user;
		r->nodelist = e->nodelist;
		r->reason = e->reason;
		r->state = e->state;
		r->uid = e->uid;
		r->nodes = e->nodes;
		r->ranks = e->ranks;
		r->submit = e->submit_time;
		r->start = e->start_time;
		r->end = e->end_time;
		r->exit_status = e->exit_status;
		r->max_rss_kb = e->max_rss_kb;
		r->cpu_seconds = e->cpu_seconds;
		r->time_limit = e->time_limit;
	}
	jobtable_print(stdout, cols, ncol, rows, l->n_jobs);
	free(rows);
	return EXIT_OK;
}

/* -j's JOB: "12", "12.0", or "12.batch" (sets *batch) */
static int parse_job(const char *arg, uint64_t *job, bool *batch)
{
	char id[64];
	size_t len = strlen(arg);
	*batch = len > 6 && !strcmp(arg + len - 6, ".batch");
	if (*batch)
		len -= 6;
	struct jobref ref;
	if (len >= sizeof(id))
		return -1;
	memcpy(id, arg, len);
	id[len] = 0;
	if (jobid_parse(id, &ref) < 0 || ref.task_given || (*batch && jobid_is_step(ref.id)))
		return -1;
	*job = ref.id;
	return 0;
}

int cmd_acct(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "user", 'u', 1, A_USER }, { "job", 'j', 1, A_JOB },   { "since", 'S', 1, A_SINCE },
		{ "json", 0, 0, A_JSON },   { "conf", 0, 1, A_CONF },   { "help", 'h', 0, A_HELP },
		{ "format", 'o', 1, A_FORMAT }, { NULL, 0, 0, 0 },
	};
	struct job_col cols[JOBTABLE_MAX_COLS];
	int ncol = 0;
	char why[512];
	Storm__Ctl__Acct a = STORM__CTL__ACCT__INIT;
	char user[256] = "";
	int json = 0, id;
	bool batch_only = false;
	uint64_t v;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case A_USER:
			if (parse_uint(p.arg, 0, UINT32_MAX, &v) == 0) {
				/* a uid: the database keeps names, as sacct shows them */
				struct passwd *pw = getpwuid((uid_t)v);
				if (!pw)
					return usage_error("storm acct", "-u %s: no user has uid %s",
							   p.arg, p.arg);
				snprintf(user, sizeof(user), "%s", pw->pw_name);
			} else {
				snprintf(user, sizeof(user), "%s", p.arg);
			}
			break;
		case A_JOB:
			if (parse_job(p.arg, &a.job, &batch_only) < 0)
				return usage_error("storm acct", "-j wants a job id (JOBID, "
						   "JOBID.STEP or JOBID.batch), not '%s'", p.arg);
			break;
		case A_FORMAT:
			if (jobtable_parse(p.arg, cols, &ncol, why, sizeof(why)) < 0)
				return usage_error("storm acct", "--format: %s", why);
			break;
		case A_SINCE: {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			if (parse_since(p.arg, (double)ts.tv_sec, &a.since) < 0)
				return usage_error("storm acct",
						   "--since wants YYYY-MM-DD[THH:MM[:SS]] or a duration "
						   "like 2h, not '%s'", p.arg);
			break;
		}
		case A_JSON: json = 1; break;
		case A_CONF: c->conf_opt = p.arg; break;
		case A_HELP: fputs(acct_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error("storm acct", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm acct", "%s", p.err);
		}
	}
	a.user = user;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_ACCT;
	req.acct = &a;
	int rc;
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_ACCT, &rc);
	if (!rep)
		return rc;
	/* -j JOB.batch: the job came with its batch line and steps; that line
	 * only (the reply keeps its own array, which frees the entries) */
	Storm__Ctl__AcctList l = *rep->acct;
	Storm__Ctl__AcctEntry *batch[1];
	if (batch_only) {
		l.jobs = batch;
		l.n_jobs = 0;
		for (size_t i = 0; i < rep->acct->n_jobs && !l.n_jobs; i++)
			if (rep->acct->jobs[i]->batch)
				batch[l.n_jobs++] = rep->acct->jobs[i];
	}
	rc = json ? print_json(&l) : ncol ? print_fields(&l, cols, ncol) : print_table(&l);
	ctl_reply_free(rep);
	return rc;
}
