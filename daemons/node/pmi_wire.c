/* PMI-1 wire protocol: fields, the process mapping and exchange records. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pmi_wire.h"

/* the start of field `name` at a word boundary, or NULL */
static const char *find_field(const char *line, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = line; *p && *p != '\n'; p++) {
		if ((p == line || p[-1] == ' ') && !strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
		/* nothing after value= is another field */
		if ((p == line || p[-1] == ' ') && !strncmp(p, "value=", 6))
			return NULL;
	}
	return NULL;
}

int pmi_wire_field(const char *line, const char *name, char *out, size_t max)
{
	const char *v = find_field(line, name);
	if (!v)
		return -1;
	bool rest = !strcmp(name, "value");
	size_t len = 0;
	while (v[len] && v[len] != '\n' && (rest || v[len] != ' '))
		len++;
	if (len + 1 > max)
		return -2;
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

int pmi_wire_is(const char *line, const char *cmd)
{
	const char *w = NULL;
	if (!strncmp(line, "cmd=", 4))
		w = line + 4;
	else if (!strncmp(line, "mcmd=", 5))
		w = line + 5;
	if (!w)
		return 0;
	size_t n = strlen(cmd);
	return !strncmp(w, cmd, n) && (w[n] == ' ' || w[n] == '\n' || w[n] == '\0');
}

int pmi_wire_mapping(const uint32_t *count, size_t nnodes, char *out, size_t max)
{
	size_t len = 0;
	int n = snprintf(out, max, "(vector");
	if (n < 0 || (size_t)n >= max)
		return -1;
	len = (size_t)n;
	for (size_t i = 0; i < nnodes;) {
		size_t j = i + 1;
		while (j < nnodes && count[j] == count[i])
			j++;
		n = snprintf(out + len, max - len, ",(%zu,%zu,%u)", i, j - i, count[i]);
		if (n < 0 || (size_t)n >= max - len)
			return -1;
		len += (size_t)n;
		i = j;
	}
	if (len + 2 > max)
		return -1;
	out[len++] = ')';
	out[len] = '\0';
	return (int)len;
}

int pmi_kv_append(uint8_t **buf, size_t *len, size_t *cap, const char *key, const char *val)
{
	size_t kl = strlen(key) + 1, vl = strlen(val) + 1;
	if (*len + kl + vl > *cap) {
		size_t c = *cap ? *cap : 256;
		while (c < *len + kl + vl)
			c *= 2;
		uint8_t *b = realloc(*buf, c);
		if (!b)
			return -1;
		*buf = b;
		*cap = c;
	}
	memcpy(*buf + *len, key, kl);
	memcpy(*buf + *len + kl, val, vl);
	*len += kl + vl;
	return 0;
}

int pmi_kv_next(const uint8_t *buf, size_t len, size_t *off, const char **key,
		const char **val)
{
	if (*off >= len)
		return 0;
	const uint8_t *k = buf + *off;
	const uint8_t *kz = memchr(k, '\0', len - *off);
	if (!kz || kz == k)
		return -1;
	const uint8_t *v = kz + 1;
	const uint8_t *vz = v < buf + len ? memchr(v, '\0', (size_t)(buf + len - v)) : NULL;
	if (!vz)
		return -1;
	*key = (const char *)k;
	*val = (const char *)v;
	*off = (size_t)(vz + 1 - buf);
	return 1;
}

int pmi_xrec_next(const uint8_t *buf, size_t len, size_t *off, uint32_t *pos,
		  const uint8_t **data, uint32_t *dlen)
{
	if (*off >= len)
		return 0;
	if (len - *off < 8)
		return -1;
	uint32_t h[2];
	memcpy(h, buf + *off, 8);
	if (h[1] > len - *off - 8)
		return -1;
	*pos = h[0];
	*dlen = h[1];
	*data = buf + *off + 8;
	*off += 8 + (size_t)h[1];
	return 1;
}
