/* Tags on what the MM and the node daemons write into global memory (gm_auth.h). */
#include "gm_auth.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gm_key_load(const char *path, uint8_t key[GM_KEY_LEN], char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		snprintf(err, errlen, "cannot open the cluster key %s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	const char *why = NULL;
	if (fstat(fd, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (st.st_uid != geteuid() && st.st_uid != 0)
		why = "it belongs to another user";
	else if (st.st_mode & 077)
		why = "group or others may read or write it; chmod 600 it";
	else if (st.st_size != GM_KEY_LEN)
		why = "it must hold exactly 32 bytes (head -c 32 /dev/urandom)";
	ssize_t n = why ? 0 : read(fd, key, GM_KEY_LEN);
	close(fd);
	if (!why && n != GM_KEY_LEN)
		why = "short read";
	if (why) {
		snprintf(err, errlen, "refusing the cluster key %s: %s", path, why);
		return -1;
	}
	return 0;
}

int gm_key_create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	uint8_t key[GM_KEY_LEN];
	randombytes_buf(key, sizeof(key));
	ssize_t n = write(fd, key, sizeof(key));
	int e = n == (ssize_t)sizeof(key) ? 0 : (n < 0 ? errno : EIO);
	sodium_memzero(key, sizeof(key));
	if (close(fd) != 0 && !e)
		e = errno;
	if (e)
		unlink(path);
	return -e;
}

void gm_mac2(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *a,
	     size_t alen, const void *b, size_t blen, uint8_t tag[GM_TAG_LEN])
{
	crypto_generichash_state st;
	uint8_t head[8] = { 's', 't', 'g', (uint8_t)d, (uint8_t)(node >> 24), (uint8_t)(node >> 16),
			    (uint8_t)(node >> 8), (uint8_t)node };
	crypto_generichash_init(&st, key, GM_KEY_LEN, GM_TAG_LEN);
	crypto_generichash_update(&st, head, sizeof(head));
	crypto_generichash_update(&st, a, alen);
	if (blen)
		crypto_generichash_update(&st, b, blen);
	crypto_generichash_final(&st, tag, GM_TAG_LEN);
}

void gm_mac(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *msg,
	    size_t len, uint8_t tag[GM_TAG_LEN])
{
	gm_mac2(key, d, node, msg, len, NULL, 0, tag);
}

/* Poly1305 over hdr then data under the one-time key BLAKE2b(key, in):
 * in must never repeat under one key (its callers number it). */
static void onetime_tag(const uint8_t key[GM_KEY_LEN], const uint8_t *in, size_t inlen,
			const void *hdr, size_t hlen, const void *data, size_t dlen,
			uint8_t tag[GM_TAG_LEN])
{
	uint8_t otk[crypto_onetimeauth_KEYBYTES];
	crypto_generichash(otk, sizeof(otk), in, inlen, key, GM_KEY_LEN);
	crypto_onetimeauth_state st;
	crypto_onetimeauth_init(&st, otk);
	if (hlen)
		crypto_onetimeauth_update(&st, hdr, hlen);
	if (dlen)
		crypto_onetimeauth_update(&st, data, dlen);
	crypto_onetimeauth_final(&st, tag);
	sodium_memzero(otk, sizeof(otk));
}

void gm_file_tag(const uint8_t key[GM_KEY_LEN], const uint8_t nonce[16], uint64_t seq,
		 const void *hdr, size_t hlen, const void *data, size_t dlen,
		 uint8_t tag[GM_TAG_LEN])
{
	uint8_t in[4 + 16 + 8];
	memcpy(in, "file", 4);
	uint64_t be_seq = htobe64(seq);
	memcpy(in + 4, nonce, 16);
	memcpy(in + 20, &be_seq, 8);
	onetime_tag(key, in, sizeof(in), hdr, hlen, data, dlen, tag);
}

bool gm_bulk_gmac_ok(void)
{
	/* the CPU's features are known once libsodium is initialised */
	return sodium_init() >= 0 && crypto_aead_aes256gcm_is_available() != 0;
}

void gm_bulk_tag(const uint8_t key[GM_KEY_LEN], enum gm_bulk_mac mac, uint32_t from, uint32_t to,
		 uint32_t buf, uint64_t gen, const void *data, size_t len, uint8_t tag[GM_TAG_LEN])
{
	const uint32_t be[4] = { htobe32((uint32_t)mac), htobe32(from), htobe32(to), htobe32(buf) };
	const uint64_t be_gen = htobe64(gen);
	uint8_t in[4 + sizeof(be) + 8];
	memcpy(in, "bulk", 4);
	memcpy(in + 4, be, sizeof(be));
	memcpy(in + 4 + sizeof(be), &be_gen, 8);
	if (mac != GM_BULK_GMAC) {
		onetime_tag(key, in, sizeof(in), NULL, 0, data, len, tag);
		return;
	}
	/* GMAC: GCM with the block as associated data and nothing to encrypt;
	 * the key is used once, so a fixed nonce is safe */
	static const uint8_t npub[crypto_aead_aes256gcm_NPUBBYTES];
	uint8_t otk[crypto_aead_aes256gcm_KEYBYTES], none[1];
	unsigned long long tlen;
	crypto_generichash(otk, sizeof(otk), in, sizeof(in), key, GM_KEY_LEN);
	crypto_aead_aes256gcm_encrypt_detached(none, tag, &tlen, none, 0, data, len, NULL, npub,
					       otk);
	sodium_memzero(otk, sizeof(otk));
}

bool gm_mac_ok(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *msg,
	       size_t len, const uint8_t tag[GM_TAG_LEN])
{
	uint8_t want[GM_TAG_LEN];
	gm_mac(key, d, node, msg, len, want);
	return crypto_verify_16(want, tag) == 0;
}

const uint8_t *gm_copy(struct gm_copy *c, const void *src, size_t len)
{
	if (len > c->cap || !c->buf) { /* never NULL on success, even for 0 bytes */
		uint8_t *b = realloc(c->buf, len ? len : 1);
		if (!b)
			return NULL;
		c->buf = b;
		c->cap = len;
	}
	memcpy(c->buf, src, len);
	return c->buf;
}

void gm_copy_free(struct gm_copy *c)
{
	free(c->buf);
	c->buf = NULL;
	c->cap = 0;
}

bool gm_ratelimit_ok(struct gm_ratelimit *r, double now, unsigned *held)
{
	if (now - r->window_start >= GM_LOG_WINDOW_S || now < r->window_start) {
		r->window_start = now;
		r->in_window = 0;
	}
	if (r->in_window >= GM_LOG_BURST) {
		r->suppressed++;
		return false;
	}
	r->in_window++;
	*held = r->suppressed;
	r->suppressed = 0;
	return true;
}

#include "layout.h"
_Static_assert(GM_TAG_BYTES == GM_TAG_LEN, "layout.h and gm_auth.h disagree on the tag");
_Static_assert(crypto_onetimeauth_BYTES == GM_TAG_LEN, "a Poly1305 tag is a file chunk's tag");
_Static_assert(crypto_aead_aes256gcm_ABYTES == GM_TAG_LEN, "a GMAC tag is a bulk block's tag");
