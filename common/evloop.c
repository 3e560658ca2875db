/* The daemons' event loop (evloop.h). */
#include "evloop.h"
#include "stall.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

struct ev_io {
	ev_io_fn fn;
	void *arg;
	uint32_t gen;  /* bumped at every add and del: stale epoll events skip */
	bool used;
	bool timer;    /* a timerfd of ours, read before fn */
	ev_fn tfn;
};

struct ev_hook {
	union {
		ev_fn turn;
		ev_limit_fn limit;
	} fn;
	void *arg;
};

struct ev_loop {
	int epfd;
	struct ev_io *io;     /* indexed by descriptor */
	int nio;
	struct ev_hook *turns, *limits;
	int nturns, nlimits;
	bool stop;
};

struct ev_loop *ev_loop_new(void)
{
	struct ev_loop *l = calloc(1, sizeof(*l));
	if (!l)
		return NULL;
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (l->epfd < 0) {
		free(l);
		return NULL;
	}
	return l;
}

void ev_loop_free(struct ev_loop *l)
{
	if (!l)
		return;
	for (int fd = 0; fd < l->nio; fd++)
		if (l->io[fd].used && l->io[fd].timer)
			close(fd);
	close(l->epfd);
	free(l->io);
	free(l->turns);
	free(l->limits);
	free(l);
}

static struct ev_io *slot(struct ev_loop *l, int fd)
{
	if (fd < 0)
		return NULL;
	if (fd >= l->nio) {
		int n = l->nio ? l->nio : 64;
		while (n <= fd)
			n *= 2;
		struct ev_io *io = realloc(l->io, (size_t)n * sizeof(*io));
		if (!io)
			return NULL;
		memset(io + l->nio, 0, (size_t)(n - l->nio) * sizeof(*io));
		l->io = io;
		l->nio = n;
	}
	return &l->io[fd];
}

static uint64_t tag(int fd, uint32_t gen)
{
	return (uint64_t)gen << 32 | (uint32_t)fd;
}

int ev_io_add(struct ev_loop *l, int fd, uint32_t events, ev_io_fn fn, void *arg)
{
	struct ev_io *e = slot(l, fd);
	if (!e) {
		errno = fd < 0 ? EBADF : ENOMEM;
		return -1;
	}
	if (e->used) {
		errno = EEXIST;
		return -1;
	}
	uint32_t gen = e->gen + 1;
	struct epoll_event ev = { .events = events, .data.u64 = tag(fd, gen) };
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return -1;
	*e = (struct ev_io){ .fn = fn, .arg = arg, .gen = gen, .used = true };
	return 0;
}

int ev_io_mod(struct ev_loop *l, int fd, uint32_t events)
{
	if (fd < 0 || fd >= l->nio || !l->io[fd].used) {
		errno = ENOENT;
		return -1;
	}
	struct epoll_event ev = { .events = events, .data.u64 = tag(fd, l->io[fd].gen) };
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void ev_io_del(struct ev_loop *l, int fd)
{
	if (fd < 0 || fd >= l->nio || !l->io[fd].used)
		return;
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->io[fd].used = false;
	l->io[fd].gen++;
}

int ev_timer_add(struct ev_loop *l, uint64_t first_us, uint64_t period_us, ev_fn fn, void *arg)
{
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (ev_io_add(l, fd, EPOLLIN, NULL, arg) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	l->io[fd].timer = true;
	l->io[fd].tfn = fn;
	if (ev_timer_set(l, fd, first_us, period_us) < 0) {
		int e = errno;
		ev_timer_del(l, fd);
		errno = e;
		return -1;
	}
	return fd; /* descriptors 0-2 are never ours: ids are > 0 */
}

static struct timespec ts_us(uint64_t us)
{
	return (struct timespec){ .tv_sec = (time_t)(us / 1000000u),
				  .tv_nsec = (long)(us % 1000000u) * 1000L };
}

int ev_timer_set(struct ev_loop *l, int id, uint64_t first_us, uint64_t period_us)
{
	if (id < 0 || id >= l->nio || !l->io[id].used || !l->io[id].timer) {
		errno = ENOENT;
		return -1;
	}
	struct itimerspec its = { .it_value = ts_us(first_us), .it_interval = ts_us(period_us) };
	if (!first_us && period_us)
		its.it_value = its.it_interval;
	return timerfd_settime(id, 0, &its, NULL);
}

void ev_timer_del(struct ev_loop *l, int id)
{
	if (id < 0 || id >= l->nio || !l->io[id].used || !l->io[id].timer)
		return;
	ev_io_del(l, id);
	close(id);
}

static int hook_add(struct ev_hook **v, int *n, struct ev_hook h)
{
	struct ev_hook *nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v));
	if (!nv)
		return -1;
	nv[(*n)++] = h;
	*v = nv;
	return 0;
}

int ev_limit_add(struct ev_loop *l, ev_limit_fn fn, void *arg)
{
	return hook_add(&l->limits, &l->nlimits, (struct ev_hook){ .fn.limit = fn, .arg = arg });
}

int ev_turn_add(struct ev_loop *l, ev_fn fn, void *arg)
{
	return hook_add(&l->turns, &l->nturns, (struct ev_hook){ .fn.turn = fn, .arg = arg });
}

/* epoll_pwait2 (Linux 5.11) sleeps to the µs; older kernels round up to
 * the ms */
static int wait_us(int epfd, struct epoll_event *evs, int max, int64_t us)
{
	static bool no_pwait2;
	if (!no_pwait2) {
		struct timespec ts = { .tv_sec = (time_t)(us / 1000000),
				       .tv_nsec = (long)(us % 1000000) * 1000L };
		int n = epoll_pwait2(epfd, evs, max, us < 0 ? NULL : &ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	return epoll_wait(epfd, evs, max,
			  us < 0 ? -1 : us > (int64_t)INT_MAX * 1000 ? INT_MAX : (int)((us + 999) / 1000));
}

int ev_run_once(struct ev_loop *l, int64_t max_us)
{
	int64_t timeout = max_us;
	for (int i = 0; i < l->nlimits; i++) {
		int64_t t = l->limits[i].fn.limit(l->limits[i].arg);
		if (t >= 0 && (timeout < 0 || t < timeout))
			timeout = t;
	}
	struct epoll_event evs[64];
	stall_mark_wait(timeout);
	int n = wait_us(l->epfd, evs, 64, timeout);
	stall_mark_turn();
	if (n < 0) {
		if (errno != EINTR)
			return -1;
		n = 0;
	}
	for (int i = 0; i < n; i++) {
		int fd = (int)(uint32_t)evs[i].data.u64;
		uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
		if (fd >= l->nio || !l->io[fd].used || l->io[fd].gen != gen)
			continue; /* removed by an earlier callback of this turn */
		struct ev_io *e = &l->io[fd];
		if (e->timer) {
			uint64_t expirations;
			if (read(fd, &expirations, 8) == 8)
				e->tfn(e->arg);
		} else {
			e->fn(e->arg, evs[i].events);
		}
	}
	for (int i = 0; i < l->nturns; i++)
		l->turns[i].fn.turn(l->turns[i].arg);
	return 0;
}

int ev_run(struct ev_loop *l)
{
	while (!l->stop)
		if (ev_run_once(l, -1) < 0)
			return -1;
	return 0;
}

void ev_stop(struct ev_loop *l)
{
	l->stop = true;
}

int ev_stopped(const struct ev_loop *l)
{
	return l->stop;
}
