/* The small public object of the layer (sn_ep.h): one endpoint on one
 * provider, one registered pool, and RMA writes with immediate data into
 * peers' pools. Asked for as the rails are (rail.c): an RDM endpoint with
 * FI_RMA, a region registered with FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
 * FI_MR_PROV_KEY, its key and base published beside the address. */
#include "sn_ep.h"
#include "rxm_env.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#define EP_PEERS 64  /* peers' addresses kept; the oldest goes first */
#define EP_WRITES 64 /* writes in flight */
#define EP_ADDR_MAX (SN_EP_BLOB_MAX - 20)

struct ep_peer {
	uint8_t blob[SN_EP_BLOB_MAX];
	size_t blen;
	fi_addr_t fa;
	uint64_t key, base;
};

struct ep_write {
	struct fi_context2 fc; /* first: the provider's, FI_CONTEXT2 */
	void *user;
	bool used;
};

struct sn_ep {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_mr *mr;
	int wait_fd;
	uint8_t *pool;
	size_t pool_size;
	uint8_t blob[SN_EP_BLOB_MAX];
	size_t blen;
	struct ep_peer peers[EP_PEERS];
	unsigned npeers, next_peer;
	struct ep_write w[EP_WRITES];
	unsigned outstanding;
};

/* blob: address length (4 bytes), key, base (8 each), the address */
static size_t blob_make(uint8_t *out, const void *addr, size_t alen, uint64_t key, uint64_t base)
{
	uint32_t l = (uint32_t)alen;
	memcpy(out, &l, 4);
	memcpy(out + 4, &key, 8);
	memcpy(out + 12, &base, 8);
	memcpy(out + 20, addr, alen);
	return 20 + alen;
}

static int blob_parse(const uint8_t *b, size_t blen, size_t *alen, uint64_t *key, uint64_t *base)
{
	uint32_t l;
	if (blen < 20)
		return -EINVAL;
	memcpy(&l, b, 4);
	if (l == 0 || l > EP_ADDR_MAX || 20 + (size_t)l != blen)
		return -EINVAL;
	memcpy(key, b + 4, 8);
	memcpy(base, b + 12, 8);
	*alen = l;
	return 0;
}

static int say(char *why, size_t len, int rc, const char *what, const char *prov)
{
	if (why && len)
		snprintf(why, len, "%s on '%s': %s", what, prov, fi_strerror(rc < 0 ? -rc : rc));
	return rc < 0 ? rc : -rc ? -rc : -EIO;
}

static int ep_getinfo(struct sn_ep *e, const char *prov, const char *src, char *why,
		      size_t whylen)
{
	/* a rank's endpoint sends no messages, only RMA writes: rxm's
	 * buffers carry its own control messages alone */
	if (strstr(prov, "ofi_rxm") && strstr(prov, "tcp"))
		sn_rxm_tcp_env();
	/* ofi_rxm over verbs sizes the verbs completion queue it opens when
	 * the endpoint is enabled at (128 + 128) entries times
	 * FI_UNIVERSE_SIZE, 256 by default: 65,536, more than soft-RoCE gives
	 * one queue (32,767), and fi_enable failed with EINVAL. This endpoint
	 * keeps EP_PEERS peers: that many (unless set), read by libfabric at
	 * its first call, this one in a rank. A node daemon's rails have set
	 * theirs already (rail.c). */
	if (strstr(prov, "verbs")) {
		char v[16];
		snprintf(v, sizeof(v), "%u", (unsigned)EP_PEERS);
		setenv("FI_UNIVERSE_SIZE", v, 0);
	}
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		return -ENOMEM;
	hints->caps = FI_MSG | FI_RMA;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	/* no FI_MR_LOCAL: providers that need registered buffers run under
	 * ofi_rxm, which registers for us, as for the rails */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!strncmp(prov, "sockets", 7))
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	/* at the daemons' address: the provider's own choice of interface
	 * can be one the peers do not reach, or one that is gone by the time
	 * they connect */
	bool at = src && *src;
	int rc = fi_getinfo(FI_VERSION(1, 9), at ? src : NULL, NULL, at ? FI_SOURCE : 0, hints,
			    &e->info);
	fi_freeinfo(hints);
	if (rc)
		return say(why, whylen, rc, "no RMA endpoint", prov);
	if (e->info->domain_attr->cq_data_size < 4) {
		snprintf(why, whylen, "'%s' carries no 32-bit immediate data", prov);
		return -ENOTSUP;
	}
	return 0;
}

static int ep_objects(struct sn_ep *e, const char *prov, char *why, size_t whylen)
{
	int rc;
	if ((rc = fi_fabric(e->info->fabric_attr, &e->fabric, NULL)) ||
	    (rc = fi_domain(e->fabric, e->info, &e->domain, NULL)))
		return say(why, whylen, rc, "opening the domain", prov);
	struct fi_cq_attr cq_attr = {.format = FI_CQ_FORMAT_DATA, .wait_obj = FI_WAIT_FD,
				     .size = 4 * EP_WRITES + 256};
	e->wait_fd = -1;
	if (fi_cq_open(e->domain, &cq_attr, &e->cq, NULL) == 0) {
		if (fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd))
			e->wait_fd = -1;
	} else {
		cq_attr.wait_obj = FI_WAIT_NONE;
		if ((rc = fi_cq_open(e->domain, &cq_attr, &e->cq, NULL)))
			return say(why, whylen, rc, "opening the completion queue", prov);
	}
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = EP_PEERS};
	if ((rc = fi_av_open(e->domain, &av_attr, &e->av, NULL)))
		return say(why, whylen, rc, "opening the address vector", prov);
	/* the eager limit of every other endpoint of sn_ep.h (rxm_env.h) */
	char *eager = sn_rxm_plain_eager();
	if ((rc = fi_endpoint(e->domain, e->info, &e->ep, NULL)) ||
	    (rc = fi_ep_bind(e->ep, &e->av->fid, 0)) ||
	    (rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV)) ||
	    (rc = fi_enable(e->ep))) {
		sn_rxm_eager_restore(eager);
		return say(why, whylen, rc, "opening the endpoint", prov);
	}
	sn_rxm_eager_restore(eager);
	return 0;
}

/* The pool, registered for remote writes, and our blob. */
static int ep_pool(struct sn_ep *e, const char *prov, size_t pool_size, char *why, size_t whylen)
{
	e->pool = mmap(NULL, pool_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->pool == MAP_FAILED) {
		e->pool = NULL;
		snprintf(why, whylen, "no memory for a pool of %zu bytes", pool_size);
		return -ENOMEM;
	}
	e->pool_size = pool_size;
	uint64_t mode = e->info->domain_attr->mr_mode;
	int rc = fi_mr_reg(e->domain, e->pool, pool_size, FI_REMOTE_WRITE, 0, 1, 0, &e->mr, NULL);
	if (!rc && (mode & FI_MR_ENDPOINT) && !(rc = fi_mr_bind(e->mr, &e->ep->fid, 0)))
		rc = fi_mr_enable(e->mr);
	if (rc)
		return say(why, whylen, rc, "registering the pool", prov);
	uint8_t addr[EP_ADDR_MAX];
	size_t alen = sizeof(addr);
	if ((rc = fi_getname(&e->ep->fid, addr, &alen)) || alen > EP_ADDR_MAX)
		return say(why, whylen, rc ? rc : -FI_ETOOSMALL, "naming the endpoint", prov);
	uint64_t base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)e->pool : 0;
	e->blen = blob_make(e->blob, addr, alen, fi_mr_key(e->mr), base);
	return 0;
}

int sn_ep_open(const char *prov, const char *src, size_t pool_size, struct sn_ep **ep,
	       char *why, size_t whylen)
{
	struct sn_ep *e = calloc(1, sizeof(*e));
	*ep = NULL;
	if (!e)
		return -ENOMEM;
	e->wait_fd = -1;
	int rc;
	if ((rc = ep_getinfo(e, prov, src, why, whylen)) || (rc = ep_objects(e, prov, why, whylen)) ||
	    (rc = ep_pool(e, prov, pool_size, why, whylen))) {
		sn_ep_close(e);
		return rc;
	}
	*ep = e;
	return 0;
}

void sn_ep_close(struct sn_ep *e)
{
	if (!e)
		return;
	if (e->mr)
		fi_close(&e->mr->fid);
	if (e->ep)
		fi_close(&e->ep->fid);
	if (e->av)
		fi_close(&e->av->fid);
	if (e->cq)
		fi_close(&e->cq->fid);
	if (e->domain)
		fi_close(&e->domain->fid);
	if (e->fabric)
		fi_close(&e->fabric->fid);
	if (e->info)
		fi_freeinfo(e->info);
	if (e->pool)
		munmap(e->pool, e->pool_size);
	free(e);
}

void *sn_ep_pool(const struct sn_ep *e) { return e->pool; }
size_t sn_ep_pool_size(const struct sn_ep *e) { return e->pool_size; }
int sn_ep_wait_fd(const struct sn_ep *e) { return e->wait_fd; }
unsigned sn_ep_outstanding(const struct sn_ep *e) { return e->outstanding; }

size_t sn_ep_addr(const struct sn_ep *e, void *buf)
{
	memcpy(buf, e->blob, e->blen);
	return e->blen;
}

/* The peer named by blob, in the address vector (the oldest one out when
 * it is full: a peer restored elsewhere comes back with a new blob). */
static struct ep_peer *peer_of(struct sn_ep *e, const uint8_t *blob, size_t blen)
{
	for (unsigned i = 0; i < e->npeers; i++)
		if (e->peers[i].blen == blen && !memcmp(e->peers[i].blob, blob, blen))
			return &e->peers[i];
	size_t alen;
	uint64_t key, base;
	if (blob_parse(blob, blen, &alen, &key, &base))
		return NULL;
	unsigned k = e->npeers < EP_PEERS ? e->npeers : e->next_peer++ % EP_PEERS;
	struct ep_peer *p = &e->peers[k];
	if (p->blen) {
		fi_av_remove(e->av, &p->fa, 1, 0);
		p->blen = 0;
	}
	if (fi_av_insert(e->av, blob + 20, 1, &p->fa, 0, NULL) != 1)
		return NULL;
	if (k == e->npeers)
		e->npeers++;
	memcpy(p->blob, blob, blen);
	p->blen = blen;
	p->key = key;
	p->base = base;
	return p;
}

int sn_ep_write(struct sn_ep *e, const void *blob, size_t blen, const void *src, size_t len,
		uint64_t off, uint64_t imm, void *ctx)
{
	if (imm > SN_EP_IMM_MAX)
		return -EINVAL;
	struct ep_peer *p = blen <= SN_EP_BLOB_MAX ? peer_of(e, blob, blen) : NULL;
	if (!p)
		return -EINVAL;
	struct ep_write *w = NULL;
	for (unsigned i = 0; i < EP_WRITES && !w; i++)
		if (!e->w[i].used)
			w = &e->w[i];
	if (!w)
		return -EAGAIN;
	ssize_t rc = fi_writedata(e->ep, src, len, NULL, imm, p->fa, p->base + off, p->key, w);
	if (rc == -FI_EAGAIN)
		return -EAGAIN;
	if (rc)
		return (int)rc;
	w->used = true;
	w->user = ctx;
	e->outstanding++;
	return 0;
}

static void ended(struct sn_ep *e, void *op_context, int err, struct sn_ep_event *ev)
{
	struct ep_write *w = op_context;
	*ev = (struct sn_ep_event){.kind = SN_EP_SENT, .err = err, .ctx = w ? w->user : NULL};
	if (w && w->used) {
		w->used = false;
		e->outstanding--;
	}
}

int sn_ep_poll(struct sn_ep *e, struct sn_ep_event *ev, int max)
{
	int n = 0;
	while (n < max) {
		struct fi_cq_data_entry c[16];
		size_t want = (size_t)(max - n) < 16 ? (size_t)(max - n) : 16;
		ssize_t got = fi_cq_read(e->cq, c, want);
		if (got == -FI_EAVAIL) {
			struct fi_cq_err_entry err = {0};
			if (fi_cq_readerr(e->cq, &err, 0) == 1)
				ended(e, err.op_context, -(err.err ? err.err : EIO), &ev[n++]);
			continue;
		}
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++) {
			if (c[i].flags & FI_REMOTE_CQ_DATA)
				ev[n++] = (struct sn_ep_event){.kind = SN_EP_ARRIVED, .imm = c[i].data};
			else if (c[i].flags & (FI_WRITE | FI_RMA))
				ended(e, c[i].op_context, 0, &ev[n++]);
		}
	}
	return n;
}
