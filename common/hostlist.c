/* Slurm-style host lists, expanded and compressed (hostlist.h). */
#include "hostlist.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	/* it quotes the list: keep it one line */
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return -1;
}

/* One element: PREFIX or PREFIX[RANGES]SUFFIX, where SUFFIX may hold more
 * ranges (rack[1-2]n[01-04]); ranges keep the width of their lower bound
 * ("00-07" gives two digits). */
static int expand_one(const char *el, size_t ellen, char (*names)[HOSTNAME_MAX], int n,
		      int max, char *err, size_t errlen)
{
	const char *lb = memchr(el, '[', ellen);
	if (!lb) {
		if (ellen == 0)
			return errf(err, errlen, "empty host name");
		if (ellen >= HOSTNAME_MAX)
			return errf(err, errlen, "host name '%.*s' is too long", (int)ellen, el);
		/* a name with ']' would not read back from a compressed list */
		if (memchr(el, ']', ellen))
			return errf(err, errlen, "unmatched ']' in '%.*s'", (int)ellen, el);
		if (n >= max)
			return errf(err, errlen, "more than %d hosts", max);
		memcpy(names[n], el, ellen);
		names[n][ellen] = '\0';
		return n + 1;
	}
	const char *rb = memchr(lb, ']', ellen - (size_t)(lb - el));
	if (!rb)
		return errf(err, errlen, "unclosed '[' in '%.*s'", (int)ellen, el);
	int plen = (int)(lb - el);
	const char *suffix = rb + 1;
	int slen = (int)(el + ellen - suffix);
	const char *p = lb + 1;
	if (p == rb) /* "n[]" named no host at all, and a cluster of none loaded */
		return errf(err, errlen, "empty range in '%.*s'", (int)ellen, el);
	while (p < rb) {
		if (!isdigit((unsigned char)*p))
			return errf(err, errlen, "bad range in '%.*s'", (int)ellen, el);
		char *end;
		errno = 0;
		unsigned long lo = strtoul(p, &end, 10), hi = lo;
		int width = (int)(end - p);
		p = end;
		if (*p == '-') {
			p++;
			if (!isdigit((unsigned char)*p))
				return errf(err, errlen, "bad range in '%.*s'", (int)ellen, el);
			hi = strtoul(p, &end, 10);
			p = end;
		}
		if (errno == ERANGE)
			return errf(err, errlen, "number too large in '%.*s'", (int)ellen, el);
		if (hi < lo || hi - lo > 100000)
			return errf(err, errlen, "bad range %lu-%lu in '%.*s'", lo, hi,
				    (int)ellen, el);
		if (*p == ',')
			p++;
		else if (p != rb)
			return errf(err, errlen, "bad range in '%.*s'", (int)ellen, el);
		for (unsigned long v = lo; v <= hi; v++) {
			if (n >= max)
				return errf(err, errlen, "more than %d hosts", max);
			/* the suffix may hold further ranges, as in rack[1-2]n[01-04] */
			char one[HOSTNAME_MAX + 1];
			int w = snprintf(one, sizeof(one), "%.*s%0*lu", plen, el, width, v);
			if (w >= HOSTNAME_MAX)
				return errf(err, errlen, "host name in '%.*s' is too long",
					    (int)ellen, el);
			char *next = malloc((size_t)w + (size_t)slen + 1);
			if (!next)
				return errf(err, errlen, "out of memory");
			memcpy(next, one, (size_t)w);
			memcpy(next + w, suffix, (size_t)slen);
			next[w + slen] = '\0';
			n = expand_one(next, (size_t)(w + slen), names, n, max, err, errlen);
			free(next);
			if (n < 0)
				return -1;
			if (v == hi)
				break; /* hi may be ULONG_MAX, where v++ wraps to 0 */
		}
	}
	return n;
}

int hostlist_expand(const char *spec, char (*names)[HOSTNAME_MAX], int max,
		    char *err, size_t errlen)
{
	int n = 0, depth = 0;
	const char *start = spec;
	for (const char *p = spec;; p++) {
		if (*p == '[')
			depth++;
		else if (*p == ']')
			depth--;
		if ((*p == ',' && depth == 0) || *p == '\0') {
			const char *s = start, *e = p;
			while (s < e && isspace((unsigned char)*s))
				s++;
			while (e > s && isspace((unsigned char)e[-1]))
				e--;
			n = expand_one(s, (size_t)(e - s), names, n, max, err, errlen);
			if (n < 0)
				return -1;
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (strcmp(names[i], names[j]) == 0)
				return errf(err, errlen, "host '%s' is listed twice", names[i]);
	return n;
}

/* Splits a name into prefix length and trailing number (-1 if none). */
static long split(const char *s, int *plen, int *width)
{
	int len = (int)strlen(s), i = len;
	while (i > 0 && isdigit((unsigned char)s[i - 1]))
		i--;
	*plen = i;
	*width = len - i;
	if (i == len || len - i > 9)
		return -1;
	return strtol(s + i, NULL, 10);
}

size_t hostlist_compress(const char *const *names, int n, char *out, size_t outlen)
{
	size_t w = 0;
#define PUT(...)                                                                  \
	do {                                                                      \
		int k_ = snprintf(out + (w < outlen ? w : outlen ? outlen - 1 : 0), \
				  w < outlen ? outlen - w : 0, __VA_ARGS__);      \
		w += (size_t)(k_ > 0 ? k_ : 0);                                   \
	} while (0)
	if (outlen)
		out[0] = '\0';
	int i = 0;
	while (i < n) {
		int plen, width;
		long v = split(names[i], &plen, &width);
		if (w)
			PUT(",");
		if (v < 0) {
			PUT("%s", names[i]);
			i++;
			continue;
		}
		/* the run of names sharing prefix and width */
		int j = i + 1;
		for (; j < n; j++) {
			int pl2, w2;
			long v2 = split(names[j], &pl2, &w2);
			if (v2 < 0 || pl2 != plen || w2 != width ||
			    strncmp(names[i], names[j], (size_t)plen) != 0)
				break;
		}
		if (j - i == 1) {
			PUT("%s", names[i]);
			i++;
			continue;
		}
		PUT("%.*s[", plen, names[i]);
		int k = i;
		while (k < j) {
			long lo = split(names[k], &plen, &width), hi = lo;
			int m = k + 1;
			while (m < j && split(names[m], &plen, &width) == hi + 1)
				hi++, m++;
			PUT("%s%0*ld", k > i ? "," : "", width, lo);
			if (hi > lo)
				PUT("-%0*ld", width, hi);
			k = m;
		}
		PUT("]");
		i = j;
	}
#undef PUT
	return w;
}
