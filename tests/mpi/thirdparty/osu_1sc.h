/* What the one-sided OSU micro-benchmark equivalents share (our own code,
 * written to behave and print as OSU 5.x's osu_put_latency, osu_get_latency,
 * osu_put_bw and osu_get_bw do): rank 0 reaches rank 1's window; -w
 * create|allocate|dynamic chooses how the window is made, -s
 * lock|flush|flush_local|lock_all|pscw|fence how its epochs are
 * synchronised (OSU's defaults: allocate, flush); the osu.h options
 * besides. With -c, rank 0's last epoch of each size is checked byte for
 * byte at the other end (a Pass/Fail column). */
#ifndef THIRDPARTY_OSU_1SC_H
#define THIRDPARTY_OSU_1SC_H

#include "osu.h"

enum { WIN_CREATE, WIN_ALLOCATE, WIN_DYNAMIC };
enum { SYNC_LOCK, SYNC_PSCW, SYNC_FENCE, SYNC_FLUSH, SYNC_FLUSH_LOCAL, SYNC_LOCK_ALL };

static const char *const win_opt[] = {"create", "allocate", "dynamic"};
static const char *const win_info[] = {"MPI_Win_create", "MPI_Win_allocate",
				       "MPI_Win_create_dynamic"};
static const char *const sync_opt[] = {"lock", "pscw", "fence", "flush", "flush_local",
				       "lock_all"};
static const char *const sync_info[] = {
	"MPI_Win_lock/unlock", "MPI_Win_post/start/complete/wait", "MPI_Win_fence",
	"MPI_Win_flush", "MPI_Win_flush_local", "MPI_Win_lock_all/unlock_all"};

struct osu_1sc {
	int win, sync;
	char *buf;      /* this rank's window memory */
	MPI_Aint disp;  /* where rank 1's window starts, as rank 0 names it */
	MPI_Win w;
	MPI_Group peer; /* the other rank (post/start) */
};

static inline int osu_1sc_pick(const char *v, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(v, names[i]))
			return i;
	return -1;
}

/* -w and -s, then osu_parse on the rest; 1 on a bad option */
static inline int osu_1sc_parse(int argc, char **argv, struct osu_opts *o, struct osu_1sc *s,
				int rank)
{
	char **rest = malloc((size_t)(argc + 1) * sizeof(char *));
	int n = 0, bad = 0;
	rest[n++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if ((!strcmp(argv[i], "-w") || !strcmp(argv[i], "-s")) && i + 1 < argc) {
			int w = argv[i][1] == 'w';
			int v = w ? osu_1sc_pick(argv[i + 1], win_opt, 3)
				  : osu_1sc_pick(argv[i + 1], sync_opt, 6);
			if (v < 0)
				bad = 1;
			else if (w)
				s->win = v;
			else
				s->sync = v;
			i++;
			continue;
		}
		rest[n++] = argv[i];
	}
	if (bad && rank == 0)
		fprintf(stderr, "Usage: %s [-w create|allocate|dynamic] "
			"[-s lock|flush|flush_local|lock_all|pscw|fence] [osu options]\n", argv[0]);
	int rc = bad || osu_parse(n, rest, o, rank);
	free(rest);
	return rc;
}

static inline void osu_1sc_header(const char *title, const char *unit, const struct osu_opts *o,
				  const struct osu_1sc *s)
{
	char cols[64];
	printf("# OSU MPI_%s Test %s\n", title, OSU_VERSION);
	printf("# Window creation: %s\n", win_info[s->win]);
	printf("# Synchronization: %s\n", sync_info[s->sync]);
	snprintf(cols, sizeof(cols), "%-*s%*s", 10, "# Size", FIELD_WIDTH, unit);
	if (o->validate)
		printf("%-*s%*s\n", 30, cols, FIELD_WIDTH, "Validation");
	else
		printf("%s\n", cols);
	fflush(stdout);
}

/* The window of bytes bytes on both ranks; rank 0 learns where rank 1's
 * starts (a dynamic window's displacements are rank 1's addresses). */
static inline void osu_1sc_win(struct osu_1sc *s, long bytes, int rank)
{
	MPI_Aint mine = 0, both[2];
	if (s->win == WIN_ALLOCATE) {
		MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &s->buf, &s->w);
	} else {
		s->buf = malloc((size_t)bytes);
		if (s->win == WIN_CREATE) {
			MPI_Win_create(s->buf, bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &s->w);
		} else {
			MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &s->w);
			MPI_Win_attach(s->w, s->buf, bytes);
			MPI_Get_address(s->buf, &mine);
		}
	}
	MPI_Allgather(&mine, 1, MPI_AINT, both, 1, MPI_AINT, MPI_COMM_WORLD);
	s->disp = both[1];
	MPI_Group world;
	int other = 1 - rank;
	MPI_Comm_group(MPI_COMM_WORLD, &world);
	MPI_Group_incl(world, 1, &other, &s->peer);
	MPI_Group_free(&world);
}

static inline void osu_1sc_free(struct osu_1sc *s)
{
	if (s->win == WIN_DYNAMIC)
		MPI_Win_detach(s->w, s->buf);
	MPI_Win_free(&s->w);
	if (s->win != WIN_ALLOCATE)
		free(s->buf);
	MPI_Group_free(&s->peer);
}

/* One measured step of rank 0 (op: its puts or gets of the step) between
 * the synchronisations -s asks for; rank 1 takes part where they are
 * collective (pscw, fence). `first`/`last`: the loop's first and last step,
 * where the epochs that span the loop open and close. */
static inline void osu_1sc_step(struct osu_1sc *s, int rank, int first, int last,
				void (*op)(struct osu_1sc *, void *), void *arg)
{
	switch (s->sync) {
	case SYNC_LOCK:
		if (rank == 0) {
			MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, s->w);
			op(s, arg);
			MPI_Win_unlock(1, s->w);
		}
		break;
	case SYNC_FLUSH:
	case SYNC_FLUSH_LOCAL:
		if (rank == 0) {
			if (first)
				MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, s->w);
			op(s, arg);
			if (s->sync == SYNC_FLUSH)
				MPI_Win_flush(1, s->w);
			else
				MPI_Win_flush_local(1, s->w);
			if (last)
				MPI_Win_unlock(1, s->w);
		}
		break;
	case SYNC_LOCK_ALL:
		if (rank == 0) {
			MPI_Win_lock_all(0, s->w);
			op(s, arg);
			MPI_Win_unlock_all(s->w);
		}
		break;
	case SYNC_PSCW:
		if (rank == 0) {
			MPI_Win_start(s->peer, 0, s->w);
			op(s, arg);
			MPI_Win_complete(s->w);
		} else {
			MPI_Win_post(s->peer, 0, s->w);
			MPI_Win_wait(s->w);
		}
		break;
	default:
		MPI_Win_fence(0, s->w);
		if (rank == 0)
			op(s, arg);
		MPI_Win_fence(0, s->w);
		break;
	}
}

/* rank 1's window holds what it must before the gets (an epoch of its own) */
static inline void osu_1sc_expose(struct osu_1sc *s, long bytes, long size, int rank)
{
	if (rank == 1) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, s->w);
		for (long off = 0; off + size <= bytes && size; off += size)
			osu_fill(s->buf + off, size, 0, 1);
		MPI_Win_unlock(1, s->w);
	}
	MPI_Barrier(MPI_COMM_WORLD);
}

/* rank 1 checks its window (after a barrier that follows rank 0's last
 * epoch): n pieces of size bytes each from rank 0; the verdict to rank 0 */
static inline int osu_1sc_target_check(struct osu_1sc *s, long size, int n, int rank)
{
	int valid = 1, all = 0;
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 1) {
		MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, s->w);
		for (int j = 0; j < n; j++)
			valid &= osu_check(s->buf + (long)j * size, size, 0, 0);
		MPI_Win_unlock(1, s->w);
	}
	MPI_Reduce(&valid, &all, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
	return all;
}

struct osu_1sc_ops {
	int get, n;
	long size;
	char *local; /* put: what goes; get: where it lands */
};

static inline void osu_1sc_ops(struct osu_1sc *s, void *arg)
{
	struct osu_1sc_ops *a = arg;
	for (int j = 0; j < a->n; j++) {
		char *l = a->local + (long)j * a->size;
		MPI_Aint t = MPI_Aint_add(s->disp, (MPI_Aint)j * a->size);
		if (a->get)
			MPI_Get(l, (int)a->size, MPI_CHAR, 1, t, (int)a->size, MPI_CHAR, s->w);
		else
			MPI_Put(l, (int)a->size, MPI_CHAR, 1, t, (int)a->size, MPI_CHAR, s->w);
	}
}

/* The whole benchmark: latency (one operation a step, us per step) or
 * bandwidth (-W operations a step, MB/s) of puts or gets. */
static inline int osu_1sc_main(int argc, char **argv, int get, int bw)
{
	struct osu_opts o = {0, 1 << 22, 1000, 100, bw ? 32 : 1, 0};
	struct osu_1sc s = {.win = WIN_ALLOCATE, .sync = SYNC_FLUSH};
	int rank, size, ok = 1;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (osu_1sc_parse(argc, argv, &o, &s, rank) || !osu_two(size, rank)) {
		MPI_Finalize();
		return 1;
	}
	int n = bw ? o.window : 1;
	long bytes = o.max_size * n > 0 ? o.max_size * n : 1;
	char *local = malloc((size_t)bytes);
	osu_1sc_win(&s, bytes, rank);
	if (rank == 0)
		osu_1sc_header(bw ? (get ? "Get Bandwidth" : "Put Bandwidth")
				  : (get ? "Get Latency" : "Put Latency"),
			       bw ? "Bandwidth (MB/s)" : "Latency (us)", &o, &s);
	for (long len = o.min_size; len <= o.max_size; len = len ? len * 2 : 1) {
		struct osu_1sc_ops a = {get, n, len, local};
		if (get)
			osu_1sc_expose(&s, bytes, len, rank);
		else if (rank == 0)
			for (int j = 0; j < n; j++)
				osu_fill(local + (long)j * len, len, 0, 0);
		MPI_Barrier(MPI_COMM_WORLD);
		double t0 = 0;
		int steps = o.iterations + o.skip;
		for (int i = 0; i < steps; i++) {
			if (i == o.skip)
				t0 = MPI_Wtime();
			osu_1sc_step(&s, rank, i == 0, i == steps - 1, osu_1sc_ops, &a);
		}
		double t = MPI_Wtime() - t0;
		int valid = 1;
		if (get) {
			for (int j = 0; rank == 0 && j < n; j++)
				valid &= osu_check(local + (long)j * len, len, 0, 1);
			MPI_Barrier(MPI_COMM_WORLD);
		} else {
			valid = osu_1sc_target_check(&s, len, n, rank);
		}
		if (rank == 0) {
			double v = bw ? (double)len * n * o.iterations / t / 1e6
				      : t * 1e6 / o.iterations;
			osu_row(len, v, &o, valid);
			ok &= valid;
		}
	}
	osu_1sc_free(&s);
	free(local);
	MPI_Finalize();
	return ok ? 0 : 1;
}

#endif
