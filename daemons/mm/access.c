/* Who may touch a job: the one place that decides it (docs/design/security.md).
 * Listing is open to everyone; acting on a job is not. */
#include "mm.h"

#include <stdio.h>

bool mm_may_touch_owned(const struct client *c, uint64_t job, uint32_t uid, const char *user,
			const char *verb, char *why, size_t len)
{
	/* c->uid is the uid MUNGE vouched for (checked against SO_PEERCRED) */
	if (c->uid == 0 || c->uid == uid)
		return true;
	snprintf(why, len, "job %llu belongs to %s; only its owner or root may %s it",
		 (unsigned long long)job, user, verb);
	return false;
}

bool mm_may_touch(const struct client *c, const struct job *j, const char *verb, char *why,
		  size_t len)
{
	return mm_may_touch_owned(c, j->id, j->spec->uid, j->spec->user, verb, why, len);
}

bool mm_may_touch_ckpt(const struct client *c, const struct mm_ckpt *r, const char *verb,
		       char *why, size_t len)
{
	/* a checkpoint is its job's: the same rule */
	if (c->uid == 0 || c->uid == r->spec->uid)
		return true;
	snprintf(why, len, "checkpoint %llu belongs to %s; only its owner or root may %s it",
		 (unsigned long long)r->id, r->spec->user, verb);
	return false;
}
