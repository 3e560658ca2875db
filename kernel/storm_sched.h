/* The module's pure parts, compiled both into storm.ko and into the unit
 * tests: the schedule queue, deadline arithmetic and ring indexing. No locks,
 * no allocation, no I/O: the caller holds whatever lock guards them. */
#ifndef STORM_SCHED_H
#define STORM_SCHED_H

#ifdef __KERNEL__
#include <linux/types.h>
#else
#include <stdbool.h>
#include <stdint.h>
#include <linux/types.h>
#endif
#include <linux/storm.h>

/* The schedule ahead: a ring of entries, deadlines strictly increasing. */
struct storm_queue {
	struct storm_entry e[STORM_QUEUE_MAX];
	__u32 first, count;
};

void storm_queue_init(struct storm_queue *q);
/* Appends n entries, all or none: -EINVAL if a deadline does not exceed the
 * one before it (or flags are set), -ENOSPC if they do not fit. */
int storm_queue_push(struct storm_queue *q, const struct storm_entry *e, __u32 n);
/* The first entry not yet due, or NULL when empty. */
const struct storm_entry *storm_queue_peek(const struct storm_queue *q);
/* Takes the first entry into *out; false when empty. */
bool storm_queue_pop(struct storm_queue *q, struct storm_entry *out);

/* How late now is against a deadline (negative: early). Saturates rather than
 * wrapping for differences beyond the signed range. */
__s64 storm_lateness_ns(__u64 deadline_ns, __u64 now_ns);

/* Ring indexing: records is a power of two. */
static inline __u32 storm_ring_slot(__u64 seq, __u32 records)
{
	return (__u32)(seq & (records - 1));
}
/* The oldest sequence number still in the ring for a reader whose next is
 * *tail, moving *tail past the ones overwritten; returns how many it lost. */
__u64 storm_ring_catch_up(__u64 head, __u64 *tail, __u32 records);
/* Records to read, at most records. */
static inline __u64 storm_ring_avail(__u64 head, __u64 tail)
{
	return head > tail ? head - tail : 0;
}

#endif
