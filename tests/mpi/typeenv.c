/* MPI_Type_get_envelope and MPI_Type_get_contents for every type
 * constructor: the combiner, the counts and the arguments given back as
 * MPI-3.1 §4.1.13 lists them; a named type's envelope; a derived type
 * among the arguments handed back as a type the caller frees, still whole
 * after the user freed its own handle (and decoded in turn), and still
 * usable for a message after the outer type's contents were freed; too
 * small arrays refused. Every rank runs the same checks; the last one
 * sends a message through a decoded type. */
#include "suite.h"

#define MAXN 40

struct got {
	int ni, na, nd, comb;
	int ints[MAXN];
	MPI_Aint addrs[MAXN];
	MPI_Datatype types[MAXN];
};

/* t's envelope and contents; wants combiner comb and the given counts */
static void decode(MPI_Datatype t, int comb, int ni, int na, int nd, struct got *g,
		   const char *name)
{
	MPI_Type_get_envelope(t, &g->ni, &g->na, &g->nd, &g->comb);
	check(g->comb == comb && g->ni == ni && g->na == na && g->nd == nd,
	      nm("%s.envelope", name));
	checkrc(MPI_Type_get_contents(t, MAXN, MAXN, MAXN, g->ints, g->addrs, g->types),
		MPI_SUCCESS, nm("%s.contents", name));
}

static int ints_are(const struct got *g, const int *want, int n)
{
	return !memcmp(g->ints, want, (size_t)n * sizeof(int));
}

static void simple(void)
{
	struct got g;
	MPI_Datatype t;
	int ni = -1, na = -1, nd = -1, comb = -1;
	MPI_Type_get_envelope(MPI_DOUBLE, &ni, &na, &nd, &comb);
	check(comb == MPI_COMBINER_NAMED && ni == 0 && na == 0 && nd == 0, "named.envelope");

	MPI_Type_contiguous(7, MPI_INT, &t);
	decode(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, &g, "contiguous");
	check(g.ints[0] == 7 && g.types[0] == MPI_INT, "contiguous.args");
	MPI_Type_free(&t);

	MPI_Type_vector(3, 2, 5, MPI_SHORT, &t);
	decode(t, MPI_COMBINER_VECTOR, 3, 0, 1, &g, "vector");
	check(ints_are(&g, (int[]){3, 2, 5}, 3) && g.types[0] == MPI_SHORT, "vector.args");
	MPI_Type_free(&t);

	MPI_Type_create_hvector(4, 1, 24, MPI_DOUBLE, &t);
	decode(t, MPI_COMBINER_HVECTOR, 2, 1, 1, &g, "hvector");
	check(ints_are(&g, (int[]){4, 1}, 2) && g.addrs[0] == 24 && g.types[0] == MPI_DOUBLE,
	      "hvector.args");
	MPI_Type_free(&t);

	int bl[3] = {1, 3, 2}, di[3] = {0, 4, 11};
	MPI_Type_indexed(3, bl, di, MPI_INT, &t);
	decode(t, MPI_COMBINER_INDEXED, 7, 0, 1, &g, "indexed");
	check(ints_are(&g, (int[]){3, 1, 3, 2, 0, 4, 11}, 7) && g.types[0] == MPI_INT,
	      "indexed.args");
	MPI_Type_free(&t);

	MPI_Type_create_indexed_block(3, 2, di, MPI_CHAR, &t);
	decode(t, MPI_COMBINER_INDEXED_BLOCK, 5, 0, 1, &g, "indexed_block");
	check(ints_are(&g, (int[]){3, 2, 0, 4, 11}, 5) && g.types[0] == MPI_CHAR,
	      "indexed_block.args");
	MPI_Type_free(&t);

	MPI_Aint ad[3] = {0, 32, 80};
	MPI_Type_create_hindexed(3, bl, ad, MPI_FLOAT, &t);
	decode(t, MPI_COMBINER_HINDEXED, 4, 3, 1, &g, "hindexed");
	check(ints_are(&g, (int[]){3, 1, 3, 2}, 4) && g.addrs[0] == 0 && g.addrs[1] == 32 &&
		      g.addrs[2] == 80 && g.types[0] == MPI_FLOAT,
	      "hindexed.args");
	MPI_Type_free(&t);

	MPI_Type_create_hindexed_block(3, 2, ad, MPI_LONG, &t);
	decode(t, MPI_COMBINER_HINDEXED_BLOCK, 2, 3, 1, &g, "hindexed_block");
	check(ints_are(&g, (int[]){3, 2}, 2) && g.addrs[2] == 80 && g.types[0] == MPI_LONG,
	      "hindexed_block.args");
	MPI_Type_free(&t);

	/* MPI-1's names: the same combiners from C */
	MPI_Type_hvector(2, 3, 40, MPI_INT, &t);
	decode(t, MPI_COMBINER_HVECTOR, 2, 1, 1, &g, "mpi1_hvector");
	check(ints_are(&g, (int[]){2, 3}, 2) && g.addrs[0] == 40, "mpi1_hvector.args");
	MPI_Type_free(&t);
	MPI_Type_hindexed(3, bl, ad, MPI_INT, &t);
	decode(t, MPI_COMBINER_HINDEXED, 4, 3, 1, &g, "mpi1_hindexed");
	check(ints_are(&g, (int[]){3, 1, 3, 2}, 4) && g.addrs[1] == 32, "mpi1_hindexed.args");
	MPI_Type_free(&t);

	MPI_Type_create_resized(MPI_INT, -4, 16, &t);
	decode(t, MPI_COMBINER_RESIZED, 0, 2, 1, &g, "resized");
	check(g.addrs[0] == -4 && g.addrs[1] == 16 && g.types[0] == MPI_INT, "resized.args");
	MPI_Type_free(&t);

	MPI_Type_dup(MPI_UNSIGNED, &t);
	decode(t, MPI_COMBINER_DUP, 0, 0, 1, &g, "dup");
	check(g.types[0] == MPI_UNSIGNED, "dup.args");
	MPI_Type_free(&t);
}

static void arrays(void)
{
	struct got g;
	MPI_Datatype t;
	int sz[2] = {6, 8}, sub[2] = {2, 3}, st[2] = {1, 4};
	MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, MPI_DOUBLE, &t);
	decode(t, MPI_COMBINER_SUBARRAY, 8, 0, 1, &g, "subarray");
	check(ints_are(&g, (int[]){2, 6, 8, 2, 3, 1, 4, MPI_ORDER_FORTRAN}, 8) &&
		      g.types[0] == MPI_DOUBLE,
	      "subarray.args");
	MPI_Type_free(&t);

	int gs[2] = {8, 6}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
	    darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
	MPI_Type_create_darray(4, 3, 2, gs, dist, darg, ps, MPI_ORDER_C, MPI_INT, &t);
	decode(t, MPI_COMBINER_DARRAY, 12, 0, 1, &g, "darray");
	check(ints_are(&g, (int[]){4, 3, 2, 8, 6, MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC,
				  MPI_DISTRIBUTE_DFLT_DARG, 2, 2, 2, MPI_ORDER_C}, 12) &&
		      g.types[0] == MPI_INT,
	      "darray.args");
	MPI_Type_free(&t);
}

/* a struct of a vector the user frees at once: the vector comes back,
 * decodes in turn, and the caller frees it */
static void nested(void)
{
	struct got g, in;
	MPI_Datatype vec, t;
	MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
	int bl[2] = {1, 2};
	MPI_Aint ad[2] = {0, 8};
	MPI_Datatype ty[2] = {MPI_DOUBLE, vec};
	MPI_Type_create_struct(2, bl, ad, ty, &t);
	MPI_Type_free(&vec);
	decode(t, MPI_COMBINER_STRUCT, 3, 2, 2, &g, "struct");
	check(ints_are(&g, (int[]){2, 1, 2}, 3) && g.addrs[1] == 8 && g.types[0] == MPI_DOUBLE,
	      "struct.args");
	decode(g.types[1], MPI_COMBINER_VECTOR, 3, 0, 1, &in, "struct.inner");
	check(ints_are(&in, (int[]){2, 1, 3}, 3) && in.types[0] == MPI_INT, "struct.inner.args");
	int size = -1;
	MPI_Type_size(g.types[1], &size);
	checki(size, 2 * (int)sizeof(int), "struct.inner.size");
	checkrc(MPI_Type_free(&g.types[1]), MPI_SUCCESS, "struct.inner.free");

	/* contents asked twice while the user holds its handle: each returned
	 * handle freed, the user's still valid */
	MPI_Datatype c2;
	MPI_Type_contiguous(2, MPI_INT, &vec);
	MPI_Type_contiguous(3, vec, &c2);
	decode(c2, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, &g, "contig_of_contig");
	decode(c2, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, &in, "contig_of_contig.again");
	MPI_Type_free(&g.types[0]);
	MPI_Type_free(&in.types[0]);
	size = -1;
	checkrc(MPI_Type_size(vec, &size), MPI_SUCCESS, "contig_of_contig.user_handle_valid");
	checki(size, 2 * (int)sizeof(int), "contig_of_contig.user_handle_size");
	MPI_Type_free(&vec);
	MPI_Type_free(&c2);
	MPI_Type_free(&t);

	int ints[1];
	MPI_Aint addrs[1];
	MPI_Datatype types[1];
	MPI_Type_vector(2, 1, 3, MPI_INT, &vec);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	check(MPI_Type_get_contents(vec, 2, 0, 1, ints, addrs, types) != MPI_SUCCESS,
	      "contents.arrays_too_small_refused");
	MPI_Type_free(&vec);
}

/* a message through a type given back by get_contents, the outer type and
 * the user's handle freed */
static void message(void)
{
	if (size < 2)
		return;
	MPI_Datatype vec, t;
	struct got g;
	MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
	MPI_Type_contiguous(1, vec, &t);
	MPI_Type_free(&vec);
	decode(t, MPI_COMBINER_CONTIGUOUS, 1, 0, 1, &g, "message.outer");
	MPI_Type_free(&t);
	MPI_Type_commit(&g.types[0]);
	int b[6] = {-1, -1, -1, -1, -1, -1};
	if (rank == 0) {
		for (int i = 0; i < 6; i++)
			b[i] = 10 + i;
		MPI_Send(b, 1, g.types[0], size - 1, 7, MPI_COMM_WORLD);
	} else if (rank == size - 1) {
		MPI_Recv(b, 1, g.types[0], 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		check(b[0] == 10 && b[1] == -1 && b[2] == 12 && b[4] == 14 && b[5] == -1,
		      "message.values");
	}
	MPI_Type_free(&g.types[0]);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	suite_begin();
	simple();
	arrays();
	nested();
	message();
	return suite_finish("typeenv");
}
