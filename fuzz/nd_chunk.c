/* A file chunk header as the node daemon checks it before writing anything
 * (daemons/node/check.c, nd_chunk_problem; files.c writes the chunk).
 * Input: the header's bytes (struct file_chunk). Properties: an accepted
 * header names a plain, terminated basename (no '/', not "." or ".."), a
 * non-zero job, and data that fits both the file buffer and the announced
 * file size without wrapping; a refusal has a reason. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "nd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < sizeof(struct file_chunk))
		return 0;
	struct file_chunk c;
	memcpy(&c, data, sizeof(c));
	const char *bad = nd_chunk_problem(&c);
	if (bad) {
		FUZZ_ONE_LINE(bad);
		return 0;
	}
	size_t nlen = strnlen(c.name, sizeof(c.name));
	FUZZ_ASSERT(nlen > 0 && nlen < sizeof(c.name), "name of %zu bytes", nlen);
	FUZZ_ASSERT(!memchr(c.name, '/', nlen) && strcmp(c.name, ".") && strcmp(c.name, ".."),
		    "name '%s'", c.name);
	FUZZ_ASSERT(c.job != 0, "job 0");
	FUZZ_ASSERT(c.len <= GM_FILE_DATA_MAX, "len %u", c.len);
	FUZZ_ASSERT(c.offset <= c.size && c.offset + c.len >= c.offset && c.offset + c.len <= c.size,
		    "chunk [%llu, +%u) of a file of %llu", (unsigned long long)c.offset, c.len,
		    (unsigned long long)c.size);
	return 0;
}
