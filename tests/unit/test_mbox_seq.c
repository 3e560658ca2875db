/* A mailbox stream's bookkeeping (daemons/node/mbox_seq.c), driven by a
 * table of network faults: each case sends messages through a lossy "wire"
 * model (drop, duplicate, reorder, a transfer refused at once, a lost ack)
 * and the sender's timer; every case must deliver every message once, in
 * order, with the sender's window empty at the end. Without resends a
 * dropped message stalls the stream for good. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "../../daemons/node/mbox_seq.h"
#include "suites.h"

#define MS 1000000ull

static void test_window(void)
{
	struct mbs_out o = {0};
	for (unsigned i = 1; i <= MBS_WINDOW; i++) {
		CU_ASSERT_EQUAL(mbs_room(&o), MBS_WINDOW - i + 1);
		CU_ASSERT_EQUAL(mbs_number(&o, 0), i);
	}
	CU_ASSERT_EQUAL(mbs_room(&o), 0);
	CU_ASSERT_EQUAL(o.due_ns, MBS_RTO_MIN_NS);
	/* an ack beyond what was sent (an earlier stream's count) frees nothing */
	CU_ASSERT_EQUAL(mbs_ack(&o, MBS_WINDOW + 1, 1), 0);
	CU_ASSERT_EQUAL(mbs_ack(&o, 5, 10 * MS), 5);
	CU_ASSERT_EQUAL(o.due_ns, 10 * MS + MBS_RTO_MIN_NS);
	/* older or repeated: nothing */
	CU_ASSERT_EQUAL(mbs_ack(&o, 5, 11 * MS), 0);
	CU_ASSERT_EQUAL(mbs_ack(&o, 3, 11 * MS), 0);
	CU_ASSERT_EQUAL(mbs_room(&o), 5);
	CU_ASSERT_EQUAL(mbs_ack(&o, MBS_WINDOW, 12 * MS), MBS_WINDOW - 5);
	CU_ASSERT_EQUAL(o.due_ns, 0); /* nothing outstanding: no timer */
	CU_ASSERT_FALSE(mbs_resend_due(&o, 1000000 * MS));
}

static void test_wrap(void)
{
	struct mbs_out o = {.sent = UINT32_MAX - 1, .acked = UINT32_MAX - 1};
	CU_ASSERT_EQUAL(mbs_number(&o, 0), UINT32_MAX);
	CU_ASSERT_EQUAL(mbs_number(&o, 0), 0);
	CU_ASSERT_EQUAL(mbs_number(&o, 0), 1);
	CU_ASSERT_EQUAL(mbs_room(&o), MBS_WINDOW - 3);
	CU_ASSERT_EQUAL(mbs_ack(&o, 0, 1), 2);
	CU_ASSERT_EQUAL(mbs_ack(&o, 2, 1), 0); /* past sent */
	CU_ASSERT_EQUAL(mbs_ack(&o, 1, 1), 1);
	struct mbs_in in = {.consumed = UINT32_MAX, .acked = UINT32_MAX};
	CU_ASSERT_EQUAL(mbs_offer(&in, 0, 0), MBS_DELIVER);
}

static void test_backoff(void)
{
	struct mbs_out o = {0};
	mbs_number(&o, 0);
	CU_ASSERT_FALSE(mbs_resend_due(&o, MBS_RTO_MIN_NS - 1));
	uint64_t now = MBS_RTO_MIN_NS, wait = MBS_RTO_MIN_NS;
	for (int i = 0; i < 8; i++) {
		CU_ASSERT_TRUE(mbs_resend_due(&o, now));
		wait = 2 * wait > MBS_RTO_MAX_NS ? MBS_RTO_MAX_NS : 2 * wait;
		CU_ASSERT_EQUAL(o.due_ns, now + wait);
		CU_ASSERT_FALSE(mbs_resend_due(&o, now + wait - 1));
		now += wait;
	}
	CU_ASSERT_EQUAL(o.rto_ns, MBS_RTO_MAX_NS);
	CU_ASSERT_EQUAL(o.resends, 8);
	/* progress starts over at the shortest wait */
	mbs_number(&o, now);
	CU_ASSERT_EQUAL(mbs_ack(&o, 1, now), 1);
	CU_ASSERT_EQUAL(o.due_ns, now + MBS_RTO_MIN_NS);
	/* a transfer refused at once brings the resend forward, never back */
	o.due_ns = now + MBS_RTO_MAX_NS;
	mbs_send_failed(&o, now);
	CU_ASSERT_EQUAL(o.due_ns, now + MBS_RTO_MIN_NS);
	mbs_send_failed(&o, now + 50 * MS);
	CU_ASSERT_EQUAL(o.due_ns, now + MBS_RTO_MIN_NS);
}

static void test_receiver(void)
{
	struct mbs_in in = {0};
	CU_ASSERT_EQUAL(mbs_offer(&in, 2, 0), MBS_IGNORE); /* ahead of a gap */
	CU_ASSERT_EQUAL(mbs_offer(&in, 1, 0), MBS_DELIVER);
	mbs_delivered(&in, 0, 0);
	CU_ASSERT_FALSE(mbs_ack_due(&in, MBS_ACK_DELAY_NS - 1, false));
	CU_ASSERT_TRUE(mbs_ack_due(&in, MBS_ACK_DELAY_NS, false));
	CU_ASSERT_TRUE(mbs_ack_due(&in, 0, true));
	/* the slot of the last one still holds it: not a duplicate */
	CU_ASSERT_EQUAL(mbs_offer(&in, 1, 0), MBS_IGNORE);
	mbs_ack_sent(&in, false);
	CU_ASSERT_FALSE(mbs_ack_due(&in, 1000 * MS, false));
	/* the next strobe writes it once more (it may have been lost), then not */
	CU_ASSERT_TRUE(mbs_ack_due(&in, 1000 * MS, true));
	mbs_ack_sent(&in, true);
	CU_ASSERT_FALSE(mbs_ack_due(&in, 1000 * MS, true));
	/* its resend: acknowledged again at once, even with nothing new */
	CU_ASSERT_EQUAL(mbs_offer(&in, 1, 1), MBS_DUPLICATE);
	CU_ASSERT_EQUAL(in.dups, 1);
	CU_ASSERT_TRUE(mbs_ack_due(&in, 0, false));
	mbs_ack_sent(&in, false);
	CU_ASSERT_EQUAL(mbs_offer(&in, 1, 1), MBS_IGNORE);
	/* half a window delivered: acknowledged without waiting */
	for (uint32_t s = 2; s < 2 + MBS_WINDOW / 2; s++) {
		CU_ASSERT_EQUAL(mbs_offer(&in, s, 0), MBS_DELIVER);
		mbs_delivered(&in, 0, 0);
	}
	CU_ASSERT_TRUE(mbs_ack_due(&in, 0, false));
	/* a gap: reported once, and every write of the count carries the flag
	 * (a strobe's repeat too) until the missing one came */
	mbs_ack_sent(&in, true);
	uint32_t next = in.consumed + 1;
	CU_ASSERT_FALSE(mbs_gap_open(&in));
	CU_ASSERT_TRUE(mbs_gap_seen(&in));
	CU_ASSERT_FALSE(mbs_gap_seen(&in));
	CU_ASSERT_TRUE(mbs_ack_due(&in, 0, false));
	CU_ASSERT_TRUE(mbs_gap_open(&in));
	mbs_ack_sent(&in, false);
	CU_ASSERT_FALSE(mbs_ack_due(&in, 0, false));
	CU_ASSERT_TRUE(mbs_gap_open(&in));
	mbs_ack_sent(&in, true);
	CU_ASSERT_TRUE(mbs_gap_open(&in));
	CU_ASSERT_EQUAL(mbs_offer(&in, next, 1), MBS_DELIVER);
	mbs_delivered(&in, 1, 0);
	CU_ASSERT_FALSE(mbs_gap_open(&in));
	/* taken up at 5 (a restarted peer): 1..4 acknowledged at once */
	mbs_restart(&in, 5);
	CU_ASSERT_TRUE(mbs_ack_due(&in, 0, false));
	CU_ASSERT_EQUAL(mbs_offer(&in, 5, 0), MBS_DELIVER);
	mbs_restart(&in, 1);
	CU_ASSERT_FALSE(mbs_ack_due(&in, 0, true)); /* nothing to count yet */
}

/* ---- the table: a sender and a receiver over a faulty wire */

enum fault_kind {
	F_NONE, F_DROP, F_DUP, F_REORDER, F_REFUSE, F_ACK_LOST,
	F_ACKS_LOST, /* every ack lost until the receiver saw a resend */
};

struct wcase {
	const char *name;
	enum fault_kind kind;
	unsigned every;    /* the fault hits every Nth first transmission / ack */
	unsigned nmsgs;
	bool gaps;         /* the receiver reports gaps, the sender fills them */
};

struct sim {
	struct mbs_out out;
	struct mbs_in in;
	uint32_t slot_seq[MBS_WINDOW], slot_xmit[MBS_WINDOW]; /* receiver's slots */
	uint32_t xmits[4096];      /* per message: transmissions */
	uint32_t delivered[4096];  /* in delivery order */
	unsigned ndelivered, firsts, acks;
	uint32_t ack_word;         /* the sender's ack variable */
	bool ack_gap;              /* ... and its gap flag */
	unsigned gap_fills;
	struct { uint32_t seq, xmit; } held; /* a reordered message, landing later */
	bool holding;
	uint64_t now;
};

static void land(struct sim *s, uint32_t seq, uint32_t xmit)
{
	s->slot_seq[seq % MBS_WINDOW] = seq;
	s->slot_xmit[seq % MBS_WINDOW] = xmit;
}

/* one transmission through the wire; false: refused at once */
static void transmit(struct sim *s, const struct wcase *c, uint32_t seq)
{
	uint32_t xmit = s->xmits[seq]++;
	bool first = xmit == 0, hit = first && ++s->firsts % c->every == 0;
	if (hit && c->kind == F_DROP)
		return;
	if (hit && c->kind == F_REFUSE) {
		mbs_send_failed(&s->out, s->now);
		return;
	}
	if (hit && c->kind == F_REORDER && !s->holding) {
		s->held.seq = seq;
		s->held.xmit = xmit;
		s->holding = true;
		return;
	}
	land(s, seq, xmit);
	if (hit && c->kind == F_DUP)
		land(s, seq, xmit);
}

/* the receiver's turn: mailbox.c's consume() and ack() */
static void receive(struct sim *s, const struct wcase *c, bool strobe)
{
	for (;;) {
		uint32_t want = s->in.consumed + 1, k = want % MBS_WINDOW;
		if (mbs_offer(&s->in, s->slot_seq[k], s->slot_xmit[k]) != MBS_DELIVER)
			break;
		s->delivered[s->ndelivered++] = want;
		mbs_delivered(&s->in, s->slot_xmit[k], s->now);
	}
	if (s->in.consumed) {
		uint32_t k = s->in.consumed % MBS_WINDOW;
		mbs_offer(&s->in, s->slot_seq[k], s->slot_xmit[k]);
	}
	for (uint32_t d = 1; c->gaps && d <= 2; d++) { /* mailbox.c's find_gap */
		uint32_t later = s->in.consumed + 1 + d;
		if (s->slot_seq[later % MBS_WINDOW] == later && mbs_gap_seen(&s->in))
			break;
	}
	bool gap = mbs_gap_open(&s->in);
	if (!mbs_ack_due(&s->in, s->now, strobe))
		return;
	mbs_ack_sent(&s->in, strobe);
	if (c->kind == F_ACK_LOST && ++s->acks % c->every == 0)
		return;
	if (c->kind == F_ACKS_LOST && !s->in.dups)
		return;
	s->ack_word = s->in.consumed;
	s->ack_gap = gap;
}

static void run_case(const struct wcase *c)
{
	static struct sim s;
	memset(&s, 0, sizeof(s));
	uint32_t next = 1; /* the next message the client hands over */
	for (unsigned step = 0; step < 20000 && (s.in.consumed < c->nmsgs ||
						s.out.acked != s.out.sent); step++) {
		s.now += MS;
		/* the sender: acks in, new messages while the window takes them */
		mbs_ack(&s.out, s.ack_word, s.now);
		if (s.ack_gap && mbs_gap_reported(&s.out, s.ack_word)) {
			s.gap_fills++;
			transmit(&s, c, s.out.acked + 1);
		}
		while (next <= c->nmsgs && mbs_room(&s.out)) {
			uint32_t seq = mbs_number(&s.out, s.now);
			CU_ASSERT_EQUAL_FATAL(seq, next);
			next++;
			transmit(&s, c, seq);
		}
		if (mbs_resend_due(&s.out, s.now))
			for (uint32_t q = s.out.acked + 1; q != s.out.sent + 1; q++)
				transmit(&s, c, q);
		/* a reordered message lands after the ones sent behind it */
		if (s.holding && step % 3 == 0) {
			land(&s, s.held.seq, s.held.xmit);
			s.holding = false;
		}
		receive(&s, c, step % 10 == 0);
	}
	char what[96];
	snprintf(what, sizeof(what), "%s: %u of %u delivered, window %u..%u", c->name,
		 s.ndelivered, c->nmsgs, s.out.acked, s.out.sent);
	CU_ASSERT_EQUAL(s.ndelivered, c->nmsgs);
	CU_ASSERT_EQUAL(s.out.acked, c->nmsgs);
	CU_ASSERT_EQUAL(s.out.sent, c->nmsgs);
	if (s.ndelivered != c->nmsgs || s.out.acked != c->nmsgs)
		fprintf(stderr, "\n  %s\n", what);
	for (unsigned i = 0; i < s.ndelivered; i++)
		CU_ASSERT_EQUAL(s.delivered[i], i + 1); /* once each, in order */
	if (c->kind == F_ACKS_LOST)
		CU_ASSERT(s.in.dups > 0); /* a resend was recognised, and re-acked */
	if ((c->kind == F_DROP && !c->gaps) || c->kind == F_REFUSE || c->kind == F_ACKS_LOST)
		CU_ASSERT(s.out.resends > 0);
	if (c->kind == F_NONE)
		CU_ASSERT_EQUAL(s.out.resends, 0);
	/* a reported gap is filled at once: the timer only for the last
	 * messages' losses, behind which nothing came */
	if (c->gaps && c->kind == F_DROP) {
		CU_ASSERT(s.gap_fills >= c->nmsgs / c->every - 2);
		CU_ASSERT(s.out.resends <= 2);
	}
}

static void test_table(void)
{
	static const struct wcase cases[] = {
		{"clean", F_NONE, 1, 500, false},
		{"every 3rd dropped", F_DROP, 3, 500, false},
		{"every message dropped once", F_DROP, 1, 100, false},
		{"every 2nd duplicated", F_DUP, 2, 500, false},
		{"every 5th overtaken", F_REORDER, 5, 500, false},
		{"every 4th refused by the provider", F_REFUSE, 4, 500, false},
		{"every 2nd ack lost", F_ACK_LOST, 2, 500, false},
		{"every 3rd ack lost", F_ACK_LOST, 3, 7, false},
		{"every 3rd dropped, gaps reported", F_DROP, 3, 500, true},
		{"every 5th overtaken, gaps reported", F_REORDER, 5, 500, true},
		{"every 2nd ack lost, gaps reported", F_ACK_LOST, 2, 500, true},
		{"a window all delivered, every ack lost", F_ACKS_LOST, 1, 16, false},
		{"every ack lost until a duplicate came", F_ACKS_LOST, 1, 300, false},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		run_case(&cases[i]);
}

/* No ack ever comes (the peer gone): the sender keeps the window and tries
 * again, backing off, for as long as it runs. */
static void test_no_ack(void)
{
	struct mbs_out o = {0};
	for (int i = 0; i < 3; i++)
		mbs_number(&o, 0);
	unsigned resends = 0;
	for (uint64_t now = 0; now < 60000 * MS; now += MS)
		resends += mbs_resend_due(&o, now);
	CU_ASSERT_EQUAL(mbs_room(&o), MBS_WINDOW - 3);
	/* at 0.5 1.5 3.5 7.5 s, then every 4 s: 17 in a minute */
	CU_ASSERT_EQUAL(resends, 17);
}

void add_mbox_seq_suite(void)
{
	CU_pSuite s = CU_add_suite("mbox_seq", NULL, NULL);
	CU_add_test(s, "window and acks", test_window);
	CU_add_test(s, "numbers wrap", test_wrap);
	CU_add_test(s, "resend back-off", test_backoff);
	CU_add_test(s, "receiver: order, duplicates, acks", test_receiver);
	CU_add_test(s, "drop, duplicate, reorder, refuse, lost ack", test_table);
	CU_add_test(s, "no ack: resent for ever", test_no_ack);
}
