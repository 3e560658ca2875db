/* The event loop's stall watcher (stall.h). */
#include "stall.h"

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

enum { PHASE_WAIT = 1, PHASE_TURN = 2 };

static bool watching;
static pid_t loop_tid;
static pthread_t loop_thread;
static unsigned threshold_ms;
/* written by the loop; seq changes with every mark, so the watcher knows a
 * phase it saw has ended even when the next one is of the same kind */
static atomic_uint_fast64_t mark_seq, mark_since_ns;
static atomic_int mark_phase;
static atomic_int_fast64_t mark_timeout_us;
/* when the last phase of threshold_ms or more ended: the watcher looks a
 * quarter of the threshold later, after newer marks */
static atomic_uint_fast64_t long_end_ns;
/* backtraces taken on the loop's thread */
static atomic_uint_fast64_t backtraces;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void mark(int phase, int64_t timeout_us)
{
	if (!watching)
		return;
	uint64_t now = mono_ns();
	if (now - atomic_load_explicit(&mark_since_ns, memory_order_relaxed) >=
	    (uint64_t)threshold_ms * 1000000u)
		atomic_store_explicit(&long_end_ns, now, memory_order_relaxed);
	atomic_store_explicit(&mark_phase, phase, memory_order_relaxed);
	atomic_store_explicit(&mark_timeout_us, timeout_us, memory_order_relaxed);
	atomic_store_explicit(&mark_since_ns, now, memory_order_relaxed);
	atomic_fetch_add_explicit(&mark_seq, 1, memory_order_release);
}

void stall_mark_wait(int64_t timeout_us)
{
	mark(PHASE_WAIT, timeout_us);
}

void stall_mark_turn(void)
{
	mark(PHASE_TURN, -1);
}

/* the first line of /proc/self/task/TID/NAME, without its newline */
static void task_file(pid_t tid, const char *name, char *buf, size_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	snprintf(buf, len, "?");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

struct task_view {
	char state;
	int policy, nice;
	char syscall[64], wchan[64];
	uint64_t cpu_ns, queued_ns; /* on a core, and runnable waiting for one */
};

/* stat's field k (1-based; k >= 3, after the command's ')'), or -1 */
static long stat_field(const char *stat, int k)
{
	const char *p = strrchr(stat, ')');
	if (!p)
		return -1;
	p += 2;
	for (int f = 3; f < k && p; f++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	return p ? strtol(p, NULL, 10) : -1;
}

/* Who held the cores: the real-time tasks that are runnable, at most a
 * few, as "comm:pid" (a daemon waiting for a core at SCHED_FIFO waits
 * only for those). Read from the watcher, only once a stall is seen. */
static void rt_runnable(char *out, size_t len)
{
	size_t w = 0;
	int n = 0;
	out[0] = '\0';
	DIR *d = opendir("/proc");
	if (!d)
		return;
	for (struct dirent *e; (e = readdir(d)) && n < 6;) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[64], buf[512];
		snprintf(path, sizeof(path), "/proc/%.16s/stat", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (k <= 0)
			continue;
		buf[k] = '\0';
		const char *p = strrchr(buf, ')'), *c = strchr(buf, '(');
		if (!p || !c || p[1] != ' ' || p[2] != 'R' || stat_field(buf, 41) <= 0)
			continue;
		w += (size_t)snprintf(out + w, len > w ? len - w : 0, "%s%.*s:%.16s", n ? " " : "",
				      (int)(p - c - 1 < 15 ? p - c - 1 : 15), c + 1, e->d_name);
		n++;
	}
	closedir(d);
	if (!n)
		snprintf(out, len, "none");
}

static void task_look_at(pid_t tid, struct task_view *v)
{
	char buf[512];
	task_file(tid, "stat", buf, sizeof(buf));
	const char *p = strrchr(buf, ')');
	v->state = p && p[1] == ' ' ? p[2] : '?';
	v->policy = (int)stat_field(buf, 41);
	v->nice = (int)stat_field(buf, 19);
	task_file(tid, "syscall", buf, sizeof(buf));
	/* the number alone (x86-64: 0 read, 1 write, 7 poll, 61 wait4,
	 * 232 epoll_wait, 441 epoll_pwait2), or "running" */
	snprintf(v->syscall, sizeof(v->syscall), "%.*s", (int)strcspn(buf, " "), buf);
	task_file(tid, "wchan", v->wchan, sizeof(v->wchan));
	task_file(tid, "schedstat", buf, sizeof(buf));
	char *end;
	v->cpu_ns = strtoull(buf, &end, 10);
	v->queued_ns = strtoull(end, NULL, 10);
}

static void task_look(struct task_view *v)
{
	task_look_at(loop_tid, v);
}

/* The daemon's other threads as the loop stands still (a library's thread
 * the loop waits for, say): one line each, for the log. */
static void others_say(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	pid_t self = (pid_t)syscall(SYS_gettid);
	int n = 0;
	for (struct dirent *e; (e = readdir(d)) && n < 8;) {
		pid_t tid = (pid_t)atoi(e->d_name);
		if (tid <= 0 || tid == loop_tid || tid == self)
			continue;
		struct task_view v;
		char comm[32];
		task_look_at(tid, &v);
		task_file(tid, "comm", comm, sizeof(comm));
		slog_unlocked("stall:   thread %d (%s): state %c, policy %d nice %d, system call %s, "
			      "kernel wait %s, %llu ms on a core and %llu ms waiting for one in all",
			      (int)tid, comm, v.state, v.policy, v.nice, v.syscall, v.wchan,
			      (unsigned long long)(v.cpu_ns / 1000000u),
			      (unsigned long long)(v.queued_ns / 1000000u));
		n++;
	}
	closedir(d);
}

/* on the loop's thread, asked by the watcher: where the loop is */
static void on_backtrace(int sig)
{
	(void)sig;
	int saved = errno;
	void *frames[32];
	int n = backtrace(frames, 32);
	int fd = log_output();
	if (fd >= 0)
		backtrace_symbols_fd(frames, n, fd);
	atomic_fetch_add_explicit(&backtraces, 1, memory_order_release);
	errno = saved;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* the watcher's view of the phase it last saw */
struct watch {
	uint64_t seq;
	uint64_t stall_since; /* when the phase being reported began; 0: none */
	bool quiet;           /* the whole process stood still in it: said once */
	struct task_view at;  /* the thread when the stall was first seen */
};

/* the phase w saw is over */
static void phase_over(struct watch *w)
{
	uint64_t ended = atomic_load_explicit(&long_end_ns, memory_order_relaxed);
	if (w->stall_since && !w->quiet && ended > w->stall_since) {
		struct task_view end;
		task_look(&end);
		slog_unlocked("stall: over after %llu ms; since it was seen, %llu ms on a core "
			      "and %llu ms waiting for one",
			      (unsigned long long)((ended - w->stall_since) / 1000000u),
			      (unsigned long long)((end.cpu_ns - w->at.cpu_ns) / 1000000u),
			      (unsigned long long)((end.queued_ns - w->at.queued_ns) / 1000000u));
	}
	w->stall_since = 0;
	w->quiet = false;
}

static void phase_look(struct watch *w, uint64_t now, int phase, uint64_t since,
		       int64_t timeout_us)
{
	uint64_t in_ms = (now - since) / 1000000u;
	if (phase == PHASE_TURN && in_ms >= threshold_ms) {
		w->stall_since = since;
		task_look(&w->at);
		slog_unlocked("stall: the event loop has been in one turn for %llu ms: thread "
			      "state %c, system call %s, kernel wait %s; where:",
			      (unsigned long long)in_ms, w->at.state, w->at.syscall, w->at.wchan);
		pthread_kill(loop_thread, SIGURG);
		others_say();
	} else if (phase == PHASE_WAIT && timeout_us >= 0 &&
		   in_ms >= (uint64_t)timeout_us / 1000u + threshold_ms) {
		w->stall_since = since;
		task_look(&w->at);
		char rt[160];
		rt_runnable(rt, sizeof(rt));
		slog_unlocked("stall: the event loop asked to sleep %lld ms and has not run for "
			      "%llu ms: thread state %c (R: waiting for a core), system call %s, "
			      "policy %d nice %d; real-time tasks runnable: %s",
			      (long long)(timeout_us / 1000), (unsigned long long)in_ms,
			      w->at.state, w->at.syscall, w->at.policy, w->at.nice, rt);
	}
}

/* the loop thread's policy when the watcher started: the watcher runs at
 * it (threads start at SCHED_OTHER nice 0 under SCHED_RESET_ON_FORK), so
 * that a late watcher means the daemon as a whole could not run, not that
 * its watcher waited behind the machine's other sessions */
static int loop_policy;
static struct sched_param loop_param;

static void *watch(void *arg)
{
	(void)arg;
	if ((loop_policy & ~SCHED_RESET_ON_FORK) == SCHED_FIFO)
		sched_setscheduler(0, loop_policy, &loop_param);
	unsigned period = threshold_ms / 4 ? threshold_ms / 4 : 1;
	struct watch w = {0};
	uint64_t last = mono_ns();
	for (;;) {
		sleep_ms(period);
		uint64_t now = mono_ns();
		int64_t late_ms = (int64_t)((now - last) / 1000000u) - period;
		last = now;
		uint64_t seq = atomic_load_explicit(&mark_seq, memory_order_acquire);
		int phase = atomic_load_explicit(&mark_phase, memory_order_relaxed);
		uint64_t since = atomic_load_explicit(&mark_since_ns, memory_order_relaxed);
		int64_t timeout_us = atomic_load_explicit(&mark_timeout_us, memory_order_relaxed);
		if (seq != w.seq) {
			phase_over(&w);
			w.seq = seq;
		}
		if (late_ms >= (int64_t)threshold_ms && !w.quiet) {
			/* stopped or descheduled as a whole: the loop's phase
			 * looks long for the same reason, and is not its fault */
			slog_unlocked("stall: this whole daemon was not run for %lld ms (its "
				      "watcher woke that late): the machine, not the daemon",
				      (long long)late_ms);
			w.stall_since = since;
			w.quiet = true;
		}
		if (!w.stall_since && since <= now)
			phase_look(&w, now, phase, since, timeout_us);
	}
	return NULL;
}

uint64_t stall_backtraces(void)
{
	return atomic_load_explicit(&backtraces, memory_order_acquire);
}

int stall_watch(unsigned stall_ms)
{
	if (watching)
		return 0;
	/* backtrace loads its unwinder on first use (malloc, dlopen): not in
	 * a signal handler */
	void *frame;
	backtrace(&frame, 1);
	struct sigaction sa = { .sa_handler = on_backtrace, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGURG, &sa, NULL) < 0)
		return -1;
	threshold_ms = stall_ms;
	loop_tid = (pid_t)syscall(SYS_gettid);
	loop_thread = pthread_self();
	loop_policy = sched_getscheduler(0);
	sched_getparam(0, &loop_param);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	watching = true;
	pthread_t t;
	int rc = pthread_create(&t, NULL, watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		watching = false;
		errno = rc;
		return -1;
	}
	pthread_detach(t);
	return 0;
}
