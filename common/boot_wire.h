/* Registration of node daemons with the machine manager (bootstrap = mm):
 * how every daemon learns every fabric address without a shared file.
 *
 * Over one TCP connection per node daemon to the MM's mm_address, in
 * frames (frame.h) holding envelopes (ctl_auth.h):
 *   node -> MM  HELLO     plain: node name, the node's nonce
 *   MM -> node  CHALLENGE plain: the MM's nonce (or ERROR: unknown name)
 * Both then key the session with boot_session_key (the cluster key over the
 * name and both nonces), and every later frame is tagged and numbered
 * exactly as a control connection's after its MUNGE credential:
 *   node -> MM  REGISTER  tagged: the node's fabric address on each rail and
 *                         its daemon's incarnation (its start): another one
 *                         than before means the daemon restarted
 *   MM -> node  TABLE     tagged: every address known, the MM's included;
 *                         later TABLEs push the entries that change (a
 *                         node that registers again with a new address)
 *   MM -> node  ERROR     plain, then the MM closes: a wrong cluster key (the
 *                         REGISTER's tag is wrong), a node already
 *                         registered on another live connection
 * A node whose TABLE does not verify has an MM without its key. */
#ifndef STORM_BOOT_WIRE_H
#define STORM_BOOT_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "ctl_auth.h"
#include "gm_auth.h"

enum boot_type {
	BOOT_HELLO = 1,
	BOOT_CHALLENGE = 2,
	BOOT_REGISTER = 3,
	BOOT_TABLE = 4,
	BOOT_ERROR = 5,
};

#define BOOT_VERSION 2
#define BOOT_NONCE_LEN 16
#define BOOT_ADDR_MAX 256  /* a fabric address (sn.h SN_ADDR_MAX) */
#define BOOT_RAILS 2
#define BOOT_NAME_MAX 255
#define BOOT_TEXT_MAX 512

/* One node's addresses; id is its fabric id (the MM is 0). */
struct boot_entry {
	uint32_t id;
	uint8_t nrails;
	uint16_t len[BOOT_RAILS];
	uint8_t addr[BOOT_RAILS][BOOT_ADDR_MAX];
};

struct boot_msg {
	enum boot_type type;
	char name[BOOT_NAME_MAX + 1];          /* HELLO */
	uint8_t nonce[BOOT_NONCE_LEN];         /* HELLO, CHALLENGE */
	uint64_t incarnation;                  /* REGISTER: nonzero */
	struct boot_entry self;                /* REGISTER (id unused) */
	uint32_t nentries;                     /* TABLE */
	const uint8_t *entries;                /* TABLE: encoded, boot_table_next */
	size_t entries_len;
	char text[BOOT_TEXT_MAX + 1];          /* ERROR */
};

/* Encoders: the body's length, or -ENOSPC when out (cap bytes) is short. */
int boot_enc_hello(uint8_t *out, size_t cap, const char *name,
		   const uint8_t nonce[BOOT_NONCE_LEN]);
int boot_enc_challenge(uint8_t *out, size_t cap, const uint8_t nonce[BOOT_NONCE_LEN]);
int boot_enc_register(uint8_t *out, size_t cap, const struct boot_entry *self,
		      uint64_t incarnation);
int boot_enc_error(uint8_t *out, size_t cap, const char *text);
/* A TABLE of n entries. */
int boot_enc_table(uint8_t *out, size_t cap, const struct boot_entry *const *e, uint32_t n);
/* Bytes a TABLE of n entries may need at most. */
size_t boot_table_max(uint32_t n);

/* Decodes a body: 0, or -EBADMSG with the reason in *why. */
int boot_decode(const uint8_t *in, size_t len, struct boot_msg *m, const char **why);
/* The next entry of a decoded TABLE (*pos starts at 0): 1, 0 at the end,
 * -EBADMSG (checked by boot_decode already, so only for a forged count). */
int boot_table_next(const struct boot_msg *m, size_t *pos, struct boot_entry *e);

/* The session key both sides derive after HELLO and CHALLENGE. */
void boot_session_key(const uint8_t cluster_key[GM_KEY_LEN], const char *name,
		      const uint8_t node_nonce[BOOT_NONCE_LEN],
		      const uint8_t mm_nonce[BOOT_NONCE_LEN], uint8_t out[CTL_KEY_LEN]);
/* Puts a body in a plain envelope (the frames before the session is keyed,
 * and errors): a new malloc'd buffer, or NULL. */
uint8_t *boot_plain(const uint8_t *body, size_t len, size_t *out_len);

#endif
