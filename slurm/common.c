/* What Slurm's commands on storm share (slurm.h). */
#include "slurm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmt.h"
#include "jobid.h"

const char *sl_state(int state, const char *reason)
{
	switch (state) {
	case STORM__CTL__JOB_STATE__QUEUED: return "PENDING";
	case STORM__CTL__JOB_STATE__LAUNCHING: /* Slurm's job runs while its tasks start */
	case STORM__CTL__JOB_STATE__RUNNING: return "RUNNING";
	case STORM__CTL__JOB_STATE__COMPLETED: return "COMPLETED";
	case STORM__CTL__JOB_STATE__CANCELLED: return "CANCELLED";
	case STORM__CTL__JOB_STATE__SUSPENDED: return "SUSPENDED";
	case STORM__CTL__JOB_STATE__TIMEOUT: return "TIMEOUT";
	case STORM__CTL__JOB_STATE__FAILED:
		/* the machine manager ends a job that lost a node with one of
		 * these (job_node_failed); any other failure is the job's own */
		if (reason && (strstr(reason, "; the job was terminated") ||
			       strstr(reason, "; restarted from its latest checkpoint")))
			return "NODE_FAIL";
		return "FAILED";
	}
	return "UNKNOWN";
}

const char *sl_state_short(const char *s)
{
	static const char *const map[][2] = {
		{ "PENDING", "PD" },   { "RUNNING", "R" },	{ "COMPLETED", "CD" },
		{ "FAILED", "F" },     { "CANCELLED", "CA" },	{ "SUSPENDED", "S" },
		{ "TIMEOUT", "TO" },   { "NODE_FAIL", "NF" },
	};
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!strcmp(map[i][0], s))
			return map[i][1];
	return "?";
}

void sl_exitcode(int32_t status, int state, char *out, size_t len)
{
	/* storm reports 128+N for a rank killed by signal N; that is the
	 * signal's doing only when storm sent it (cancel, time limit) */
	bool signalled = state == STORM__CTL__JOB_STATE__CANCELLED ||
			 state == STORM__CTL__JOB_STATE__TIMEOUT;
	if (signalled && status > 128 && status < 128 + 65)
		snprintf(out, len, "0:%d", status - 128);
	else
		snprintf(out, len, "%d:0", status < 0 ? 1 : status);
}

int sl_add(const char *cmd, struct sl_args *a, const char *opt, const char *val)
{
	if (a->n + 3 > (int)(sizeof(a->v) / sizeof(a->v[0])))
		return usage_error(cmd, "too many options");
	a->v[a->n++] = (char *)opt;
	if (val)
		a->v[a->n++] = (char *)val;
	return -1;
}

bool sl_row_matches_id(const struct sl_row *row, const char *id)
{
	const struct job_row *r = &row->r;
	if (!strcmp(r->jobid, id) || !strcmp(r->jobid_raw, id))
		return true;
	char own[24];
	snprintf(own, sizeof(own), "%llu", (unsigned long long)row->job);
	if (!strcmp(own, id))
		return true;
	size_t n = strlen(id);
	return !strncmp(r->jobid, id, n) && r->jobid[n] == '_';
}

int sl_format_check(const char *fmt, sl_field_fn f, char *bad)
{
	char cell[8];
	for (const char *p = fmt; *p; p++) {
		if (*p != '%')
			continue;
		p++;
		if (*p == '%')
			continue;
		p += *p == '.';
		while (*p >= '0' && *p <= '9')
			p++;
		if (!*p || !f(*p, NULL, cell, sizeof(cell))) {
			*bad = *p ? *p : '%';
			return -1;
		}
	}
	return 0;
}

void sl_format_line(const char *fmt, sl_field_fn f, const void *row)
{
	char cell[1024];
	for (const char *p = fmt; *p; p++) {
		if (*p != '%' || p[1] == '%') {
			putchar(*p);
			p += *p == '%';
			continue;
		}
		p++;
		bool right = *p == '.';
		p += right;
		int width = 0;
		while (*p >= '0' && *p <= '9' && width < 1000)
			width = width * 10 + (*p++ - '0');
		if (!*p)
			break;
		if (!f(*p, row, cell, sizeof(cell)))
			cell[0] = '\0';
		if (width && (int)strlen(cell) > width) /* cut to its width, as squeue */
			cell[width] = '\0';
		printf("%*s", right ? width : -width, cell);
	}
	putchar('\n');
}

Storm__Ctl__Reply *sl_nodes(struct cli *c, int *rc)
{
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_NODES;
	req.nodes = &ln;
	return cli_call_for(c, &req, CTL_TIMEOUT_MS, STORM__CTL__REPLY__BODY_NODES, rc);
}

void sl_print_date(void)
{
	char buf[64];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%a %b %d %H:%M:%S %Y", &tm);
	puts(buf);
}

double sl_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the rows */

static void raw_id(uint64_t id, bool batch, char *out, size_t len)
{
	if (batch)
		snprintf(out, len, "%llu.batch", (unsigned long long)id);
	else
		jobid_format(id, 0, 0, out, len);
}

static void from_acct(const Storm__Ctl__AcctEntry *e, struct job_row *r)
{
	memset(r, 0, sizeof(*r));
	jobid_format(e->job, e->array_job, e->array_task, r->jobid, sizeof(r->jobid));
	if (e->batch)
		strncat(r->jobid, ".batch", sizeof(r->jobid) - strlen(r->jobid) - 1);
	raw_id(e->job, e->batch, r->jobid_raw, sizeof(r->jobid_raw));
	r->name = e->batch ? "batch" : e->name;
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

static void from_live(const Storm__Ctl__JobInfo *ji, double now, struct job_row *r)
{
	memset(r, 0, sizeof(*r));
	jobid_format(ji->job, ji->array_job, ji->array_task, r->jobid, sizeof(r->jobid));
	raw_id(ji->job, false, r->jobid_raw, sizeof(r->jobid_raw));
	r->name = ji->name;
	r->user = ji->user;
	r->nodelist = ji->nodelist;
	r->reason = ji->reason;
	r->state = ji->state;
	r->uid = ji->uid;
	r->nodes = ji->nodes;
	r->ranks = ji->ranks;
	r->submit = ji->submit_time;
	r->start = ji->start_time;
	r->end = ji->end_time;
	r->now = now;
	r->exit_status = ji->exit_status;
	r->time_limit = ji->time_limit;
}

static void row_add(struct sl_jobs *j, const struct job_row *r, uint64_t raw, bool batch,
		    int32_t status)
{
	struct sl_row *v = &j->v[j->n++];
	v->r = *r;
	v->raw = raw;
	v->job = jobid_alloc(raw);
	v->batch = batch;
	v->step = jobid_is_step(raw);
	sl_exitcode(status, r->state, v->exit, sizeof(v->exit));
	v->r.slurm_state = sl_state(r->state, r->reason);
	v->r.partition = j->partition;
	v->r.account = j->account;
}

/* a job, then its batch line, then its steps; jobs by number */
static int kind_of(const struct sl_row *v)
{
	return v->batch ? 1 : v->step ? 2 + (int)jobid_step_no(v->raw) : 0;
}
static int row_cmp(const void *a, const void *b)
{
	const struct sl_row *x = a, *y = b;
	if (x->job != y->job)
		return x->job < y->job ? -1 : 1;
	return kind_of(x) - kind_of(y);
}

static Storm__Ctl__Reply *ask(struct cli *c, int body, void *msg, int want, int *rc)
{
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = body;
	if (body == STORM__CTL__REQUEST__BODY_JOBS)
		req.jobs = msg;
	else
		req.acct = msg;
	return cli_call_for(c, &req, CTL_TIMEOUT_MS, (Storm__Ctl__Reply__BodyCase)want, rc);
}

/* The database's line of a job that ended has more than the live one (its
 * batch line, its usage): a live job it holds is left out. */
static void add_all(struct sl_jobs *j, const Storm__Ctl__AcctList *al,
		    const Storm__Ctl__JobList *jl)
{
	struct job_row r;
	double now = sl_now();
	size_t from_db = al ? al->n_jobs : 0;
	for (size_t i = 0; i < from_db; i++) {
		from_acct(al->jobs[i], &r);
		row_add(j, &r, al->jobs[i]->job, al->jobs[i]->batch, al->jobs[i]->exit_status);
	}
	for (size_t i = 0; jl && i < jl->n_jobs; i++) {
		const Storm__Ctl__JobInfo *ji = jl->jobs[i];
		bool seen = false;
		for (size_t k = 0; k < from_db && !seen; k++)
			seen = j->v[k].raw == ji->job && !j->v[k].batch;
		if (seen)
			continue;
		from_live(ji, now, &r);
		row_add(j, &r, ji->job, false, ji->exit_status);
	}
}

int sl_jobs_load(struct cli *c, bool live, bool acct, struct sl_jobs *j)
{
	int rc = EXIT_OK;
	Storm__Ctl__Reply *jr = NULL, *ar = NULL;
	memset(j, 0, sizeof(*j));
	if (live) {
		Storm__Ctl__ListJobs lj = STORM__CTL__LIST_JOBS__INIT;
		lj.all = 1;
		jr = ask(c, STORM__CTL__REQUEST__BODY_JOBS, &lj, STORM__CTL__REPLY__BODY_JOBS, &rc);
		if (!jr)
			return rc;
	}
	if (acct) {
		Storm__Ctl__Acct a = STORM__CTL__ACCT__INIT;
		a.user = "";
		ar = ask(c, STORM__CTL__REQUEST__BODY_ACCT, &a, STORM__CTL__REPLY__BODY_ACCT, &rc);
		if (!ar) {
			if (jr)
				ctl_reply_free(jr);
			return rc;
		}
	}
	j->replies_[0] = jr;
	j->replies_[1] = ar;
	snprintf(j->partition, sizeof(j->partition), "%s",
		 c->have_conf && c->conf.name[0] ? c->conf.name : "storm");
	snprintf(j->account, sizeof(j->account), "%s", j->partition);
	size_t cap = (jr ? jr->jobs->n_jobs : 0) + (ar ? ar->acct->n_jobs : 0) + 1;
	if (!(j->v = calloc(cap, sizeof(*j->v)))) {
		fprintf(stderr, "storm: error: out of memory\n");
		sl_jobs_free(j);
		return EXIT_STORM;
	}
	add_all(j, ar ? ar->acct : NULL, jr ? jr->jobs : NULL);
	qsort(j->v, j->n, sizeof(*j->v), row_cmp);
	for (size_t i = 0; i < j->n; i++) /* where the rows finally are */
		j->v[i].r.slurm_exit = j->v[i].exit;
	return EXIT_OK;
}

void sl_jobs_free(struct sl_jobs *j)
{
	free(j->v);
	for (int i = 0; i < 2; i++)
		if (j->replies_[i])
			ctl_reply_free(j->replies_[i]);
	memset(j, 0, sizeof(*j));
}
