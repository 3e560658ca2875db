/* The schedule ahead's arithmetic (ahead.h). */
#include "ahead.h"

unsigned strobe_ahead_fit(uint32_t nnodes, unsigned want)
{
	unsigned k = want > STROBE_AHEAD_MAX ? STROBE_AHEAD_MAX : want;
	while (k > 0 && strobe_size(nnodes, k) > GM_STROBE_MAX)
		k--;
	return k;
}

uint64_t ahead_slice_start(uint64_t origin_ns, uint64_t period_ns, uint64_t now_ns)
{
	if (now_ns <= origin_ns || !period_ns)
		return origin_ns;
	return origin_ns + (now_ns - origin_ns) / period_ns * period_ns;
}

uint64_t ahead_slices_since(uint64_t last_ns, uint64_t period_ns, uint64_t now_ns)
{
	if (now_ns <= last_ns || !period_ns)
		return 0;
	return (now_ns - last_ns) / period_ns;
}

int ahead_take_due(struct ahead_sched *a, uint64_t now_ns)
{
	int due = -1;
	while (a->done < a->n && a->e[a->done].deadline_ns <= now_ns)
		due = (int)a->done++;
	return due;
}

uint64_t ahead_next_deadline(const struct ahead_sched *a)
{
	return a->done < a->n ? a->e[a->done].deadline_ns : 0;
}

void clk_est_sample(struct clk_est *c, uint64_t t1, uint64_t t2, uint64_t t3, uint64_t t4)
{
	if (t4 < t1 || t3 < t2 || t4 - t1 < t3 - t2)
		return; /* clocks read out of order: no sample */
	uint64_t rtt = (t4 - t1) - (t3 - t2);
	/* NTP's: the midpoints of the two legs */
	int64_t off = ((int64_t)(t2 - t1) + (int64_t)(t3 - t4)) / 2;
	c->win[c->next].off = off;
	c->win[c->next].rtt = rtt;
	c->next = (c->next + 1) % CLK_WINDOW;
	if (c->n < CLK_WINDOW)
		c->n++;
	unsigned best = 0;
	for (unsigned i = 1; i < c->n; i++)
		if (c->win[i].rtt < c->win[best].rtt)
			best = i;
	c->offset_ns = c->win[best].off;
	c->rtt_ns = c->win[best].rtt;
	c->valid = true;
}

uint64_t clk_to_local(const struct clk_est *c, uint64_t mm_ns)
{
	if (!c->valid)
		return mm_ns;
	return (uint64_t)((int64_t)mm_ns - c->offset_ns);
}
