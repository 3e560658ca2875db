/* Node set lists ("0-3,7,9-10", net_abstraction/nodeset.c sn_set_parse).
 * Input: two bytes of limit (1..SN_MAX_NODES), then the text. Properties: a
 * parsed set lies below the limit; formatting it and parsing that again
 * gives the same set. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "nodeset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint32_t limit = ((uint32_t)data[0] | (uint32_t)data[1] << 8) % SN_MAX_NODES + 1;
	char *text = malloc(size - 1);
	memcpy(text, data + 2, size - 2);
	text[size - 2] = '\0';
	struct sn_nodeset s, t;
	if (sn_set_parse(&s, text, limit) == 0) {
		FUZZ_ASSERT(sn_set_span(&s) <= limit, "member beyond %u", limit);
		char buf[8192];
		int n = sn_set_format(&s, buf, sizeof(buf));
		FUZZ_ASSERT(n >= 0 && (size_t)n < sizeof(buf), "format gave %d", n);
		FUZZ_ASSERT(sn_set_parse(&t, buf, limit) == 0 && sn_set_equal(&s, &t),
			    "'%s' does not parse back to the set of '%s'", buf, text);
	}
	free(text);
	return 0;
}
