/* Info objects: MPI_Info_create/set/get/get_valuelen/get_nkeys/get_nthkey/
 * delete/dup/free, keys in the order first set, a value replaced in place,
 * the error classes of a missing key and of a key or value too long,
 * MPI_INFO_ENV, an info handed to a call that takes one, and a
 * communicator's hints (Comm_dup_with_info, Comm_set_info, Comm_get_info). */
#include "suite.h"

static void value_is(MPI_Info in, const char *key, const char *want, const char *what)
{
	char v[MPI_MAX_INFO_VAL + 1] = "";
	int flag = -1, len = -1;
	MPI_Info_get(in, key, MPI_MAX_INFO_VAL, v, &flag);
	check(flag == 1 && strcmp(v, want) == 0, nm("%s: %s=%s", what, key, want));
	MPI_Info_get_valuelen(in, key, &len, &flag);
	checki(len, (long long)strlen(want), nm("%s: valuelen of %s", what, key));
}

static void absent(MPI_Info in, const char *key, const char *what)
{
	char v[16] = "unset";
	int flag = -1, len = -7;
	MPI_Info_get(in, key, sizeof v - 1, v, &flag);
	check(flag == 0 && strcmp(v, "unset") == 0, nm("%s: no %s", what, key));
	MPI_Info_get_valuelen(in, key, &len, &flag);
	check(flag == 0 && len == -7, nm("%s: no valuelen of %s", what, key));
}

static void keys_are(MPI_Info in, const char *const *want, int n, const char *what)
{
	int got = -1;
	MPI_Info_get_nkeys(in, &got);
	checki(got, n, nm("%s: nkeys", what));
	for (int i = 0; i < n && i < got; i++) {
		char k[MPI_MAX_INFO_KEY + 1] = "";
		MPI_Info_get_nthkey(in, i, k);
		check(strcmp(k, want[i]) == 0, nm("%s: key %d is %s", what, i, want[i]));
	}
}

static void basics(void)
{
	MPI_Info in;
	checkrc(MPI_Info_create(&in), MPI_SUCCESS, "create");
	check(in != MPI_INFO_NULL, "create: not MPI_INFO_NULL");
	keys_are(in, NULL, 0, "empty");
	absent(in, "host", "empty");
	char rk[16];
	snprintf(rk, sizeof rk, "%d", rank);
	MPI_Info_set(in, "host", "node0");
	MPI_Info_set(in, "rank", rk);
	MPI_Info_set(in, "wdir", "/tmp/x y");
	static const char *const three[] = {"host", "rank", "wdir"};
	keys_are(in, three, 3, "set");
	value_is(in, "host", "node0", "set");
	value_is(in, "rank", rk, "set");
	value_is(in, "wdir", "/tmp/x y", "set");
	/* a key set again keeps its place */
	MPI_Info_set(in, "host", "a much longer value than before");
	keys_are(in, three, 3, "reset");
	value_is(in, "host", "a much longer value than before", "reset");
	MPI_Info_set(in, "empty", "");
	value_is(in, "empty", "", "empty value");

	MPI_Info d;
	checkrc(MPI_Info_dup(in, &d), MPI_SUCCESS, "dup");
	static const char *const four[] = {"host", "rank", "wdir", "empty"};
	keys_are(d, four, 4, "dup");
	value_is(d, "rank", rk, "dup");
	/* the two are independent */
	MPI_Info_delete(in, "rank");
	MPI_Info_set(d, "wdir", "/elsewhere");
	static const char *const left[] = {"host", "wdir", "empty"};
	keys_are(in, left, 3, "delete");
	absent(in, "rank", "delete");
	value_is(in, "wdir", "/tmp/x y", "original after dup's set");
	value_is(d, "rank", rk, "dup after original's delete");
	value_is(d, "wdir", "/elsewhere", "dup's set");

	checkrc(MPI_Info_free(&in), MPI_SUCCESS, "free");
	check(in == MPI_INFO_NULL, "free: MPI_INFO_NULL");
	value_is(d, "host", "a much longer value than before", "dup after original's free");
	MPI_Info_free(&d);
}

static void errors(void)
{
	MPI_Info in;
	MPI_Info_create(&in);
	MPI_Info_set(in, "a", "1");
	checkrc(MPI_Info_delete(in, "b"), MPI_ERR_INFO_NOKEY, "error: delete a missing key");
	static char big[MPI_MAX_INFO_VAL + 2];
	memset(big, 'k', MPI_MAX_INFO_KEY + 1);
	checkrc(MPI_Info_set(in, big, "v"), MPI_ERR_INFO_KEY, "error: key too long");
	memset(big, 'v', MPI_MAX_INFO_VAL + 1);
	checkrc(MPI_Info_set(in, "a", big), MPI_ERR_INFO_VALUE, "error: value too long");
	value_is(in, "a", "1", "error: value kept");
	/* the longest key and value allowed */
	big[MPI_MAX_INFO_VAL] = '\0';
	checkrc(MPI_Info_set(in, "a", big), MPI_SUCCESS, "longest value");
	int len = -1, flag = 0;
	MPI_Info_get_valuelen(in, "a", &len, &flag);
	checki(len, MPI_MAX_INFO_VAL, "longest value: valuelen");
	memset(big, 'k', MPI_MAX_INFO_KEY);
	big[MPI_MAX_INFO_KEY] = '\0';
	checkrc(MPI_Info_set(in, big, "x"), MPI_SUCCESS, "longest key");
	value_is(in, big, "x", "longest key");
	MPI_Info_free(&in);
}

static void env_and_use(void)
{
	int n = -1;
	checkrc(MPI_Info_get_nkeys(MPI_INFO_ENV, &n), MPI_SUCCESS, "env: nkeys");
	check(n >= 0, "env: nkeys not negative");
	MPI_Info d;
	checkrc(MPI_Info_dup(MPI_INFO_ENV, &d), MPI_SUCCESS, "env: dup");
	int m = -1;
	MPI_Info_get_nkeys(d, &m);
	checki(m, n, "env: dup has its keys");
	MPI_Info_free(&d);

	/* calls that take an info accept one */
	MPI_Info in;
	MPI_Info_create(&in);
	MPI_Info_set(in, "no_locks", "true");
	int buf[2] = {0, 0};
	MPI_Win w;
	checkrc(MPI_Win_create(buf, sizeof buf, sizeof(int), in, MPI_COMM_WORLD, &w), MPI_SUCCESS,
		"win_create with an info");
	MPI_Win_free(&w);
	MPI_Comm c;
	checkrc(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, in, &c),
		MPI_SUCCESS, "comm_split_type with an info");
	MPI_Comm_free(&c);
	MPI_Info_free(&in);
}

static int copied;
static int count_copy(MPI_Comm old, int kv, void *extra, void *in, void *out, int *flag)
{
	(void)old;
	(void)kv;
	(void)extra;
	copied++;
	*(void **)out = in;
	*flag = 1;
	return MPI_SUCCESS;
}

/* a communicator's hints: MPI_Comm_dup_with_info duplicates as
 * MPI_Comm_dup does (attributes copied), MPI_Comm_set_info takes hints,
 * MPI_Comm_get_info returns an info of the program's own, in which a key
 * no implementation knows is not */
static void comm_hints(void)
{
	MPI_Info in, out;
	MPI_Info_create(&in);
	MPI_Info_set(in, "storm_test_unknown_key", "true");
	int kv;
	MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &kv, NULL);
	MPI_Comm_set_attr(MPI_COMM_WORLD, kv, &kv);
	MPI_Comm d = MPI_COMM_NULL;
	checkrc(MPI_Comm_dup_with_info(MPI_COMM_WORLD, in, &d), MPI_SUCCESS, "comm: dup_with_info");
	int res = MPI_UNEQUAL, flag = 0;
	MPI_Comm_compare(d, MPI_COMM_WORLD, &res);
	checki(res, MPI_CONGRUENT, "comm: dup_with_info congruent");
	void *v = NULL;
	MPI_Comm_get_attr(d, kv, &v, &flag);
	check(flag && v == &kv && copied == 1, "comm: dup_with_info copies attributes");
	int one = 1, sum = 0;
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, d);
	checki(sum, size, "comm: dup_with_info works");
	MPI_Comm d2;
	checkrc(MPI_Comm_dup_with_info(d, MPI_INFO_NULL, &d2), MPI_SUCCESS,
		"comm: dup_with_info of MPI_INFO_NULL");
	MPI_Comm_free(&d2);
	checkrc(MPI_Comm_set_info(d, in), MPI_SUCCESS, "comm: set_info");
	checkrc(MPI_Comm_get_info(d, &out), MPI_SUCCESS, "comm: get_info");
	absent(out, "storm_test_unknown_key", "comm: get_info");
	MPI_Info_set(out, "mine", "yes"); /* the program's own info */
	value_is(out, "mine", "yes", "comm: get_info");
	checkrc(MPI_Info_free(&out), MPI_SUCCESS, "comm: get_info's info freed");
	MPI_Info_free(&in);
	MPI_Comm_free(&d);
	MPI_Comm_delete_attr(MPI_COMM_WORLD, kv);
	MPI_Comm_free_keyval(&kv);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	basics();
	errors();
	env_and_use();
	comm_hints();
	return suite_finish("info");
}
