/* An OpenMP test program for the checkpointer: each step a team of 4
 * threads (libgomp's pool, kept between parallel regions) sums a function
 * over an array in a parallel for loop with a reduction, meets at a
 * barrier, and one thread sleeps the step out while the others wait at the
 * region's end. Integer arithmetic: the reduction's result does not depend
 * on the order the threads combine in, so the output depends only on the
 * arguments and a restored run must print what an uninterrupted one does.
 *   ckpt_omp STEPS [STEP_MS] [hold K,...]
 * With hold, it waits after step K until the file gate.K exists (gate.h).
 * stdout: "step N sum S" per step, then "done". */
#include <errno.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "gate.h"

#define N (1 << 16)

static uint64_t a[N];

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *hold = NULL;
	for (int i = 2; i < argc && !hold; i++)
		hold = gate_arg(&argc, argv, i);
	if (argc < 2) {
		fprintf(stderr, "usage: ckpt_omp STEPS [STEP_MS] [hold K,...]\n");
		return 2;
	}
	long steps = atol(argv[1]);
	double step_s = (argc > 2 ? atof(argv[2]) : 10) / 1000;
	omp_set_dynamic(0);
	for (long i = 0; i < N; i++)
		a[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	uint64_t total = 0;
	for (long s = 0; s < steps; s++) {
		double until = now() + step_s;
		uint64_t sum = 0;
		int team = 0;
#pragma omp parallel num_threads(4)
		{
#pragma omp for reduction(+ : sum) schedule(static)
			for (long i = 0; i < N; i++) {
				a[i] = a[i] * 6364136223846793005ull + 1442695040888963407ull + (uint64_t)s;
				sum += a[i] >> 20;
			}
#pragma omp barrier
#pragma omp single
			{
				team = omp_get_num_threads();
				struct timespec ts = { (time_t)until,
						       (long)((until - (time_t)until) * 1e9) };
				/* EINTR: a checkpoint interrupted it; the deadline stands */
				while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
					;
			}
		}
		total ^= sum;
		printf("step %ld sum %016llx team %d\n", s, (unsigned long long)sum, team);
		fflush(stdout);
		gate_hold(hold, s);
	}
	printf("done total %016llx\n", (unsigned long long)total);
	return 0;
}
