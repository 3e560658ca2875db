/* Job ids as users write them (jobid.h). */
#include "jobid.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static int number(const char **p, uint64_t max, uint64_t *v)
{
	if (**p < '0' || **p > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(*p, &end, 10);
	if (errno || n > max)
		return -1;
	*v = n;
	*p = end;
	return 0;
}

int jobid_parse(const char *s, struct jobref *out)
{
	const char *p = s;
	uint64_t id, sub;
	if (number(&p, JOBID_MAX, &id) < 0 || id == 0)
		return -1;
	struct jobref r = { .id = id };
	if (*p == '.' || *p == '_') {
		char sep = *p++;
		if (number(&p, sep == '.' ? JOBID_STEP_MAX : UINT32_MAX, &sub) < 0)
			return -1;
		if (sep == '.') {
			r.id = jobid_step(id, (uint32_t)sub);
		} else {
			r.task_given = true;
			r.task = (uint32_t)sub;
		}
	}
	if (*p)
		return -1;
	*out = r;
	return 0;
}

void jobid_format(uint64_t id, uint64_t array_job, uint32_t array_task, char *out, size_t len)
{
	if (jobid_is_step(id))
		snprintf(out, len, "%" PRIu64 ".%u", jobid_alloc(id), jobid_step_no(id));
	else if (array_job)
		snprintf(out, len, "%" PRIu64 "_%u", array_job, array_task);
	else
		snprintf(out, len, "%" PRIu64, id);
}
