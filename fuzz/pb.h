/* protobuf-c helpers for the harnesses. */
#ifndef STORM_FUZZ_PB_H
#define STORM_FUZZ_PB_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"

/* Does m or a message inside it keep fields its schema does not know?
 * protobuf-c keeps them and packs them again, and takes a tag of field 0
 * written as an overlong varint that it then packs in a form it refuses
 * itself: such a message need not survive a round trip, and storm never
 * packs a message it decoded. */
static inline bool pb_has_unknown(const ProtobufCMessage *m)
{
	if (m->n_unknown_fields)
		return true;
	const ProtobufCMessageDescriptor *d = m->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		if (f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		const char *base = (const char *)m;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);
			for (size_t k = 0; k < n; k++)
				if (v[k] && pb_has_unknown(v[k]))
					return true;
			continue;
		}
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		const ProtobufCMessage *sub = *(ProtobufCMessage *const *)(base + f->offset);
		if (sub && pb_has_unknown(sub))
			return true;
	}
	return false;
}

/* decode(encode(x)) == x for a decoded message x without unknown fields:
 * packed, unpacked and packed again, the bytes are the same. */
static inline void pb_round_trip(const ProtobufCMessage *m)
{
	if (pb_has_unknown(m))
		return;
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *a = malloc(len ? len : 1), *b = malloc(len ? len : 1);
	FUZZ_ASSERT(a && b && protobuf_c_message_pack(m, a) == len, "pack");
	ProtobufCMessage *again = protobuf_c_message_unpack(m->descriptor, NULL, len, a);
	FUZZ_ASSERT(again, "a decoded %s does not decode after packing", m->descriptor->name);
	FUZZ_ASSERT(protobuf_c_message_get_packed_size(again) == len &&
			    protobuf_c_message_pack(again, b) == len && !memcmp(a, b, len),
		    "%s: pack(unpack(pack(x))) differs from pack(x)", m->descriptor->name);
	protobuf_c_message_free_unpacked(again, NULL);
	free(a);
	free(b);
}

#endif
