/* A job's allgather across its nodes, for the PMI servers' fences: each
 * node's bytes go up a binary tree of the job's nodes (position p's parent
 * is (p-1)/2), the first node puts them in node order and sends the whole
 * down the same tree. Every node then holds every node's bytes: the down
 * message is the proof that the exchange is complete everywhere above,
 * so no separate completion check is needed. Messages ride the mailboxes
 * (XFER-AND-SIGNAL into the peer's global memory), split to their size. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "pmi.h"

#define XCHG_DEAD 64

/* bytes arriving from one peer for one exchange, in order */
struct xin {
	uint32_t from;
	bool down;
	uint8_t *buf;
	size_t total, got;
	struct xin *next;
};

struct xep {
	uint64_t no;
	bool started, sent_up;
	uint8_t *mine;
	size_t mine_len;
	xchg_done_fn done;
	void *arg;
	struct xin *in;
	struct xep *next;
};

struct xjob {
	uint64_t id;
	uint32_t *nodes, n, pos; /* n 0: not launched here yet */
	uint64_t next_no;        /* the next xchg_start's number */
	struct xep *eps;
	struct xjob *next;
};

struct nd_xchg {
	struct xjob *jobs;
	uint64_t dead[XCHG_DEAD];
	unsigned ndead;
};

struct xfrag {
	uint64_t total, off;
};

static struct xjob *job_get(struct nd *nd, uint64_t id, bool make)
{
	struct nd_xchg *x = nd->xchg;
	for (struct xjob *j = x->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	if (!make)
		return NULL;
	for (unsigned i = 0; i < XCHG_DEAD; i++)
		if (x->dead[i] == id)
			return NULL; /* a straggler of an ended job */
	struct xjob *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->id = id;
	j->next = x->jobs;
	x->jobs = j;
	return j;
}

static struct xep *ep_get(struct xjob *j, uint64_t no, bool make)
{
	for (struct xep *e = j->eps; e; e = e->next)
		if (e->no == no)
			return e;
	if (!make)
		return NULL;
	struct xep *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->no = no;
	e->next = j->eps;
	j->eps = e;
	return e;
}

static void ep_free(struct xjob *j, struct xep *e)
{
	for (struct xep **p = &j->eps; *p; p = &(*p)->next)
		if (*p == e) {
			*p = e->next;
			break;
		}
	while (e->in) {
		struct xin *i = e->in;
		e->in = i->next;
		free(i->buf);
		free(i);
	}
	free(e->mine);
	free(e);
}

static struct xin *in_done(struct xep *e, uint32_t from, bool down)
{
	for (struct xin *i = e->in; i; i = i->next)
		if (i->from == from && i->down == down && i->buf && i->got == i->total)
			return i;
	return NULL;
}

static void send_bytes(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t no,
		       const uint8_t *b, size_t len)
{
	size_t room = nd_mb_body_max(nd) - sizeof(struct xfrag);
	size_t off = 0;
	do {
		size_t n = len - off < room ? len - off : room;
		struct xfrag f = {.total = len, .off = off};
		struct iovec parts[2] = {{&f, sizeof(f)}, {(void *)(b + off), n}};
		nd_mb_send(nd, to, type, job, no, parts, 2);
		off += n;
	} while (off < len);
}

static int rec_append(uint8_t **buf, size_t *len, uint32_t pos, const uint8_t *d, uint32_t dl)
{
	uint8_t *b = realloc(*buf, *len + 8 + dl);
	if (!b)
		return -ENOMEM;
	uint32_t h[2] = {pos, dl};
	memcpy(b + *len, h, 8);
	if (dl)
		memcpy(b + *len + 8, d, dl);
	*buf = b;
	*len += 8 + dl;
	return 0;
}

static void finish(struct nd *nd, struct xjob *j, struct xep *e, const uint8_t *all, size_t len)
{
	for (int c = 1; c <= 2; c++) {
		uint32_t kid = 2 * j->pos + (uint32_t)c;
		if (kid < j->n)
			send_bytes(nd, j->nodes[kid], M_XCHG_DOWN, j->id, e->no, all, len);
	}
	xchg_done_fn done = e->done;
	void *arg = e->arg;
	uint8_t *copy = malloc(len ? len : 1);
	if (copy)
		memcpy(copy, all, len);
	uint64_t id = j->id;
	ep_free(j, e); /* before the callback, which may start the next one */
	if (copy)
		done(nd, id, 0, copy, len, arg);
	else
		done(nd, id, -ENOMEM, NULL, 0, arg);
	free(copy);
}

/* Moves exchange e on as far as what has arrived allows. */
static void advance(struct nd *nd, struct xjob *j, struct xep *e)
{
	if (!j->n || !e->started)
		return;
	if (!e->sent_up) {
		uint8_t *acc = NULL;
		size_t acc_len = 0;
		for (int c = 1; c <= 2; c++) {
			uint32_t kid = 2 * j->pos + (uint32_t)c;
			if (kid < j->n && !in_done(e, j->nodes[kid], false))
				return;
		}
		if (rec_append(&acc, &acc_len, j->pos, e->mine, (uint32_t)e->mine_len) < 0)
			goto nomem;
		for (int c = 1; c <= 2; c++) {
			uint32_t kid = 2 * j->pos + (uint32_t)c;
			struct xin *i = kid < j->n ? in_done(e, j->nodes[kid], false) : NULL;
			if (!i)
				continue;
			uint8_t *b = realloc(acc, acc_len + i->total);
			if (!b) {
				free(acc);
				goto nomem;
			}
			acc = b;
			memcpy(acc + acc_len, i->buf, i->total);
			acc_len += i->total;
		}
		e->sent_up = true;
		if (j->pos > 0) {
			send_bytes(nd, j->nodes[(j->pos - 1) / 2], M_XCHG_UP, j->id, e->no, acc,
				   acc_len);
			free(acc);
		} else {
			/* the root: every node's record, put in node order */
			const uint8_t **d = calloc(j->n, sizeof(*d));
			uint32_t *dl = calloc(j->n, sizeof(*dl));
			uint8_t *all = NULL;
			size_t all_len = 0, off = 0;
			uint32_t pos, l;
			const uint8_t *p;
			bool ok = d && dl;
			while (ok && pmi_xrec_next(acc, acc_len, &off, &pos, &p, &l) == 1)
				if (pos < j->n) {
					d[pos] = p;
					dl[pos] = l;
				}
			for (uint32_t k = 0; ok && k < j->n; k++)
				ok = d[k] && rec_append(&all, &all_len, k, d[k], dl[k]) == 0;
			free(d);
			free(dl);
			free(acc);
			if (!ok) {
				free(all);
				goto nomem;
			}
			finish(nd, j, e, all, all_len);
			free(all);
		}
		return;
	}
	if (j->pos > 0) {
		struct xin *i = in_done(e, j->nodes[(j->pos - 1) / 2], true);
		if (i) {
			uint8_t *all = i->buf;
			size_t len = i->total;
			i->buf = NULL; /* ours now: ep_free goes on in finish */
			finish(nd, j, e, all, len);
			free(all);
		}
	}
	return;
nomem:
	slog("job %" PRIu64 ": out of memory in exchange %" PRIu64 "; ending its ranks here", j->id,
	     e->no);
	xchg_done_fn done = e->done;
	void *arg = e->arg;
	ep_free(j, e);
	done(nd, j->id, -ENOMEM, NULL, 0, arg);
}

static void on_frag(struct nd *nd, uint32_t from, uint32_t type, uint64_t job, uint64_t no,
		    const uint8_t *body, size_t len)
{
	struct xfrag f;
	if (len < sizeof(f))
		return;
	memcpy(&f, body, sizeof(f));
	size_t n = len - sizeof(f);
	if (f.total > (1ull << 30) || f.off > f.total || n > f.total - f.off) {
		slog("exchange message from node %u for job %" PRIu64 " is malformed; dropped", from,
		     job);
		return;
	}
	struct xjob *j = job_get(nd, job, true);
	struct xep *e = j ? ep_get(j, no, true) : NULL;
	if (!e)
		return;
	bool down = type == M_XCHG_DOWN;
	struct xin *i = NULL;
	for (struct xin *k = e->in; k; k = k->next)
		if (k->from == from && k->down == down)
			i = k;
	if (!i) {
		i = calloc(1, sizeof(*i));
		if (!i || !(i->buf = malloc(f.total ? f.total : 1))) {
			free(i);
			return;
		}
		i->from = from;
		i->down = down;
		i->total = f.total;
		i->next = e->in;
		e->in = i;
	}
	if (!i->buf || f.total != i->total || f.off != i->got)
		return; /* the mailboxes deliver in order; anything else is stale */
	memcpy(i->buf + f.off, body + sizeof(f), n);
	i->got += n;
	if (i->got == i->total)
		advance(nd, j, e);
}

static void on_abort(struct nd *nd, uint32_t from, uint32_t type, uint64_t job, uint64_t arg,
		     const uint8_t *body, size_t len)
{
	(void)type;
	(void)body;
	(void)len;
	for (struct nd_job *jb = nd->jobs; jb; jb = jb->next)
		if (jb->id == job && jb->pgid > 0) {
			slog("job %" PRIu64 ": rank %u aborted it (node %u); killing its ranks here",
			     job, (uint32_t)(arg >> 32), from);
			killpg(jb->pgid, SIGKILL);
		}
}

static void on_message(struct nd *nd, uint32_t from, uint32_t type, uint64_t job, uint64_t arg,
		       const uint8_t *body, size_t len)
{
	if (type == M_PMI_ABORT)
		on_abort(nd, from, type, job, arg, body, len);
	else
		on_frag(nd, from, type, job, arg, body, len);
}

int xchg_init(struct nd *nd)
{
	nd->xchg = calloc(1, sizeof(*nd->xchg));
	if (!nd->xchg)
		return -ENOMEM;
	nd_mb_register(nd, M_XCHG_UP, on_message);
	nd_mb_register(nd, M_XCHG_DOWN, on_message);
	nd_mb_register(nd, M_PMI_ABORT, on_message);
	return 0;
}

static void job_free(struct xjob *j)
{
	while (j->eps)
		ep_free(j, j->eps);
	free(j->nodes);
	free(j);
}

void xchg_close(struct nd *nd)
{
	if (!nd->xchg)
		return;
	while (nd->xchg->jobs) {
		struct xjob *j = nd->xchg->jobs;
		nd->xchg->jobs = j->next;
		job_free(j);
	}
	free(nd->xchg);
	nd->xchg = NULL;
}

int xchg_job(struct nd *nd, uint64_t job, const uint32_t *nodes, uint32_t n)
{
	struct xjob *j = job_get(nd, job, true);
	if (!j)
		return -ENOMEM;
	free(j->nodes);
	j->nodes = malloc(n * sizeof(*nodes));
	if (!j->nodes)
		return -ENOMEM;
	memcpy(j->nodes, nodes, n * sizeof(*nodes));
	j->n = n;
	j->pos = 0;
	for (uint32_t k = 0; k < n; k++)
		if (nodes[k] == nd->index)
			j->pos = k;
	return 0;
}

int xchg_job_launch(struct nd *nd, uint64_t job, const Storm__Cl__Command *cmd)
{
	const Storm__Cl__Launch *L = cmd->launch;
	uint32_t *with = calloc(cmd->n_nodes ? cmd->n_nodes : 1, sizeof(*with)), n = 0;
	if (!with)
		return -ENOMEM;
	for (size_t i = 0; i < cmd->n_nodes && i < L->n_rank_count; i++)
		if (L->rank_count[i])
			with[n++] = cmd->nodes[i];
	int rc = xchg_job(nd, job, with, n);
	free(with);
	return rc;
}

int xchg_start(struct nd *nd, uint64_t job, const void *mine, size_t len, xchg_done_fn done,
	       void *arg)
{
	struct xjob *j = job_get(nd, job, false);
	if (!j || !j->n)
		return -ENOENT;
	struct xep *e = ep_get(j, j->next_no, true);
	if (!e)
		return -ENOMEM;
	e->mine = malloc(len ? len : 1);
	if (!e->mine) {
		ep_free(j, e);
		return -ENOMEM;
	}
	memcpy(e->mine, mine, len);
	e->mine_len = len;
	e->done = done;
	e->arg = arg;
	e->started = true;
	j->next_no++;
	advance(nd, j, e);
	return 0;
}

void xchg_abort(struct nd *nd, uint64_t job, uint32_t rank, int code)
{
	struct xjob *j = job_get(nd, job, false);
	if (!j)
		return;
	if (fault_armed(&nd->fault) && fault_value(&nd->fault, "abort_hold_code") == (uint64_t)(code & 255)) {
		slog("test point abort_hold_code: rank %u's abort (exit code %d) of job %" PRIu64
		     " is told to no other node", rank, code & 255, job);
		return;
	}
	for (uint32_t k = 0; k < j->n; k++)
		if (j->nodes[k] != nd->index)
			nd_mb_send(nd, j->nodes[k], M_PMI_ABORT, job,
				   (uint64_t)rank << 32 | (uint32_t)(code & 255), NULL, 0);
}

void xchg_dump(const struct nd *nd)
{
	for (const struct xjob *j = nd->xchg->jobs; j; j = j->next) {
		slog("  exchange of job %" PRIu64 ": %u nodes, this one at %u, next %" PRIu64, j->id,
		     j->n, j->pos, j->next_no);
		for (const struct xep *e = j->eps; e; e = e->next) {
			char in[160] = "";
			size_t at = 0;
			for (const struct xin *i = e->in; i && at + 40 < sizeof(in); i = i->next)
				at += (size_t)snprintf(in + at, sizeof(in) - at, " %s from %u %zu/%zu",
						       i->down ? "down" : "up", i->from, i->got,
						       i->total);
			slog("    number %" PRIu64 ": %s, %s; has%s", e->no,
			     e->started ? "started here" : "not started here",
			     e->sent_up ? "sent up" : "not sent up", at ? in : " nothing");
		}
	}
}

void xchg_job_end(struct nd *nd, uint64_t job)
{
	struct nd_xchg *x = nd->xchg;
	for (struct xjob **p = &x->jobs; *p; p = &(*p)->next)
		if ((*p)->id == job) {
			struct xjob *j = *p;
			*p = j->next;
			/* a fence still waiting hears that it never completes */
			while (j->eps) {
				struct xep *e = j->eps;
				xchg_done_fn done = e->done;
				void *arg = e->arg;
				bool started = e->started;
				ep_free(j, e);
				if (started && done)
					done(nd, job, -ECANCELED, NULL, 0, arg);
			}
			job_free(j);
			break;
		}
	x->dead[x->ndead++ % XCHG_DEAD] = job;
}
