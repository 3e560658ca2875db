/* BCS-MPI trace codec (trace_codec.h; format in docs/bcs-trace.md). Pure. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_codec.h"

struct wbuf {
	uint8_t *p;
	size_t n, cap;
	bool oom;
};

static void put(struct wbuf *w, const void *d, size_t n)
{
	if (w->oom)
		return;
	if (w->n + n > w->cap) {
		size_t c = w->cap ? w->cap * 2 : 64;
		while (c < w->n + n)
			c *= 2;
		uint8_t *q = realloc(w->p, c);
		if (!q) {
			w->oom = true;
			return;
		}
		w->p = q;
		w->cap = c;
	}
	memcpy(w->p + w->n, d, n);
	w->n += n;
}

static void varint(struct wbuf *w, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;
	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	put(w, b, n);
}

struct rbuf {
	const uint8_t *p;
	size_t n, off;
	bool bad;
};

static uint64_t get_varint(struct rbuf *r);

/* a field stored plus one: -1 .. INT32_MAX */
static int32_t get_plus1(struct rbuf *r)
{
	uint64_t v = get_varint(r);
	if (v > (uint64_t)INT32_MAX + 1) {
		r->bad = true;
		return -1;
	}
	return (int32_t)((int64_t)v - 1);
}

static uint64_t get_varint(struct rbuf *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->off >= r->n) {
			r->bad = true;
			return 0;
		}
		uint8_t b = r->p[r->off++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* a count of entries that need at least `min` bytes each */
static size_t get_count(struct rbuf *r, size_t min)
{
	uint64_t c = get_varint(r);
	if (r->bad || (min && c > (r->n - r->off) / min)) {
		r->bad = true;
		return 0;
	}
	return (size_t)c;
}

uint64_t bcs_trace_ntest(const struct bcs_rank_trace *t)
{
	uint64_t n = 0;
	for (size_t k = 0; k < t->nruns; k++)
		n = t->runs[k] > UINT64_MAX - n ? UINT64_MAX : n + t->runs[k];
	return n;
}

uint64_t bcs_trace_ncalls(const struct bcs_rank_trace *t)
{
	uint64_t n = 0;
	for (size_t k = 0; k < t->ncalls; k++) {
		uint64_t c = t->calls[k].repeat == UINT64_MAX ? UINT64_MAX : t->calls[k].repeat + 1;
		n = c > UINT64_MAX - n ? UINT64_MAX : n + c;
	}
	return n;
}

const struct bcs_call *bcs_trace_call_at(const struct bcs_rank_trace *t, uint64_t n)
{
	for (size_t k = 0; n && k < t->ncalls; k++) {
		if (n - 1 <= t->calls[k].repeat)
			return &t->calls[k];
		n -= t->calls[k].repeat + 1;
	}
	return NULL;
}

static const char *const call_names[] = {
	[BCS_C_SEND] = "MPI_Send",	   [BCS_C_SSEND] = "MPI_Ssend",
	[BCS_C_ISEND] = "MPI_Isend",	   [BCS_C_ISSEND] = "MPI_Issend",
	[BCS_C_RECV] = "MPI_Recv",	   [BCS_C_IRECV] = "MPI_Irecv",
	[BCS_C_SENDRECV] = "MPI_Sendrecv", [BCS_C_WAIT] = "MPI_Wait",
	[BCS_C_TEST] = "MPI_Test",	   [BCS_C_WAITALL] = "MPI_Waitall",
	[BCS_C_TESTALL] = "MPI_Testall",   [BCS_C_WAITANY] = "MPI_Waitany",
	[BCS_C_TESTANY] = "MPI_Testany",   [BCS_C_WAITSOME] = "MPI_Waitsome",
	[BCS_C_PROBE] = "MPI_Probe",	   [BCS_C_IPROBE] = "MPI_Iprobe",
	[BCS_C_BARRIER] = "MPI_Barrier",   [BCS_C_BCAST] = "MPI_Bcast",
	[BCS_C_REDUCE] = "MPI_Reduce",	   [BCS_C_ALLREDUCE] = "MPI_Allreduce",
	[BCS_C_GATHER] = "MPI_Gather",	   [BCS_C_SCATTER] = "MPI_Scatter",
	[BCS_C_ALLGATHER] = "MPI_Allgather", [BCS_C_ALLTOALL] = "MPI_Alltoall",
	[BCS_C_FINALIZE] = "MPI_Finalize", [BCS_C_TESTSOME] = "MPI_Testsome",
	[BCS_C_ISENDRECV] = "MPI_Isendrecv", [BCS_C_RSEND] = "MPI_Rsend",
	[BCS_C_IRSEND] = "MPI_Irsend",
};

const char *bcs_call_name(uint32_t kind)
{
	return kind <= BCS_C_MAX && call_names[kind] ? call_names[kind] : "MPI_?";
}

static void peer_text(char *out, size_t len, const char *what, int32_t peer)
{
	if (peer == -1)
		snprintf(out, len, "%s=MPI_ANY_SOURCE", what);
	else if (peer == -2)
		snprintf(out, len, "%s=MPI_PROC_NULL", what);
	else if (peer == BCS_ARG_BAD)
		snprintf(out, len, "%s=invalid", what);
	else
		snprintf(out, len, "%s=%d", what, peer);
}

void bcs_call_describe(const struct bcs_call *c, char *out, size_t len)
{
	char peer[48] = "", tag[32] = "";
	uint32_t k = c->kind;
	/* a wait or test names its first receive's source (the peer given) */
	bool send = k == BCS_C_SEND || k == BCS_C_SSEND || k == BCS_C_ISEND || k == BCS_C_ISSEND ||
		    k == BCS_C_SENDRECV || k == BCS_C_ISENDRECV || k == BCS_C_RSEND ||
		    k == BCS_C_IRSEND;
	bool coll = k >= BCS_C_BARRIER && k <= BCS_C_ALLTOALL;
	bool tagged = !coll && c->peer != BCS_PEER_NONE;
	if (c->peer != BCS_PEER_NONE)
		peer_text(peer, sizeof(peer), send ? "dest" : coll ? "root" : "source", c->peer);
	if (tagged && c->tag == -1)
		snprintf(tag, sizeof(tag), ", tag=MPI_ANY_TAG");
	else if (tagged && c->tag == BCS_ARG_BAD)
		snprintf(tag, sizeof(tag), ", tag=invalid");
	else if (tagged)
		snprintf(tag, sizeof(tag), ", tag=%d", c->tag);
	snprintf(out, len, "%s(%s%s%s%llu bytes)", bcs_call_name(k), peer, tag,
		 *peer ? ", " : "", (unsigned long long)c->bytes);
}

uint8_t *bcs_trace_encode_rank(const struct bcs_rank_trace *t, size_t *len)
{
	struct wbuf w = {0};
	varint(&w, t->rank);
	varint(&w, t->nwild);
	for (size_t i = 0; i < t->nwild; i++) {
		varint(&w, (uint64_t)((int64_t)t->wild[i].src + 1));
		varint(&w, (uint64_t)((int64_t)t->wild[i].tag + 1));
	}
	varint(&w, t->nruns);
	for (size_t k = 0; k < t->nruns; k++)
		varint(&w, t->runs[k]);
	varint(&w, t->nindex);
	for (size_t i = 0; i < t->nindex; i++)
		varint(&w, (uint64_t)((int64_t)t->index[i] + 1));
	varint(&w, t->nmask);
	for (size_t i = 0; i < t->nmask; i++)
		varint(&w, t->mask[i]);
	varint(&w, t->end);
	varint(&w, (uint32_t)t->status);
	varint(&w, t->nmarks);
	for (size_t i = 0; i < t->nmarks; i++) {
		varint(&w, t->marks[i].ckpt);
		for (int k = 0; k < BCS_S_N; k++)
			varint(&w, t->marks[i].n[k]);
	}
	varint(&w, t->ncalls);
	for (size_t i = 0; i < t->ncalls; i++) {
		const struct bcs_call *c = &t->calls[i];
		varint(&w, c->kind | (uint64_t)((int64_t)c->peer + 3) << 6);
		varint(&w, (uint64_t)((int64_t)c->tag + 1));
		varint(&w, c->bytes);
		varint(&w, c->repeat);
	}
	varint(&w, t->blocked);
	if (w.oom) {
		free(w.p);
		return NULL;
	}
	*len = w.n;
	return w.p;
}

/* a call's kind and peer share a varint; false if out of range */
static bool call_of(uint64_t kp, uint64_t tag1, struct bcs_call *c)
{
	uint64_t kind = kp & 63, peer3 = kp >> 6;
	if (kind == 0 || kind > BCS_C_MAX || peer3 > (uint64_t)INT32_MAX + 3 ||
	    tag1 > (uint64_t)INT32_MAX + 1)
		return false;
	c->kind = (uint32_t)kind;
	c->peer = (int32_t)((int64_t)peer3 - 3);
	c->tag = (int32_t)((int64_t)tag1 - 1);
	return true;
}

static void decode_calls(struct rbuf *r, struct bcs_rank_trace *t)
{
	t->ncalls = get_count(r, 4);
	if (!r->bad && t->ncalls && !(t->calls = calloc(t->ncalls, sizeof(*t->calls))))
		r->bad = true;
	for (size_t i = 0; !r->bad && i < t->ncalls; i++) {
		uint64_t kp = get_varint(r), tag1 = get_varint(r);
		t->calls[i].bytes = get_varint(r);
		t->calls[i].repeat = get_varint(r);
		if (!r->bad && !call_of(kp, tag1, &t->calls[i]))
			r->bad = true;
	}
	uint64_t blocked = get_varint(r);
	if (blocked > 1)
		r->bad = true;
	t->blocked = blocked == 1;
}

static int decode_rank(const uint8_t *buf, size_t len, struct bcs_rank_trace *t,
		       uint64_t version)
{
	struct rbuf r = {.p = buf, .n = len};
	memset(t, 0, sizeof(*t));
	uint64_t rank = get_varint(&r);
	if (rank > UINT32_MAX)
		return -1;
	t->rank = (uint32_t)rank;
	t->nwild = get_count(&r, 2);
	if (!r.bad && t->nwild && !(t->wild = calloc(t->nwild, sizeof(*t->wild))))
		return -1;
	for (size_t i = 0; !r.bad && i < t->nwild; i++) {
		t->wild[i].src = get_plus1(&r);
		t->wild[i].tag = get_plus1(&r);
	}
	t->nruns = get_count(&r, 1);
	if (!r.bad && t->nruns && !(t->runs = calloc(t->nruns, sizeof(*t->runs))))
		r.bad = true;
	for (size_t k = 0; !r.bad && k < t->nruns; k++)
		t->runs[k] = get_varint(&r);
	t->nindex = get_count(&r, 1);
	if (!r.bad && t->nindex && !(t->index = calloc(t->nindex, sizeof(*t->index))))
		r.bad = true;
	for (size_t i = 0; !r.bad && i < t->nindex; i++)
		t->index[i] = get_plus1(&r);
	t->nmask = get_count(&r, 1);
	if (!r.bad && t->nmask && !(t->mask = calloc(t->nmask, sizeof(*t->mask))))
		r.bad = true;
	for (size_t i = 0; !r.bad && i < t->nmask; i++)
		t->mask[i] = get_varint(&r);
	if (version >= 2) { /* version 1 had only runs that reached MPI_Finalize */
		uint64_t end = get_varint(&r), status = get_varint(&r);
		if (end > BCS_END_MAX || status > UINT32_MAX)
			r.bad = true;
		t->end = (uint32_t)end;
		t->status = (int32_t)(uint32_t)status;
	}
	if (version >= 3) { /* the checkpoints' marks */
		t->nmarks = get_count(&r, 1 + BCS_S_N);
		if (!r.bad && t->nmarks && !(t->marks = calloc(t->nmarks, sizeof(*t->marks))))
			r.bad = true;
		for (size_t i = 0; !r.bad && i < t->nmarks; i++) {
			t->marks[i].ckpt = get_varint(&r);
			for (int k = 0; k < BCS_S_N; k++)
				t->marks[i].n[k] = get_varint(&r);
		}
	}
	if (version >= 4 && !r.bad)
		decode_calls(&r, t);
	if (r.bad || r.off != r.n) {
		bcs_rank_trace_free(t);
		return -1;
	}
	return 0;
}

int bcs_trace_decode_rank(const uint8_t *buf, size_t len, struct bcs_rank_trace *t)
{
	return decode_rank(buf, len, t, BCS_TRACE_VERSION);
}

void bcs_rank_trace_free(struct bcs_rank_trace *t)
{
	free(t->wild);
	free(t->runs);
	free(t->index);
	free(t->mask);
	free(t->marks);
	free(t->calls);
	memset(t, 0, sizeof(*t));
}

uint8_t *bcs_trace_encode(const struct bcs_trace *t, uint8_t *const *secs, const size_t *lens,
			  size_t *len)
{
	struct wbuf w = {0};
	put(&w, BCS_TRACE_MAGIC, 4);
	varint(&w, BCS_TRACE_VERSION);
	varint(&w, t->nodes);
	varint(&w, t->ranks);
	varint(&w, t->job);
	varint(&w, t->argc);
	for (uint32_t i = 0; i < t->argc; i++) {
		size_t n = strlen(t->argv[i]);
		varint(&w, n);
		put(&w, t->argv[i], n);
	}
	varint(&w, t->nsections);
	for (uint32_t i = 0; i < t->nsections; i++) {
		varint(&w, lens[i]);
		put(&w, secs[i], lens[i]);
	}
	if (w.oom) {
		free(w.p);
		return NULL;
	}
	*len = w.n;
	return w.p;
}

void bcs_trace_free(struct bcs_trace *t)
{
	for (uint32_t i = 0; t->argv && i < t->argc; i++)
		free(t->argv[i]);
	free(t->argv);
	for (uint32_t i = 0; t->sec && i < t->nsections; i++)
		bcs_rank_trace_free(&t->sec[i]);
	free(t->sec);
	memset(t, 0, sizeof(*t));
}

int bcs_trace_decode(const void *buf, size_t len, struct bcs_trace *t, char *why, size_t whylen)
{
	struct rbuf r = {.p = buf, .n = len};
	memset(t, 0, sizeof(*t));
	const char *err = NULL;
	if (len < 4 || memcmp(buf, BCS_TRACE_MAGIC, 4)) {
		snprintf(why, whylen, "not a BCS-MPI trace (bad magic)");
		return -1;
	}
	r.off = 4;
	uint64_t v = get_varint(&r);
	if (!r.bad && (v < 1 || v > BCS_TRACE_VERSION)) {
		snprintf(why, whylen, "trace version %llu, this storm reads %d",
			 (unsigned long long)v, BCS_TRACE_VERSION);
		return -1;
	}
	uint64_t nodes = get_varint(&r), ranks = get_varint(&r);
	t->version = (uint32_t)v;
	t->job = v >= 3 ? get_varint(&r) : 0;
	size_t argc = get_count(&r, 1);
	if (r.bad || nodes > UINT32_MAX || ranks > UINT32_MAX || argc == 0) {
		err = "truncated or malformed header";
		goto bad;
	}
	t->nodes = (uint32_t)nodes;
	t->ranks = (uint32_t)ranks;
	if (!(t->argv = calloc(argc, sizeof(char *)))) {
		err = "out of memory";
		goto bad;
	}
	t->argc = (uint32_t)argc;
	for (size_t i = 0; i < argc; i++) {
		size_t n = get_count(&r, 0);
		if (r.bad || n > r.n - r.off) {
			err = "truncated argument";
			goto bad;
		}
		if (!(t->argv[i] = malloc(n + 1))) {
			err = "out of memory";
			goto bad;
		}
		memcpy(t->argv[i], r.p + r.off, n);
		t->argv[i][n] = '\0';
		if (strlen(t->argv[i]) != n) {
			err = "argument with a NUL byte";
			goto bad;
		}
		r.off += n;
	}
	size_t ns = get_count(&r, 1);
	if (r.bad || ns > t->ranks) {
		err = "bad section count";
		goto bad;
	}
	if (ns && !(t->sec = calloc(ns, sizeof(*t->sec)))) {
		err = "out of memory";
		goto bad;
	}
	for (size_t i = 0; i < ns; i++) {
		size_t n = get_count(&r, 0);
		if (r.bad || n > r.n - r.off) {
			err = "truncated rank section";
			goto bad;
		}
		if (decode_rank(r.p + r.off, n, &t->sec[i], v) < 0) {
			err = "malformed rank section";
			goto bad;
		}
		t->nsections = (uint32_t)i + 1; /* freed with t from here on */
		if (t->sec[i].rank >= t->ranks) {
			err = "rank section for a rank beyond the job";
			goto bad;
		}
		r.off += n;
	}
	if (r.off != r.n) {
		err = "trailing bytes";
		goto bad;
	}
	return 0;
bad:
	snprintf(why, whylen, "%s", err);
	bcs_trace_free(t);
	return -1;
}

/* ---- the streamed form */

static const uint8_t nvals[] = {
	[BCS_EV_WPOST] = 0, [BCS_EV_WDONE] = 3, [BCS_EV_TEST] = 2, [BCS_EV_INDEX] = 1,
	[BCS_EV_MASK] = 1,  [BCS_EV_FINAL] = 0, [BCS_EV_EXIT] = 1, [BCS_EV_LOST] = 0,
	[BCS_EV_MARK] = 5,
	[BCS_EV_CALL] = 3,  [BCS_EV_REPEAT] = 1, [BCS_EV_BLOCKED] = 0,
};

size_t bcs_stream_event_len(const uint8_t *p, size_t n)
{
	if (n == 0 || p[0] < BCS_EV_WPOST || p[0] > BCS_EV_BLOCKED)
		return 0;
	size_t off = 1;
	for (unsigned k = 0; k < nvals[p[0]]; k++) {
		size_t start = off;
		while (off < n && (p[off] & 0x80) && off - start < 9)
			off++;
		if (off >= n || (p[off] & 0x80))
			return 0;
		off++;
	}
	return off;
}

static size_t event(uint8_t *out, int ev, const uint64_t *v)
{
	size_t n = 0;
	out[n++] = (uint8_t)ev;
	for (unsigned k = 0; k < nvals[ev]; k++) {
		uint64_t x = v[k];
		do {
			out[n] = (uint8_t)(x & 0x7f);
			x >>= 7;
			if (x)
				out[n] |= 0x80;
			n++;
		} while (x);
	}
	return n;
}

size_t bcs_stream_event(uint8_t *out, int ev, uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t v[3] = {a, b, c};
	return ev == BCS_EV_MARK ? 0 : event(out, ev, v);
}

size_t bcs_stream_mark(uint8_t *out, const struct bcs_mark *m)
{
	uint64_t v[1 + BCS_S_N] = {m->ckpt};
	memcpy(v + 1, m->n, sizeof(m->n));
	return event(out, BCS_EV_MARK, v);
}

const struct bcs_mark *bcs_trace_mark(const struct bcs_rank_trace *t, uint64_t ckpt)
{
	for (size_t i = 0; i < t->nmarks; i++)
		if (t->marks[i].ckpt == ckpt)
			return &t->marks[i];
	return NULL;
}

/* grows an array of a rank trace by one element; false without memory */
static bool room(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return true;
	size_t c = *cap ? *cap * 2 : 64;
	void *q = realloc(*p, c * elem);
	if (!q)
		return false;
	*p = q;
	*cap = c;
	return true;
}

static bool apply_test(struct bcs_rank_trace *t, uint64_t flag, uint64_t count)
{
	if (flag > 1)
		return false;
	if (!count)
		return true;
	/* runs alternate zeros, ones, zeros, ...: the same flag extends the last */
	if (t->nruns && (t->nruns - 1) % 2 == flag) {
		t->runs[t->nruns - 1] += count;
		return true;
	}
	if (!room((void **)&t->runs, &t->capruns, t->nruns + 1, sizeof(*t->runs)))
		return false;
	if (t->nruns == 0 && flag) {
		t->runs[t->nruns++] = 0;
		if (!room((void **)&t->runs, &t->capruns, t->nruns + 1, sizeof(*t->runs)))
			return false;
	}
	t->runs[t->nruns++] = count;
	return true;
}

static bool apply_one(struct bcs_rank_trace *t, struct rbuf *r)
{
	uint8_t ev = r->p[r->off++];
	uint64_t a, b, c;
	switch (ev) {
	case BCS_EV_WPOST:
		if (!room((void **)&t->wild, &t->capwild, t->nwild + 1, sizeof(*t->wild)))
			return false;
		t->wild[t->nwild++] = (struct bcs_wild){-1, -1};
		return true;
	case BCS_EV_WDONE:
		a = get_varint(r);
		b = get_varint(r);
		c = get_varint(r);
		if (r->bad || a >= t->nwild || b > (uint64_t)INT32_MAX + 1 ||
		    c > (uint64_t)INT32_MAX + 1)
			return false;
		t->wild[a] = (struct bcs_wild){(int32_t)((int64_t)b - 1), (int32_t)((int64_t)c - 1)};
		return true;
	case BCS_EV_TEST:
		a = get_varint(r);
		b = get_varint(r);
		return !r->bad && apply_test(t, a, b);
	case BCS_EV_INDEX:
		a = get_varint(r);
		if (r->bad || a > (uint64_t)INT32_MAX + 1 ||
		    !room((void **)&t->index, &t->capindex, t->nindex + 1, sizeof(*t->index)))
			return false;
		t->index[t->nindex++] = (int32_t)((int64_t)a - 1);
		return true;
	case BCS_EV_MASK:
		a = get_varint(r);
		if (r->bad || !room((void **)&t->mask, &t->capmask, t->nmask + 1, sizeof(*t->mask)))
			return false;
		t->mask[t->nmask++] = a;
		return true;
	case BCS_EV_FINAL:
		t->finalized = true;
		t->end = BCS_END_FINALIZED;
		return true;
	case BCS_EV_EXIT:
		a = get_varint(r);
		if (r->bad || a > UINT32_MAX)
			return false;
		t->status = (int32_t)(uint32_t)a;
		if (!t->finalized)
			t->end = BCS_END_EXITED;
		return true;
	case BCS_EV_MARK: {
		struct bcs_mark m;
		m.ckpt = get_varint(r);
		for (int k = 0; k < BCS_S_N; k++)
			m.n[k] = get_varint(r);
		if (r->bad)
			return false;
		/* a checkpoint marks a rank once; a repeat (a report sent again)
		 * is the same mark */
		struct bcs_mark *old = (struct bcs_mark *)bcs_trace_mark(t, m.ckpt);
		if (old) {
			*old = m;
			return true;
		}
		if (!room((void **)&t->marks, &t->capmarks, t->nmarks + 1, sizeof(*t->marks)))
			return false;
		t->marks[t->nmarks++] = m;
		return true;
	}
	case BCS_EV_LOST:
		/* the node's last word stands: an exit it reported came first */
		if (t->end == BCS_END_RUNNING)
			t->end = BCS_END_LOST;
		return true;
	case BCS_EV_CALL:
		a = get_varint(r);
		b = get_varint(r);
		c = get_varint(r);
		if (r->bad ||
		    !room((void **)&t->calls, &t->capcalls, t->ncalls + 1, sizeof(*t->calls)))
			return false;
		t->calls[t->ncalls] = (struct bcs_call){.bytes = c};
		if (!call_of(a, b, &t->calls[t->ncalls]))
			return false;
		t->ncalls++;
		return true;
	case BCS_EV_REPEAT:
		a = get_varint(r);
		if (r->bad || !t->ncalls)
			return false;
		t->calls[t->ncalls - 1].repeat = a > UINT64_MAX - t->calls[t->ncalls - 1].repeat
							 ? UINT64_MAX
							 : t->calls[t->ncalls - 1].repeat + a;
		return true;
	case BCS_EV_BLOCKED:
		t->blocked = true;
		return true;
	default:
		return false;
	}
}

int bcs_stream_apply(struct bcs_rank_trace *t, const uint8_t *buf, size_t len)
{
	struct rbuf r = {.p = buf, .n = len};
	while (r.off < r.n)
		if (!apply_one(t, &r))
			return -1;
	return 0;
}

const char *bcs_end_name(uint32_t end)
{
	switch (end) {
	case BCS_END_FINALIZED: return "reached MPI_Finalize";
	case BCS_END_EXITED: return "ended without MPI_Finalize";
	case BCS_END_LOST: return "was on a node that was lost";
	default: return "was still running";
	}
}

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *bcs_b64_encode(const uint8_t *in, size_t len)
{
	char *o = malloc(4 * ((len + 2) / 3) + 1), *p = o;
	if (!o)
		return NULL;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16;
		if (i + 1 < len)
			v |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		*p++ = b64[(v >> 18) & 63];
		*p++ = b64[(v >> 12) & 63];
		*p++ = i + 1 < len ? b64[(v >> 6) & 63] : '=';
		*p++ = i + 2 < len ? b64[v & 63] : '=';
	}
	*p = '\0';
	return o;
}

uint8_t *bcs_b64_decode(const char *in, size_t *len)
{
	size_t n = strlen(in);
	if (n % 4)
		return NULL;
	uint8_t *o = malloc(n / 4 * 3 + 1);
	if (!o)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;
		for (int j = 0; j < 4; j++) {
			const char *q = in[i + j] == '=' ? NULL : strchr(b64, in[i + j]);
			if (in[i + j] == '=' && i + 4 == n && j >= 2) {
				pad++;
			} else if (!q || !in[i + j] || pad) {
				free(o);
				return NULL;
			}
			v = v << 6 | (q ? (uint32_t)(q - b64) : 0);
		}
		o[k++] = (uint8_t)(v >> 16);
		if (pad < 2)
			o[k++] = (uint8_t)(v >> 8);
		if (pad < 1)
			o[k++] = (uint8_t)v;
	}
	*len = k;
	return o;
}
