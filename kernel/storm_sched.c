/* The schedule queue, deadline arithmetic and ring indexing of storm.ko, kept
 * free of kernel calls so the unit tests run them in user space. */
#ifdef __KERNEL__
#include <linux/errno.h>
#include <linux/string.h>
#else
#include <errno.h>
#include <string.h>
#endif

#include "storm_sched.h"

void storm_queue_init(struct storm_queue *q)
{
	q->first = q->count = 0;
}

static const struct storm_entry *at(const struct storm_queue *q, __u32 i)
{
	return &q->e[(q->first + i) % STORM_QUEUE_MAX];
}

int storm_queue_push(struct storm_queue *q, const struct storm_entry *e, __u32 n)
{
	if (n > STORM_QUEUE_MAX - q->count)
		return -ENOSPC;
	bool have_last = q->count > 0;
	__u64 last = have_last ? at(q, q->count - 1)->deadline_ns : 0;
	for (__u32 i = 0; i < n; i++) {
		if (e[i].flags || (have_last && e[i].deadline_ns <= last))
			return -EINVAL;
		last = e[i].deadline_ns;
		have_last = true;
	}
	for (__u32 i = 0; i < n; i++)
		q->e[(q->first + q->count + i) % STORM_QUEUE_MAX] = e[i];
	q->count += n;
	return 0;
}

const struct storm_entry *storm_queue_peek(const struct storm_queue *q)
{
	return q->count ? at(q, 0) : NULL;
}

bool storm_queue_pop(struct storm_queue *q, struct storm_entry *out)
{
	if (!q->count)
		return false;
	*out = *at(q, 0);
	q->first = (q->first + 1) % STORM_QUEUE_MAX;
	q->count--;
	return true;
}

__s64 storm_lateness_ns(__u64 deadline_ns, __u64 now_ns)
{
	const __u64 max = (__u64)1 << 63;
	if (now_ns >= deadline_ns)
		return now_ns - deadline_ns >= max ? (__s64)(max - 1) : (__s64)(now_ns - deadline_ns);
	return deadline_ns - now_ns >= max ? -(__s64)(max - 1) : -(__s64)(deadline_ns - now_ns);
}

__u64 storm_ring_catch_up(__u64 head, __u64 *tail, __u32 records)
{
	if (*tail > head)
		*tail = head; /* a reader ahead of the writer: the ring was reset */
	if (head - *tail <= records)
		return 0;
	__u64 lost = head - *tail - records;
	*tail = head - records;
	return lost;
}
