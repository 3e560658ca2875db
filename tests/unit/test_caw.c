/* COMPARE-AND-WRITE's pure parts (net_abstraction/caw.h): the members'
 * locks, the coordinator's state machine, and, in a simulation of members
 * and concurrent calls whose messages arrive in random orders, that every
 * answer is true of one instant and every write lands whole. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <string.h>

#include "caw.h"
#include "suites.h"

#define LEASE 1000000000ull
#define VA 4096
#define VB 4104

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
	CU_ASSERT_EQUAL(caw_lock_take(&t, 1, 10, VA, true, VB, 7, 0, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 1, 10, VA, true, VB, 7, 0, LEASE), 0); /* again */
	CU_ASSERT_EQUAL(caw_locks_held(&t, 0), 1);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 2, 10, VB, false, 0, 0, 0, LEASE), -EBUSY);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 2, 11, VA, false, 0, 0, 0, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 1, 10, true, 1, &wv, &wval), 1);
	CU_ASSERT_EQUAL(wv, VB);
	CU_ASSERT_EQUAL(wval, 7);
	/* the same decision again (sent directly too): done, not written twice */
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 1, 10, true, 1, &wv, &wval), 0);
	/* a prepare that arrives after its decision does not lock */
	CU_ASSERT_EQUAL(caw_lock_take(&t, 1, 10, VA, true, VB, 7, 2, LEASE), -EBUSY);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 2, 12, VB, false, 0, 0, 2, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 2, 11, false, 3, &wv, &wval), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 2, 12, false, 3, &wv, &wval), 0);
	CU_ASSERT_EQUAL(caw_locks_held(&t, 3), 0);
	/* a commit for a prepare never seen here cannot be applied */
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 3, 1, true, 3, &wv, &wval), -ENOENT);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 3, 1, true, 3, &wv, &wval), -ENOENT);
	/* a lease that ran out: the lock is gone, its late commit fails */
	CU_ASSERT_EQUAL(caw_lock_take(&t, 4, 1, VA, true, VA, 1, 10, 100), 0);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 5, 1, VA, false, 0, 0, 50, 100), -EBUSY);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 5, 2, VA, false, 0, 0, 111, 100), 0);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 4, 1, true, 112, &wv, &wval), -ENOENT);
	CU_ASSERT_EQUAL(caw_lock_decide(&t, 5, 2, false, 112, &wv, &wval), 0);
	/* full */
	for (uint32_t i = 0; i < CAW_MAX_LOCKS; i++)
		CU_ASSERT_EQUAL(caw_lock_take(&t, 6, 100 + i, VA, false, 0, 0, 200, LEASE), 0);
	CU_ASSERT_EQUAL(caw_lock_take(&t, 6, 99, VA, false, 0, 0, 200, LEASE), -ENOSPC);
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
 * concurrent calls whose messages arrive one at a time in random order */

#define SIM_NODES 5
#define SIM_CALLS 6

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
	uint64_t value, wval;  /* A == value, then A = wval */
	uint32_t opid;
	uint32_t todo;         /* members the current phase has not reached */
	int votes;             /* AND of the answers, -EBUSY */
};

static struct caw_locks sim_locks[SIM_NODES];
static uint64_t sim_a[SIM_NODES];
static unsigned sim_bad_answer, sim_half_write, sim_commits;

static bool sim_truth(const struct sim_call *c)
{
	for (uint32_t m = 0; m < SIM_NODES; m++)
		if ((c->mask & (1u << m)) && sim_a[m] != c->value)
			return false;
	return true;
}

static void sim_phase(struct sim_call *c, uint32_t *next_opid)
{
	c->todo = c->mask;
	c->votes = 1;
	if (c->sm.state == CAW_PREPARE)
		c->opid = ++*next_opid;
}

/* Delivers one message of call i to member m. */
static void sim_deliver(struct sim_call *c, uint32_t i, uint32_t m, uint32_t *next_opid)
{
	c->todo &= ~(1u << m);
	if (c->sm.state == CAW_PREPARE) {
		int rc = caw_lock_take(&sim_locks[m], i, c->opid, VA, c->sm.writes, VA, c->wval, 0,
				       LEASE);
		if (rc < 0)
			c->votes = -EBUSY;
		else if (c->votes >= 0)
			c->votes = c->votes && sim_a[m] == c->value;
		if (c->todo)
			return;
		struct sn_nodeset none = nodes(0);
		/* every lock is held now: the answer must be true of this instant */
		if (c->votes >= 0 && c->votes != (int)sim_truth(c))
			sim_bad_answer++;
		caw_sm_prepared(&c->sm, c->votes, &none);
		sim_phase(c, next_opid);
		return;
	}
	uint64_t wv, wval;
	if (caw_lock_decide(&sim_locks[m], i, c->opid, c->sm.commit, 0, &wv, &wval) == 1)
		sim_a[m] = wval;
	if (c->todo)
		return;
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
		sim_phase(c, next_opid);
	}
}

static void test_sim(void)
{
	sim_rng = 0x2545f4914f6cdd1dull;
	sim_bad_answer = sim_half_write = sim_commits = 0;
	unsigned busy_answers = 0;
	for (int round = 0; round < 400; round++) {
		memset(sim_locks, 0, sizeof(sim_locks));
		for (int m = 0; m < SIM_NODES; m++)
			sim_a[m] = rnd() % 2;
		struct sim_call calls[SIM_CALLS];
		uint32_t next_opid = 0;
		for (uint32_t i = 0; i < SIM_CALLS; i++) {
			struct sim_call *c = &calls[i];
			memset(c, 0, sizeof(*c));
			/* overlapping sets of 2-3 neighbours, or everyone */
			uint32_t first = (uint32_t)(rnd() % SIM_NODES), len = 2 + (uint32_t)(rnd() % 2);
			for (uint32_t k = 0; k < len; k++)
				c->mask |= 1u << ((first + k) % SIM_NODES);
			if (rnd() % 4 == 0)
				c->mask = (1u << SIM_NODES) - 1;
			c->value = rnd() % 2;
			c->wval = 10 + i;
			struct sn_nodeset set = nodes(c->mask);
			caw_sm_init(&c->sm, &set, rnd() % 3 != 0, 0, UINT64_MAX / 2);
			sim_phase(c, &next_opid);
		}
		for (int step = 0; step < 100000; step++) {
			uint32_t live = 0, pick[SIM_CALLS];
			for (uint32_t i = 0; i < SIM_CALLS; i++)
				if (calls[i].sm.state != CAW_DONE)
					pick[live++] = i;
			if (!live)
				break;
			uint32_t i = pick[rnd() % live];
			struct sim_call *c = &calls[i];
			uint32_t m;
			do
				m = (uint32_t)(rnd() % SIM_NODES);
			while (!(c->todo & (1u << m)));
			sim_deliver(c, i, m, &next_opid);
		}
		for (uint32_t i = 0; i < SIM_CALLS; i++) {
			CU_ASSERT_EQUAL(calls[i].sm.state, CAW_DONE);
			CU_ASSERT_TRUE(calls[i].sm.answered);
			busy_answers += calls[i].sm.status == -EBUSY;
		}
		for (int m = 0; m < SIM_NODES; m++)
			CU_ASSERT_EQUAL(caw_locks_held(&sim_locks[m], 0), 0);
	}
	CU_ASSERT_EQUAL(sim_bad_answer, 0);
	CU_ASSERT_EQUAL(sim_half_write, 0);
	CU_ASSERT_EQUAL(busy_answers, 0); /* conflicts were retried until they passed */
	CU_ASSERT(sim_commits > 100);      /* and the writes did happen */
}

void add_caw_suite(void)
{
	CU_pSuite s = CU_add_suite("compare-and-write", NULL, NULL);
	CU_add_test(s, "which locks conflict", test_conflicts);
	CU_add_test(s, "a member's locks", test_locks);
	CU_add_test(s, "a read: answered, then released", test_sm_read);
	CU_add_test(s, "a write: committed whole, around a dead inner node", test_sm_write);
	CU_add_test(s, "conflicts back off and retry", test_sm_conflict);
	CU_add_test(s, "concurrent calls on overlapping sets: one instant, whole writes",
		    test_sim);
}
