/* A wavefront sweep in the manner of SWEEP3D (discrete-ordinates neutron
 * transport): a 3-D grid NX x NY x NZ split over a 2-D process grid in x and
 * y; each source iteration sweeps the grid from the 8 corners (octants), each
 * octant with ANGLES directions. A sweep is pipelined: the k planes are cut
 * into blocks of MK and the angles into blocks of MMI, and each (angle block,
 * k block) is one pipeline step: receive the inflow faces from the upstream
 * neighbours in x and y, compute the block, send the outflow faces
 * downstream. One MPI_Allreduce (max of the change) per iteration.
 *
 *   sweep [--nx 48 --ny 48 --nz 48 --angles 6 --mk 4 --mmi 3 --iters 4] [--nb]
 *
 * Blocking variant (default): MPI_Recv / MPI_Send per face and step, as
 * SWEEP3D does. Non-blocking (--nb): at the start of an octant every step's
 * inflow receives are posted (MPI_Irecv), each step waits only for its own
 * two faces and sends its outflow with MPI_Isend, so sends overlap the
 * computation of the next steps; the sends are waited for at the octant's end.
 *
 * Prints one JSON line (rank 0): the run time (from a barrier to the end of
 * the slowest rank) and a checksum of the final scalar flux that is the same
 * for every rank count and MPI library (each cell's value does not depend on
 * the decomposition: the inflow a cell sees is the same value whether it came
 * from the next cell or in a message). */
#include "mb.h"

#include <math.h>

static const char usage[] =
	"usage: sweep [--nx N] [--ny N] [--nz N] [--angles M] [--mk K] [--mmi A] [--iters I] [--nb]\n"
	"  A SWEEP3D-like pipelined wavefront sweep over an NX x NY x NZ grid on a 2-D\n"
	"  process grid, 8 octants of M angles, k blocks of K planes, angle blocks of A.\n"
	"  --nb: non-blocking variant (Isend/Irecv overlapping the computation).\n"
	"  Prints {\"prog\":\"sweep\",...,\"time_s\":T,\"checksum\":\"0x...\"} at rank 0.\n";

struct grid {
	int ni, nj, nk;       /* local extent */
	int gi0, gj0;         /* global offset */
	int gni, gnj;         /* global extent in x, y */
	int nm, mk, mmi;      /* angles per octant, k block, angle block */
	int pi, pj, npi, npj; /* process grid */
	double *src, *flux, *psik;
	double *ci, *cj, *ck, *inv, *w;
};

static int lo(int p, int n, int np) { return (int)((long)p * n / np); }

/* the rank at process-grid coordinates (pi, pj), or MPI_PROC_NULL off the grid */
static int at(const struct grid *g, int pi, int pj)
{
	if (pi < 0 || pj < 0 || pi >= g->npi || pj >= g->npj)
		return MPI_PROC_NULL;
	return pj * g->npi + pi;
}

#define IX(g, k, j, i) (((size_t)(k) * (g)->nj + (j)) * (g)->ni + (i))

/* One pipeline step: angles m0.. (mmi of them) and planes of k block kb, in
 * the octant's directions. fi holds the x inflow face [kk][mm][j] on entry
 * and the outflow on return, fj the same for y [kk][mm][i]. */
static void step(struct grid *g, int di, int dj, int dk, int kb, int m0, double *fi, double *fj)
{
	int nkb = g->mk;
	for (int kk = 0; kk < nkb; kk++) {
		int kl = kb * nkb + kk;
		int k = dk > 0 ? kl : g->nk - 1 - kl;
		for (int mm = 0; mm < g->mmi; mm++) {
			int m = m0 + mm;
			double ci = g->ci[m], cj = g->cj[m], ck = g->ck[m], inv = g->inv[m], w = g->w[m];
			double *pk = g->psik + (size_t)mm * g->nj * g->ni;
			double *fjr = fj + ((size_t)kk * g->mmi + mm) * g->ni;
			double *fir = fi + ((size_t)kk * g->mmi + mm) * g->nj;
			for (int jl = 0; jl < g->nj; jl++) {
				int j = dj > 0 ? jl : g->nj - 1 - jl;
				double pin = fir[j];
				double *s = g->src + IX(g, k, j, 0), *f = g->flux + IX(g, k, j, 0);
				double *pkr = pk + (size_t)j * g->ni;
				for (int il = 0; il < g->ni; il++) {
					int i = di > 0 ? il : g->ni - 1 - il;
					double psi = (s[i] + ci * pin + cj * fjr[i] + ck * pkr[i]) * inv;
					pin = psi;
					fjr[i] = psi;
					pkr[i] = psi;
					f[i] += w * psi;
				}
				fir[j] = pin;
			}
		}
	}
}

int main(int argc, char **argv)
{
	struct mb_opt opts[] = {
		{"nx", 48, 0}, {"ny", 48, 0}, {"nz", 48, 0}, {"angles", 6, 0}, {"mk", 4, 0},
		{"mmi", 3, 0}, {"iters", 4, 0}, {"nb", 0, 1},
	};
	int nopts = sizeof opts / sizeof opts[0];
	MPI_Init(&argc, &argv);
	mb_parse("sweep", usage, argc, argv, opts, nopts);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);

	struct grid G, *g = &G;
	int nx = (int)mb_get(opts, nopts, "nx"), ny = (int)mb_get(opts, nopts, "ny");
	int nz = (int)mb_get(opts, nopts, "nz");
	int iters = (int)mb_get(opts, nopts, "iters"), nb = (int)mb_get(opts, nopts, "nb");
	g->nm = (int)mb_get(opts, nopts, "angles");
	g->mk = (int)mb_get(opts, nopts, "mk");
	g->mmi = (int)mb_get(opts, nopts, "mmi");
	if (g->mk < 1 || nz % g->mk)
		mb_die("sweep", "--mk must divide --nz", NULL);
	if (g->mmi < 1 || g->nm % g->mmi)
		mb_die("sweep", "--mmi must divide --angles", NULL);
	/* the most nearly square process grid, npi <= npj */
	g->npi = 1;
	for (int d = 1; d * d <= size; d++)
		if (size % d == 0)
			g->npi = d;
	g->npj = size / g->npi;
	if (nx < g->npi || ny < g->npj)
		mb_die("sweep", "grid smaller than the process grid", NULL);
	g->pi = rank % g->npi;
	g->pj = rank / g->npi;
	g->gni = nx;
	g->gnj = ny;
	g->gi0 = lo(g->pi, nx, g->npi);
	g->gj0 = lo(g->pj, ny, g->npj);
	g->ni = lo(g->pi + 1, nx, g->npi) - g->gi0;
	g->nj = lo(g->pj + 1, ny, g->npj) - g->gj0;
	g->nk = nz;

	size_t ncell = (size_t)g->ni * g->nj * g->nk;
	g->src = malloc(ncell * sizeof *g->src);
	g->flux = calloc(ncell, sizeof *g->flux);
	g->psik = malloc((size_t)g->mmi * g->nj * g->ni * sizeof *g->psik);
	g->ci = malloc(5 * g->nm * sizeof(double));
	g->cj = g->ci + g->nm;
	g->ck = g->cj + g->nm;
	g->inv = g->ck + g->nm;
	g->w = g->inv + g->nm;
	const double sigt = 1.0, sigs = 0.5;
	for (int m = 0; m < g->nm; m++) { /* direction cosines of a simple quadrature */
		double mu = (m + 0.5) / g->nm, eta = sqrt(1.0 - mu * mu) * cos(0.3 + m), xi;
		eta = fabs(eta);
		xi = sqrt(fmax(0.0, 1.0 - mu * mu - eta * eta));
		g->ci[m] = 2.0 * mu;
		g->cj[m] = 2.0 * eta;
		g->ck[m] = 2.0 * xi;
		g->inv[m] = 1.0 / (sigt + g->ci[m] + g->cj[m] + g->ck[m]);
		g->w[m] = 1.0 / (8.0 * g->nm);
	}
	/* a fixed source: a hot block near one corner, 1 elsewhere */
	for (int k = 0; k < g->nk; k++)
		for (int j = 0; j < g->nj; j++)
			for (int i = 0; i < g->ni; i++) {
				int gi = g->gi0 + i, gj = g->gj0 + j;
				int hot = gi < nx / 4 && gj < ny / 3 && k < nz / 2;
				g->src[IX(g, k, j, i)] = hot ? 10.0 : 1.0;
			}
	double *q = malloc(ncell * sizeof *q);
	memcpy(q, g->src, ncell * sizeof *q);

	int nkb = g->nk / g->mk, nmb = g->nm / g->mmi, nsteps = nkb * nmb;
	size_t fisz = (size_t)g->mk * g->mmi * g->nj, fjsz = (size_t)g->mk * g->mmi * g->ni;
	/* one face pair per step (the non-blocking variant keeps every step's
	 * faces of an octant in flight; the blocking one uses step 0's) */
	double *fi = malloc((size_t)nsteps * fisz * sizeof *fi);
	double *fj = malloc((size_t)nsteps * fjsz * sizeof *fj);
	MPI_Request *rq = malloc((size_t)nsteps * 4 * sizeof *rq);
	if (!g->src || !g->flux || !g->psik || !g->ci || !q || !fi || !fj || !rq)
		mb_die("sweep", "out of memory", NULL);

	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Status st[2]; /* not MPI_STATUSES_IGNORE: GCC 12 takes that sentinel for a 0-byte array */
	double t0 = MPI_Wtime(), change = 0;
	for (int it = 0; it < iters; it++) {
		memset(g->flux, 0, ncell * sizeof *g->flux);
		for (int o = 0; o < 8; o++) {
			int di = o & 1 ? -1 : 1, dj = o & 2 ? -1 : 1, dk = o & 4 ? -1 : 1;
			int up_i = at(g, g->pi - di, g->pj), dn_i = at(g, g->pi + di, g->pj);
			int up_j = at(g, g->pi, g->pj - dj), dn_j = at(g, g->pi, g->pj + dj);
			int ti = 2 * o, tj = 2 * o + 1;
			if (nb) { /* every inflow of the octant posted at once */
				for (int s = 0; s < nsteps; s++) {
					MPI_Irecv(fi + s * fisz, (int)fisz, MPI_DOUBLE, up_i, ti, MPI_COMM_WORLD, &rq[4 * s]);
					MPI_Irecv(fj + s * fjsz, (int)fjsz, MPI_DOUBLE, up_j, tj, MPI_COMM_WORLD, &rq[4 * s + 1]);
				}
			}
			for (int ab = 0; ab < nmb; ab++) {
				memset(g->psik, 0, (size_t)g->mmi * g->nj * g->ni * sizeof *g->psik);
				for (int kb = 0; kb < nkb; kb++) {
					int s = ab * nkb + kb;
					double *a = nb ? fi + s * fisz : fi, *b = nb ? fj + s * fjsz : fj;
					if (nb) {
						MPI_Waitall(2, &rq[4 * s], st);
					} else {
						MPI_Recv(a, (int)fisz, MPI_DOUBLE, up_i, ti, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
						MPI_Recv(b, (int)fjsz, MPI_DOUBLE, up_j, tj, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
					}
					/* vacuum boundary: nothing flows in from outside */
					if (up_i == MPI_PROC_NULL)
						memset(a, 0, fisz * sizeof *a);
					if (up_j == MPI_PROC_NULL)
						memset(b, 0, fjsz * sizeof *b);
					step(g, di, dj, dk, kb, ab * g->mmi, a, b);
					if (nb) {
						MPI_Isend(a, (int)fisz, MPI_DOUBLE, dn_i, ti, MPI_COMM_WORLD, &rq[4 * s + 2]);
						MPI_Isend(b, (int)fjsz, MPI_DOUBLE, dn_j, tj, MPI_COMM_WORLD, &rq[4 * s + 3]);
					} else {
						MPI_Send(a, (int)fisz, MPI_DOUBLE, dn_i, ti, MPI_COMM_WORLD);
						MPI_Send(b, (int)fjsz, MPI_DOUBLE, dn_j, tj, MPI_COMM_WORLD);
					}
				}
			}
			if (nb)
				for (int s = 0; s < nsteps; s++)
					MPI_Waitall(2, &rq[4 * s + 2], st);
		}
		/* source iteration: scattering source from this iteration's flux */
		double dmax = 0;
		for (size_t c = 0; c < ncell; c++) {
			double nsrc = q[c] + sigs * g->flux[c];
			double d = fabs(nsrc - g->src[c]);
			if (d > dmax)
				dmax = d;
			g->src[c] = nsrc;
		}
		MPI_Allreduce(&dmax, &change, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	}
	double t = mb_slowest(t0);

	uint64_t part = 0;
	for (int k = 0; k < g->nk; k++)
		for (int j = 0; j < g->nj; j++)
			for (int i = 0; i < g->ni; i++) {
				uint64_t gidx = ((uint64_t)k * ny + (g->gj0 + j)) * nx + (g->gi0 + i);
				part += mb_share(gidx, g->flux[IX(g, k, j, i)]);
			}
	uint64_t sum = mb_total(part);
	if (rank == 0)
		printf("{\"prog\":\"sweep\",\"variant\":\"%s\",\"ranks\":%d,\"pgrid\":\"%dx%d\","
		       "\"nx\":%d,\"ny\":%d,\"nz\":%d,\"angles\":%d,\"mk\":%d,\"mmi\":%d,\"iters\":%d,"
		       "\"messages\":%ld,\"time_s\":%.6f,\"last_change\":%.6e,\"checksum\":\"0x%016llx\"}\n",
		       nb ? "nb" : "blocking", size, g->npi, g->npj, nx, ny, nz, g->nm, g->mk, g->mmi,
		       iters, (long)iters * 8 * nsteps * ((g->npi - 1) * g->npj + (g->npj - 1) * g->npi),
		       t, change, (unsigned long long)sum);
	free(fi);
	free(fj);
	free(rq);
	free(q);
	free(g->src);
	free(g->flux);
	free(g->psik);
	free(g->ci);
	mb_finalize();
	return 0;
}
