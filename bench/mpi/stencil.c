/* An irregular-neighbour stencil in the manner of SAGE (adaptive-mesh
 * hydrodynamics): a mesh of NX x NY x NZ cells numbered in one linear order
 * and cut into contiguous ranges, one per rank, as SAGE cuts its cell list.
 * Each cell is coupled to its 6 grid neighbours and, for one cell in REFINE
 * (REFINE/4 in the refined bottom third), to a cell up to N/4 further on
 * chosen by a hash (the links an adaptively refined mesh adds),
 * so each rank has its own irregular set of neighbour ranks with halos of
 * differing sizes. Each step: post the halo receives (MPI_Irecv), pack and
 * send the boundary values (MPI_Isend), update the cells that need no halo
 * while the messages move, MPI_Waitall, update the rest, then one
 * MPI_Allreduce (the global energy, which the next step uses).
 *
 *   stencil [--nx 64 --ny 64 --nz 64 --steps 40 --work 8 --refine 16]
 *
 * WORK is the number of Newton iterations of a per-cell equation of state
 * (the computation per cell). Prints one JSON line (rank 0) with the run time
 * and a checksum of the final field that is the same for every rank count and
 * MPI library: a cell's update reads its neighbours in ascending global order
 * and the global sum is reduced in fixed point (64-bit integers), so no
 * floating-point result depends on the decomposition. */
#define _POSIX_C_SOURCE 200809L /* nanosleep under -std=c11 (--hold) */
#include "mb.h"

#include <math.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
	"usage: stencil [--nx N] [--ny N] [--nz N] [--steps S] [--work W] [--refine R] [--hold]\n"
	"  A SAGE-like irregular-neighbour stencil: halo exchange with Isend/Irecv/Waitall\n"
	"  overlapping the interior update, and one MPI_Allreduce per step.\n"
	"  Prints {\"prog\":\"stencil\",...,\"time_s\":T,\"checksum\":\"0x...\"} at rank 0.\n"
	"  --hold: then waits until the file stencil.go exists (a test's gate).\n";

#define FIX 1048576.0 /* 2^20: the fixed point of the global sum */

static long N, NX, NY, NZ;
static int P;

static long first(int r) { return (long)r * N / P; }

static int owner(long g)
{
	int r = (int)(g * P / N);
	while (first(r) > g)
		r--;
	while (first(r + 1) <= g)
		r++;
	return r;
}

/* the far cell linked to g, or -1: one cell in REFINE has a link, one in
 * REFINE/4 in the bottom third of the mesh (the refined region), to a cell
 * up to N/4 further on in the numbering */
static long far_link(long g, long refine)
{
	uint64_t h = mb_mix((uint64_t)g * 0x2545f4914f6cdd1dULL + 1);
	if (g / (NX * NY) < NZ / 3)
		refine /= 4;
	if (refine <= 0 || h % (uint64_t)refine || N < 8)
		return -1;
	long f = g + 1 + (long)(mb_mix(h) % (uint64_t)(N / 4));
	return f < N ? f : -1;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

/* the equation of state: WORK Newton steps towards the cube root of 1 + x*x */
static double eos(double x, int work)
{
	double a = 1.0 + x * x, y = 1.0 + 0.25 * fabs(x);
	for (int i = 0; i < work; i++)
		y = y - (y * y * y - a) / (3.0 * y * y);
	return y;
}

int main(int argc, char **argv)
{
	struct mb_opt opts[] = {
		{"nx", 64, 0}, {"ny", 64, 0}, {"nz", 64, 0}, {"steps", 40, 0}, {"work", 8, 0}, {"refine", 16, 0},
		{"hold", 0, 1},
	};
	int nopts = sizeof opts / sizeof opts[0];
	MPI_Init(&argc, &argv);
	mb_parse("stencil", usage, argc, argv, opts, nopts);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &P);
	NX = mb_get(opts, nopts, "nx");
	NY = mb_get(opts, nopts, "ny");
	NZ = mb_get(opts, nopts, "nz");
	N = NX * NY * NZ;
	int steps = (int)mb_get(opts, nopts, "steps"), work = (int)mb_get(opts, nopts, "work");
	long refine = mb_get(opts, nopts, "refine");
	if (N < P)
		mb_die("stencil", "fewer cells than ranks", NULL);

	long g0 = first(rank), nloc = first(rank + 1) - g0;
	/* adjacency (global indices) of the local cells: grid neighbours, the
	 * far links from local cells, and those pointing at local cells
	 * (every rank walks the whole mesh for those: cheap, and no setup messages) */
	long *deg = calloc(nloc + 1, sizeof *deg);
	if (!deg)
		mb_die("stencil", "out of memory", NULL);
	for (long l = 0; l < nloc; l++)
		deg[l] = 6;
	for (long g = 0; g < N; g++) {
		long f = far_link(g, refine);
		if (f < 0)
			continue;
		if (g >= g0 && g < g0 + nloc)
			deg[g - g0]++;
		if (f >= g0 && f < g0 + nloc)
			deg[f - g0]++;
	}
	long *row = malloc((nloc + 1) * sizeof *row);
	long tot = 0;
	for (long l = 0; l < nloc; l++) {
		row[l] = tot;
		tot += deg[l];
	}
	row[nloc] = tot;
	long *col = malloc((tot ? tot : 1) * sizeof *col);
	if (!row || !col)
		mb_die("stencil", "out of memory", NULL);
	memset(deg, 0, (nloc + 1) * sizeof *deg);
#define ADD(l, g) (col[row[l] + deg[l]++] = (g))
	for (long l = 0; l < nloc; l++) {
		long g = g0 + l, x = g % NX, y = (g / NX) % NY, z = g / (NX * NY);
		if (x > 0) ADD(l, g - 1);
		if (x < NX - 1) ADD(l, g + 1);
		if (y > 0) ADD(l, g - NX);
		if (y < NY - 1) ADD(l, g + NX);
		if (z > 0) ADD(l, g - NX * NY);
		if (z < NZ - 1) ADD(l, g + NX * NY);
	}
	for (long g = 0; g < N; g++) {
		long f = far_link(g, refine);
		if (f < 0)
			continue;
		if (g >= g0 && g < g0 + nloc)
			ADD(g - g0, f);
		if (f >= g0 && f < g0 + nloc)
			ADD(f - g0, g);
	}
#undef ADD
	/* sorted and without repeats: the update reads neighbours in this order */
	long nz = 0;
	for (long l = 0; l < nloc; l++) {
		long *c = col + row[l], n = deg[l], u = 0;
		qsort(c, n, sizeof *c, cmp_long);
		for (long i = 0; i < n; i++)
			if (!u || c[u - 1] != c[i])
				c[u++] = c[i];
		memmove(col + nz, c, u * sizeof *c);
		row[l] = nz;
		nz += u;
	}
	row[nloc] = nz;

	/* the halo: remote cells referenced, sorted; since owners hold
	 * contiguous ranges, each neighbour's cells are one contiguous run, in
	 * the same order as that neighbour's send list (links are symmetric) */
	long nghost = 0;
	long *ghost = malloc((nz ? nz : 1) * sizeof *ghost);
	for (long i = 0; i < nz; i++)
		if (col[i] < g0 || col[i] >= g0 + nloc)
			ghost[nghost++] = col[i];
	qsort(ghost, nghost, sizeof *ghost, cmp_long);
	long u = 0;
	for (long i = 0; i < nghost; i++)
		if (!u || ghost[u - 1] != ghost[i])
			ghost[u++] = ghost[i];
	nghost = u;
	int *rcnt = calloc(P, sizeof *rcnt), *scnt = calloc(P, sizeof *scnt);
	long *roff = calloc(P + 1, sizeof *roff);
	for (long i = 0; i < nghost; i++)
		rcnt[owner(ghost[i])]++;
	for (int r = 0; r < P; r++)
		roff[r + 1] = roff[r] + rcnt[r];
	/* send lists: local cells with a neighbour owned by r, ascending */
	long *sidx = malloc(((nz ? nz : 1)) * sizeof *sidx), *soff = calloc(P + 1, sizeof *soff);
	int *mark = malloc(P * sizeof *mark);
	for (int r = 0; r < P; r++)
		mark[r] = -1;
	for (long l = 0; l < nloc; l++)
		for (long i = row[l]; i < row[l + 1]; i++) {
			long g = col[i];
			if (g >= g0 && g < g0 + nloc)
				continue;
			int o = owner(g);
			if (mark[o] != (int)l) {
				mark[o] = (int)l;
				scnt[o]++;
			}
		}
	for (int r = 0; r < P; r++)
		soff[r + 1] = soff[r] + scnt[r];
	long *fill = calloc(P, sizeof *fill);
	for (int r = 0; r < P; r++)
		mark[r] = -1;
	for (long l = 0; l < nloc; l++)
		for (long i = row[l]; i < row[l + 1]; i++) {
			long g = col[i];
			if (g >= g0 && g < g0 + nloc)
				continue;
			int o = owner(g);
			if (mark[o] != (int)l) {
				mark[o] = (int)l;
				sidx[soff[o] + fill[o]++] = l;
			}
		}
	/* columns as slots of v[]: local cells first, then the ghosts */
	char *inner = malloc(nloc ? nloc : 1);
	for (long l = 0; l < nloc; l++) {
		inner[l] = 1;
		for (long i = row[l]; i < row[l + 1]; i++) {
			long g = col[i];
			if (g >= g0 && g < g0 + nloc) {
				col[i] = g - g0;
			} else {
				long *p = bsearch(&g, ghost, nghost, sizeof *ghost, cmp_long);
				col[i] = nloc + (p - ghost);
				inner[l] = 0;
			}
		}
	}
	int nnb = 0, minh = -1, maxh = 0;
	for (int r = 0; r < P; r++)
		if (rcnt[r]) {
			nnb++;
			if (minh < 0 || rcnt[r] < minh)
				minh = rcnt[r];
			if (rcnt[r] > maxh)
				maxh = rcnt[r];
		}

	double *v = malloc((nloc + nghost + 1) * sizeof *v), *nv = malloc((nloc + 1) * sizeof *nv);
	double *sbuf = malloc((soff[P] + 1) * sizeof *sbuf);
	MPI_Request *rq = malloc(2 * (size_t)P * sizeof *rq);
	MPI_Status *st = malloc(2 * (size_t)P * sizeof *st);
	if (!v || !nv || !sbuf || !rq || !st || !ghost || !rcnt || !scnt || !roff || !sidx || !soff ||
	    !mark || !fill || !inner)
		mb_die("stencil", "out of memory", NULL);
	for (long l = 0; l < nloc; l++)
		v[l] = (double)(mb_mix((uint64_t)(g0 + l)) % 1000) / 100.0;
	long long fsum = 0, gsum = 0;
	for (long l = 0; l < nloc; l++)
		fsum += (long long)floor(v[l] * FIX + 0.5);
	MPI_Allreduce(&fsum, &gsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);

	const double alpha = 0.05, gamma = 0.01;
	MPI_Barrier(MPI_COMM_WORLD);
	double t0 = MPI_Wtime();
	for (int s = 0; s < steps; s++) {
		int nr = 0;
		for (int r = 0; r < P; r++)
			if (rcnt[r])
				MPI_Irecv(v + nloc + roff[r], rcnt[r], MPI_DOUBLE, r, s, MPI_COMM_WORLD, &rq[nr++]);
		for (int r = 0; r < P; r++) {
			if (!scnt[r])
				continue;
			for (long i = soff[r]; i < soff[r + 1]; i++)
				sbuf[i] = v[sidx[i]];
			MPI_Isend(sbuf + soff[r], scnt[r], MPI_DOUBLE, r, s, MPI_COMM_WORLD, &rq[nr++]);
		}
		double mean = (double)gsum / FIX / (double)N;
		for (int pass = 0; pass < 2; pass++) { /* cells without halo, then the rest */
			if (pass == 1)
				MPI_Waitall(nr, rq, st);
			for (long l = 0; l < nloc; l++) {
				if (inner[l] != !pass)
					continue;
				double x = v[l], d = 0;
				for (long i = row[l]; i < row[l + 1]; i++)
					d += v[col[i]] - x;
				double p = eos(x, work);
				nv[l] = x + alpha * d + gamma * (mean - x) + 0.001 * (p - 1.0);
			}
		}
		memcpy(v, nv, nloc * sizeof *v);
		fsum = 0;
		for (long l = 0; l < nloc; l++)
			fsum += (long long)floor(v[l] * FIX + 0.5);
		MPI_Allreduce(&fsum, &gsum, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	}
	double t = mb_slowest(t0);

	uint64_t part = 0;
	for (long l = 0; l < nloc; l++)
		part += mb_share((uint64_t)(g0 + l), v[l]);
	uint64_t sum = mb_total(part);
	int stats[3] = {nnb, -maxh, minh < 0 ? 0 : minh}, smax[3], smin[3];
	MPI_Reduce(stats, smax, 3, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
	MPI_Reduce(stats, smin, 3, MPI_INT, MPI_MIN, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("{\"prog\":\"stencil\",\"variant\":\"nb\",\"ranks\":%d,\"nx\":%ld,\"ny\":%ld,\"nz\":%ld,"
		       "\"steps\":%d,\"work\":%d,\"refine\":%ld,\"neighbours_min\":%d,\"neighbours_max\":%d,"
		       "\"halo_min\":%d,\"halo_max\":%d,\"time_s\":%.6f,\"global_sum\":%lld,"
		       "\"checksum\":\"0x%016llx\"}\n",
		       P, NX, NY, NZ, steps, work, refine, smin[0], smax[0], smin[2], -smin[1], t, gsum,
		       (unsigned long long)sum);
	free(deg); free(row); free(col); free(ghost); free(rcnt); free(scnt); free(roff);
	free(sidx); free(soff); free(mark); free(fill); free(inner); free(v); free(nv);
	free(sbuf); free(rq); free(st);
	if (mb_get(opts, nopts, "hold")) {
		/* a test holds the job (and its row's slice) until it has looked:
		 * rank 0 waits for stencil.go in the working directory */
		fflush(stdout);
		struct timespec ts = {0, 10000000};
		if (rank == 0)
			while (access("stencil.go", F_OK) != 0)
				nanosleep(&ts, NULL);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	mb_finalize();
	return 0;
}
