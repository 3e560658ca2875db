/* Wire format of the network layer's messages. Pure: encode and decode only.
 *
 * Every message is one fixed header, then one or two node-set bitmaps of
 * ceil(nbits/8) bytes, then an optional payload. Fields are little-endian
 * (the layer runs on little-endian hosts; the magic catches a mismatch). */
#ifndef STORM_WIRE_H
#define STORM_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "nodeset.h"

#define SN_WIRE_MAGIC 0x4d525453u /* "STRM" */
#define SN_WIRE_VERSION 2

enum sn_msg_type {
	SN_MSG_XFER = 1,   /* down: a chunk of an XFER-AND-SIGNAL */
	SN_MSG_COMMIT,     /* down: signal the remote event of an atomic xfer */
	SN_MSG_EVAL,       /* down: CAW prepare: lock, evaluate, stage the write */
	SN_MSG_WRITE,      /* down: CAW decide: commit or release a prepare */
	SN_MSG_ACK,        /* up: a subtree's confirmation */
	SN_MSG_TYPE_MAX
};

enum sn_msg_flags {
	SN_F_ACK = 1u << 0,    /* the root wants confirmation */
	SN_F_ATOMIC = 1u << 1, /* hold the remote event until COMMIT */
	SN_F_WRITE = 1u << 2,  /* EVAL: stage the write of value2 at off2 */
	SN_F_COMMIT = 1u << 3, /* WRITE: apply the staged write (else release) */
	SN_F_WAIT = 1u << 4,   /* EVAL: at the set's lowest node, holding nothing: wait
				  for any conflicting lock, do not refuse (caw.h) */
	SN_F_PLACED = 1u << 5, /* XFER: the chunk was RMA-written into the receiver's
				  global memory before this header; no payload */
	SN_F_GATHER = 1u << 6, /* EVAL (a read): off2 names a variable pair whose
				  first word is summed into the ACK's value and
				  second maxed into its value2 (caw.h) */
};

struct sn_msg {
	uint8_t type;
	uint16_t flags;
	uint32_t origin;  /* root of the tree operation */
	uint32_t opid;    /* unique per origin */
	uint32_t sender;  /* node that sent this message */
	uint32_t nbits;   /* node count of the sender's cluster */
	uint32_t fanout;
	uint32_t budget_ms;
	uint32_t event;   /* remote event, or SN_NO_EVENT; EVAL: the set's lowest node */
	uint32_t cmp;     /* enum sn_cmp */
	int32_t status;   /* ACK: 1 true, 0 false, <0 -errno (-EBUSY: a lock conflict) */
	uint32_t chunk_len;
	uint64_t off;     /* XFER: destination offset; CAW: variable */
	uint64_t total;   /* XFER: whole length; EVAL: the lock's id */
	uint64_t chunk_off; /* XFER; EVAL: the call's priority (caw.h) */
	uint64_t value;   /* EVAL: comparand; WRITE: the id of the lock it decides;
			     ACK of a gathering EVAL: its subtree's sum */
	uint64_t off2;    /* CAW: write offset; gathering EVAL: the pair's */
	uint64_t value2;  /* CAW: value written; ACK of a gathering EVAL: the maximum */
	struct sn_nodeset set;  /* members (down), ok nodes (ACK) */
	struct sn_nodeset set2; /* ACK: suspects (did not answer their parent) */
	const void *payload;    /* decode: points into the buffer */
};

#define SN_WIRE_FIXED 96
/* Largest header: fixed part plus two full bitmaps. */
#define SN_WIRE_HDR_MAX (SN_WIRE_FIXED + 2 * (SN_MAX_NODES / 8))

size_t sn_wire_hdr_size(const struct sn_msg *m);
/* Writes the header (not the payload) into out, which holds SN_WIRE_HDR_MAX
 * bytes; returns its size. */
size_t sn_wire_encode(const struct sn_msg *m, uint8_t *out);
/* Validates and decodes len bytes. Checks magic, version, type, node ids
 * against nbits, chunk bounds, and that the payload fits. Returns 0 or
 * -EPROTO/-EINVAL, leaving a reason in *why. */
int sn_wire_decode(const uint8_t *buf, size_t len, uint32_t nbits, struct sn_msg *m,
		   const char **why);

#endif
