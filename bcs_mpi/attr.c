/* BCS-MPI attribute caching (MPI-3.1 §6.7): keyvals and the values the
 * program hangs on communicators, datatypes and windows, all local to the
 * rank. The copy callbacks run in MPI_Comm_dup and MPI_Type_dup, the delete
 * callbacks when a value is replaced or deleted and when its object is
 * freed, always in the order the attributes were first set, so that no
 * outcome depends on timing. */
#include <stdlib.h>
#include <string.h>

#include "bcs.h"
#include "dtype.h"

typedef int copy_fn(int, int, void *, void *, void *, int *);
typedef int delete_fn(int, int, void *, void *);

struct keyval {
	int used, kind;
	int refs;          /* the program's handle (until freed) and each value */
	int freed;         /* the program freed its handle: a value still holds it */
	copy_fn *copy;
	delete_fn *del;
	void *extra;
};

struct attr {
	int kind, obj, keyval;
	void *val;
	struct attr *next;
};

static struct keyval *keyvals; /* keyval k is keyvals[k - 1] */
static int nkeyvals;
static struct attr *attrs, **attrs_tail = &attrs;

int bcs_dup_fn(int oldobj, int keyval, void *extra_state, void *in, void *out, int *flag)
{
	(void)oldobj;
	(void)keyval;
	(void)extra_state;
	*(void **)out = in;
	*flag = 1;
	return MPI_SUCCESS;
}

static struct keyval *keyval_get(int kind, int k)
{
	if (k <= 0 || k > nkeyvals || !keyvals[k - 1].used || keyvals[k - 1].kind != kind)
		return NULL;
	return &keyvals[k - 1];
}

static void keyval_put(int k)
{
	struct keyval *kv = &keyvals[k - 1];
	if (--kv->refs == 0)
		memset(kv, 0, sizeof(*kv));
}

static int keyval_create(int kind, copy_fn *copy, delete_fn *del, int *k, void *extra)
{
	int i = 0;
	while (i < nkeyvals && keyvals[i].used)
		i++;
	if (i == nkeyvals) {
		int n = nkeyvals ? nkeyvals * 2 : 16;
		struct keyval *v = realloc(keyvals, (size_t)n * sizeof(*v));
		if (!v)
			return MPI_ERR_NO_MEM;
		memset(v + nkeyvals, 0, (size_t)(n - nkeyvals) * sizeof(*v));
		keyvals = v;
		nkeyvals = n;
	}
	keyvals[i] = (struct keyval){.used = 1, .kind = kind, .refs = 1, .copy = copy,
				     .del = del, .extra = extra};
	*k = i + 1;
	return MPI_SUCCESS;
}

/* The program's handle lets go of the keyval once: a free through a copy
 * of the handle while a value still holds the keyval (a delete callback
 * freeing it, then the program again) is accepted and does nothing, as
 * MPICH counts it; once no value holds it, the handle is invalid. */
static int keyval_free(int kind, int *k)
{
	struct keyval *kv = keyval_get(kind, *k);
	if (!kv)
		return MPI_ERR_KEYVAL;
	if (!kv->freed) {
		kv->freed = 1;
		keyval_put(*k);
	}
	*k = MPI_KEYVAL_INVALID;
	return MPI_SUCCESS;
}

static struct attr **attr_find(int kind, int obj, int k)
{
	struct attr **p = &attrs;
	while (*p && ((*p)->kind != kind || (*p)->obj != obj || (*p)->keyval != k))
		p = &(*p)->next;
	return p;
}

static void attr_unlink(struct attr **p)
{
	struct attr *a = *p;
	*p = a->next;
	if (attrs_tail == &a->next)
		attrs_tail = p;
	keyval_put(a->keyval);
	free(a);
}

static int attr_del_call(struct attr *a)
{
	struct keyval *kv = &keyvals[a->keyval - 1];
	return kv->del ? kv->del(a->obj, a->keyval, a->val, kv->extra) : MPI_SUCCESS;
}

static int attr_add(int kind, int obj, int k, void *val)
{
	struct attr *a = malloc(sizeof(*a));
	if (!a)
		return MPI_ERR_NO_MEM;
	*a = (struct attr){.kind = kind, .obj = obj, .keyval = k, .val = val};
	*attrs_tail = a;
	attrs_tail = &a->next;
	keyvals[k - 1].refs++;
	return MPI_SUCCESS;
}

int bcs_attr_set(int kind, int obj, int k, void *val)
{
	if (!keyval_get(kind, k))
		return MPI_ERR_KEYVAL;
	struct attr **p = attr_find(kind, obj, k);
	if (!*p)
		return attr_add(kind, obj, k, val);
	int rc = attr_del_call(*p);
	if (!rc)
		(*p)->val = val;
	return rc;
}

int bcs_attr_get(int kind, int obj, int k, void *val, int *flag)
{
	if (!keyval_get(kind, k))
		return MPI_ERR_KEYVAL;
	struct attr *a = *attr_find(kind, obj, k);
	*flag = a != NULL;
	if (a)
		*(void **)val = a->val;
	return MPI_SUCCESS;
}

int bcs_attr_delete(int kind, int obj, int k)
{
	if (!keyval_get(kind, k))
		return MPI_ERR_KEYVAL;
	struct attr **p = attr_find(kind, obj, k);
	if (!*p)
		return MPI_SUCCESS;
	int rc = attr_del_call(*p);
	if (!rc)
		attr_unlink(p);
	return rc;
}

int bcs_attr_copy(int kind, int old, int new)
{
	/* a copy appended during the walk is never the old object's */
	for (struct attr *a = attrs; a; a = a->next) {
		if (a->kind != kind || a->obj != old)
			continue;
		struct keyval *kv = &keyvals[a->keyval - 1];
		if (!kv->copy)
			continue;
		void *out = NULL;
		int flag = 0;
		int rc = kv->copy(old, a->keyval, kv->extra, a->val, &out, &flag);
		if (rc)
			return rc;
		rc = flag ? attr_add(kind, new, a->keyval, out) : MPI_SUCCESS;
		if (rc)
			return rc;
	}
	return MPI_SUCCESS;
}

/* obj's attribute to delete next: a communicator's last set first (the
 * order MPI sets for MPI_COMM_SELF at MPI_Finalize, and MPICH's for every
 * communicator); a type's or a window's in the order set */
static struct attr **attr_next_del(int kind, int obj)
{
	struct attr **p = &attrs, **found = NULL;
	for (; *p; p = &(*p)->next) {
		if ((*p)->kind != kind || (*p)->obj != obj)
			continue;
		found = p;
		if (kind != BCS_ATTR_COMM)
			break;
	}
	return found;
}

int bcs_attr_free_all(int kind, int obj)
{
	int err = MPI_SUCCESS;
	for (;;) {
		struct attr **p = attr_next_del(kind, obj);
		if (!p)
			return err;
		/* off the list before its callback, which may delete others */
		struct attr *a = *p;
		*p = a->next;
		if (attrs_tail == &a->next)
			attrs_tail = p;
		int rc = attr_del_call(a);
		if (rc && !err)
			err = rc;
		keyval_put(a->keyval);
		free(a);
	}
}

/* ---- communicators, and the predefined attributes of every communicator */

static int predefined_comm(int k, void *val, int *flag)
{
	static int tag_ub = MPI_TAG_UB, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE,
		   wtime_global = 0, appnum = 0, last = MPI_ERR_LASTCODE, universe;
	int *v;
	switch (k) {
	case MPI_TAG_UB: v = &tag_ub; break;
	case MPI_HOST: v = &host; break;
	case MPI_IO: v = &io; break;
	case MPI_WTIME_IS_GLOBAL: v = &wtime_global; break;
	case MPI_APPNUM: v = &appnum; break;
	case MPI_LASTUSEDCODE: v = &last; break;
	case MPI_UNIVERSE_SIZE: /* nothing is spawned: the world is the universe */
		MPI_Comm_size(MPI_COMM_WORLD, &universe);
		v = &universe;
		break;
	default: return 0;
	}
	*(int **)val = v;
	*flag = 1;
	return 1;
}

#define ON_COMM(comm, fn)                                                              \
	bcs_need_init(fn);                                                             \
	if (!bcs_comm_get(comm))                                                       \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn)

int MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del,
			   int *keyval, void *extra)
{
	bcs_need_init("MPI_Comm_create_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_create(BCS_ATTR_COMM, copy, del, keyval, extra),
		       "MPI_Comm_create_keyval");
}

int MPI_Comm_free_keyval(int *keyval)
{
	bcs_need_init("MPI_Comm_free_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_free(BCS_ATTR_COMM, keyval),
		       "MPI_Comm_free_keyval");
}

int MPI_Comm_set_attr(MPI_Comm comm, int keyval, void *val)
{
	ON_COMM(comm, "MPI_Comm_set_attr");
	return bcs_err(comm, bcs_attr_set(BCS_ATTR_COMM, comm, keyval, val), "MPI_Comm_set_attr");
}

int MPI_Comm_get_attr(MPI_Comm comm, int keyval, void *val, int *flag)
{
	ON_COMM(comm, "MPI_Comm_get_attr");
	if (predefined_comm(keyval, val, flag))
		return MPI_SUCCESS;
	return bcs_err(comm, bcs_attr_get(BCS_ATTR_COMM, comm, keyval, val, flag),
		       "MPI_Comm_get_attr");
}

int MPI_Comm_delete_attr(MPI_Comm comm, int keyval)
{
	ON_COMM(comm, "MPI_Comm_delete_attr");
	return bcs_err(comm, bcs_attr_delete(BCS_ATTR_COMM, comm, keyval),
		       "MPI_Comm_delete_attr");
}

int MPI_Keyval_create(MPI_Copy_function *copy, MPI_Delete_function *del, int *keyval,
		      void *extra)
{
	return MPI_Comm_create_keyval(copy, del, keyval, extra);
}

int MPI_Keyval_free(int *keyval)
{
	return MPI_Comm_free_keyval(keyval);
}

int MPI_Attr_put(MPI_Comm comm, int keyval, void *val)
{
	return MPI_Comm_set_attr(comm, keyval, val);
}

int MPI_Attr_get(MPI_Comm comm, int keyval, void *val, int *flag)
{
	return MPI_Comm_get_attr(comm, keyval, val, flag);
}

int MPI_Attr_delete(MPI_Comm comm, int keyval)
{
	return MPI_Comm_delete_attr(comm, keyval);
}

/* ---- datatypes (predefined ones included) */

#define ON_TYPE(dt, fn)                                                                \
	bcs_need_init(fn);                                                             \
	bcs_types_init();                                                              \
	if (!bcs_type_get(dt))                                                         \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_TYPE, fn)

int MPI_Type_create_keyval(MPI_Type_copy_attr_function *copy, MPI_Type_delete_attr_function *del,
			   int *keyval, void *extra)
{
	bcs_need_init("MPI_Type_create_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_create(BCS_ATTR_TYPE, copy, del, keyval, extra),
		       "MPI_Type_create_keyval");
}

int MPI_Type_free_keyval(int *keyval)
{
	bcs_need_init("MPI_Type_free_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_free(BCS_ATTR_TYPE, keyval),
		       "MPI_Type_free_keyval");
}

int MPI_Type_set_attr(MPI_Datatype dt, int keyval, void *val)
{
	ON_TYPE(dt, "MPI_Type_set_attr");
	return bcs_err(MPI_COMM_WORLD, bcs_attr_set(BCS_ATTR_TYPE, dt, keyval, val),
		       "MPI_Type_set_attr");
}

int MPI_Type_get_attr(MPI_Datatype dt, int keyval, void *val, int *flag)
{
	ON_TYPE(dt, "MPI_Type_get_attr");
	return bcs_err(MPI_COMM_WORLD, bcs_attr_get(BCS_ATTR_TYPE, dt, keyval, val, flag),
		       "MPI_Type_get_attr");
}

int MPI_Type_delete_attr(MPI_Datatype dt, int keyval)
{
	ON_TYPE(dt, "MPI_Type_delete_attr");
	return bcs_err(MPI_COMM_WORLD, bcs_attr_delete(BCS_ATTR_TYPE, dt, keyval),
		       "MPI_Type_delete_attr");
}

/* ---- windows' keyvals (their values: win.c, which knows the windows) */

int MPI_Win_create_keyval(MPI_Win_copy_attr_function *copy, MPI_Win_delete_attr_function *del,
			  int *keyval, void *extra)
{
	bcs_need_init("MPI_Win_create_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_create(BCS_ATTR_WIN, copy, del, keyval, extra),
		       "MPI_Win_create_keyval");
}

int MPI_Win_free_keyval(int *keyval)
{
	bcs_need_init("MPI_Win_free_keyval");
	return bcs_err(MPI_COMM_WORLD, keyval_free(BCS_ATTR_WIN, keyval), "MPI_Win_free_keyval");
}
