/* COMPARE-AND-WRITE's pure parts (net_abstraction/caw.h): the members'
 * locks, the coordinator's state machine, and, in a simulation of members
 * and concurrent calls whose messages arrive in random orders, that every
 * answer is true of one instant and every write lands whole. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "caw.h"
#include "suites.h"
#include "tree.h"

#define LEASE 1000000000ull
#define VA 4096
#define VB 4104

/* A prepare of call origin (its own leader, all of one age: the coordinator
 * decides the order) outside its leader. */
static int take(struct caw_locks *t, uint32_t origin, uint32_t opid, uint64_t rvar, bool writes,
		uint64_t wvar, uint64_t wval, uint64_t now, uint64_t lease)
{
	struct caw_req r = {
		.origin = origin, .opid = opid, .leader = 100 + origin,
		.writes = writes, .rvar = rvar, .wvar = wvar, .wval = wval,
	};
	return caw_lock_take(t, &r, now, lease);
}

static void test_conflicts(void)
{
	struct caw_lock rd = {.used = true, .rvar = VA};
	struct caw_lock wr = {.used = true, .writes = true, .rvar = VA, .wvar = VB};
	CU_ASSERT_FALSE(caw_conflict(&rd, VA, false, 0));      /* readers share */
	CU_ASSERT_TRUE(caw_conflict(&rd, VB, true, VA));       /* writing what it reads */
	CU_ASSERT_FALSE(caw_conflict(&rd, VA, true, VB));      /* reading it, writing another */
	CU_ASSERT_TRUE(caw_conflict(&wr, VB, false, 0));       /* reading what it writes */
	CU_ASSERT_TRUE(caw_conflict(&wr, VA + 16, true, VB));  /* writing it too */
	CU_ASSERT_FALSE(caw_conflict(&wr, VA, false, 0));      /* reading what it reads */
	CU_ASSERT_TRUE(caw_conflict(&wr, VA, true, VA));       /* writing what it reads */
}

static void test_locks(void)
{
	static struct caw_locks t;
	memset(&t, 0, sizeof(t));
	uint64_t wv = 0, wval = 0;
	CU_ASSERT_EQUAL(take(&t, 1, 10, VA, true, VB, 7, 0, LEASE), 0);
	CU_ASSERT_EQUAL(take(&t, 1, 10, VA, true, VB, 7, 0, LEASE), 0); /* again */
	CU_ASSERT_EQUAL(caw_locks_held(&t, 0), 1);
	CU_ASSERT_EQUAL(take(&t, 2, 10, VB, false, 0, 0, 0, LEASE), -EBUSY);
	CU_ASSERT_EQUAL(take(&t, 2, 11, VA, false, 0, 0, 0, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 1, 10, true, 1, &wv, &wval), 1);
	CU_ASSERT_EQUAL(wv, VB);
	CU_ASSERT_EQUAL(wval, 7);
	/* the same decision again (sent directly too): done, not written twice */
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 1, 10, true, 1, &wv, &wval), 0);
	/* a prepare that arrives after its decision does not lock */
	CU_ASSERT_EQUAL(take(&t, 1, 10, VA, true, VB, 7, 2, LEASE), -EBUSY);
	CU_ASSERT_EQUAL(take(&t, 2, 12, VB, false, 0, 0, 2, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 2, 11, false, 3, &wv, &wval), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 2, 12, false, 3, &wv, &wval), 0);
	CU_ASSERT_EQUAL(caw_locks_held(&t, 3), 0);
	/* a commit for a prepare never seen here cannot be applied */
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 3, 1, true, 3, &wv, &wval), -ENOENT);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 3, 1, true, 3, &wv, &wval), -ENOENT);
	/* a lease that ran out: the lock is gone, its late commit fails */
	CU_ASSERT_EQUAL(take(&t, 4, 1, VA, true, VA, 1, 10, 100), 0);
	CU_ASSERT_EQUAL(take(&t, 5, 1, VA, false, 0, 0, 50, 100), -EBUSY);
	CU_ASSERT_EQUAL(take(&t, 5, 2, VA, false, 0, 0, 111, 100), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 4, 1, true, 112, &wv, &wval), -ENOENT);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 5, 2, false, 112, &wv, &wval), 0);
	/* full */
	for (uint32_t i = 0; i < CAW_MAX_LOCKS; i++)
		CU_ASSERT_EQUAL(take(&t, 6, 100 + i, VA, false, 0, 0, 200, LEASE), 0);
	CU_ASSERT_EQUAL(take(&t, 6, 99, VA, false, 0, 0, 200, LEASE), -ENOSPC);
}

static struct sn_nodeset nodes(uint32_t mask)
{
	struct sn_nodeset s;
	sn_set_clear(&s);
	for (uint32_t i = 0; i < 32; i++)
		if (mask & (1u << i))
			sn_set_add(&s, i);
	return s;
}

static void test_sm_read(void)
{
	struct caw_sm c;
	struct sn_nodeset set = nodes(0x7), none = nodes(0);
	caw_sm_init(&c, &set, false, 0, 1000);
	CU_ASSERT_EQUAL(c.state, CAW_PREPARE);
	caw_sm_prepared(&c, 1, &none);
	/* answered before the locks are released */
	CU_ASSERT_TRUE(c.answered);
	CU_ASSERT_EQUAL(c.status, 1);
	CU_ASSERT_EQUAL(c.state, CAW_DECIDE);
	CU_ASSERT_FALSE(c.commit);
	caw_sm_decided(&c, &none, 0, 0);
	CU_ASSERT_EQUAL(c.state, CAW_DONE);
	CU_ASSERT_FALSE(c.written);
}

static void test_sm_write(void)
{
	struct caw_sm c;
	struct sn_nodeset set = nodes(0x1f), none = nodes(0), cut = nodes(0x18),
			  dead = nodes(0x10);
	caw_sm_init(&c, &set, true, 0, 1000);
	caw_sm_prepared(&c, 1, &none);
	CU_ASSERT_FALSE(c.answered); /* not before the members hold it */
	CU_ASSERT_TRUE(c.commit);
	CU_ASSERT_EQUAL(c.state, CAW_DECIDE);
	/* a dead inner node kept the commit from 3 and 4: each gets it directly */
	caw_sm_decided(&c, &cut, 0, 0);
	CU_ASSERT_EQUAL(c.state, CAW_DECIDE_DIRECT);
	CU_ASSERT_TRUE(sn_set_equal(&c.direct, &cut));
	CU_ASSERT_FALSE(c.answered);
	caw_sm_decided(&c, &dead, 0, 0); /* 3 confirms, 4 is dead */
	CU_ASSERT_EQUAL(c.state, CAW_DONE);
	CU_ASSERT_TRUE(c.answered);
	CU_ASSERT_TRUE(c.written);
	CU_ASSERT_EQUAL(c.status, -EHOSTUNREACH);
	CU_ASSERT_TRUE(sn_set_equal(&c.failed, &dead));

	/* every member confirmed through the tree */
	caw_sm_init(&c, &set, true, 0, 1000);
	caw_sm_prepared(&c, 1, &none);
	caw_sm_decided(&c, &none, 0, 0);
	CU_ASSERT_EQUAL(c.state, CAW_DONE);
	CU_ASSERT_EQUAL(c.status, 1);
	CU_ASSERT_TRUE(c.written);

	/* false: answered at once, released, nothing written */
	caw_sm_init(&c, &set, true, 0, 1000);
	caw_sm_prepared(&c, 0, &none);
	CU_ASSERT_TRUE(c.answered);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_FALSE(c.commit);
	caw_sm_decided(&c, &none, 0, 0);
	CU_ASSERT_FALSE(c.written);

	/* a member did not answer the prepare: fails, nothing committed */
	caw_sm_init(&c, &set, true, 0, 1000);
	caw_sm_prepared(&c, -ETIMEDOUT, &dead);
	CU_ASSERT_TRUE(c.answered);
	CU_ASSERT_EQUAL(c.status, -ETIMEDOUT);
	CU_ASSERT_TRUE(sn_set_equal(&c.failed, &dead));
	CU_ASSERT_FALSE(c.commit);
	CU_ASSERT_EQUAL(c.state, CAW_DECIDE); /* the others are released */
	caw_sm_decided(&c, &dead, 0, 0);
	caw_sm_decided(&c, &dead, 0, 0);
	CU_ASSERT_EQUAL(c.state, CAW_DONE);
	CU_ASSERT_FALSE(c.written);
	CU_ASSERT_EQUAL(c.status, -ETIMEDOUT);
}

static void test_sm_conflict(void)
{
	struct caw_sm c;
	struct sn_nodeset set = nodes(0x3), none = nodes(0);
	uint64_t window = 50000000; /* 50 ms */
	caw_sm_init(&c, &set, true, 0, window);
	caw_sm_prepared(&c, -EBUSY, &none);
	CU_ASSERT_FALSE(c.answered);
	CU_ASSERT_FALSE(c.commit);
	caw_sm_decided(&c, &none, 0, 12345);
	CU_ASSERT_EQUAL(c.state, CAW_BACKOFF);
	CU_ASSERT(c.backoff_until_ns >= 100000 && c.backoff_until_ns < 1100000);
	caw_sm_retry(&c);
	CU_ASSERT_EQUAL(c.state, CAW_PREPARE);
	CU_ASSERT_EQUAL(c.attempt, 1);
	/* the back-off grows with the attempts */
	caw_sm_prepared(&c, -EBUSY, &none);
	caw_sm_decided(&c, &none, 0, 1999999);
	CU_ASSERT_EQUAL(c.backoff_until_ns, 100000 + 1999999);
	caw_sm_retry(&c);
	caw_sm_prepared(&c, 1, &none);
	caw_sm_decided(&c, &none, 0, 0);
	CU_ASSERT_EQUAL(c.status, 1);
	CU_ASSERT_TRUE(c.written);
	/* past its window a conflict is the answer */
	caw_sm_init(&c, &set, true, 0, window);
	caw_sm_prepared(&c, -EBUSY, &none);
	caw_sm_decided(&c, &none, window, 0);
	CU_ASSERT_EQUAL(c.state, CAW_DONE);
	CU_ASSERT_TRUE(c.answered);
	CU_ASSERT_EQUAL(c.status, -EBUSY);
}

/* ---- a simulated cluster: members with locks and one variable each,
 * concurrent calls whose messages arrive one at a time, in random order or
 * in lock step. A call prepares its set's lowest node first, then the
 * rest, as caw_net.c does; a queued prepare is taken again, oldest call first,
 * when a lock is released at its member. Nothing times out here: a wait
 * that never ends leaves no message to deliver, and the test sees it. */

#define SIM_NODES 8
#define SIM_CALLS 12

static uint64_t sim_rng;
static uint64_t rnd(void)
{
	sim_rng ^= sim_rng << 13;
	sim_rng ^= sim_rng >> 7;
	sim_rng ^= sim_rng << 17;
	return sim_rng;
}

struct sim_call {
	struct caw_sm sm;
	uint32_t mask;         /* members */
	uint32_t leader;       /* its lowest */
	uint64_t ticket;
	uint64_t value, wval;  /* A == value, then A = wval */
	uint32_t opid;
	bool rest;             /* the leader is locked: the rest is prepared */
	int leader_vote;
	uint32_t todo;         /* members the current phase has not reached */
	uint32_t queued;       /* members where its prepare waits */
	int votes;             /* AND of the answers, -EBUSY */
};

static struct caw_locks sim_locks[SIM_NODES];
static uint64_t sim_a[SIM_NODES];
static struct sim_call sim_calls[SIM_CALLS];
static uint32_t sim_ncalls, sim_next_opid;
static unsigned sim_bad_answer, sim_half_write, sim_commits;

static bool sim_truth(const struct sim_call *c)
{
	for (uint32_t m = 0; m < SIM_NODES; m++)
		if ((c->mask & (1u << m)) && sim_a[m] != c->value)
			return false;
	return true;
}

static void sim_phase(struct sim_call *c)
{
	c->votes = 1;
	c->queued = 0;
	if (c->sm.state != CAW_PREPARE) {
		c->todo = c->mask;
		return;
	}
	if (!c->rest) {
		c->opid = ++sim_next_opid;
		c->todo = 1u << c->leader;
	} else {
		c->todo = c->mask & ~(1u << c->leader);
	}
}

static void sim_prepared(struct sim_call *c)
{
	struct sn_nodeset none = nodes(0);
	if (!c->rest) {
		if (c->votes >= 0) {
			c->rest = true;
			c->leader_vote = c->votes;
			if (c->mask != 1u << c->leader) {
				sim_phase(c);
				return;
			}
		}
	} else if (c->votes >= 0) {
		c->votes = c->votes && c->leader_vote;
	}
	/* every lock is held now: the answer must be true of this instant */
	if (c->votes >= 0 && c->votes != (int)sim_truth(c))
		sim_bad_answer++;
	caw_sm_prepared(&c->sm, c->votes, &none);
	sim_phase(c);
}

static void sim_grant(uint32_t m);

/* The answer of call i's prepare at member m: false while it waits. */
static bool sim_take(uint32_t i, uint32_t m)
{
	struct sim_call *c = &sim_calls[i];
	struct caw_req req = {
		.origin = i, .opid = c->opid, .ticket = c->ticket, .leader = c->leader,
		.at_leader = !c->rest, .writes = c->sm.writes, .rvar = VA, .wvar = VA,
		.wval = c->wval,
	};
	int rc = caw_lock_take(&sim_locks[m], &req, 0, LEASE);
	if (rc == -EAGAIN) {
		c->queued |= 1u << m;
		return false;
	}
	c->queued &= ~(1u << m);
	if (rc < 0)
		c->votes = -EBUSY;
	else if (c->votes >= 0)
		c->votes = c->votes && sim_a[m] == c->value;
	return true;
}

static void sim_decided(struct sim_call *c)
{
	if (c->sm.commit) {
		sim_commits++;
		for (uint32_t k = 0; k < SIM_NODES; k++)
			if ((c->mask & (1u << k)) && sim_a[k] != c->wval)
				sim_half_write++;
	}
	struct sn_nodeset none = nodes(0);
	caw_sm_decided(&c->sm, &none, 0, rnd());
	if (c->sm.state == CAW_BACKOFF) {
		caw_sm_retry(&c->sm); /* time does not pass here: at once */
		c->rest = false;
		sim_phase(c);
	}
}

/* Delivers one message of call i to member m. */
static void sim_deliver(uint32_t i, uint32_t m)
{
	struct sim_call *c = &sim_calls[i];
	c->todo &= ~(1u << m);
	if (c->sm.state == CAW_PREPARE) {
		if (sim_take(i, m) && !c->todo && !c->queued)
			sim_prepared(c);
		return;
	}
	uint64_t wv, wval;
	if (caw_lock_decide(&sim_locks[m], i, c->opid, c->sm.commit, 0, &wv, &wval) == 1)
		sim_a[m] = wval;
	if (!c->todo)
		sim_decided(c);
	sim_grant(m);
}

/* A lock was released at m: its queued prepares are taken again, oldest
 * first, as caw_net.c's sni_caw_grant_waiters does. */
static void sim_grant(uint32_t m)
{
	uint32_t done = 0;
	for (;;) {
		uint32_t best = UINT32_MAX;
		for (uint32_t i = 0; i < sim_ncalls; i++)
			if ((sim_calls[i].queued & (1u << m)) && !(done & (1u << i)) &&
			    (best == UINT32_MAX ||
			     caw_older(sim_calls[i].ticket, i, sim_calls[best].ticket, best)))
				best = i;
		if (best == UINT32_MAX)
			return;
		done |= 1u << best;
		struct sim_call *c = &sim_calls[best];
		if (sim_take(best, m) && !c->todo && !c->queued)
			sim_prepared(c);
	}
}

/* Runs the calls to their answers; false if they stopped short (a wait
 * that never ends). lockstep: each call in turn delivers its lowest
 * pending message, the order in which symmetric retries meet again. */
static bool sim_run(bool lockstep)
{
	uint32_t turn = 0;
	for (int step = 0; step < 1000000; step++) {
		uint32_t live = 0, ready = 0, pick[SIM_CALLS];
		for (uint32_t i = 0; i < sim_ncalls; i++) {
			if (sim_calls[i].sm.state == CAW_DONE)
				continue;
			live++;
			if (sim_calls[i].todo)
				pick[ready++] = i;
		}
		if (!live)
			return true;
		if (!ready)
			return false;
		uint32_t i, m;
		if (lockstep) {
			while (!sim_calls[turn % sim_ncalls].todo)
				turn++;
			i = turn++ % sim_ncalls;
			m = (uint32_t)__builtin_ctz(sim_calls[i].todo);
		} else {
			i = pick[rnd() % ready];
			do
				m = (uint32_t)(rnd() % SIM_NODES);
			while (!(sim_calls[i].todo & (1u << m)));
		}
		sim_deliver(i, m);
	}
	return false;
}

static void sim_add(uint32_t mask, bool writes, uint64_t value, uint64_t ticket)
{
	struct sim_call *c = &sim_calls[sim_ncalls];
	memset(c, 0, sizeof(*c));
	c->mask = mask;
	c->leader = (uint32_t)__builtin_ctz(mask);
	c->ticket = ticket;
	c->value = value;
	c->wval = 10 + sim_ncalls;
	struct sn_nodeset set = nodes(mask);
	caw_sm_init(&c->sm, &set, writes, 0, UINT64_MAX / 2);
	sim_ncalls++;
	sim_phase(c);
}

static void sim_reset(void)
{
	memset(sim_locks, 0, sizeof(sim_locks));
	sim_ncalls = sim_next_opid = 0;
}

static void test_sim(void)
{
	sim_rng = 0x2545f4914f6cdd1dull;
	sim_bad_answer = sim_half_write = sim_commits = 0;
	unsigned busy_answers = 0, stuck = 0;
	for (int round = 0; round < 400; round++) {
		sim_reset();
		for (int m = 0; m < SIM_NODES; m++)
			sim_a[m] = rnd() % 2;
		for (uint32_t i = 0; i < SIM_CALLS; i++) {
			/* overlapping sets of 2-4 neighbours, or everyone; some
			 * calls of one instant (a tie their origins break) */
			uint32_t first = (uint32_t)(rnd() % SIM_NODES), len = 2 + (uint32_t)(rnd() % 3);
			uint32_t mask = 0;
			for (uint32_t k = 0; k < len; k++)
				mask |= 1u << ((first + k) % SIM_NODES);
			if (rnd() % 4 == 0)
				mask = (1u << SIM_NODES) - 1;
			sim_add(mask, rnd() % 3 != 0, rnd() % 2, rnd() % 4);
		}
		stuck += !sim_run(false);
		for (uint32_t i = 0; i < SIM_CALLS; i++)
			busy_answers += sim_calls[i].sm.answered && sim_calls[i].sm.status == -EBUSY;
		for (int m = 0; m < SIM_NODES; m++)
			CU_ASSERT_EQUAL(caw_locks_held(&sim_locks[m], 0), 0);
	}
	CU_ASSERT_EQUAL(stuck, 0);
	CU_ASSERT_EQUAL(sim_bad_answer, 0);
	CU_ASSERT_EQUAL(sim_half_write, 0);
	CU_ASSERT_EQUAL(busy_answers, 0); /* conflicts were retried until they passed */
	CU_ASSERT(sim_commits > 100);      /* and the writes did happen */
}

/* The worst case, deterministic: every node starts at the same instant a
 * write of its own value over a window of three that wraps around (so the
 * windows overlap with different lowest nodes), plus writers on every
 * node; the messages go in lock step. Every call must be answered, none
 * refused for good, each within as many attempts as there are calls
 * older than it (each retry follows a refusal by an older one that then
 * completes), and all writes must land whole. */
static void test_sim_worst(void)
{
	for (int all = 0; all <= 4; all += 4) {
		sim_reset();
		sim_bad_answer = sim_half_write = sim_commits = 0;
		for (int m = 0; m < SIM_NODES; m++)
			sim_a[m] = 0;
		for (uint32_t i = 0; i < SIM_NODES; i++) {
			uint32_t mask = 0;
			for (uint32_t k = 0; k < 3; k++)
				mask |= 1u << ((i + k) % SIM_NODES);
			sim_add(mask, true, 0, 0);
		}
		for (int k = 0; k < all; k++)
			sim_add((1u << SIM_NODES) - 1, true, 0, 0);
		CU_ASSERT_TRUE(sim_run(true));
		for (uint32_t i = 0; i < sim_ncalls; i++) {
			CU_ASSERT_TRUE(sim_calls[i].sm.answered);
			CU_ASSERT(sim_calls[i].sm.status == 0 || sim_calls[i].sm.status == 1);
			CU_ASSERT(sim_calls[i].sm.attempt <= i);
		}
		CU_ASSERT(sim_commits >= 1);
		CU_ASSERT_EQUAL(sim_bad_answer, 0);
		CU_ASSERT_EQUAL(sim_half_write, 0);
		for (int m = 0; m < SIM_NODES; m++)
			CU_ASSERT_EQUAL(caw_locks_held(&sim_locks[m], 0), 0);
	}
}

/* The rules a member applies to a conflicting prepare (caw.h). */
static void test_order(void)
{
	static struct caw_locks t;
	memset(&t, 0, sizeof(t));
	uint64_t wv, wval;
	struct caw_req young = {.origin = 1, .opid = 1, .ticket = 50, .leader = 1,
				.writes = true, .rvar = VA, .wvar = VA, .wval = 1};
	struct caw_req old = {.origin = 2, .opid = 1, .ticket = 10, .leader = 2,
			      .writes = true, .rvar = VA, .wvar = VA, .wval = 2};
	CU_ASSERT_EQUAL(caw_lock_take(&t, &young, 0, LEASE), 0);
	/* the same leader as the holder: the holder was decided, wait */
	struct caw_req younger = young;
	younger.origin = 3, younger.ticket = 60;
	CU_ASSERT_EQUAL(caw_lock_take(&t, &younger, 0, LEASE), -EAGAIN);
	/* younger than the holder, another leader: refused */
	struct caw_req other = younger;
	other.origin = 6, other.leader = 6;
	CU_ASSERT_EQUAL(caw_lock_take(&t, &other, 0, LEASE), -EBUSY);
	/* older waits for younger; queued, not held */
	CU_ASSERT_EQUAL(caw_lock_take(&t, &old, 0, LEASE), -EAGAIN);
	CU_ASSERT_EQUAL(caw_locks_held(&t, 0), 1);
	/* at its leader, holding nothing: waits whatever it meets */
	struct caw_req lead = younger;
	lead.origin = 4, lead.leader = 9, lead.at_leader = true;
	CU_ASSERT_EQUAL(caw_lock_take(&t, &lead, 0, LEASE), -EAGAIN);
	/* a reader younger than the queued writer does not overtake it */
	struct caw_req rd = {.origin = 5, .opid = 1, .ticket = 70, .leader = 5, .rvar = VA};
	caw_lock_decide(&t, 1, 1, true, 0, &wv, &wval);
	CU_ASSERT_EQUAL(caw_lock_take(&t, &rd, 0, LEASE), -EBUSY);
	/* the release grants the oldest on its next try; the others wait on */
	CU_ASSERT_EQUAL(caw_lock_take(&t, &old, 0, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_take(&t, &younger, 0, LEASE), -EBUSY);
	CU_ASSERT_EQUAL(caw_lock_take(&t, &lead, 0, LEASE), -EAGAIN);
	/* a waiter that gives up is dropped; a commit to a queued one fails */
	caw_lock_cancel(&t, 4, 1);
	CU_ASSERT_EQUAL(caw_lock_take(&t, &lead, 0, LEASE), -EAGAIN);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 4, 1, true, 0, &wv, &wval), -ENOENT);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 2, 1, true, 0, &wv, &wval), 1);
	CU_ASSERT_EQUAL(wval, 2);
	CU_ASSERT_EQUAL(caw_locks_held(&t, 0), 0);
	CU_ASSERT(t.releases >= 3);
}

static void test_sm_queued(void)
{
	struct caw_sm c;
	struct sn_nodeset set = nodes(0x3), none = nodes(0);
	uint64_t window = 50000000;
	caw_sm_init(&c, &set, true, 0, window);
	/* waited to its deadline behind calls that went ahead: again at once,
	 * with a fresh window, however late */
	caw_sm_prepared(&c, -EAGAIN, &none);
	caw_sm_decided(&c, &none, 3 * window, 777);
	CU_ASSERT_EQUAL(c.state, CAW_BACKOFF);
	CU_ASSERT_EQUAL(c.backoff_until_ns, 3 * window);
	CU_ASSERT_EQUAL(c.retry_until_ns, 4 * window);
	caw_sm_retry(&c);
	caw_sm_prepared(&c, 1, &none);
	caw_sm_decided(&c, &none, 3 * window, 0);
	CU_ASSERT_EQUAL(c.status, 1);
}

/* A gathering read's answer as the tree builds it: each member's ACK is its
 * own pair joined with its children's ACKs (treeop.c's order: children as
 * they answer, then its own at the prepare), and the root's is the set's. */
static struct caw_gather gather_up(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
				   uint32_t node, const uint64_t *cpu, const uint64_t *rss)
{
	struct sn_tree_pos pos;
	struct caw_gather g = {0, 0};
	CU_ASSERT_EQUAL_FATAL(sn_tree_position(root, set, fanout, node, &pos), 0);
	for (uint32_t i = pos.nchildren; i-- > 0;) {
		struct caw_gather c = gather_up(root, set, fanout, pos.children[i], cpu, rss);
		caw_gather_add(&g, c.sum, c.max);
	}
	if (sn_set_has(set, node))
		caw_gather_add(&g, cpu[node], rss[node]);
	return g;
}

static void test_gather(void)
{
	/* a job's nodes' CPU time (us) and peak RSS (KiB), some zero (nodes
	 * whose accounting went in their reports) */
	static uint64_t cpu[600], rss[600];
	uint64_t seed = 12345;
	for (unsigned fanout = 1; fanout <= 8; fanout *= 2)
		for (uint32_t n = 1; n <= 520; n += 37) {
			struct sn_nodeset set;
			sn_set_clear(&set);
			uint64_t sum = 0, max = 0;
			for (uint32_t i = 1; i <= n; i++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				if ((seed >> 60) == 3)
					continue; /* not in the job */
				sn_set_add(&set, i);
				cpu[i] = (seed >> 33) % 7 ? (seed >> 20) % 5000000 : 0;
				rss[i] = (seed >> 40) % 900000;
				sum += cpu[i];
				if (rss[i] > max)
					max = rss[i];
			}
			if (sn_set_empty(&set))
				continue;
			/* rooted at the MM (node 0, not a member), as the MM asks */
			struct caw_gather g = gather_up(0, &set, fanout, 0, cpu, rss);
			CU_ASSERT_EQUAL(g.sum, sum);
			CU_ASSERT_EQUAL(g.max, max);
		}
	/* a sum too large to tell saturates instead of wrapping */
	struct caw_gather g = {UINT64_MAX - 5, 1};
	caw_gather_add(&g, 10, 0);
	CU_ASSERT_EQUAL(g.sum, UINT64_MAX);
	CU_ASSERT_EQUAL(g.max, 1);
	/* the coordinator joins the leader's answer with the rest's */
	struct caw_gather lead = {7, 300}, rest = {0, 0};
	caw_gather_add(&rest, 5, 900);
	caw_gather_add(&lead, rest.sum, rest.max);
	CU_ASSERT_EQUAL(lead.sum, 12);
	CU_ASSERT_EQUAL(lead.max, 900);
}

void add_caw_suite(void)
{
	CU_pSuite s = CU_add_suite("compare-and-write", NULL, NULL);
	CU_add_test(s, "which locks conflict", test_conflicts);
	CU_add_test(s, "a member's locks", test_locks);
	CU_add_test(s, "a read: answered, then released", test_sm_read);
	CU_add_test(s, "a write: committed whole, around a dead inner node", test_sm_write);
	CU_add_test(s, "conflicts back off and retry", test_sm_conflict);
	CU_add_test(s, "conflicting prepares: older waits, younger is refused", test_order);
	CU_add_test(s, "a wait behind others that went ahead queues again", test_sm_queued);
	CU_add_test(s, "concurrent calls on overlapping sets: one instant, whole writes",
		    test_sim);
	CU_add_test(s, "the worst interleaving: every call answered, attempts bounded",
		    test_sim_worst);
	CU_add_test(s, "a read's sum and maximum gathered up the tree", test_gather);
}
