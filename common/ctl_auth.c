/* Authentication of control frames: MUNGE, then a session key (ctl_auth.h). */
#include "ctl_auth.h"
#include "log.h"

#include <errno.h>
#include <munge.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CRED_MAGIC "stormQ1" /* 8 bytes with its NUL: payload format version */
#define CRED_PAYLOAD_LEN (8 + CTL_KEY_LEN + 32)

static uint64_t get_be64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

static void put_be64(uint8_t *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

int ctl_env_parse(const uint8_t *in, size_t len, struct ctl_env *e, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (len < 1) {
		snprintf(err, errlen, "empty frame (no authentication envelope)");
		return -EBADMSG;
	}
	e->kind = (enum ctl_env_kind)in[0];
	switch (in[0]) {
	case CTL_ENV_MUNGE: {
		if (len < 3) {
			snprintf(err, errlen, "truncated credential envelope");
			return -EBADMSG;
		}
		size_t cl = (size_t)in[1] << 8 | in[2];
		if (cl == 0 || cl > CTL_CRED_MAX || 3 + cl > len) {
			snprintf(err, errlen, "credential length %zu does not fit the frame", cl);
			return -EBADMSG;
		}
		e->cred = (const char *)in + 3;
		e->cred_len = cl;
		e->body = in + 3 + cl;
		e->body_len = len - 3 - cl;
		return 0;
	}
	case CTL_ENV_MAC:
		if (len < 1 + 8 + CTL_TAG_LEN) {
			snprintf(err, errlen, "truncated tagged envelope");
			return -EBADMSG;
		}
		e->seq = get_be64(in + 1);
		e->tag = in + 9;
		e->body = in + 9 + CTL_TAG_LEN;
		e->body_len = len - 9 - CTL_TAG_LEN;
		return 0;
	case CTL_ENV_PLAIN:
		e->body = in + 1;
		e->body_len = len - 1;
		return 0;
	default:
		snprintf(err, errlen, "unknown envelope kind %u (no credential; an older storm?)",
			 in[0]);
		return -EBADMSG;
	}
}

void ctl_session_init(struct ctl_session *s, bool server, const char *munge_socket,
		      uid_t peer_uid)
{
	memset(s, 0, sizeof(*s));
	s->server = server;
	s->munge_socket = munge_socket;
	s->peer_uid = peer_uid;
	s->uid = (uid_t)-1;
	s->gid = (gid_t)-1;
}

void ctl_session_clear(struct ctl_session *s)
{
	sodium_memzero(s->key, sizeof(s->key));
	s->keyed = false;
}

static void frame_tag(const uint8_t key[CTL_KEY_LEN], char dir, uint64_t seq, const uint8_t *body,
		      size_t len, uint8_t tag[CTL_TAG_LEN])
{
	uint8_t head[9];
	head[0] = (uint8_t)dir;
	put_be64(head + 1, seq);
	crypto_generichash_state st;
	crypto_generichash_init(&st, key, CTL_KEY_LEN, CTL_TAG_LEN);
	crypto_generichash_update(&st, head, sizeof(head));
	crypto_generichash_update(&st, body, len);
	crypto_generichash_final(&st, tag, CTL_TAG_LEN);
}

static munge_ctx_t new_ctx(const struct ctl_session *s)
{
	munge_ctx_t ctx = munge_ctx_create();
	if (ctx && s->munge_socket && s->munge_socket[0] &&
	    munge_ctx_set(ctx, MUNGE_OPT_SOCKET, s->munge_socket) != EMUNGE_SUCCESS) {
		munge_ctx_destroy(ctx);
		return NULL;
	}
	return ctx;
}

static int wrap_cred(struct ctl_session *s, const uint8_t *body, size_t len, uint8_t **out,
		     size_t *out_len, char *err, size_t errlen)
{
	uint8_t payload[CRED_PAYLOAD_LEN];
	memcpy(payload, CRED_MAGIC, 8);
	randombytes_buf(s->key, CTL_KEY_LEN);
	memcpy(payload + 8, s->key, CTL_KEY_LEN);
	crypto_generichash(payload + 8 + CTL_KEY_LEN, 32, body, len, NULL, 0);
	munge_ctx_t ctx = new_ctx(s);
	if (!ctx) {
		snprintf(err, errlen, "cannot set up a MUNGE context");
		return -ENOMEM;
	}
	/* only the MM's uid may read the session key out of it */
	munge_ctx_set(ctx, MUNGE_OPT_UID_RESTRICTION, s->peer_uid);
	char *cred = NULL;
	munge_err_t me = munge_encode(&cred, ctx, payload, sizeof(payload));
	sodium_memzero(payload, sizeof(payload));
	if (me != EMUNGE_SUCCESS) {
		snprintf(err, errlen, "cannot get a MUNGE credential from munged%s%s: %s",
			 s->munge_socket && s->munge_socket[0] ? " at " : "",
			 s->munge_socket ? s->munge_socket : "", munge_ctx_strerror(ctx));
		munge_ctx_destroy(ctx);
		return me == EMUNGE_SOCKET ? -EHOSTDOWN : -EACCES;
	}
	munge_ctx_destroy(ctx);
	size_t cl = strlen(cred);
	if (cl > CTL_CRED_MAX) {
		free(cred);
		snprintf(err, errlen, "MUNGE credential of %zu bytes is too long", cl);
		return -EMSGSIZE;
	}
	*out = malloc(3 + cl + len);
	if (!*out) {
		free(cred);
		return -ENOMEM;
	}
	(*out)[0] = CTL_ENV_MUNGE;
	(*out)[1] = (uint8_t)(cl >> 8);
	(*out)[2] = (uint8_t)cl;
	memcpy(*out + 3, cred, cl);
	if (len)
		memcpy(*out + 3 + cl, body, len);
	*out_len = 3 + cl + len;
	free(cred);
	s->keyed = true;
	s->tx_seq = 1;
	return 0;
}

int ctl_auth_wrap(struct ctl_session *s, const uint8_t *body, size_t len, uint8_t **out,
		  size_t *out_len, char *err, size_t errlen)
{
	if (!s->server && !s->keyed)
		return wrap_cred(s, body, len, out, out_len, err, errlen);
	if (!s->keyed) { /* a server that never authenticated this client */
		*out = malloc(1 + len);
		if (!*out)
			return -ENOMEM;
		(*out)[0] = CTL_ENV_PLAIN;
		if (len)
			memcpy(*out + 1, body, len);
		*out_len = 1 + len;
		return 0;
	}
	*out = malloc(1 + 8 + CTL_TAG_LEN + len);
	if (!*out)
		return -ENOMEM;
	uint64_t seq = ++s->tx_seq;
	(*out)[0] = CTL_ENV_MAC;
	put_be64(*out + 1, seq);
	frame_tag(s->key, s->server ? 'R' : 'Q', seq, body, len, *out + 9);
	if (len)
		memcpy(*out + 9 + CTL_TAG_LEN, body, len);
	*out_len = 1 + 8 + CTL_TAG_LEN + len;
	return 0;
}

static enum ctl_auth_fail unwrap_cred(struct ctl_session *s, const struct ctl_env *e, char *err,
				      size_t errlen)
{
	/* munge_decode wants a NUL-terminated credential */
	char *cred = malloc(e->cred_len + 1);
	if (!cred) {
		snprintf(err, errlen, "out of memory");
		return CTL_AUTH_UNAVAILABLE;
	}
	memcpy(cred, e->cred, e->cred_len);
	cred[e->cred_len] = '\0';
	munge_ctx_t ctx = new_ctx(s);
	void *payload = NULL;
	int plen = 0;
	uid_t uid;
	gid_t gid;
	uint64_t t0 = clock_mono_ns();
	munge_err_t me = ctx ? munge_decode(cred, ctx, &payload, &plen, &uid, &gid) : EMUNGE_NO_MEMORY;
	uint64_t took_ms = (clock_mono_ns() - t0) / 1000000u;
	free(cred);
	if (took_ms >= 1000) /* the caller's loop stood still meanwhile */
		slog("munged%s%s took %.1f s to decode a credential",
		     s->munge_socket && s->munge_socket[0] ? " at " : "",
		     s->munge_socket ? s->munge_socket : "", (double)took_ms / 1000);
	enum ctl_auth_fail f = CTL_AUTH_OK;
	switch (me) {
	case EMUNGE_SUCCESS:
		break;
	case EMUNGE_CRED_REPLAYED:
		f = CTL_AUTH_REPLAYED;
		snprintf(err, errlen, "replayed MUNGE credential (uid %u)", (unsigned)uid);
		break;
	case EMUNGE_CRED_EXPIRED:
	case EMUNGE_CRED_REWOUND:
		f = CTL_AUTH_EXPIRED;
		snprintf(err, errlen, "MUNGE credential %s (uid %u)",
			 me == EMUNGE_CRED_EXPIRED ? "expired" : "from the future", (unsigned)uid);
		break;
	case EMUNGE_SOCKET:
	case EMUNGE_NO_MEMORY:
		f = CTL_AUTH_UNAVAILABLE;
		snprintf(err, errlen, "cannot decode the MUNGE credential: %s",
			 ctx ? munge_ctx_strerror(ctx) : "out of memory");
		break;
	default:
		f = CTL_AUTH_BAD_CRED;
		snprintf(err, errlen, "invalid MUNGE credential: %s", munge_ctx_strerror(ctx));
	}
	if (ctx)
		munge_ctx_destroy(ctx);
	if (f == CTL_AUTH_OK) {
		uint8_t h[32];
		crypto_generichash(h, 32, e->body, e->body_len, NULL, 0);
		if (plen != CRED_PAYLOAD_LEN || memcmp(payload, CRED_MAGIC, 8) != 0) {
			f = CTL_AUTH_BAD_CRED;
			snprintf(err, errlen, "MUNGE credential (uid %u) carries no storm session",
				 (unsigned)uid);
		} else if (crypto_verify_32(h, (uint8_t *)payload + 8 + CTL_KEY_LEN) != 0) {
			f = CTL_AUTH_BAD_HASH;
			snprintf(err, errlen,
				 "request altered: its bytes are not those the credential (uid %u) "
				 "covers", (unsigned)uid);
		} else {
			memcpy(s->key, (uint8_t *)payload + 8, CTL_KEY_LEN);
			s->keyed = true;
			s->rx_seq = 1;
			s->uid = uid;
			s->gid = gid;
		}
	}
	if (payload) {
		sodium_memzero(payload, (size_t)plen);
		free(payload);
	}
	return f;
}

enum ctl_auth_fail ctl_auth_unwrap(struct ctl_session *s, const uint8_t *in, size_t len,
				   const uint8_t **body, size_t *body_len, bool *plain,
				   char *err, size_t errlen)
{
	struct ctl_env e;
	*plain = false;
	if (ctl_env_parse(in, len, &e, err, errlen) != 0)
		return CTL_AUTH_MALFORMED;
	if (s->server && !s->keyed) {
		if (e.kind != CTL_ENV_MUNGE) {
			snprintf(err, errlen, "first request without a MUNGE credential");
			return CTL_AUTH_NO_CRED;
		}
		enum ctl_auth_fail f = unwrap_cred(s, &e, err, errlen);
		if (f != CTL_AUTH_OK)
			return f;
	} else if (!s->server && e.kind == CTL_ENV_PLAIN) {
		*plain = true; /* the caller takes only an Error from it */
	} else {
		if (e.kind != CTL_ENV_MAC || !s->keyed) {
			snprintf(err, errlen, "%s frame where a tagged one was expected",
				 e.kind == CTL_ENV_MUNGE ? "a second credential" : "an untagged");
			return CTL_AUTH_BAD_TAG;
		}
		uint8_t want[CTL_TAG_LEN];
		frame_tag(s->key, s->server ? 'Q' : 'R', e.seq, e.body, e.body_len, want);
		if (crypto_verify_16(want, e.tag) != 0) {
			snprintf(err, errlen, "frame %llu forged or altered (bad tag)",
				 (unsigned long long)e.seq);
			return CTL_AUTH_BAD_TAG;
		}
		if (e.seq != s->rx_seq + 1) {
			snprintf(err, errlen, "frame %llu out of sequence (expected %llu): replayed",
				 (unsigned long long)e.seq, (unsigned long long)(s->rx_seq + 1));
			return CTL_AUTH_REPLAYED;
		}
		s->rx_seq = e.seq;
	}
	*body = e.body;
	*body_len = e.body_len;
	return CTL_AUTH_OK;
}
