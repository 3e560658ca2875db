/* Allocations and their steps. An allocation is a batch script's job (the
 * script runs once, on its first node) or a `storm alloc` (nothing runs);
 * it holds its nodes in one row of the matrix. A step is a `storm run`
 * inside it: an ordinary job on the allocation's first nodes, out of the
 * matrix, whose id carries the allocation's (common/jobid.h), so every node
 * runs it in the allocation's turn. */
#include "db.h"
#include "mm.h"

#include <stdio.h>
#include <string.h>

uint32_t job_launch_nodes(const struct job *j)
{
	return j->spec->hold ? 0 : j->spec->script ? 1 : j->nnodes;
}

struct job *alloc_of(struct mm *mm, const struct job *j)
{
	return jobid_is_step(j->id) ? job_find(mm, jobid_alloc(j->id)) : NULL;
}

size_t alloc_steps(struct mm *mm, const struct job *a, uint64_t *ids, size_t max)
{
	size_t n = 0;
	for (struct job *j = mm->jobs; j && n < max; j = j->next)
		if (jobid_is_step(j->id) && jobid_alloc(j->id) == a->id && job_active(j))
			ids[n++] = j->id;
	return n;
}

bool alloc_frozen(struct mm *mm, const struct job *a)
{
	if (ckpt_freezes(a))
		return true;
	if (!a->spec->script && !a->spec->hold)
		return false;
	for (struct job *j = mm->jobs; j; j = j->next)
		if (jobid_is_step(j->id) && jobid_alloc(j->id) == a->id && ckpt_freezes(j))
			return true;
	return false;
}

/* The next step number: one past the highest this allocation has had, in
 * memory or (after a restart of the MM) in the database. */
static uint32_t next_step(struct mm *mm, struct job *a)
{
	if (a->recovered && !a->nsteps && mm->db) {
		uint64_t last = db_job_last_step(mm->db, a->id);
		if (last)
			a->nsteps = jobid_step_no(last) + 1;
	}
	return a->nsteps;
}

Storm__Ctl__ErrorCode alloc_step_check(struct mm *mm, const struct client *c,
				       Storm__Job__Spec *s, struct job **alloc, uint64_t *id,
				       char *why, size_t len)
{
	uint64_t aid = s->allocation;
	struct job *a = aid <= JOBID_MAX ? job_find(mm, aid) : NULL;
	if (!a || !(a->spec->script || a->spec->hold)) {
		snprintf(why, len, "job %llu is not an allocation (STORM_JOBID names the batch "
				   "script's or storm alloc's job)", (unsigned long long)aid);
		return a ? STORM__CTL__ERROR_CODE__ERR_INVALID : STORM__CTL__ERROR_CODE__ERR_NOT_FOUND;
	}
	if (c->uid != 0 && c->uid != a->spec->uid) {
		snprintf(why, len, "allocation %llu is %s's", (unsigned long long)aid, a->spec->user);
		return STORM__CTL__ERROR_CODE__ERR_PERMISSION;
	}
	if (a->state != STORM__CTL__JOB_STATE__RUNNING || a->cancelled || a->failed ||
	    a->timed_out) {
		snprintf(why, len, "allocation %llu is not running", (unsigned long long)aid);
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	}
	if (s->hold || s->script || s->n_array_tasks || s->n_dependencies || s->restart_on_failure) {
		snprintf(why, len, "a step of allocation %llu cannot be %s", (unsigned long long)aid,
			 s->hold ? "an allocation" : s->script ? "a batch script"
			 : s->n_array_tasks ? "an array" : s->n_dependencies ? "dependent"
			 : "restarted on failure (its allocation ends with a lost node)");
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	}
	/* srun's default in an allocation: every node of it, fewer when there
	 * are fewer ranks */
	if (!s->nodes)
		s->nodes = s->ranks && s->ranks < a->nnodes ? s->ranks : a->nnodes;
	if (s->nodes > a->nnodes) {
		snprintf(why, len, "%u nodes requested but allocation %llu has %u", s->nodes,
			 (unsigned long long)aid, a->nnodes);
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	}
	uint32_t step = next_step(mm, a);
	if (step > JOBID_STEP_MAX) {
		snprintf(why, len, "allocation %llu has had %u steps, the most it may",
			 (unsigned long long)aid, JOBID_STEP_MAX + 1);
		return STORM__CTL__ERROR_CODE__ERR_INVALID;
	}
	*alloc = a;
	*id = jobid_step(a->id, step);
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}
