/* Test-only fault injection points (fault.h). */
#include "fault.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fault_parse(struct fault *f, const char *spec)
{
	memset(f, 0, sizeof(*f));
	if (!spec)
		return false;
	const char *p = spec;
	while (*p) {
		const char *eq = strchr(p, '=');
		size_t nlen = eq ? (size_t)(eq - p) : 0;
		if (!eq || nlen == 0 || nlen >= sizeof(f->name[0]) || f->n == FAULT_POINTS)
			goto bad;
		char *end;
		unsigned long long k = strtoull(eq + 1, &end, 10);
		if (end == eq + 1 || (*end && *end != ',') || k == 0)
			goto bad;
		memcpy(f->name[f->n], p, nlen);
		f->name[f->n][nlen] = '\0';
		f->at[f->n++] = k;
		p = *end ? end + 1 : end;
	}
	return f->n > 0;
bad:
	memset(f, 0, sizeof(*f));
	return false;
}

void fault_init(struct fault *f, const char *self)
{
	memset(f, 0, sizeof(*f));
	const char *who = getenv("STORM_TEST_TAMPER_NODE");
	if (self && (!who || strcmp(who, self)))
		return;
	fault_parse(f, getenv("STORM_TEST_TAMPER"));
}

bool fault_armed(const struct fault *f)
{
	return f->n > 0;
}

uint64_t fault_value(const struct fault *f, const char *point)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], point))
			return f->at[i];
	return 0;
}

bool fault_is(const struct fault *f, const char *point, uint64_t value)
{
	for (int i = 0; i < f->n; i++)
		if (f->at[i] == value && !strcmp(f->name[i], point))
			return true;
	return false;
}

bool fault_hit(struct fault *f, const char *point, uint64_t value)
{
	for (int i = 0; i < f->n; i++)
		if (f->at[i] && value >= f->at[i] && !strcmp(f->name[i], point)) {
			f->at[i] = 0;
			return true;
		}
	return false;
}
