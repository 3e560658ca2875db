/* The spin lock that replaces glibc's (net_abstraction/spinlock.c): mutual
 * exclusion between threads and between processes sharing the lock's
 * memory (as shm's regions are shared), trylock and unlock pairing with
 * lock, and more takers than cores still getting through. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "suites.h"

#define ROUNDS 100000

struct shared {
	pthread_spinlock_t lock;
	volatile long count;
};

static void *bump(void *arg)
{
	struct shared *s = arg;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_spin_lock(&s->lock);
		long c = s->count; /* a torn update shows as a lost increment */
		s->count = c + 1;
		pthread_spin_unlock(&s->lock);
	}
	return NULL;
}

static void test_threads(void)
{
	struct shared s = {0};
	CU_ASSERT_EQUAL_FATAL(pthread_spin_init(&s.lock, PTHREAD_PROCESS_PRIVATE), 0);
	/* more threads than this host's cores: a holder loses its core */
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&t[i], NULL, bump, &s), 0);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	CU_ASSERT_EQUAL(s.count, 8L * ROUNDS);
	CU_ASSERT_EQUAL(pthread_spin_trylock(&s.lock), 0);
	CU_ASSERT_EQUAL(pthread_spin_trylock(&s.lock), EBUSY);
	CU_ASSERT_EQUAL(pthread_spin_unlock(&s.lock), 0);
	CU_ASSERT_EQUAL(pthread_spin_lock(&s.lock), 0);
	CU_ASSERT_EQUAL(pthread_spin_trylock(&s.lock), EBUSY);
	pthread_spin_unlock(&s.lock);
}

static void test_processes(void)
{
	struct shared *s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE,
				MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(s != MAP_FAILED);
	pthread_spin_init(&s->lock, PTHREAD_PROCESS_SHARED);
	s->count = 0;
	pid_t kids[4];
	for (int i = 0; i < 4; i++)
		if ((kids[i] = fork()) == 0) {
			bump(s);
			_exit(0);
		}
	bump(s);
	for (int i = 0; i < 4; i++) {
		int st;
		CU_ASSERT_EQUAL(waitpid(kids[i], &st, 0), kids[i]);
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	CU_ASSERT_EQUAL(s->count, 5L * ROUNDS);
	munmap(s, sizeof(*s));
}

void add_spinlock_suite(void)
{
	CU_pSuite s = CU_add_suite("spinlock", NULL, NULL);
	CU_add_test(s, "threads: exclusion, trylock, unlock", test_threads);
	CU_add_test(s, "processes sharing the lock", test_processes);
}
