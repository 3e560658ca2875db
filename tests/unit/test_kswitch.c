/* storm.ko's pure parts in user space: the schedule queue, lateness, ring
 * indexing (kernel/storm_sched.c), and the ABI's fixed layout. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stddef.h>

#include "storm_sched.h"
#include "suites.h"

static struct storm_entry ent(__u64 deadline, __u64 job)
{
	return (struct storm_entry){ .deadline_ns = deadline, .job_id = job };
}

static void test_queue_order(void)
{
	static struct storm_queue q;
	struct storm_entry e[3] = { ent(10, 1), ent(20, 2), ent(30, 0) }, out;
	storm_queue_init(&q);
	CU_ASSERT_PTR_NULL(storm_queue_peek(&q));
	CU_ASSERT_FALSE(storm_queue_pop(&q, &out));
	CU_ASSERT_EQUAL(storm_queue_push(&q, e, 3), 0);
	CU_ASSERT_EQUAL(storm_queue_peek(&q)->deadline_ns, 10);
	CU_ASSERT_TRUE(storm_queue_pop(&q, &out));
	CU_ASSERT_EQUAL(out.job_id, 1);
	/* appended entries must come after the last one queued, not the first */
	struct storm_entry late = ent(25, 1), later = ent(31, 1);
	CU_ASSERT_EQUAL(storm_queue_push(&q, &late, 1), -EINVAL);
	CU_ASSERT_EQUAL(storm_queue_push(&q, &later, 1), 0);
	CU_ASSERT_EQUAL(q.count, 3);
	__u64 want[] = { 20, 30, 31 };
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_TRUE(storm_queue_pop(&q, &out));
		CU_ASSERT_EQUAL(out.deadline_ns, want[i]);
	}
	CU_ASSERT_EQUAL(q.count, 0);
	/* once drained, any deadline starts it again */
	struct storm_entry early = ent(5, 2);
	CU_ASSERT_EQUAL(storm_queue_push(&q, &early, 1), 0);
}

static void test_queue_all_or_none(void)
{
	static struct storm_queue q;
	struct storm_entry bad[3] = { ent(10, 1), ent(20, 2), ent(20, 1) };
	storm_queue_init(&q);
	CU_ASSERT_EQUAL(storm_queue_push(&q, bad, 3), -EINVAL);
	CU_ASSERT_EQUAL(q.count, 0); /* nothing of a refused batch stays */
	bad[2].deadline_ns = 30;
	bad[1].flags = 1;
	CU_ASSERT_EQUAL(storm_queue_push(&q, bad, 3), -EINVAL);
	CU_ASSERT_EQUAL(q.count, 0);
}

/* the ring of entries wraps: fill, drain some, refill past the end */
static void test_queue_wraps(void)
{
	static struct storm_queue q;
	static struct storm_entry e[STORM_QUEUE_MAX + 1];
	struct storm_entry out;
	storm_queue_init(&q);
	for (int i = 0; i <= STORM_QUEUE_MAX; i++)
		e[i] = ent(100 + (__u64)i, (__u64)i);
	CU_ASSERT_EQUAL(storm_queue_push(&q, e, STORM_QUEUE_MAX + 1), -ENOSPC);
	CU_ASSERT_EQUAL(storm_queue_push(&q, e, STORM_QUEUE_MAX), 0);
	struct storm_entry one = ent(1000, 7);
	CU_ASSERT_EQUAL(storm_queue_push(&q, &one, 1), -ENOSPC);
	for (int i = 0; i < 10; i++)
		storm_queue_pop(&q, &out);
	struct storm_entry more[10];
	for (int i = 0; i < 10; i++)
		more[i] = ent(1000 + (__u64)i, 500 + (__u64)i);
	CU_ASSERT_EQUAL(storm_queue_push(&q, more, 10), 0);
	__u64 prev = 0;
	int n = 0;
	while (storm_queue_pop(&q, &out)) {
		CU_ASSERT(out.deadline_ns > prev);
		prev = out.deadline_ns;
		n++;
	}
	CU_ASSERT_EQUAL(n, STORM_QUEUE_MAX);
	CU_ASSERT_EQUAL(prev, 1009);
}

static void test_lateness(void)
{
	CU_ASSERT_EQUAL(storm_lateness_ns(1000, 1500), 500);
	CU_ASSERT_EQUAL(storm_lateness_ns(1500, 1000), -500);
	CU_ASSERT_EQUAL(storm_lateness_ns(7, 7), 0);
	CU_ASSERT(storm_lateness_ns(0, ~0ULL) > 0); /* saturates, no wrap to negative */
	CU_ASSERT(storm_lateness_ns(~0ULL, 0) < 0);
}

static void test_ring(void)
{
	CU_ASSERT_EQUAL(storm_ring_slot(0, 8), 0);
	CU_ASSERT_EQUAL(storm_ring_slot(9, 8), 1);
	CU_ASSERT_EQUAL(storm_ring_slot((1ULL << 40) + 3, 512), 3);
	__u64 tail = 2;
	CU_ASSERT_EQUAL(storm_ring_catch_up(10, &tail, 8), 0);
	CU_ASSERT_EQUAL(tail, 2);
	CU_ASSERT_EQUAL(storm_ring_avail(10, tail), 8);
	CU_ASSERT_EQUAL(storm_ring_catch_up(13, &tail, 8), 3); /* 2, 3, 4 overwritten */
	CU_ASSERT_EQUAL(tail, 5);
	tail = 20; /* ahead of the writer: the module was reloaded */
	CU_ASSERT_EQUAL(storm_ring_catch_up(4, &tail, 8), 0);
	CU_ASSERT_EQUAL(tail, 4);
	CU_ASSERT_EQUAL(storm_ring_avail(4, tail), 0);
}

/* the layout user space and the module agree on, whatever the compiler */
static void test_abi_layout(void)
{
	CU_ASSERT_EQUAL(sizeof(struct storm_entry), 24);
	CU_ASSERT_EQUAL(sizeof(struct storm_job_reg), 24);
	CU_ASSERT_EQUAL(offsetof(struct storm_job_reg, run_id), 16);
	CU_ASSERT_EQUAL(sizeof(struct storm_push), 16);
	CU_ASSERT_EQUAL(sizeof(struct storm_info), 56);
	CU_ASSERT_EQUAL(sizeof(struct storm_record), 96);
	CU_ASSERT_EQUAL(offsetof(struct storm_record, flags), 92);
	CU_ASSERT_EQUAL(sizeof(struct storm_ring_hdr), 24);
	CU_ASSERT_EQUAL(sizeof(struct storm_slice_page), 56);
	CU_ASSERT_NOT_EQUAL(STORM_IOC_PUSH, STORM_IOC_REGISTER);
	CU_ASSERT_NOT_EQUAL(STORM_IOC_HOLD, STORM_IOC_RELEASE);
	CU_ASSERT_EQUAL(STORM_ABI_VERSION, 2);
}

void add_kswitch_suite(void)
{
	CU_pSuite s = CU_add_suite("kswitch", NULL, NULL);
	CU_add_test(s, "schedule queue keeps deadline order", test_queue_order);
	CU_add_test(s, "a refused batch leaves nothing", test_queue_all_or_none);
	CU_add_test(s, "schedule queue wraps and fills", test_queue_wraps);
	CU_add_test(s, "lateness saturates", test_lateness);
	CU_add_test(s, "ring slots and a lagging reader", test_ring);
	CU_add_test(s, "ABI layout", test_abi_layout);
}
