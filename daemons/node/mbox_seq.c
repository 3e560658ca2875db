/* A mailbox stream's numbers (mbox_seq.h): pure, no I/O. */
#include "mbox_seq.h"

uint32_t mbs_room(const struct mbs_out *o)
{
	uint32_t out = o->sent - o->acked;
	return out >= MBS_WINDOW ? 0 : MBS_WINDOW - out;
}

static uint64_t rto(const struct mbs_out *o)
{
	return o->rto_ns ? o->rto_ns : MBS_RTO_MIN_NS;
}

uint32_t mbs_number(struct mbs_out *o, uint64_t now)
{
	if (o->sent == o->acked) {
		o->rto_ns = MBS_RTO_MIN_NS;
		o->due_ns = now + MBS_RTO_MIN_NS;
	}
	return ++o->sent;
}

uint32_t mbs_ack(struct mbs_out *o, uint32_t ack, uint64_t now)
{
	uint32_t freed = ack - o->acked;
	/* wrapping differences: an older count, or one past what was ever
	 * sent (a count of an earlier stream of ours), frees nothing */
	if (!freed || freed > o->sent - o->acked)
		return 0;
	o->acked = ack;
	o->rto_ns = MBS_RTO_MIN_NS;
	o->due_ns = o->sent == o->acked ? 0 : now + MBS_RTO_MIN_NS;
	return freed;
}

void mbs_send_failed(struct mbs_out *o, uint64_t now)
{
	if (o->sent == o->acked)
		return;
	if (!o->due_ns || o->due_ns > now + MBS_RTO_MIN_NS)
		o->due_ns = now + MBS_RTO_MIN_NS;
}

bool mbs_gap_reported(struct mbs_out *o, uint32_t ack)
{
	uint32_t missing = ack + 1;
	if (ack != o->acked || o->sent == o->acked || o->gap_resent == missing)
		return false;
	o->gap_resent = missing;
	return true;
}

bool mbs_resend_due(struct mbs_out *o, uint64_t now)
{
	if (!o->due_ns || now < o->due_ns || o->sent == o->acked)
		return false;
	o->resends++;
	uint64_t next = 2 * rto(o);
	o->rto_ns = next > MBS_RTO_MAX_NS ? MBS_RTO_MAX_NS : next;
	o->due_ns = now + o->rto_ns;
	return true;
}

enum mbs_verdict mbs_offer(struct mbs_in *in, uint32_t seq, uint32_t xmit)
{
	if (seq == in->consumed + 1)
		return MBS_DELIVER;
	/* the slot of the last one delivered holds it sent again: the sender
	 * resends only what it has no ack for, so ours was lost */
	if (seq && seq == in->consumed && xmit != in->last_xmit) {
		in->last_xmit = xmit;
		in->ack_again = true;
		in->dups++;
		return MBS_DUPLICATE;
	}
	return MBS_IGNORE;
}

void mbs_delivered(struct mbs_in *in, uint32_t xmit, uint64_t now)
{
	in->consumed++;
	in->last_xmit = xmit;
	if (!in->ack_due_ns)
		in->ack_due_ns = now + MBS_ACK_DELAY_NS;
}

bool mbs_gap_seen(struct mbs_in *in)
{
	uint32_t missing = in->consumed + 1;
	if (in->gap_at == missing)
		return false;
	in->gap_at = missing;
	in->gap = true;
	return true;
}

bool mbs_gap_open(const struct mbs_in *in)
{
	return in->gap_at && in->gap_at == in->consumed + 1;
}

bool mbs_ack_due(const struct mbs_in *in, uint64_t now, bool strobe)
{
	if (in->ack_again || in->gap)
		return true;
	if (in->consumed == in->acked)
		return strobe && in->repeated != in->consumed;
	return strobe || in->consumed - in->acked >= MBS_WINDOW / 2 ||
	       (in->ack_due_ns && now >= in->ack_due_ns);
}

void mbs_ack_sent(struct mbs_in *in, bool strobe)
{
	if (strobe)
		in->repeated = in->consumed;
	in->acked = in->consumed;
	in->ack_again = false;
	in->gap = false;
	in->ack_due_ns = 0;
}

void mbs_restart(struct mbs_in *in, uint32_t next)
{
	in->consumed = next - 1;
	in->acked = next - 1;
	in->repeated = next - 1;
	in->last_xmit = UINT32_MAX; /* unknown: any copy of it is re-acked once */
	/* taken up past 1: the sender learns at once that 1..next-1 are done */
	in->ack_again = next != 1;
	in->gap = false;
	in->gap_at = 0;
	in->ack_due_ns = 0;
}

uint64_t mbs_next_due(const struct mbs_out *o, const struct mbs_in *in)
{
	uint64_t due = o->sent != o->acked ? o->due_ns : 0;
	uint64_t ack = in->ack_again || in->gap ? 1 : in->consumed != in->acked ? in->ack_due_ns : 0;
	if (!due || (ack && ack < due))
		due = ack;
	return due;
}
