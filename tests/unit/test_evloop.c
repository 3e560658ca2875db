/* The daemons' event loop: descriptors, timers, limits and turn order, and
 * a descriptor removed by an earlier callback of the same turn. */
#include <CUnit/CUnit.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "evloop.h"
#include "suites.h"

struct rec {
	char log[64];
	int n;
	struct ev_loop *l;
	int fds[2][2];
};

static void note(struct rec *r, char c)
{
	if (r->n < (int)sizeof(r->log) - 1)
		r->log[r->n++] = c;
}

static void on_a(void *arg, uint32_t ev)
{
	struct rec *r = arg;
	CU_ASSERT(ev & EPOLLIN);
	char b;
	CU_ASSERT_EQUAL(read(r->fds[0][0], &b, 1), 1);
	note(r, 'a');
	/* a callback removes another descriptor that is ready in this turn */
	ev_io_del(r->l, r->fds[1][0]);
}

static void on_b(void *arg, uint32_t ev)
{
	(void)ev;
	struct rec *r = arg;
	char b;
	CU_ASSERT_EQUAL(read(r->fds[1][0], &b, 1), 1);
	note(r, 'b');
	ev_io_del(r->l, r->fds[0][0]);
}

static void turn1(void *arg) { note(arg, '1'); }
static void turn2(void *arg) { note(arg, '2'); }
static int64_t limit_0(void *arg) { (void)arg; return 0; }
static int64_t limit_none(void *arg) { (void)arg; return -1; }

static void test_io_and_turns(void)
{
	struct rec r = { 0 };
	r.l = ev_loop_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(r.l);
	CU_ASSERT_EQUAL(pipe(r.fds[0]), 0);
	CU_ASSERT_EQUAL(pipe(r.fds[1]), 0);
	CU_ASSERT_EQUAL(ev_io_add(r.l, r.fds[0][0], EPOLLIN, on_a, &r), 0);
	CU_ASSERT_EQUAL(ev_io_add(r.l, r.fds[1][0], EPOLLIN, on_b, &r), 0);
	CU_ASSERT_EQUAL(ev_io_add(r.l, r.fds[1][0], EPOLLIN, on_b, &r), -1); /* twice */
	CU_ASSERT_EQUAL(ev_turn_add(r.l, turn1, &r), 0);
	CU_ASSERT_EQUAL(ev_turn_add(r.l, turn2, &r), 0);
	CU_ASSERT_EQUAL(ev_limit_add(r.l, limit_none, &r), 0);
	CU_ASSERT_EQUAL(ev_limit_add(r.l, limit_0, &r), 0);
	/* nothing ready, a limit of 0: one turn at once, the turn hooks in order */
	CU_ASSERT_EQUAL(ev_run_once(r.l, -1), 0);
	CU_ASSERT_STRING_EQUAL(r.log, "12");
	CU_ASSERT_EQUAL(write(r.fds[0][1], "x", 1), 1);
	CU_ASSERT_EQUAL(write(r.fds[1][1], "y", 1), 1);
	CU_ASSERT_EQUAL(ev_run_once(r.l, -1), 0);
	/* exactly one of the two ran: the first removed the other */
	CU_ASSERT(!strcmp(r.log, "12a12") || !strcmp(r.log, "12b12"));
	for (int i = 0; i < 2; i++) {
		close(r.fds[i][0]);
		close(r.fds[i][1]);
	}
	ev_loop_free(r.l);
}

struct tick {
	struct ev_loop *l;
	int count, id;
};

static void on_tick(void *arg)
{
	struct tick *t = arg;
	if (++t->count == 3)
		ev_stop(t->l);
}

static void test_timers(void)
{
	struct tick t = { 0 };
	t.l = ev_loop_new();
	CU_ASSERT_PTR_NOT_NULL_FATAL(t.l);
	t.id = ev_timer_add(t.l, 1000, 1000, on_tick, &t);
	CU_ASSERT(t.id > 0);
	CU_ASSERT_EQUAL(ev_run(t.l), 0);
	CU_ASSERT_EQUAL(t.count, 3);
	CU_ASSERT(ev_stopped(t.l));
	/* disarmed: a bounded turn passes without a tick */
	CU_ASSERT_EQUAL(ev_timer_set(t.l, t.id, 0, 0), 0);
	CU_ASSERT_EQUAL(ev_run_once(t.l, 5000), 0);
	CU_ASSERT_EQUAL(t.count, 3);
	CU_ASSERT_EQUAL(ev_timer_set(t.l, 12345, 1, 0), -1); /* no such timer */
	ev_timer_del(t.l, t.id);
	ev_loop_free(t.l);
}

void add_evloop_suite(void)
{
	CU_pSuite s = CU_add_suite("evloop", NULL, NULL);
	CU_add_test(s, "descriptors, turn order, removal within a turn", test_io_and_turns);
	CU_add_test(s, "timers fire, re-arm and disarm", test_timers);
}
