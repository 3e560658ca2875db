/* Derived datatypes: Type_create_struct of mixed fields (extent padded like
 * the C struct) sent point to point and broadcast, from MPI_BOTTOM with
 * absolute addresses too; Type_indexed, Type_create_indexed_block,
 * Type_create_hvector, Type_create_hindexed(_block), Type_create_resized (a
 * matrix transposed by Gather), Type_dup; Type_size, Type_get_extent,
 * Type_get_true_extent, Get_address, Aint_add/diff; Get_count and
 * Get_elements on whole and partial receives; Pack/Unpack/Pack_size;
 * derived types in Alltoall, Gather, Scatter and Allreduce (a user op);
 * lb and extent of negative extents and strides; receives whose datatypes
 * are freed before the wait; MPI-1's MPI_Type_struct with MPI_LB and
 * MPI_UB, MPI_Type_extent, _lb, _ub and MPI_Address; MPI_Pack_external's
 * bytes; Fortran's types named from C, MPI_Type_match_size. */
#include <stddef.h>

#include "suite.h"

static MPI_Comm W = MPI_COMM_WORLD;

struct rec {
	char tag;
	double x[2];
	int id;
	short s[3];
};

static MPI_Datatype rec_type(void)
{
	int bl[4] = {1, 2, 1, 3};
	MPI_Aint d[4] = {offsetof(struct rec, tag), offsetof(struct rec, x), offsetof(struct rec, id),
			 offsetof(struct rec, s)};
	MPI_Datatype ty[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT}, t;
	MPI_Type_create_struct(4, bl, d, ty, &t);
	return t;
}

static struct rec mkrec(int from, int i)
{
	struct rec r;
	memset(&r, 0, sizeof r);
	r.tag = (char)('a' + (from + i) % 26);
	r.x[0] = from + i * 0.5;
	r.x[1] = -from * 2.25 - i;
	r.id = from * 100 + i;
	for (int k = 0; k < 3; k++)
		r.s[k] = (short)(from * 10 + i + k);
	return r;
}

static int receq(const struct rec *a, const struct rec *b)
{
	return a->tag == b->tag && a->x[0] == b->x[0] && a->x[1] == b->x[1] && a->id == b->id &&
	       a->s[0] == b->s[0] && a->s[1] == b->s[1] && a->s[2] == b->s[2];
}

static void structs(void)
{
	MPI_Datatype t = rec_type();
	MPI_Type_commit(&t);
	int sz;
	MPI_Aint lb, ext, tlb, text;
	MPI_Type_size(t, &sz);
	MPI_Type_get_extent(t, &lb, &ext);
	MPI_Type_get_true_extent(t, &tlb, &text);
	checki(sz, 1 + 16 + 4 + 6, "struct.size");
	checki(lb, 0, "struct.lb");
	checki(ext, (long long)sizeof(struct rec), "struct.extent_is_sizeof");
	checki(text, (long long)offsetof(struct rec, s) + 6, "struct.true_extent");

	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	struct rec out[3], in[4];
	for (int i = 0; i < 3; i++)
		out[i] = mkrec(rank, i);
	memset(in, 0, sizeof in);
	MPI_Status st;
	MPI_Sendrecv(out, 3, t, right, 1, in, 4, t, left, 1, W, &st);
	int good = 1, n;
	for (int i = 0; i < 3; i++) {
		struct rec w = mkrec(left, i);
		good &= receq(&in[i], &w);
	}
	check(good, "struct.sendrecv");
	MPI_Get_count(&st, t, &n);
	checki(n, 3, "struct.get_count");
	MPI_Get_elements(&st, t, &n);
	checki(n, 3 * 7, "struct.get_elements");

	/* a prefix of the typemap (tag and x): a partial item */
	int bl2[2] = {1, 2};
	MPI_Aint d2[2] = {offsetof(struct rec, tag), offsetof(struct rec, x)};
	MPI_Datatype ty2[2] = {MPI_CHAR, MPI_DOUBLE}, head;
	MPI_Type_create_struct(2, bl2, d2, ty2, &head);
	MPI_Type_commit(&head);
	MPI_Sendrecv(out, 1, head, right, 2, in, 1, t, left, 2, W, &st);
	MPI_Get_count(&st, t, &n);
	checki(n, MPI_UNDEFINED, "struct.partial.get_count");
	MPI_Get_elements(&st, t, &n);
	checki(n, 3, "struct.partial.get_elements");
	check(in[0].tag == mkrec(left, 0).tag && in[0].x[1] == mkrec(left, 0).x[1],
	      "struct.partial.data");
	MPI_Type_free(&head);

	/* broadcast from every root */
	for (int root = 0; root < size; root++) {
		struct rec b[2];
		for (int i = 0; i < 2; i++)
			b[i] = rank == root ? mkrec(root, i + 5) : (struct rec){0};
		MPI_Bcast(b, 2, t, root, W);
		struct rec w0 = mkrec(root, 5), w1 = mkrec(root, 6);
		check(receq(&b[0], &w0) && receq(&b[1], &w1), nm("struct.bcast.root%d", root));
	}

	/* absolute addresses from MPI_BOTTOM: two separate variables */
	int iv = 0;
	double dv = 0;
	if (rank == 0) {
		iv = 4242;
		dv = 3.5;
	}
	MPI_Aint a[2], base;
	MPI_Get_address(&iv, &a[0]);
	MPI_Get_address(&dv, &a[1]);
	MPI_Get_address(&iv, &base);
	checki(MPI_Aint_diff(a[1], base), (long long)((char *)&dv - (char *)&iv), "aint_diff");
	check(MPI_Aint_add(base, MPI_Aint_diff(a[1], base)) == a[1], "aint_add");
	int bl3[2] = {1, 1};
	MPI_Datatype ty3[2] = {MPI_INT, MPI_DOUBLE}, abs_t;
	MPI_Type_create_struct(2, bl3, a, ty3, &abs_t);
	MPI_Type_commit(&abs_t);
	MPI_Bcast(MPI_BOTTOM, 1, abs_t, 0, W);
	check(iv == 4242 && dv == 3.5, "struct.bottom_bcast");
	MPI_Type_free(&abs_t);

	MPI_Type_free(&t);
	check(t == MPI_DATATYPE_NULL, "type_free.null");
}

static void indexed(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	int src[20], dst[20], good;
	for (int i = 0; i < 20; i++)
		src[i] = rank * 100 + i;
	/* blocks {0..1}, {5}, {9..11}, in a non-monotone order too */
	int bl[3] = {2, 1, 3}, dp[3] = {9, 0, 5};
	MPI_Datatype ix, ib, hv, hi, hib;
	MPI_Type_indexed(3, bl, dp, MPI_INT, &ix);
	MPI_Type_commit(&ix);
	int sz;
	MPI_Aint lb, ext;
	MPI_Type_size(ix, &sz);
	MPI_Type_get_extent(ix, &lb, &ext);
	check(sz == 24 && lb == 0 && ext == 11 * 4, "indexed.size_extent");
	for (int i = 0; i < 20; i++)
		dst[i] = -1;
	MPI_Sendrecv(src, 1, ix, right, 1, dst, 6, MPI_INT, left, 1, W, MPI_STATUS_IGNORE);
	int want[6] = {9, 10, 0, 5, 6, 7};
	good = 1;
	for (int i = 0; i < 6; i++)
		good &= dst[i] == left * 100 + want[i];
	check(good, "indexed.typemap_order");
	/* received into the indexed type: scattered back */
	for (int i = 0; i < 20; i++)
		dst[i] = -1;
	MPI_Sendrecv(src, 1, ix, right, 2, dst, 1, ix, left, 2, W, MPI_STATUS_IGNORE);
	good = 1;
	for (int i = 0; i < 20; i++) {
		int in = i == 0 || i == 5 || i == 6 || i == 7 || i == 9 || i == 10;
		good &= dst[i] == (in ? left * 100 + i : -1);
	}
	check(good, "indexed.scatter");

	int bd[3] = {1, 7, 14};
	MPI_Type_create_indexed_block(3, 2, bd, MPI_INT, &ib);
	MPI_Type_commit(&ib);
	MPI_Sendrecv(src, 1, ib, right, 3, dst, 6, MPI_INT, left, 3, W, MPI_STATUS_IGNORE);
	check(dst[0] == left * 100 + 1 && dst[3] == left * 100 + 8 && dst[5] == left * 100 + 15,
	      "indexed_block");

	/* hvector: every third int by byte stride */
	MPI_Type_create_hvector(4, 1, 3 * sizeof(int), MPI_INT, &hv);
	MPI_Type_commit(&hv);
	MPI_Sendrecv(src, 1, hv, right, 4, dst, 4, MPI_INT, left, 4, W, MPI_STATUS_IGNORE);
	check(dst[0] == left * 100 && dst[3] == left * 100 + 9, "hvector");
	MPI_Aint hd[2] = {4 * sizeof(int), 0};
	int hbl[2] = {3, 1};
	MPI_Type_create_hindexed(2, hbl, hd, MPI_INT, &hi);
	MPI_Type_commit(&hi);
	MPI_Sendrecv(src, 1, hi, right, 5, dst, 4, MPI_INT, left, 5, W, MPI_STATUS_IGNORE);
	check(dst[0] == left * 100 + 4 && dst[2] == left * 100 + 6 && dst[3] == left * 100,
	      "hindexed");
	MPI_Aint hbd[2] = {8 * sizeof(int), 2 * sizeof(int)};
	MPI_Type_create_hindexed_block(2, 2, hbd, MPI_INT, &hib);
	MPI_Type_commit(&hib);
	MPI_Sendrecv(src, 1, hib, right, 6, dst, 4, MPI_INT, left, 6, W, MPI_STATUS_IGNORE);
	check(dst[0] == left * 100 + 8 && dst[3] == left * 100 + 3, "hindexed_block");

	/* two items of the indexed type: the second one extent later */
	MPI_Sendrecv(src, 1, ix, right, 7, dst, 6, MPI_INT, left, 7, W, MPI_STATUS_IGNORE);
	MPI_Datatype dup;
	MPI_Type_dup(ix, &dup);
	MPI_Type_size(dup, &sz);
	checki(sz, 24, "type_dup.size");
	MPI_Type_free(&dup);
	MPI_Type_free(&ix);
	MPI_Type_free(&ib);
	MPI_Type_free(&hv);
	MPI_Type_free(&hi);
	MPI_Type_free(&hib);
}

/* Resized: a column of an N x size matrix with extent one int, so Gather
 * puts rank r's row into column r. */
static void resized(void)
{
	enum { N = 4 };
	int row[N], *mat = malloc((size_t)N * size * sizeof(int));
	for (int i = 0; i < N; i++)
		row[i] = rank * 10 + i;
	MPI_Datatype col, colr;
	MPI_Type_vector(N, 1, size, MPI_INT, &col);
	MPI_Type_create_resized(col, 0, sizeof(int), &colr);
	MPI_Type_commit(&colr);
	MPI_Aint lb, ext, tlb, text;
	MPI_Type_get_extent(colr, &lb, &ext);
	MPI_Type_get_true_extent(colr, &tlb, &text);
	check(lb == 0 && ext == sizeof(int), "resized.extent");
	checki(text, (long long)((N - 1) * size + 1) * (long long)sizeof(int), "resized.true_extent");
	for (int root = 0; root < size; root++) {
		for (int i = 0; i < N * size; i++)
			mat[i] = -1;
		MPI_Gather(row, N, MPI_INT, mat, 1, colr, root, W);
		if (rank == root) {
			int good = 1;
			for (int i = 0; i < N; i++)
				for (int r = 0; r < size; r++)
					good &= mat[i * size + r] == r * 10 + i;
			check(good, nm("resized.gather_transpose.root%d", root));
		}
	}
	/* and back: Scatter columns to rows */
	int back[N];
	MPI_Scatter(mat, 1, colr, back, N, MPI_INT, size - 1, W);
	int good = 1;
	for (int i = 0; i < N; i++)
		good &= back[i] == rank * 10 + i;
	check(good, "resized.scatter");
	/* a negative lower bound */
	MPI_Datatype neg;
	MPI_Type_create_resized(MPI_INT, -4, 12, &neg);
	MPI_Type_get_extent(neg, &lb, &ext);
	check(lb == -4 && ext == 12, "resized.negative_lb");
	MPI_Type_free(&neg);
	MPI_Type_free(&col);
	MPI_Type_free(&colr);
	free(mat);
}

static void maxid(void *in, void *inout, int *len, MPI_Datatype *dt)
{
	(void)dt;
	struct rec *a = in, *b = inout;
	for (int i = 0; i < *len; i++)
		if (a[i].id > b[i].id)
			b[i] = a[i];
}

static void in_collectives(void)
{
	/* Alltoall of a 2-int vector block per peer */
	int *s = malloc((size_t)size * 4 * sizeof(int)), *r = malloc((size_t)size * 2 * sizeof(int));
	for (int i = 0; i < size * 4; i++)
		s[i] = rank * 1000 + i;
	MPI_Datatype v;
	MPI_Type_vector(2, 1, 2, MPI_INT, &v); /* ints 0 and 2 of each 4 */
	MPI_Datatype vr;
	MPI_Type_create_resized(v, 0, 4 * sizeof(int), &vr);
	MPI_Type_commit(&vr);
	MPI_Alltoall(s, 1, vr, r, 2, MPI_INT, W);
	int good = 1;
	for (int p = 0; p < size; p++)
		good &= r[2 * p] == p * 1000 + 4 * rank && r[2 * p + 1] == p * 1000 + 4 * rank + 2;
	check(good, "alltoall.resized_vector");
	/* Allreduce with a user op on the struct type: the record of the
	 * largest id wins, element by element */
	MPI_Datatype t = rec_type();
	MPI_Type_commit(&t);
	MPI_Op op;
	MPI_Op_create(maxid, 1, &op);
	struct rec mine[2] = {mkrec(rank, 3), mkrec(size - 1 - rank, 4)}, res[2];
	MPI_Allreduce(mine, res, 2, t, op, W);
	struct rec w0 = mkrec(size - 1, 3), w1 = mkrec(size - 1, 4);
	check(receq(&res[0], &w0) && receq(&res[1], &w1), "allreduce.struct_user_op");
	MPI_Op_free(&op);
	MPI_Type_free(&t);
	MPI_Type_free(&v);
	MPI_Type_free(&vr);
	free(s);
	free(r);
}

static void packing(void)
{
	MPI_Datatype t = rec_type();
	MPI_Type_commit(&t);
	int need, pos = 0, sz;
	MPI_Pack_size(2, t, W, &need);
	MPI_Type_size(t, &sz);
	check(need >= 2 * sz, "pack_size");
	char *buf = malloc((size_t)need + 16);
	struct rec out[2] = {mkrec(rank, 1), mkrec(rank, 2)}, in[2];
	int k = rank * 7;
	MPI_Pack(&k, 1, MPI_INT, buf, need + 16, &pos, W);
	MPI_Pack(out, 2, t, buf, need + 16, &pos, W);
	int right = (rank + 1) % size, left = (rank + size - 1) % size, n = 0;
	char *rbuf = malloc((size_t)need + 16);
	MPI_Status st;
	MPI_Sendrecv(buf, pos, MPI_PACKED, right, 9, rbuf, need + 16, MPI_PACKED, left, 9, W, &st);
	MPI_Get_count(&st, MPI_PACKED, &n);
	checki(n, pos, "pack.count");
	int kk = -1, p2 = 0;
	MPI_Unpack(rbuf, n, &p2, &kk, 1, MPI_INT, W);
	MPI_Unpack(rbuf, n, &p2, in, 2, t, W);
	struct rec w0 = mkrec(left, 1), w1 = mkrec(left, 2);
	check(kk == left * 7 && receq(&in[0], &w0) && receq(&in[1], &w1), "pack.unpack");
	checki(p2, pos, "unpack.position");
	free(buf);
	free(rbuf);
	MPI_Type_free(&t);
}

/* Bounds with explicit lb/ub (MPI-3.1 §4.1.7): a resized type of negative
 * extent repeated by contiguous and vector (negative strides too) */
static void bounds_of(MPI_Datatype old, int count, int blen, int stride, long long lb,
		      long long ext, long long tlb, long long text, const char *name)
{
	MPI_Datatype t;
	if (stride)
		MPI_Type_vector(count, blen, stride, old, &t);
	else
		MPI_Type_contiguous(count, old, &t);
	MPI_Aint l, e, tl, te;
	MPI_Type_get_extent(t, &l, &e);
	MPI_Type_get_true_extent(t, &tl, &te);
	checki(l, lb, nm("bounds.%s.lb", name));
	checki(e, ext, nm("bounds.%s.extent", name));
	checki(tl, tlb, nm("bounds.%s.true_lb", name));
	checki(te, text, nm("bounds.%s.true_extent", name));
	MPI_Type_free(&t);
}

static void negative_extents(void)
{
	MPI_Datatype four, pos, neg;
	MPI_Type_contiguous(4, MPI_BYTE, &four);
	MPI_Type_create_resized(four, -3, 9, &pos);
	MPI_Type_create_resized(four, 6, -9, &neg);
	bounds_of(pos, 3, 1, 0, -3, 27, 0, 22, "contig3");
	bounds_of(neg, 3, 1, 0, -12, 9, -18, 22, "contig3_negext");
	bounds_of(pos, 3, 4, 5, -3, 126, 0, 121, "vector_stride5");
	bounds_of(pos, 3, 4, -5, -93, 126, -90, 121, "vector_stride-5");
	bounds_of(neg, 3, 4, 5, -111, 108, -117, 121, "vector_negext_stride5");
	bounds_of(neg, 3, 4, -5, -21, 108, -27, 121, "vector_negext_stride-5");
	MPI_Type_free(&four);
	MPI_Type_free(&pos);
	MPI_Type_free(&neg);
}

/* Receives whose datatypes are freed before the wait (MPI_Type_free leaves
 * a type to the operations using it), new types made meanwhile */
enum { FBLK = 128, FNB = 64, FVEC = 96 };

static void freed_while_pending(void)
{
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	double *a = malloc(sizeof(double) * (FBLK + 1) * FNB);
	double *out = malloc(sizeof(double) * FBLK * FNB);
	int ia[FVEC * 4], iout[FVEC];
	for (int i = 0; i < (FBLK + 1) * FNB; i++)
		a[i] = -1;
	for (int i = 0; i < FBLK * FNB; i++)
		out[i] = rank * 100000 + i;
	for (int i = 0; i < FVEC * 4; i++)
		ia[i] = -1;
	for (int i = 0; i < FVEC; i++)
		iout[i] = rank * 1000 + i;
	MPI_Datatype hv, vec, made[64];
	MPI_Type_create_hvector(FNB, FBLK, (FBLK + 1) * (MPI_Aint)sizeof(double), MPI_DOUBLE, &hv);
	MPI_Type_vector(FVEC, 1, 4, MPI_INT, &vec);
	MPI_Type_commit(&hv);
	MPI_Type_commit(&vec);
	MPI_Request rq[2];
	MPI_Irecv(a, 1, hv, left, 20, W, &rq[0]);
	MPI_Irecv(ia, 1, vec, left, 21, W, &rq[1]);
	MPI_Type_free(&hv);
	MPI_Type_free(&vec);
	check(hv == MPI_DATATYPE_NULL && vec == MPI_DATATYPE_NULL, "freed_pending.handles_null");
	/* types made now must not take the pending ones' places */
	for (int i = 0; i < 64; i++) {
		MPI_Type_vector(i + 1, 1, 1, MPI_INT, &made[i]);
		MPI_Type_commit(&made[i]);
	}
	MPI_Send(out, FBLK * FNB, MPI_DOUBLE, right, 20, W);
	MPI_Send(iout, FVEC, MPI_INT, right, 21, W);
	MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	int bad = 0;
	for (int k = 0; k < FNB; k++) {
		for (int j = 0; j < FBLK; j++)
			bad += a[k * (FBLK + 1) + j] != left * 100000 + k * FBLK + j;
		bad += a[k * (FBLK + 1) + FBLK] != -1;
	}
	checki(bad, 0, "freed_pending.hvector_wrong_elements");
	bad = 0;
	for (int i = 0; i < FVEC * 4; i++)
		bad += ia[i] != (i % 4 ? -1 : left * 1000 + i / 4);
	checki(bad, 0, "freed_pending.vector_wrong_elements");
	for (int i = 0; i < 64; i++)
		MPI_Type_free(&made[i]);
	free(a);
	free(out);
}

/* MPI-1's forms MPICH keeps: MPI_Type_struct with the MPI_LB and MPI_UB
 * markers, MPI_Type_extent, _lb, _ub, MPI_Address; a struct of markers
 * only; data sent through a marked type lands a marked extent apart */
static void oldapi(void)
{
	int blens[3] = {1, 4, 1}, sz = -1;
	MPI_Aint disps[3] = {-3, 0, 6}, ext = 0, lb = 0, ub = 0, l2, e2;
	MPI_Datatype types[3] = {MPI_LB, MPI_BYTE, MPI_UB}, t, c;
	checkrc(MPI_Type_struct(3, blens, disps, types, &t), MPI_SUCCESS, "oldapi.struct");
	MPI_Type_size(t, &sz);
	MPI_Type_extent(t, &ext);
	MPI_Type_lb(t, &lb);
	MPI_Type_ub(t, &ub);
	check(sz == 4 && ext == 9 && lb == -3 && ub == 6, "oldapi.lb_byte4_ub: size 4, extent 9, lb -3, ub 6");
	MPI_Type_get_true_extent(t, &l2, &e2);
	check(l2 == 0 && e2 == 4, "oldapi.lb_byte4_ub: true extent");
	MPI_Type_contiguous(3, t, &c);
	MPI_Type_extent(c, &ext);
	MPI_Type_lb(c, &lb);
	check(ext == 27 && lb == -3, "oldapi.contig3: extent 27, lb -3");
	MPI_Type_commit(&c);
	char out[27], in[27];
	for (int i = 0; i < 27; i++) {
		out[i] = (char)i;
		in[i] = -1;
	}
	/* the three copies' bytes at 3..6, 12..15, 21..24 of a buffer whose lb is 3 in */
	MPI_Sendrecv(out + 3, 1, c, rank, 7, in + 3, 1, c, rank, 7, MPI_COMM_WORLD,
		     MPI_STATUS_IGNORE);
	check(in[3] == 3 && in[6] == 6 && in[12] == 12 && in[24] == 24 && in[7] == -1 &&
		      in[11] == -1,
	      "oldapi.contig3: bytes land 9 apart");
	MPI_Type_free(&c);
	MPI_Type_free(&t);
	/* only a lower-bound marker at 10: no data, ub 0, extent -10 */
	int one = 1;
	MPI_Aint ten = 10;
	MPI_Datatype lbonly = MPI_LB;
	MPI_Type_create_struct(1, &one, &ten, &lbonly, &t);
	MPI_Type_size(t, &sz);
	MPI_Type_get_extent(t, &lb, &ext);
	check(sz == 0 && lb == 10 && ext == -10, "oldapi.lb_only: size 0, lb 10, extent -10");
	MPI_Type_free(&t);
	char name[MPI_MAX_OBJECT_NAME];
	int len;
	MPI_Type_get_name(MPI_LB, name, &len);
	check(!strcmp(name, "MPI_LB"), "oldapi.name MPI_LB");
	MPI_Type_get_name(MPI_UB, name, &len);
	check(!strcmp(name, "MPI_UB"), "oldapi.name MPI_UB");
	MPI_Aint a1, a2;
	MPI_Address(&out[0], &a1);
	MPI_Get_address(&out[5], &a2);
	checki(a2 - a1, 5, "oldapi.address");
}

/* hex of n bytes, into a ring buffer */
static const char *hex(const unsigned char *b, long n)
{
	static char ring[4][256];
	static int next;
	char *o = ring[next++ % 4];
	for (long i = 0; i < n && i < 120; i++)
		sprintf(o + 2 * i, "%02x", b[i]);
	return o;
}

/* external32: big-endian, long 4 bytes; the bytes themselves are checked
 * (and printed, so that they are compared with MPICH's), then unpacked */
static void external32(void)
{
	/* one basic type a call: Debian's MPICH 4.0.2 crashes in
	 * MPI_Pack_external_size of a struct type */
	int i[2] = {1, -2}, ib[2] = {0, 0};
	double d = 1.5, db = 0;
	long l = -3, lb = 0;
	short sh = 0x1234, sb = 0;
	unsigned long ul = 0xdeadbeefUL, ulb = 0;
	const void *in[5] = {i, &d, &l, &sh, &ul};
	void *back[5] = {ib, &db, &lb, &sb, &ulb};
	int cnt[5] = {2, 1, 1, 1, 1};
	MPI_Datatype ty[5] = {MPI_INT, MPI_DOUBLE, MPI_LONG, MPI_SHORT, MPI_UNSIGNED_LONG};
	MPI_Aint sz = 0, one, pos = 0;
	for (int k = 0; k < 5; k++) {
		MPI_Pack_external_size("external32", cnt[k], ty[k], &one);
		sz += one;
	}
	checki(sz, 8 + 8 + 4 + 2 + 4, "external32.size: 26 bytes (long: 4)");
	unsigned char buf[64];
	memset(buf, 0xee, sizeof(buf));
	int rc = MPI_SUCCESS;
	for (int k = 0; k < 5 && rc == MPI_SUCCESS; k++)
		rc = MPI_Pack_external("external32", in[k], cnt[k], ty[k], buf, sizeof(buf), &pos);
	checkrc(rc, MPI_SUCCESS, "external32.pack");
	checki(pos, 26, "external32.pack: position");
	check(!strcmp(hex(buf, 26), "00000001fffffffe3ff8000000000000fffffffd1234deadbeef"),
	      nm("external32.pack: bytes %s", hex(buf, 26)));
	pos = 0;
	for (int k = 0; k < 5 && rc == MPI_SUCCESS; k++)
		rc = MPI_Unpack_external("external32", buf, 26, &pos, back[k], cnt[k], ty[k]);
	checkrc(rc, MPI_SUCCESS, "external32.unpack");
	check(pos == 26 && ib[0] == 1 && ib[1] == -2 && db == 1.5 && lb == -3 && sb == 0x1234 &&
		      ulb == 0xdeadbeefUL,
	      "external32.unpack: every value (long sign-extended)");
	/* ints 0, 2, 4 by a vector type (extent 5 ints), two copies */
	int v[12], w[12] = {0};
	for (int k = 0; k < 12; k++)
		v[k] = 256 * k + k;
	MPI_Datatype vec;
	MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
	MPI_Type_commit(&vec);
	pos = 0;
	MPI_Pack_external("external32", v, 2, vec, buf, sizeof(buf), &pos);
	checki(pos, 24, "external32.vector: 24 bytes");
	check(buf[3] == 0 && buf[7] == 2 && buf[6] == 2 && buf[22] == 9 && buf[23] == 9,
	      nm("external32.vector: bytes %s", hex(buf, 24)));
	pos = 0;
	MPI_Unpack_external("external32", buf, 24, &pos, w, 2, vec);
	/* the second copy starts an extent (5 ints) after the first */
	check(w[2] == v[2] && w[5] == v[5] && w[9] == v[9] && w[1] == 0 && w[10] == 0,
	      "external32.vector: unpacked");
	MPI_Type_free(&vec);
}

/* Fortran's types as C names them: their names and sizes, a sum over
 * MPI_INTEGER and MPI_REAL, a double complex sent; MPI_Type_match_size */
static void fortran_types(void)
{
	static const struct {
		MPI_Datatype t;
		const char *name;
		int size;
	} ft[] = {{MPI_CHARACTER, "MPI_CHARACTER", 1},
		  {MPI_LOGICAL, "MPI_LOGICAL", 4},
		  {MPI_INTEGER, "MPI_INTEGER", 4},
		  {MPI_REAL, "MPI_REAL", 4},
		  {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION", 8},
		  {MPI_COMPLEX, "MPI_COMPLEX", 8},
		  {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX", 16},
		  {MPI_CXX_BOOL, "MPI_CXX_BOOL", 1},
		  {MPI_CXX_FLOAT_COMPLEX, "MPI_CXX_FLOAT_COMPLEX", 8},
		  {MPI_CXX_DOUBLE_COMPLEX, "MPI_CXX_DOUBLE_COMPLEX", 16}};
	for (size_t k = 0; k < sizeof(ft) / sizeof(ft[0]); k++) {
		char name[MPI_MAX_OBJECT_NAME];
		int len = 0, sz = 0;
		MPI_Type_get_name(ft[k].t, name, &len);
		MPI_Type_size(ft[k].t, &sz);
		check(!strcmp(name, ft[k].name) && sz == ft[k].size,
		      nm("fortran.%s: name, size %d", ft[k].name, ft[k].size));
	}
	int n = rank + 1, sum = 0;
	float f = 0.5f * (float)rank, fsum = 0;
	MPI_Allreduce(&n, &sum, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(&f, &fsum, 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD);
	check(sum == size * (size + 1) / 2 && fsum == 0.25f * (float)(size * (size - 1)),
	      "fortran.allreduce of INTEGER and REAL");
	double z[2] = {1.5 * rank, -2.0}, zb[2] = {0, 0};
	MPI_Sendrecv(z, 1, MPI_DOUBLE_COMPLEX, rank, 3, zb, 1, MPI_DOUBLE_COMPLEX, rank, 3,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	check(zb[0] == z[0] && zb[1] == -2.0, "fortran.double complex to itself");
	/* a pair type's value and int are an element each */
	struct {
		double d;
		int i;
	} pr[2] = {{1.0, 2}, {3.0, 4}}, pb[2];
	MPI_Status st;
	int el = -1;
	MPI_Sendrecv(pr, 2, MPI_DOUBLE_INT, rank, 4, pb, 2, MPI_DOUBLE_INT, rank, 4,
		     MPI_COMM_WORLD, &st);
	MPI_Get_elements(&st, MPI_DOUBLE_INT, &el);
	check(el == 4 && pb[1].d == 3.0 && pb[1].i == 4, "pair.get_elements: 2 DOUBLE_INT, 4 elements");
	static const struct {
		int cls, size;
	} ms[] = {{MPI_TYPECLASS_REAL, 4},    {MPI_TYPECLASS_REAL, 8},	{MPI_TYPECLASS_INTEGER, 1},
		  {MPI_TYPECLASS_INTEGER, 2}, {MPI_TYPECLASS_INTEGER, 4}, {MPI_TYPECLASS_INTEGER, 8},
		  {MPI_TYPECLASS_COMPLEX, 8}, {MPI_TYPECLASS_COMPLEX, 16}};
	for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++) {
		MPI_Datatype t = MPI_DATATYPE_NULL;
		int sz = 0;
		int rc = MPI_Type_match_size(ms[k].cls, ms[k].size, &t);
		if (rc == MPI_SUCCESS)
			MPI_Type_size(t, &sz);
		check(rc == MPI_SUCCESS && sz == ms[k].size,
		      nm("match_size class %d size %d", ms[k].cls, ms[k].size));
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	structs();
	indexed();
	resized();
	in_collectives();
	packing();
	negative_extents();
	freed_while_pending();
	oldapi();
	external32();
	fortran_types();
	return suite_finish("dtypes");
}
