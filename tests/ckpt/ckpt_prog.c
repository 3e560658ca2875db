/* A test program for the checkpointer: computation over a large malloc'd
 * heap, a file it keeps writing, a signal handler, small allocations that
 * move brk, and pacing by clock_gettime (the vDSO). Its output depends only
 * on its arguments, so a run that was checkpointed, killed and restored must
 * print exactly what an uninterrupted run prints.
 *   ckpt_prog STEPS HEAP_MIB FILE [STEP_MS [spin|sleep]] [hold K,...]
 * A step waits for its STEP_MS by spinning on clock_gettime (default) or by
 * clock_nanosleep (bench/checkpoint: little CPU, so the runtime is the steps'
 * time plus whatever stopped the program).
 * stdout: one line per step ("step N sum S"), then "done ...". FILE ("%r"
 * in it: the STORM_RANK): one line per step too. With "hold K,...", it waits
 * after step K until the file gate.K exists (gate.h). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gate.h"

static volatile sig_atomic_t hits;

static void on_usr1(int sig)
{
	(void)sig;
	hits++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *hold = NULL;
	for (int i = 4; i < argc && !hold; i++)
		hold = gate_arg(&argc, argv, i);
	if (argc < 4) {
		fprintf(stderr, "usage: ckpt_prog STEPS HEAP_MIB FILE [STEP_MS [spin|sleep]] [hold K,...]\n");
		return 2;
	}
	long steps = atol(argv[1]);
	size_t n = (size_t)atol(argv[2]) << 20 >> 3;
	double step_s = (argc > 4 ? atof(argv[4]) : 5) / 1000;
	int sleeping = argc > 5 && !strcmp(argv[5], "sleep");
	/* "%r" in FILE: the storm rank, so ranks of one job write their own file */
	char path[4096];
	const char *r = strstr(argv[3], "%r"), *rank = getenv("STORM_RANK");
	if (r)
		snprintf(path, sizeof(path), "%.*s%s%s", (int)(r - argv[3]), argv[3],
			 rank ? rank : "0", r + 2);
	else
		snprintf(path, sizeof(path), "%s", argv[3]);
	FILE *f = fopen(path, "w");
	uint64_t *heap = malloc(n * sizeof(*heap));
	if (!f || !heap) {
		perror("ckpt_prog");
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_usr1 };
	sigaction(SIGUSR1, &sa, NULL);
	for (size_t i = 0; i < n; i++)
		heap[i] = i * 0x9e3779b97f4a7c15ull;
	char *grow = NULL;
	size_t growlen = 0;
	uint64_t sum = 0;
	for (long s = 0; s < steps; s++) {
		double until = now() + step_s;
		/* touch a stripe of the heap: every page changes over the run */
		for (size_t i = s % 512; i < n; i += 512) {
			heap[i] = heap[i] * 6364136223846793005ull + 1442695040888963407ull + s;
			sum += heap[i] >> 17;
		}
		char *tmp = malloc(1000 + s % 3000); /* churn below and above brk */
		memset(tmp, (int)s, 1000);
		sum += (unsigned char)tmp[999];
		free(tmp);
		growlen += 4096;
		grow = realloc(grow, growlen);
		memset(grow + growlen - 4096, (int)(s & 0xff), 4096);
		if (s % 7 == 0)
			raise(SIGUSR1);
		if (sleeping) {
			struct timespec ts = { (time_t)until, (long)((until - (time_t)until) * 1e9) };
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
				; /* EINTR: a checkpoint interrupted it; the deadline stands */
		}
		while (now() < until)
			;
		printf("step %ld sum %016llx hits %d\n", s, (unsigned long long)sum, (int)hits);
		fflush(stdout);
		fprintf(f, "file step %ld %llx\n", s, (unsigned long long)(sum ^ growlen));
		fflush(f);
		gate_hold(hold, s);
	}
	uint64_t g = 0;
	for (size_t i = 0; i < growlen; i++)
		g = g * 31 + (unsigned char)grow[i];
	printf("done sum %016llx grow %016llx hits %d\n", (unsigned long long)sum,
	       (unsigned long long)g, (int)hits);
	fclose(f);
	return 0;
}
