/* A multi-threaded test program for the checkpointer: 4 threads (main and 3
 * workers) add to a mutex-protected counter and meet at a pthread barrier
 * every step; a fifth sleeps in pthread_cond_wait the whole run. A signal is
 * kept pending for one worker (pthread_kill, blocked) and one for the whole
 * process (kill, blocked by all) until the end; the main thread signals a
 * worker with pthread_kill every few steps (glibc finds it by the tid it
 * cached) and the threads are joined at the end (glibc waits for the kernel
 * to clear that tid). Its output depends only on its arguments, so a run
 * checkpointed, killed and restored prints what an uninterrupted one does.
 *   ckpt_threads STEPS [STEP_MS] [hold K,...]
 * With hold, the main thread waits after step K (the others at the
 * barrier) until the file gate.K exists (gate.h).
 * stdout: "step N counter C" per step, then the threads' names and signal
 * counts and "done". */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gate.h"

#define WORKERS 4 /* main included */

static long steps;
static double step_s;
static uint64_t counter;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sleep_cond = PTHREAD_COND_INITIALIZER;
static int wake;
static volatile sig_atomic_t usr1, usr2, urg;

static void on_sig(int sig)
{
	if (sig == SIGUSR1)
		usr1++;
	else if (sig == SIGUSR2)
		usr2++;
	else
		urg++;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* barrier waits interrupted by a checkpoint restart; the deadline stands */
static void sleep_until(double t)
{
	struct timespec ts = { (time_t)t, (long)((t - (time_t)t) * 1e9) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static uint64_t work(long s, int w)
{
	uint64_t x = (uint64_t)s * 0x9e3779b97f4a7c15ull + (uint64_t)w * 0xbf58476d1ce4e5b9ull;
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x >> 40;
}

static void *worker(void *arg)
{
	int w = (int)(intptr_t)arg;
	for (long s = 0; s < steps; s++) {
		uint64_t v = work(s, w);
		pthread_mutex_lock(&lock);
		counter += v;
		pthread_mutex_unlock(&lock);
		pthread_barrier_wait(&bar); /* all added */
		pthread_barrier_wait(&bar); /* main printed */
	}
	pthread_barrier_wait(&bar); /* main read the names */
	if (w == 1) { /* its own pending signal, held since step 0 */
		sigset_t u2;
		sigemptyset(&u2);
		sigaddset(&u2, SIGUSR2);
		pthread_sigmask(SIG_UNBLOCK, &u2, NULL);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&sleep_lock);
	while (!wake)
		pthread_cond_wait(&sleep_cond, &sleep_lock);
	pthread_mutex_unlock(&sleep_lock);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *hold = NULL;
	for (int i = 2; i < argc && !hold; i++)
		hold = gate_arg(&argc, argv, i);
	if (argc < 2) {
		fprintf(stderr, "usage: ckpt_threads STEPS [STEP_MS] [hold K,...]\n");
		return 2;
	}
	steps = atol(argv[1]);
	step_s = (argc > 2 ? atof(argv[2]) : 10) / 1000;
	struct sigaction sa = { .sa_handler = on_sig };
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGURG, &sa, NULL);
	/* held pending until the end: SIGUSR1 by every thread, SIGUSR2 by worker 1 */
	sigset_t held;
	sigemptyset(&held);
	sigaddset(&held, SIGUSR1);
	sigaddset(&held, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &held, NULL);
	pthread_barrier_init(&bar, NULL, WORKERS);
	pthread_t th[WORKERS + 1];
	char name[16];
	for (int w = 1; w < WORKERS; w++) {
		pthread_create(&th[w], NULL, worker, (void *)(intptr_t)w);
		snprintf(name, sizeof(name), "worker%d", w);
		pthread_setname_np(th[w], name);
	}
	pthread_create(&th[WORKERS], NULL, sleeper, NULL);
	pthread_setname_np(th[WORKERS], "sleeper");
	pthread_setname_np(pthread_self(), "main");
	pthread_kill(th[1], SIGUSR2);
	kill(getpid(), SIGUSR1);
	for (long s = 0; s < steps; s++) {
		double until = now() + step_s;
		uint64_t v = work(s, 0);
		pthread_mutex_lock(&lock);
		counter += v;
		pthread_mutex_unlock(&lock);
		sleep_until(until); /* the workers wait at the barrier meanwhile */
		pthread_barrier_wait(&bar);
		if (s % 10 == 5 && pthread_kill(th[2], SIGURG) != 0)
			printf("pthread_kill failed\n");
		printf("step %ld counter %016llx\n", s, (unsigned long long)counter);
		fflush(stdout);
		gate_hold(hold, s);
		pthread_barrier_wait(&bar);
	}
	/* another thread's name is read through the tid glibc cached for it */
	th[0] = pthread_self();
	for (int w = 0; w <= WORKERS; w++) {
		pthread_getname_np(th[w], name, sizeof(name));
		printf("thread %d name %s\n", w, name);
	}
	pthread_barrier_wait(&bar);
	pthread_mutex_lock(&sleep_lock);
	wake = 1;
	pthread_cond_signal(&sleep_cond);
	pthread_mutex_unlock(&sleep_lock);
	for (int w = 1; w <= WORKERS; w++)
		pthread_join(th[w], NULL);
	pthread_sigmask(SIG_UNBLOCK, &held, NULL);
	printf("done counter %016llx usr1 %d usr2 %d urg %d\n", (unsigned long long)counter,
	       (int)usr1, (int)usr2, (int)urg);
	return 0;
}
