/* A node's report slot as the MM decodes it (daemons/mm/request.c,
 * mm_report_decode; slice.c consumes it). Input: the slot's bytes, a u32
 * length word then the packed storm.cl.Report, placed in a buffer of exactly
 * GM_REPORT_SLOT_SIZE bytes as in global memory. Properties: nothing is read
 * beyond the slot (ASan); a refusal has a reason; a decoded report packs
 * back to bytes that decode to the same. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "layout.h"
#include "pb.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *slot;
	if (!slot)
		slot = malloc(GM_REPORT_SLOT_SIZE);
	if (size > GM_REPORT_SLOT_SIZE || size < 4)
		return 0;
	memset(slot, 0, GM_REPORT_SLOT_SIZE);
	memcpy(slot, data, size);
	uint32_t len;
	memcpy(&len, slot, 4);
	if (len == 0)
		return 0; /* an empty slot: nothing new */
	const char *why = NULL;
	Storm__Cl__Report *r = mm_report_decode(slot, len, &why);
	if (!r) {
		FUZZ_ONE_LINE(why);
		return 0;
	}
	FUZZ_ASSERT(len <= GM_REPORT_SLOT_SIZE - 4, "decoded a report of %u bytes", len);
	pb_round_trip(&r->base);
	storm__cl__report__free_unpacked(r, NULL);
	return 0;
}
