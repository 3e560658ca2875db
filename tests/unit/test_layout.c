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

void add_layout_suite(void)
{
	CU_pSuite s = CU_add_suite("layout", NULL, NULL);
	CU_add_test(s, "a command slot is reused only once its command was taken", test_cmd_reuse);
}
