/* Output split into lines, each prefixed with its rank (label.h). */
#include "label.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sb_append(struct strbuf *b, const void *data, size_t len)
{
	if (b->len + len + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + len + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	if (len) /* memcpy may not be given NULL, even for 0 bytes */
		memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
	return 0;
}

void sb_free(struct strbuf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

static int emit(struct strbuf *out, unsigned rank, const char *a, size_t alen, const char *b,
		size_t blen)
{
	char prefix[16];
	int n = snprintf(prefix, sizeof(prefix), "%u: ", rank);
	if (sb_append(out, prefix, (size_t)n) || sb_append(out, a, alen) || sb_append(out, b, blen) ||
	    sb_append(out, "\n", 1))
		return -ENOMEM;
	return 0;
}

static struct label_part *part(struct label_split *l, unsigned rank, int is_stderr)
{
	size_t i = (size_t)rank * 2 + (is_stderr ? 1 : 0);
	if (i >= l->nparts) {
		size_t n = l->nparts ? l->nparts : 16;
		while (n <= i)
			n *= 2;
		struct label_part *p = realloc(l->parts, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + l->nparts, 0, (n - l->nparts) * sizeof(*p));
		l->parts = p;
		l->nparts = n;
	}
	return &l->parts[i];
}

int label_feed(struct label_split *l, unsigned rank, int is_stderr, const void *data,
	       size_t len, struct strbuf *out)
{
	if (len == 0) /* data may be NULL then, and NULL + 0 is undefined */
		return 0;
	struct label_part none = {0};
	struct label_part *p = rank < LABEL_MAX_RANKS ? part(l, rank, is_stderr) : &none;
	if (!p)
		return -ENOMEM;
	const char *s = data, *end = s + len;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		if (!nl)
			break;
		/* the newline itself is written by emit */
		if (emit(out, rank, p->data, p->len, s, (size_t)(nl - s)))
			return -ENOMEM;
		p->len = 0;
		s = nl + 1;
	}
	size_t rest = (size_t)(end - s);
	if (rest == 0)
		return 0;
	if (p->len + rest > LABEL_PARTIAL_MAX || p == &none) {
		int rc = emit(out, rank, p->data, p->len, s, rest);
		p->len = 0;
		return rc;
	}
	if (p->len + rest > p->cap) {
		size_t cap = p->cap ? p->cap : 128;
		while (cap < p->len + rest)
			cap *= 2;
		char *d = realloc(p->data, cap);
		if (!d)
			return -ENOMEM;
		p->data = d;
		p->cap = cap;
	}
	memcpy(p->data + p->len, s, rest);
	p->len += rest;
	return 0;
}

int label_flush(struct label_split *l, struct strbuf out[2])
{
	for (size_t i = 0; i < l->nparts; i++) {
		struct label_part *p = &l->parts[i];
		if (p->len == 0)
			continue;
		if (emit(&out[i & 1], (unsigned)(i / 2), p->data, p->len, "", 0))
			return -ENOMEM;
		p->len = 0;
	}
	return 0;
}

void label_free(struct label_split *l)
{
	for (size_t i = 0; i < l->nparts; i++)
		free(l->parts[i].data);
	free(l->parts);
	memset(l, 0, sizeof(*l));
}
