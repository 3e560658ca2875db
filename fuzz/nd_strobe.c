/* A strobe as the node daemon reads it (daemons/node/check.c,
 * nd_strobe_read). Input: two bytes of node index, then the strobe, read
 * from a copy of exactly its length. Properties: nothing is read beyond the
 * copy whatever nnodes and K say; an accepted strobe lists at most
 * STORM_MAX_NODES nodes, fits the copy with its schedule ahead, whose
 * slots strictly increase, and gives this node the entries at the offsets
 * layout.h defines, or zeros when it is not listed. */
#include <stdbool.h>
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
	uint64_t ack = 1, run = 1, run_ahead[STROBE_AHEAD_MAX];
	struct strobe_slot slots[STROBE_AHEAD_MAX + 1];
	unsigned k = strobe_ahead((const struct strobe *)area);
	/* the strobe is read from the input's bytes only, as from a copy that
	 * long (its own allocation, so that a read past it is caught) */
	size_t len = size - 2;
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact)
		return 0;
	memcpy(exact, data + 2, len);
	int rc = nd_strobe_read(exact, len, index, &s, &ack, &run, slots, run_ahead);
	free(exact);
	if (rc < 0) {
		bool ordered = true;
		if (len >= sizeof(s) && s.nnodes <= STORM_MAX_NODES && k <= STROBE_AHEAD_MAX &&
		    strobe_size(s.nnodes, k) <= len)
			for (unsigned i = 1; i <= k; i++) {
				struct strobe_slot a, b;
				const uint8_t *sl = area + sizeof(s) + 16 * (size_t)s.nnodes;
				memcpy(&a, sl + sizeof(a) * (i - 1), sizeof(a));
				memcpy(&b, sl + sizeof(b) * i, sizeof(b));
				ordered = ordered && b.start_ns > a.start_ns;
			}
		FUZZ_ASSERT(len < sizeof(s) || s.nnodes > STORM_MAX_NODES ||
				    k > STROBE_AHEAD_MAX || strobe_size(s.nnodes, k) > len ||
				    !ordered,
			    "refused a strobe of %u nodes, K %u", s.nnodes, k);
		return 0;
	}
	FUZZ_ASSERT(s.nnodes <= STORM_MAX_NODES, "accepted a strobe of %u nodes", s.nnodes);
	FUZZ_ASSERT(strobe_size(s.nnodes, k) <= len, "accepted %u nodes with K %u",
		    s.nnodes, k);
	for (unsigned i = 1; i <= k; i++)
		FUZZ_ASSERT(slots[i].start_ns > slots[i - 1].start_ns, "slot %u goes back", i);
	for (unsigned i = 1; i <= k && index < s.nnodes; i++) {
		uint64_t want;
		memcpy(&want, (uint8_t *)strobe_run_ahead((struct strobe *)area, i) + 8 * (size_t)index,
		       8);
		FUZZ_ASSERT(run_ahead[i - 1] == want, "slot %u: run %llu", i,
			    (unsigned long long)run_ahead[i - 1]);
	}
	uint64_t want_ack = 0, want_run = 0;
	if (index < s.nnodes) {
		memcpy(&want_ack, area + sizeof(struct strobe) + 8 * (size_t)index, 8);
		memcpy(&want_run, area + sizeof(struct strobe) + 8 * ((size_t)s.nnodes + index), 8);
	}
	FUZZ_ASSERT(ack == want_ack && run == want_run, "node %u: ack %llu run %llu", index,
		    (unsigned long long)ack, (unsigned long long)run);
	return 0;
}
