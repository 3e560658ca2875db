/* Real-time priority with a guard: see rtguard.h. */
#include "rtguard.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t guarded_tid;
static struct rlimit before = { RLIM_INFINITY, RLIM_INFINITY };
static bool limited;
static atomic_int tripped; /* 0, 1: dropped, 2: dropped and told */

static void on_sigxcpu(int sig)
{
	(void)sig;
	int saved = errno;
	/* the thread that may spin, not whichever thread took the signal */
	struct sched_param sp = { .sched_priority = 0 };
	sched_setscheduler(guarded_tid, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp);
	setpriority(PRIO_PROCESS, (id_t)guarded_tid, -10);
	int zero = 0;
	atomic_compare_exchange_strong(&tripped, &zero, 1);
	errno = saved;
}

int rt_guard_install(void)
{
	guarded_tid = (pid_t)syscall(SYS_gettid);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigxcpu;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGXCPU, &sa, NULL);
}

int rt_guard_limit(pid_t pid, unsigned ms)
{
	struct rlimit old;
	if (prlimit(pid, RLIMIT_RTTIME, NULL, &old) < 0)
		return -1;
	struct rlimit rl = { .rlim_cur = (rlim_t)ms * 1000, .rlim_max = old.rlim_max };
	if (rl.rlim_cur > rl.rlim_max)
		rl.rlim_cur = rl.rlim_max;
	if (prlimit(pid, RLIMIT_RTTIME, &rl, NULL) < 0)
		return -1;
	if (pid == 0 || pid == getpid()) {
		before = old;
		limited = true;
	}
	return 0;
}

void rt_guard_child(void)
{
	if (limited)
		setrlimit(RLIMIT_RTTIME, &before);
}

bool rt_guard_tripped(void)
{
	int one = 1;
	return atomic_compare_exchange_strong(&tripped, &one, 2);
}
