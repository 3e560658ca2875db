/* ofi_rxm over tcp sized to storm's traffic (rail.c says why, value by
 * value): its bounce buffers hold storm's largest small message and a
 * header, it posts 256 of them, and its completion queues are sized for a
 * universe of 16. Shared by the daemons' rails and the ranks' endpoints
 * (ep.c), which carry only RMA writes, so that neither pays rxm's 70 MiB
 * of default buffers. Call before the first fi_getinfo; a value set in the
 * environment is kept. */
#ifndef SN_RXM_ENV_H
#define SN_RXM_ENV_H
#include <stdio.h>
#include <stdlib.h>

static inline void sn_rxm_tcp_env(unsigned buffer_size)
{
	char v[16];
	snprintf(v, sizeof(v), "%u", buffer_size);
	setenv("FI_OFI_RXM_BUFFER_SIZE", v, 0);
	setenv("FI_OFI_RXM_MSG_RX_SIZE", "256", 0);
	setenv("FI_UNIVERSE_SIZE", "16", 0);
}
#endif
