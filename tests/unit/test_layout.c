#include <CUnit/CUnit.h>
#include <stdint.h>

#include "layout.h"
#include "suites.h"

/* Command seq overwrites the command seq - GM_CMD_SLOTS in its slot: it
 * may go only once every node took that one, and it may go then: the ring
 * holds GM_CMD_SLOTS commands not yet taken, never fewer. */
static void test_cmd_reuse(void)
{
	for (uint32_t seq = 1; seq < 5 * GM_CMD_SLOTS; seq++) {
		uint32_t next = seq + GM_CMD_SLOTS; /* the slot's next command */
		CU_ASSERT_EQUAL(GM_CMD_SLOT(next), GM_CMD_SLOT(seq));
		CU_ASSERT_NOT_EQUAL(GM_CMD_SLOT(next - 1), GM_CMD_SLOT(seq));
		CU_ASSERT_EQUAL(GM_CMD_REUSE_DONE(next), seq);
	}
	/* the first GM_CMD_SLOTS commands wait for no one */
	for (uint32_t seq = 1; seq <= GM_CMD_SLOTS; seq++)
		CU_ASSERT_EQUAL(GM_CMD_REUSE_DONE(seq), 0);
}

/* A node leased out of its heartbeat is silent for at most the lease and
 * one heartbeat after it, counted from the round the MM credits it with;
 * that must stay within three quarters of the slices a node may be silent,
 * for every configuration the configuration check allows (report_every at
 * most half of them). */
static void test_quiet_lease(void)
{
	for (unsigned down = 2; down <= 2000; down++)
		for (unsigned every = 1; every * 2 <= down; every++) {
			unsigned l = gm_quiet_lease(every, down);
			CU_ASSERT(l <= 3 * every);
			CU_ASSERT(4 * (l + every) <= 3 * down);
		}
	/* the default (report_every 10, 500 slices): three rounds */
	CU_ASSERT_EQUAL(gm_quiet_lease(10, 500), 30);
}

void add_layout_suite(void)
{
	CU_pSuite s = CU_add_suite("layout", NULL, NULL);
	CU_add_test(s, "a command slot is reused only once its command was taken", test_cmd_reuse);
	CU_add_test(s, "a quiet node's silence stays within the liveness bound", test_quiet_lease);
}
