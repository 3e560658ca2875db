/* COMPARE-AND-WRITE's pure parts: the locks a member holds for the
 * operations it prepared, and the state machine of the node that runs a
 * call (its coordinator). No I/O and no clock of its own: caw_net.c
 * carries the messages and passes the time in. docs/design/network.md says
 * why it is built this way; tests/unit/test_caw.c checks it.
 *
 * One call is, at its coordinator: PREPARE (a tree operation: every member
 * locks the variables, evaluates the condition and, for a write, stages the
 * value), then DECIDE (a tree operation that commits the staged write or
 * releases the locks), then, for the members that did not confirm the
 * decision through the tree (a dead inner node cuts its subtree off), the
 * same decision sent to each of them directly.
 *
 * Progress under contention. Every call carries a priority fixed at its
 * start and kept across its retries (caw_older: its start time, then its
 * coordinator's id): a total order. The prepare locks the set's lowest
 * node (its leader) first, holding nothing, so it may wait there whatever
 * it meets. Then the rest: at a member where a conflicting lock is held, an
 * older call waits for a younger holder, a younger one is refused and
 * retries (wait-die: every wait goes from older to younger, so no wait can
 * close a cycle); a holder with the same leader has been decided already
 * (two conflicting calls cannot both hold their leader), so the call waits
 * for that release in flight instead of being refused by it. Waiters are
 * granted oldest first and a younger prepare does not overtake an older
 * waiter it conflicts with. So the oldest call is never refused and waits
 * only for calls that finish or are refused: some call always completes,
 * and every call becomes the oldest in time. A wait that reaches its
 * deadline while locks changed hands queues again at once, at the same
 * place, with a fresh window: a long queue that moves is not a conflict.
 * A random back-off alone did not guarantee any of this: callers on one
 * set were refused by releases still in flight and sent to the back of
 * the queue, until their window ran out. */
#ifndef STORM_CAW_H
#define STORM_CAW_H

#include <stdbool.h>
#include <stdint.h>

#include "nodeset.h"

/* ---- a member's locks */

#define CAW_MAX_LOCKS 64
#define CAW_DECIDED_RING 64

/* One prepare at a member (caw_net.c fills it from the EVAL message). */
struct caw_req {
	uint32_t origin, opid;  /* the coordinator and this attempt's lock id */
	uint64_t ticket;        /* the call's priority, the same in every attempt */
	uint32_t leader;        /* the set's lowest node */
	bool at_leader;         /* prepared there, holding nothing: may always wait */
	bool writes;
	uint64_t rvar, wvar, wval;
};

struct caw_lock {
	bool used, writes;
	bool waiting;          /* queued, not held: caw_lock_take again grants it */
	uint32_t origin, opid; /* the prepare that took it */
	uint64_t ticket;
	uint32_t leader;
	uint64_t rvar, wvar, wval;
	uint64_t lease_ns;     /* released as aborted after this */
};

struct caw_locks {
	struct caw_lock l[CAW_MAX_LOCKS];
	/* prepares decided lately: one that arrives after its decision (the
	 * decision went by another path) must not lock until its lease ends */
	struct {
		uint32_t origin, opid;
		bool failed; /* a commit this member could not apply */
	} decided[CAW_DECIDED_RING];
	unsigned decided_next;
	uint64_t releases;     /* locks released so far: a queue that moved */
};

/* Whether call (ticket a, origin oa) is older than (b, ob): goes first. */
static inline bool caw_older(uint64_t a, uint32_t oa, uint64_t b, uint32_t ob)
{
	return a < b || (a == b && oa < ob);
}

/* Whether a held lock conflicts with an operation reading rvar and, if
 * writes, writing wvar: a writer excludes every reader and writer of its
 * variable; readers share. */
bool caw_conflict(const struct caw_lock *held, uint64_t rvar, bool writes, uint64_t wvar);

/* Prepare req here: 0 locked, -EAGAIN queued (a conflicting lock is held
 * or an older conflicting prepare waits, and req may wait: the queued entry
 * is granted by calling this again once a lock was released), -EBUSY
 * refused (or this prepare was already decided), -ENOSPC (too many held).
 * Expired leases are dropped first. */
int caw_lock_take(struct caw_locks *t, const struct caw_req *req, uint64_t now_ns,
		  uint64_t lease_ns);

/* Drops a queued prepare that stopped waiting (its deadline passed). */
void caw_lock_cancel(struct caw_locks *t, uint32_t origin, uint32_t opid);

/* The decision on prepare (origin, opid): releases its lock. 1 when commit
 * finds a staged write (*wvar = *wval is the caller's to do), 0 when
 * nothing is (more) to be written, -ENOENT when commit finds no lock (never
 * prepared here, or its lease ran out: this member cannot apply it). The
 * same decision again (sent directly after the tree's ACK was lost) gets
 * the first one's answer, without a second write. */
int caw_lock_decide(struct caw_locks *t, uint32_t origin, uint32_t opid, bool commit,
		    uint64_t now_ns, uint64_t *wvar, uint64_t *wval);

/* Locks held, not counting queued prepares (tests and diagnostics). */
unsigned caw_locks_held(const struct caw_locks *t, uint64_t now_ns);

/* ---- a read's gathering: the sum and maximum of a second variable pair

 * A read may name a second pair of variables (sn_caw_gather_start): each
 * member adds its first word into the answer's sum and its second into the
 * answer's maximum, and every inner node combines its children's answers
 * with its own as it does their AND. The sum saturates rather than wraps:
 * a total that cannot be told is better said as the largest than as a
 * small one. */
struct caw_gather {
	uint64_t sum, max;
};

/* Joins one member's (or one subtree's) sum and maximum into g. */
void caw_gather_add(struct caw_gather *g, uint64_t sum, uint64_t max);

/* ---- the coordinator's state machine */

enum caw_state {
	CAW_PREPARE,        /* the prepare tree operation is out */
	CAW_DECIDE,         /* the decision goes down the tree */
	CAW_DECIDE_DIRECT,  /* the decision goes to each unconfirmed member */
	CAW_BACKOFF,        /* released after a conflict: prepare again later */
	CAW_DONE,
};

struct caw_sm {
	enum caw_state state;
	bool writes;
	bool commit;          /* this attempt's decision */
	bool retry;           /* released after a conflict: try again */
	bool queued;          /* ... after waiting in a queue that moved */
	unsigned attempt;     /* 0 for the first prepare */
	struct sn_nodeset set;
	struct sn_nodeset direct; /* CAW_DECIDE_DIRECT: members still to confirm */
	uint64_t retry_window_ns;
	uint64_t retry_until_ns;  /* no new attempt after this, unless it waited
				     in a queue that moved (then one window more) */
	uint64_t backoff_until_ns;
	/* the answer, once answered is set (a read or a false condition is
	 * answered after the prepare, before the locks are released) */
	bool answered;
	int status;              /* 1, 0 or -errno */
	bool written;            /* the write was committed */
	struct sn_nodeset failed;
};

void caw_sm_init(struct caw_sm *c, const struct sn_nodeset *set, bool writes,
		 uint64_t now_ns, uint64_t retry_window_ns);
/* The prepare finished: status is the AND of the conditions (1/0) or a
 * negative errno (-EBUSY: a conflict; -EAGAIN: it waited for a lock to its
 * deadline while others went ahead), unconfirmed the members that did not
 * answer. Moves to CAW_DECIDE. */
void caw_sm_prepared(struct caw_sm *c, int status, const struct sn_nodeset *unconfirmed);
/* The decision's tree operation (or, in CAW_DECIDE_DIRECT, the direct
 * sends) finished with unconfirmed members. Moves to CAW_DECIDE_DIRECT,
 * CAW_BACKOFF (rnd: a random number, for the back-off) or CAW_DONE. */
void caw_sm_decided(struct caw_sm *c, const struct sn_nodeset *unconfirmed, uint64_t now_ns,
		    uint64_t rnd);
/* The back-off is over: a new attempt prepares. */
void caw_sm_retry(struct caw_sm *c);

#endif
