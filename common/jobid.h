/* Job ids as users write them and as the daemons carry them.
 *
 * A job, an allocation and an array task each have an ordinary id below
 * 2^32. A step of an allocation (a `storm run` inside a batch script or a
 * `storm alloc` shell) needs no table to be found: its id is the
 * allocation's id in the low 32 bits and the step number plus one above
 * them, so every node tells from a job id alone which allocation's turn in
 * the matrix it runs in. Users see "12" for a job, "12.0" for a step and
 * "12_3" for task 3 of array 12. */
#ifndef STORM_JOBID_H
#define STORM_JOBID_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JOBID_MAX UINT32_MAX  /* the largest ordinary id */
#define JOBID_STEP_MAX 65535u /* the largest step number */

static inline uint64_t jobid_step(uint64_t alloc, uint32_t step)
{
	return alloc | ((uint64_t)step + 1) << 32;
}
/* the allocation a step belongs to; any other job: itself */
static inline uint64_t jobid_alloc(uint64_t id) { return id & JOBID_MAX; }
static inline bool jobid_is_step(uint64_t id) { return (id >> 32) != 0; }
static inline uint32_t jobid_step_no(uint64_t id) { return (uint32_t)(id >> 32) - 1; }

/* A job id as written on the command line. */
struct jobref {
	uint64_t id;        /* "12" or "12.0" (encoded), or the array's id for "12_3" */
	bool task_given;    /* "12_3": task of array id */
	uint32_t task;
};

/* "12", "12.3" or "12_7"; 0, or -1 when it is none of those (or out of
 * range). */
int jobid_parse(const char *s, struct jobref *out);

/* As users see it: "12", "12.3", or with array_job set, "ARRAY_TASK". */
void jobid_format(uint64_t id, uint64_t array_job, uint32_t array_task, char *out, size_t len);

#endif
