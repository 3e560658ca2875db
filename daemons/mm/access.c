/* Who may touch a job: the one place that decides it (docs/ARCHITECTURE.md,
 * "Security"). Listing is open to everyone; acting on a job is not. */
#include "mm.h"

#include <stdio.h>

bool mm_may_touch(const struct client *c, const struct job *j, const char *verb, char *why,
		  size_t len)
{
	/* c->uid is the uid MUNGE vouched for (checked against SO_PEERCRED) */
	if (c->uid == 0 || c->uid == j->uid)
		return true;
	snprintf(why, len, "job %llu belongs to %s; only its owner or root may %s it",
		 (unsigned long long)j->id, j->user, verb);
	return false;
}
