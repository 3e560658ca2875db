/* Global memory: its bounds and variables, and the two ways a chunk goes
 * straight into a peer's: an RMA write, or a plain copy into the memory of
 * a peer on this host that mapped it here at our request (bell.h); and the
 * transfers sent as messages that a later write must not overtake. */
#include "sn_int.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "bell.h"

/* ------------------------------------------------------------ global vars */

int sni_check_range(struct sn_ctx *ctx, uint64_t off, uint64_t len, bool user)
{
	if (off > ctx->gmem_size || len > ctx->gmem_size - off)
		return fail(ctx, -EINVAL,
			    "range [%" PRIu64 ", +%" PRIu64 ") is outside the global memory "
			    "(%zu bytes)", off, len, ctx->gmem_size);
	if (user && off < SN_GMEM_RESERVED && len)
		return fail(ctx, -EINVAL,
			    "offset %" PRIu64 " is in the reserved first %d bytes of global memory",
			    off, SN_GMEM_RESERVED);
	return 0;
}

int sni_check_var(struct sn_ctx *ctx, uint64_t off)
{
	if (off % 8)
		return fail(ctx, -EINVAL, "global variable offset %" PRIu64 " is not 8-aligned",
			    off);
	return sni_check_range(ctx, off, 8, false);
}

uint64_t sn_var_load(struct sn_ctx *ctx, uint64_t off)
{
	return __atomic_load_n((uint64_t *)(ctx->gmem + off), __ATOMIC_ACQUIRE);
}

void sn_var_store(struct sn_ctx *ctx, uint64_t off, uint64_t value)
{
	__atomic_store_n((uint64_t *)(ctx->gmem + off), value, __ATOMIC_RELEASE);
}

bool sn_cmp_eval(enum sn_cmp op, uint64_t lhs, uint64_t rhs)
{
	switch (op) {
	case SN_EQ: return lhs == rhs;
	case SN_NE: return lhs != rhs;
	case SN_LT: return lhs < rhs;
	case SN_LE: return lhs <= rhs;
	case SN_GT: return lhs > rhs;
	case SN_GE: return lhs >= rhs;
	}
	return false;
}

const char *sn_cmp_name(enum sn_cmp op)
{
	static const char *names[] = {"==", "!=", "<", "<=", ">", ">="};
	return (unsigned)op <= SN_GE ? names[op] : "?";
}

/* A chunk straight into dest's global memory. The rail has send-after-write
 * order (rail_open), so the header queued right after it is handled there
 * only once the chunk is in place: nothing waits for this completion but
 * the source buffer. */
ssize_t sni_rma_write(struct rail *rl, struct slot *s)
{
	struct fi_rma_iov riov = {
		.addr = rl->rbase[s->dest] + s->roff,
		.len = s->iov[0].iov_len,
		.key = rl->rkey[s->dest],
	};
	struct fi_msg_rma msg = {
		.msg_iov = &s->iov[0],
		.desc = &s->desc[0],
		.iov_count = 1,
		.addr = rl->peers[s->dest],
		.rma_iov = &riov,
		.rma_iov_count = 1,
		.context = &s->fctx,
	};
	return fi_writemsg(rl->ep, &msg, 0);
}

/* An RMA write into a peer's global memory mapped here: copied now, so it
 * is in place before the header queued behind it even leaves. A peer not
 * mapped yet is asked (again after a second without an answer) and written
 * by RMA meanwhile. */
bool sni_map_write(struct sn_ctx *ctx, struct rail *rl, struct slot *s)
{
	if (!rl->map)
		return false;
	uint8_t *m = rl->map[s->dest];
	if (!m) {
		uint64_t t = now_ns();
		if (!rl->map_asked_ns[s->dest] || t - rl->map_asked_ns[s->dest] > 1000000000ull) {
			rl->map_asked_ns[s->dest] = t;
			int rc = bell_ask_map(rl->bell_fd, rl->addrs + (size_t)s->dest * SN_ADDR_MAX,
					      rl->alens[s->dest]);
			if (rc)
				note(ctx, "asking node %u for its memory: %s", s->dest, strerror(-rc));
		}
		return false;
	}
	/* what the provider's write could reach: past the reserved page */
	size_t len = s->iov[0].iov_len;
	if (s->roff < SN_GMEM_RESERVED || s->roff > rl->map_len[s->dest] ||
	    len > rl->map_len[s->dest] - s->roff)
		return false;
	memcpy(m + s->roff, s->iov[0].iov_base, len);
	/* the header that announces it is sent after this, through memory
	 * the provider orders with its own barriers; this one keeps the
	 * compiler and the CPU from moving the copy past that */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return true;
}

void sni_map_drop(struct rail *rl, uint32_t node)
{
	if (!rl->map)
		return;
	if (rl->map[node])
		munmap(rl->map[node], rl->map_len[node]);
	rl->map[node] = NULL;
	rl->map_asked_ns[node] = 0;
}

struct bell_ctx {
	struct sn_ctx *ctx;
	struct rail *rl;
};

/* A peer on this host asks for our global memory, or gives us its own.
 * Only a process of our user (or root) may have it, the same as the
 * kernel's cross-process copy demands; an answer counts only from the
 * bell of a peer we asked, so nobody can slip us memory of their own. */
static void on_bell(void *arg, enum bell_kind kind, const char *from, uid_t uid, int fd)
{
	struct bell_ctx *b = arg;
	struct sn_ctx *ctx = b->ctx;
	struct rail *rl = b->rl;
	bool trusted = uid == geteuid() || uid == 0;
	if (kind == BELL_ASK_MAP) {
		if (!trusted) {
			ctx->stats.map_refused++;
			note(ctx, "%s (uid %u) asked for our memory: refused", from, (unsigned)uid);
		}
		else if (ctx->gmem_fd >= 0 && bell_give_map(rl->bell_fd, from, ctx->gmem_fd))
			note(ctx, "cannot answer %s's request for our memory", from);
		return;
	}
	uint32_t node = UINT32_MAX;
	for (uint32_t i = 0; i < ctx->n && node == UINT32_MAX; i++)
		if (rl->map_asked_ns[i] && !rl->map[i] && rl->peers[i] != FI_ADDR_NOTAVAIL &&
		    strnlen((const char *)rl->addrs + (size_t)i * SN_ADDR_MAX, rl->alens[i]) ==
			    strlen(from) &&
		    !memcmp(rl->addrs + (size_t)i * SN_ADDR_MAX, from, strlen(from)))
			node = i;
	struct stat st;
	if (!trusted || node == UINT32_MAX || fstat(fd, &st) || st.st_size <= 0) {
		note(ctx, "memory from %s (uid %u) not asked for or unusable: dropped", from,
		     (unsigned)uid);
		close(fd);
		return;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		note(ctx, "cannot map node %u's memory: %s", node, strerror(errno));
		return;
	}
	rl->map[node] = m;
	rl->map_len[node] = (size_t)st.st_size;
	note(ctx, "node %u's memory mapped (%zu bytes): its chunks are plain copies", node,
	     rl->map_len[node]);
}

int sni_bell_take(struct sn_ctx *ctx, struct rail *rl)
{
	struct bell_ctx b = {ctx, rl};
	rl->bell_rounds = 0;
	return bell_drain(rl->bell_fd, on_bell, &b);
}

/* Does [lo, hi) overlap a transfer sent to node d as a message that it may
 * not have placed yet? */
bool sni_overlaps_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < SN_INFLIGHT; i++) {
		struct inflight *f = &rl->inflight[d][i];
		if (f->hi && f->seq > rl->placed_seq[d] && lo < f->hi && f->lo < hi)
			return true;
	}
	return false;
}

/* Remembers [lo, hi), sent to node d as message seq. A slot is free when
 * empty or placed; when none is, the new range joins the one that grows
 * least (a range larger than sent only sends more chunks as messages). */
void sni_note_inflight(struct rail *rl, uint32_t d, uint64_t lo, uint64_t hi, uint64_t seq)
{
	struct inflight *fs = rl->inflight[d], *best = NULL;
	uint64_t grow = UINT64_MAX;
	for (int i = 0; i < SN_INFLIGHT; i++) {
		struct inflight *f = &fs[i];
		if (!f->hi || f->seq <= rl->placed_seq[d]) {
			*f = (struct inflight){lo, hi, seq};
			return;
		}
		uint64_t nlo = f->lo < lo ? f->lo : lo, nhi = f->hi > hi ? f->hi : hi;
		if (nhi - nlo - (f->hi - f->lo) < grow) {
			grow = nhi - nlo - (f->hi - f->lo);
			best = f;
		}
	}
	if (lo < best->lo)
		best->lo = lo;
	if (hi > best->hi)
		best->hi = hi;
	best->seq = seq;
}
