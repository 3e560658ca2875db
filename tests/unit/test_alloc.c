/* First-fit node allocation. */
#include <CUnit/CUnit.h>

#include "alloc.h"
#include "suites.h"

static void test_first_fit(void)
{
	struct alloc a;
	CU_ASSERT_EQUAL_FATAL(alloc_init(&a, 8), 0);
	int out[8];
	CU_ASSERT_EQUAL(alloc_take(&a, 1, out), -1); /* nothing up yet */
	for (int i = 0; i < 8; i++)
		alloc_set_up(&a, i, i != 2);
	CU_ASSERT_EQUAL(alloc_up(&a), 7);
	CU_ASSERT_EQUAL(alloc_take(&a, 3, out), 0);
	CU_ASSERT(out[0] == 0 && out[1] == 1 && out[2] == 3); /* skips the down node */
	CU_ASSERT_EQUAL(alloc_available(&a), 4);
	CU_ASSERT_EQUAL(alloc_take(&a, 5, out), -1); /* not enough: takes nothing */
	CU_ASSERT_EQUAL(alloc_available(&a), 4);
	int first[3] = { 0, 1, 3 };
	alloc_release(&a, first, 3);
	CU_ASSERT_EQUAL(alloc_take(&a, 7, out), 0);
	CU_ASSERT_EQUAL(out[6], 7);
	CU_ASSERT_EQUAL(alloc_take(&a, 0, out), -1);
	alloc_free(&a);
}

void add_alloc_suite(void)
{
	CU_pSuite s = CU_add_suite("alloc", NULL, NULL);
	CU_add_test(s, "first fit over up, free nodes", test_first_fit);
}
