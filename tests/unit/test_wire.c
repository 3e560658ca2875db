#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "suites.h"
#include "wire.h"

static struct sn_msg sample(uint8_t type)
{
	struct sn_msg m = {
		.type = type, .flags = 3, .origin = 2, .opid = 77, .sender = 5, .nbits = 40,
		.fanout = 4, .budget_ms = 1000, .event = 9, .cmp = 2, .status = -5,
		.off = 8192, .total = 100, .chunk_off = 0, .value = 1ull << 40, .off2 = 4096,
		.value2 = 12,
	};
	sn_set_range(&m.set, 1, 39);
	if (type == SN_MSG_ACK)
		sn_set_add(&m.set2, 3);
	return m;
}

static void test_roundtrip(void)
{
	for (uint8_t t = 1; t < SN_MSG_TYPE_MAX; t++) {
		struct sn_msg m = sample(t), d;
		uint8_t buf[SN_WIRE_HDR_MAX + 100];
		size_t len = sn_wire_encode(&m, buf);
		CU_ASSERT_EQUAL(len, sn_wire_hdr_size(&m));
		if (t == SN_MSG_XFER) {
			m.chunk_len = 100;
			len = sn_wire_encode(&m, buf);
			memset(buf + len, 0xab, 100);
			len += 100;
		}
		const char *why = NULL;
		CU_ASSERT_EQUAL_FATAL(sn_wire_decode(buf, len, 40, &d, &why), 0);
		CU_ASSERT_EQUAL(d.type, t);
		CU_ASSERT_EQUAL(d.opid, 77);
		CU_ASSERT_EQUAL(d.status, -5);
		CU_ASSERT_EQUAL(d.value, 1ull << 40);
		CU_ASSERT(sn_set_equal(&d.set, &m.set));
		CU_ASSERT(sn_set_equal(&d.set2, &m.set2));
		if (t == SN_MSG_XFER)
			CU_ASSERT(d.payload == buf + len - 100);
	}
}

/* A chunk placed by RMA: the header alone, whose chunk_len names the bytes
 * already written; a payload with it, or a placed header too short, is refused. */
static void test_placed(void)
{
	struct sn_msg m = sample(SN_MSG_XFER), d;
	m.flags = SN_F_PLACED;
	m.chunk_len = 100;
	uint8_t buf[SN_WIRE_HDR_MAX + 100];
	size_t len = sn_wire_encode(&m, buf);
	const char *why = NULL;
	CU_ASSERT_EQUAL_FATAL(sn_wire_decode(buf, len, 40, &d, &why), 0);
	CU_ASSERT_EQUAL(d.chunk_len, 100);
	CU_ASSERT_PTR_NULL(d.payload);
	memset(buf + len, 0xab, 100);
	CU_ASSERT_NOT_EQUAL(sn_wire_decode(buf, len + 100, 40, &d, &why), 0);
	CU_ASSERT_NOT_EQUAL(sn_wire_decode(buf, len - 1, 40, &d, &why), 0);
	m.chunk_len = 101; /* beyond the transfer's 100 */
	len = sn_wire_encode(&m, buf);
	CU_ASSERT_NOT_EQUAL(sn_wire_decode(buf, len, 40, &d, &why), 0);
}

static int decode_why(const uint8_t *buf, size_t len, const char *want)
{
	struct sn_msg d;
	const char *why = "";
	int rc = sn_wire_decode(buf, len, 40, &d, &why);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, want));
	return rc;
}

static void test_rejects(void)
{
	struct sn_msg m = sample(SN_MSG_XFER);
	uint8_t buf[SN_WIRE_HDR_MAX + 200], bad[sizeof(buf)];
	m.chunk_len = 100;
	size_t len = sn_wire_encode(&m, buf) + 100;

	CU_ASSERT_EQUAL(decode_why(buf, 10, "shorter"), -EPROTO);
	memcpy(bad, buf, len);
	bad[0] ^= 1;
	CU_ASSERT_EQUAL(decode_why(bad, len, "magic"), -EPROTO);
	memcpy(bad, buf, len);
	bad[4] = 9;
	CU_ASSERT_EQUAL(decode_why(bad, len, "version"), -EPROTO);
	memcpy(bad, buf, len);
	bad[5] = SN_MSG_TYPE_MAX;
	CU_ASSERT_EQUAL(decode_why(bad, len, "type"), -EPROTO);
	CU_ASSERT_EQUAL(decode_why(buf, len - 1, "payload length"), -EPROTO);
	CU_ASSERT_EQUAL(decode_why(buf, SN_WIRE_FIXED + 2, "truncated"), -EPROTO);

	struct sn_msg o = m;
	o.origin = 40;
	sn_wire_encode(&o, bad);
	CU_ASSERT_EQUAL(decode_why(bad, len, "out of range"), -EPROTO);
	o = m;
	o.chunk_off = 50; /* 50 + 100 > total 100 */
	sn_wire_encode(&o, bad);
	CU_ASSERT_EQUAL(decode_why(bad, len, "outside the transfer"), -EPROTO);
	o = m;
	o.off = UINT64_MAX - 10;
	sn_wire_encode(&o, bad);
	CU_ASSERT_EQUAL(decode_why(bad, len, "wraps"), -EPROTO);

	struct sn_msg d;
	const char *why = "";
	CU_ASSERT_EQUAL(sn_wire_decode(buf, len, 41, &d, &why), -EPROTO); /* other cluster size */

	struct sn_msg a = sample(SN_MSG_ACK);
	size_t alen = sn_wire_encode(&a, bad);
	CU_ASSERT_EQUAL(sn_wire_decode(bad, alen, 40, &d, &why), 0);
	CU_ASSERT_EQUAL(decode_why(bad, alen + 1, "unexpected payload"), -EPROTO);
}

/* Every single-byte corruption and every truncation decodes or fails cleanly
 * (run under ASan/UBSan this also proves no read goes out of bounds). */
static void test_corruption_is_safe(void)
{
	struct sn_msg m = sample(SN_MSG_XFER), d;
	uint8_t buf[SN_WIRE_HDR_MAX + 64];
	m.chunk_len = 16;
	m.total = 16;
	size_t len = sn_wire_encode(&m, buf) + 16;
	for (size_t i = 0; i < len; i++)
		for (int bit = 0; bit < 8; bit++) {
			buf[i] ^= (uint8_t)(1u << bit);
			const char *why = "";
			int rc = sn_wire_decode(buf, len, 40, &d, &why);
			CU_ASSERT(rc == 0 || rc == -EPROTO);
			buf[i] ^= (uint8_t)(1u << bit);
		}
	for (size_t l = 0; l < len; l++) {
		const char *why = "";
		CU_ASSERT_EQUAL(sn_wire_decode(buf, l, 40, &d, &why), -EPROTO);
	}
}

void add_wire_suite(void)
{
	CU_pSuite s = CU_add_suite("wire", NULL, NULL);
	CU_add_test(s, "every message type round-trips", test_roundtrip);
	CU_add_test(s, "malformed messages are refused with a reason", test_rejects);
	CU_add_test(s, "corruption and truncation are safe", test_corruption_is_safe);
	CU_add_test(s, "a chunk placed by RMA is a header alone", test_placed);
}
