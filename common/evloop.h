/* The event loop under each daemon, after Redis's ae: every descriptor,
 * timer and per-turn duty registers a callback here, and one loop calls
 * them. A turn: ask every limit how long the loop may sleep, epoll_wait,
 * call the callbacks of the descriptors that are ready (timers are
 * timerfds), then every turn callback in the order they were registered.
 * Single-threaded; a callback may add or remove any registration, its own
 * included, and a descriptor removed during a turn gets no more callbacks
 * from it. */
#ifndef STORM_EVLOOP_H
#define STORM_EVLOOP_H

#include <stdint.h>

struct ev_loop;

/* events: EPOLLIN, EPOLLOUT, EPOLLHUP... as epoll reports them */
typedef void (*ev_io_fn)(void *arg, uint32_t events);
typedef void (*ev_fn)(void *arg);
/* µs the loop may sleep at most for this source; -1: no limit (the loop
 * sleeps with a nanosecond timeout, so a source may ask for less than a
 * millisecond) */
typedef int64_t (*ev_limit_fn)(void *arg);
/* a limit in ms (-1: none) as the µs a limit function returns */
static inline int64_t ev_ms(int ms)
{
	return ms < 0 ? -1 : (int64_t)ms * 1000;
}

struct ev_loop *ev_loop_new(void);
/* Closes the timers it made; registered descriptors stay the caller's. */
void ev_loop_free(struct ev_loop *l);

/* 0, or -1 with errno. One registration per descriptor. */
int ev_io_add(struct ev_loop *l, int fd, uint32_t events, ev_io_fn fn, void *arg);
int ev_io_mod(struct ev_loop *l, int fd, uint32_t events);
/* Before the caller closes fd. Unknown descriptors are ignored. */
void ev_io_del(struct ev_loop *l, int fd);

/* A timer calling fn at first_us from now, then every period_us (0: once).
 * Returns its id (> 0), or -1 with errno. first_us 0 with period_us 0
 * leaves it disarmed. */
int ev_timer_add(struct ev_loop *l, uint64_t first_us, uint64_t period_us, ev_fn fn,
		 void *arg);
/* Re-arms (or with 0, 0 disarms) timer id. */
int ev_timer_set(struct ev_loop *l, int id, uint64_t first_us, uint64_t period_us);
void ev_timer_del(struct ev_loop *l, int id);

/* Called before each sleep; the loop sleeps no longer than the least. */
int ev_limit_add(struct ev_loop *l, ev_limit_fn fn, void *arg);
/* Called after each wake-up, after the descriptors' callbacks. */
int ev_turn_add(struct ev_loop *l, ev_fn fn, void *arg);

/* Runs turns until ev_stop; 0, or -1 with errno when epoll fails. */
int ev_run(struct ev_loop *l);
/* One turn, sleeping at most max_us (-1: as the limits say). */
int ev_run_once(struct ev_loop *l, int64_t max_us);
void ev_stop(struct ev_loop *l);
int ev_stopped(const struct ev_loop *l);

#endif
