/* Slurm-style host lists (common/hostlist.c), as [nodes] names and the CLI
 * read them. Input: the list's text. Properties: expanding either fails with
 * a one-line reason or gives 1..max distinct, non-empty names shorter than
 * HOSTNAME_MAX; compressing those names and expanding the result gives the
 * same names in the same order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hostlist.h"

#define MAX 1000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char (*a)[HOSTNAME_MAX], (*b)[HOSTNAME_MAX];
	if (!a) {
		a = calloc(MAX, HOSTNAME_MAX);
		b = calloc(MAX, HOSTNAME_MAX);
	}
	char *spec = malloc(size + 1);
	memcpy(spec, data, size);
	spec[size] = '\0';
	char err[512] = "";
	int n = hostlist_expand(spec, a, MAX, err, sizeof(err));
	if (n < 0) {
		FUZZ_ONE_LINE(err);
		free(spec);
		return 0;
	}
	FUZZ_ASSERT(n >= 1 && n <= MAX, "%d names", n);
	const char *names[MAX];
	for (int i = 0; i < n; i++) {
		size_t len = strnlen(a[i], HOSTNAME_MAX);
		FUZZ_ASSERT(len > 0 && len < HOSTNAME_MAX, "name %d of %zu bytes", i, len);
		names[i] = a[i];
	}
	size_t cap = (size_t)MAX * HOSTNAME_MAX + 1;
	char *list = malloc(cap);
	size_t w = hostlist_compress(names, n, list, cap);
	FUZZ_ASSERT(w < cap && strlen(list) == w, "compressed to %zu bytes", w);
	int m = hostlist_expand(list, b, MAX, err, sizeof(err));
	FUZZ_ASSERT(m == n, "'%s' -> '%s' expands to %d names, not %d (%s)", spec, list, m, n,
		    m < 0 ? err : "");
	for (int i = 0; i < n; i++)
		FUZZ_ASSERT(!strcmp(a[i], b[i]), "'%s' -> '%s': name %d '%s' became '%s'", spec,
			    list, i, a[i], b[i]);
	free(list);
	free(spec);
	return 0;
}
