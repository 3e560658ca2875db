/* The network layer's wire format, encoded and decoded (wire.h). Pure. */
#include "wire.h"

#include <errno.h>
#include <string.h>

static bool has_set2(uint8_t type) { return type == SN_MSG_ACK; }

size_t sn_wire_hdr_size(const struct sn_msg *m)
{
	size_t bits = sn_set_wire_size(m->nbits);
	return SN_WIRE_FIXED + bits * (has_set2(m->type) ? 2 : 1);
}

#define PUT(p, v)                                  \
	do {                                       \
		__typeof__(v) v_ = (v);            \
		memcpy((p), &v_, sizeof(v_));      \
		(p) += sizeof(v_);                 \
	} while (0)
#define GET(p, v)                                  \
	do {                                       \
		memcpy(&(v), (p), sizeof(v));      \
		(p) += sizeof(v);                  \
	} while (0)

size_t sn_wire_encode(const struct sn_msg *m, uint8_t *out)
{
	uint8_t *p = out;
	PUT(p, (uint32_t)SN_WIRE_MAGIC);
	PUT(p, (uint8_t)SN_WIRE_VERSION);
	PUT(p, m->type);
	PUT(p, m->flags);
	PUT(p, m->origin);
	PUT(p, m->opid);
	PUT(p, m->sender);
	PUT(p, m->nbits);
	PUT(p, m->fanout);
	PUT(p, m->budget_ms);
	PUT(p, m->event);
	PUT(p, m->cmp);
	PUT(p, m->status);
	PUT(p, m->chunk_len);
	PUT(p, m->off);
	PUT(p, m->total);
	PUT(p, m->chunk_off);
	PUT(p, m->value);
	PUT(p, m->off2);
	PUT(p, m->value2);
	_Static_assert(SN_WIRE_FIXED == 96, "fixed header is 96 bytes");
	sn_set_encode(&m->set, m->nbits, p);
	p += sn_set_wire_size(m->nbits);
	if (has_set2(m->type)) {
		sn_set_encode(&m->set2, m->nbits, p);
		p += sn_set_wire_size(m->nbits);
	}
	return (size_t)(p - out);
}

#define FAIL(msg)                \
	do {                     \
		*why = (msg);    \
		return -EPROTO;  \
	} while (0)

int sn_wire_decode(const uint8_t *buf, size_t len, uint32_t nbits, struct sn_msg *m,
		   const char **why)
{
	const uint8_t *p = buf;
	uint32_t magic;
	uint8_t version;

	if (len < SN_WIRE_FIXED)
		FAIL("message shorter than the header");
	memset(m, 0, sizeof(*m));
	GET(p, magic);
	GET(p, version);
	GET(p, m->type);
	GET(p, m->flags);
	GET(p, m->origin);
	GET(p, m->opid);
	GET(p, m->sender);
	GET(p, m->nbits);
	GET(p, m->fanout);
	GET(p, m->budget_ms);
	GET(p, m->event);
	GET(p, m->cmp);
	GET(p, m->status);
	GET(p, m->chunk_len);
	GET(p, m->off);
	GET(p, m->total);
	GET(p, m->chunk_off);
	GET(p, m->value);
	GET(p, m->off2);
	GET(p, m->value2);
	if (magic != SN_WIRE_MAGIC)
		FAIL("bad magic");
	if (version != SN_WIRE_VERSION)
		FAIL("unsupported wire version");
	if (m->type == 0 || m->type >= SN_MSG_TYPE_MAX)
		FAIL("unknown message type");
	if (m->nbits != nbits)
		FAIL("sender has a different node count");
	if (m->origin >= nbits || m->sender >= nbits)
		FAIL("node id out of range");
	size_t hdr = sn_wire_hdr_size(m);
	if (len < hdr)
		FAIL("truncated node set");
	p = buf + SN_WIRE_FIXED;
	if (sn_set_decode(&m->set, nbits, p))
		FAIL("node set names a node beyond the cluster");
	p += sn_set_wire_size(nbits);
	if (has_set2(m->type)) {
		if (sn_set_decode(&m->set2, nbits, p))
			FAIL("node set names a node beyond the cluster");
		p += sn_set_wire_size(nbits);
	}
	if (m->type == SN_MSG_XFER) {
		if ((m->flags & SN_F_PLACED) ? len != hdr : m->chunk_len != len - hdr)
			FAIL("payload length differs from the header");
		if (m->chunk_off > m->total || m->chunk_len > m->total - m->chunk_off)
			FAIL("chunk outside the transfer");
		if (m->off + m->total < m->off)
			FAIL("transfer wraps the address space");
		m->payload = (m->flags & SN_F_PLACED) ? NULL : p;
	} else if (len != hdr) {
		FAIL("unexpected payload");
	}
	return 0;
}
