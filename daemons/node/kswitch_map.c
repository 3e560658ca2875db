/* The held schedule as /dev/storm's entries (kswitch_map.h). */
#include "kswitch_map.h"

static struct storm_entry entry(const struct ahead_entry *e, uint64_t deadline)
{
	return (struct storm_entry){ .deadline_ns = deadline,
				     .job_id = e->run,
				     .row = e->row < 0 ? 0 : (uint32_t)e->row,
				     .flags = 0 };
}

unsigned kswitch_entries(const struct ahead_sched *a, uint64_t now_ns, uint64_t running,
			 struct storm_entry *out, unsigned max)
{
	unsigned n = 0;
	/* the latest entry already due: what should run now */
	int due = -1;
	for (unsigned i = 0; i < a->n && a->e[i].deadline_ns <= now_ns; i++)
		due = (int)i;
	if (due >= 0 && a->e[due].run != running && n < max)
		out[n++] = entry(&a->e[due], now_ns);
	for (unsigned i = (unsigned)(due + 1); i < a->n && n < max; i++) {
		uint64_t d = a->e[i].deadline_ns;
		if (n && d <= out[n - 1].deadline_ns)
			continue; /* never out of order: the module refuses it */
		out[n++] = entry(&a->e[i], d);
	}
	return n;
}
