/* COMPARE-AND-WRITE's locks and coordinator state machine (caw.h). */
#include "caw.h"

#include <errno.h>
#include <string.h>

bool caw_conflict(const struct caw_lock *held, uint64_t rvar, bool writes, uint64_t wvar)
{
	if (held->writes && (held->wvar == rvar || (writes && held->wvar == wvar)))
		return true;
	return writes && held->rvar == wvar;
}

static bool live(const struct caw_lock *l, uint64_t now_ns)
{
	return l->used && now_ns < l->lease_ns;
}

static bool is_held(const struct caw_lock *l, uint64_t now_ns)
{
	return live(l, now_ns) && !l->waiting;
}

static int find_decided(const struct caw_locks *t, uint32_t origin, uint32_t opid)
{
	for (unsigned i = 0; i < CAW_DECIDED_RING; i++)
		if (t->decided[i].opid == opid && t->decided[i].origin == origin && opid)
			return (int)i;
	return -1;
}

static void remember(struct caw_locks *t, uint32_t origin, uint32_t opid, bool failed)
{
	t->decided[t->decided_next].origin = origin;
	t->decided[t->decided_next].opid = opid;
	t->decided[t->decided_next].failed = failed;
	t->decided_next = (t->decided_next + 1) % CAW_DECIDED_RING;
}

/* What req must do about a conflicting entry: wait (-EAGAIN) or be refused. */
static int meet(const struct caw_lock *l, const struct caw_req *req)
{
	if (req->at_leader)
		return -EAGAIN; /* holds nothing: its wait closes no cycle */
	if (!l->waiting && l->leader == req->leader)
		return -EAGAIN; /* decided already: its release is on the way */
	if (caw_older(req->ticket, req->origin, l->ticket, l->origin))
		return -EAGAIN; /* older waits for younger */
	return -EBUSY;
}

int caw_lock_take(struct caw_locks *t, const struct caw_req *req, uint64_t now_ns,
		  uint64_t lease_ns)
{
	if (find_decided(t, req->origin, req->opid) >= 0)
		return -EBUSY;
	struct caw_lock *free_slot = NULL, *mine = NULL;
	int rc = 0;
	for (unsigned i = 0; i < CAW_MAX_LOCKS; i++) {
		struct caw_lock *l = &t->l[i];
		if (!live(l, now_ns)) {
			l->used = false; /* a lease that ran out: presumed aborted */
			if (!free_slot)
				free_slot = l;
			continue;
		}
		if (l->origin == req->origin && l->opid == req->opid) {
			if (!l->waiting)
				return 0; /* the same prepare again */
			mine = l;
			continue;
		}
		/* a younger waiter does not hold this one back */
		if (!caw_conflict(l, req->rvar, req->writes, req->wvar) ||
		    (l->waiting && !caw_older(l->ticket, l->origin, req->ticket, req->origin)))
			continue;
		int m = meet(l, req);
		if (m == -EBUSY)
			rc = -EBUSY;
		else if (!rc)
			rc = -EAGAIN;
	}
	if (rc == -EBUSY) {
		if (mine)
			mine->used = false;
		return -EBUSY;
	}
	if (!mine && !free_slot)
		return -ENOSPC;
	if (!mine) {
		mine = free_slot;
		*mine = (struct caw_lock){
			.used = true,
			.writes = req->writes,
			.origin = req->origin,
			.opid = req->opid,
			.ticket = req->ticket,
			.leader = req->leader,
			.rvar = req->rvar,
			.wvar = req->wvar,
			.wval = req->wval,
		};
	}
	mine->lease_ns = now_ns + lease_ns;
	mine->waiting = rc == -EAGAIN;
	return rc;
}

void caw_lock_cancel(struct caw_locks *t, uint32_t origin, uint32_t opid)
{
	for (unsigned i = 0; i < CAW_MAX_LOCKS; i++) {
		struct caw_lock *l = &t->l[i];
		if (l->used && l->waiting && l->origin == origin && l->opid == opid)
			l->used = false;
	}
}

int caw_lock_decide(struct caw_locks *t, uint32_t origin, uint32_t opid, bool commit,
		    uint64_t now_ns, uint64_t *wvar, uint64_t *wval)
{
	for (unsigned i = 0; i < CAW_MAX_LOCKS; i++) {
		struct caw_lock *l = &t->l[i];
		if (!l->used || l->origin != origin || l->opid != opid)
			continue;
		int rc = !commit ? 0 : !live(l, now_ns) || l->waiting ? -ENOENT : l->writes ? 1 : 0;
		l->used = false;
		t->releases++;
		remember(t, origin, opid, rc < 0);
		if (rc == 1) {
			*wvar = l->wvar;
			*wval = l->wval;
		}
		return rc;
	}
	int d = find_decided(t, origin, opid);
	if (d >= 0)
		return commit && t->decided[d].failed ? -ENOENT : 0;
	remember(t, origin, opid, commit);
	return commit ? -ENOENT : 0;
}

unsigned caw_locks_held(const struct caw_locks *t, uint64_t now_ns)
{
	unsigned n = 0;
	for (unsigned i = 0; i < CAW_MAX_LOCKS; i++)
		n += is_held(&t->l[i], now_ns);
	return n;
}

void caw_sm_init(struct caw_sm *c, const struct sn_nodeset *set, bool writes,
		 uint64_t now_ns, uint64_t retry_window_ns)
{
	memset(c, 0, sizeof(*c));
	c->state = CAW_PREPARE;
	c->writes = writes;
	c->set = *set;
	c->retry_window_ns = retry_window_ns;
	c->retry_until_ns = now_ns + retry_window_ns;
}

static void answer(struct caw_sm *c, int status, const struct sn_nodeset *failed)
{
	if (c->answered)
		return;
	c->answered = true;
	c->status = status;
	if (failed)
		c->failed = *failed;
	else
		sn_set_clear(&c->failed);
}

void caw_sm_prepared(struct caw_sm *c, int status, const struct sn_nodeset *unconfirmed)
{
	c->commit = false;
	c->retry = false;
	c->queued = status == -EAGAIN;
	if (!sn_set_empty(unconfirmed))
		answer(c, status < 0 ? status : -ETIMEDOUT, unconfirmed);
	else if (status == -EBUSY || status == -EAGAIN)
		c->retry = true; /* answered after the release, or retried */
	else if (status == 1 && c->writes)
		c->commit = true; /* answered once the members confirm it */
	else
		answer(c, status, NULL);
	c->state = CAW_DECIDE;
}

void caw_sm_decided(struct caw_sm *c, const struct sn_nodeset *unconfirmed, uint64_t now_ns,
		    uint64_t rnd)
{
	if (c->state == CAW_DECIDE && !sn_set_empty(unconfirmed)) {
		c->direct = *unconfirmed;
		c->state = CAW_DECIDE_DIRECT;
		return;
	}
	if (c->commit) {
		c->written = true;
		answer(c, sn_set_empty(unconfirmed) ? 1 : -EHOSTUNREACH, unconfirmed);
	} else if (c->retry && c->queued) {
		/* it waited behind calls that went ahead: its turn comes, at
		 * its place (its priority), so queue again at once */
		c->retry_until_ns = now_ns + c->retry_window_ns;
		c->backoff_until_ns = now_ns;
		c->state = CAW_BACKOFF;
		return;
	} else if (c->retry) {
		/* up to 0.1 ms + 2^attempt ms, random: callers that took each
		 * other's locks do not meet again in step */
		unsigned shift = c->attempt < 6 ? c->attempt : 6;
		uint64_t backoff = 100000 + rnd % ((uint64_t)1000000 << shift);
		if (now_ns + backoff < c->retry_until_ns) {
			c->backoff_until_ns = now_ns + backoff;
			c->state = CAW_BACKOFF;
			return;
		}
		answer(c, -EBUSY, NULL);
	}
	c->state = CAW_DONE;
}

void caw_sm_retry(struct caw_sm *c)
{
	c->attempt++;
	c->state = CAW_PREPARE;
}

void caw_gather_add(struct caw_gather *g, uint64_t sum, uint64_t max)
{
	g->sum = g->sum > UINT64_MAX - sum ? UINT64_MAX : g->sum + sum;
	if (max > g->max)
		g->max = max;
}
