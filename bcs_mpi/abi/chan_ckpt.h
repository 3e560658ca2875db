/* A rank's BCS-MPI state in a checkpoint: what its node daemon keeps in the
 * rank's image (ckpt_dump_opts.app) and puts back at restore. Pure code,
 * unit-tested and fuzzed; daemons/node/bcs.c and ckpt.c use it.
 *
 * At the checkpoint the job's node daemons have drained it (no transfer
 * half done, no descriptor on the way), so the state is the rank's channel
 * area (its rings as it left them) and the operations it posted that are
 * still pending — sends not matched, receives and blocking probes not
 * matched, a barrier or an allreduce not complete — in post order. At
 * restore they go back into the area's submit ring just before what the
 * rank posted and the daemon had not collected, so the new daemon collects
 * them first, as if the rank had just posted them.
 *
 * Encoding (little-endian, x86-64):
 *   struct bcs_ckpt_hdr, npend × struct bcs_desc, area_size bytes of area */
#ifndef STORM_BCS_CHAN_CKPT_H
#define STORM_BCS_CHAN_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "chan.h"

#define BCS_CKPT_MAGIC 0x4b534342u /* "BCSK" */
#define BCS_CKPT_VERSION 1u

struct bcs_ckpt_hdr {
	uint32_t magic, version;
	uint32_t rank;       /* world rank */
	uint32_t local;      /* its area's index in its node's channel then */
	uint32_t npend;      /* pending descriptors that follow */
	uint32_t area_size;  /* BCS_AREA_SIZE */
	uint64_t job;        /* the checkpointed job */
};

struct bcs_ckpt_view {
	struct bcs_ckpt_hdr h;
	const struct bcs_desc *pend;  /* h.npend, not aligned: copy out */
	const uint8_t *area;          /* h.area_size bytes */
};

/* Bytes of an encoding with npend descriptors. */
size_t bcs_ckpt_size(uint32_t npend);
/* Encodes into buf (bcs_ckpt_size(npend) bytes). Returns the bytes written. */
size_t bcs_ckpt_encode(void *buf, const struct bcs_ckpt_hdr *h, const struct bcs_desc *pend,
		       const void *area);
/* Decodes untrusted bytes. Returns 0, or -EINVAL with a one-line reason. */
int bcs_ckpt_decode(const void *buf, size_t len, struct bcs_ckpt_view *v, char *err,
		    size_t errlen);
/* Writes the saved area into dst with the pending descriptors ahead of the
 * uncollected ones in its submit ring (sub_tail moves back by npend).
 * Returns 0, or -ENOSPC when they do not fit the ring (err says so). */
int bcs_ckpt_restore_area(struct bcs_area *dst, const struct bcs_ckpt_view *v, char *err,
			  size_t errlen);

#endif
