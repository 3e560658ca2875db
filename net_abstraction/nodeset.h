/* Node sets: fixed-capacity bitmaps of node ids, and their wire form. Pure. */
#ifndef STORM_NODESET_H
#define STORM_NODESET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SN_MAX_NODES 1024

struct sn_nodeset {
	uint64_t w[SN_MAX_NODES / 64];
};

void sn_set_clear(struct sn_nodeset *s);
void sn_set_add(struct sn_nodeset *s, uint32_t node);
void sn_set_del(struct sn_nodeset *s, uint32_t node);
bool sn_set_has(const struct sn_nodeset *s, uint32_t node);
/* [first, last] inclusive; ignored beyond SN_MAX_NODES. */
void sn_set_range(struct sn_nodeset *s, uint32_t first, uint32_t last);
uint32_t sn_set_count(const struct sn_nodeset *s);
bool sn_set_empty(const struct sn_nodeset *s);
/* Lowest member >= from, or UINT32_MAX. */
uint32_t sn_set_next(const struct sn_nodeset *s, uint32_t from);
/* Highest member + 1 (0 for the empty set). */
uint32_t sn_set_span(const struct sn_nodeset *s);
void sn_set_or(struct sn_nodeset *d, const struct sn_nodeset *a);
void sn_set_andnot(struct sn_nodeset *d, const struct sn_nodeset *a);
bool sn_set_equal(const struct sn_nodeset *a, const struct sn_nodeset *b);

/* Wire form: the low ceil(nbits/8) bytes, little-endian bit order. */
size_t sn_set_wire_size(uint32_t nbits);
void sn_set_encode(const struct sn_nodeset *s, uint32_t nbits, uint8_t *out);
/* Fails (-EINVAL) if a bit at or beyond nbits is set. */
int sn_set_decode(struct sn_nodeset *s, uint32_t nbits, const uint8_t *in);

/* "0-3,7,9-10" for messages; returns snprintf's count. */
int sn_set_format(const struct sn_nodeset *s, char *buf, size_t len);
/* Parses that form; -EINVAL on a malformed list or a node >= limit. */
int sn_set_parse(struct sn_nodeset *s, const char *str, uint32_t limit);

#endif
