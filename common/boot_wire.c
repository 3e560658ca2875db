/* The registration protocol's messages (boot_wire.h). Big-endian integers. */
#include "boot_wire.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct wbuf {
	uint8_t *p;
	size_t cap, len;
	int err;
};

static void put(struct wbuf *w, const void *src, size_t n)
{
	if (w->err)
		return;
	if (n > w->cap - w->len) {
		w->err = -ENOSPC;
		return;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void put8(struct wbuf *w, uint8_t v) { put(w, &v, 1); }
static void put16(struct wbuf *w, uint16_t v)
{
	uint8_t b[2] = {(uint8_t)(v >> 8), (uint8_t)v};
	put(w, b, 2);
}
static void put32(struct wbuf *w, uint32_t v)
{
	uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
	put(w, b, 4);
}

static void put64(struct wbuf *w, uint64_t v)
{
	put32(w, (uint32_t)(v >> 32));
	put32(w, (uint32_t)v);
}

static int done(struct wbuf *w) { return w->err ? w->err : (int)w->len; }

int boot_enc_hello(uint8_t *out, size_t cap, const char *name,
		   const uint8_t nonce[BOOT_NONCE_LEN])
{
	struct wbuf w = {out, cap, 0, 0};
	size_t n = strlen(name);
	if (n == 0 || n > BOOT_NAME_MAX)
		return -EINVAL;
	put8(&w, BOOT_HELLO);
	put8(&w, BOOT_VERSION);
	put8(&w, (uint8_t)n);
	put(&w, name, n);
	put(&w, nonce, BOOT_NONCE_LEN);
	return done(&w);
}

int boot_enc_challenge(uint8_t *out, size_t cap, const uint8_t nonce[BOOT_NONCE_LEN])
{
	struct wbuf w = {out, cap, 0, 0};
	put8(&w, BOOT_CHALLENGE);
	put(&w, nonce, BOOT_NONCE_LEN);
	return done(&w);
}

static void put_entry(struct wbuf *w, const struct boot_entry *e, bool with_id)
{
	if (e->nrails < 1 || e->nrails > BOOT_RAILS) {
		w->err = -EINVAL;
		return;
	}
	if (with_id)
		put32(w, e->id);
	put8(w, e->nrails);
	for (int r = 0; r < e->nrails; r++) {
		if (!e->len[r] || e->len[r] > BOOT_ADDR_MAX) {
			w->err = -EINVAL;
			return;
		}
		put16(w, e->len[r]);
		put(w, e->addr[r], e->len[r]);
	}
}

int boot_enc_register(uint8_t *out, size_t cap, const struct boot_entry *self,
		      uint64_t incarnation)
{
	struct wbuf w = {out, cap, 0, 0};
	if (!incarnation)
		return -EINVAL;
	put8(&w, BOOT_REGISTER);
	put_entry(&w, self, false);
	put64(&w, incarnation);
	return done(&w);
}

int boot_enc_error(uint8_t *out, size_t cap, const char *text)
{
	struct wbuf w = {out, cap, 0, 0};
	size_t n = strlen(text);
	if (n > BOOT_TEXT_MAX)
		n = BOOT_TEXT_MAX;
	put8(&w, BOOT_ERROR);
	put16(&w, (uint16_t)n);
	put(&w, text, n);
	return done(&w);
}

size_t boot_table_max(uint32_t n)
{
	return 1 + 4 + (size_t)n * (4 + 1 + BOOT_RAILS * (2 + BOOT_ADDR_MAX));
}

int boot_enc_table(uint8_t *out, size_t cap, const struct boot_entry *const *e, uint32_t n)
{
	struct wbuf w = {out, cap, 0, 0};
	put8(&w, BOOT_TABLE);
	put32(&w, n);
	for (uint32_t i = 0; i < n; i++)
		put_entry(&w, e[i], true);
	return done(&w);
}

struct rbuf {
	const uint8_t *p;
	size_t len, pos;
	bool short_;
};

static const uint8_t *take(struct rbuf *r, size_t n)
{
	if (r->short_ || n > r->len - r->pos) {
		r->short_ = true;
		return NULL;
	}
	const uint8_t *p = r->p + r->pos;
	r->pos += n;
	return p;
}

static uint8_t get8(struct rbuf *r)
{
	const uint8_t *p = take(r, 1);
	return p ? p[0] : 0;
}
static uint16_t get16(struct rbuf *r)
{
	const uint8_t *p = take(r, 2);
	return p ? (uint16_t)(p[0] << 8 | p[1]) : 0;
}
static uint32_t get32(struct rbuf *r)
{
	const uint8_t *p = take(r, 4);
	return p ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3] : 0;
}

static int get_entry(struct rbuf *r, struct boot_entry *e, bool with_id, const char **why)
{
	memset(e, 0, sizeof(*e));
	if (with_id)
		e->id = get32(r);
	e->nrails = get8(r);
	if (!r->short_ && (e->nrails < 1 || e->nrails > BOOT_RAILS)) {
		*why = "an entry with no rail or more than two";
		return -EBADMSG;
	}
	for (int i = 0; i < e->nrails && !r->short_; i++) {
		e->len[i] = get16(r);
		if (!r->short_ && (!e->len[i] || e->len[i] > BOOT_ADDR_MAX)) {
			*why = "a fabric address of 0 or more than 256 bytes";
			return -EBADMSG;
		}
		const uint8_t *a = take(r, e->len[i]);
		if (a)
			memcpy(e->addr[i], a, e->len[i]);
	}
	if (r->short_) {
		*why = "truncated";
		return -EBADMSG;
	}
	return 0;
}

int boot_decode(const uint8_t *in, size_t len, struct boot_msg *m, const char **why)
{
	struct rbuf r = {in, len, 0, false};
	memset(m, 0, offsetof(struct boot_msg, self));
	m->type = (enum boot_type)get8(&r);
	switch (m->type) {
	case BOOT_HELLO: {
		if (get8(&r) != BOOT_VERSION && !r.short_) {
			*why = "another protocol version";
			return -EBADMSG;
		}
		uint8_t n = get8(&r);
		const uint8_t *name = take(&r, n);
		const uint8_t *nonce = take(&r, BOOT_NONCE_LEN);
		if (!name || !nonce) {
			*why = "truncated";
			return -EBADMSG;
		}
		if (!n || memchr(name, '\0', n)) {
			*why = "an empty node name or one with a NUL";
			return -EBADMSG;
		}
		memcpy(m->name, name, n);
		m->name[n] = '\0';
		memcpy(m->nonce, nonce, BOOT_NONCE_LEN);
		break;
	}
	case BOOT_CHALLENGE: {
		const uint8_t *nonce = take(&r, BOOT_NONCE_LEN);
		if (!nonce) {
			*why = "truncated";
			return -EBADMSG;
		}
		memcpy(m->nonce, nonce, BOOT_NONCE_LEN);
		break;
	}
	case BOOT_REGISTER:
		if (get_entry(&r, &m->self, false, why))
			return -EBADMSG;
		m->incarnation = (uint64_t)get32(&r) << 32;
		m->incarnation |= get32(&r);
		if (r.short_) {
			*why = "truncated";
			return -EBADMSG;
		}
		if (!m->incarnation) {
			*why = "no incarnation";
			return -EBADMSG;
		}
		break;
	case BOOT_TABLE: {
		m->nentries = get32(&r);
		m->entries = in + r.pos;
		m->entries_len = r.short_ ? 0 : len - r.pos;
		struct boot_entry e;
		for (uint32_t i = 0; i < m->nentries && !r.short_; i++)
			if (get_entry(&r, &e, true, why))
				return -EBADMSG;
		if (r.short_) {
			*why = "truncated";
			return -EBADMSG;
		}
		break;
	}
	case BOOT_ERROR: {
		uint16_t n = get16(&r);
		const uint8_t *t = take(&r, n);
		if (!t || n > BOOT_TEXT_MAX) {
			*why = r.short_ ? "truncated" : "an error text too long";
			return -EBADMSG;
		}
		/* printed on one line: no control characters */
		for (uint16_t i = 0; i < n; i++)
			m->text[i] = t[i] < 0x20 || t[i] == 0x7f ? '?' : (char)t[i];
		m->text[n] = '\0';
		break;
	}
	default:
		*why = r.short_ ? "empty" : "an unknown message type";
		return -EBADMSG;
	}
	if (r.pos != len) {
		*why = "trailing bytes";
		return -EBADMSG;
	}
	return 0;
}

int boot_table_next(const struct boot_msg *m, size_t *pos, struct boot_entry *e)
{
	if (*pos >= m->entries_len)
		return 0;
	struct rbuf r = {m->entries, m->entries_len, *pos, false};
	const char *why;
	if (get_entry(&r, e, true, &why))
		return -EBADMSG;
	*pos = r.pos;
	return 1;
}

void boot_session_key(const uint8_t cluster_key[GM_KEY_LEN], const char *name,
		      const uint8_t node_nonce[BOOT_NONCE_LEN],
		      const uint8_t mm_nonce[BOOT_NONCE_LEN], uint8_t out[CTL_KEY_LEN])
{
	/* the domain and the name's length keep this from colliding with
	 * any other use of the cluster key */
	static const char domain[] = "storm-boot-session";
	crypto_generichash_state st;
	uint8_t n = (uint8_t)strnlen(name, BOOT_NAME_MAX);
	crypto_generichash_init(&st, cluster_key, GM_KEY_LEN, CTL_KEY_LEN);
	crypto_generichash_update(&st, (const uint8_t *)domain, sizeof(domain));
	crypto_generichash_update(&st, &n, 1);
	crypto_generichash_update(&st, (const uint8_t *)name, n);
	crypto_generichash_update(&st, node_nonce, BOOT_NONCE_LEN);
	crypto_generichash_update(&st, mm_nonce, BOOT_NONCE_LEN);
	crypto_generichash_final(&st, out, CTL_KEY_LEN);
}

uint8_t *boot_plain(const uint8_t *body, size_t len, size_t *out_len)
{
	uint8_t *p = malloc(1 + len);
	if (!p)
		return NULL;
	p[0] = CTL_ENV_PLAIN;
	memcpy(p + 1, body, len);
	*out_len = 1 + len;
	return p;
}
