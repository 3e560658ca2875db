/* A multi-threaded program for checkpoint/restart tests
 * (test_ckpt_threads.sh). Each step 4 OpenMP threads update a quarter of a
 * heap and sum it in a parallel for loop with a reduction, meet at a
 * barrier, and the master thread folds the sum in; every 5th step the main
 * thread wakes a pthread that otherwise sleeps in a condition wait, and
 * waits for its answer. Built by bcs-mpicc with -DWITH_MPI, the ranks start
 * with MPI_Init_thread(MPI_THREAD_FUNNELED), and inside the parallel region
 * the master thread (the one that called it: MPI_Is_thread_main says so,
 * and says no to the others) passes the step's value round the ring and
 * Allreduces it while the other threads wait at the barrier. Its results
 * depend on nothing but its arguments: at the end it writes every step's
 * values to RESULT ("%r" in it: the rank; under MPI rank 0 writes the
 * world's), which a run checkpointed and restarted must write byte for
 * byte like an uninterrupted one. stdout: "step N" every 10th step, "done".
 * With "hold K,...", each rank waits after step K until the file gate.K
 * exists in its working directory (tests/ckpt/gate.h).
 * usage: ckpt_omp STEPS HEAP_MIB STEP_MS RESULT [hold K,...] */
#define _GNU_SOURCE
#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WITH_MPI
#include <mpi.h>
#endif

#include "../../ckpt/gate.h"

#define THREADS 4

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* the sleeper: woken with a new generation, it folds it in and answers */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long gen, ack;
static uint64_t folded;

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (gen == ack)
			pthread_cond_wait(&cv, &mu);
		if (gen < 0)
			break;
		folded = mix(folded * 31 + (uint64_t)gen);
		ack = gen;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static uint64_t ask_sleeper(long g)
{
	pthread_mutex_lock(&mu);
	gen = g;
	pthread_cond_broadcast(&cv);
	while (ack != g)
		pthread_cond_wait(&cv, &mu);
	uint64_t v = folded;
	pthread_mutex_unlock(&mu);
	return v;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* sleeps out the rest of the step (a restored nanosleep returns EINTR) */
static void pace(double until)
{
	for (double left; (left = until - now()) > 0;) {
		struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	const char *hold = gate_arg(&argc, argv, 5);
	if (argc != 5) {
		fprintf(stderr, "usage: ckpt_omp STEPS HEAP_MIB STEP_MS RESULT [hold K,...]\n");
		return 2;
	}
	int steps = atoi(argv[1]);
	size_t n = (size_t)atoi(argv[2]) << 17; /* uint64 words */
	double step_s = atof(argv[3]) / 1000;
	int rank = 0, size = 1;
#ifdef WITH_MPI
	int provided = -1;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (provided < MPI_THREAD_FUNNELED) {
		fprintf(stderr, "ckpt_omp: MPI_THREAD_FUNNELED not provided (%d)\n", provided);
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
#else
	const char *r = getenv("STORM_RANK");
	rank = r ? atoi(r) : 0;
#endif
	uint64_t *heap = malloc(n * 8), *vals = calloc((size_t)steps, 8);
	pthread_t th;
	if (!heap || !vals || pthread_create(&th, NULL, sleeper, NULL)) {
		fprintf(stderr, "ckpt_omp: out of memory\n");
		return 1;
	}
	/* first touched by the threads that update it */
#pragma omp parallel for num_threads(THREADS) schedule(static)
	for (size_t i = 0; i < n; i++)
		heap[i] = mix(i * 131 + (uint64_t)rank);
	int bad_threads = 0, bad_main = 0;
	uint64_t carry = 0;
	for (int s = 0; s < steps; s++) {
		double until = now() + step_s;
		uint64_t sum = 0, world = 0;
		size_t q = n / 4, from = (size_t)(s % 4) * q;
#pragma omp parallel num_threads(THREADS)
		{
			if (omp_get_num_threads() != THREADS) {
#pragma omp atomic write
				bad_threads = 1;
			}
#pragma omp for schedule(static) reduction(+ : sum)
			for (size_t i = from; i < from + q; i++) {
				heap[i] = mix(heap[i] + (uint64_t)s + carry);
				sum += heap[i] >> 7;
			}
			/* the for loop's own barrier has passed: sum is complete */
#pragma omp master
			{
#ifdef WITH_MPI
				int is_main = 0;
				MPI_Is_thread_main(&is_main);
				bad_main |= !is_main;
				uint64_t in = 0;
				MPI_Sendrecv(&sum, 1, MPI_UINT64_T, (rank + 1) % size, 1, &in, 1,
					     MPI_UINT64_T, (rank + size - 1) % size, 1, MPI_COMM_WORLD,
					     MPI_STATUS_IGNORE);
				uint64_t mine = mix(sum ^ in);
				MPI_Allreduce(&mine, &world, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
#else
				world = mix(sum);
#endif
				carry = world;
			}
#ifdef WITH_MPI
			if (omp_get_thread_num() == THREADS - 1) {
				int is_main = 1;
				MPI_Is_thread_main(&is_main);
				if (is_main) {
#pragma omp atomic write
					bad_main = 1;
				}
			}
#endif
#pragma omp barrier
		}
		if (s % 5 == 0)
			carry ^= ask_sleeper(s + 1);
		vals[s] = carry;
		if (rank == 0 && s % 10 == 0) {
			printf("step %d\n", s);
			fflush(stdout);
		}
		gate_hold(hold, s);
		pace(until);
	}
	pthread_mutex_lock(&mu);
	gen = -1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	uint64_t mine = 0;
	for (size_t i = 0; i < n; i++)
		mine = mix(mine ^ heap[i]);
	uint64_t *all = malloc((size_t)size * 8);
	int *bad = malloc((size_t)size * sizeof(int));
	all[0] = mine;
	bad[0] = bad_threads | bad_main << 1;
#ifdef WITH_MPI
	MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	int b = bad[0];
	MPI_Gather(&b, 1, MPI_INT, bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
	if (rank == 0) {
#endif
		char path[4096];
		const char *pr = strstr(argv[4], "%r");
		if (pr)
			snprintf(path, sizeof(path), "%.*s%d%s", (int)(pr - argv[4]), argv[4], rank,
				 pr + 2);
		else
			snprintf(path, sizeof(path), "%s", argv[4]);
		FILE *f = fopen(path, "w");
		if (!f) {
			perror(path);
			return 1;
		}
		for (int s = 0; s < steps; s++)
			fprintf(f, "step %d value %016llx\n", s, (unsigned long long)vals[s]);
		for (int k = 0; k < size; k++)
			fprintf(f, "rank %d heap %016llx%s%s\n", size == 1 ? rank : k,
				(unsigned long long)all[k], bad[k] & 1 ? " (not 4 threads)" : "",
				bad[k] & 2 ? " (MPI_Is_thread_main wrong)" : "");
		fclose(f);
		printf("done\n");
#ifdef WITH_MPI
	}
	MPI_Finalize();
#endif
	return 0;
}
