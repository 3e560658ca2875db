/* A checkpoint copy message as the receiving node daemon checks it before
 * writing anything (daemons/node/check.c, nd_copy_problem; ckpt_copy.c
 * writes the data). Input: the message body (struct nd_copy_hdr, then
 * data). Properties: an accepted message names a terminated path under
 * ckpt/ that cannot climb out (no "..", no "//", no trailing '/'), whose
 * last part is a plain name, with room for ".part"; its data is exactly the
 * rest of the body and lies inside the announced file without wrapping; a
 * refusal has a one-line reason. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "nd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < sizeof(struct nd_copy_hdr))
		return 0;
	struct nd_copy_hdr h;
	memcpy(&h, data, sizeof(h));
	const char *bad = nd_copy_problem(&h, size);
	if (bad) {
		FUZZ_ONE_LINE(bad);
		return 0;
	}
	size_t nlen = strnlen(h.name, sizeof(h.name));
	FUZZ_ASSERT(nlen < sizeof(h.name) - 8, "name of %zu bytes", nlen);
	FUZZ_ASSERT(!strncmp(h.name, "ckpt/", 5) && !strstr(h.name, "..") &&
		    !strstr(h.name, "//") && h.name[nlen - 1] != '/', "name '%s'", h.name);
	const char *base = strrchr(h.name, '/');
	FUZZ_ASSERT(base && base[1] && strcmp(base + 1, ".") && strcmp(base + 1, ".."),
		    "last part of '%s'", h.name);
	FUZZ_ASSERT(h.len == size - sizeof(h), "len %u of a %zu-byte body", h.len, size);
	FUZZ_ASSERT(h.offset <= h.size && h.offset + h.len >= h.offset &&
		    h.offset + h.len <= h.size, "data [%llu, +%u) of a file of %llu",
		    (unsigned long long)h.offset, h.len, (unsigned long long)h.size);
	return 0;
}
