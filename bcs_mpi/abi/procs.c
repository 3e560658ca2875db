/* BCS-MPI process-set arithmetic (procs.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mpi.h"
#include "procs.h"

/* MPI_Dims_create gives MPICH's answers, which programs and test suites
 * expect; MPI only asks for a split "as close to each other as possible".
 * MPICH (after Traeff and Luebbe, EuroMPI'15): a prime factor larger than
 * the square root of what is left takes a dimension of its own; a few
 * shapes are answered at once; otherwise a pruned search over the divisors
 * for the smallest difference between largest and smallest dimension, a
 * later candidate of the search order winning a tie. */

#define DIMS_MAXF 10  /* distinct primes of an int: at most 9 */
#define DIMS_MAX 64

struct pfac {
	int p, e;
};

/* a product as MPICH computes it, in int: a square above 46340 wraps
 * (as two's complement does), and MPICH's answers for such inputs follow */
static int imul(int a, int b)
{
	return (int)((unsigned)a * (unsigned)b);
}

/* prime factors of n in increasing order; *nall: with multiplicity */
static int factorize(int n, struct pfac *f, int *nall)
{
	int nf = 0;
	*nall = 0;
	for (int p = 2; (long)p * p <= n; p += p == 2 ? 1 : 2) {
		if (n % p)
			continue;
		f[nf] = (struct pfac){p, 0};
		while (n % p == 0) {
			n /= p;
			f[nf].e++;
		}
		*nall += f[nf++].e;
	}
	if (n > 1) {
		f[nf++] = (struct pfac){n, 1};
		++*nall;
	}
	return nf;
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* the divisors of the number factored in f, but 1 and itself, increasing */
static int *divisors(const struct pfac *f, int nf, int *n)
{
	long total = 1;
	for (int i = 0; i < nf; i++)
		total *= f[i].e + 1;
	int *d = malloc((size_t)total * sizeof(int));
	if (!d)
		return NULL;
	d[0] = 1;
	int nd = 1;
	for (int i = 0; i < nf; i++) {
		int had = nd;
		long pw = 1;
		for (int e = 1; e <= f[i].e; e++) {
			pw *= f[i].p;
			for (int k = 0; k < had; k++)
				d[nd++] = (int)(d[k] * pw);
		}
	}
	qsort(d, (size_t)nd, sizeof(int), cmp_int);
	*n = nd - 2;
	memmove(d, d + 1, (size_t)*n * sizeof(int));
	return d;
}

/* First guess: one prime per dimension, largest first, then each further
 * prime onto the last dimension it keeps no larger than the one before. */
static void dims_round_robin(const struct pfac *f, int nf, int nd, int *dims)
{
	int k = 0;
	for (int i = 0; i < nd; i++)
		dims[i] = 1;
	for (int i = nf - 1; i >= 0; i--)
		for (int c = 0; c < f[i].e; c++) {
			if (k < nd) {
				dims[k++] = f[i].p;
				continue;
			}
			int at = nd - 1;
			while (at > 0 && imul(dims[at], f[i].p) > dims[at - 1])
				at--;
			dims[at] *= f[i].p;
		}
}

/* The search. try[nd - 1] is the smallest dimension, chosen first; idx
 * the dimension to choose now among divs (divisors of n, increasing, none
 * smaller than those chosen); *bal the best difference so far, best its
 * dimensions. */
struct dsearch {
	int nd;
	int *try, *best;
	int bal;
};

static int dims_pick(struct dsearch *s, int n, int idx, const int *divs, int ndivs);

/* the last two dimensions: the closest pair q >= f, f among divs */
static void dims_pair(struct dsearch *s, int n, const int *divs, int ndivs)
{
	int min = s->try[s->nd - 1], k = 1;
	while (k < ndivs && n / divs[k] >= divs[k])
		k++;
	int f = divs[k - 1], q = n / f;
	if (q < f)
		return;
	int b = s->nd == 2 ? q - f : q - min;
	if (b > s->bal)
		return;
	for (int i = 2; i < s->nd; i++)
		s->best[i] = s->try[i];
	s->best[0] = q;
	s->best[1] = f;
	s->bal = q - min;
}

static int dims_pick(struct dsearch *s, int n, int idx, const int *divs, int ndivs)
{
	if (idx == 1) {
		dims_pair(s, n, divs, ndivs);
		return 0;
	}
	int min = s->try[s->nd - 1], *next = malloc((size_t)ndivs * sizeof(int));
	if (!next)
		return MPI_ERR_INTERN;
	int rc = 0;
	bool top = idx == s->nd - 1;
	for (int k = 0; k < ndivs && !rc; k++) {
		int f = divs[k], q = n / f, nn = 0, sf;
		/* every dimension still to choose is at least f */
		if (!top && f - min > s->bal)
			break;
		if (q % f == 0)
			sf = next[nn++] = f;
		else if (k + 1 < ndivs)
			sf = divs[k + 1];
		else
			break;
		if (!top && sf - min > s->bal)
			break;
		/* idx more dimensions of at least sf must fit in q */
		int pw = imul(sf, sf), left = idx - 1;
		for (; left > 0 && pw <= q; left--)
			pw = imul(pw, sf);
		if (left > 0)
			break;
		s->try[idx] = f;
		for (int j = k + 1; j < ndivs && imul(divs[j], divs[j]) <= q; j++)
			if (q % divs[j] == 0)
				next[nn++] = divs[j];
		if (nn)
			rc = dims_pick(s, q, idx - 1, next, nn);
	}
	free(next);
	return rc;
}

/* n split over nd dimensions, non-increasing, into dims */
static int dims_split(int n, int nd, int *dims)
{
	struct pfac f[DIMS_MAXF];
	int nall, nf = factorize(n, f, &nall), big = 0;
	for (int i = 0; i < nd; i++)
		dims[i] = 1;
	/* primes above the square root of what is left: a dimension each */
	while (nf > 1 && big < nd - 1 && f[nf - 1].e == 1 && imul(f[nf - 1].p, f[nf - 1].p) > n) {
		dims[big++] = f[nf - 1].p;
		n /= f[--nf].p;
		nall--;
	}
	int left = nd - big, *d = dims + big;
	if (nall <= left) { /* one prime a dimension, largest first */
		for (int i = nf - 1, k = 0; i >= 0; i--)
			for (int c = 0; c < f[i].e; c++)
				d[k++] = f[i].p;
		return 0;
	}
	if (left == 1) {
		d[0] = n;
		return 0;
	}
	if (nf == 1) { /* p^e: the powers dealt out in turn */
		for (int c = 0; c < f[0].e; c++)
			d[c % left] *= f[0].p;
		return 0;
	}
	bool even = true;
	for (int i = 0; i < nf; i++)
		even = even && f[i].e % left == 0;
	if (even) {
		int v = 1;
		for (int i = 0; i < nf; i++)
			for (int c = 0; c < f[i].e / left; c++)
				v *= f[i].p;
		for (int i = 0; i < left; i++)
			d[i] = v;
		return 0;
	}
	int ndivs, *divs = divisors(f, nf, &ndivs), try[DIMS_MAX];
	if (!divs)
		return MPI_ERR_INTERN;
	dims_round_robin(f, nf, left, d);
	struct dsearch s = {.nd = left, .try = try, .best = d, .bal = dims[0] - dims[nd - 1]};
	try[left - 1] = divs[0];
	int rc = dims_pick(&s, n, left - 1, divs, ndivs);
	free(divs);
	return rc;
}

int bcs_dims_create(int nnodes, int ndims, int dims[])
{
	if (nnodes < 1 || ndims < 0)
		return MPI_ERR_ARG;
	int fixed = 1, free_dims = 0;
	for (int i = 0; i < ndims; i++) {
		if (dims[i] < 0)
			return MPI_ERR_DIMS;
		if (dims[i] > 0)
			fixed *= dims[i];
		else
			free_dims++;
	}
	if (nnodes % fixed)
		return MPI_ERR_DIMS;
	int rest = nnodes / fixed;
	if (free_dims == 0)
		return rest == 1 ? MPI_SUCCESS : MPI_ERR_DIMS;
	if (free_dims > DIMS_MAX)
		return MPI_ERR_DIMS;
	int got[DIMS_MAX];
	int rc = dims_split(rest, free_dims, got);
	if (rc)
		return rc;
	for (int i = 0, k = 0; i < ndims; i++)
		if (dims[i] == 0)
			dims[i] = got[k++];
	return MPI_SUCCESS;
}

int bcs_ranks_index(const int *a, int na, int w)
{
	for (int i = 0; i < na; i++)
		if (a[i] == w)
			return i;
	return -1;
}

int bcs_ranks_setop(int kind, const int *a, int na, const int *b, int nb, int *out)
{
	int k = 0;
	for (int i = 0; i < na; i++) {
		int in_b = bcs_ranks_index(b, nb, a[i]) >= 0;
		if (kind == 0 || (kind == 1 && in_b) || (kind == 2 && !in_b))
			out[k++] = a[i];
	}
	for (int i = 0; kind == 0 && i < nb; i++)
		if (bcs_ranks_index(a, na, b[i]) < 0)
			out[k++] = b[i];
	return k;
}

int bcs_ranks_translate(const int *a, int na, const int *b, int nb, int n, const int *ranks1,
			int *ranks2)
{
	for (int i = 0; i < n; i++) {
		if (ranks1[i] == MPI_PROC_NULL) {
			ranks2[i] = MPI_PROC_NULL;
			continue;
		}
		if (ranks1[i] < 0 || ranks1[i] >= na)
			return MPI_ERR_RANK;
		int k = bcs_ranks_index(b, nb, a[ranks1[i]]);
		ranks2[i] = k < 0 ? MPI_UNDEFINED : k;
	}
	return MPI_SUCCESS;
}

void bcs_cart_coords(int ndims, const int *dims, int rank, int maxdims, int *coords)
{
	for (int i = ndims - 1; i >= 0; i--) {
		if (i < maxdims)
			coords[i] = rank % dims[i];
		rank /= dims[i];
	}
}

int bcs_cart_rank(int ndims, const int *dims, const int *periods, const int *coords)
{
	int r = 0;
	for (int i = 0; i < ndims; i++) {
		int d = dims[i], x = coords[i];
		if (periods[i])
			x = ((x % d) + d) % d;
		else if (x < 0 || x >= d)
			return -1;
		r = r * d + x;
	}
	return r;
}
