/* BCS-MPI info objects: ordered lists of (key, value) strings, local to the
 * rank. Keys keep the order of their first MPI_Info_set, as MPICH's do, so
 * MPI_Info_get_nthkey answers the same under both. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bcs.h"

struct info {
	int used;
	int n, cap;
	char **key, **val;
};

static struct info *infos;
static int ninfos;

/* MPI_INFO_ENV: what the rank was started with (MPI-3.1 §10.3.1), made on
 * first use from what the process itself knows */
static int info_env_fill(struct info *in);

static struct info *info_get(MPI_Info h)
{
	if (h <= 0 || h >= ninfos || !infos[h].used)
		return NULL;
	return &infos[h];
}

static int info_init(void)
{
	if (infos)
		return MPI_SUCCESS;
	infos = calloc(16, sizeof(*infos));
	if (!infos)
		return MPI_ERR_NO_MEM;
	ninfos = 16;
	infos[MPI_INFO_ENV].used = 1;
	return info_env_fill(&infos[MPI_INFO_ENV]);
}

static MPI_Info info_alloc(void)
{
	for (int i = MPI_INFO_ENV + 1; i < ninfos; i++)
		if (!infos[i].used) {
			memset(&infos[i], 0, sizeof(infos[i]));
			infos[i].used = 1;
			return i;
		}
	struct info *v = realloc(infos, (size_t)ninfos * 2 * sizeof(*v));
	if (!v)
		return MPI_INFO_NULL;
	memset(v + ninfos, 0, (size_t)ninfos * sizeof(*v));
	infos = v;
	int h = ninfos;
	ninfos *= 2;
	infos[h].used = 1;
	return h;
}

static int info_find(const struct info *in, const char *key)
{
	for (int i = 0; i < in->n; i++)
		if (!strcmp(in->key[i], key))
			return i;
	return -1;
}

static int key_check(const char *key)
{
	if (!key)
		return MPI_ERR_INFO_KEY;
	size_t l = strlen(key);
	return l == 0 || l > MPI_MAX_INFO_KEY ? MPI_ERR_INFO_KEY : MPI_SUCCESS;
}

static int info_put(struct info *in, const char *key, const char *val)
{
	char *v = strdup(val);
	if (!v)
		return MPI_ERR_NO_MEM;
	int i = info_find(in, key);
	if (i >= 0) {
		free(in->val[i]);
		in->val[i] = v;
		return MPI_SUCCESS;
	}
	if (in->n == in->cap) {
		int cap = in->cap ? in->cap * 2 : 8;
		char **k = realloc(in->key, (size_t)cap * sizeof(char *));
		if (k)
			in->key = k;
		char **w = k ? realloc(in->val, (size_t)cap * sizeof(char *)) : NULL;
		if (!w) {
			free(v);
			return MPI_ERR_NO_MEM;
		}
		in->val = w;
		in->cap = cap;
	}
	in->key[in->n] = strdup(key);
	if (!in->key[in->n]) {
		free(v);
		return MPI_ERR_NO_MEM;
	}
	in->val[in->n++] = v;
	return MPI_SUCCESS;
}

static void info_clear(struct info *in)
{
	for (int i = 0; i < in->n; i++) {
		free(in->key[i]);
		free(in->val[i]);
	}
	free(in->key);
	free(in->val);
	memset(in, 0, sizeof(*in));
}

static int info_env_fill(struct info *in)
{
	int size = 0, rc;
	char n[16];
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	snprintf(n, sizeof(n), "%d", size);
	rc = info_put(in, "command", program_invocation_name);
	if (!rc)
		rc = info_put(in, "maxprocs", n);
	if (!rc)
		rc = info_put(in, "thread_level", "MPI_THREAD_FUNNELED");
	return rc;
}

/* an MPI call on an info: in is it, or the call fails */
#define INFO(h, fn)                                                                    \
	bcs_need_init(fn);                                                             \
	if (info_init())                                                               \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn);                    \
	struct info *in = info_get(h);                                                 \
	if (!in)                                                                       \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INFO, fn)

int MPI_Info_create(MPI_Info *info)
{
	bcs_need_init("MPI_Info_create");
	MPI_Info h = info_init() ? MPI_INFO_NULL : info_alloc();
	if (h == MPI_INFO_NULL)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Info_create");
	*info = h;
	return MPI_SUCCESS;
}

int MPI_Info_set(MPI_Info info, const char *key, const char *value)
{
	INFO(info, "MPI_Info_set");
	int rc = key_check(key);
	if (!rc && (!value || strlen(value) > MPI_MAX_INFO_VAL))
		rc = MPI_ERR_INFO_VALUE;
	if (!rc)
		rc = info_put(in, key, value);
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Info_set");
}

/* copies at most valuelen characters of the value, and a terminating NUL
 * (the caller's buffer holds valuelen + 1, MPI-3.1 §9) */
int MPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
	INFO(info, "MPI_Info_get");
	int rc = key_check(key);
	if (!rc && valuelen < 0)
		rc = MPI_ERR_ARG;
	if (rc)
		return bcs_err(MPI_COMM_WORLD, rc, "MPI_Info_get");
	int i = info_find(in, key);
	*flag = i >= 0;
	if (i >= 0) {
		size_t l = strnlen(in->val[i], (size_t)valuelen);
		memcpy(value, in->val[i], l);
		value[l] = '\0';
	}
	return MPI_SUCCESS;
}

int MPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
	INFO(info, "MPI_Info_get_valuelen");
	int rc = key_check(key);
	if (rc)
		return bcs_err(MPI_COMM_WORLD, rc, "MPI_Info_get_valuelen");
	int i = info_find(in, key);
	*flag = i >= 0;
	if (i >= 0)
		*valuelen = (int)strlen(in->val[i]);
	return MPI_SUCCESS;
}

int MPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
	INFO(info, "MPI_Info_get_nkeys");
	*nkeys = in->n;
	return MPI_SUCCESS;
}

int MPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
	INFO(info, "MPI_Info_get_nthkey");
	if (n < 0 || n >= in->n)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Info_get_nthkey");
	/* the caller's buffer may hold only MPI_MAX_INFO_KEY bytes (as MPICH
	 * does, the longest key loses its last character) */
	snprintf(key, MPI_MAX_INFO_KEY, "%s", in->key[n]);
	return MPI_SUCCESS;
}

int MPI_Info_delete(MPI_Info info, const char *key)
{
	INFO(info, "MPI_Info_delete");
	int rc = key_check(key);
	if (rc)
		return bcs_err(MPI_COMM_WORLD, rc, "MPI_Info_delete");
	int i = info_find(in, key);
	if (i < 0)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INFO_NOKEY, "MPI_Info_delete");
	free(in->key[i]);
	free(in->val[i]);
	memmove(&in->key[i], &in->key[i + 1], (size_t)(in->n - i - 1) * sizeof(char *));
	memmove(&in->val[i], &in->val[i + 1], (size_t)(in->n - i - 1) * sizeof(char *));
	in->n--;
	return MPI_SUCCESS;
}

int MPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
	INFO(info, "MPI_Info_dup");
	MPI_Info h = info_alloc();
	if (h == MPI_INFO_NULL)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Info_dup");
	in = &infos[info]; /* info_alloc may have moved the table */
	for (int i = 0; i < in->n; i++)
		if (info_put(&infos[h], in->key[i], in->val[i])) {
			info_clear(&infos[h]);
			return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Info_dup");
		}
	*newinfo = h;
	return MPI_SUCCESS;
}

int MPI_Info_free(MPI_Info *info)
{
	INFO(*info, "MPI_Info_free");
	if (*info == MPI_INFO_ENV)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INFO, "MPI_Info_free");
	info_clear(in);
	*info = MPI_INFO_NULL;
	return MPI_SUCCESS;
}
