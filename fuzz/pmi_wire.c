/* A rank's PMI-1 request line and a node's exchange bytes as the node
 * daemon decodes them (daemons/node/pmi_wire.c). Input: a line, then the
 * rest as exchange records. Properties: a field found is NUL-terminated
 * within its buffer and holds no newline (nor a space, but for value); the
 * record and pair walks stay inside the buffer and always end. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "pmi_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char line[PMI_LINE_MAX + 1];
	size_t n = size < PMI_LINE_MAX ? size : PMI_LINE_MAX;
	memcpy(line, data, n);
	line[n] = '\0';
	static const char *const names[] = {"cmd", "kvsname", "key", "value", "pmi_version",
					    "exitcode"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char out[PMI_VAL_MAX];
		int r = pmi_wire_field(line, names[i], out, sizeof(out));
		FUZZ_ASSERT(r == 0 || r == -1 || r == -2, "field %s: %d", names[i], r);
		if (r == 0) {
			FUZZ_ASSERT(strlen(out) < sizeof(out), "unterminated %s", names[i]);
			FUZZ_ASSERT(!strchr(out, '\n'), "newline in %s", names[i]);
			FUZZ_ASSERT(i == 3 || !strchr(out, ' '), "space in %s", names[i]);
		}
	}
	(void)pmi_wire_is(line, "put");
	const uint8_t *rec = data + n;
	size_t len = size - n, off = 0, steps = 0;
	uint32_t pos, dl;
	const uint8_t *d;
	int r;
	while ((r = pmi_xrec_next(rec, len, &off, &pos, &d, &dl)) == 1) {
		FUZZ_ASSERT(d >= rec && d + dl <= rec + len && off <= len, "record outside");
		size_t o = 0;
		const char *k, *v;
		while (pmi_kv_next(d, dl, &o, &k, &v) == 1) {
			FUZZ_ASSERT(o <= dl && *k, "pair outside or empty key");
			FUZZ_ASSERT((const uint8_t *)v + strlen(v) < d + dl, "value runs out");
		}
		FUZZ_ASSERT(++steps <= len, "records never end");
	}
	FUZZ_ASSERT(r == 0 || r == -1, "record walk: %d", r);
	return 0;
}
