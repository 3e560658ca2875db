/* The job table: finding a job by id. Below everything that walks jobs
 * (gang.c, job.c, ckpt*.c, ctl.c...), so none of them needs another to
 * look one up. */
#include "mm.h"

bool job_active(const struct job *j)
{
	return j->state == STORM__CTL__JOB_STATE__QUEUED ||
	       j->state == STORM__CTL__JOB_STATE__LAUNCHING ||
	       j->state == STORM__CTL__JOB_STATE__RUNNING;
}

struct job *job_find(struct mm *mm, uint64_t id)
{
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}
