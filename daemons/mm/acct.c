/* `storm acct`: ended jobs from the database, as one reply. */
#include "db.h"
#include "hostlist.h"
#include "jobid.h"
#include "mm.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct acct_out {
	Storm__Ctl__AcctEntry **v;
	size_t n, cap;
};

static char *sdup(const char *s)
{
	return strdup(s ? s : "");
}

/* The first node of a job's list: where its batch script ran. 0 or -1. */
static int first_node(const struct db_acct *a, char *out)
{
	char err[128];
	if (!a->nodelist || !a->nnodes || a->nnodes > 65536)
		return -1;
	char (*names)[HOSTNAME_MAX] = calloc(a->nnodes, sizeof(*names));
	if (!names)
		return -1;
	int n = hostlist_expand(a->nodelist, names, (int)a->nnodes, err, sizeof(err));
	if (n > 0)
		memcpy(out, names[0], HOSTNAME_MAX);
	free(names);
	return n > 0 ? 0 : -1;
}

static int acct_push(struct acct_out *o, const struct db_acct *a, bool batch)
{
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 64;
		Storm__Ctl__AcctEntry **nv = realloc(o->v, cap * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		o->v = nv;
		o->cap = cap;
	}
	Storm__Ctl__AcctEntry *e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	storm__ctl__acct_entry__init(e);
	char first[HOSTNAME_MAX];
	bool one = batch && first_node(a, first) == 0;
	e->job = a->id;
	e->batch = batch;
	e->name = sdup(batch ? "batch" : a->name);
	e->user = sdup(a->user);
	e->uid = a->uid;
	e->nodes = batch ? 1 : a->nnodes;
	e->ranks = batch ? 1 : a->nranks;
	e->nodelist = sdup(one ? first : a->nodelist);
	e->submit_time = a->t_submit;
	e->start_time = a->t_start;
	e->end_time = a->t_end;
	e->state = persist_state_value(a->state);
	e->exit_status = a->exit_status;
	e->reason = sdup(a->reason);
	e->array_job = a->array_job;
	e->array_task = a->array_task;
	e->max_rss_kb = a->max_rss_kb;
	e->cpu_seconds = (double)a->cpu_us / 1e6;
	e->time_limit = a->time_limit;
	o->v[o->n++] = e;
	if (!e->name || !e->user || !e->nodelist || !e->reason)
		return -ENOMEM;
	return 0;
}

/* A job, and after a batch script's job that started, its script as
 * JOB.batch: sacct's way, where a Slurm user looks for the script's end. */
static int acct_one(void *arg, const struct db_acct *a)
{
	int rc = acct_push(arg, a, false);
	if (rc == 0 && a->script && a->t_start > 0)
		rc = acct_push(arg, a, true);
	return rc;
}

void acct_reply(struct mm *mm, struct client *c, const Storm__Ctl__Acct *a)
{
	struct db_acct_filter f = { .user = a->user[0] ? a->user : NULL, .uid = -1,
				    .job = a->job, .steps = !jobid_is_step(a->job),
				    .since = a->since };
	struct acct_out o = { 0 };
	if (!mm->db) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
			    "this machine manager keeps no database");
		return;
	}
	int rc = db_acct_list(mm->db, &f, acct_one, &o);
	if (rc < 0)
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
			    "cannot read the accounting: %s",
			    rc == -1 ? db_error(mm->db) : strerror(-rc));
	else {
		Storm__Ctl__AcctList l = STORM__CTL__ACCT_LIST__INIT;
		l.jobs = o.v;
		l.n_jobs = o.n;
		reply_send(mm, c, STORM__CTL__REPLY__BODY_ACCT, &l);
	}
	for (size_t i = 0; i < o.n; i++) {
		free(o.v[i]->name);
		free(o.v[i]->user);
		free(o.v[i]->nodelist);
		free(o.v[i]->reason);
		free(o.v[i]);
	}
	free(o.v);
}
