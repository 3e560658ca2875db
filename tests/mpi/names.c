/* Object names and datatype envelopes, and the constants MPICH's test
 * harness (util/mtest.c) needs: Comm/Type/Win_set_name and _get_name
 * (predefined names, a duplicate's, names cut at MPI_MAX_OBJECT_NAME - 1),
 * Type_get_envelope of every constructor, MPI_KEYVAL_INVALID and
 * MPI_WIN_NULL_COPY_FN / _DELETE_FN. */
#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

static void name_is(const char *got, int len, const char *want, const char *what)
{
	check(strcmp(got, want) == 0 && len == (int)strlen(want), nm("%s: '%s'", what, want));
}

static void comm_names(void)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = -1;
	MPI_Comm_get_name(W, name, &len);
	name_is(name, len, "MPI_COMM_WORLD", "comm.world");
	MPI_Comm_get_name(MPI_COMM_SELF, name, &len);
	name_is(name, len, "MPI_COMM_SELF", "comm.self");
	MPI_Comm d;
	MPI_Comm_dup(W, &d);
	MPI_Comm_get_name(d, name, &len);
	name_is(name, len, "", "comm.dup_unnamed");
	MPI_Comm_set_name(d, "rows");
	MPI_Comm_get_name(d, name, &len);
	name_is(name, len, "rows", "comm.set");
	MPI_Comm_set_name(d, "columns");
	MPI_Comm_get_name(d, name, &len);
	name_is(name, len, "columns", "comm.set_again");
	MPI_Comm_get_name(W, name, &len);
	name_is(name, len, "MPI_COMM_WORLD", "comm.world_unchanged");
	/* a name too long is cut */
	char lng[MPI_MAX_OBJECT_NAME + 40];
	memset(lng, 'x', sizeof lng - 1);
	lng[sizeof lng - 1] = '\0';
	MPI_Comm_set_name(d, lng);
	MPI_Comm_get_name(d, name, &len);
	checki(len, MPI_MAX_OBJECT_NAME - 1, "comm.long_name_cut");
	checki((long long)strlen(name), MPI_MAX_OBJECT_NAME - 1, "comm.long_name_terminated");
	MPI_Comm_free(&d);
}

static void type_names(void)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = -1;
	static const struct {
		MPI_Datatype t;
		const char *n;
	} predef[] = {
		{MPI_INT, "MPI_INT"},       {MPI_DOUBLE, "MPI_DOUBLE"}, {MPI_CHAR, "MPI_CHAR"},
		{MPI_BYTE, "MPI_BYTE"},     {MPI_2INT, "MPI_2INT"},     {MPI_PACKED, "MPI_PACKED"},
		{MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}, {MPI_FLOAT_INT, "MPI_FLOAT_INT"},
	};
	for (size_t i = 0; i < sizeof predef / sizeof predef[0]; i++) {
		MPI_Type_get_name(predef[i].t, name, &len);
		name_is(name, len, predef[i].n, "type.predefined");
	}
	MPI_Datatype v;
	MPI_Type_vector(2, 1, 2, MPI_INT, &v);
	MPI_Type_get_name(v, name, &len);
	name_is(name, len, "", "type.derived_unnamed");
	MPI_Type_set_name(v, "stride2");
	MPI_Type_get_name(v, name, &len);
	name_is(name, len, "stride2", "type.set");
	MPI_Type_free(&v);
}

static void win_names(void)
{
	char name[MPI_MAX_OBJECT_NAME];
	int len = -1, buf[4];
	MPI_Win w;
	MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, W, &w);
	MPI_Win_set_name(w, "halo");
	MPI_Win_get_name(w, name, &len);
	name_is(name, len, "halo", "win.set");
	MPI_Win_free(&w);
}

/* one constructor's envelope: integers, addresses, datatypes, combiner */
static void envelope_is(MPI_Datatype t, int ni, int na, int nd, int comb, const char *what)
{
	int i = -1, a = -1, d = -1, c = -1;
	MPI_Type_get_envelope(t, &i, &a, &d, &c);
	check(i == ni && a == na && d == nd && c == comb, nm("envelope.%s", what));
	if (comb != MPI_COMBINER_NAMED)
		MPI_Type_free(&t);
}

static void envelopes(void)
{
	MPI_Datatype t;
	int bl[3] = {1, 2, 1}, dp[3] = {0, 4, 9};
	MPI_Aint ad[3] = {0, 16, 40};
	MPI_Datatype ty[3] = {MPI_INT, MPI_DOUBLE, MPI_CHAR};
	envelope_is(MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED, "named");
	MPI_Type_contiguous(3, MPI_INT, &t);
	envelope_is(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous");
	MPI_Type_vector(3, 1, 2, MPI_INT, &t);
	envelope_is(t, 3, 0, 1, MPI_COMBINER_VECTOR, "vector");
	MPI_Type_create_hvector(3, 1, 8, MPI_INT, &t);
	envelope_is(t, 2, 1, 1, MPI_COMBINER_HVECTOR, "hvector");
	MPI_Type_indexed(3, bl, dp, MPI_INT, &t);
	envelope_is(t, 7, 0, 1, MPI_COMBINER_INDEXED, "indexed");
	MPI_Type_create_indexed_block(3, 2, dp, MPI_INT, &t);
	envelope_is(t, 5, 0, 1, MPI_COMBINER_INDEXED_BLOCK, "indexed_block");
	MPI_Type_create_hindexed(3, bl, ad, MPI_INT, &t);
	envelope_is(t, 4, 3, 1, MPI_COMBINER_HINDEXED, "hindexed");
	MPI_Type_create_hindexed_block(3, 2, ad, MPI_INT, &t);
	envelope_is(t, 2, 3, 1, MPI_COMBINER_HINDEXED_BLOCK, "hindexed_block");
	MPI_Type_create_struct(3, bl, ad, ty, &t);
	envelope_is(t, 4, 3, 3, MPI_COMBINER_STRUCT, "struct");
	MPI_Type_create_resized(MPI_INT, -4, 12, &t);
	envelope_is(t, 0, 2, 1, MPI_COMBINER_RESIZED, "resized");
	MPI_Type_dup(MPI_DOUBLE, &t);
	envelope_is(t, 0, 0, 1, MPI_COMBINER_DUP, "dup");
}

static void constants(void)
{
	check(MPI_MAX_OBJECT_NAME >= 64, "const.max_object_name");
	int kv = MPI_KEYVAL_INVALID;
	check(kv != MPI_KEYVAL_INVALID + 1, "const.keyval_invalid");
	MPI_Win_copy_attr_function *cp = MPI_WIN_NULL_COPY_FN;
	MPI_Win_delete_attr_function *dl = MPI_WIN_NULL_DELETE_FN;
	check(cp == NULL && dl == NULL, "const.win_null_fns");
	int combiners[] = {MPI_COMBINER_NAMED, MPI_COMBINER_DUP, MPI_COMBINER_CONTIGUOUS,
			   MPI_COMBINER_VECTOR, MPI_COMBINER_HVECTOR, MPI_COMBINER_INDEXED,
			   MPI_COMBINER_HINDEXED, MPI_COMBINER_INDEXED_BLOCK,
			   MPI_COMBINER_HINDEXED_BLOCK, MPI_COMBINER_STRUCT,
			   MPI_COMBINER_SUBARRAY, MPI_COMBINER_DARRAY, MPI_COMBINER_RESIZED};
	int distinct = 1, n = (int)(sizeof combiners / sizeof combiners[0]);
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			distinct &= combiners[i] != combiners[j];
	check(distinct, "const.combiners_distinct");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	comm_names();
	type_names();
	win_names();
	envelopes();
	constants();
	return suite_finish("names");
}
