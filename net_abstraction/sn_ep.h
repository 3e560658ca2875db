/* storm network abstraction, the small object: one endpoint on one
 * provider with one registered pool that peers write into, and the write
 * that does it (RMA with 32 bits of immediate data, FI_REMOTE_CQ_DATA: what
 * verbs carries; tcp carries 64).
 * No nodes, trees or global memory: what a process that is not a daemon
 * (a BCS-MPI rank) needs to move bytes straight into another's pool.
 *
 * An endpoint's address, its pool's key and base go out as one blob
 * (sn_ep_addr) that its peers hand to sn_ep_write; how they travel is the
 * caller's business. Writes into us are placed only while we drive the
 * endpoint (sn_ep_poll) on providers with manual data progress (tcp,
 * sockets, shm): the caller polls whenever it expects bytes.
 *
 * Conventions as sn.h: 0 or a documented non-negative value, a negative
 * errno on failure; one thread drives an endpoint. */
#ifndef STORM_SN_EP_H
#define STORM_SN_EP_H

#include <stddef.h>
#include <stdint.h>

/* an address blob: the provider's address, then the pool's key and base */
#define SN_EP_BLOB_MAX 96

struct sn_ep;

/* Scans of /proc/kallsyms that libfabric began and kallsyms.c refused (its
 * fopen takes the place of libc's in every program of this library and in
 * libbcsmpi); naming it is what links that file. */
extern unsigned sn_kallsyms_refused;

enum sn_ep_kind {
	SN_EP_SENT = 1,    /* our write ended (ctx as given); err 0 or -errno */
	SN_EP_ARRIVED = 2, /* a peer's write is in our pool; imm as it sent it */
};

struct sn_ep_event {
	enum sn_ep_kind kind;
	int err;
	void *ctx;
	uint64_t imm;
};

/* Opens an endpoint on prov ("tcp;ofi_rxm", ...) at the address src (an
 * IP address in text, as sn_local_host gives; NULL or "": the provider's
 * choice) and registers a pool of pool_size bytes for remote writes. On
 * failure *ep is NULL and why holds a sentence. */
int sn_ep_open(const char *prov, const char *src, size_t pool_size, struct sn_ep **ep,
	       char *why, size_t whylen);
/* Closes everything it opened: no descriptor, mapping or thread of it stays. */
void sn_ep_close(struct sn_ep *ep);
void *sn_ep_pool(const struct sn_ep *ep);
size_t sn_ep_pool_size(const struct sn_ep *ep);
/* Our blob into buf (SN_EP_BLOB_MAX bytes); its length. */
size_t sn_ep_addr(const struct sn_ep *ep, void *buf);
/* the largest immediate data every provider sn_ep_open accepts carries */
#define SN_EP_IMM_MAX UINT32_MAX
/* Writes len bytes at src into the pool of the peer named by blob, at
 * offset off, with immediate data imm (at most SN_EP_IMM_MAX, else
 * -EINVAL); ends with an SN_EP_SENT event for ctx. -EAGAIN: the provider's
 * queue is full, poll and try again. */
int sn_ep_write(struct sn_ep *ep, const void *blob, size_t blen, const void *src, size_t len,
		uint64_t off, uint64_t imm, void *ctx);
/* Drives the endpoint: up to max events into ev; their count. */
int sn_ep_poll(struct sn_ep *ep, struct sn_ep_event *ev, int max);
/* A descriptor readable when the endpoint may have something, or -1. */
int sn_ep_wait_fd(const struct sn_ep *ep);
/* Writes begun and not ended. */
unsigned sn_ep_outstanding(const struct sn_ep *ep);

#endif
