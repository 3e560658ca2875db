/* The schedule ahead (common/ahead.c): the slice grid, holding after K
 * missed strobes, the clock offset estimate, the strobe's size limit, and
 * the held schedule as /dev/storm entries (daemons/node/kswitch_map.c). */
#include <CUnit/CUnit.h>

#include "ahead.h"
#include "../../daemons/node/kswitch_map.h"
#include "suites.h"

#define MS 1000000ull

static void test_grid(void)
{
	/* origin 5 ms, 1 ms slices */
	CU_ASSERT_EQUAL(ahead_slice_start(5 * MS, MS, 5 * MS), 5 * MS);
	CU_ASSERT_EQUAL(ahead_slice_start(5 * MS, MS, 7 * MS + 999999), 7 * MS);
	CU_ASSERT_EQUAL(ahead_slice_start(5 * MS, MS, 8 * MS), 8 * MS);
	/* before the origin (a clock read early): the origin */
	CU_ASSERT_EQUAL(ahead_slice_start(5 * MS, MS, 1 * MS), 5 * MS);
	/* a late tick: the grid points it slept through */
	CU_ASSERT_EQUAL(ahead_slices_since(7 * MS, MS, 7 * MS), 0);
	CU_ASSERT_EQUAL(ahead_slices_since(7 * MS, MS, 8 * MS), 1);
	CU_ASSERT_EQUAL(ahead_slices_since(7 * MS, MS, 10 * MS), 3);
	CU_ASSERT_EQUAL(ahead_slices_since(7 * MS, MS, 6 * MS), 0);
}

/* a node's held schedule from one strobe: slot 0 at 10 ms, then K = 4 */
static void hold(struct ahead_sched *a)
{
	a->n = 5;
	a->done = 0;
	for (unsigned i = 0; i < 5; i++)
		a->e[i] = (struct ahead_entry){ .deadline_ns = (10 + i) * MS,
						.switches = 7 + i,
						.run = i % 2 ? 2 : 1,
						.row = (int32_t)(i % 2) };
}

static void test_hold_after_k(void)
{
	struct ahead_sched a;
	hold(&a);
	/* nothing due before slot 0 */
	CU_ASSERT_EQUAL(ahead_take_due(&a, 9 * MS), -1);
	CU_ASSERT_EQUAL(ahead_next_deadline(&a), 10 * MS);
	CU_ASSERT_EQUAL(ahead_take_due(&a, 10 * MS), 0);
	CU_ASSERT_EQUAL(ahead_take_due(&a, 10 * MS + 1), -1); /* done once */
	CU_ASSERT_EQUAL(ahead_next_deadline(&a), 11 * MS);
	/* no strobe comes: the timer follows the held slots... */
	CU_ASSERT_EQUAL(ahead_take_due(&a, 11 * MS + 5), 1);
	CU_ASSERT_EQUAL(ahead_take_due(&a, 12 * MS), 2);
	/* ...a late timer takes the latest due slot, skipping the one passed */
	CU_ASSERT_EQUAL(ahead_take_due(&a, 14 * MS + 3), 4);
	CU_ASSERT_EQUAL(a.e[4].run, 1);
	/* after K slots: nothing more, the node holds the last */
	CU_ASSERT_EQUAL(ahead_next_deadline(&a), 0);
	CU_ASSERT_EQUAL(ahead_take_due(&a, 100 * MS), -1);
}

static void test_strobe_size(void)
{
	/* small clusters get the K asked for; K never exceeds the maximum */
	CU_ASSERT_EQUAL(strobe_ahead_fit(8, 4), 4);
	CU_ASSERT_EQUAL(strobe_ahead_fit(8, 100), STROBE_AHEAD_MAX);
	CU_ASSERT_EQUAL(strobe_ahead_fit(8, 0), 0);
	/* the largest shrinks K until the strobe fits its area */
	unsigned k = strobe_ahead_fit(STORM_MAX_NODES, 4);
	CU_ASSERT_TRUE(k < 4);
	CU_ASSERT_TRUE(strobe_size(STORM_MAX_NODES, k) <= GM_STROBE_MAX);
	CU_ASSERT_TRUE(strobe_size(STORM_MAX_NODES, k + 1) > GM_STROBE_MAX);
	/* the layout: slots after ack and run, then the K run lists */
	CU_ASSERT_EQUAL(strobe_ahead_size(8, 0), 0);
	CU_ASSERT_EQUAL(strobe_ahead_size(8, 2), 3 * sizeof(struct strobe_slot) + 2 * 8 * 8);
}

static void test_clock_offset(void)
{
	struct clk_est c = { 0 };
	/* no estimate: the MM's times are taken as ours */
	CU_ASSERT_EQUAL(clk_to_local(&c, 123), 123);
	/* MM clock = node clock + 1000; 100 each way, 10 inside the MM */
	clk_est_sample(&c, 5000, 6100, 6110, 5210);
	CU_ASSERT_TRUE(c.valid);
	CU_ASSERT_EQUAL(c.offset_ns, 1000);
	CU_ASSERT_EQUAL(c.rtt_ns, 200);
	CU_ASSERT_EQUAL(clk_to_local(&c, 9000), 8000);
	/* an asymmetric, slower exchange does not replace the better one */
	clk_est_sample(&c, 10000, 11900, 11910, 10220);
	CU_ASSERT_EQUAL(c.offset_ns, 1000);
	/* a quicker one does: its error bound is smaller */
	clk_est_sample(&c, 20000, 21040, 21050, 20090);
	CU_ASSERT_EQUAL(c.rtt_ns, 80);
	CU_ASSERT_EQUAL(c.offset_ns, 1000);
	/* a negative offset (the MM behind) */
	struct clk_est d = { 0 };
	clk_est_sample(&d, 5000, 4100, 4100, 5200);
	CU_ASSERT_EQUAL(d.offset_ns, -1000);
	CU_ASSERT_EQUAL(clk_to_local(&d, 4000), 5000);
	/* out-of-order stamps are no sample */
	struct clk_est e = { 0 };
	clk_est_sample(&e, 5000, 6000, 5900, 5100);
	CU_ASSERT_FALSE(e.valid);
	/* the kept sample ages out after a window, so drift is followed */
	for (int i = 0; i < CLK_WINDOW; i++)
		clk_est_sample(&c, 30000, 32000 + 100, 32000 + 110, 30500);
	CU_ASSERT_EQUAL(c.offset_ns, 1855);
	/* within the window the quickest exchange stays the estimate: slower
	 * ones after it do not replace it until it has left the window */
	clk_est_sample(&c, 40000, 42020, 42030, 40050); /* rtt 40, offset 2000 */
	for (int i = 0; i < CLK_WINDOW - 1; i++)
		clk_est_sample(&c, 50000, 52300, 52310, 50700);
	CU_ASSERT_EQUAL(c.rtt_ns, 40);
	CU_ASSERT_EQUAL(c.offset_ns, 2000);
	clk_est_sample(&c, 50000, 52300, 52310, 50700); /* it leaves */
	CU_ASSERT_EQUAL(c.rtt_ns, 690);
}

static void test_kswitch_entries(void)
{
	struct ahead_sched a;
	struct storm_entry e[STROBE_AHEAD_MAX + 1];
	hold(&a);
	/* slot 0 due and its job already running: only the slots ahead */
	unsigned n = kswitch_entries(&a, 10 * MS + 50, 1, e, STROBE_AHEAD_MAX + 1);
	CU_ASSERT_EQUAL(n, 4);
	CU_ASSERT_EQUAL(e[0].deadline_ns, 11 * MS);
	CU_ASSERT_EQUAL(e[0].job_id, 2);
	CU_ASSERT_EQUAL(e[0].row, 1);
	CU_ASSERT_EQUAL(e[3].deadline_ns, 14 * MS);
	/* the wrong job runs (a late strobe corrects it): a switch now leads */
	n = kswitch_entries(&a, 12 * MS + 50, 2, e, STROBE_AHEAD_MAX + 1);
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(e[0].deadline_ns, 12 * MS + 50);
	CU_ASSERT_EQUAL(e[0].job_id, 1);
	CU_ASSERT_EQUAL(e[1].deadline_ns, 13 * MS);
	for (unsigned i = 1; i < n; i++)
		CU_ASSERT_TRUE(e[i].deadline_ns > e[i - 1].deadline_ns);
	/* all past: the last one, now, if it is not running */
	n = kswitch_entries(&a, 20 * MS, 2, e, STROBE_AHEAD_MAX + 1);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(e[0].job_id, 1);
	CU_ASSERT_EQUAL(kswitch_entries(&a, 20 * MS, 1, e, STROBE_AHEAD_MAX + 1), 0);
	/* a job released after a checkpoint is stopped though its allocation
	 * runs: kswitch.c passes running 0, and the due entry goes again */
	n = kswitch_entries(&a, 20 * MS, 0, e, STROBE_AHEAD_MAX + 1);
	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(e[0].job_id, 1);
	CU_ASSERT_EQUAL(e[0].deadline_ns, 20 * MS);
	/* bounded by the room given; row -1 (idle) maps to 0 */
	a.e[1].row = -1;
	CU_ASSERT_EQUAL(kswitch_entries(&a, 0, 0, e, 2), 2);
	CU_ASSERT_EQUAL(e[1].row, 0);
}

void add_ahead_suite(void)
{
	CU_pSuite s = CU_add_suite("ahead", NULL, NULL);
	CU_add_test(s, "the slice grid and slices slept through", test_grid);
	CU_add_test(s, "a node holds after its K slots", test_hold_after_k);
	CU_add_test(s, "K fits the strobe area", test_strobe_size);
	CU_add_test(s, "clock offset by least round trip", test_clock_offset);
	CU_add_test(s, "held schedule as /dev/storm entries", test_kswitch_entries);
}
