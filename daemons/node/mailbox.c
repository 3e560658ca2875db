/* The node-to-node mailboxes: the one way a node daemon sends another
 * anything. Each node has GM_BCS_SLOTS slots per peer in its global memory
 * (common/layout.h); a sender numbers its messages to a peer, XFERs each
 * into the slot its number names and tags it with the cluster key, bound to
 * the sending node; it keeps at most a window of GM_BCS_SLOTS unacknowledged
 * and queues the rest. The receiver consumes them in order, checks each tag,
 * hands the body to the handler its clients registered for the type
 * (nd_mb_register: BCS-MPI in bcs.c, checkpoint copies in ckpt_copy.c), and
 * acknowledges by writing how far it got into the sender's memory. A peer
 * that restarted (a new incarnation) has its stream taken up again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "nd.h"

#define MB_MAGIC 0x3153434bu

struct mb_hdr {
	uint32_t magic;
	uint32_t seq;
	uint32_t type;
	uint32_t len;   /* body bytes after the header */
	uint64_t inc;   /* the sending daemon's incarnation (its start time) */
	uint64_t job;
	uint64_t arg;   /* the client's */
};

struct omsg {
	struct omsg *next;
	uint32_t to;
	size_t len;
	uint8_t data[];
};

struct outbox {
	uint32_t sent;    /* messages written to the peer */
	struct omsg *head, *tail;
	/* wall clock of each message in the window when written, by seq %
	 * GM_BCS_SLOTS: which of them a peer that started later never saw */
	uint64_t sent_at[GM_BCS_SLOTS];
};

struct nd_mb {
	uint32_t nnodes, self;
	size_t max_msg;                /* header and body, without the tag */
	struct outbox *out;            /* per peer */
	uint32_t *consumed, *unacked;  /* per source node */
	uint64_t inc;                  /* this daemon's incarnation */
	uint64_t *peer_inc;            /* per source node: its incarnation, 0: unknown */
	struct gm_ratelimit forged_log;
	nd_mb_handler handlers[ND_MB_TYPES];
	struct gm_copy copy;           /* a message verified, then handled (gm_copy) */
};

/* an incarnation is its daemon's start on this clock */
static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int nd_mb_init(struct nd *nd, size_t chunk_size)
{
	struct nd_mb *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	m->nnodes = (uint32_t)nd->conf.nnodes;
	m->self = nd->index;
	/* a message and its tag fit one slot and one network chunk */
	m->max_msg = (chunk_size < GM_BCS_SLOT_SIZE ? chunk_size : GM_BCS_SLOT_SIZE) - GM_TAG_LEN;
	m->out = calloc(m->nnodes, sizeof(*m->out));
	m->consumed = calloc(m->nnodes, sizeof(*m->consumed));
	m->unacked = calloc(m->nnodes, sizeof(*m->unacked));
	m->peer_inc = calloc(m->nnodes, sizeof(*m->peer_inc));
	m->inc = wall_ns();
	nd->mb = m;
	if (!m->out || !m->consumed || !m->unacked || !m->peer_inc) {
		nd_mb_close(nd);
		return -1;
	}
	return 0;
}

void nd_mb_close(struct nd *nd)
{
	struct nd_mb *m = nd->mb;
	if (!m)
		return;
	for (uint32_t i = 0; m->out && i < m->nnodes; i++)
		for (struct omsg *o = m->out[i].head, *n; o; o = n) {
			n = o->next;
			free(o);
		}
	free(m->out);
	gm_copy_free(&m->copy);
	free(m->consumed);
	free(m->unacked);
	free(m->peer_inc);
	free(m);
	nd->mb = NULL;
}

void nd_mb_register(struct nd *nd, uint32_t type, nd_mb_handler h)
{
	if (type < ND_MB_TYPES)
		nd->mb->handlers[type] = h;
}

size_t nd_mb_body_max(const struct nd *nd) { return nd->mb->max_msg - sizeof(struct mb_hdr); }

static void xfer_one(struct nd *nd, struct omsg *o)
{
	struct nd_mb *m = nd->mb;
	struct mb_hdr *h = (struct mb_hdr *)o->data;
	struct sn_nodeset to;
	sn_set_clear(&to);
	sn_set_add(&to, fabric_id(o->to));
	uint64_t off = gm_bcs_slot(m->nnodes, m->self, h->seq % GM_BCS_SLOTS);
	/* the tag covers the numbered header and the body, bound to this node */
	gm_mac(nd->key, GM_MAC_BCS, m->self, o->data, o->len, o->data + o->len);
	int rc = sn_xfer(nd->sn, &to, off, o->data, o->len + GM_TAG_LEN, SN_NO_EVENT, EV_BCS, 0);
	if (rc < 0)
		slog("mailbox: message to node %u lost: %s", o->to, sn_strerror(nd->sn));
}

/* Sends what the peer's window takes. Not before its fabric address is
 * known (a daemon serves, and may be given a job, before the machine
 * manager's table has every peer): a transfer to it would fail after the
 * message took its number, and the peer would wait for that number for
 * good (the stream never resends). */
static void flush(struct nd *nd, uint32_t to)
{
	struct nd_mb *m = nd->mb;
	struct outbox *ob = &m->out[to];
	if (!sn_peer_known(nd->sn, fabric_id(to)))
		return;
	uint64_t acked = sn_var_load(nd->sn, gm_bcs_ack(m->nnodes, to));
	while (ob->head && ob->sent - (uint32_t)acked < GM_BCS_SLOTS) {
		struct omsg *o = ob->head;
		ob->head = o->next;
		if (!ob->head)
			ob->tail = NULL;
		((struct mb_hdr *)o->data)->seq = ++ob->sent;
		ob->sent_at[ob->sent % GM_BCS_SLOTS] = wall_ns();
		xfer_one(nd, o);
		free(o);
	}
}

void nd_mb_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t arg,
		const struct iovec *parts, int nparts)
{
	struct nd_mb *m = nd->mb;
	size_t len = 0;
	for (int i = 0; i < nparts; i++)
		len += parts[i].iov_len;
	struct omsg *o = malloc(sizeof(*o) + sizeof(struct mb_hdr) + len + GM_TAG_LEN);
	if (!o)
		abort(); /* a lost message would stall its job for good */
	o->next = NULL;
	o->to = to;
	o->len = sizeof(struct mb_hdr) + len;
	struct mb_hdr h = {.magic = MB_MAGIC, .type = type, .len = (uint32_t)len, .inc = m->inc,
			   .job = job, .arg = arg};
	memcpy(o->data, &h, sizeof(h));
	size_t at = sizeof(h);
	for (int i = 0; i < nparts; i++) {
		if (parts[i].iov_len)
			memcpy(o->data + at, parts[i].iov_base, parts[i].iov_len);
		at += parts[i].iov_len;
	}
	if (type < ND_MB_TYPES)
		nd->mb_sent_bytes[type] += len;
	struct outbox *ob = &m->out[to];
	if (ob->tail)
		ob->tail->next = o;
	else
		ob->head = o;
	ob->tail = o;
	flush(nd, to);
}

uint32_t nd_mb_backlog(const struct nd *nd, uint32_t to)
{
	const struct nd_mb *m = nd->mb;
	uint32_t n = m->out[to].sent - (uint32_t)sn_var_load(nd->sn, gm_bcs_ack(m->nnodes, to));
	for (const struct omsg *o = m->out[to].head; o; o = o->next)
		n++;
	return n;
}

void nd_mb_dump(const struct nd *nd)
{
	const struct nd_mb *m = nd->mb;
	for (uint32_t p = 0; p < m->nnodes; p++) {
		const struct outbox *ob = &m->out[p];
		uint32_t queued = 0;
		for (const struct omsg *o = ob->head; o; o = o->next)
			queued++;
		if (!ob->sent && !queued && !m->consumed[p])
			continue;
		slog("  mailbox with node %u: sent %u, acknowledged %u, %u queued; consumed %u, "
		     "%u unacknowledged", p, ob->sent,
		     (uint32_t)sn_var_load(nd->sn, gm_bcs_ack(m->nnodes, p)), queued,
		     m->consumed[p], m->unacked[p]);
	}
}

static void ack(struct nd *nd, uint32_t from)
{
	struct nd_mb *m = nd->mb;
	/* an ack the fabric could not deliver yet is written at a later strobe */
	if (!m->unacked[from] || !sn_peer_known(nd->sn, fabric_id(from)))
		return;
	m->unacked[from] = 0;
	uint64_t v = m->consumed[from];
	struct sn_nodeset to;
	sn_set_clear(&to);
	sn_set_add(&to, fabric_id(from));
	if (sn_xfer(nd->sn, &to, gm_bcs_ack(m->nnodes, m->self), &v, 8, SN_NO_EVENT, EV_BCS, 0) < 0)
		slog("mailbox: ack to node %u lost: %s", from, sn_strerror(nd->sn));
}

void nd_mb_strobe(struct nd *nd)
{
	if (!nd->mb)
		return;
	for (uint32_t from = 0; from < nd->mb->nnodes; from++) {
		ack(nd, from);
		if (nd->mb->out[from].head)
			flush(nd, from); /* held while the peer's address was not known */
	}
}

/* If the slot holds a message from node `from` with its tag: a private copy
 * of it, verified there and to be used from there (gm_copy), with *h read
 * again from the copy; else NULL. */
static const uint8_t *genuine(struct nd *nd, uint32_t from, const uint8_t *slot,
			      struct mb_hdr *h)
{
	if (h->len > nd->mb->max_msg - sizeof(*h))
		return NULL;
	size_t len = sizeof(*h) + h->len;
	const uint8_t *c = gm_copy(&nd->mb->copy, slot, len + GM_TAG_LEN);
	if (!c)
		return NULL;
	uint32_t sent_len = h->len;
	memcpy(h, c, sizeof(*h));
	/* the length the tag is checked over is the one the copy holds */
	if (h->len != sent_len || !gm_mac_ok(nd->key, GM_MAC_BCS, from, c, len, c + len))
		return NULL;
	return c;
}

/* A peer daemon we do not know (we started after it) or that restarted
 * (a new incarnation) numbers its messages from where it is: take its stream
 * from the oldest message in the mailbox. Of our window towards it, the
 * messages written before it started are lost with its old jobs: counted as
 * acknowledged, so the window moves on. Those written since may still be on
 * their way or unread in its slots and stay unacknowledged: counting them
 * too (the whole window, at every first contact) let the next ones
 * overwrite them, and the peer waited for a sequence number that was gone
 * (its job stalled with every daemon busy: most first jobs on 16 nodes). */
static void resync(struct nd *nd, uint32_t from)
{
	struct nd_mb *m = nd->mb;
	uint32_t best = 0;
	uint64_t inc = 0;
	for (uint32_t k = 0; k < GM_BCS_SLOTS; k++) {
		const uint8_t *slot = nd->gmem + gm_bcs_slot(m->nnodes, from, k);
		struct mb_hdr h;
		memcpy(&h, slot, sizeof(h));
		if (h.magic != MB_MAGIC || h.inc == 0 || h.inc == m->peer_inc[from] ||
		    h.seq % GM_BCS_SLOTS != k || !genuine(nd, from, slot, &h))
			continue;
		if (!inc || h.inc > inc || (h.inc == inc && h.seq < best)) {
			inc = h.inc;
			best = h.seq;
		}
	}
	if (!inc)
		return;
	if (m->peer_inc[from])
		slog("mailbox: node %u restarted; taking up its messages from %u", from, best);
	m->peer_inc[from] = inc;
	m->consumed[from] = best - 1;
	struct outbox *ob = &m->out[from];
	uint32_t acked = (uint32_t)sn_var_load(nd->sn, gm_bcs_ack(m->nnodes, from)), lost = acked;
	while (lost != ob->sent && ob->sent - lost <= GM_BCS_SLOTS &&
	       ob->sent_at[(lost + 1) % GM_BCS_SLOTS] < inc)
		lost++;
	/* more than a window unacknowledged: the count is an old incarnation's */
	if (ob->sent - acked > GM_BCS_SLOTS)
		lost = ob->sent;
	if (lost != acked)
		sn_var_store(nd->sn, gm_bcs_ack(m->nnodes, from), lost);
}

void nd_mb_arrived(struct nd *nd)
{
	struct nd_mb *m = nd->mb;
	if (!m)
		return;
	for (uint32_t from = 0; from < m->nnodes; from++) {
		if (from == m->self)
			continue;
		/* a new stream starts at message 1, in slot 1 */
		struct mb_hdr h1;
		memcpy(&h1, nd->gmem + gm_bcs_slot(m->nnodes, from, 1 % GM_BCS_SLOTS), sizeof(h1));
		if (!m->peer_inc[from] || (h1.magic == MB_MAGIC && h1.inc && h1.inc != m->peer_inc[from]))
			resync(nd, from);
		for (;;) {
			uint32_t want = m->consumed[from] + 1;
			const uint8_t *slot = nd->gmem + gm_bcs_slot(m->nnodes, from, want % GM_BCS_SLOTS);
			struct mb_hdr h;
			memcpy(&h, slot, sizeof(h));
			if (h.magic != MB_MAGIC || h.seq != want)
				break;
			const uint8_t *msg = genuine(nd, from, slot, &h);
			if (!msg || h.magic != MB_MAGIC || h.seq != want) {
				/* forged or torn: wait for the sender's genuine message */
				unsigned held = 0;
				if (gm_ratelimit_ok(&m->forged_log, (double)clock_mono_ns() / 1e9, &held))
					slog("mailbox: message %u from node %u is not authentic; "
					     "ignored (%u more held back)", want, from, held);
				break;
			}
			nd_mb_handler fn = h.type < ND_MB_TYPES ? m->handlers[h.type] : NULL;
			if (fn)
				fn(nd, from, h.type, h.job, h.arg, msg + sizeof(h), h.len);
			m->consumed[from] = want;
			if (++m->unacked[from] >= GM_BCS_SLOTS / 2)
				ack(nd, from);
		}
		if (m->out[from].head)
			flush(nd, from);
	}
}
