/* A rank's BCS-MPI state in a checkpoint (chan_ckpt.h). */
#include "chan_ckpt.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

size_t bcs_ckpt_size(uint32_t npend)
{
	return sizeof(struct bcs_ckpt_hdr) + (size_t)npend * sizeof(struct bcs_desc) +
	       BCS_AREA_SIZE;
}

size_t bcs_ckpt_encode(void *buf, const struct bcs_ckpt_hdr *h, const struct bcs_desc *pend,
		       const void *area)
{
	uint8_t *p = buf;
	struct bcs_ckpt_hdr hh = *h;
	hh.magic = BCS_CKPT_MAGIC;
	hh.version = BCS_CKPT_VERSION;
	hh.area_size = (uint32_t)BCS_AREA_SIZE;
	memcpy(p, &hh, sizeof(hh));
	p += sizeof(hh);
	if (hh.npend)
		memcpy(p, pend, (size_t)hh.npend * sizeof(*pend));
	p += (size_t)hh.npend * sizeof(*pend);
	memcpy(p, area, BCS_AREA_SIZE);
	return bcs_ckpt_size(hh.npend);
}

int bcs_ckpt_decode(const void *buf, size_t len, struct bcs_ckpt_view *v, char *err,
		    size_t errlen)
{
	if (len < sizeof(v->h)) {
		snprintf(err, errlen, "BCS-MPI state: %zu bytes, shorter than its header", len);
		return -EINVAL;
	}
	memcpy(&v->h, buf, sizeof(v->h));
	const struct bcs_ckpt_hdr *h = &v->h;
	if (h->magic != BCS_CKPT_MAGIC || h->version != BCS_CKPT_VERSION) {
		snprintf(err, errlen, "BCS-MPI state: magic %#x version %u (want %#x version %u)",
			 h->magic, h->version, BCS_CKPT_MAGIC, BCS_CKPT_VERSION);
		return -EINVAL;
	}
	if (h->area_size != BCS_AREA_SIZE) {
		snprintf(err, errlen, "BCS-MPI state: channel area of %u bytes, this build's is %zu",
			 h->area_size, (size_t)BCS_AREA_SIZE);
		return -EINVAL;
	}
	if (h->npend > BCS_SUB_RING || len != bcs_ckpt_size(h->npend)) {
		snprintf(err, errlen, "BCS-MPI state: %u pending operations in %zu bytes", h->npend,
			 len);
		return -EINVAL;
	}
	v->pend = (const struct bcs_desc *)((const uint8_t *)buf + sizeof(*h));
	v->area = (const uint8_t *)buf + sizeof(*h) + (size_t)h->npend * sizeof(struct bcs_desc);
	return 0;
}

int bcs_ckpt_restore_area(struct bcs_area *dst, const struct bcs_ckpt_view *v, char *err,
			  size_t errlen)
{
	uint32_t head, tail;
	memcpy(&head, v->area + offsetof(struct bcs_area, sub_head), sizeof(head));
	memcpy(&tail, v->area + offsetof(struct bcs_area, sub_tail), sizeof(tail));
	uint32_t from = tail - v->h.npend;
	if (head - tail > BCS_SUB_RING || head - from > BCS_SUB_RING) {
		snprintf(err, errlen,
			 "rank %u: %u pending and %u uncollected operations exceed the submit "
			 "ring (%u)",
			 v->h.rank, v->h.npend, head - tail, BCS_SUB_RING);
		return -ENOSPC;
	}
	memcpy(dst, v->area, sizeof(*dst));
	for (uint32_t i = 0; i < v->h.npend; i++)
		memcpy(&dst->sub[(from + i) % BCS_SUB_RING], &v->pend[i], sizeof(struct bcs_desc));
	dst->sub_tail = from;
	return 0;
}
