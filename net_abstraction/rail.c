/* Endpoints and rails: opening the fabric, one rail per provider, the
 * address vector and the peers' addresses as they arrive or change, and
 * sn_open / sn_close. */
#include "sn_int.h"
#include "rxm_env.h"
#include "sn_ep.h"

#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <dirent.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <unistd.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include "bell.h"
#include "bootstrap.h"

/* A daemon that restarts (kill -9, then started again) opens a new endpoint
 * with a new address; its peers learn it (a file in the bootstrap
 * directory, or sn_peer_addr from the caller's exchange) and swap it into
 * their address vector at its first use (see sni_peer_use), so the MM and node
 * daemons can come back without the others restarting. A peer whose
 * address never came is unreachable until it does. */
/* A node whose rail writes by RMA publishes, after its fabric address, the
 * key and base of its global memory: one blob, so every bootstrap that
 * carries addresses (dir:, the daemons' external exchange) carries them too
 * without knowing. "static:" computes addresses and carries none: messages. */
#define RMA_MAGIC 0x31524e53u /* "SNR1" */
#define RMA_TRAILER (8 + 8 + 4)

static size_t addr_blob(const struct rail *rl, const uint8_t *addr, size_t alen, uint8_t *out)
{
	memcpy(out, addr, alen);
	if (!rl->mr)
		return alen;
	uint32_t magic = RMA_MAGIC;
	memcpy(out + alen, &rl->mr_key, 8);
	memcpy(out + alen + 8, &rl->mr_base, 8);
	memcpy(out + alen + 16, &magic, 4);
	return alen + RMA_TRAILER;
}

/* The fabric address's length within a blob, and its RMA part if any. */
static size_t addr_unblob(const uint8_t *blob, size_t len, bool *rma, uint64_t *key,
			  uint64_t *base)
{
	uint32_t magic = 0;
	*rma = false;
	if (len > RMA_TRAILER)
		memcpy(&magic, blob + len - 4, 4);
	if (magic != RMA_MAGIC)
		return len;
	len -= RMA_TRAILER;
	memcpy(key, blob + len, 8);
	memcpy(base, blob + len + 8, 8);
	*rma = true;
	return len;
}

/* Swaps node's pending address into the address vector, dropping the old
 * one's connection. 1 swapped, 0 unchanged, -errno. */
static int peer_swap(struct sn_ctx *ctx, int rail, uint32_t node)
{
	struct rail *rl = &ctx->rails[rail];
	const uint8_t *addr = rl->next + (size_t)node * SN_ADDR_MAX;
	size_t alen = rl->nlens[node];
	rl->stale[node] = false;
	fi_addr_t fa;
	if (rl->peers[node] != FI_ADDR_NOTAVAIL)
		fi_av_remove(rl->av, &rl->peers[node], 1, 0);
	rl->peers[node] = FI_ADDR_NOTAVAIL;
	if (fi_av_insert(rl->av, addr, 1, &fa, 0, NULL) != 1) {
		note(ctx, "node %u has an address we cannot use", node);
		return -EINVAL;
	}
	rl->peers[node] = fa;
	memcpy(rl->addrs + (size_t)node * SN_ADDR_MAX, addr, alen);
	rl->alens[node] = alen;
	/* a peer's key is only good with its endpoint: a restart brings both */
	rl->rma[node] = rl->mr && rl->nrma[node];
	sni_map_drop(rl, node); /* a restarted peer's memory is new */
	rl->rkey[node] = rl->nrkey[node];
	rl->rbase[node] = rl->nrbase[node];
	return 1;
}

/* Takes node's address on one rail: a first one goes into the address
 * vector at once, a changed one at its first use (sni_peer_use). */
static int peer_set(struct sn_ctx *ctx, int rail, uint32_t node, const void *blob,
		    size_t blen)
{
	struct rail *rl = &ctx->rails[rail];
	const uint8_t *addr = blob;
	bool rma;
	uint64_t key = 0, base = 0;
	size_t alen = addr_unblob(blob, blen, &rma, &key, &base);
	if (!alen || alen > SN_ADDR_MAX)
		return -EINVAL;
	if (rl->peers[node] != FI_ADDR_NOTAVAIL && alen == rl->alens[node] &&
	    !memcmp(addr, rl->addrs + (size_t)node * SN_ADDR_MAX, alen) &&
	    rma == rl->nrma[node] && key == rl->nrkey[node] && base == rl->nrbase[node]) {
		rl->stale[node] = false; /* a restart back to the old address */
		return 0;
	}
	memcpy(rl->next + (size_t)node * SN_ADDR_MAX, addr, alen);
	rl->nlens[node] = alen;
	rl->nrma[node] = rma;
	rl->nrkey[node] = key;
	rl->nrbase[node] = base;
	if (rl->peers[node] == FI_ADDR_NOTAVAIL)
		return peer_swap(ctx, rail, node) < 0 ? -EINVAL : 0;
	rl->stale[node] = true;
	return 0;
}

int sn_peer_addr(struct sn_ctx *ctx, int rail, uint32_t node, const void *addr, size_t len)
{
	if (rail < 0 || rail >= ctx->nrails || node >= ctx->n)
		return fail(ctx, -EINVAL, "no node %u on rail %d", node, rail);
	if (node == ctx->self)
		return 0;
	int rc = peer_set(ctx, rail, node, addr, len);
	if (rc)
		return fail(ctx, rc, "node %u: fabric address of %zu bytes not usable on rail %d",
			    node, len, rail);
	return 0;
}

int sn_local_addr(const struct sn_ctx *ctx, int rail, void *buf, size_t *len)
{
	if (rail < 0 || rail >= ctx->nrails)
		return -EINVAL;
	const struct rail *rl = &ctx->rails[rail];
	uint8_t blob[SN_ADDR_MAX];
	size_t n = addr_blob(rl, rl->addrs + (size_t)ctx->self * SN_ADDR_MAX,
			     rl->alens[ctx->self], blob);
	if (*len < n)
		return -ENOSPC;
	memcpy(buf, blob, n);
	*len = n;
	return 0;
}

int sn_local_host(const struct sn_ctx *ctx, char *buf, size_t len)
{
	if (ctx->nrails < 1)
		return -ENOENT;
	const struct rail *rl = &ctx->rails[0];
	const uint8_t *a = rl->addrs + (size_t)ctx->self * SN_ADDR_MAX;
	size_t alen = rl->alens[ctx->self];
	sa_family_t fam = 0;
	if (alen >= sizeof(fam))
		memcpy(&fam, a, sizeof(fam));
	if (fam == AF_INET && alen >= sizeof(struct sockaddr_in)) {
		struct sockaddr_in sin;
		memcpy(&sin, a, sizeof(sin));
		return inet_ntop(AF_INET, &sin.sin_addr, buf, (socklen_t)len) ? 0 : -ENOSPC;
	}
	if (fam == AF_INET6 && alen >= sizeof(struct sockaddr_in6)) {
		struct sockaddr_in6 sin6;
		memcpy(&sin6, a, sizeof(sin6));
		return inet_ntop(AF_INET6, &sin6.sin6_addr, buf, (socklen_t)len) ? 0 : -ENOSPC;
	}
	return -ENOENT;
}

int sn_rail_count(const struct sn_ctx *ctx) { return ctx->nrails; }

/* The new address goes in at first use, not when it is published: if the
 * restarted peer speaks first, its connection is already there and carries
 * our answers; if we speak first, we connect. Swapping at once made both
 * sides connect at the same moment, and rxm then left neither connection
 * usable (a restarted MM heard no node). */
void sni_peer_use(struct sn_ctx *ctx, int rail, uint32_t node)
{
	if (node < ctx->n && ctx->rails[rail].stale[node] &&
	    peer_swap(ctx, rail, node) > 0)
		note(ctx, "node %u restarted: its new address on rail %d is in use", node, rail);
}

/* Reads a peer's file from the bootstrap directory, if it is there. */
static void peer_read_file(struct sn_ctx *ctx, int rail, uint32_t node)
{
	uint8_t addr[SN_ADDR_MAX];
	size_t alen = 0;
	if (sn_boot_read(ctx->bootdir, rail, node, addr, &alen) == 0 &&
	    peer_set(ctx, rail, node, addr, alen) < 0)
		note(ctx, "node %u published an address we cannot use", node);
}

void sni_peers_refresh(struct sn_ctx *ctx)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t len;
	while (ctx->ino_fd >= 0 && (len = read(ctx->ino_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *e = (struct inotify_event *)p;
			p += sizeof(*e) + e->len;
			int rail;
			uint32_t node;
			if (!e->len || sn_boot_parse_name(e->name, &rail, &node) ||
			    rail >= ctx->nrails || node >= ctx->n || node == ctx->self)
				continue;
			note(ctx, "node %u published its address on rail %d", node, rail);
			peer_read_file(ctx, rail, node);
		}
	}
}

bool sn_peer_known(const struct sn_ctx *ctx, uint32_t node)
{
	if (node >= ctx->n)
		return false;
	for (int r = 0; r < ctx->nrails; r++)
		if (ctx->rails[r].peers[node] == FI_ADDR_NOTAVAIL)
			return false;
	return true;
}

uint32_t sn_peers_known(const struct sn_ctx *ctx)
{
	uint32_t k = 0;
	for (uint32_t i = 0; i < ctx->n; i++)
		k += sn_peer_known(ctx, i);
	return k;
}

/* ------------------------------------------------------------- open/close */

/* The shm provider names its region /dev/shm/PID:IDX:IDX and never removes
 * it when a process is killed; with pids recycled (pid_max 32768), a later
 * process can draw a dead one's name and fail to open with EBUSY. We name
 * regions ourselves, with a random part so a name is never reused, and
 * remove our own regions whose process is gone. */
#define SHM_PREFIX "storm-sn."

static void shm_sweep_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *e;
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;
		long pid;
		if (strncmp(e->d_name, SHM_PREFIX, strlen(SHM_PREFIX)) ||
		    sscanf(e->d_name + strlen(SHM_PREFIX), "%ld.", &pid) != 1 || pid <= 0 ||
		    fstatat(dirfd(d), e->d_name, &st, 0) || st.st_uid != geteuid())
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

static int shm_name_endpoint(struct fid_ep *ep, int rail)
{
	uint32_t token = 0;
	char name[64];
	shm_sweep_stale();
	if (getrandom(&token, sizeof(token), 0) != sizeof(token))
		token = (uint32_t)now_ns();
	snprintf(name, sizeof(name), SHM_PREFIX "%ld.%08x.%d", (long)getpid(), token, rail);
	return fi_setname(&ep->fid, name, strlen(name) + 1);
}

/* Every message goes by ofi_rxm's eager protocol, none by rendezvous: a
 * receive rxm matched to a rendezvous is completed by an RMA read from the
 * sender, one per iovec of its send, and when the sender dies (an MM killed
 * in a program multicast) rxm fails that receive once per read. Reposting
 * the buffer on the first failure put it in the receive queue twice (the
 * second failure reposted it again: two messages in one buffer); not
 * reposting lost it, and a node whose buffers were all lost never heard the
 * new MM. An eager message is one stream straight into the posted buffer
 * (rxm's dynamic receive buffers over tcp): a sender that dies in it fails
 * that receive once. With direct send (tcp) the sender does not copy it
 * either, so large eager messages cost no more than a rendezvous. rxm reads
 * the limit when an endpoint opens; other providers ignore it. */
static void rxm_all_eager(size_t chunk_size)
{
	size_t need = SN_WIRE_HDR_MAX + SN_INLINE_MAX + chunk_size;
	const char *cur = getenv("FI_OFI_RXM_EAGER_LIMIT");
	if (cur && strtoull(cur, NULL, 10) >= need)
		return;
	char v[32];
	snprintf(v, sizeof(v), "%zu", need);
	setenv("FI_OFI_RXM_EAGER_LIMIT", v, 1);
}

/* ofi_rxd keeps up to FI_OFI_RXD_MAX_UNACKED datagrams of 4 KiB in flight
 * to a peer, 128 by default: 512 KiB, beyond what the kernel's default
 * receive buffer (208 KiB) takes in while the peer is busy. The rest is
 * dropped, and rxd resends a lost datagram after a back-off that doubles up
 * to 4 s and starts over only once nothing is outstanding to that peer: a
 * node back from a stop, with the backlog it was sent, took 4 s a loss and
 * did not answer a COMPARE-AND-WRITE within the timeout (sn_mptest
 * `cutoff`). 32 fit in the buffer; other providers ignore it. */
static void rxd_window_fits(void)
{
	setenv("FI_OFI_RXD_MAX_UNACKED", "32", 0);
}

/* ofi_rxm over verbs sizes each endpoint's verbs completion queue for its
 * message queues times FI_UNIVERSE_SIZE peers, 256 by default: (128 + 128)
 * x 256 = 65,536 entries, beyond what soft-RoCE (rdma_rxe) gives one queue
 * (32,767), so no endpoint opens there ("Unable to create verbs CQ").
 * A fabric's peers are its nodes: that many, unless set. libfabric reads it
 * once, at its first call in the process; tcp and the others keep theirs. */
static void rxm_universe_fits(const struct sn_ctx *ctx)
{
	const char *sys = ctx->cfg.sys_provider;
	if (!strstr(ctx->cfg.provider, "verbs") && !(sys && strstr(sys, "verbs")))
		return;
	char v[16];
	snprintf(v, sizeof(v), "%u", ctx->n > 1 ? ctx->n : 2);
	setenv("FI_UNIVERSE_SIZE", v, 0);
}

/* Whether every rail that runs ofi_rxm runs it over tcp (and one does). */
static bool rxm_over_tcp_only(const struct sn_ctx *ctx)
{
	const char *p[2] = {ctx->cfg.provider, ctx->cfg.sys_provider};
	bool any = false;
	for (int i = 0; i < 2; i++) {
		if (!p[i] || !strstr(p[i], "ofi_rxm"))
			continue;
		if (!strstr(p[i], "tcp"))
			return false;
		any = true;
	}
	return any;
}

/* ofi_rxm over tcp allocates its bounce buffers 1024 at a time, each of
 * FI_OFI_RXM_BUFFER_SIZE (16 KiB) plus a header, zeroed (resident) at once,
 * and posts FI_OFI_RXM_MSG_RX_SIZE of them (4096 over tcp, into one shared
 * receive context) when the endpoint opens: 4 such regions for receives and
 * one for sends, 82 MiB of a daemon's 95. Over tcp none of them carries
 * storm's data: receives are placed straight into the buffer storm posted
 * (rxm's dynamic receive buffers; a receive buffer holds only rxm's header
 * of a message in flight) and sends go from storm's memory (direct send);
 * only a message that arrives with none of storm's receives posted is
 * copied into a receive buffer, when it fits (larger, rxm allocates one
 * for it). So:
 *  - a buffer holds storm's largest small message, a full header and an
 *    inline payload (SN_WIRE_HDR_MAX + SN_INLINE_MAX);
 *  - 256 are posted: the messages the endpoint reads from its sockets at
 *    once, one per connection at most, well above a node daemon's peers
 *    (tree neighbours, the MM); more wait in the kernel's socket buffers
 *    (TCP's flow control), and the rest of the first 1024-buffer region
 *    holds messages that arrive before storm posts a receive for them;
 *  - FI_UNIVERSE_SIZE, which over tcp only sizes each endpoint's message
 *    completion queue (posted receives + 128 sends a connection x the
 *    universe, 1024 by default: 12 MiB, resident bit by bit as the queue
 *    wraps), 16: 16 x 128 covers the 2048 sends rxm lets an endpoint have
 *    outstanding (a full queue spills into a list, nothing is lost).
 * Over verbs (no dynamic receive buffers) the buffer size is the eager
 * limit and each connection posts its own buffers: left as they are.
 * rxm_env.h says which values the environment may change. */
static void rxm_tcp_buffers_fit(const struct sn_ctx *ctx)
{
	if (!rxm_over_tcp_only(ctx))
		return;
	sn_rxm_tcp_env();
}

/* bootstrap "static:PORT": node i's endpoint on rail r listens on its host
 * at PORT + 2i + r, so no two endpoints of one host collide (a virtual
 * cluster runs every node on one host). */
static unsigned static_port(const struct sn_ctx *ctx, uint32_t node, int rail)
{
	return ctx->static_port + 2 * node + (unsigned)rail;
}

/* Every peer's address from its host and port, as the provider resolves
 * them (fi_getinfo with node and service): no exchange. A host that does
 * not resolve leaves that node unreachable, not the fabric closed. */
static int static_peers(struct sn_ctx *ctx, int rail)
{
	struct rail *rl = &ctx->rails[rail];
	for (uint32_t i = 0; i < ctx->n; i++) {
		if (i == ctx->self)
			continue;
		struct fi_info *hints = fi_dupinfo(rl->info), *info = NULL;
		if (!hints)
			return fail(ctx, -ENOMEM, "out of memory");
		free(hints->src_addr);
		hints->src_addr = NULL;
		hints->src_addrlen = 0;
		free(hints->dest_addr);
		hints->dest_addr = NULL;
		hints->dest_addrlen = 0;
		char port[16];
		snprintf(port, sizeof(port), "%u", static_port(ctx, i, rail));
		int rc = fi_getinfo(FI_VERSION(1, 9), ctx->cfg.hosts[i], port, 0, hints, &info);
		fi_freeinfo(hints);
		if (rc || !info->dest_addr || !info->dest_addrlen ||
		    peer_set(ctx, rail, i, info->dest_addr, info->dest_addrlen) < 0)
			note(ctx, "node %u: no fabric address for %s:%s: %s", i, ctx->cfg.hosts[i],
			     port, rc ? fi_strerror(-rc) : "not usable");
		if (!rc)
			fi_freeinfo(info);
	}
	return 0;
}

/* Registers global memory for remote writes; without it the rail stays on
 * messages. Only the part past SN_GMEM_RESERVED (the layer's own) is
 * exposed. The key and base go out with our address (addr_blob). */
static void rma_open(struct sn_ctx *ctx, struct rail *rl, const char *prov)
{
	const struct fi_info *fi = rl->info;
	uint64_t mode = fi->domain_attr->mr_mode;
	uint8_t *start = ctx->gmem + SN_GMEM_RESERVED;
	size_t len = ctx->gmem_size - SN_GMEM_RESERVED;
	/* a requested key (no FI_MR_PROV_KEY) only needs to be unique here */
	uint64_t want_key = (uint64_t)(rl - ctx->rails) + 1;
	int rc = fi_mr_reg(rl->domain, start, len, FI_REMOTE_WRITE, 0, want_key, 0, &rl->mr,
			   NULL);
	/* FI_MR_ENDPOINT: a region is usable only bound to the endpoint */
	if (!rc && (mode & FI_MR_ENDPOINT) && !(rc = fi_mr_bind(rl->mr, &rl->ep->fid, 0)))
		rc = fi_mr_enable(rl->mr);
	if (rc) {
		note(ctx, "%s: cannot register global memory (%s): messages", prov,
		     fi_strerror(-rc));
		if (rl->mr)
			fi_close(&rl->mr->fid);
		rl->mr = NULL;
		return;
	}
	rl->mr_key = fi_mr_key(rl->mr);
	/* address = base + offset: a virtual address, or one relative to the
	 * registered region's start */
	rl->mr_base = (mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)ctx->gmem
					       : (uint64_t)0 - SN_GMEM_RESERVED;
}

/* Asks libfabric for prov with what the primitives need (caps, order);
 * where RMA is missing, for messages alone. A static bootstrap binds where
 * every peer computes us to be: *host is then set. */
static int rail_getinfo(struct sn_ctx *ctx, int rail, const char *prov, const char **host)
{
	struct rail *rl = &ctx->rails[rail];
	struct fi_info *hints = fi_allocinfo();
	int rc;
	if (!hints)
		return fail(ctx, -ENOMEM, "out of memory");
	/* Messages in order (sn.h promises one sender's transfers in order);
	 * RMA where the provider has it (FI_MSG alone otherwise, below), in
	 * order with them: send after write, so a chunk's header,
	 * sent right after its write, is handled by the peer once the chunk
	 * is in place, without waiting for the write's completion (waiting
	 * for it, delivery complete, let a stopped or dead peer stall every
	 * later write on shm, which completes a sender's operations in the
	 * order posted); write after write, so of two transfers into one
	 * range the later stays */
	hints->caps = ctx->cfg.rma ? FI_MSG | FI_RMA : FI_MSG;
	hints->tx_attr->msg_order = hints->rx_attr->msg_order =
		ctx->cfg.rma ? FI_ORDER_SAS | FI_ORDER_SAW | FI_ORDER_WAW : FI_ORDER_SAS;
	hints->ep_attr->type = FI_EP_RDM;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	/* no FI_MR_LOCAL: providers that need registered buffers are used under
	 * ofi_rxm, which registers for us */
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->domain_attr->threading = FI_THREAD_DOMAIN;
	hints->fabric_attr->prov_name = strdup(prov);
	/* sockets' own progress threads starve on a busy node and drop
	 * connections; we drive progress ourselves (it then has no wait fd) */
	if (!strncmp(prov, "sockets", 7))
		hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	char port[16];
	*host = NULL;
	if (ctx->boot == BOOT_STATIC) {
		/* bind where every peer computes us to be */
		*host = ctx->cfg.hosts[ctx->self];
		snprintf(port, sizeof(port), "%u", static_port(ctx, ctx->self, rail));
	}
	rc = fi_getinfo(FI_VERSION(1, 9), *host, *host ? port : NULL, *host ? FI_SOURCE : 0,
			hints, &rl->info);
	if (rc == -FI_ENODATA && (hints->caps & FI_RMA)) {
		hints->caps = FI_MSG;
		hints->tx_attr->msg_order = hints->rx_attr->msg_order = FI_ORDER_SAS;
		rc = fi_getinfo(FI_VERSION(1, 9), *host, *host ? port : NULL,
				*host ? FI_SOURCE : 0, hints, &rl->info);
	}
	fi_freeinfo(hints);
	if (rc)
		return fail(ctx, -ENOENT, "libfabric provider '%s' is not available here: %s",
			    prov, fi_strerror(-rc));
	/* naming sn_kallsyms_refused is also what links kallsyms.c, and so
	 * its fopen, into every program of this library */
	note(ctx, "rail %d: libfabric's scans of /proc/kallsyms refused: %u", rail,
	     sn_kallsyms_refused);
	return 0;
}

/* The fabric, domain, completion queue (with a wait fd where the provider
 * has one) and address vector. */
static int rail_domain(struct sn_ctx *ctx, struct rail *rl, const char *prov)
{
	int rc;
	struct fi_info *fi = rl->info;
	if ((rc = fi_fabric(fi->fabric_attr, &rl->fabric, NULL)) ||
	    (rc = fi_domain(rl->fabric, fi, &rl->domain, NULL)))
		return fail(ctx, rc, "opening provider '%s': %s", prov, fi_strerror(-rc));
	struct fi_cq_attr cq_attr = {
		.format = FI_CQ_FORMAT_MSG,
		.wait_obj = FI_WAIT_FD,
		.size = ctx->cfg.rx_depth + 4096,
	};
	rl->wait_fd = -1;
	if (fi_cq_open(rl->domain, &cq_attr, &rl->cq, NULL) == 0) {
		if (fi_control(&rl->cq->fid, FI_GETWAIT, &rl->wait_fd))
			rl->wait_fd = -1;
	} else {
		cq_attr.wait_obj = FI_WAIT_NONE;
		if ((rc = fi_cq_open(rl->domain, &cq_attr, &rl->cq, NULL)))
			return fail(ctx, rc, "opening completion queue: %s", fi_strerror(-rc));
	}
	struct fi_av_attr av_attr = {.type = FI_AV_TABLE, .count = ctx->n};
	if ((rc = fi_av_open(rl->domain, &av_attr, &rl->av, NULL)))
		return fail(ctx, rc, "opening address vector: %s", fi_strerror(-rc));
	return 0;
}

/* The endpoint, bound and enabled. A listener bound to an ephemeral port
 * (port 0, SO_REUSEADDR, as tcp binds it) may be handed a port that another
 * socket with SO_REUSEADDR holds, typically a connection just opened by a
 * daemon starting beside us; its listen() then fails with EADDRINUSE, and a
 * new endpoint gets another port. A fixed port (static bootstrap) gets the
 * same answer each time, so it is tried once. */
static int rail_endpoint(struct sn_ctx *ctx, int rail, const char *prov, bool fixed_port)
{
	struct rail *rl = &ctx->rails[rail];
	struct fi_info *fi = rl->info;
	int rc;
	for (int attempt = 0;; attempt++) {
		if (!(rc = fi_endpoint(rl->domain, fi, &rl->ep, NULL)) &&
		    !(rc = fi_ep_bind(rl->ep, &rl->av->fid, 0)) &&
		    !(rc = fi_ep_bind(rl->ep, &rl->cq->fid, FI_TRANSMIT | FI_RECV)) &&
		    !(!strcmp(fi->fabric_attr->prov_name, "shm") &&
		      (rc = shm_name_endpoint(rl->ep, rail))))
			rc = fi_enable(rl->ep);
		if (rc != -FI_EADDRINUSE || fixed_port || attempt == 7)
			break;
		note(ctx, "rail %d (%s): the port it was given is in use; opening again", rail,
		     prov);
		if (rl->ep)
			fi_close(&rl->ep->fid);
		rl->ep = NULL;
	}
	if (rc)
		return fail(ctx, rc, "opening endpoint on '%s': %s", prov, fi_strerror(-rc));
	return 0;
}

/* How much a message and an RMA write may carry on this rail. */
static int rail_limits(struct sn_ctx *ctx, struct rail *rl, const char *prov)
{
	struct fi_info *fi = rl->info;
	size_t maxmsg = fi->ep_attr->max_msg_size;
	rl->max_payload = ctx->cfg.chunk_size;
	if (maxmsg && rl->max_payload > maxmsg - SN_WIRE_HDR_MAX)
		rl->max_payload = maxmsg - SN_WIRE_HDR_MAX;
	/* a write is one operation, bounded like a message; chunk_len is 32 bits */
	rl->rma_chunk = ctx->cfg.rma_chunk_size;
	if (maxmsg && rl->rma_chunk > maxmsg)
		rl->rma_chunk = maxmsg;
	if (rl->rma_chunk > UINT32_MAX)
		rl->rma_chunk = UINT32_MAX;
	if (fi->tx_attr->iov_limit < 2)
		return fail(ctx, -ENOTSUP, "provider '%s' cannot send two-part messages", prov);
	return 0;
}

/* The per-peer tables: addresses, RMA keys, sequence numbers, shares. */
static int rail_peer_tables(struct sn_ctx *ctx, struct rail *rl)
{
	struct fi_info *fi = rl->info;
	rl->addrs = malloc((size_t)ctx->n * SN_ADDR_MAX);
	rl->next = malloc((size_t)ctx->n * SN_ADDR_MAX);
	rl->alens = calloc(ctx->n, sizeof(size_t));
	rl->nlens = calloc(ctx->n, sizeof(size_t));
	rl->stale = calloc(ctx->n, sizeof(bool));
	rl->peers = malloc(ctx->n * sizeof(fi_addr_t));
	rl->rma = calloc(ctx->n, sizeof(bool));
	rl->nrma = calloc(ctx->n, sizeof(bool));
	rl->rkey = calloc(ctx->n, sizeof(uint64_t));
	rl->rbase = calloc(ctx->n, sizeof(uint64_t));
	rl->nrkey = calloc(ctx->n, sizeof(uint64_t));
	rl->nrbase = calloc(ctx->n, sizeof(uint64_t));
	rl->tx_seq = calloc(ctx->n, sizeof(uint64_t));
	rl->placed_seq = calloc(ctx->n, sizeof(uint64_t));
	rl->inflight = calloc(ctx->n, sizeof(*rl->inflight));
	rl->tx_held = calloc(ctx->n, sizeof(uint32_t));
	rl->rx_ns = calloc(ctx->n, sizeof(uint64_t));
	rl->tx_done_ns = calloc(ctx->n, sizeof(uint64_t));
	/* each peer's part of the queue: peers cut off take only theirs */
	size_t share = fi->tx_attr->size / (ctx->n ? ctx->n : 1);
	rl->tx_held_max = share < SN_PEER_TX_MIN   ? SN_PEER_TX_MIN
			  : share > SN_PEER_TX_MAX ? SN_PEER_TX_MAX
						   : (uint32_t)share;
	if (!rl->addrs || !rl->next || !rl->alens || !rl->nlens || !rl->stale || !rl->peers ||
	    !rl->rma || !rl->nrma || !rl->rkey || !rl->rbase || !rl->nrkey || !rl->nrbase ||
	    !rl->tx_seq || !rl->placed_seq || !rl->inflight || !rl->tx_held || !rl->rx_ns ||
	    !rl->tx_done_ns)
		return fail(ctx, -ENOMEM, "out of memory");
	return 0;
}

/* shm has no wait descriptor: a doorbell to sleep on, and the table of the
 * peers' global memory mapped here (bell.h). */
static int rail_bell(struct sn_ctx *ctx, int rail, const uint8_t *addr, size_t alen)
{
	struct rail *rl = &ctx->rails[rail];
	rl->bell_due = calloc(ctx->n, sizeof(bool));
	rl->bell_list = calloc(ctx->n, sizeof(uint32_t));
	rl->map = calloc(ctx->n, sizeof(uint8_t *));
	rl->map_len = calloc(ctx->n, sizeof(size_t));
	rl->map_asked_ns = calloc(ctx->n, sizeof(uint64_t));
	rl->nmap = ctx->n;
	if (!rl->bell_due || !rl->bell_list || !rl->map || !rl->map_len ||
	    !rl->map_asked_ns)
		return fail(ctx, -ENOMEM, "out of memory");
	if ((rl->bell_fd = bell_open(addr, alen)) < 0)
		return fail(ctx, rl->bell_fd, "opening the doorbell of rail %d: %s", rail,
			    strerror(-rl->bell_fd));
	rl->wait_fd = rl->bell_fd;
	/* naming sn_spin_yield_after is also what links spinlock.c, and
	 * so its lock functions, into every program of this library */
	note(ctx, "rail %d (shm): doorbell open; region locks yield after %u spins", rail,
	     sn_spin_yield_after);
	return 0;
}

/* Our own address: in our address vector, then where the peers find it. */
static int rail_publish(struct sn_ctx *ctx, int rail, const char *prov, const uint8_t *addr,
			size_t alen)
{
	struct rail *rl = &ctx->rails[rail];
	int rc;
	for (uint32_t i = 0; i < ctx->n; i++)
		rl->peers[i] = FI_ADDR_NOTAVAIL;
	/* our own entry: messages to ourselves go through the provider too */
	if ((rc = peer_set(ctx, rail, ctx->self, addr, alen)))
		return fail(ctx, rc, "our own fabric address is not usable on '%s'", prov);
	uint8_t blob[SN_ADDR_MAX];
	size_t blen = addr_blob(rl, addr, alen, blob);
	if (ctx->boot == BOOT_DIR &&
	    (rc = sn_boot_publish(ctx->bootdir, rail, ctx->self, blob, blen)))
		return fail(ctx, rc, "publishing address in %s: %s", ctx->bootdir, strerror(-rc));
	if (ctx->boot == BOOT_STATIC)
		return static_peers(ctx, rail);
	return 0;
}

/* rx_depth receive buffers, each of a whole message, posted. */
static int rail_post_rxs(struct sn_ctx *ctx, int rail)
{
	struct rail *rl = &ctx->rails[rail];
	int rc;
	size_t bufsz = SN_WIRE_HDR_MAX + rl->max_payload;
	rl->rx = calloc(ctx->cfg.rx_depth, sizeof(struct slot));
	rl->rx_mem = malloc(bufsz * ctx->cfg.rx_depth);
	if (!rl->rx || !rl->rx_mem)
		return fail(ctx, -ENOMEM, "out of memory for receive buffers");
	for (unsigned i = 0; i < ctx->cfg.rx_depth; i++) {
		struct slot *s = &rl->rx[i];
		s->kind = SLOT_RX;
		s->rail = rail;
		s->buf = rl->rx_mem + bufsz * i;
		s->size = bufsz;
		if ((rc = sni_post_rx(ctx, rl, s)))
			return rc;
	}
	return 0;
}

static int rail_open(struct sn_ctx *ctx, int rail, const char *prov)
{
	struct rail *rl = &ctx->rails[rail];
	const char *host = NULL;
	uint8_t addr[SN_ADDR_MAX];
	size_t alen = sizeof(addr);
	int rc;
	rl->bell_fd = -1;
	if ((rc = rail_getinfo(ctx, rail, prov, &host)) || (rc = rail_domain(ctx, rl, prov)) ||
	    (rc = rail_endpoint(ctx, rail, prov, host != NULL)) ||
	    (rc = rail_limits(ctx, rl, prov)))
		return rc;
	if ((rc = fi_getname(&rl->ep->fid, addr, &alen)))
		return fail(ctx, rc, "fi_getname: %s", fi_strerror(-rc));
	if (alen > SN_ADDR_MAX)
		return fail(ctx, -EOVERFLOW, "fabric address of %zu bytes (at most %d)", alen,
			    SN_ADDR_MAX);
	if ((rc = rail_peer_tables(ctx, rl)))
		return rc;
	/* rxm takes connection requests at most every 10 ms while it is not
	 * connecting itself (FI_OFI_RXM_CM_PROGRESS_INTERVAL, 10000 µs): a
	 * faster poll finds nothing to do, and past 10 ms a 10 ms slice's
	 * strobe or timer wakes a daemon first */
	rl->cm_poll_ms = strstr(rl->info->fabric_attr->prov_name, "ofi_rxm") ? SN_CM_POLL_RXM_MS
									  : SN_CM_POLL_MS;
	if (rl->wait_fd < 0 && !strcmp(rl->info->fabric_attr->prov_name, "shm") &&
	    (rc = rail_bell(ctx, rail, addr, alen)))
		return rc;
	/* global memory is exposed to remote writes only when asked for */
	if (ctx->cfg.rma && (rl->info->caps & FI_RMA) && alen + RMA_TRAILER <= SN_ADDR_MAX)
		rma_open(ctx, rl, prov);
	note(ctx, "rail %d (%s): XFER-AND-SIGNAL by %s", rail, prov,
	     rl->mr ? "RMA write + header message" : "message");
	if ((rc = rail_publish(ctx, rail, prov, addr, alen)) || (rc = rail_post_rxs(ctx, rail)))
		return rc;
	snprintf(ctx->provider[rail], sizeof(ctx->provider[rail]), "%s", prov);
	return 0;
}


static void rail_close(struct rail *rl)
{
	if (rl->ep)
		fi_close(&rl->ep->fid);
	if (rl->mr)
		fi_close(&rl->mr->fid);
	if (rl->av)
		fi_close(&rl->av->fid);
	if (rl->cq)
		fi_close(&rl->cq->fid);
	if (rl->domain)
		fi_close(&rl->domain->fid);
	if (rl->fabric)
		fi_close(&rl->fabric->fid);
	if (rl->info)
		fi_freeinfo(rl->info);
	/* their slots are freed with every other send slot (sni_ctx_free) */
	rl->txq_head = rl->failq = NULL;
	free(rl->rx);
	free(rl->rx_mem);
	free(rl->peers);
	free(rl->addrs);
	free(rl->alens);
	free(rl->bell_due);
	free(rl->bell_list);
	for (uint32_t i = 0; rl->map && i < rl->nmap; i++)
		sni_map_drop(rl, i);
	free(rl->map);
	free(rl->map_len);
	free(rl->map_asked_ns);
	if (rl->bell_fd >= 0)
		close(rl->bell_fd);
	free(rl->next);
	free(rl->nlens);
	free(rl->stale);
	free(rl->rma);
	free(rl->nrma);
	free(rl->rkey);
	free(rl->rbase);
	free(rl->nrkey);
	free(rl->nrbase);
	free(rl->tx_seq);
	free(rl->placed_seq);
	free(rl->inflight);
	free(rl->tx_held);
	free(rl->rx_ns);
	free(rl->tx_done_ns);
}

/* "dir:PATH", "static:PORT" (with cfg->hosts) or "external". */
static int parse_bootstrap(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	const char *b = cfg->bootstrap ? cfg->bootstrap : "(none)";
	if (!strncmp(b, "dir:", 4) && b[4]) {
		ctx->boot = BOOT_DIR;
		return 0;
	}
	if (!strcmp(b, "external")) {
		ctx->boot = BOOT_EXTERNAL;
		return 0;
	}
	if (!strncmp(b, "static:", 7)) {
		char *end;
		unsigned long port = strtoul(b + 7, &end, 10);
		if (end == b + 7 || *end || port == 0 ||
		    port + 2ull * ctx->n + 1 > 65535)
			return fail(ctx, -EINVAL, "bootstrap '%s': the port must leave room for "
				    "2 per node below 65536", b);
		if (!cfg->hosts)
			return fail(ctx, -EINVAL, "bootstrap '%s' needs every node's host", b);
		for (uint32_t i = 0; i < ctx->n; i++)
			if (!cfg->hosts[i] || !cfg->hosts[i][0])
				return fail(ctx, -EINVAL, "bootstrap '%s': node %u has no host", b, i);
		ctx->boot = BOOT_STATIC;
		ctx->static_port = (unsigned)port;
		return 0;
	}
	return fail(ctx, -EINVAL,
		    "bootstrap '%s' not understood (expected dir:PATH, static:PORT or external)", b);
}

/* sn_open fails before a context exists to hold the reason */
static _Thread_local char open_error[512];

/* The configuration, its defaults filled in, and checked. */
static int ctx_config(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	int rc = 0;
	ctx->cfg = *cfg;
	ctx->self = cfg->node_id;
	ctx->n = cfg->node_count;
	/* operations are named (origin, opid): a restarted daemon must not
	 * reuse the ids its predecessor's operations still hold on its peers
	 * (their records live until their deadline), so it starts at random */
	if (getrandom(&ctx->next_opid, sizeof(ctx->next_opid), 0) != sizeof(ctx->next_opid))
		ctx->next_opid = (uint32_t)now_ns();
	ctx->rng = ((uint64_t)ctx->next_opid << 32) ^ now_ns() ^ 0x9e3779b97f4a7c15ull;
	ctx->epfd = -1;
	ctx->ino_fd = -1;
	ctx->gmem_fd = -1;
	if (!ctx->cfg.provider)
		ctx->cfg.provider = "tcp;ofi_rxm";
	if (!ctx->cfg.fanout)
		ctx->cfg.fanout = 4;
	if (!ctx->cfg.timeout_ms)
		ctx->cfg.timeout_ms = 5000;
	if (!ctx->cfg.chunk_size)
		ctx->cfg.chunk_size = 128 * 1024;
	if (!ctx->cfg.rma_chunk_size)
		ctx->cfg.rma_chunk_size = SN_RMA_CHUNK_DEFAULT;
	if (!ctx->cfg.rx_depth)
		ctx->cfg.rx_depth = 32;
	rxm_all_eager(ctx->cfg.chunk_size);
	rxd_window_fits();
	rxm_universe_fits(ctx);
	rxm_tcp_buffers_fit(ctx);
	if (ctx->n == 0 || ctx->n > SN_MAX_NODES)
		rc = fail(ctx, -EINVAL, "node count %u out of range 1..%d", ctx->n, SN_MAX_NODES);
	else if (ctx->self >= ctx->n)
		rc = fail(ctx, -EINVAL, "node id %u out of range 0..%u", ctx->self, ctx->n - 1);
	else if (ctx->cfg.fanout > SN_MAX_FANOUT)
		rc = fail(ctx, -EINVAL, "fan-out %u out of range 1..%d", ctx->cfg.fanout,
			  SN_MAX_FANOUT);
	else if (cfg->gmem_size < SN_GMEM_RESERVED + 8)
		rc = fail(ctx, -EINVAL, "global memory of %zu bytes is smaller than %d",
			  cfg->gmem_size, SN_GMEM_RESERVED + 8);
	return rc;
}

/* A directory bootstrap: the directory, and a watch on it for peers that
 * publish (or restart) later. */
static int ctx_bootdir(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	int rc;
	snprintf(ctx->bootdir, sizeof(ctx->bootdir), "%s", cfg->bootstrap + 4);
	if ((rc = sn_boot_mkdir(ctx->bootdir)))
		return fail(ctx, rc, "cannot create the bootstrap directory %s: %s",
			    ctx->bootdir, strerror(-rc));
	/* watched before the first scan, so no arrival is missed */
	ctx->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (ctx->ino_fd >= 0 &&
	    inotify_add_watch(ctx->ino_fd, ctx->bootdir, IN_MOVED_TO) < 0) {
		close(ctx->ino_fd);
		ctx->ino_fd = -1;
	}
	return 0;
}

/* Global memory, in a memory file that peers on this host can map. */
static int ctx_gmem(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	ctx->gmem_size = (cfg->gmem_size + 4095) & ~(size_t)4095;
	/* a memory file, so that peers on this host can map it (bell.h) */
	ctx->gmem_fd = memfd_create("storm-gmem", MFD_CLOEXEC);
	if (ctx->gmem_fd < 0 || ftruncate(ctx->gmem_fd, (off_t)ctx->gmem_size))
		return fail(ctx, -errno, "cannot make %zu bytes of global memory", ctx->gmem_size);
	ctx->gmem = mmap(NULL, ctx->gmem_size, PROT_READ | PROT_WRITE, MAP_SHARED, ctx->gmem_fd,
			 0);
	if (ctx->gmem == MAP_FAILED) {
		ctx->gmem = NULL;
		return fail(ctx, -errno, "cannot map %zu bytes of global memory", ctx->gmem_size);
	}
	return 0;
}

/* The rails (a second for system traffic when asked), and the peers
 * already published. */
static int ctx_rails(struct sn_ctx *ctx, const struct sn_config *cfg)
{
	int rc;
	ctx->nrails = 1;
	if ((rc = rail_open(ctx, 0, ctx->cfg.provider)))
		return rc;
	if (cfg->sys_provider && *cfg->sys_provider) {
		ctx->nrails = 2;
		if ((rc = rail_open(ctx, 1, cfg->sys_provider)))
			return rc;
	}
	/* whoever published before us; later ones come through the watch */
	for (int r = 0; ctx->boot == BOOT_DIR && r < ctx->nrails; r++)
		for (uint32_t i = 0; i < ctx->n; i++)
			if (i != ctx->self)
				peer_read_file(ctx, r, i);
	return 0;
}

/* One descriptor to sleep on for the whole context; none (-1) when a rail
 * has no wait descriptor, so callers poll. */
static void ctx_epoll(struct sn_ctx *ctx)
{
	ctx->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epfd >= 0 && ctx->ino_fd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN};
		epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->ino_fd, &ev);
	}
	for (int i = 0; i < ctx->nrails && ctx->epfd >= 0; i++) {
		struct epoll_event ev = {.events = EPOLLIN};
		if (ctx->rails[i].wait_fd < 0 ||
		    epoll_ctl(ctx->epfd, EPOLL_CTL_ADD, ctx->rails[i].wait_fd, &ev)) {
			close(ctx->epfd);
			ctx->epfd = -1;
		}
	}
}

/* sn_open without the hooks, which name the files above this one */
int sni_ctx_open(const struct sn_config *cfg, struct sn_ctx **out)
{
	struct sn_ctx *ctx = calloc(1, sizeof(*ctx));
	int rc;
	*out = NULL;
	if (!ctx)
		return -ENOMEM;
	if ((rc = ctx_config(ctx, cfg)) || (rc = parse_bootstrap(ctx, cfg)) ||
	    (ctx->boot == BOOT_DIR && (rc = ctx_bootdir(ctx, cfg))) ||
	    (rc = ctx_gmem(ctx, cfg)) || (rc = ctx_rails(ctx, cfg)))
		goto err;
	ctx_epoll(ctx);
	ctx->opened = true;
	*out = ctx;
	return 0;
err:
	snprintf(open_error, sizeof(open_error), "%s", ctx->err);
	sni_ctx_free(ctx);
	return rc;
}

const char *sn_open_error(void) { return open_error; }

int sni_post_rx(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	ssize_t rc;
	do {
		rc = fi_recv(rl->ep, s->buf, s->size, NULL, FI_ADDR_UNSPEC, &s->fctx);
		if (rc == -FI_EAGAIN)
			fi_cq_read(rl->cq, NULL, 0);
	} while (rc == -FI_EAGAIN);
	if (rc)
		return fail(ctx, (int)rc, "cannot post receive: %s", fi_strerror((int)-rc));
	return 0;
}

void sni_slot_drop_copy(struct slot *s)
{
	if (s->copy && --s->copy->refs == 0)
		free(s->copy);
	s->copy = NULL;
}

/* Frees what sn_open made (sn_close first drains what others wait on). */
void sni_ctx_free(struct sn_ctx *ctx)
{
	for (int i = 0; i < ctx->nrails; i++)
		rail_close(&ctx->rails[i]);
	while (ctx->recs) {
		struct rec *r = ctx->recs;
		ctx->recs = r->next;
		free(r->owned);
		free(r);
	}
	while (ctx->held) { /* a test point's (treeop.c) */
		struct held_msg *h = ctx->held;
		ctx->held = h->next;
		free(h);
	}
	/* the cached ones, those queued, and any a provider still held */
	while (ctx->all_slots) {
		struct slot *s = ctx->all_slots;
		ctx->all_slots = s->all_next;
		sni_slot_drop_copy(s);
		free(s);
	}
	ctx->free_slots = NULL;
	while (ctx->calls) {
		struct caw_call *c = ctx->calls;
		ctx->calls = c->next;
		free(c);
	}
	if (ctx->epfd >= 0)
		close(ctx->epfd);
	if (ctx->ino_fd >= 0)
		close(ctx->ino_fd);
	if (ctx->gmem)
		munmap(ctx->gmem, ctx->gmem_size);
	if (ctx->gmem_fd >= 0)
		close(ctx->gmem_fd);
	free(ctx);
}
