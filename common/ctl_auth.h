/* Authentication of control frames (CLI <-> MM, common/frame.h carries them).
 *
 * The first frame of a connection (CLI -> MM) carries a MUNGE credential
 * whose payload is a fresh random session key and the BLAKE2b-256 hash of
 * the request; the credential is restricted to the MM's uid, so only the MM
 * (or root) can read the key. MUNGE vouches for the sender's uid and gid and
 * refuses a credential decoded before (replay) or expired. Every later frame,
 * either way, carries a sequence number and a keyed BLAKE2b tag with that
 * key: a frame out of sequence (replayed, dropped or reordered) or with a
 * bad tag is refused. One MUNGE round trip per connection, not per frame:
 * munged costs ~1 ms a credential on this machine, and `storm run` receives
 * thousands of output frames.
 *
 * An envelope, inside a frame:
 *   u8 kind
 *   kind CTL_ENV_MUNGE: u16 cred_len (big-endian), cred (ASCII), body
 *   kind CTL_ENV_MAC:   u64 seq (big-endian), tag[16], body
 *   kind CTL_ENV_PLAIN: body — only an Error reply from an MM that could not
 *                       authenticate the client (it has no key to tag with)
 * The body is a packed storm.ctl.Request or Reply (proto/control.proto). */
#ifndef STORM_CTL_AUTH_H
#define STORM_CTL_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ctl_env_kind { CTL_ENV_MUNGE = 1, CTL_ENV_MAC = 2, CTL_ENV_PLAIN = 3 };
#define CTL_KEY_LEN 32
#define CTL_TAG_LEN 16
#define CTL_CRED_MAX 4096

/* A parsed envelope; pointers into the frame. Pure: no MUNGE, no keys. */
struct ctl_env {
	enum ctl_env_kind kind;
	const char *cred;    /* CTL_ENV_MUNGE */
	size_t cred_len;
	uint64_t seq;        /* CTL_ENV_MAC */
	const uint8_t *tag;  /* CTL_ENV_MAC */
	const uint8_t *body;
	size_t body_len;
};
/* 0, or -EBADMSG with the reason in err. */
int ctl_env_parse(const uint8_t *in, size_t len, struct ctl_env *e, char *err, size_t errlen);

/* One side of one connection. */
struct ctl_session {
	bool server;         /* the MM's side */
	bool keyed;          /* the session key is known */
	uint8_t key[CTL_KEY_LEN];
	uint64_t tx_seq;     /* last frame sent */
	uint64_t rx_seq;     /* last frame accepted */
	const char *munge_socket; /* NULL or "": MUNGE's default socket */
	uid_t peer_uid;      /* client: the MM's uid (SO_PEERCRED), the only
			      * uid that may decode our credential */
	/* server: who the credential says sent it */
	uid_t uid;
	gid_t gid;
};

void ctl_session_init(struct ctl_session *s, bool server, const char *munge_socket,
		      uid_t peer_uid);
void ctl_session_clear(struct ctl_session *s);

/* Why an unwrap failed, for the log and the reply. */
enum ctl_auth_fail {
	CTL_AUTH_OK = 0,
	CTL_AUTH_MALFORMED,  /* not an envelope */
	CTL_AUTH_NO_CRED,    /* first frame without a MUNGE credential */
	CTL_AUTH_BAD_CRED,   /* MUNGE refused it (forged, altered, wrong key) */
	CTL_AUTH_REPLAYED,   /* MUNGE saw this credential before, or a frame's
			      * sequence number is not the next one */
	CTL_AUTH_EXPIRED,    /* the credential's time-to-live has passed */
	CTL_AUTH_BAD_HASH,   /* the body is not the one the credential covers */
	CTL_AUTH_BAD_TAG,    /* a later frame's tag is wrong: forged or altered */
	CTL_AUTH_UNAVAILABLE,/* munged could not be reached */
};

/* Puts body into an envelope in a new malloc'd buffer (*out, *out_len).
 * A client's first frame gets the MUNGE credential (session key made here);
 * later frames and every server frame get a tag. A server without a key
 * (the client never authenticated) sends CTL_ENV_PLAIN. 0, or -errno with
 * the reason in err (munged unreachable: -EHOSTDOWN). */
int ctl_auth_wrap(struct ctl_session *s, const uint8_t *body, size_t len, uint8_t **out,
		  size_t *out_len, char *err, size_t errlen);
/* Checks an envelope and points *body into it. A server's first frame must
 * carry a credential (then s->uid/gid are set); later frames and all frames a
 * client receives must carry the next tag. *plain is set for a CTL_ENV_PLAIN
 * frame a client received (the caller accepts only an Error from it).
 * Returns CTL_AUTH_OK or the failure, with a one-line reason in err. */
enum ctl_auth_fail ctl_auth_unwrap(struct ctl_session *s, const uint8_t *in, size_t len,
				   const uint8_t **body, size_t *body_len, bool *plain,
				   char *err, size_t errlen);

#endif
