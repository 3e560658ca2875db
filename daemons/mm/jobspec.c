/* A job's description (proto/jobspec.proto): the one place it is copied
 * and freed. A copy is the message packed and unpacked again, so it owns
 * every string and array it points to and needs no field-by-field code
 * when the message grows. */
#include "mm.h"

#include <stdlib.h>

uint8_t *jobspec_pack(const Storm__Job__Spec *s, size_t *len)
{
	*len = storm__job__spec__get_packed_size(s);
	uint8_t *buf = malloc(*len ? *len : 1);
	if (buf)
		storm__job__spec__pack(s, buf);
	return buf;
}

Storm__Job__Spec *jobspec_unpack(const uint8_t *buf, size_t len)
{
	return storm__job__spec__unpack(NULL, len, buf);
}

Storm__Job__Spec *jobspec_dup(const Storm__Job__Spec *s)
{
	size_t len;
	uint8_t *buf = jobspec_pack(s, &len);
	if (!buf)
		return NULL;
	Storm__Job__Spec *d = jobspec_unpack(buf, len);
	free(buf);
	return d;
}

void jobspec_free(Storm__Job__Spec *s)
{
	if (s)
		storm__job__spec__free_unpacked(s, NULL);
}
