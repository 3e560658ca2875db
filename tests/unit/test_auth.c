/* Authentication: the cluster-key MAC (common/gm_auth.h), the control
 * envelope and its tags (common/ctl_auth.h, without munged: the MUNGE path
 * runs in tests/cluster/test_users.sh), and who may touch a job. */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_auth.h"
#include "gm_auth.h"
#include "../../daemons/mm/mm.h"
#include "suites.h"

static uint8_t key[GM_KEY_LEN];

static void test_mac_every_bit(void)
{
	for (int i = 0; i < GM_KEY_LEN; i++)
		key[i] = (uint8_t)(i * 7 + 1);
	uint8_t msg[200], tag[GM_TAG_LEN];
	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	gm_mac(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, msg, sizeof(msg), tag);
	CU_ASSERT(gm_mac_ok(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, msg, sizeof(msg), tag));
	/* every single-bit change of the message or of the tag is refused */
	int accepted = 0;
	for (size_t b = 0; b < sizeof(msg) * 8; b++) {
		msg[b / 8] ^= (uint8_t)(1u << (b % 8));
		accepted += gm_mac_ok(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, msg, sizeof(msg), tag);
		msg[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	for (size_t b = 0; b < GM_TAG_LEN * 8; b++) {
		tag[b / 8] ^= (uint8_t)(1u << (b % 8));
		accepted += gm_mac_ok(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, msg, sizeof(msg), tag);
		tag[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	CU_ASSERT_EQUAL(accepted, 0);
	/* a truncated message, another domain, another node, another key */
	CU_ASSERT(!gm_mac_ok(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, msg, sizeof(msg) - 1, tag));
	CU_ASSERT(!gm_mac_ok(key, GM_MAC_CMD, GM_MAC_ANY_NODE, msg, sizeof(msg), tag));
	gm_mac(key, GM_MAC_REPORT, 3, msg, sizeof(msg), tag);
	CU_ASSERT(gm_mac_ok(key, GM_MAC_REPORT, 3, msg, sizeof(msg), tag));
	CU_ASSERT(!gm_mac_ok(key, GM_MAC_REPORT, 4, msg, sizeof(msg), tag));
	key[5] ^= 1;
	CU_ASSERT(!gm_mac_ok(key, GM_MAC_REPORT, 3, msg, sizeof(msg), tag));
	key[5] ^= 1;
}

static void test_file_tag(void)
{
	static uint8_t data[5000];
	uint8_t hdr[64], nonce[16], tag[GM_TAG_LEN], t2[GM_TAG_LEN];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 13);
	memset(hdr, 0x21, sizeof(hdr));
	memset(nonce, 0x5c, sizeof(nonce));
	gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data), tag);
	gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) == 0);
	int same = 0;
	for (size_t b = 0; b < sizeof(data) * 8; b += 7) { /* data bits */
		data[b / 8] ^= (uint8_t)(1u << (b % 8));
		gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data), t2);
		same += memcmp(tag, t2, GM_TAG_LEN) == 0;
		data[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	for (size_t b = 0; b < sizeof(hdr) * 8; b++) { /* header bits */
		hdr[b / 8] ^= (uint8_t)(1u << (b % 8));
		gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data), t2);
		same += memcmp(tag, t2, GM_TAG_LEN) == 0;
		hdr[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	CU_ASSERT_EQUAL(same, 0);
	/* another chunk number or MM start: another one-time key */
	gm_file_tag(key, nonce, 10, hdr, sizeof(hdr), data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	nonce[15] ^= 1;
	gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	/* a truncated chunk */
	nonce[15] ^= 1;
	gm_file_tag(key, nonce, 9, hdr, sizeof(hdr), data, sizeof(data) - 1, t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
}

static void bulk_tag_with(enum gm_bulk_mac mac)
{
	static uint8_t data[3000];
	uint8_t tag[GM_TAG_LEN], t2[GM_TAG_LEN];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 29 + 3);
	gm_bulk_tag(key, mac, 2, 5, 1, 77, data, sizeof(data), tag);
	gm_bulk_tag(key, mac, 2, 5, 1, 77, data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) == 0);
	int same = 0;
	for (size_t b = 0; b < sizeof(data) * 8; b += 5) {
		data[b / 8] ^= (uint8_t)(1u << (b % 8));
		gm_bulk_tag(key, mac, 2, 5, 1, 77, data, sizeof(data), t2);
		same += memcmp(tag, t2, GM_TAG_LEN) == 0;
		data[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	CU_ASSERT_EQUAL(same, 0);
	/* each of sender, receiver, buffer and generation picks its own key,
	 * and a block cut short is another block */
	const uint32_t f[4][3] = { { 3, 5, 1 }, { 2, 4, 1 }, { 2, 5, 0 }, { 5, 2, 1 } };
	for (int i = 0; i < 4; i++) {
		gm_bulk_tag(key, mac, f[i][0], f[i][1], f[i][2], 77, data, sizeof(data), t2);
		CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	}
	gm_bulk_tag(key, mac, 2, 5, 1, 78, data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	gm_bulk_tag(key, mac, 2, 5, 1, 77, data, sizeof(data) - 1, t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	/* and never the file tag of the same bytes */
	uint8_t nonce[16] = { 0 };
	gm_file_tag(key, nonce, 77, NULL, 0, data, sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
	/* nor the other MAC's */
	gm_bulk_tag(key, mac == GM_BULK_GMAC ? GM_BULK_POLY1305 : GM_BULK_GMAC, 2, 5, 1, 77, data,
		    sizeof(data), t2);
	CU_ASSERT(memcmp(tag, t2, GM_TAG_LEN) != 0);
}

static void test_bulk_tag(void)
{
	bulk_tag_with(GM_BULK_POLY1305);
	/* a CPU without AES instructions: the daemons use Poly1305 only */
	if (gm_bulk_gmac_ok())
		bulk_tag_with(GM_BULK_GMAC);
}

static void test_key_file(void)
{
	char dir[] = "/tmp/storm-unit-key.XXXXXX", path[64], err[256];
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/k", dir);
	uint8_t k[GM_KEY_LEN], k2[GM_KEY_LEN];
	CU_ASSERT_EQUAL(gm_key_create(path), 0);
	CU_ASSERT(gm_key_create(path) < 0); /* never overwritten */
	struct stat st;
	CU_ASSERT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == GM_KEY_LEN);
	CU_ASSERT_EQUAL(gm_key_load(path, k, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(gm_key_load(path, k2, err, sizeof(err)), 0);
	CU_ASSERT(memcmp(k, k2, sizeof(k)) == 0);
	chmod(path, 0640);
	CU_ASSERT_EQUAL(gm_key_load(path, k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "group or others may read"));
	chmod(path, 0604);
	CU_ASSERT_EQUAL(gm_key_load(path, k, err, sizeof(err)), -1);
	chmod(path, 0600);
	char link[80];
	snprintf(link, sizeof(link), "%s/l", dir);
	CU_ASSERT_EQUAL(symlink(path, link), 0);
	CU_ASSERT_EQUAL(gm_key_load(link, k, err, sizeof(err)), -1);
	int fd = open(path, O_WRONLY | O_APPEND);
	CU_ASSERT(fd >= 0 && write(fd, "x", 1) == 1);
	close(fd);
	CU_ASSERT_EQUAL(gm_key_load(path, k, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "exactly 32 bytes"));
	CU_ASSERT_EQUAL(gm_key_load("/nonexistent/key", k, err, sizeof(err)), -1);
	unlink(link);
	unlink(path);
	rmdir(dir);
}

/* What is verified is a copy: a later change to the source (a remote write
 * into global memory) does not reach it, and the buffer grows as needed. */
static void test_copy(void)
{
	struct gm_copy c = {0};
	uint8_t src[4096], key[GM_KEY_LEN] = {7}, tag[GM_TAG_LEN];
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)i;
	gm_mac(key, GM_MAC_CMD, 3, src, 100, src + 100);
	const uint8_t *a = gm_copy(&c, src, 100 + GM_TAG_LEN);
	CU_ASSERT_PTR_NOT_NULL_FATAL(a);
	src[5] ^= 1; /* the writer changes the bytes after the copy */
	CU_ASSERT_TRUE(gm_mac_ok(key, GM_MAC_CMD, 3, a, 100, a + 100));
	CU_ASSERT_FALSE(gm_mac_ok(key, GM_MAC_CMD, 3, src, 100, src + 100));
	const uint8_t *b = gm_copy(&c, src, sizeof(src));
	CU_ASSERT_PTR_NOT_NULL_FATAL(b);
	CU_ASSERT_TRUE(c.cap >= sizeof(src));
	CU_ASSERT_EQUAL(memcmp(b, src, sizeof(src)), 0);
	gm_mac(key, GM_MAC_CMD, 3, b, 100, tag);
	CU_ASSERT_NOT_EQUAL(memcmp(tag, src + 100, GM_TAG_LEN), 0);
	gm_copy_free(&c);
	CU_ASSERT_PTR_NULL(c.buf);
}

static void test_ratelimit(void)
{
	struct gm_ratelimit r = { 0 };
	unsigned held = 99, let = 0;
	for (int i = 0; i < 100; i++)
		let += gm_ratelimit_ok(&r, 1000.0 + i * 0.01, &held);
	CU_ASSERT_EQUAL(let, GM_LOG_BURST);
	CU_ASSERT_EQUAL(held, 0);
	/* the next window says how many were held back */
	CU_ASSERT(gm_ratelimit_ok(&r, 1000.0 + GM_LOG_WINDOW_S + 1, &held));
	CU_ASSERT_EQUAL(held, 100 - GM_LOG_BURST);
	CU_ASSERT(gm_ratelimit_ok(&r, 1000.0 + GM_LOG_WINDOW_S + 1.1, &held));
	CU_ASSERT_EQUAL(held, 0);
}

static void test_env_parse(void)
{
	struct ctl_env e;
	char err[128];
	uint8_t f[64] = { CTL_ENV_MUNGE, 0, 5, 'M', 'U', 'N', 'G', 'E', 'b', 'o', 'd', 'y' };
	CU_ASSERT_EQUAL(ctl_env_parse(f, 12, &e, err, sizeof(err)), 0);
	CU_ASSERT(e.kind == CTL_ENV_MUNGE && e.cred_len == 5 && e.body_len == 4);
	CU_ASSERT(memcmp(e.body, "body", 4) == 0);
	/* every truncation of it, and a credential longer than the frame */
	for (size_t n = 0; n < 8; n++)
		CU_ASSERT_EQUAL(ctl_env_parse(f, n, &e, err, sizeof(err)), -EBADMSG);
	f[2] = 0;
	CU_ASSERT_EQUAL(ctl_env_parse(f, 12, &e, err, sizeof(err)), -EBADMSG);
	f[0] = CTL_ENV_MAC;
	CU_ASSERT_EQUAL(ctl_env_parse(f, 1 + 8 + CTL_TAG_LEN - 1, &e, err, sizeof(err)), -EBADMSG);
	CU_ASSERT_EQUAL(ctl_env_parse(f, 1 + 8 + CTL_TAG_LEN, &e, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(e.body_len, 0);
	/* a bare protobuf request (an old CLI) has no envelope: field 1 is 0x08 */
	uint8_t old[] = { 0x08, 0x01, 0x52, 0x00 };
	CU_ASSERT_EQUAL(ctl_env_parse(old, sizeof(old), &e, err, sizeof(err)), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown envelope kind"));
}

/* Two ends that share a session key (as after the MUNGE handshake). */
static void keyed_pair(struct ctl_session *cli, struct ctl_session *srv)
{
	ctl_session_init(cli, false, NULL, 0);
	ctl_session_init(srv, true, NULL, 0);
	memset(cli->key, 0x42, CTL_KEY_LEN);
	memset(srv->key, 0x42, CTL_KEY_LEN);
	cli->keyed = srv->keyed = true;
	cli->tx_seq = srv->rx_seq = 1; /* the credential frame was number 1 */
}

static void test_session_tags(void)
{
	struct ctl_session cli, srv;
	keyed_pair(&cli, &srv);
	char err[256];
	uint8_t *f1, *f2;
	size_t l1, l2, blen;
	const uint8_t *body;
	bool plain;
	CU_ASSERT_EQUAL(ctl_auth_wrap(&srv, (const uint8_t *)"reply-1", 7, &f1, &l1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ctl_auth_wrap(&srv, (const uint8_t *)"reply-2", 7, &f2, &l2, err, sizeof(err)), 0);
	/* in order: accepted */
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f1, l1, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_OK);
	CU_ASSERT(blen == 7 && memcmp(body, "reply-1", 7) == 0 && !plain);
	/* replayed: refused; the next one still accepted */
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f1, l1, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_REPLAYED);
	/* altered body, altered sequence number: refused */
	f2[l2 - 1] ^= 1;
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f2, l2, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_BAD_TAG);
	f2[l2 - 1] ^= 1;
	f2[8] ^= 1;
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f2, l2, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_BAD_TAG);
	f2[8] ^= 1;
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f2, l2, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_OK);
	/* a reply reflected back to the server as a request: wrong direction */
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&srv, f2, l2, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_BAD_TAG);
	free(f1);
	free(f2);
	/* a client's later request (a Cancel on the same connection) */
	CU_ASSERT_EQUAL(ctl_auth_wrap(&cli, (const uint8_t *)"req-2", 5, &f1, &l1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&srv, f1, l1, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_OK);
	free(f1);
	/* a server that never authenticated the client may only send plain;
	 * a server's first frame must carry a credential */
	struct ctl_session fresh;
	ctl_session_init(&fresh, true, NULL, 0);
	CU_ASSERT_EQUAL(ctl_auth_wrap(&fresh, (const uint8_t *)"err", 3, &f1, &l1, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(f1[0], CTL_ENV_PLAIN);
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&cli, f1, l1, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_OK);
	CU_ASSERT(plain);
	CU_ASSERT_EQUAL(ctl_auth_unwrap(&fresh, f1, l1, &body, &blen, &plain, err, sizeof(err)), CTL_AUTH_NO_CRED);
	free(f1);
}

static void test_may_touch(void)
{
	Storm__Job__Spec spec = { .uid = 0 }; /* only the owner fields are read */
	spec.uid = 1001;
	spec.user = "alice";
	struct job j = { .id = 7, .spec = &spec };
	struct client owner = { .uid = 1001 }, root = { .uid = 0 }, other = { .uid = 1002 };
	char why[256] = "";
	static const char *verbs[] = { "cancel", "checkpoint", "restart", "attach" };
	for (size_t v = 0; v < 4; v++) {
		CU_ASSERT(mm_may_touch(&owner, &j, verbs[v], why, sizeof(why)));
		CU_ASSERT(mm_may_touch(&root, &j, verbs[v], why, sizeof(why)));
		CU_ASSERT(!mm_may_touch(&other, &j, verbs[v], why, sizeof(why)));
		char want[128];
		snprintf(want, sizeof(want), "job 7 belongs to alice; only its owner or root may %s it",
			 verbs[v]);
		CU_ASSERT_STRING_EQUAL(why, want);
	}
	/* same group is not enough */
	struct client same_gid = { .uid = 1003, .gid = 1001 };
	spec.gid = 1001;
	CU_ASSERT(!mm_may_touch(&same_gid, &j, "cancel", why, sizeof(why)));
}

void add_auth_suite(void)
{
	CU_pSuite s = CU_add_suite("auth", NULL, NULL);
	CU_add_test(s, "MAC refuses every bit flip, domain, node, key", test_mac_every_bit);
	CU_add_test(s, "file chunk tags: bits, chunk number, nonce, length", test_file_tag);
	CU_add_test(s, "BCS-MPI bulk tags: bits, ends, buffer, generation, length", test_bulk_tag);
	CU_add_test(s, "key file checks", test_key_file);
	CU_add_test(s, "log rate limit", test_ratelimit);
	CU_add_test(s, "gm_copy: the copy is what is verified", test_copy);
	CU_add_test(s, "control envelope parsing", test_env_parse);
	CU_add_test(s, "session tags: order, replay, alteration, direction", test_session_tags);
	CU_add_test(s, "mm_may_touch: owner, root, others", test_may_touch);
}
