/* A multi-threaded rank for bench/checkpoint: THREADS threads (the main
 * one included) share a heap of HEAP_MIB, each its own slice, which it
 * fills and then, every step, writes one word in each page of, and sleeps
 * out the rest of its STEP_MS (clock_nanosleep to an absolute deadline, so
 * a stop costs the program nothing but the time it was stopped). Once
 * every thread has done its first step the main thread prints "step 1 ";
 * then "step N " every 100th of its steps. Runs until killed.
 *   ckpt_bench_threads THREADS HEAP_MIB [STEP_MS] */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PAGE_WORDS 512

struct slice {
	uint64_t *w;
	size_t n;
	long step_ns;
};

static atomic_int started;

static void next_deadline(struct timespec *t, long ns)
{
	t->tv_nsec += ns;
	while (t->tv_nsec >= 1000000000) {
		t->tv_nsec -= 1000000000;
		t->tv_sec++;
	}
}

static void step(struct slice *s, uint64_t k)
{
	for (size_t i = k % PAGE_WORDS; i < s->n; i += PAGE_WORDS)
		s->w[i] = s->w[i] * 6364136223846793005ull + 1442695040888963407ull + k;
}

/* fills the slice, then steps; the main thread (report: the thread count)
 * says when every thread has stepped once, then every 100th step */
static void work(struct slice *s, int report)
{
	for (size_t i = 0; i < s->n; i++)
		s->w[i] = i * 0x9e3779b97f4a7c15ull;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	int said = 0;
	for (uint64_t k = 0;; k++) {
		step(s, k);
		if (k == 0)
			atomic_fetch_add(&started, 1);
		if (report && !said && atomic_load(&started) == report) {
			said = 1;
			printf("step 1 threads %d\n", report);
			fflush(stdout);
		} else if (report && said && k % 100 == 0) {
			printf("step %llu\n", (unsigned long long)k);
			fflush(stdout);
		}
		next_deadline(&t, s->step_ns);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) != 0)
			; /* EINTR: a checkpoint interrupted it; the deadline stands */
	}
}

static void *run(void *arg)
{
	work(arg, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ckpt_bench_threads THREADS HEAP_MIB [STEP_MS]\n");
		return 2;
	}
	int nt = atoi(argv[1]);
	size_t words = (size_t)atol(argv[2]) << 17;
	long step_ns = (argc > 3 ? atol(argv[3]) : 10) * 1000000;
	uint64_t *heap = malloc(words * sizeof(*heap));
	struct slice *sl = calloc((size_t)(nt > 0 ? nt : 1), sizeof(*sl));
	if (nt < 1 || !heap || !sl) {
		fprintf(stderr, "ckpt_bench_threads: bad arguments or out of memory\n");
		return 1;
	}
	/* whole pages each */
	size_t per = words / (size_t)nt / PAGE_WORDS * PAGE_WORDS;
	for (int t = 0; t < nt; t++) {
		sl[t].w = heap + (size_t)t * per;
		sl[t].n = t == nt - 1 ? words - (size_t)t * per : per;
		sl[t].step_ns = step_ns;
	}
	for (int t = 1; t < nt; t++) {
		pthread_t th;
		if (pthread_create(&th, NULL, run, &sl[t])) {
			perror("ckpt_bench_threads: pthread_create");
			return 1;
		}
	}
	work(&sl[0], nt); /* the main thread works its slice too */
}
