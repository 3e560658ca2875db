/* ofi_rxm over tcp sized to storm's traffic (rail.c says why, value by
 * value): its bounce buffers hold storm's largest small message and a
 * header, it posts 256 of them, and its completion queues are sized for a
 * universe of 16. Shared by the daemons' rails and the endpoints of
 * sn_ep.h (ranks' and a node daemon's own), which carry only RMA writes,
 * so that none pays rxm's 70 MiB of default buffers. Call before the
 * first fi_getinfo.
 *
 * rxm refuses a connection from a peer whose eager limit differs from its
 * own endpoint's, and a refused connection is asked for again at every
 * write, for ever: a node daemon's own endpoint (its rails had set a large
 * limit) could never write into a rank's, and the receive waited for good.
 * So the buffer size, the eager limit of an endpoint that sets none, is one
 * value in every process of storm, whatever the environment says (rxm
 * reads it once per process), and the endpoints of sn_ep.h open with no
 * eager limit of their own (sn_rxm_plain_eager). The other two keep a
 * value set in the environment. */
#ifndef SN_RXM_ENV_H
#define SN_RXM_ENV_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sn_int.h"
#include "wire.h"

#define SN_RXM_TCP_BUFFER (SN_WIRE_HDR_MAX + SN_INLINE_MAX)

static inline void sn_rxm_tcp_env(void)
{
	char v[16];
	snprintf(v, sizeof(v), "%u", (unsigned)SN_RXM_TCP_BUFFER);
	setenv("FI_OFI_RXM_BUFFER_SIZE", v, 1);
	setenv("FI_OFI_RXM_MSG_RX_SIZE", "256", 0);
	setenv("FI_UNIVERSE_SIZE", "16", 0);
}

/* FI_OFI_RXM_EAGER_LIMIT, which rxm reads as each endpoint opens, unset
 * until sn_rxm_eager_restore puts back what it was (the rails' value, in a
 * node daemon). In a daemon the variable exists already, so this replaces
 * a pointer and never moves the environment under another thread. */
static inline char *sn_rxm_plain_eager(void)
{
	const char *cur = getenv("FI_OFI_RXM_EAGER_LIMIT");
	char *was = cur ? strdup(cur) : NULL;
	if (cur)
		setenv("FI_OFI_RXM_EAGER_LIMIT", "0", 1);
	return was;
}

static inline void sn_rxm_eager_restore(char *was)
{
	if (was)
		setenv("FI_OFI_RXM_EAGER_LIMIT", was, 1);
	free(was);
}
#endif
