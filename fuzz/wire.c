/* A network-layer message as treeop.c receives it (net_abstraction/wire.c).
 * Input: two bytes choosing the receiver's node count (1..SN_MAX_NODES),
 * then the message. Properties: a refusal names a reason; an accepted
 * message re-encodes to exactly the header bytes it came in (the codec
 * round-trips), its node ids and sets lie inside the cluster, an XFER's
 * payload is exactly the rest of the message and its chunk lies inside its
 * transfer without wrapping; any other type has no payload. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t nbits = ((uint32_t)data[0] | (uint32_t)data[1] << 8) % SN_MAX_NODES + 1;
	data += 2;
	size -= 2;
	/* an exact copy: the decoder must not read past the message */
	uint8_t *msg = malloc(size ? size : 1);
	memcpy(msg, data, size);
	struct sn_msg m;
	const char *why = NULL;
	int rc = sn_wire_decode(msg, size, nbits, &m, &why);
	if (rc) {
		FUZZ_ASSERT(rc == -EPROTO || rc == -EINVAL, "decode returned %d", rc);
		FUZZ_ONE_LINE(why);
		free(msg);
		return 0;
	}
	size_t hdr = sn_wire_hdr_size(&m);
	FUZZ_ASSERT(hdr <= size && hdr <= SN_WIRE_HDR_MAX, "header of %zu in %zu bytes", hdr, size);
	FUZZ_ASSERT(m.nbits == nbits && m.origin < nbits && m.sender < nbits, "node ids");
	FUZZ_ASSERT(sn_set_span(&m.set) <= nbits && sn_set_span(&m.set2) <= nbits,
		    "a set beyond the cluster");
	if (m.type == SN_MSG_XFER) {
		FUZZ_ASSERT(m.payload == msg + hdr && m.chunk_len == size - hdr, "payload");
		FUZZ_ASSERT(m.chunk_off <= m.total && m.chunk_len <= m.total - m.chunk_off &&
				    m.off + m.total >= m.off,
			    "chunk outside its transfer");
	} else {
		FUZZ_ASSERT(size == hdr, "payload on type %u", m.type);
	}
	uint8_t out[SN_WIRE_HDR_MAX];
	size_t n = sn_wire_encode(&m, out);
	FUZZ_ASSERT(n == hdr && !memcmp(out, msg, hdr), "encode(decode(x)) differs from x");
	free(msg);
	return 0;
}
