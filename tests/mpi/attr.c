/* Attribute caching: keyvals of communicators, datatypes and windows, their
 * copy callbacks run by MPI_Comm_dup and MPI_Type_dup (MPI_*_DUP_FN, the
 * null ones, the program's own), the delete callbacks run when a value is
 * replaced or deleted and when its object is freed (also after its keyval
 * was freed), the predefined attributes of MPI_COMM_WORLD and of windows,
 * MPI_ERR_KEYVAL, a keyval freed again while values hold it, and the
 * deprecated MPI_Keyval_create/Attr_put/get/delete. */
#include <stdint.h>

#include "suite.h"

/* what the program's callbacks saw: calls, and the sum of the values */
struct seen {
	int copies, deletes;
	long copied, deleted;
};

static int copy_plus_one(MPI_Comm old, int kv, void *extra, void *in, void *out, int *flag)
{
	(void)old;
	(void)kv;
	struct seen *s = extra;
	s->copies++;
	s->copied += (long)(intptr_t)in;
	*(void **)out = (void *)((intptr_t)in + 1);
	*flag = 1;
	return MPI_SUCCESS;
}

static int delete_count(MPI_Comm c, int kv, void *val, void *extra)
{
	(void)c;
	(void)kv;
	struct seen *s = extra;
	s->deletes++;
	s->deleted += (long)(intptr_t)val;
	return MPI_SUCCESS;
}

static int type_delete(MPI_Datatype t, int kv, void *val, void *extra)
{
	return delete_count(t, kv, val, extra);
}

static int win_delete(MPI_Win w, int kv, void *val, void *extra)
{
	return delete_count(w, kv, val, extra);
}

/* refuses while *extra is set */
static int refuse_delete(MPI_Comm c, int kv, void *val, void *extra)
{
	(void)c;
	(void)kv;
	(void)val;
	return *(int *)extra ? MPI_ERR_OTHER : MPI_SUCCESS;
}

/* the value of kv on comm: -1 when absent */
static long comm_val(MPI_Comm c, int kv)
{
	void *v = NULL;
	int flag = -1;
	MPI_Comm_get_attr(c, kv, &v, &flag);
	return flag ? (long)(intptr_t)v : -1;
}

static void comm_attrs(void)
{
	struct seen s = {0, 0, 0, 0};
	int mine, dupd, none;
	checkrc(MPI_Comm_create_keyval(copy_plus_one, delete_count, &mine, &s), MPI_SUCCESS,
		"comm: create_keyval");
	check(mine != MPI_KEYVAL_INVALID, "comm: keyval valid");
	MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &dupd, NULL);
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_count, &none, &s);
	MPI_Comm a, b;
	MPI_Comm_dup(MPI_COMM_WORLD, &a);
	checki(comm_val(a, mine), -1, "comm: unset");
	checkrc(MPI_Comm_set_attr(a, mine, (void *)(intptr_t)(10 + rank)), MPI_SUCCESS,
		"comm: set_attr");
	checki(comm_val(a, mine), 10 + rank, "comm: get_attr");
	MPI_Comm_set_attr(a, mine, (void *)(intptr_t)(20 + rank));
	check(s.deletes == 1 && s.deleted == 10 + rank, "comm: a replaced value is deleted");
	checki(comm_val(a, mine), 20 + rank, "comm: replaced");
	MPI_Comm_set_attr(a, dupd, (void *)(intptr_t)7);
	MPI_Comm_set_attr(a, none, (void *)(intptr_t)5);
	checki(comm_val(MPI_COMM_WORLD, mine), -1, "comm: another communicator has none");

	MPI_Comm_dup(a, &b);
	check(s.copies == 1 && s.copied == 20 + rank, "comm: dup runs the copy callback");
	checki(comm_val(b, mine), 21 + rank, "comm: dup has the copy's value");
	checki(comm_val(b, dupd), 7, "comm: MPI_COMM_DUP_FN copies the value");
	checki(comm_val(b, none), -1, "comm: MPI_COMM_NULL_COPY_FN copies nothing");
	checki(comm_val(a, mine), 20 + rank, "comm: the original keeps its value");

	checkrc(MPI_Comm_delete_attr(a, mine), MPI_SUCCESS, "comm: delete_attr");
	check(s.deletes == 2 && s.deleted == 30 + 2 * rank, "comm: delete runs the callback");
	checki(comm_val(a, mine), -1, "comm: deleted");

	/* a freed keyval's values stay until their objects go */
	checkrc(MPI_Comm_free_keyval(&mine), MPI_SUCCESS, "comm: free_keyval");
	checki(mine, MPI_KEYVAL_INVALID, "comm: free_keyval gives MPI_KEYVAL_INVALID");
	MPI_Comm_free(&b);
	check(s.deletes == 3 && s.deleted == 51 + 3 * rank,
	      "comm: free runs the delete callback of a freed keyval");
	MPI_Comm_free(&a); /* none's value 5 */
	check(s.deletes == 4 && s.deleted == 56 + 3 * rank, "comm: free runs the others'");
	MPI_Comm_free_keyval(&dupd);
	MPI_Comm_free_keyval(&none);
	checkrc(MPI_Comm_get_attr(MPI_COMM_WORLD, none, &(void *){NULL}, &(int){0}),
		MPI_ERR_KEYVAL, "comm: a freed keyval is invalid");

	/* a delete callback's error is the call's */
	static int refuse = 1;
	int stuck;
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, refuse_delete, &stuck, &refuse);
	MPI_Comm_set_attr(MPI_COMM_WORLD, stuck, (void *)(intptr_t)1);
	check(MPI_Comm_delete_attr(MPI_COMM_WORLD, stuck) != MPI_SUCCESS,
	      "comm: a failing delete callback fails delete_attr");
	checki(comm_val(MPI_COMM_WORLD, stuck), 1, "comm: the value stays");
	refuse = 0;
	checkrc(MPI_Comm_delete_attr(MPI_COMM_WORLD, stuck), MPI_SUCCESS,
		"comm: deleted once the callback agrees");
	checki(comm_val(MPI_COMM_WORLD, stuck), -1, "comm: gone");
	MPI_Comm_free_keyval(&stuck);
}

static void predefined(void)
{
	int *v = NULL, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	check(flag && *v >= 32767, "predefined: MPI_TAG_UB at least 32767");
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &v, &flag);
	check(flag && (*v == MPI_PROC_NULL || (*v >= 0 && *v < size)), "predefined: MPI_HOST");
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &v, &flag);
	check(flag && (*v == MPI_ANY_SOURCE || *v == MPI_PROC_NULL || (*v >= 0 && *v < size)),
	      "predefined: MPI_IO");
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &v, &flag);
	check(!flag || *v == 0 || *v == 1, "predefined: MPI_WTIME_IS_GLOBAL");
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &v, &flag);
	check(!flag || *v == 0, "predefined: MPI_APPNUM");
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &v, &flag);
	check(!flag || *v >= size, "predefined: MPI_UNIVERSE_SIZE");
	/* the deprecated call answers the same */
	MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	check(flag && *v >= 32767, "predefined: MPI_Attr_get(MPI_TAG_UB)");
	checkrc(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, &flag), MPI_ERR_KEYVAL,
		"predefined: MPI_TAG_UB cannot be set");
}

static void type_attrs(void)
{
	struct seen s = {0, 0, 0, 0};
	int kv;
	checkrc(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, type_delete, &kv, &s), MPI_SUCCESS,
		"type: create_keyval");
	MPI_Datatype t, d;
	MPI_Type_contiguous(2, MPI_INT, &t);
	checkrc(MPI_Type_set_attr(t, kv, (void *)(intptr_t)3), MPI_SUCCESS, "type: set_attr");
	void *v = NULL;
	int flag = 0;
	MPI_Type_get_attr(t, kv, &v, &flag);
	check(flag && (intptr_t)v == 3, "type: get_attr");
	MPI_Type_dup(t, &d);
	MPI_Type_get_attr(d, kv, &v, &flag);
	check(flag && (intptr_t)v == 3, "type: dup copies with MPI_TYPE_DUP_FN");
	/* (MPICH runs the original's only once the dup, which holds it, goes) */
	MPI_Type_free(&t);
	MPI_Type_free(&d);
	check(s.deletes == 2 && s.deleted == 6, "type: free runs the delete callbacks");
	/* predefined types take attributes too */
	MPI_Type_set_attr(MPI_INT, kv, (void *)(intptr_t)9);
	MPI_Type_get_attr(MPI_INT, kv, &v, &flag);
	check(flag && (intptr_t)v == 9, "type: on MPI_INT");
	MPI_Type_delete_attr(MPI_INT, kv);
	MPI_Type_get_attr(MPI_INT, kv, &v, &flag);
	checki(flag, 0, "type: deleted from MPI_INT");
	checki(s.deleted, 15, "type: MPI_INT's delete callback");
	checkrc(MPI_Comm_get_attr(MPI_COMM_WORLD, kv, &v, &flag), MPI_ERR_KEYVAL,
		"type: its keyval is no communicator's");
	MPI_Type_free_keyval(&kv);
	checki(kv, MPI_KEYVAL_INVALID, "type: free_keyval");
}

static void win_attrs(void)
{
	struct seen s = {0, 0, 0, 0};
	int kv, buf[4];
	checkrc(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_delete, &kv, &s), MPI_SUCCESS,
		"win: create_keyval");
	MPI_Win w;
	MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &w);
	void *v = NULL;
	int flag = -1;
	MPI_Win_get_attr(w, kv, &v, &flag);
	checki(flag, 0, "win: unset");
	checkrc(MPI_Win_set_attr(w, kv, (void *)(intptr_t)(4 + rank)), MPI_SUCCESS,
		"win: set_attr");
	MPI_Win_get_attr(w, kv, &v, &flag);
	check(flag && (intptr_t)v == 4 + rank, "win: get_attr");
	MPI_Win_get_attr(w, MPI_WIN_BASE, &v, &flag);
	check(flag && v == buf, "win: MPI_WIN_BASE still");
	MPI_Aint *sz = NULL;
	MPI_Win_get_attr(w, MPI_WIN_SIZE, &sz, &flag);
	check(flag && *sz == (MPI_Aint)sizeof buf, "win: MPI_WIN_SIZE still");
	MPI_Win_delete_attr(w, kv);
	check(s.deletes == 1 && s.deleted == 4 + rank, "win: delete_attr");
	MPI_Win_set_attr(w, kv, (void *)(intptr_t)8);
	MPI_Win_free(&w);
	check(s.deletes == 2 && s.deleted == 12 + rank, "win: free runs the delete callback");
	MPI_Win_free_keyval(&kv);
	checki(kv, MPI_KEYVAL_INVALID, "win: free_keyval");
}

static void deprecated(void)
{
	struct seen s = {0, 0, 0, 0};
	int kv;
	checkrc(MPI_Keyval_create(MPI_DUP_FN, delete_count, &kv, &s), MPI_SUCCESS,
		"deprecated: keyval_create");
	MPI_Comm c;
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	checkrc(MPI_Attr_put(c, kv, (void *)(intptr_t)6), MPI_SUCCESS, "deprecated: attr_put");
	void *v = NULL;
	int flag = 0;
	MPI_Attr_get(c, kv, &v, &flag);
	check(flag && (intptr_t)v == 6, "deprecated: attr_get");
	MPI_Comm d;
	MPI_Comm_dup(c, &d);
	checki(comm_val(d, kv), 6, "deprecated: MPI_DUP_FN copies");
	checkrc(MPI_Attr_delete(c, kv), MPI_SUCCESS, "deprecated: attr_delete");
	checki(s.deletes, 1, "deprecated: delete callback");
	MPI_Keyval_free(&kv);
	checki(kv, MPI_KEYVAL_INVALID, "deprecated: keyval_free");
	MPI_Comm_free(&d);
	checki(s.deletes, 2, "deprecated: free after keyval_free");
	MPI_Comm_free(&c);
	MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &kv, NULL);
	MPI_Attr_put(MPI_COMM_WORLD, kv, (void *)(intptr_t)2);
	MPI_Comm_dup(MPI_COMM_WORLD, &c);
	checki(comm_val(c, kv), -1, "deprecated: MPI_NULL_COPY_FN copies nothing");
	MPI_Comm_free(&c);
	MPI_Keyval_free(&kv);
}

/* the order of the delete callbacks when a communicator is freed: the last
 * set first (MPI's order for MPI_COMM_SELF at MPI_Finalize, MPICH's for
 * every communicator; its attr/attrend2) */
static char del_order[8];
static int del_n;

static int note_del(MPI_Comm c, int kv, void *val, void *extra)
{
	(void)c, (void)kv, (void)extra;
	if (del_n < 7)
		del_order[del_n++] = (char)('0' + (int)(intptr_t)val);
	return MPI_SUCCESS;
}

static void delete_order(void)
{
	int kv[3];
	MPI_Comm d;
	MPI_Comm_dup(MPI_COMM_WORLD, &d);
	for (int i = 0; i < 3; i++) {
		MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, note_del, &kv[i], NULL);
		MPI_Comm_set_attr(d, kv[i], (void *)(intptr_t)(i + 1));
	}
	del_n = 0;
	MPI_Comm_free(&d);
	del_order[del_n] = 0;
	check(!strcmp(del_order, "321"), nm("delete_order.comm_lifo (%s)", del_order));
	for (int i = 0; i < 3; i++)
		MPI_Comm_free_keyval(&kv[i]);
}

/* a delete callback that frees its keyval through a copy of the handle */
static int free_own_keyval(MPI_Comm c, int kv, void *val, void *extra)
{
	(void)c;
	(void)val;
	++*(int *)extra;
	int k = kv;
	return MPI_Comm_free_keyval(&k);
}

static int type_free_own_keyval(MPI_Datatype t, int kv, void *val, void *extra)
{
	(void)t;
	(void)val;
	++*(int *)extra;
	int k = kv;
	return MPI_Type_free_keyval(&k);
}

/* A keyval freed more than once while values still hold it (MPICH's
 * attr/keyval_double_free): each free through a copy of the handle
 * succeeds, the values stay readable and their delete callbacks run */
static void keyval_refs(void)
{
	MPI_Comm a, b;
	MPI_Comm_dup(MPI_COMM_WORLD, &a);
	MPI_Comm_dup(MPI_COMM_WORLD, &b);
	int k, dels = 0;
	MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, free_own_keyval, &k, &dels);
	int k2 = k, k3 = k;
	MPI_Comm_set_attr(a, k, (void *)(intptr_t)5);
	MPI_Comm_set_attr(b, k, (void *)(intptr_t)6);
	checkrc(MPI_Comm_free(&a), MPI_SUCCESS, "keyval refs: the delete callback frees the keyval");
	checkrc(MPI_Comm_free_keyval(&k2), MPI_SUCCESS, "keyval refs: freed again by a copy");
	checki(k2, MPI_KEYVAL_INVALID, "keyval refs: the copy is invalid");
	checkrc(MPI_Comm_free_keyval(&k3), MPI_SUCCESS, "keyval refs: and again by another copy");
	void *v = NULL;
	int flag = -1;
	checkrc(MPI_Comm_get_attr(b, k, &v, &flag), MPI_SUCCESS, "keyval refs: the value still there");
	check(flag == 1 && v == (void *)(intptr_t)6, "keyval refs: the value read");
	checkrc(MPI_Comm_free(&b), MPI_SUCCESS, "keyval refs: the last value's object freed");
	checki(dels, 2, "keyval refs: both delete callbacks ran");

	MPI_Datatype t;
	MPI_Type_contiguous(2, MPI_INT, &t);
	int tk, tdels = 0;
	MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_free_own_keyval, &tk, &tdels);
	MPI_Type_set_attr(t, tk, NULL);
	checkrc(MPI_Type_free_keyval(&tk), MPI_SUCCESS, "keyval refs: type keyval freed");
	checkrc(MPI_Type_free(&t), MPI_SUCCESS, "keyval refs: its type freed, the callback frees it");
	checki(tdels, 1, "keyval refs: the type's delete callback ran");
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	comm_attrs();
	predefined();
	type_attrs();
	win_attrs();
	deprecated();
	delete_order();
	keyval_refs();
	return suite_finish("attr");
}
