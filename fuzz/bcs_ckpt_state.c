/* A rank's BCS-MPI state as a checkpoint image keeps it (bcs_mpi/abi/chan_ckpt.c),
 * which stormnd decodes at restore. Properties: bcs_ckpt_decode either
 * refuses with a one-line reason or yields a view that encodes back to the
 * same bytes; putting it into an area either fits the submit ring (the
 * pending descriptors ahead of the uncollected ones) or is refused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chan_ckpt.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bcs_ckpt_view v;
	char why[256];
	if (bcs_ckpt_decode(data, size, &v, why, sizeof(why)) < 0) {
		FUZZ_ONE_LINE(why);
		return 0;
	}
	struct bcs_desc *pend = malloc((v.h.npend ? v.h.npend : 1) * sizeof(*pend));
	uint8_t *again = malloc(size);
	struct bcs_area *a = malloc(BCS_AREA_SIZE);
	FUZZ_ASSERT(pend && again && a, "out of memory");
	memcpy(pend, v.pend, v.h.npend * sizeof(*pend));
	FUZZ_ASSERT(bcs_ckpt_encode(again, &v.h, pend, v.area) == size, "size");
	FUZZ_ASSERT(!memcmp(again, data, size), "re-encoded differently");
	int rc = bcs_ckpt_restore_area(a, &v, why, sizeof(why));
	if (rc < 0) {
		FUZZ_ASSERT(rc == -ENOSPC, "unexpected error %d", rc);
		FUZZ_ONE_LINE(why);
	} else {
		FUZZ_ASSERT(a->sub_head - a->sub_tail <= BCS_SUB_RING, "ring overflow");
		for (uint32_t i = 0; i < v.h.npend; i++)
			FUZZ_ASSERT(!memcmp(&a->sub[(a->sub_tail + i) % BCS_SUB_RING], &pend[i],
					    sizeof(*pend)),
				    "pending descriptor %u misplaced", i);
	}
	free(pend);
	free(again);
	free(a);
	return 0;
}
