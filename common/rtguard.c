/* Real-time priority with a guard: see rtguard.h. */
#include "rtguard.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pid_t guarded_tid;
/* threads rt_threads_favoured made real-time: dropped with the guarded one */
#define FAVOURED_MAX 8
static pid_t favoured[FAVOURED_MAX];
static atomic_int nfavoured;
static struct rlimit before = { RLIM_INFINITY, RLIM_INFINITY };
static bool limited;
static atomic_int tripped; /* 0, 1: dropped, 2: dropped and told */

/* thread tid (0: the caller) at SCHED_OTHER, nice -10; system calls
 * only, so the signal handler may call it too. -1 if refused. */
static int to_nice(pid_t tid)
{
	struct sched_param sp = { .sched_priority = 0 };
	if (sched_setscheduler(tid, SCHED_OTHER | SCHED_RESET_ON_FORK, &sp) < 0)
		return -1;
	setpriority(PRIO_PROCESS, (id_t)tid, -10);
	return 0;
}

static void on_sigxcpu(int sig)
{
	(void)sig;
	int saved = errno;
	/* the thread that may spin, not whichever thread took the signal;
	 * which of them ran the limit is not said, so every real-time one */
	to_nice(guarded_tid);
	int n = atomic_load(&nfavoured);
	for (int i = 0; i < n && i < FAVOURED_MAX; i++)
		to_nice(favoured[i]);
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
	/* a soft limit at the hard one would be SIGKILL, not SIGXCPU */
	if (rl.rlim_cur >= rl.rlim_max) {
		errno = EPERM;
		return -1;
	}
	if (prlimit(pid, RLIMIT_RTTIME, &rl, NULL) < 0)
		return -1;
	if (pid == 0 || pid == getpid()) {
		before = old;
		limited = true;
	}
	return 0;
}

void rt_guard_rearm(unsigned ms)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_RTTIME, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur > (rlim_t)ms * 1000) {
		rl.rlim_cur = (rlim_t)ms * 1000;
		setrlimit(RLIMIT_RTTIME, &rl);
	}
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

/* ---- the share of a core */

#define SHARE_WINDOW_NS 200000000ll

static double budget;     /* of one core; 0: none */
static bool throttled;    /* at nice -10 for its share, FIFO again below half */
static long long win_wall, win_cpu;

static long long now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void rt_guard_share_from_env(void)
{
	const char *s = getenv("STORM_RT_SHARE");
	double v = s ? strtod(s, NULL) : 0;
	budget = v > 0 && v <= 100 ? v / 100 : 0;
	win_wall = now_ns(CLOCK_MONOTONIC);
	win_cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
}

double rt_guard_share(void)
{
	return budget;
}

int rt_guard_turn(void)
{
	if (budget <= 0 || atomic_load(&tripped))
		return 0;
	long long wall = now_ns(CLOCK_MONOTONIC);
	if (wall - win_wall < SHARE_WINDOW_NS)
		return 0;
	long long cpu = now_ns(CLOCK_THREAD_CPUTIME_ID);
	double used = (double)(cpu - win_cpu) / (double)(wall - win_wall);
	win_wall = wall;
	win_cpu = cpu;
	/* only a thread real-time now is throttled, so only one the guard
	 * made real-time goes back to SCHED_FIFO */
	if (!throttled && used > budget &&
	    (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_FIFO) {
		if (to_nice(0) < 0)
			return 0;
		throttled = true;
		return 1;
	}
	if (throttled && used < budget / 2) {
		struct sched_param sp = { .sched_priority = 1 };
		if (sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) < 0)
			return 0;
		throttled = false;
		/* a SIGXCPU that came meanwhile drops it for good still */
		if (atomic_load(&tripped)) {
			to_nice(0);
			return 0;
		}
		return 2;
	}
	return 0;
}

/* this process's thread ids, at most max; their count */
static int threads_now(pid_t *out, int max)
{
	DIR *d = opendir("/proc/self/task");
	int n = 0;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d)) && n < max;)
		if (e->d_name[0] != '.')
			out[n++] = (pid_t)atoi(e->d_name);
	closedir(d);
	return n;
}

int rt_threads_favoured(int (*fn)(void *), void *arg)
{
	pid_t before[64], after[64];
	int nb = threads_now(before, 64);
	int rc = fn(arg);
	int na = threads_now(after, 64);
	for (int i = 0; i < na; i++) {
		bool old = false;
		for (int k = 0; k < nb && !old; k++)
			old = after[i] == before[k];
		if (old)
			continue;
		/* the daemon's loop waits on such a thread: at the loop's own
		 * policy while the guard holds, or it waits behind the
		 * machine's other sessions (autogroups) for seconds */
		struct sched_param sp = { .sched_priority = 1 };
		int k = atomic_load(&nfavoured);
		if (limited && !atomic_load(&tripped) && k < FAVOURED_MAX &&
		    sched_setscheduler(after[i], SCHED_FIFO | SCHED_RESET_ON_FORK, &sp) == 0) {
			favoured[k] = after[i];
			atomic_store(&nfavoured, k + 1);
		} else {
			to_nice(after[i]);
		}
	}
	return rc;
}
