/* The header and section table of a checkpoint image (checkpoint/image.c),
 * as ckpt_restore reads them from a file that may be damaged or forged.
 * Input: the image's first bytes (or all of it). Properties: a refusal is
 * -EINVAL or -ENODATA with a one-line reason; an accepted header has 3 to
 * CKPT_MAX_SECTIONS sections, each inside file_size, in offset order and
 * apart, after the table, one meta, vmas and files each; writing it again
 * gives the same bytes (the codec round-trips); a whole-image check accepts
 * only what the header accepts. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1); /* exact: no read beyond it */
	memcpy(buf, data, size);
	struct ckpt_header h;
	char err[256];
	int rc = ckpt_image_read_header(buf, size, &h, err, sizeof(err));
	if (rc) {
		FUZZ_ASSERT(rc == -EINVAL || rc == -ENODATA || rc == -ENOMEM, "returned %d", rc);
		FUZZ_ONE_LINE(err);
		struct ckpt_header v;
		FUZZ_ASSERT(ckpt_image_verify(buf, size, &v, err, sizeof(err)) != 0,
			    "verify accepted what the header refused");
		free(buf);
		return 0;
	}
	size_t hsize = ckpt_header_size(h.nsec);
	FUZZ_ASSERT(h.nsec >= 3 && h.nsec <= CKPT_MAX_SECTIONS, "%u sections", h.nsec);
	FUZZ_ASSERT(hsize <= size && hsize <= h.file_size, "table of %zu bytes", hsize);
	uint64_t next = hsize;
	unsigned seen[5] = { 0 };
	for (uint32_t i = 0; i < h.nsec; i++) {
		const struct ckpt_sec *s = &h.secs[i];
		FUZZ_ASSERT(s->type >= CKPT_SEC_META && s->type <= CKPT_SEC_PAGES, "type %u", s->type);
		FUZZ_ASSERT(s->offset >= next && s->length <= h.file_size &&
				    s->offset <= h.file_size - s->length,
			    "section %u at %llu+%llu", i, (unsigned long long)s->offset,
			    (unsigned long long)s->length);
		next = s->offset + s->length;
		seen[s->type]++;
	}
	FUZZ_ASSERT(seen[CKPT_SEC_META] == 1 && seen[CKPT_SEC_VMAS] == 1 &&
			    seen[CKPT_SEC_FILES] == 1,
		    "metadata sections");
	uint8_t *again = malloc(hsize);
	FUZZ_ASSERT(ckpt_image_write_header(&h, again) == hsize, "written size");
	FUZZ_ASSERT(memcmp(again, buf, hsize) == 0, "round trip");
	free(again);
	struct ckpt_header v;
	if (ckpt_image_verify(buf, size, &v, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(v.file_size == size && v.nsec == h.nsec, "verify");
		ckpt_header_free(&v);
	} else {
		FUZZ_ONE_LINE(err);
	}
	ckpt_header_free(&h);
	free(buf);
	return 0;
}
