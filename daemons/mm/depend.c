/* When a queued job may start, besides room in the matrix: its
 * --dependency conditions, and its array's %N limit on tasks started at
 * once. A job whose dependency can no longer hold never starts. */
#include "db.h"
#include "mm.h"

#include <stdio.h>
#include <string.h>

/* The state of a job that may have ended long ago: in memory, else in the
 * accounting. Returns false when the MM never had it. */
struct dep_state_arg {
	Storm__Ctl__JobState state;
	bool found;
};
static int dep_state_one(void *arg, const struct db_acct *a)
{
	struct dep_state_arg *d = arg;
	d->state = persist_state_value(a->state);
	d->found = true;
	return 0;
}

static bool state_of(struct mm *mm, uint64_t id, Storm__Ctl__JobState *st)
{
	struct job *j = job_find(mm, id);
	if (j) {
		*st = j->state;
		return true;
	}
	if (!mm->db)
		return false;
	struct db_acct_filter f = { .uid = -1, .job = id };
	struct dep_state_arg d = { 0 };
	if (db_acct_list(mm->db, &f, dep_state_one, &d) < 0 || !d.found)
		return false;
	*st = d.state;
	return true;
}

/* The jobs a dependency names: one job or step, one task of an array, or
 * every task of an array (an array's id is its first task's). */
static size_t dep_jobs(struct mm *mm, const Storm__Job__Dependency *d, uint64_t *ids, size_t max)
{
	size_t n = 0;
	struct job *j = job_find(mm, d->job);
	if (j && j->spec->array_job == d->job) {
		for (struct job *t = mm->jobs; t && n < max; t = t->next)
			if (t->spec->array_job == d->job &&
			    (!d->task_given || t->spec->array_task == d->task))
				ids[n++] = t->id;
		return n;
	}
	if (!d->task_given && max)
		ids[n++] = d->job;
	return n;
}

/* as users write it: afterok */
static const char *kind_name(Storm__Job__Dependency__Kind k)
{
	switch (k) {
	case STORM__JOB__DEPENDENCY__KIND__AFTER: return "after";
	case STORM__JOB__DEPENDENCY__KIND__AFTEROK: return "afterok";
	case STORM__JOB__DEPENDENCY__KIND__AFTERANY: return "afterany";
	case STORM__JOB__DEPENDENCY__KIND__AFTERNOTOK: return "afternotok";
	default: return "?";
	}
}

bool depend_known(struct mm *mm, const Storm__Job__Spec *s, char *why, size_t len)
{
	for (size_t i = 0; i < s->n_dependencies; i++) {
		const Storm__Job__Dependency *d = s->dependencies[i];
		uint64_t ids[1];
		Storm__Ctl__JobState st;
		if (d->kind < STORM__JOB__DEPENDENCY__KIND__AFTER ||
		    d->kind > STORM__JOB__DEPENDENCY__KIND__AFTERNOTOK) {
			snprintf(why, len, "unknown dependency kind %d", (int)d->kind);
			return false;
		}
		if (!dep_jobs(mm, d, ids, 1) || !state_of(mm, ids[0], &st)) {
			if (d->task_given)
				snprintf(why, len, "dependency on %llu_%u: no such array task",
					 (unsigned long long)d->job, d->task);
			else
				snprintf(why, len, "dependency on job %llu: no such job",
					 (unsigned long long)d->job);
			return false;
		}
	}
	return true;
}

static bool ended(Storm__Ctl__JobState s)
{
	return s == STORM__CTL__JOB_STATE__COMPLETED || s == STORM__CTL__JOB_STATE__FAILED ||
	       s == STORM__CTL__JOB_STATE__CANCELLED || s == STORM__CTL__JOB_STATE__TIMEOUT;
}

enum eligible job_eligible(struct mm *mm, const struct job *j, char *why, size_t len)
{
	const Storm__Job__Spec *s = j->spec;
	for (size_t i = 0; i < s->n_dependencies; i++) {
		const Storm__Job__Dependency *d = s->dependencies[i];
		uint64_t ids[256];
		size_t n = dep_jobs(mm, d, ids, 256);
		for (size_t k = 0; k < n; k++) {
			Storm__Ctl__JobState st;
			if (!state_of(mm, ids[k], &st))
				continue; /* forgotten: it ended long ago, and was checked at submit */
			bool done = ended(st);
			bool hold;
			switch (d->kind) {
			case STORM__JOB__DEPENDENCY__KIND__AFTER:
				hold = done || st == STORM__CTL__JOB_STATE__RUNNING;
				break;
			case STORM__JOB__DEPENDENCY__KIND__AFTEROK:
				if (done && st != STORM__CTL__JOB_STATE__COMPLETED) {
					snprintf(why, len, "dependency afterok:%llu can never hold: the job "
						 "ended %s", (unsigned long long)ids[k], persist_state_name(st));
					return NEVER;
				}
				hold = done;
				break;
			case STORM__JOB__DEPENDENCY__KIND__AFTERNOTOK:
				if (st == STORM__CTL__JOB_STATE__COMPLETED) {
					snprintf(why, len, "dependency afternotok:%llu can never hold: the "
						 "job COMPLETED", (unsigned long long)ids[k]);
					return NEVER;
				}
				hold = done;
				break;
			default:
				hold = done;
				break;
			}
			if (!hold) {
				snprintf(why, len, "waiting for dependency %s:%llu (%s)", kind_name(d->kind),
					 (unsigned long long)ids[k], persist_state_name(st));
				return WAIT;
			}
		}
	}
	if (s->array_job && s->array_limit) {
		uint32_t started = 0;
		for (struct job *t = mm->jobs; t; t = t->next)
			if (t->spec->array_job == s->array_job &&
			    (t->state == STORM__CTL__JOB_STATE__LAUNCHING ||
			     t->state == STORM__CTL__JOB_STATE__RUNNING))
				started++;
		if (started >= s->array_limit) {
			snprintf(why, len, "waiting: %u tasks of array %llu run, its limit (%%%u)",
				 started, (unsigned long long)s->array_job, s->array_limit);
			return WAIT;
		}
	}
	return ELIGIBLE;
}
