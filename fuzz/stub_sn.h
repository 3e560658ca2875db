/* fuzz/stub_sn.c: what the harness controls of the stand-in fabric. */
#ifndef STORM_FUZZ_STUB_SN_H
#define STORM_FUZZ_STUB_SN_H

#include "sn.h"

#define STUB_EVENTS 64

struct stub_sn {
	uint8_t *gmem;
	size_t gmem_size;
	unsigned pending[STUB_EVENTS]; /* local events an xfer will signal */
	int caw_result;                /* what sn_progress answers every COMPARE-AND-WRITE */
	unsigned fail_events;          /* the next events that fire carry an error */
	unsigned long xfers;
};
extern struct stub_sn stub;

void stub_sn_reset(size_t gmem_size);

#endif
