/* A spin lock that gives the core away, in place of glibc's for libfabric.
 *
 * libfabric's shm provider guards each endpoint's region, in memory that
 * every process of the host maps, with a pthread spin lock. Where processes
 * outnumber cores (a virtual cluster: 16 daemons and 16 ranks on 2 cores), a
 * holder that loses its core leaves everyone who wants its region spinning
 * for whole scheduler quanta: perf put 45% of a node daemon's time in
 * pthread_spin_lock during a 16-rank BCS-MPI job. Defined in a program that
 * links this library, these functions take the place of glibc's for every
 * shared library the program loads (a library's calls bind to the
 * program's own definitions first). All four are replaced, because glibc's
 * representation is the architecture's own (on x86-64, 1 is free and a
 * taker decrements): ours is 0 free, taken by exchanging in 1, released by
 * storing 0. Every process that maps shm's regions is a storm program and
 * links this file, so every one of them agrees (a lock shared with a
 * program that does not link it would not be exclusive: none of the
 * libraries storm's programs load shares one outside them). Only the wait
 * differs from glibc's: after a short spin it yields, and after a few
 * yields it sleeps. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "sn.h"

/* a few microseconds: longer than a critical section of shm's that runs
 * undisturbed, far shorter than a quantum lost to a preempted holder */
const unsigned sn_spin_yield_after = 64;
/* yields before each wait becomes a short sleep */
static const unsigned sn_spin_sleep_after = 16;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

int pthread_spin_init(pthread_spinlock_t *lock, int pshared)
{
	(void)pshared; /* the same protocol serves both */
	__atomic_store_n(lock, 0, __ATOMIC_RELAXED);
	return 0;
}

int pthread_spin_trylock(pthread_spinlock_t *lock)
{
	return __atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE) ? EBUSY : 0;
}

int pthread_spin_unlock(pthread_spinlock_t *lock)
{
	__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
	return 0;
}

int pthread_spin_lock(pthread_spinlock_t *lock)
{
	for (;;) {
		if (!__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
			return 0;
		unsigned n = 0, yields = 0;
		while (__atomic_load_n(lock, __ATOMIC_RELAXED)) {
			if (++n < sn_spin_yield_after) {
				cpu_relax();
			} else if (++yields < sn_spin_sleep_after) {
				sched_yield();
				n = 0;
			} else {
				/* a real-time waiter's yield gives the core to
				 * real-time threads only: a holder at SCHED_OTHER
				 * on this core runs only once the waiter sleeps */
				struct timespec ts = { 0, 20000 };
				nanosleep(&ts, NULL);
				n = 0;
			}
		}
	}
}
