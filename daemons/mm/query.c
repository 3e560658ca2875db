/* COMPARE-AND-WRITE queries of the MM: started from the loop, answered on a
 * later turn (sn_progress runs the answer), so the strobe never waits on
 * one. What asked is named by ids and looked up again on the answer: the
 * job, transfer or checkpoint may have ended in between. */
#include "mm.h"

#include <stdlib.h>

struct query {
	struct mm *mm;
	mm_answer_fn fn;
	uint64_t id, id2;
};

static void answered(void *arg, const struct sn_caw_result *res)
{
	struct query q = *(struct query *)arg;
	free(arg);
	q.fn(q.mm, q.id, q.id2, res);
}

int mm_query(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
	     uint64_t value, mm_answer_fn fn, uint64_t id, uint64_t id2)
{
	return mm_query_write(mm, set, var, op, value, false, 0, 0, fn, id, id2);
}

int mm_query_gather(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
		    uint64_t value, uint64_t pair, mm_answer_fn fn, uint64_t id, uint64_t id2)
{
	struct query *q = malloc(sizeof(*q));
	if (!q)
		return -1;
	*q = (struct query){mm, fn, id, id2};
	if (sn_caw_gather_start(mm->sn, set, var, op, value, pair, answered, q) < 0) {
		free(q);
		return -1;
	}
	return 0;
}

int mm_query_write(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
		   uint64_t value, bool do_write, uint64_t write_off, uint64_t write_val,
		   mm_answer_fn fn, uint64_t id, uint64_t id2)
{
	struct query *q = malloc(sizeof(*q));
	if (!q)
		return -1;
	*q = (struct query){mm, fn, id, id2};
	if (sn_caw_start(mm->sn, set, var, op, value, do_write, write_off, write_val, answered,
			 q) < 0) {
		free(q);
		return -1;
	}
	return 0;
}
