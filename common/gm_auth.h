/* Authentication of what the MM and the node daemons write into each other's
 * global memory (strobes, command slots, reports, report acks, BCS-MPI
 * messages): a keyed BLAKE2b tag with the cluster key (Poly1305 under a
 * one-time key for the bulk of file chunks and BCS-MPI data), a file of 32
 * random bytes, mode 0600, named by storm.conf's key_file
 * (docs/design/security.md).
 *
 * Each tag covers a domain (what kind of message) and, for what a node
 * writes, the node index, so a strobe cannot pass for a command nor node
 * 3's report for node 4's. Replays are refused by the receivers with the
 * sequence numbers the messages already carry (slice, command seq, report
 * seq, acked report). */
#ifndef STORM_GM_AUTH_H
#define STORM_GM_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GM_KEY_LEN 32
/* 128 bits: a forger must guess the tag online, one fabric message per try,
 * each logged; 2^-128 per try is far beyond reach, and 16 bytes cost
 * nothing next to a strobe's 16 bytes per node */
#define GM_TAG_LEN 16

enum gm_domain {
	GM_MAC_STROBE = 1,
	GM_MAC_CMD = 2,
	GM_MAC_REPORT = 3,
	GM_MAC_ACK = 4,
	GM_MAC_BCS = 5, /* node <-> node: BCS-MPI mailbox messages (daemons/node/bcs.c) */
};
#define GM_MAC_ANY_NODE UINT32_MAX /* messages from the MM to every node */

/* Reads the key. Refuses (-1, reason in err) a file that is not a regular
 * file of exactly GM_KEY_LEN bytes, is a symlink, belongs to another user
 * than this process's (root excepted), or that group or others may read. */
int gm_key_load(const char *path, uint8_t key[GM_KEY_LEN], char *err, size_t errlen);
/* Creates a new random key file, mode 0600 (fails if it exists). 0 or -errno. */
int gm_key_create(const char *path);

void gm_mac(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *msg,
	    size_t len, uint8_t tag[GM_TAG_LEN]);
/* The same over two pieces, a then b (a file chunk's header and its data). */
void gm_mac2(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *a,
	     size_t alen, const void *b, size_t blen, uint8_t tag[GM_TAG_LEN]);
/* A file chunk's tag: Poly1305 (about twice BLAKE2b's speed here, and a
 * chunk is up to 4 MiB that every node must check) under a one-time key
 * BLAKE2b(key, "file" || nonce || seq). The MM draws the nonce at random
 * when it starts and numbers chunks from 1, so no key is used twice. */
void gm_file_tag(const uint8_t key[GM_KEY_LEN], const uint8_t nonce[16], uint64_t seq,
		 const void *hdr, size_t hlen, const void *data, size_t dlen,
		 uint8_t tag[GM_TAG_LEN]);
/* A BCS-MPI bulk block's tag (a message's pieces the sending node writes
 * into a buffer of the receiver's area) under the one-time key
 * BLAKE2b(key, "bulk" || mac || from || to || buf || gen). The receiver draws
 * its buffers' generations at random when it starts and counts each grant,
 * so no key is used twice. AES-GMAC where both nodes have AES instructions
 * (gm_bulk_gmac_ok: about twice Poly1305's speed, and every byte of message
 * data is tagged once and checked once), else Poly1305. */
enum gm_bulk_mac { GM_BULK_POLY1305 = 1, GM_BULK_GMAC = 2 };
bool gm_bulk_gmac_ok(void);
void gm_bulk_tag(const uint8_t key[GM_KEY_LEN], enum gm_bulk_mac mac, uint32_t from, uint32_t to,
		 uint32_t buf, uint64_t gen, const void *data, size_t len, uint8_t tag[GM_TAG_LEN]);
/* Constant-time check of the tag that follows msg[0..len). */
bool gm_mac_ok(const uint8_t key[GM_KEY_LEN], enum gm_domain d, uint32_t node, const void *msg,
	       size_t len, const uint8_t tag[GM_TAG_LEN]);

/* A private copy of a message in global memory, to verify and then use:
 * where peers write by RMA (net_abstraction), the bytes in global memory
 * can change at any moment, so a tag checked in place would not cover the
 * bytes read after it. Verify the copy and use only the copy. The buffer
 * grows as needed and is kept for the next message; NULL when out of
 * memory. Costs one memcpy of the message (a 4 MiB file chunk: about a
 * quarter of a millisecond here, less than its tag check). */
struct gm_copy {
	uint8_t *buf;
	size_t cap;
};
const uint8_t *gm_copy(struct gm_copy *c, const void *src, size_t len);
void gm_copy_free(struct gm_copy *c);

/* A log rate limit: at most `burst` lines per `window_s`; what is held back
 * is counted and said with the next line let through. */
struct gm_ratelimit {
	double window_start;
	unsigned in_window, suppressed;
};
#define GM_LOG_BURST 10
#define GM_LOG_WINDOW_S 10.0
/* true: log now (then *held is how many were suppressed before it). */
bool gm_ratelimit_ok(struct gm_ratelimit *r, double now, unsigned *held);

#endif
