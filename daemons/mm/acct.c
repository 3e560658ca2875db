/* `storm acct`: ended jobs from the database, as one reply. */
#include "db.h"
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

static int acct_one(void *arg, const struct db_acct *a)
{
	struct acct_out *o = arg;
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
	e->job = a->id;
	e->name = sdup(a->name);
	e->user = sdup(a->user);
	e->uid = a->uid;
	e->nodes = a->nnodes;
	e->ranks = a->nranks;
	e->nodelist = sdup(a->nodelist);
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
	o->v[o->n++] = e;
	return 0;
}

void acct_reply(struct mm *mm, struct client *c, const Storm__Ctl__Acct *a)
{
	struct db_acct_filter f = { .user = a->user[0] ? a->user : NULL, .uid = -1,
				    .job = a->job, .since = a->since };
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
