/* Test-only fault injection points: parsing and firing once. */
#include <CUnit/CUnit.h>
#include <stdlib.h>

#include "fault.h"
#include "suites.h"

static void test_parse(void)
{
	struct fault f;
	CU_ASSERT_TRUE(fault_parse(&f, "report=6,replay=12,strobe=150"));
	CU_ASSERT_EQUAL(fault_value(&f, "report"), 6);
	CU_ASSERT_EQUAL(fault_value(&f, "replay"), 12);
	CU_ASSERT_EQUAL(fault_value(&f, "strobe"), 150);
	CU_ASSERT_EQUAL(fault_value(&f, "other"), 0);
	/* a point armed twice names two values */
	CU_ASSERT_TRUE(fault_parse(&f, "refuse=2,other=3,refuse=5"));
	CU_ASSERT_TRUE(fault_is(&f, "refuse", 2));
	CU_ASSERT_TRUE(fault_is(&f, "refuse", 5));
	CU_ASSERT_FALSE(fault_is(&f, "refuse", 3));
	CU_ASSERT_FALSE(fault_is(&f, "other", 2));
	const char *bad[] = { "", "report", "=3", "report=", "report=x", "report=3;x",
			      "report=0", "a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9",
			      "averyveryverylongpointname=1", NULL };
	for (int i = 0; bad[i]; i++) {
		CU_ASSERT_FALSE(fault_parse(&f, bad[i]));
		CU_ASSERT_FALSE(fault_armed(&f));
	}
	CU_ASSERT_FALSE(fault_parse(&f, NULL));
}

static void test_hit_once(void)
{
	struct fault f;
	CU_ASSERT_TRUE(fault_parse(&f, "strobe=3"));
	CU_ASSERT_FALSE(fault_hit(&f, "strobe", 2));
	CU_ASSERT_FALSE(fault_hit(&f, "report", 3));
	CU_ASSERT_TRUE(fault_hit(&f, "strobe", 3));
	CU_ASSERT_FALSE(fault_hit(&f, "strobe", 3));
	/* a value past K also reaches it (job ids, slices caught up) */
	CU_ASSERT_TRUE(fault_parse(&f, "end_check=4"));
	CU_ASSERT_TRUE(fault_hit(&f, "end_check", 6));
	CU_ASSERT_FALSE(fault_hit(&f, "end_check", 7));
}

static void test_env(void)
{
	struct fault f;
	setenv("STORM_TEST_TAMPER", "strobe=9", 1);
	setenv("STORM_TEST_TAMPER_NODE", "node01", 1);
	fault_init(&f, "node02");
	CU_ASSERT_FALSE(fault_armed(&f)); /* another node's */
	fault_init(&f, "node01");
	CU_ASSERT_EQUAL(fault_value(&f, "strobe"), 9);
	fault_init(&f, NULL); /* the MM takes its points whatever the node */
	CU_ASSERT_EQUAL(fault_value(&f, "strobe"), 9);
	unsetenv("STORM_TEST_TAMPER_NODE");
	fault_init(&f, "node01");
	CU_ASSERT_FALSE(fault_armed(&f)); /* no node named: nodes stay honest */
	fault_init(&f, NULL);
	CU_ASSERT_TRUE(fault_armed(&f));
	unsetenv("STORM_TEST_TAMPER");
	fault_init(&f, NULL);
	CU_ASSERT_FALSE(fault_armed(&f));
}

void add_fault_suite(void)
{
	CU_pSuite s = CU_add_suite("fault", NULL, NULL);
	CU_add_test(s, "points parse, malformed specs arm nothing", test_parse);
	CU_add_test(s, "a point fires once at its value", test_hit_once);
	CU_add_test(s, "the environment, confined to one node", test_env);
}
