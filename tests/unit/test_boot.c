/* The registration protocol's messages (common/boot_wire.h): round trips,
 * every truncation and trailing byte refused, the session key bound to the
 * cluster key, the name and both nonces, and a frame tagged with one key
 * refused under another (as the MM refuses a wrong cluster key). */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "boot_wire.h"
#include "suites.h"

static void test_hello_challenge(void)
{
	uint8_t nonce[BOOT_NONCE_LEN], buf[512];
	for (int i = 0; i < BOOT_NONCE_LEN; i++)
		nonce[i] = (uint8_t)(i + 1);
	int n = boot_enc_hello(buf, sizeof(buf), "node07", nonce);
	CU_ASSERT_FATAL(n > 0);
	struct boot_msg m;
	const char *why = "";
	CU_ASSERT_EQUAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	CU_ASSERT_EQUAL(m.type, BOOT_HELLO);
	CU_ASSERT_STRING_EQUAL(m.name, "node07");
	CU_ASSERT_EQUAL(memcmp(m.nonce, nonce, BOOT_NONCE_LEN), 0);
	for (int k = 0; k < n; k++)
		CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)k, &m, &why), 0);
	buf[n] = 0;
	CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)n + 1, &m, &why), 0);
	CU_ASSERT_STRING_EQUAL(why, "trailing bytes");
	CU_ASSERT_EQUAL(boot_enc_hello(buf, 10, "node07", nonce), -ENOSPC);
	CU_ASSERT_EQUAL(boot_enc_hello(buf, sizeof(buf), "", nonce), -EINVAL);
	n = boot_enc_challenge(buf, sizeof(buf), nonce);
	CU_ASSERT_EQUAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	CU_ASSERT_EQUAL(m.type, BOOT_CHALLENGE);
	buf[0] = 77;
	CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)n, &m, &why), 0);
}

static void fill(struct boot_entry *e, uint32_t id, uint8_t rails, uint16_t len)
{
	memset(e, 0, sizeof(*e));
	e->id = id;
	e->nrails = rails;
	for (int r = 0; r < rails; r++) {
		e->len[r] = len;
		for (int i = 0; i < len; i++)
			e->addr[r][i] = (uint8_t)(id * 31 + r * 7 + i);
	}
}

static void test_register_table(void)
{
	static uint8_t buf[8192];
	struct boot_entry e[3], got;
	fill(&e[0], 0, 1, 16);
	fill(&e[1], 5, 2, 200);
	fill(&e[2], 999, 1, BOOT_ADDR_MAX);
	int n = boot_enc_register(buf, sizeof(buf), &e[1], 0x1122334455667788ull);
	struct boot_msg m;
	const char *why = "";
	CU_ASSERT_EQUAL_FATAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	CU_ASSERT_EQUAL(m.type, BOOT_REGISTER);
	CU_ASSERT_EQUAL(m.self.nrails, 2);
	CU_ASSERT_EQUAL(memcmp(m.self.addr[1], e[1].addr[1], 200), 0);
	CU_ASSERT_EQUAL(m.incarnation, 0x1122334455667788ull);
	for (int k = 0; k < n; k++)
		CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)k, &m, &why), 0);
	/* a daemon always has an incarnation: none is a malformed message */
	CU_ASSERT_EQUAL(boot_enc_register(buf, sizeof(buf), &e[1], 0), -EINVAL);
	memset(buf + n - 8, 0, 8);
	CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)n, &m, &why), 0);

	const struct boot_entry *p[3] = {&e[0], &e[1], &e[2]};
	n = boot_enc_table(buf, sizeof(buf), p, 3);
	CU_ASSERT_FATAL(n > 0 && (size_t)n <= boot_table_max(3));
	CU_ASSERT_EQUAL_FATAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	CU_ASSERT_EQUAL(m.nentries, 3);
	size_t pos = 0;
	for (int i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(boot_table_next(&m, &pos, &got), 1);
		CU_ASSERT_EQUAL(got.id, e[i].id);
		CU_ASSERT_EQUAL(got.nrails, e[i].nrails);
		CU_ASSERT_EQUAL(memcmp(got.addr, e[i].addr, sizeof(got.addr)), 0);
	}
	CU_ASSERT_EQUAL(boot_table_next(&m, &pos, &got), 0);
	for (int k = 0; k < n; k++)
		CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)k, &m, &why), 0);
	/* a count beyond the entries there */
	buf[4] = 4;
	CU_ASSERT_NOT_EQUAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	/* bad entries are not encoded */
	fill(&e[0], 0, 1, 16);
	e[0].nrails = 3;
	CU_ASSERT_EQUAL(boot_enc_register(buf, sizeof(buf), &e[0], 1), -EINVAL);
	fill(&e[0], 0, 1, 0);
	CU_ASSERT_EQUAL(boot_enc_register(buf, sizeof(buf), &e[0], 1), -EINVAL);
}

static void test_error_text(void)
{
	uint8_t buf[BOOT_TEXT_MAX + 16];
	int n = boot_enc_error(buf, sizeof(buf), "unknown node\nname");
	struct boot_msg m;
	const char *why = "";
	CU_ASSERT_EQUAL_FATAL(boot_decode(buf, (size_t)n, &m, &why), 0);
	CU_ASSERT_EQUAL(m.type, BOOT_ERROR);
	/* printed on one line */
	CU_ASSERT_STRING_EQUAL(m.text, "unknown node?name");
}

static void test_session_key(void)
{
	uint8_t k1[GM_KEY_LEN] = {1}, k2[GM_KEY_LEN] = {2}, a[BOOT_NONCE_LEN] = {3},
		b[BOOT_NONCE_LEN] = {4}, s1[CTL_KEY_LEN], s2[CTL_KEY_LEN];
	boot_session_key(k1, "node00", a, b, s1);
	boot_session_key(k1, "node00", a, b, s2);
	CU_ASSERT_EQUAL(memcmp(s1, s2, CTL_KEY_LEN), 0);
	boot_session_key(k2, "node00", a, b, s2);
	CU_ASSERT_NOT_EQUAL(memcmp(s1, s2, CTL_KEY_LEN), 0);
	boot_session_key(k1, "node01", a, b, s2);
	CU_ASSERT_NOT_EQUAL(memcmp(s1, s2, CTL_KEY_LEN), 0);
	boot_session_key(k1, "node00", b, a, s2);
	CU_ASSERT_NOT_EQUAL(memcmp(s1, s2, CTL_KEY_LEN), 0);

	/* a REGISTER tagged under another cluster key does not verify */
	struct ctl_session node, mm;
	ctl_session_init(&node, false, NULL, 0);
	ctl_session_init(&mm, true, NULL, 0);
	boot_session_key(k2, "node00", a, b, node.key);
	boot_session_key(k1, "node00", a, b, mm.key);
	node.keyed = mm.keyed = true;
	uint8_t body[3] = {BOOT_REGISTER, 0, 0}, *env = NULL;
	size_t len = 0;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(ctl_auth_wrap(&node, body, sizeof(body), &env, &len, err,
					    sizeof(err)), 0);
	const uint8_t *out;
	size_t olen;
	bool plain;
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&mm, env, len, &out, &olen, &plain, err, sizeof(err)),
			CTL_AUTH_BAD_TAG);
	free(env);
	/* under the same key it does */
	boot_session_key(k1, "node00", a, b, node.key);
	node.tx_seq = 0;
	CU_ASSERT_EQUAL_FATAL(ctl_auth_wrap(&node, body, sizeof(body), &env, &len, err,
					    sizeof(err)), 0);
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&mm, env, len, &out, &olen, &plain, err, sizeof(err)),
			CTL_AUTH_OK);
	free(env);
	size_t pl;
	uint8_t *p = boot_plain(body, sizeof(body), &pl);
	CU_ASSERT(p && pl == 4 && p[0] == CTL_ENV_PLAIN);
	free(p);
}

void add_boot_suite(void)
{
	CU_pSuite s = CU_add_suite("boot", NULL, NULL);
	CU_add_test(s, "hello and challenge", test_hello_challenge);
	CU_add_test(s, "register and table", test_register_table);
	CU_add_test(s, "error text", test_error_text);
	CU_add_test(s, "session key", test_session_key);
}
