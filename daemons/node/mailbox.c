/* The node-to-node mailboxes: the one way a node daemon sends another
 * anything. Each node has GM_BCS_SLOTS slots per peer in its global memory
 * (common/layout.h); a sender numbers its messages to a peer, XFERs each
 * into the slot its number names and tags it with the cluster key, bound to
 * the sending node; it keeps at most a window of GM_BCS_SLOTS unacknowledged
 * and queues the rest. The receiver consumes them in order, checks each tag,
 * hands the body to the handler its clients registered for the type
 * (nd_mb_register: BCS-MPI in bcs.c, PMI exchanges in pmi_xchg.c,
 * checkpoint copies in ckpt_copy.c), and acknowledges by writing how far it
 * got into the sender's memory.
 *
 * No message is lost for good: the XFERs have no delivery report (a
 * message the provider dropped, or failed after its own retries, leaves no
 * trace here), so the sender keeps each message until its ack and sends
 * the whole unacknowledged window again when none came within a timeout
 * (backing off to a few seconds) or a transfer failed at once. Slots make
 * a resend idempotent: a copy lands where the first one did. The receiver
 * delivers only the next number; a copy of the last one it delivered
 * (a resend whose ack was lost) makes it acknowledge again. The numbers'
 * bookkeeping is mbox_seq.c. A peer that restarted (a new incarnation)
 * has its stream taken up again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "layout.h"
#include "mbox_seq.h"
#include "nd.h"

#define MB_MAGIC 0x3153434bu
_Static_assert(MBS_WINDOW == GM_BCS_SLOTS, "a stream's window is its slots");

struct mb_hdr {
	uint32_t magic;
	uint32_t seq;
	uint32_t type;
	uint32_t len;   /* body bytes after the header */
	uint64_t inc;   /* the sending daemon's incarnation (its start time) */
	uint64_t job;
	uint64_t arg;   /* the client's */
	uint32_t xmit;  /* 0: first transmission, then each resend's number */
	uint32_t pad;
};

struct omsg {
	struct omsg *next;
	uint32_t to;
	uint32_t xmit;  /* transmissions so far */
	size_t len;
	uint8_t data[];
};

struct outbox {
	struct mbs_out seq;
	struct omsg *win[GM_BCS_SLOTS]; /* numbered, unacknowledged: by seq % slots */
	struct omsg *head, *tail;       /* waiting for a number */
	/* wall clock of each message in the window when first written, by seq
	 * % GM_BCS_SLOTS: which of them a peer that started later never saw */
	uint64_t sent_at[GM_BCS_SLOTS];
};

struct nd_mb {
	uint32_t nnodes, self;
	size_t max_msg;                /* header and body, without the tag */
	struct outbox *out;            /* per peer */
	struct mbs_in *in;             /* per source node */
	uint64_t inc;                  /* this daemon's incarnation */
	uint64_t *peer_inc;            /* per source node: its incarnation, 0: unknown */
	uint64_t first_xmits, acks_out; /* for the test hooks */
	struct gm_ratelimit forged_log, resend_log, fail_log, hook_log;
	nd_mb_handler handlers[ND_MB_TYPES];
	struct gm_copy copy;           /* a message verified, then handled (gm_copy) */
};

/* a message's first sending, on the clock of incarnations (a peer's
 * start): which messages a peer that started later never saw */
static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An ack word is the count in its low half and, in its high half, the
 * incarnation of the stream it counts (31 bits: a count that a peer wrote
 * for an earlier daemon here, which it has not noticed restarted, is not
 * ours) and the gap flag: the next message is missing while later ones are
 * there. */
#define ACK_GAP (1ull << 63)
static uint32_t inc_tag(uint64_t inc)
{
	return (uint32_t)(inc ^ (inc >> 32)) & 0x7fffffffu;
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
	m->in = calloc(m->nnodes, sizeof(*m->in));
	m->peer_inc = calloc(m->nnodes, sizeof(*m->peer_inc));
	m->inc = nd->incarnation;
	nd->mb = m;
	if (!m->out || !m->in || !m->peer_inc) {
		nd_mb_close(nd);
		return -1;
	}
	return 0;
}

static void free_list(struct omsg *o)
{
	for (struct omsg *n; o; o = n) {
		n = o->next;
		free(o);
	}
}

void nd_mb_close(struct nd *nd)
{
	struct nd_mb *m = nd->mb;
	if (!m)
		return;
	for (uint32_t i = 0; m->out && i < m->nnodes; i++) {
		free_list(m->out[i].head);
		for (unsigned k = 0; k < GM_BCS_SLOTS; k++)
			free(m->out[i].win[k]);
	}
	free(m->out);
	gm_copy_free(&m->copy);
	free(m->in);
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

/* test hook mb_drop_every=N: every Nth message's first transmission from
 * this node is not made, as if the provider had lost it for good */
static bool hook_drop(struct nd *nd, const struct omsg *o)
{
	struct nd_mb *m = nd->mb;
	uint64_t every = fault_value(&nd->fault, "mb_drop_every");
	if (!every || o->xmit || ++m->first_xmits % every)
		return false;
	slog_limited(&m->hook_log, "test hook: mailbox message %u to node %u dropped",
		     ((const struct mb_hdr *)o->data)->seq, o->to);
	return true;
}

/* One transmission of a numbered message; a failure is the resend's. */
static void xfer_one(struct nd *nd, struct omsg *o)
{
	struct nd_mb *m = nd->mb;
	struct mb_hdr *h = (struct mb_hdr *)o->data;
	struct sn_nodeset to;
	sn_set_clear(&to);
	sn_set_add(&to, fabric_id(o->to));
	uint64_t off = gm_bcs_slot(m->nnodes, m->self, h->seq % GM_BCS_SLOTS);
	bool drop = hook_drop(nd, o);
	h->xmit = o->xmit++;
	/* the tag covers the numbered header and the body, bound to this node */
	gm_mac(nd->key, GM_MAC_BCS, m->self, o->data, o->len, o->data + o->len);
	if (drop)
		return;
	if (sn_xfer(nd->sn, &to, off, o->data, o->len + GM_TAG_LEN, SN_NO_EVENT, EV_BCS, 0) < 0) {
		slog_limited(&m->fail_log, "mailbox: message %u to node %u not sent (sent again "
			     "later): %s", h->seq, o->to, sn_strerror(nd->sn));
		mbs_send_failed(&m->out[o->to].seq, clock_mono_ns());
	}
}

/* The peer consumed 1..ack: the messages that frees go (none for an old
 * or impossible count, mbs_ack). */
static void free_acked(struct outbox *ob, uint32_t ack)
{
	uint32_t from = ob->seq.acked;
	if (!mbs_ack(&ob->seq, ack, clock_mono_ns()))
		return;
	for (uint32_t s = from + 1; s != ack + 1; s++) {
		free(ob->win[s % GM_BCS_SLOTS]);
		ob->win[s % GM_BCS_SLOTS] = NULL;
	}
}

/* Frees what the peer's ack word says it consumed; a reported gap has
 * the missing message sent again at once. */
static void take_acks(struct nd *nd, uint32_t to)
{
	struct nd_mb *m = nd->mb;
	struct outbox *ob = &m->out[to];
	if (ob->seq.sent == ob->seq.acked)
		return;
	uint64_t w = sn_var_load(nd->sn, gm_bcs_ack(m->nnodes, to));
	if ((uint32_t)(w >> 32 & 0x7fffffffu) != inc_tag(m->inc))
		return;
	free_acked(ob, (uint32_t)w);
	if ((w & ACK_GAP) && mbs_gap_reported(&ob->seq, (uint32_t)w))
		xfer_one(nd, ob->win[(ob->seq.acked + 1) % GM_BCS_SLOTS]);
}

/* Sends what the peer's window takes. Not before its fabric address is
 * known (a daemon serves, and may be given a job, before the machine
 * manager's table has every peer): a transfer to it would fail at once,
 * and the message would wait for a resend. */
static void flush(struct nd *nd, uint32_t to)
{
	struct nd_mb *m = nd->mb;
	struct outbox *ob = &m->out[to];
	take_acks(nd, to);
	if (!ob->head || !sn_peer_known(nd->sn, fabric_id(to)))
		return;
	while (ob->head && mbs_room(&ob->seq)) {
		struct omsg *o = ob->head;
		ob->head = o->next;
		if (!ob->head)
			ob->tail = NULL;
		o->next = NULL;
		uint32_t seq = mbs_number(&ob->seq, clock_mono_ns());
		((struct mb_hdr *)o->data)->seq = seq;
		ob->win[seq % GM_BCS_SLOTS] = o;
		ob->sent_at[seq % GM_BCS_SLOTS] = wall_ns();
		xfer_one(nd, o);
	}
}

/* No ack came in time: the whole unacknowledged window goes again, in
 * order (what landed is overwritten with itself; the last one's copy
 * makes a receiver that has it all acknowledge again). */
static void resend(struct nd *nd, uint32_t to)
{
	struct nd_mb *m = nd->mb;
	struct outbox *ob = &m->out[to];
	if (!sn_peer_known(nd->sn, fabric_id(to)))
		return;
	slog_limited(&m->resend_log, "mailbox: no ack from node %u for messages %u..%u; "
		     "sending them again (resend %u)", to, ob->seq.acked + 1, ob->seq.sent,
		     ob->seq.resends);
	for (uint32_t s = ob->seq.acked + 1; s != ob->seq.sent + 1; s++)
		xfer_one(nd, ob->win[s % GM_BCS_SLOTS]);
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
	o->xmit = 0;
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
	const struct outbox *ob = &nd->mb->out[to];
	uint32_t n = ob->seq.sent - ob->seq.acked;
	for (const struct omsg *o = ob->head; o; o = o->next)
		n++;
	return n;
}

void nd_mb_dump(const struct nd *nd)
{
	const struct nd_mb *m = nd->mb;
	for (uint32_t p = 0; p < m->nnodes; p++) {
		const struct outbox *ob = &m->out[p];
		const struct mbs_in *in = &m->in[p];
		uint32_t queued = 0;
		for (const struct omsg *o = ob->head; o; o = o->next)
			queued++;
		if (!ob->seq.sent && !queued && !in->consumed)
			continue;
		slog("  mailbox with node %u: sent %u, acknowledged %u, %u queued, %u resends; "
		     "consumed %u, %u unacknowledged, %u duplicates", p, ob->seq.sent,
		     ob->seq.acked, queued, ob->seq.resends, in->consumed,
		     in->consumed - in->acked, in->dups);
	}
}

/* Writes our count of `from`'s messages into its memory when it is due
 * (strobe: any not yet written, and the last one once more). One that is
 * lost is written again at the next strobe, or when a resend of the last
 * message comes. */
static void ack(struct nd *nd, uint32_t from, bool strobe)
{
	struct nd_mb *m = nd->mb;
	struct mbs_in *in = &m->in[from];
	/* an ack the fabric could not deliver yet is written at a later strobe */
	if (!mbs_ack_due(in, clock_mono_ns(), strobe) || !sn_peer_known(nd->sn, fabric_id(from)))
		return;
	uint64_t v = (uint64_t)inc_tag(m->peer_inc[from]) << 32 | in->consumed;
	if (mbs_gap_open(in))
		v |= ACK_GAP;
	mbs_ack_sent(in, strobe);
	uint64_t every = fault_value(&nd->fault, "mb_ack_drop_every");
	if (every && ++m->acks_out % every == 0) {
		slog_limited(&m->hook_log, "test hook: mailbox ack %u to node %u dropped",
			     in->consumed, from);
		return;
	}
	struct sn_nodeset to;
	sn_set_clear(&to);
	sn_set_add(&to, fabric_id(from));
	if (sn_xfer(nd->sn, &to, gm_bcs_ack(m->nnodes, m->self), &v, 8, SN_NO_EVENT, EV_BCS, 0) < 0)
		slog_limited(&m->fail_log, "mailbox: ack to node %u not sent (again at its "
			     "resend): %s", from, sn_strerror(nd->sn));
}

void nd_mb_strobe(struct nd *nd)
{
	if (!nd->mb)
		return;
	for (uint32_t from = 0; from < nd->mb->nnodes; from++) {
		ack(nd, from, true);
		if (nd->mb->out[from].head)
			flush(nd, from); /* held while the peer's address was not known */
	}
}

void nd_mb_timers(struct nd *nd)
{
	struct nd_mb *m = nd->mb;
	if (!m)
		return;
	uint64_t now = clock_mono_ns();
	for (uint32_t p = 0; p < m->nnodes; p++) {
		/* this runs every turn: a peer with nothing due is passed over
		 * (acks that arrive are taken with their event, nd_mb_arrived) */
		uint64_t due = mbs_next_due(&m->out[p].seq, &m->in[p]);
		if (p == m->self || !due || due > now)
			continue;
		ack(nd, p, false);
		take_acks(nd, p); /* an ack already here spares the resend */
		if (mbs_resend_due(&m->out[p].seq, now))
			resend(nd, p);
	}
}

int nd_mb_timer_ms(const struct nd *nd)
{
	const struct nd_mb *m = nd->mb;
	if (!m)
		return -1;
	uint64_t due = 0;
	for (uint32_t p = 0; p < m->nnodes; p++) {
		/* what is due to a peer whose address is not known yet waits
		 * for a strobe: no timer for it, or the loop would spin */
		if (!sn_peer_known(nd->sn, fabric_id(p)))
			continue;
		uint64_t d = mbs_next_due(&m->out[p].seq, &m->in[p]);
		if (d && (!due || d < due))
			due = d;
	}
	if (!due)
		return -1;
	uint64_t now = clock_mono_ns();
	return due <= now ? 0 : (int)((due - now + 999999) / 1000000);
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
	mbs_restart(&m->in[from], best);
	struct outbox *ob = &m->out[from];
	take_acks(nd, from);
	uint32_t lost = ob->seq.acked;
	while (lost != ob->seq.sent && ob->sent_at[(lost + 1) % GM_BCS_SLOTS] < inc)
		lost++;
	free_acked(ob, lost);
}

/* One of the next two messages landed while the next one did not: one
 * node's transfers to another arrive in order, so that one was lost; its
 * sender is told at once rather than at its timeout (which covers longer
 * holes). Two header reads per peer and arrival, none once reported. */
static void find_gap(struct nd *nd, uint32_t from)
{
	struct nd_mb *m = nd->mb;
	struct mbs_in *in = &m->in[from];
	uint32_t want = in->consumed + 1;
	if (in->gap_at == want)
		return;
	for (uint32_t k = 1; k <= 2; k++) {
		struct mb_hdr h;
		memcpy(&h, nd->gmem + gm_bcs_slot(m->nnodes, from, (want + k) % GM_BCS_SLOTS),
		       sizeof(h));
		if (h.magic == MB_MAGIC && h.inc == m->peer_inc[from] && h.seq == want + k) {
			mbs_gap_seen(in);
			return;
		}
	}
}

/* Hands over every message of `from` that is next in order. */
static void consume(struct nd *nd, uint32_t from)
{
	struct nd_mb *m = nd->mb;
	struct mbs_in *in = &m->in[from];
	for (;;) {
		uint32_t want = in->consumed + 1;
		const uint8_t *slot = nd->gmem + gm_bcs_slot(m->nnodes, from, want % GM_BCS_SLOTS);
		struct mb_hdr h;
		memcpy(&h, slot, sizeof(h));
		if (h.magic != MB_MAGIC || mbs_offer(in, h.seq, h.xmit) != MBS_DELIVER)
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
		mbs_delivered(in, h.xmit, clock_mono_ns());
	}
	/* the last one delivered, sent again: its sender missed our ack (the
	 * header alone decides; a forged one only earns an extra ack) */
	if (!in->consumed)
		return;
	struct mb_hdr h;
	memcpy(&h, nd->gmem + gm_bcs_slot(m->nnodes, from, in->consumed % GM_BCS_SLOTS), sizeof(h));
	if (h.magic == MB_MAGIC && h.inc == m->peer_inc[from])
		mbs_offer(in, h.seq, h.xmit);
	find_gap(nd, from);
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
		consume(nd, from);
		ack(nd, from, false);
		flush(nd, from);
	}
}
