/* Pure parsers of the job options storm shares with Slurm (slurmopt.h). */
#include "slurmopt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int read_uint(const char **p, uint64_t max, uint64_t *v)
{
	if (**p < '0' || **p > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long n = strtoull(*p, &end, 10);
	if (errno || n > max)
		return -1;
	*v = n;
	*p = end;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

int parse_array(const char *s, uint32_t **tasks, size_t *n, uint32_t *limit, char *why,
		size_t len)
{
	uint32_t *v = NULL;
	size_t k = 0, cap = 0;
	const char *p = s;
	uint64_t lim = 0;
	for (;;) {
		uint64_t a, b, step = 1;
		if (read_uint(&p, ARRAY_MAX_INDEX, &a) < 0)
			goto bad;
		b = a;
		if (*p == '-') {
			p++;
			if (read_uint(&p, ARRAY_MAX_INDEX, &b) < 0 || b < a)
				goto bad;
			if (*p == ':') {
				p++;
				if (read_uint(&p, ARRAY_MAX_INDEX, &step) < 0 || step == 0)
					goto bad;
			}
		}
		for (uint64_t t = a; t <= b; t += step) {
			if (k == ARRAY_MAX_TASKS) {
				snprintf(why, len, "--array makes more than %u tasks", ARRAY_MAX_TASKS);
				free(v);
				return -1;
			}
			if (k == cap) {
				cap = cap ? 2 * cap : 16;
				uint32_t *nv = realloc(v, sizeof(*v) * cap);
				if (!nv) {
					snprintf(why, len, "out of memory");
					free(v);
					return -1;
				}
				v = nv;
			}
			v[k++] = (uint32_t)t;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		break;
	}
	if (*p == '%') {
		p++;
		if (read_uint(&p, ARRAY_MAX_TASKS, &lim) < 0 || lim == 0)
			goto bad;
	}
	if (*p)
		goto bad;
	qsort(v, k, sizeof(*v), cmp_u32);
	size_t w = 0;
	for (size_t i = 0; i < k; i++)
		if (!w || v[w - 1] != v[i])
			v[w++] = v[i];
	*tasks = v;
	*n = w;
	*limit = (uint32_t)lim;
	return 0;
bad:
	free(v);
	snprintf(why, len,
		 "--array wants task ids from 0 to %u as N, N-M, N-M:STEP joined by commas, "
		 "with %%LIMIT at the end, not '%s'",
		 ARRAY_MAX_INDEX, s);
	return -1;
}

static const struct {
	const char *name;
	enum dep_kind kind;
} dep_kinds[] = {
	{ "after", DEP_AFTER },
	{ "afterok", DEP_AFTEROK },
	{ "afterany", DEP_AFTERANY },
	{ "afternotok", DEP_AFTERNOTOK },
};

const char *dep_kind_name(enum dep_kind k)
{
	for (size_t i = 0; i < sizeof(dep_kinds) / sizeof(dep_kinds[0]); i++)
		if (dep_kinds[i].kind == k)
			return dep_kinds[i].name;
	return "?";
}

int parse_dependency(const char *s, struct dep *out, size_t *n, char *why, size_t len)
{
	size_t k = 0;
	const char *p = s;
	for (;;) {
		size_t w = strcspn(p, ":,");
		enum dep_kind kind = 0;
		for (size_t i = 0; i < sizeof(dep_kinds) / sizeof(dep_kinds[0]); i++)
			if (strlen(dep_kinds[i].name) == w && !strncmp(p, dep_kinds[i].name, w))
				kind = dep_kinds[i].kind;
		if (!kind) {
			snprintf(why, len,
				 "--dependency: '%.*s' is not after, afterok, afterany or afternotok",
				 (int)w, p);
			return -1;
		}
		p += w;
		if (*p != ':') {
			snprintf(why, len, "--dependency: %s wants :JOBID", dep_kind_name(kind));
			return -1;
		}
		while (*p == ':') {
			p++;
			char id[48];
			size_t iw = strcspn(p, ":,");
			if (iw == 0 || iw >= sizeof(id)) {
				snprintf(why, len, "--dependency: an empty or overlong job id in '%s'", s);
				return -1;
			}
			memcpy(id, p, iw);
			id[iw] = '\0';
			if (k == DEP_MAX) {
				snprintf(why, len, "--dependency names more than %d jobs", DEP_MAX);
				return -1;
			}
			if (jobid_parse(id, &out[k].job) < 0) {
				snprintf(why, len, "--dependency: '%s' is not a job id", id);
				return -1;
			}
			out[k++].kind = kind;
			p += iw;
		}
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p) {
			snprintf(why, len, "--dependency: unexpected '%s'", p);
			return -1;
		}
		break;
	}
	*n = k;
	return 0;
}

static bool valid_name(const char *s, size_t n)
{
	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

int export_env(const char *spec, char *const *env, char ***out, size_t *n, char **buf,
	       char *why, size_t len)
{
	size_t nenv = 0;
	while (env[nenv])
		nenv++;
	size_t nent = 1;
	for (const char *c = spec; *c; c++)
		nent += *c == ',';
	char *copy = strdup(spec);
	char **v = calloc(nenv + nent + 1, sizeof(char *));
	char **ent = calloc(nent, sizeof(char *));
	if (!copy || !v || !ent) {
		snprintf(why, len, "out of memory");
		goto fail;
	}
	bool all = false, none = false;
	size_t m = 0;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (!strcmp(t, "ALL"))
			all = true;
		else if (!strcmp(t, "NONE"))
			none = true;
		else if (!valid_name(t, strcspn(t, "="))) {
			snprintf(why, len, "--export: '%s' is not ALL, NONE, NAME or NAME=VALUE", t);
			goto fail;
		} else
			ent[m++] = t;
	}
	if (none && (all || m)) {
		snprintf(why, len, "--export=NONE goes alone");
		goto fail;
	}
	if (!all && !none && !m) {
		snprintf(why, len, "--export wants ALL, NONE or names");
		goto fail;
	}
	size_t k = 0;
	/* a name given with its value replaces the caller's */
	for (size_t i = 0; i < nenv; i++) {
		size_t nl = strcspn(env[i], "=");
		bool listed = false, overridden = false;
		for (size_t e = 0; e < m; e++)
			if (strcspn(ent[e], "=") == nl && !strncmp(ent[e], env[i], nl)) {
				listed = true;
				overridden |= ent[e][nl] == '=';
			}
		if ((all || listed) && !overridden)
			v[k++] = env[i];
	}
	for (size_t e = 0; e < m; e++)
		if (strchr(ent[e], '='))
			v[k++] = ent[e];
	v[k] = NULL;
	free(ent);
	*out = v;
	*n = k;
	*buf = copy;
	return 0;
fail:
	free(copy);
	free(v);
	free(ent);
	return -1;
}

/* Splits one directive's text into words in place; -1 on an open quote. */
static int split_words(char *s, char **argv, int max, int *argc)
{
	int n = 0;
	char *r = s, *w = s;
	for (;;) {
		while (*r == ' ' || *r == '\t')
			r++;
		if (!*r || *r == '#')
			break;
		if (n == max)
			return -1;
		argv[n++] = w;
		while (*r && *r != ' ' && *r != '\t') {
			if (*r == '\'' || *r == '"') {
				char q = *r++;
				while (*r && *r != q) {
					if (q == '"' && *r == '\\' && r[1])
						r++;
					*w++ = *r++;
				}
				if (*r != q)
					return -1;
				r++;
			} else if (*r == '\\' && r[1]) {
				r++;
				*w++ = *r++;
			} else {
				*w++ = *r++;
			}
		}
		bool end = !*r;
		*w++ = '\0';
		if (end)
			break;
		r++;
	}
	*argc = n;
	return 0;
}

int script_directives(const char *text, size_t len, directive_fn fn, void *arg, char *why,
		      size_t whylen)
{
	size_t at = 0;
	int line = 0;
	while (at < len) {
		size_t end = at;
		while (end < len && text[end] != '\n')
			end++;
		line++;
		const char *l = text + at;
		size_t n = end - at;
		at = end + 1;
		size_t i = 0;
		while (i < n && (l[i] == ' ' || l[i] == '\t' || l[i] == '\r'))
			i++;
		if (i == n)
			continue; /* blank */
		if (l[i] != '#')
			break; /* the first command: directives end */
		bool sbatch = n - i >= 7 && !strncmp(l + i, "#SBATCH", 7);
		bool storm = n - i >= 6 && !strncmp(l + i, "#STORM", 6);
		size_t plen = sbatch ? 7 : 6;
		if (!(sbatch || storm) || (n - i > plen && l[i + plen] != ' ' && l[i + plen] != '\t'))
			continue; /* another comment, or #STORMY */
		char buf[4096];
		size_t bl = n - i - plen;
		if (bl >= sizeof(buf)) {
			snprintf(why, whylen, "line %d: directive longer than %zu bytes", line,
				 sizeof(buf) - 1);
			return -1;
		}
		memcpy(buf, l + i + plen, bl);
		buf[bl] = '\0';
		buf[strcspn(buf, "\r")] = '\0';
		char *argv[129];
		int argc = 0;
		argv[0] = sbatch ? "#SBATCH" : "#STORM";
		if (split_words(buf, argv + 1, 127, &argc) < 0) {
			snprintf(why, whylen, "line %d: unbalanced quotes or too many words", line);
			return -1;
		}
		argv[argc + 1] = NULL;
		if (argc == 0)
			continue;
		int rc = fn(arg, line, sbatch, argc + 1, argv);
		if (rc)
			return rc;
	}
	return 0;
}
