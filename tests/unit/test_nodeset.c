#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "nodeset.h"
#include "suites.h"

static void test_basic(void)
{
	struct sn_nodeset s;
	sn_set_clear(&s);
	CU_ASSERT(sn_set_empty(&s));
	CU_ASSERT_EQUAL(sn_set_span(&s), 0);
	CU_ASSERT_EQUAL(sn_set_next(&s, 0), UINT32_MAX);
	sn_set_add(&s, 0);
	sn_set_add(&s, 63);
	sn_set_add(&s, 64);
	sn_set_add(&s, SN_MAX_NODES - 1);
	sn_set_add(&s, SN_MAX_NODES); /* ignored */
	CU_ASSERT_EQUAL(sn_set_count(&s), 4);
	CU_ASSERT(sn_set_has(&s, 63) && sn_set_has(&s, 64) && !sn_set_has(&s, 65));
	CU_ASSERT_EQUAL(sn_set_next(&s, 1), 63);
	CU_ASSERT_EQUAL(sn_set_next(&s, 65), SN_MAX_NODES - 1);
	CU_ASSERT_EQUAL(sn_set_span(&s), SN_MAX_NODES);
	sn_set_del(&s, 63);
	CU_ASSERT_EQUAL(sn_set_next(&s, 1), 64);
	CU_ASSERT_FALSE(sn_set_has(&s, SN_MAX_NODES + 5));
}

static void test_ops(void)
{
	struct sn_nodeset a, b, c;
	sn_set_clear(&a);
	sn_set_clear(&b);
	sn_set_range(&a, 0, 9);
	sn_set_range(&b, 5, 14);
	c = a;
	sn_set_or(&c, &b);
	CU_ASSERT_EQUAL(sn_set_count(&c), 15);
	c = a;
	sn_set_andnot(&c, &b);
	CU_ASSERT_EQUAL(sn_set_count(&c), 5);
	CU_ASSERT(sn_set_has(&c, 4) && !sn_set_has(&c, 5));
	CU_ASSERT_FALSE(sn_set_equal(&a, &b));
	c = a;
	CU_ASSERT(sn_set_equal(&a, &c));
}

static void test_wire_roundtrip(void)
{
	for (uint32_t nbits = 1; nbits <= 130; nbits += 7) {
		struct sn_nodeset s, d;
		uint8_t buf[SN_MAX_NODES / 8];
		sn_set_clear(&s);
		for (uint32_t i = 0; i < nbits; i += 3)
			sn_set_add(&s, i);
		sn_set_add(&s, nbits - 1);
		sn_set_encode(&s, nbits, buf);
		CU_ASSERT_EQUAL_FATAL(sn_set_decode(&d, nbits, buf), 0);
		CU_ASSERT(sn_set_equal(&s, &d));
	}
}

static void test_wire_rejects_stray_bits(void)
{
	struct sn_nodeset d;
	uint8_t buf[2] = {0xff, 0x01}; /* bit 8 set, only 5 nodes */
	CU_ASSERT_EQUAL(sn_set_decode(&d, 5, buf), -EINVAL);
	buf[0] = 0x20; /* bit 5 of a 5-node set */
	CU_ASSERT_EQUAL(sn_set_decode(&d, 5, buf), -EINVAL);
	buf[0] = 0x1f;
	CU_ASSERT_EQUAL(sn_set_decode(&d, 5, buf), 0);
	CU_ASSERT_EQUAL(sn_set_count(&d), 5);
	CU_ASSERT_EQUAL(sn_set_decode(&d, SN_MAX_NODES + 1, buf), -EINVAL);
}

static void test_format_parse(void)
{
	struct sn_nodeset s, t;
	char buf[64];
	sn_set_clear(&s);
	sn_set_range(&s, 0, 3);
	sn_set_add(&s, 7);
	sn_set_range(&s, 9, 10);
	sn_set_format(&s, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "0-3,7,9-10");
	CU_ASSERT_EQUAL(sn_set_parse(&t, buf, 64), 0);
	CU_ASSERT(sn_set_equal(&s, &t));
	CU_ASSERT_EQUAL(sn_set_parse(&t, "", 64), 0);
	CU_ASSERT(sn_set_empty(&t));
	const char *bad[] = {"1-", "-1", "3-1", "1,,2", "a", "1,", "64", "1 2", "99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CU_ASSERT_EQUAL(sn_set_parse(&t, bad[i], 64), -EINVAL);
	/* truncation still reports the full length */
	char small[4];
	CU_ASSERT_EQUAL(sn_set_format(&s, small, sizeof(small)), (int)strlen("0-3,7,9-10"));
	CU_ASSERT_EQUAL(strlen(small), 3);
}

void add_nodeset_suite(void)
{
	CU_pSuite s = CU_add_suite("nodeset", NULL, NULL);
	CU_add_test(s, "add, delete, iterate", test_basic);
	CU_add_test(s, "union and difference", test_ops);
	CU_add_test(s, "wire round trip", test_wire_roundtrip);
	CU_add_test(s, "wire rejects bits beyond the cluster", test_wire_rejects_stray_bits);
	CU_add_test(s, "format and parse lists", test_format_parse);
}
