/* Authentication envelopes of control frames (common/ctl_auth.c), as the MM
 * and the CLI check them before any decoding. Input: one byte (the receiver's
 * last sequence number), then bytes used three ways:
 *   - as a frame: ctl_env_parse keeps the body inside the frame or gives a
 *     one-line reason; a keyed server session accepts it only if it is
 *     exactly what a client with the session key would have sent (nobody
 *     without the key gets a frame in);
 *   - as a body: wrapped by a keyed client and unwrapped by the MM's session,
 *     it comes back unchanged, and once more it is refused as a replay;
 *   - any single bit flipped in that envelope (kind, sequence, tag or body)
 *     makes the MM refuse it.
 * The first frame's MUNGE credential needs munged and is not fuzzed here. */
#include <stdint.h>
#include <string.h>

#include "ctl_auth.h"
#include "fuzz.h"

static const uint8_t key[CTL_KEY_LEN] = "fuzz-ctl-auth-key-fuzz-ctl-auth";

static void keyed(struct ctl_session *s, bool server, uint64_t seq)
{
	ctl_session_init(s, server, NULL, 0);
	s->keyed = true;
	memcpy(s->key, key, CTL_KEY_LEN);
	s->rx_seq = s->tx_seq = seq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint64_t seq = data[0];
	data++;
	size--;
	char err[256] = "";
	const uint8_t *body;
	size_t blen;
	bool plain;

	/* the bytes as a frame */
	uint8_t *frame = malloc(size ? size : 1);
	memcpy(frame, data, size);
	struct ctl_env e;
	if (ctl_env_parse(frame, size, &e, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(e.body >= frame && e.body + e.body_len == frame + size,
			    "body outside the frame");
	} else {
		FUZZ_ONE_LINE(err);
	}
	struct ctl_session srv, cli;
	keyed(&srv, true, seq);
	enum ctl_auth_fail f = ctl_auth_unwrap(&srv, frame, size, &body, &blen, &plain, err,
					       sizeof(err));
	if (f == CTL_AUTH_OK) {
		keyed(&cli, false, seq);
		uint8_t *env;
		size_t elen;
		FUZZ_ASSERT(ctl_auth_wrap(&cli, body, blen, &env, &elen, err, sizeof(err)) == 0, "%s",
			    err);
		FUZZ_ASSERT(elen == size && !memcmp(env, frame, size),
			    "the MM accepted a frame no key holder sent");
		free(env);
		ctl_session_clear(&cli);
	} else {
		FUZZ_ONE_LINE(err);
	}
	ctl_session_clear(&srv);
	free(frame);

	/* the bytes as a body: round trip, replay, and every single-bit change */
	keyed(&cli, false, seq);
	keyed(&srv, true, seq);
	uint8_t *env;
	size_t elen;
	FUZZ_ASSERT(ctl_auth_wrap(&cli, data, size, &env, &elen, err, sizeof(err)) == 0, "%s", err);
	FUZZ_ASSERT(ctl_auth_unwrap(&srv, env, elen, &body, &blen, &plain, err, sizeof(err)) ==
			    CTL_AUTH_OK,
		    "a genuine frame was refused: %s", err);
	FUZZ_ASSERT(blen == size && (!size || !memcmp(body, data, size)) && !plain,
		    "the body changed on the way");
	FUZZ_ASSERT(ctl_auth_unwrap(&srv, env, elen, &body, &blen, &plain, err, sizeof(err)) ==
			    CTL_AUTH_REPLAYED,
		    "a replayed frame was not refused as one");
	size_t bit = (size_t)seq * 131 % (elen * 8); /* a bit the input picks */
	for (size_t k = 0; k < 8 && k < elen * 8; k++) {
		size_t b = (bit + k * 97) % (elen * 8);
		struct ctl_session s2;
		keyed(&s2, true, seq);
		env[b / 8] ^= (uint8_t)(1u << (b % 8));
		FUZZ_ASSERT(ctl_auth_unwrap(&s2, env, elen, &body, &blen, &plain, err, sizeof(err)) !=
				    CTL_AUTH_OK,
			    "a frame with bit %zu flipped was accepted", b);
		env[b / 8] ^= (uint8_t)(1u << (b % 8));
		ctl_session_clear(&s2);
	}
	free(env);
	ctl_session_clear(&cli);
	ctl_session_clear(&srv);
	return 0;
}
