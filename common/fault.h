/* Fault injection for tests, in one place: what a forger on the fabric or a
 * failing part would do, asked for through the environment and nowhere
 * else. STORM_TEST_TAMPER="point=K[,point=K...]" arms each named point at
 * value K (a slice, a report sequence...). The MM takes its points
 * (strobe); a node daemon only when STORM_TEST_TAMPER_NODE names it, so a
 * test forges from one node while the others stay honest. Production runs
 * never set them, and an unarmed point costs one comparison. */
#ifndef STORM_FAULT_H
#define STORM_FAULT_H

#include <stdbool.h>
#include <stdint.h>

#define FAULT_POINTS 8

struct fault {
	char name[FAULT_POINTS][24];
	uint64_t at[FAULT_POINTS];
	int n;
};

/* Parses spec ("strobe=3,replay=5"); false with no point armed when it is
 * malformed. Pure (unit-tested). */
bool fault_parse(struct fault *f, const char *spec);
/* The environment's points for the node daemon named `self`, or for the MM
 * when self is NULL (the caller logs them when fault_armed). */
void fault_init(struct fault *f, const char *self);
bool fault_armed(const struct fault *f);
/* K for the point, 0 when not armed. */
uint64_t fault_value(const struct fault *f, const char *point);
/* The point is armed at `value`, among others: "p=2,p=5" names jobs 2 and 5. */
bool fault_is(const struct fault *f, const char *point, uint64_t value);
/* True once, when `value` reaches the point's K, at or past it (a counter
 * may skip K); the point is then disarmed. */
bool fault_hit(struct fault *f, const char *point, uint64_t value);

#endif
