/* Node sets and their wire form (nodeset.h). Pure. */
#include "nodeset.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sn_set_clear(struct sn_nodeset *s) { memset(s, 0, sizeof(*s)); }

void sn_set_add(struct sn_nodeset *s, uint32_t node)
{
	if (node < SN_MAX_NODES)
		s->w[node / 64] |= 1ull << (node % 64);
}

void sn_set_del(struct sn_nodeset *s, uint32_t node)
{
	if (node < SN_MAX_NODES)
		s->w[node / 64] &= ~(1ull << (node % 64));
}

bool sn_set_has(const struct sn_nodeset *s, uint32_t node)
{
	return node < SN_MAX_NODES && (s->w[node / 64] >> (node % 64)) & 1;
}

void sn_set_range(struct sn_nodeset *s, uint32_t first, uint32_t last)
{
	for (uint32_t n = first; n <= last && n < SN_MAX_NODES; n++)
		sn_set_add(s, n);
}

uint32_t sn_set_count(const struct sn_nodeset *s)
{
	uint32_t c = 0;
	/* sets are mostly small: skip empty words (without -mpopcnt each
	 * popcount is a libgcc call on the per-message path) */
	for (size_t i = 0; i < SN_MAX_NODES / 64; i++)
		if (s->w[i])
			c += (uint32_t)__builtin_popcountll(s->w[i]);
	return c;
}

bool sn_set_empty(const struct sn_nodeset *s)
{
	for (size_t i = 0; i < SN_MAX_NODES / 64; i++)
		if (s->w[i])
			return false;
	return true;
}

uint32_t sn_set_next(const struct sn_nodeset *s, uint32_t from)
{
	if (from >= SN_MAX_NODES)
		return UINT32_MAX;
	size_t i = from / 64;
	uint64_t word = s->w[i] & (~0ull << (from % 64));
	for (;;) {
		if (word)
			return (uint32_t)(i * 64 + (size_t)__builtin_ctzll(word));
		if (++i == SN_MAX_NODES / 64)
			return UINT32_MAX;
		word = s->w[i];
	}
}

uint32_t sn_set_span(const struct sn_nodeset *s)
{
	for (size_t i = SN_MAX_NODES / 64; i-- > 0;)
		if (s->w[i])
			return (uint32_t)(i * 64 + 64 - (size_t)__builtin_clzll(s->w[i]));
	return 0;
}

void sn_set_or(struct sn_nodeset *d, const struct sn_nodeset *a)
{
	for (size_t i = 0; i < SN_MAX_NODES / 64; i++)
		d->w[i] |= a->w[i];
}

void sn_set_andnot(struct sn_nodeset *d, const struct sn_nodeset *a)
{
	for (size_t i = 0; i < SN_MAX_NODES / 64; i++)
		d->w[i] &= ~a->w[i];
}

bool sn_set_equal(const struct sn_nodeset *a, const struct sn_nodeset *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

size_t sn_set_wire_size(uint32_t nbits) { return (nbits + 7) / 8; }

void sn_set_encode(const struct sn_nodeset *s, uint32_t nbits, uint8_t *out)
{
	size_t n = sn_set_wire_size(nbits);
	for (size_t b = 0; b < n; b++)
		out[b] = (uint8_t)(s->w[b / 8] >> (8 * (b % 8)));
	if (nbits % 8)
		out[n - 1] &= (uint8_t)((1u << (nbits % 8)) - 1);
}

int sn_set_decode(struct sn_nodeset *s, uint32_t nbits, const uint8_t *in)
{
	if (nbits > SN_MAX_NODES)
		return -EINVAL;
	size_t n = sn_set_wire_size(nbits);
	sn_set_clear(s);
	for (size_t b = 0; b < n; b++)
		s->w[b / 8] |= (uint64_t)in[b] << (8 * (b % 8));
	if (nbits % 8 && (in[n - 1] >> (nbits % 8)))
		return -EINVAL;
	return 0;
}

int sn_set_format(const struct sn_nodeset *s, char *buf, size_t len)
{
	int total = 0;
	uint32_t n = sn_set_next(s, 0);
	if (len)
		buf[0] = '\0';
	while (n != UINT32_MAX) {
		uint32_t end = n;
		while (end + 1 < SN_MAX_NODES && sn_set_has(s, end + 1))
			end++;
		size_t off = (size_t)total < len ? (size_t)total : len;
		int w = end == n ? snprintf(buf + off, len - off, "%s%u", total ? "," : "", n)
				 : snprintf(buf + off, len - off, "%s%u-%u", total ? "," : "", n, end);
		total += w;
		n = sn_set_next(s, end + 1);
	}
	return total;
}

static int parse_node(const char **p, uint32_t limit, uint32_t *out)
{
	char *end;
	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	unsigned long v = strtoul(*p, &end, 10);
	if (errno || v >= limit || v >= SN_MAX_NODES)
		return -EINVAL;
	*p = end;
	*out = (uint32_t)v;
	return 0;
}

int sn_set_parse(struct sn_nodeset *s, const char *str, uint32_t limit)
{
	const char *p = str;
	sn_set_clear(s);
	if (!*p)
		return 0;
	for (;;) {
		uint32_t a, b;
		if (parse_node(&p, limit, &a))
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p++;
			if (parse_node(&p, limit, &b) || b < a)
				return -EINVAL;
		}
		sn_set_range(s, a, b);
		if (!*p)
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}
