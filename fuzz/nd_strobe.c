/* A strobe as the node daemon reads it (daemons/node/check.c,
 * nd_strobe_read). Input: two bytes of node index, then the strobe area,
 * placed in a buffer of exactly GM_STROBE_MAX bytes. Properties: nothing is
 * read beyond the area whatever nnodes says; an accepted strobe lists at
 * most STORM_MAX_NODES nodes and gives this node the entries at the offsets
 * layout.h defines, or zeros when it is not listed. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "nd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *area;
	if (!area)
		area = malloc(GM_STROBE_MAX);
	if (size < 2 || size - 2 > GM_STROBE_MAX)
		return 0;
	uint32_t index = (uint32_t)data[0] | (uint32_t)data[1] << 8;
	memset(area, 0, GM_STROBE_MAX);
	memcpy(area, data + 2, size - 2);
	struct strobe s;
	uint64_t ack = 1, run = 1;
	if (nd_strobe_read(area, index, &s, &ack, &run) < 0) {
		FUZZ_ASSERT(s.nnodes > STORM_MAX_NODES, "refused a strobe of %u nodes", s.nnodes);
		return 0;
	}
	FUZZ_ASSERT(s.nnodes <= STORM_MAX_NODES, "accepted a strobe of %u nodes", s.nnodes);
	uint64_t want_ack = 0, want_run = 0;
	if (index < s.nnodes) {
		memcpy(&want_ack, area + sizeof(struct strobe) + 8 * (size_t)index, 8);
		memcpy(&want_run, area + sizeof(struct strobe) + 8 * ((size_t)s.nnodes + index), 8);
	}
	FUZZ_ASSERT(ack == want_ack && run == want_run, "node %u: ack %llu run %llu", index,
		    (unsigned long long)ack, (unsigned long long)run);
	return 0;
}
