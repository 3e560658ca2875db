/* The schedule a node holds as /dev/storm's entries (kswitch_map.c): pure,
 * so that it is unit-tested where the module cannot load. */
#ifndef STORM_KSWITCH_MAP_H
#define STORM_KSWITCH_MAP_H

#include <linux/storm.h>

#include "ahead.h"

/* The entries to push (STORM_PUSH_REPLACE) for the held schedule a at now,
 * when the module last continued `running`: the held entries still ahead,
 * led by the one due now when its job is not the one running (its deadline
 * then is now: the module takes a past one as late). Deadlines strictly
 * increase. Returns how many (at most max). */
unsigned kswitch_entries(const struct ahead_sched *a, uint64_t now_ns, uint64_t running,
			 struct storm_entry *out, unsigned max);

#endif
