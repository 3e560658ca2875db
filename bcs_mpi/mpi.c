/* BCS-MPI: environment, the channel to the node daemon, requests, point to
 * point, the communicator table, errors. The bottom of the library: every
 * other file calls it and it calls none of them back (bcs.h). Every communication call only posts a
 * descriptor (bcs_mpi/abi/chan.h); the node daemon matches and moves the data at
 * its timeslices, and completions come back at the strobe. */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bcs.h"
#include "chan.h"
#include "trace.h"

#define EAGER_MAX 65536 /* a blocking MPI_Send of at most this is buffered */
#define MAX_COMMS 4096
#define REQ_CHUNK 256
#define REQ_CHUNKS 4096

enum rkind { R_SEND = 1, R_RECV, R_PROBE, R_NULLDONE, R_DAEMON, R_COLL, R_GREQ };

/* a generalized request's callbacks (R_GREQ, in its tmp): it completes at
 * MPI_Grequest_complete, a program's call, so a replay completes it at the
 * same point of the program */
struct greq {
	MPI_Grequest_query_function *query;
	MPI_Grequest_free_function *free;
	MPI_Grequest_cancel_function *cancel;
	void *extra;
};

struct req {
	int used, kind, done, freed, internal;
	int wild;          /* wildcard receive: its trace ordinal + 1 */
	int upeer, utag;   /* a receive's source and tag as the program gave them */
	uint64_t ubytes;   /* (the trace's description of a wait for it) */
	MPI_Comm comm;
	MPI_Status st;
	void *tmp;         /* packed copy (send) or packed landing buffer (recv) */
	void *ubuf;        /* recv: where to unpack */
	MPI_Datatype dt;
	int next_free;
	/* a non-blocking collective (R_COLL) completes when its point-to-point
	 * parts have (each names it in parent), then runs fin on tmp */
	int parent, pending;
	int (*fin)(void *state);
	/* a persistent request's call (MPI_Send_init...); between its
	 * completion and the next MPI_Start it is inactive: done, with an
	 * empty status, and its handle stays the program's */
	struct persist *pers;
	int inactive;
	/* MPI_Isendrecv's request: its receive, finished (and its status
	 * taken) when the request completes */
	int stpart;
};

static struct {
	int inited, finalized;
	int rank, size, local;
	int node;          /* world rank of this node's first local rank */
	int thread;
	struct bcs_area *area;
	/* in chunks that never move: a request stays put while one-sided
	 * progress (which posts requests) runs inside a wait */
	struct req *reqs[REQ_CHUNKS];
	int nreqs, free_head;
	int eager_out;     /* buffered sends not yet taken by the daemon */
	int restart;       /* MPI_Start: the persistent request req_new reuses */
	int coll_tag;      /* MPI_Start of a collective: the tag of its parts */
	uint32_t chan_flags; /* test hooks (BCS_CHAN_REFUSE_COPY, _STOP_IN_COPY) */
	struct bcs_comm comms[MAX_COMMS];
	uint32_t next_ctx;
	MPI_User_function *ops[256];
	int op_commute[256];
	/* a user op stays until the last pending reduction that holds it
	 * folds, even after MPI_Op_free (which then only marks it freed) */
	int op_holds[256];
	bool op_freed[256];
} g = {.free_head = -1};

/* The thread that called MPI_Init: a thread-local flag, not its tid, which
 * a restart from a checkpoint changes (the flag is restored with the
 * thread's memory) */
static _Thread_local int main_thread;

static void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "BCS-MPI rank %d: ", g.rank);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void bcs_need_init(const char *fn)
{
	if (!g.inited || g.finalized)
		die("%s called %s MPI_Init", fn, g.finalized ? "after MPI_Finalize" : "before");
}

/* ---- the channel */

static void futex_wait(uint32_t *addr, uint32_t val)
{
	syscall(SYS_futex, addr, FUTEX_WAIT, val, NULL, NULL, 0);
}

static struct req *req_at(int i)
{
	return &g.reqs[i / REQ_CHUNK][i % REQ_CHUNK];
}

static struct req *req_of(int id)
{
	return id > 0 && id <= g.nreqs && req_at(id - 1)->used ? req_at(id - 1) : NULL;
}

/* The receive's unpacking is over: its datatype may go (MPI_Type_free
 * after the post leaves it to the request) */
static void req_drop_type(struct req *r)
{
	if (r->dt)
		bcs_type_release(r->dt);
	r->dt = MPI_DATATYPE_NULL;
}

static void persist_free(struct persist *p);
static bool persist_is_coll(const struct persist *p);

static void req_release(int id)
{
	struct req *r = req_at(id - 1);
	persist_free(r->pers);
	req_drop_type(r);
	free(r->tmp);
	memset(r, 0, sizeof(*r));
	r->next_free = g.free_head;
	g.free_head = id - 1;
}

static int req_new(int kind, MPI_Comm comm)
{
	if (g.restart && (kind == R_COLL) == persist_is_coll(req_at(g.restart - 1)->pers)) {
		/* MPI_Start posts the persistent request's own slot, so that
		 * the handle the program holds is the one that completes (a
		 * collective's: its own request, not a part's) */
		int id = g.restart;
		struct req *r = req_at(id - 1);
		struct persist *p = r->pers;
		g.restart = 0;
		*r = (struct req){.used = 1, .kind = kind, .comm = comm, .pers = p};
		return id;
	}
	if (g.free_head < 0) {
		int n = g.nreqs + REQ_CHUNK;
		struct req *v = n / REQ_CHUNK <= REQ_CHUNKS ? calloc(REQ_CHUNK, sizeof(*v)) : NULL;
		if (!v)
			die("out of memory for requests");
		g.reqs[g.nreqs / REQ_CHUNK] = v;
		for (int i = REQ_CHUNK - 1; i >= 0; i--) {
			v[i].next_free = g.free_head;
			g.free_head = g.nreqs + i;
		}
		g.nreqs = n;
	}
	int i = g.free_head;
	struct req *r = req_at(i);
	g.free_head = r->next_free;
	memset(r, 0, sizeof(*r));
	r->used = 1;
	r->kind = kind;
	r->comm = comm;
	return i + 1;
}

static int comm_rank_of(MPI_Comm comm, int world)
{
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return world;
	for (int i = 0; i < bcs_peer_size(c); i++)
		if (bcs_peer_world(c)[i] == world)
			return i;
	return world;
}

static int map_err(int e)
{
	switch (e) {
	case BCS_OK: return MPI_SUCCESS;
	case BCS_ETRUNC: return MPI_ERR_TRUNCATE;
	case BCS_ECANCELLED: return MPI_SUCCESS;
	default: return MPI_ERR_OTHER;
	}
}

static void coll_done(int id);

static void part_done(int parent, int err)
{
	struct req *p = req_of(parent);
	if (!p)
		return;
	if (err && !p->st.MPI_ERROR)
		p->st.MPI_ERROR = err;
	if (--p->pending == 0)
		coll_done(parent);
}

static void on_completion_of(const struct bcs_comp *c);

static void on_completion(const struct bcs_comp *c)
{
	struct req *r = req_of((int)c->req);
	int parent = r && !r->done ? r->parent : 0;
	on_completion_of(c);
	if (parent)
		part_done(parent, map_err(c->err));
}

static void on_completion_of(const struct bcs_comp *c)
{
	struct req *r = req_of((int)c->req);
	if (!r || r->done)
		return;
	r->done = 1;
	r->st.MPI_ERROR = map_err(c->err);
	r->st.bcs_cancelled = c->err == BCS_ECANCELLED;
	if (r->kind == R_SEND) {
		if (r->internal) {
			g.eager_out--;
			req_release((int)c->req);
		} else if (r->freed) {
			req_release((int)c->req);
		}
		return;
	}
	if (r->kind == R_DAEMON) /* a barrier or allreduce the daemons did */
		return;
	if (r->kind == R_PROBE) {
		r->st.MPI_SOURCE = c->err ? MPI_ANY_SOURCE : comm_rank_of(r->comm, c->src);
		r->st.MPI_TAG = c->tag;
		r->st.bcs_count = (long long)c->len;
		r->st.bcs_cancelled = c->err == BCS_ENOTFOUND; /* "not found" for iprobe */
		r->st.MPI_ERROR = MPI_SUCCESS;
		return;
	}
	r->st.MPI_SOURCE = r->st.bcs_cancelled ? MPI_ANY_SOURCE : comm_rank_of(r->comm, c->src);
	r->st.MPI_TAG = c->tag;
	r->st.bcs_count = (long long)c->len;
	if (r->tmp && !r->st.bcs_cancelled) {
		struct bcs_type *t = bcs_type_held(r->dt);
		if (t)
			bcs_unpack(t, r->tmp, (long)c->len, r->ubuf);
	}
	req_drop_type(r);
	free(r->tmp);
	r->tmp = NULL;
	if (r->freed)
		req_release((int)c->req);
}

static void allow_peers(void);

/* One copy order: the piece straight from the sending rank's buffer into
 * the receiving rank's, one process_vm_readv by the receiver (or _writev by
 * the sender, when the receiver computed at the grant), as MPICH's CMA path
 * does. Taken by compare-and-swap: the daemon may have taken it back. */
static void take_copy(struct bcs_copy *c)
{
	uint32_t s = BCS_COPY_POSTED;
	if (!__atomic_compare_exchange_n(&c->state, &s, BCS_COPY_TAKEN, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	if (g.chan_flags & BCS_CHAN_STOP_IN_COPY) {
		/* test hook: stopped between taking an order and copying, as a
		 * checkpoint's SIGSTOP may find a rank */
		g.chan_flags &= ~BCS_CHAN_STOP_IN_COPY;
		fprintf(stderr, "BCS-MPI rank %d: test hook: stopped in a copy\n", g.rank);
		raise(SIGSTOP);
	}
	struct iovec dv = {(void *)(uintptr_t)c->dst, c->len};
	struct iovec sv = {(void *)(uintptr_t)c->src, c->len};
	ssize_t n = g.chan_flags & BCS_CHAN_REFUSE_COPY ? (errno = EPERM, -1)
		    : c->write ? process_vm_writev((pid_t)c->pid, &sv, 1, &dv, 1, 0)
			       : process_vm_readv((pid_t)c->pid, &dv, 1, &sv, 1, 0);
	c->err = n == (ssize_t)c->len ? 0 : n < 0 ? errno : EIO;
	__atomic_store_n(&c->state, c->err ? BCS_COPY_REFUSED : BCS_COPY_DONE, __ATOMIC_RELEASE);
}

/* The copy orders the daemon posted for us since we last looked. */
static void take_copies(void)
{
	static uint32_t seen;
	struct bcs_area *a = g.area;
	uint32_t posted = __atomic_load_n(&a->copy_posted, __ATOMIC_ACQUIRE);
	if (posted == seen)
		return;
	seen = posted;
	for (unsigned i = 0; i < BCS_COPY_SLOTS; i++)
		if (__atomic_load_n(&a->copy[i].state, __ATOMIC_ACQUIRE) == BCS_COPY_POSTED)
			take_copy(&a->copy[i]);
}

static void drain(void)
{
	struct bcs_area *a = g.area;
	if (__atomic_load_n(&a->aborted, __ATOMIC_ACQUIRE)) {
		/* another rank called MPI_Abort: the job ends with its code */
		fflush(stdout);
		fflush(stderr);
		_exit((int)a->abort_code);
	}
	if (!__atomic_load_n(&a->peers_allowed, __ATOMIC_RELAXED))
		allow_peers(); /* restored from a checkpoint: a new process */
	take_copies();
	bcs_ep_drain();
	uint32_t tail = a->comp_tail;
	uint32_t head = __atomic_load_n(&a->comp_head, __ATOMIC_ACQUIRE);
	while (tail != head) {
		struct bcs_comp c = a->comp[tail % BCS_COMP_RING];
		tail++;
		__atomic_store_n(&a->comp_tail, tail, __ATOMIC_RELEASE);
		on_completion(&c);
	}
}

/* One-sided progress (win.c): runs wherever this rank waits or polls, never
 * inside itself, so that a target serves the epochs aimed at it. */
void (*bcs_progress_hook)(void);
static int in_progress;

static void progress(void)
{
	if (!bcs_progress_hook || in_progress)
		return;
	in_progress = 1;
	bcs_progress_hook();
	in_progress = 0;
}

/* This rank waits with nothing unseen (chan.h, idle). */
static void declare_idle(void)
{
	progress();
	struct bcs_area *a = g.area;
	if (a->idle != BCS_IDLE_DONE)
		__atomic_store_n(&a->idle, a->comp_tail + 1, __ATOMIC_SEQ_CST);
}

static void wait_until(bool (*cond)(void *), void *arg);

/* Sleeps until cond holds; the daemon wakes us at the strobe. */
static void wait_for(bool (*cond)(void *), void *arg)
{
	static int depth; /* one-sided progress may wait inside a wait */
	if (depth++ == 0) {
		bcs_trace_waiting();
		__atomic_store_n(&g.area->waiting, 1, __ATOMIC_SEQ_CST);
	}
	wait_until(cond, arg);
	if (--depth == 0)
		__atomic_store_n(&g.area->waiting, 0, __ATOMIC_SEQ_CST);
}

static void wait_until(bool (*cond)(void *), void *arg)
{
	for (;;) {
		drain();
		progress();
		if (cond(arg))
			return;
		uint32_t v = __atomic_load_n(&g.area->futex, __ATOMIC_ACQUIRE);
		drain();
		progress();
		if (cond(arg))
			break;
		declare_idle();
		if (bcs_ep_busy())
			bcs_ep_nap(); /* bytes come to us only while we drive our endpoint */
		else
			futex_wait(&g.area->futex, v);
	}
	/* idle stays: a completion consumed since makes it stale (comp_head moved) */
}

static bool ring_has_room(void *arg)
{
	(void)arg;
	struct bcs_area *a = g.area;
	return a->sub_head - __atomic_load_n(&a->sub_tail, __ATOMIC_ACQUIRE) < BCS_SUB_RING;
}

static void post(const struct bcs_desc *d)
{
	struct bcs_area *a = g.area;
	if ((d->op == BCS_OP_SEND || d->op == BCS_OP_RECV) && d->len >= BCS_RANK_MIN)
		bcs_ep_want();
	if (!ring_has_room(NULL)) {
		__atomic_store_n(&a->want_room, 1, __ATOMIC_RELEASE);
		wait_for(ring_has_room, NULL);
		__atomic_store_n(&a->want_room, 0, __ATOMIC_RELEASE);
	}
	/* running again (an iprobe loop still counts as polling) */
	if (a->idle != BCS_IDLE_DONE && d->op != BCS_OP_IPROBE)
		__atomic_store_n(&a->idle, 0, __ATOMIC_SEQ_CST);
	uint32_t head = a->sub_head;
	a->sub[head % BCS_SUB_RING] = *d;
	__atomic_store_n(&a->sub_head, head + 1, __ATOMIC_RELEASE);
}

static bool req_done(void *arg)
{
	struct req *r = req_of(*(int *)arg);
	return !r || r->done;
}

/* ---- communicators and errors */

struct bcs_comm *bcs_comm_get(MPI_Comm c)
{
	if (c <= 0 || c >= MAX_COMMS || !g.comms[c].used)
		return NULL;
	return &g.comms[c];
}

static const char *const err_text[] = {
	[MPI_SUCCESS] = "no error",
	[MPI_ERR_BUFFER] = "invalid buffer pointer",
	[MPI_ERR_COUNT] = "invalid count argument",
	[MPI_ERR_TYPE] = "invalid datatype",
	[MPI_ERR_TAG] = "invalid tag",
	[MPI_ERR_COMM] = "invalid communicator",
	[MPI_ERR_RANK] = "invalid rank",
	[MPI_ERR_ROOT] = "invalid root",
	[MPI_ERR_GROUP] = "invalid group",
	[MPI_ERR_OP] = "invalid reduce operation",
	[MPI_ERR_TOPOLOGY] = "invalid topology",
	[MPI_ERR_DIMS] = "invalid dimension argument",
	[MPI_ERR_ARG] = "invalid argument of some other kind",
	[MPI_ERR_UNKNOWN] = "unknown error",
	[MPI_ERR_TRUNCATE] = "message truncated",
	[MPI_ERR_OTHER] = "other MPI error",
	[MPI_ERR_INTERN] = "internal MPI error",
	[MPI_ERR_IN_STATUS] = "error code is in status",
	[MPI_ERR_PENDING] = "pending request",
	[MPI_ERR_REQUEST] = "invalid request",
	/* one-sided communication (win.c) */
	[MPI_ERR_NO_MEM] = "out of memory",
	[MPI_ERR_WIN] = "invalid window",
	[MPI_ERR_BASE] = "invalid base address",
	[MPI_ERR_LOCKTYPE] = "invalid lock type",
	[MPI_ERR_RMA_CONFLICT] = "conflicting one-sided accesses",
	[MPI_ERR_ASSERT] = "invalid assert",
	[MPI_ERR_RMA_SYNC] = "one-sided operation outside a proper epoch",
	[MPI_ERR_SIZE] = "invalid size",
	[MPI_ERR_RMA_RANGE] = "target memory outside the window, or not attached to it",
	[MPI_ERR_RMA_ATTACH] = "memory cannot be attached or detached",
	[MPI_ERR_RMA_SHARED] = "memory cannot be shared",
	[MPI_ERR_RMA_FLAVOR] = "wrong flavor of window",
	[MPI_ERR_INFO] = "invalid info object",
	[MPI_ERR_INFO_KEY] = "invalid info key",
	[MPI_ERR_INFO_VALUE] = "invalid info value",
	[MPI_ERR_INFO_NOKEY] = "info key not found",
	[MPI_ERR_KEYVAL] = "invalid attribute keyval",
};

int MPI_Error_string(int code, char *s, int *len)
{
	const char *t = NULL;
	if (code >= 0 && (size_t)code < sizeof(err_text) / sizeof(err_text[0]))
		t = err_text[code];
	if (code == MPI_ERR_UNSUPPORTED_OPERATION)
		t = "operation not supported by BCS-MPI";
	char buf[64];
	if (!t) {
		snprintf(buf, sizeof(buf), "unknown error code %d", code);
		t = buf;
	}
	snprintf(s, MPI_MAX_ERROR_STRING, "%s", t);
	*len = (int)strlen(s);
	return MPI_SUCCESS;
}

int MPI_Error_class(int code, int *cls)
{
	bool known = code >= 0 && (size_t)code < sizeof(err_text) / sizeof(err_text[0]) &&
		     err_text[code];
	if (!known && code != MPI_ERR_UNSUPPORTED_OPERATION)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Error_class");
	*cls = code;
	return MPI_SUCCESS;
}

/* The program's own error handlers: handles from ERRH_FIRST on. A freed
 * one stays valid while a communicator (or a window's) holds it, and its
 * slot is taken again only once none does. */
#define ERRH_FIRST 3
#define MAX_ERRH 256
enum { ERRH_COMM = 1, ERRH_WIN };
static struct {
	int kind; /* 0: slot free */
	bool freed;
	void (*fn)(void);
} errhs[MAX_ERRH];

static bool errh_user(int h)
{
	return h >= ERRH_FIRST && h < MAX_ERRH && errhs[h].kind;
}

static bool errh_held(int h)
{
	for (int i = 1; i < MAX_COMMS; i++)
		if (g.comms[i].used && g.comms[i].errh == h)
			return true;
	return false;
}

static int errh_create(int kind, void (*fn)(void), MPI_Errhandler *out, const char *what)
{
	bcs_need_init(what);
	if (!fn || !out)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, what);
	for (int h = ERRH_FIRST; h < MAX_ERRH; h++)
		if (!errhs[h].kind || (errhs[h].freed && !errh_held(h))) {
			errhs[h].kind = kind;
			errhs[h].freed = false;
			errhs[h].fn = fn;
			*out = h;
			return MPI_SUCCESS;
		}
	return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, what);
}

int MPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *h)
{
	return errh_create(ERRH_COMM, (void (*)(void))fn, h, "MPI_Comm_create_errhandler");
}

int MPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *h)
{
	return errh_create(ERRH_WIN, (void (*)(void))fn, h, "MPI_Win_create_errhandler");
}

/* Whether h may be set on a communicator (ERRH_COMM) or a window (ERRH_WIN). */
bool bcs_errh_fits(int h, int win)
{
	if (h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN)
		return true;
	return errh_user(h) && errhs[h].kind == (win ? ERRH_WIN : ERRH_COMM);
}

int bcs_err(MPI_Comm comm, int code, const char *fn)
{
	if (code == MPI_SUCCESS)
		return code;
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c) {
		comm = MPI_COMM_WORLD;
		c = bcs_comm_get(comm);
	}
	if (c && c->errh == MPI_ERRORS_RETURN)
		return code;
	if (c && errh_user(c->errh)) {
		/* the handler may change the code it is given; the call returns
		 * the error it had */
		int given = code;
		if (errhs[c->errh].kind == ERRH_WIN) {
			MPI_Win w = c->win;
			((MPI_Win_errhandler_function *)errhs[c->errh].fn)(&w, &given);
		} else {
			MPI_Comm h = comm;
			((MPI_Comm_errhandler_function *)errhs[c->errh].fn)(&h, &given);
		}
		return code;
	}
	char s[MPI_MAX_ERROR_STRING];
	int n;
	MPI_Error_string(code, s, &n);
	fprintf(stderr, "BCS-MPI rank %d: %s: %s (error class %d); aborting (MPI_ERRORS_ARE_FATAL)\n",
		g.rank, fn, s, code);
	MPI_Abort(comm, code);
	return code;
}

int bcs_inter_refuse(MPI_Comm comm, const char *fn)
{
	char what[128];
	snprintf(what, sizeof(what), "%s on an intercommunicator (not supported by BCS-MPI)", fn);
	return bcs_err(comm, MPI_ERR_COMM, what);
}

int MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler h)
{
	bcs_need_init("MPI_Comm_set_errhandler");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_set_errhandler");
	if (!bcs_errh_fits(h, c->win))
		return bcs_err(comm, MPI_ERR_ARG, "MPI_Comm_set_errhandler");
	c->errh = h;
	return MPI_SUCCESS;
}

int MPI_Comm_call_errhandler(MPI_Comm comm, int code)
{
	bcs_need_init("MPI_Comm_call_errhandler");
	if (!bcs_comm_get(comm))
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_call_errhandler");
	bcs_err(comm, code, "MPI_Comm_call_errhandler");
	return MPI_SUCCESS; /* the handler was called (and returned) */
}

int MPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *h)
{
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_get_errhandler");
	*h = c->errh;
	return MPI_SUCCESS;
}

int MPI_Errhandler_free(MPI_Errhandler *h)
{
	if (!h)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, "MPI_Errhandler_free");
	if (errh_user(*h))
		errhs[*h].freed = true;
	*h = MPI_ERRHANDLER_NULL;
	return MPI_SUCCESS;
}

MPI_Comm bcs_comm_alloc(void)
{
	for (int i = 3; i < MAX_COMMS; i++)
		if (!g.comms[i].used)
			return i;
	return MPI_COMM_NULL;
}

void bcs_comm_set(MPI_Comm h, int size, int rank, int *world, uint32_t ctx, int errh)
{
	g.comms[h] = (struct bcs_comm){.used = 1, .size = size, .rank = rank, .world = world,
				       .ctx = ctx, .errh = errh};
}

/* a slot of the table whether in use or not (an MPI_Comm_idup completing
 * after the program freed its communicator writes to it harmlessly) */
struct bcs_comm *bcs_comm_slot(MPI_Comm h)
{
	return &g.comms[h];
}

MPI_Comm bcs_comm_new(int size, int rank, int *world, uint32_t ctx, int errh)
{
	MPI_Comm h = bcs_comm_alloc();
	if (h != MPI_COMM_NULL)
		bcs_comm_set(h, size, rank, world, ctx, errh);
	return h;
}

int bcs_node_id(void)
{
	return g.node;
}

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
	bcs_need_init("MPI_Comm_rank");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_rank");
	*rank = c->rank;
	return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
	bcs_need_init("MPI_Comm_size");
	struct bcs_comm *c = bcs_comm_get(comm);
	if (!c)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, "MPI_Comm_size");
	*size = c->size;
	return MPI_SUCCESS;
}

uint32_t bcs_ctx_next(void)
{
	return g.next_ctx;
}

void bcs_ctx_claim(uint32_t end)
{
	if (end > g.next_ctx)
		g.next_ctx = end;
}


int bcs_name_set(char **slot, const char *name)
{
	if (!name)
		return MPI_ERR_ARG;
	char *n = strndup(name, MPI_MAX_OBJECT_NAME - 1);
	if (!n)
		return MPI_ERR_NO_MEM;
	free(*slot);
	*slot = n;
	return MPI_SUCCESS;
}

void bcs_name_get(const char *slot, const char *dflt, char *out, int *len)
{
	const char *n = slot ? slot : dflt;
	size_t l = strlen(n);
	memcpy(out, n, l + 1);
	*len = (int)l;
}

/* names are the program's own: a duplicate starts without one (MPI-3.1
 * §6.8), the predefined communicators with theirs */
int MPI_Comm_set_name(MPI_Comm comm, const char *name)
{
	ANY_COMM(comm, "MPI_Comm_set_name");
	return bcs_err(comm, bcs_name_set(&c->name, name), "MPI_Comm_set_name");
}

int MPI_Comm_get_name(MPI_Comm comm, char *name, int *len)
{
	ANY_COMM(comm, "MPI_Comm_get_name");
	bcs_name_get(c->name,
		     comm == MPI_COMM_WORLD ? "MPI_COMM_WORLD"
		     : comm == MPI_COMM_SELF ? "MPI_COMM_SELF" : "", name, len);
	return MPI_SUCCESS;
}

/* ---- environment */

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}

static void abort_world(int code)
{
	MPI_Abort(MPI_COMM_WORLD, code);
}

/* The ranks of a node copy between each other's buffers (process_vm_readv
 * and _writev, take_copy). Where Yama restricts ptrace to descendants (ptrace_scope 1),
 * the peers are allowed explicitly, as Open MPI's CMA path does; the
 * kernel still requires the same user. At scope 2 or 3 nothing helps: the
 * copies are refused and the daemon copies, as it says in its log. */
static void allow_peers(void)
{
	char v = 0;
	__atomic_store_n(&g.area->takes_writes, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g.area->peers_allowed, 1, __ATOMIC_RELAXED);
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	if (!f)
		return;
	if (fread(&v, 1, 1, f) == 1 && v == '1')
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	fclose(f);
}

/* The trace ring is full: the daemon empties it at the strobe and wakes a
 * rank that wants room. Not wait_for: this rank is not idle (it posts more
 * once it goes on), so it must not count towards a quiet node. */
static void wait_trace_room(bool (*cond)(void *), void *arg)
{
	__atomic_store_n(&g.area->want_room, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		uint32_t v = __atomic_load_n(&g.area->futex, __ATOMIC_ACQUIRE);
		if (cond(arg))
			break;
		futex_wait(&g.area->futex, v);
	}
	__atomic_store_n(&g.area->want_room, 0, __ATOMIC_RELEASE);
}

/* MPI_Init up to its first barrier (init.c) */
void bcs_init_common(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	if (g.inited)
		die("MPI_Init called twice");
	const char *fdv = getenv("STORM_BCS_FD");
	if (!fdv || !*fdv)
		die("MPI_Init: no BCS-MPI channel (STORM_BCS_FD is not set): start the program "
		    "with 'storm run'");
	int fd = atoi(fdv);
	g.rank = env_int("STORM_RANK", 0);
	g.size = env_int("STORM_SIZE", 1);
	g.local = env_int("STORM_LOCAL_RANK", 0);
	struct bcs_chan_hdr h = {0};
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != BCS_CHAN_MAGIC ||
	    h.version != BCS_CHAN_VERSION || (uint32_t)g.local >= h.nlocal ||
	    h.area_size != BCS_AREA_SIZE || h.world != (uint32_t)g.size)
		die("MPI_Init: fd %d is not this job's BCS-MPI channel (magic %#x version %u, "
		    "%u local ranks, world %u; stormnd and libbcsmpi of different versions?)",
		    fd, h.magic, h.version, h.nlocal, h.world);
	size_t len = bcs_chan_size(h.nlocal);
	void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		die("MPI_Init: cannot map the BCS-MPI channel: %s", strerror(errno));
	close(fd); /* the mapping stays; children of the rank do not inherit it */
	g.chan_flags = h.flags;
	g.node = (int)h.first_rank;
	g.area = (struct bcs_area *)((char *)map + BCS_CHAN_HDR + (size_t)g.local * BCS_AREA_SIZE);
	g.area->pid = (uint32_t)getpid();
	allow_peers();
	bcs_ep_init(&h, g.area, g.rank);
	main_thread = 1;
	bcs_types_init();
	int *w = malloc((size_t)g.size * sizeof(int)), *s = malloc(sizeof(int));
	if (!w || !s)
		die("out of memory");
	for (int i = 0; i < g.size; i++)
		w[i] = i;
	s[0] = g.rank;
	bcs_comm_set(MPI_COMM_WORLD, g.size, g.rank, w, 0, MPI_ERRORS_ARE_FATAL);
	bcs_comm_set(MPI_COMM_SELF, 1, 0, s, 2, MPI_ERRORS_ARE_FATAL);
	g.next_ctx = 4;
	g.inited = 1;
	bcs_trace_init(g.rank, abort_world, g.area, map, wait_trace_room);
	bcs_trace_debug_hold(g.rank);
	struct bcs_desc d = {.op = BCS_OP_INIT};
	post(&d);
}

void bcs_init_thread(int required, int *provided)
{
	g.thread = required < MPI_THREAD_FUNNELED ? required : MPI_THREAD_FUNNELED;
	*provided = g.thread;
}

int MPI_Query_thread(int *provided)
{
	*provided = g.thread;
	return MPI_SUCCESS;
}

int MPI_Is_thread_main(int *flag)
{
	*flag = main_thread;
	return MPI_SUCCESS;
}

int MPI_Initialized(int *flag)
{
	*flag = g.inited;
	return MPI_SUCCESS;
}

int MPI_Finalized(int *flag)
{
	*flag = g.finalized;
	return MPI_SUCCESS;
}

static bool no_eager(void *arg)
{
	(void)arg;
	return g.eager_out == 0;
}

/* MPI_Finalize's steps before and after its barrier (init.c) */
void bcs_finalize_drain(void)
{
	/* buffered sends must leave this process before it may exit */
	wait_for(no_eager, NULL);
}

void bcs_finalize_done(void)
{
	bcs_ep_fini();
	g.finalized = 1;
	__atomic_store_n(&g.area->idle, BCS_IDLE_DONE, __ATOMIC_SEQ_CST);
}

int MPI_Abort(MPI_Comm comm, int code)
{
	(void)comm;
	fflush(stdout);
	fflush(stderr);
	if (g.area) {
		struct bcs_desc d = {.op = BCS_OP_ABORT, .tag = code};
		post(&d);
	}
	/* the daemon kills the job's other ranks when it reads the descriptor */
	_exit(code ? code & 255 ? code & 255 : 1 : 0);
}

double MPI_Wtime(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

double MPI_Wtick(void)
{
	return 1e-9;
}

int MPI_Get_processor_name(char *name, int *len)
{
	const char *n = getenv("STORM_NODENAME");
	char host[MPI_MAX_PROCESSOR_NAME];
	if (!n || !*n) {
		if (gethostname(host, sizeof(host)) < 0)
			snprintf(host, sizeof(host), "unknown");
		host[sizeof(host) - 1] = '\0';
		n = host;
	}
	snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", n);
	*len = (int)strlen(name);
	return MPI_SUCCESS;
}

int MPI_Get_version(int *version, int *subversion)
{
	*version = MPI_VERSION;
	*subversion = MPI_SUBVERSION;
	return MPI_SUCCESS;
}

int MPI_Get_library_version(char *version, int *len)
{
	snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
		 "BCS-MPI (storm): MPI %d.%d subset on globally scheduled communication",
		 MPI_VERSION, MPI_SUBVERSION);
	*len = (int)strlen(version);
	return MPI_SUCCESS;
}

/* ---- point to point */

static int check_buf(const void *buf, int count, MPI_Datatype dt, struct bcs_type **t)
{
	if (count < 0)
		return MPI_ERR_COUNT;
	*t = bcs_type_get(dt);
	if (!*t || !(*t)->committed)
		return MPI_ERR_TYPE;
	/* MPI_BOTTOM: a derived type's displacements are absolute addresses */
	if (!buf && count > 0 && (*t)->size > 0 && (*t)->predefined)
		return MPI_ERR_BUFFER;
	return MPI_SUCCESS;
}

static int null_request(MPI_Comm comm, MPI_Request *req)
{
	int id = req_new(R_NULLDONE, comm);
	struct req *r = req_at(id - 1);
	r->done = 1;
	r->st.MPI_SOURCE = MPI_PROC_NULL;
	r->st.MPI_TAG = MPI_ANY_TAG;
	*req = id;
	return MPI_SUCCESS;
}

/* a send of at most copy_max bytes leaves from a copy, and the caller has
 * nothing to wait on */
static int isend_copy(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		      struct bcs_comm *c, bool coll, long copy_max, MPI_Comm comm,
		      MPI_Request *req)
{
	struct bcs_type *t;
	int rc = check_buf(buf, count, dt, &t);
	if (rc)
		return rc;
	if (dest == MPI_PROC_NULL)
		return null_request(comm, req);
	if (dest < 0 || dest >= bcs_peer_size(c))
		return MPI_ERR_RANK;
	if (tag < 0 || tag > MPI_TAG_UB)
		return MPI_ERR_TAG;
	long bytes = (long)count * t->size;
	int id = req_new(R_SEND, comm);
	struct req *r = req_at(id - 1);
	const void *addr = buf;
	if (!bcs_type_is_contig(t) || bytes <= copy_max) {
		r->tmp = malloc(bytes ? (size_t)bytes : 1);
		if (!r->tmp)
			die("out of memory for a %ld-byte send", bytes);
		bcs_pack(t, buf, count, r->tmp);
		addr = r->tmp;
	}
	if (bytes <= copy_max) {
		r->internal = 1;
		g.eager_out++;
		id = -id; /* nothing for the caller to wait on */
	}
	struct bcs_desc d = {.op = BCS_OP_SEND, .req = (uint32_t)(id < 0 ? -id : id),
			     .peer = bcs_peer_world(c)[dest], .tag = tag,
			     .ctx = c->ctx + (coll ? 1 : 0), .addr = (uint64_t)(uintptr_t)addr,
			     .len = (uint64_t)bytes};
	post(&d);
	*req = id < 0 ? MPI_REQUEST_NULL : id;
	return MPI_SUCCESS;
}

static int isend_impl(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		      struct bcs_comm *c, bool coll, bool eager, MPI_Comm comm,
		      MPI_Request *req)
{
	return isend_copy(buf, count, dt, dest, tag, c, coll, eager ? EAGER_MAX : -1, comm, req);
}

static int finish(MPI_Request *rq, MPI_Status *st);

/* MPI_Bsend's send: from a copy whatever its size (bsend.c) */
int bcs_bsend_post(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm)
{
	struct bcs_comm *c = bcs_comm_get(comm);
	MPI_Request r;
	if (!c)
		return MPI_ERR_COMM;
	int rc = isend_copy(buf, count, dt, dest, tag, c, false, LONG_MAX, comm, &r);
	if (!rc && r != MPI_REQUEST_NULL) /* MPI_PROC_NULL's, done */
		rc = finish(&r, MPI_STATUS_IGNORE);
	return rc;
}

static int irecv_impl(void *buf, int count, MPI_Datatype dt, int src, int tag,
		      struct bcs_comm *c, bool coll, MPI_Comm comm, MPI_Request *req)
{
	struct bcs_type *t;
	int rc = check_buf(buf, count, dt, &t);
	if (rc)
		return rc;
	if (src == MPI_PROC_NULL)
		return null_request(comm, req);
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= bcs_peer_size(c)))
		return MPI_ERR_RANK;
	if (tag != MPI_ANY_TAG && (tag < 0 || tag > MPI_TAG_UB))
		return MPI_ERR_TAG;
	long bytes = (long)count * t->size;
	int id = req_new(R_RECV, comm);
	struct req *r = req_at(id - 1);
	void *addr = buf;
	if (!bcs_type_is_contig(t)) {
		r->tmp = malloc(bytes ? (size_t)bytes : 1);
		if (!r->tmp)
			die("out of memory for a %ld-byte receive", bytes);
		r->ubuf = buf;
		bcs_type_hold(dt);
		r->dt = dt;
		addr = r->tmp;
	}
	r->upeer = src;
	r->utag = tag;
	r->ubytes = (uint64_t)bytes;
	int wsrc = src == MPI_ANY_SOURCE ? BCS_ANY_SOURCE : bcs_peer_world(c)[src];
	int wtag = tag;
	/* replay: a wildcard takes the recorded outcome as a specific receive */
	if (!coll && (src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG))
		r->wild = bcs_trace_wild_post(&wsrc, &wtag) + 1;
	struct bcs_desc d = {.op = BCS_OP_RECV, .req = (uint32_t)id, .peer = wsrc, .tag = wtag,
			     .ctx = c->ctx + (coll ? 1 : 0), .addr = (uint64_t)(uintptr_t)addr,
			     .len = (uint64_t)bytes};
	post(&d);
	*req = id;
	return MPI_SUCCESS;
}

int bcs_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	      struct bcs_comm *c, bool coll, MPI_Request *req)
{
	if (coll && tag == TAG_COLL && g.coll_tag)
		tag = g.coll_tag;
	return isend_impl(buf, count, dt, dest, tag, c, coll, false, MPI_COMM_WORLD, req);
}

int bcs_coll_tag_set(int tag)
{
	int was = g.coll_tag;
	g.coll_tag = tag;
	return was;
}

int bcs_irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, struct bcs_comm *c,
	      bool coll, MPI_Request *req)
{
	if (coll && tag == TAG_COLL && g.coll_tag)
		tag = g.coll_tag;
	return irecv_impl(buf, count, dt, src, tag, c, coll, MPI_COMM_WORLD, req);
}

static void empty_status(MPI_Status *st)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	st->MPI_SOURCE = MPI_ANY_SOURCE;
	st->MPI_TAG = MPI_ANY_TAG;
	st->bcs_cancelled = 0;
	st->bcs_count = 0;
}

/* what an operation on MPI_PROC_NULL completes with */
static void procnull_status(MPI_Status *st)
{
	empty_status(st);
	if (st != MPI_STATUS_IGNORE)
		st->MPI_SOURCE = MPI_PROC_NULL;
}

static void persist_idle(struct req *r);

static int greq_status(struct req *r);

/* Takes a completed request: status out, request freed (a persistent one
 * left inactive); returns its error. A generalized request's status is its
 * query callback's, and its free callback runs here. */
static int finish(MPI_Request *rq, MPI_Status *st)
{
	struct req *r = req_of(*rq);
	if (r->kind == R_GREQ) {
		struct greq *q = r->tmp;
		int e = greq_status(r);
		int fe = q->free(q->extra);
		r->st.MPI_ERROR = e ? e : fe;
	}
	if (r->wild) {
		struct bcs_comm *c = bcs_comm_get(r->comm);
		int src = r->st.bcs_cancelled || !c ? -1 : bcs_peer_world(c)[r->st.MPI_SOURCE];
		bcs_trace_wild_done(r->wild - 1, src, r->st.bcs_cancelled ? -1 : r->st.MPI_TAG);
	}
	int err = r->st.MPI_ERROR;
	if (st != MPI_STATUS_IGNORE) {
		/* a single completion leaves the error field alone (MPI); the
		 * multiple ones set it themselves */
		int keep = st->MPI_ERROR;
		*st = r->st;
		st->MPI_ERROR = keep;
	}
	if (r->pers) {
		persist_idle(r);
		return err;
	}
	req_release(*rq);
	*rq = MPI_REQUEST_NULL;
	return err;
}

int bcs_waitall(int n, MPI_Request *reqs)
{
	int err = MPI_SUCCESS;
	for (int i = 0; i < n; i++) {
		if (reqs[i] == MPI_REQUEST_NULL)
			continue;
		wait_for(req_done, &reqs[i]);
		int e = finish(&reqs[i], MPI_STATUS_IGNORE);
		if (e && !err)
			err = e;
	}
	return err;
}

void bcs_wait(bool (*cond)(void *), void *arg)
{
	wait_for(cond, arg);
}

bool bcs_req_done(MPI_Request id)
{
	struct req *r = req_of(id);
	return !r || r->done;
}

int bcs_req_take(MPI_Request *id, MPI_Status *st)
{
	if (*id == MPI_REQUEST_NULL || !req_of(*id))
		return MPI_SUCCESS;
	return finish(id, st);
}

/* ---- non-blocking collectives: a request over point-to-point parts */

static void coll_done(int id)
{
	struct req *r = req_of(id);
	if (r->stpart) {
		MPI_Request part = r->stpart;
		MPI_Status st;
		r->stpart = 0;
		int e = finish(&part, &st);
		r->st.MPI_SOURCE = st.MPI_SOURCE;
		r->st.MPI_TAG = st.MPI_TAG;
		r->st.bcs_count = st.bcs_count;
		r->st.bcs_cancelled = st.bcs_cancelled;
		if (e && !r->st.MPI_ERROR)
			r->st.MPI_ERROR = e;
	}
	if (r->fin) {
		int e = r->fin(r->tmp);
		if (e && !r->st.MPI_ERROR)
			r->st.MPI_ERROR = e;
	}
	r->done = 1;
	if (r->freed)
		req_release(id);
}

int bcs_coll_start(MPI_Comm comm, int (*fin)(void *state), void *state)
{
	int id = req_new(R_COLL, comm);
	struct req *r = req_of(id);
	r->st.MPI_SOURCE = MPI_ANY_SOURCE;
	r->st.MPI_TAG = MPI_ANY_TAG;
	r->fin = fin;
	r->tmp = state;
	r->pending = 1; /* held until bcs_coll_arm: parts may finish while others post */
	return id;
}

void bcs_coll_part(int coll, MPI_Request part)
{
	if (part == MPI_REQUEST_NULL)
		return;
	struct req *p = req_of(part);
	if (p->done) { /* MPI_PROC_NULL */
		req_release(part);
		return;
	}
	p->parent = coll;
	p->freed = 1;
	req_of(coll)->pending++;
}

void bcs_coll_arm(int coll, int err)
{
	struct req *r = req_of(coll);
	if (err && !r->st.MPI_ERROR)
		r->st.MPI_ERROR = err;
	part_done(coll, 0);
}

int bcs_world_barrier(void)
{
	int id = req_new(R_DAEMON, MPI_COMM_WORLD);
	struct bcs_desc d = {.op = BCS_OP_BARRIER, .req = (uint32_t)id};
	post(&d);
	wait_for(req_done, &id);
	req_release(id);
	return MPI_SUCCESS;
}

int bcs_world_allreduce(const void *sbuf, void *rbuf, int count, struct bcs_type *t, MPI_Op op)
{
	uint8_t val[BCS_RED_MAX];
	long bytes = (long)count * t->size;
	bcs_pack(t, sbuf, count, val);
	int id = req_new(R_DAEMON, MPI_COMM_WORLD);
	struct bcs_desc d = {.op = BCS_OP_ALLREDUCE, .req = (uint32_t)id, .peer = op,
			     .tag = t->basic, .ctx = (uint32_t)((long)count * t->nelem),
			     .addr = (uint64_t)(uintptr_t)val, .len = (uint64_t)bytes};
	post(&d);
	wait_for(req_done, &id);
	int err = req_of(id)->st.MPI_ERROR;
	req_release(id);
	if (!err)
		bcs_unpack(t, val, bytes, rbuf);
	return err;
}

/* ---- the trace's numbering of calls (trace.h, bcs_trace_call) */

static uint64_t bytes_of(int count, MPI_Datatype dt)
{
	struct bcs_type *t = bcs_type_get(dt);
	return t && count > 0 && t->size > 0 ? (uint64_t)count * (uint64_t)t->size : 0;
}

/* a completion call: described by its first receive request */
static void trace_reqs(int kind, int n, const MPI_Request *v)
{
	int peer = BCS_PEER_NONE, tag = -1;
	uint64_t bytes = 0;
	for (int i = 0; i < n; i++) {
		struct req *r = req_of(v[i]);
		if (r && r->kind == R_RECV) {
			peer = r->upeer;
			tag = r->utag;
			bytes = r->ubytes;
			break;
		}
	}
	bcs_trace_call(kind, peer, tag, bytes);
}

#define CHECK_COMM(comm, fn)                                                          \
	bcs_need_init(fn);                                                            \
	struct bcs_comm *c = bcs_comm_get(comm);                                      \
	if (!c)                                                                       \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn)

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	CHECK_COMM(comm, "MPI_Isend");
	bcs_trace_call(BCS_C_ISEND, dest, tag, bytes_of(count, dt));
	return bcs_err(comm, isend_impl(buf, count, dt, dest, tag, c, false, false, comm, req),
		       "MPI_Isend");
}

int MPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	/* every send completes only once matched and read: synchronous already */
	CHECK_COMM(comm, "MPI_Issend");
	bcs_trace_call(BCS_C_ISSEND, dest, tag, bytes_of(count, dt));
	return bcs_err(comm, isend_impl(buf, count, dt, dest, tag, c, false, false, comm, req),
		       "MPI_Issend");
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
	      MPI_Request *req)
{
	CHECK_COMM(comm, "MPI_Irecv");
	bcs_trace_call(BCS_C_IRECV, src, tag, bytes_of(count, dt));
	return bcs_err(comm, irecv_impl(buf, count, dt, src, tag, c, false, comm, req),
		       "MPI_Irecv");
}

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	CHECK_COMM(comm, "MPI_Send");
	bcs_trace_call(BCS_C_SEND, dest, tag, bytes_of(count, dt));
	MPI_Request r;
	int rc = isend_impl(buf, count, dt, dest, tag, c, false, true, comm, &r);
	if (!rc && r != MPI_REQUEST_NULL) {
		wait_for(req_done, &r);
		rc = finish(&r, MPI_STATUS_IGNORE);
	}
	return bcs_err(comm, rc, "MPI_Send");
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	CHECK_COMM(comm, "MPI_Ssend");
	bcs_trace_call(BCS_C_SSEND, dest, tag, bytes_of(count, dt));
	MPI_Request r;
	int rc = isend_impl(buf, count, dt, dest, tag, c, false, false, comm, &r);
	if (!rc) {
		wait_for(req_done, &r);
		rc = finish(&r, MPI_STATUS_IGNORE);
	}
	return bcs_err(comm, rc, "MPI_Ssend");
}

/* a ready send is a send whose receive the program knows is posted: every
 * send here completes once matched, so it is a standard send (MPI allows
 * it; a ready send without its receive is erroneous) */
int MPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	CHECK_COMM(comm, "MPI_Rsend");
	bcs_trace_call(BCS_C_RSEND, dest, tag, bytes_of(count, dt));
	MPI_Request r;
	int rc = isend_impl(buf, count, dt, dest, tag, c, false, true, comm, &r);
	if (!rc && r != MPI_REQUEST_NULL) {
		wait_for(req_done, &r);
		rc = finish(&r, MPI_STATUS_IGNORE);
	}
	return bcs_err(comm, rc, "MPI_Rsend");
}

int MPI_Irsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
	       MPI_Request *req)
{
	CHECK_COMM(comm, "MPI_Irsend");
	bcs_trace_call(BCS_C_IRSEND, dest, tag, bytes_of(count, dt));
	return bcs_err(comm, isend_impl(buf, count, dt, dest, tag, c, false, false, comm, req),
		       "MPI_Irsend");
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
	     MPI_Status *st)
{
	CHECK_COMM(comm, "MPI_Recv");
	bcs_trace_call(BCS_C_RECV, src, tag, bytes_of(count, dt));
	MPI_Request r;
	int rc = irecv_impl(buf, count, dt, src, tag, c, false, comm, &r);
	if (!rc) {
		wait_for(req_done, &r);
		rc = finish(&r, st);
	}
	return bcs_err(comm, rc, "MPI_Recv");
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
		 void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
		 MPI_Status *st)
{
	CHECK_COMM(comm, "MPI_Sendrecv");
	bcs_trace_call(BCS_C_SENDRECV, dest, stag, bytes_of(scount, stype));
	MPI_Request r[2];
	int rc = irecv_impl(rbuf, rcount, rtype, src, rtag, c, false, comm, &r[1]);
	if (rc)
		return bcs_err(comm, rc, "MPI_Sendrecv");
	rc = isend_impl(sbuf, scount, stype, dest, stag, c, false, false, comm, &r[0]);
	if (rc)
		return bcs_err(comm, rc, "MPI_Sendrecv");
	wait_for(req_done, &r[0]);
	int e0 = finish(&r[0], MPI_STATUS_IGNORE);
	wait_for(req_done, &r[1]);
	int e1 = finish(&r[1], st);
	return bcs_err(comm, e1 ? e1 : e0, "MPI_Sendrecv");
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src,
			 int rtag, MPI_Comm comm, MPI_Status *st)
{
	CHECK_COMM(comm, "MPI_Sendrecv_replace");
	struct bcs_type *t;
	int rc = check_buf(buf, count, dt, &t);
	if (rc)
		return bcs_err(comm, rc, "MPI_Sendrecv_replace");
	long bytes = (long)count * t->size;
	void *copy = malloc(bytes ? (size_t)bytes : 1);
	if (!copy)
		return bcs_err(comm, MPI_ERR_INTERN, "MPI_Sendrecv_replace");
	bcs_pack(t, buf, count, copy);
	bcs_trace_call(BCS_C_SENDRECV, dest, stag, (uint64_t)bytes);
	bcs_trace_mute(1);
	rc = MPI_Sendrecv(copy, (int)bytes, MPI_BYTE, dest, stag, buf, count, dt, src, rtag, comm,
			  st);
	bcs_trace_mute(0);
	free(copy);
	return rc;
}

/* a point-to-point call's arguments: MPI_SUCCESS or the error class the
 * post would return (send: no wildcard) */
static int check_p2p(const void *buf, int count, MPI_Datatype dt, int peer, int tag,
		     const struct bcs_comm *c, bool send)
{
	struct bcs_type *t;
	int rc = check_buf(buf, count, dt, &t);
	if (rc || peer == MPI_PROC_NULL)
		return rc;
	if ((send || peer != MPI_ANY_SOURCE) && (peer < 0 || peer >= bcs_peer_size(c)))
		return MPI_ERR_RANK;
	if ((send || tag != MPI_ANY_TAG) && (tag < 0 || tag > MPI_TAG_UB))
		return MPI_ERR_TAG;
	return MPI_SUCCESS;
}

/* MPI_Isendrecv and _replace (own): a request over the send and the
 * receive, complete once both are, with the receive's status. Every
 * argument is checked before anything is posted, so a refused call leaves
 * nothing pending. _replace's send leaves from a copy of its own, made
 * before the receive is posted: a sender may write into buf from then on. */
static int isendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
		     void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag,
		     struct bcs_comm *c, MPI_Comm comm, bool own, MPI_Request *req)
{
	int rc = check_p2p(sbuf, scount, stype, dest, stag, c, true);
	if (!rc)
		rc = check_p2p(rbuf, rcount, rtype, src, rtag, c, false);
	if (rc)
		return rc;
	int id = bcs_coll_start(comm, NULL, NULL);
	MPI_Request rr, sr;
	if (own) {
		isend_copy(sbuf, scount, stype, dest, stag, c, false, LONG_MAX, comm, &sr);
		bcs_coll_part(id, sr);
	}
	irecv_impl(rbuf, rcount, rtype, src, rtag, c, false, comm, &rr);
	struct req *r = req_of(id), *p = req_of(rr);
	if (p->done) { /* from MPI_PROC_NULL */
		r->st.MPI_SOURCE = p->st.MPI_SOURCE;
		r->st.MPI_TAG = p->st.MPI_TAG;
		req_release(rr);
	} else {
		p->parent = id;
		r->pending++;
		r->stpart = rr;
	}
	if (!own) {
		isend_copy(sbuf, scount, stype, dest, stag, c, false, -1, comm, &sr);
		bcs_coll_part(id, sr);
	}
	bcs_coll_arm(id, MPI_SUCCESS);
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Isendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag,
		  void *rbuf, int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm,
		  MPI_Request *req)
{
	CHECK_COMM(comm, "MPI_Isendrecv");
	bcs_trace_call(BCS_C_ISENDRECV, dest, stag, bytes_of(scount, stype));
	return bcs_err(comm, isendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src,
				       rtag, c, comm, false, req),
		       "MPI_Isendrecv");
}

int MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int src,
			  int rtag, MPI_Comm comm, MPI_Request *req)
{
	CHECK_COMM(comm, "MPI_Isendrecv_replace");
	bcs_trace_call(BCS_C_ISENDRECV, dest, stag, bytes_of(count, dt));
	return bcs_err(comm, isendrecv(buf, count, dt, dest, stag, buf, count, dt, src, rtag, c,
				       comm, true, req),
		       "MPI_Isendrecv_replace");
}

/* ---- persistent requests: a call made once, started many times */

struct persist {
	bool send;
	bcs_bsend_fn *bsend; /* MPI_Bsend_init's: bsend.c's check and send */
	bcs_pcoll_fn *coll;  /* a persistent collective's start, on args */
	void (*drop)(void *args);
	void *args;
	void *buf;
	int count, peer, tag;
	MPI_Datatype dt;
	MPI_Comm comm;
};

static void persist_free(struct persist *p)
{
	if (!p)
		return;
	if (p->drop)
		p->drop(p->args);
	struct bcs_type *t = bcs_type_get(p->dt);
	if (t && !t->predefined)
		bcs_type_free(&p->dt);
	free(p);
}

static bool persist_is_coll(const struct persist *p)
{
	return p && p->coll;
}

static void persist_idle(struct req *r)
{
	req_drop_type(r);
	free(r->tmp);
	r->tmp = NULL;
	r->kind = R_NULLDONE;
	r->wild = 0;
	r->freed = 0;
	r->done = 1;
	r->inactive = 1;
	r->st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG};
}

/* the arguments are checked here, so that MPI_Start fails only as the
 * call itself would on a communicator freed since */
static int persist_init(struct persist p, MPI_Request *req, const char *fn)
{
	CHECK_COMM(p.comm, fn);
	struct bcs_type *t;
	int rc = check_buf(p.buf, p.count, p.dt, &t);
	bool any = !p.send && p.peer == MPI_ANY_SOURCE;
	if (!rc && p.peer != MPI_PROC_NULL && !any && (p.peer < 0 || p.peer >= bcs_peer_size(c)))
		rc = MPI_ERR_RANK;
	if (!rc && !(!p.send && p.tag == MPI_ANY_TAG) && (p.tag < 0 || p.tag > MPI_TAG_UB))
		rc = MPI_ERR_TAG;
	struct persist *h = rc ? NULL : malloc(sizeof(*h));
	if (!rc && !h)
		rc = MPI_ERR_NO_MEM;
	/* a derived type of its own: the program may free its type at once */
	bool derived = !rc && !t->predefined;
	if (derived && bcs_type_dup(p.dt, &p.dt)) {
		free(h);
		rc = MPI_ERR_NO_MEM;
	}
	if (rc)
		return bcs_err(p.comm, rc, fn);
	if (derived)
		bcs_type_get(p.dt)->committed = 1;
	*h = p;
	int id = req_new(R_NULLDONE, p.comm);
	struct req *r = req_at(id - 1);
	r->pers = h;
	persist_idle(r);
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		  MPI_Comm comm, MPI_Request *req)
{
	struct persist p = {.send = true, .buf = (void *)buf, .count = count, .peer = dest,
			    .tag = tag, .dt = dt, .comm = comm};
	return persist_init(p, req, "MPI_Send_init");
}

/* every send completes only once matched and read: synchronous already,
 * and a ready send is a send whose receive is known to be posted */
int MPI_Ssend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	struct persist p = {.send = true, .buf = (void *)buf, .count = count, .peer = dest,
			    .tag = tag, .dt = dt, .comm = comm};
	return persist_init(p, req, "MPI_Ssend_init");
}

int MPI_Rsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm, MPI_Request *req)
{
	struct persist p = {.send = true, .buf = (void *)buf, .count = count, .peer = dest,
			    .tag = tag, .dt = dt, .comm = comm};
	return persist_init(p, req, "MPI_Rsend_init");
}

/* MPI_Bsend_init (bsend.c): each MPI_Start sends by bsend */
int bcs_persist_bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			   MPI_Comm comm, MPI_Request *req, bcs_bsend_fn *bsend)
{
	struct persist p = {.send = true, .bsend = bsend, .buf = (void *)buf, .count = count,
			    .peer = dest, .tag = tag, .dt = dt, .comm = comm};
	return persist_init(p, req, "MPI_Bsend_init");
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype dt, int src, int tag, MPI_Comm comm,
		  MPI_Request *req)
{
	struct persist p = {.buf = buf, .count = count, .peer = src, .tag = tag, .dt = dt,
			    .comm = comm};
	return persist_init(p, req, "MPI_Recv_init");
}

int bcs_persist_coll_init(MPI_Comm comm, bcs_pcoll_fn *start, void (*drop)(void *), void *args,
			  MPI_Request *req)
{
	struct persist *h = malloc(sizeof(*h));
	if (!h) {
		drop(args);
		return MPI_ERR_NO_MEM;
	}
	/* its parts' tag on the collective context: one per persistent
	 * collective of the communicator, in the order of the _init calls
	 * (the same on every member), so that ranks may start them in
	 * different orders and each part still meets its own */
	struct bcs_comm *c = bcs_comm_get(comm);
	int tag = TAG_COLL + 1 + (int)(c->pcolls++ % (1u << 24));
	*h = (struct persist){.coll = start, .drop = drop, .args = args,
			      .dt = MPI_DATATYPE_NULL, .comm = comm, .tag = tag};
	int id = req_new(R_NULLDONE, comm);
	struct req *r = req_at(id - 1);
	r->pers = h;
	persist_idle(r);
	*req = id;
	return MPI_SUCCESS;
}

/* A persistent collective's start: the non-blocking collective, whose
 * request (the first req_new of its kind) takes this slot. A call that
 * fails before it made one leaves the request inactive. */
static int start_coll(MPI_Request id, struct persist *p)
{
	MPI_Request got = MPI_REQUEST_NULL;
	g.restart = id;
	g.coll_tag = p->tag;
	int rc = p->coll(p->args, &got);
	bool taken = g.restart == 0;
	g.restart = 0;
	g.coll_tag = 0;
	return rc || taken ? rc : MPI_ERR_INTERN;
}

static int start_one(MPI_Request id)
{
	struct req *r = req_of(id);
	if (!r || !r->pers || !r->inactive)
		return MPI_ERR_REQUEST;
	struct persist *p = r->pers;
	struct bcs_comm *c = bcs_comm_get(p->comm);
	if (!c)
		return MPI_ERR_COMM;
	if (p->coll)
		return start_coll(id, p);
	if (p->bsend) {
		/* done once copied into the attached buffer */
		int rc = p->bsend(p->buf, p->count, p->dt, p->peer, p->tag, p->comm);
		if (!rc)
			r->inactive = 0;
		return rc;
	}
	MPI_Request got;
	g.restart = id;
	int rc = p->send ? isend_impl(p->buf, p->count, p->dt, p->peer, p->tag, c, false, false,
				      p->comm, &got)
			 : irecv_impl(p->buf, p->count, p->dt, p->peer, p->tag, c, false, p->comm,
				      &got);
	g.restart = 0;
	return rc;
}

int bcs_req_complete(MPI_Comm comm, MPI_Request *req)
{
	int id = req_new(R_NULLDONE, comm);
	struct req *r = req_at(id - 1);
	r->done = 1;
	r->st = (MPI_Status){.MPI_SOURCE = MPI_ANY_SOURCE, .MPI_TAG = MPI_ANY_TAG};
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Start(MPI_Request *req)
{
	bcs_need_init("MPI_Start");
	struct req *r = req_of(*req);
	return bcs_err(r ? r->comm : MPI_COMM_WORLD, start_one(*req), "MPI_Start");
}

int MPI_Startall(int n, MPI_Request reqs[])
{
	bcs_need_init("MPI_Startall");
	if (n < 0)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COUNT, "MPI_Startall");
	for (int i = 0; i < n; i++) {
		struct req *r = req_of(reqs[i]);
		int rc = start_one(reqs[i]);
		if (rc)
			return bcs_err(r ? r->comm : MPI_COMM_WORLD, rc, "MPI_Startall");
	}
	return MPI_SUCCESS;
}

/* ---- completion calls */

int MPI_Wait(MPI_Request *rq, MPI_Status *st)
{
	bcs_need_init("MPI_Wait");
	trace_reqs(BCS_C_WAIT, 1, rq);
	if (*rq == MPI_REQUEST_NULL) {
		empty_status(st);
		return MPI_SUCCESS;
	}
	struct req *r = req_of(*rq);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Wait");
	MPI_Comm comm = r->comm;
	wait_for(req_done, rq);
	return bcs_err(comm, finish(rq, st), "MPI_Wait");
}

int MPI_Test(MPI_Request *rq, int *flag, MPI_Status *st)
{
	bcs_need_init("MPI_Test");
	trace_reqs(BCS_C_TEST, 1, rq);
	if (*rq == MPI_REQUEST_NULL) {
		*flag = 1;
		empty_status(st);
		return MPI_SUCCESS;
	}
	struct req *r = req_of(*rq);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Test");
	drain();
	*flag = bcs_trace_test(r->done ? 1 : 0, "MPI_Test");
	if (*flag && !r->done)
		wait_for(req_done, rq); /* replay: it completed in the recorded run */
	if (!*flag) {
		declare_idle(); /* polling counts as waiting */
		return MPI_SUCCESS;
	}
	MPI_Comm comm = r->comm;
	return bcs_err(comm, finish(rq, st), "MPI_Test");
}

/* MPI_Test without the finish: the request stays the program's. Whether
 * it is complete is recorded and replayed as a test's outcome. */
int MPI_Request_get_status(MPI_Request rq, int *flag, MPI_Status *st)
{
	bcs_need_init("MPI_Request_get_status");
	if (rq == MPI_REQUEST_NULL) {
		*flag = 1;
		empty_status(st);
		return MPI_SUCCESS;
	}
	struct req *r = req_of(rq);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_get_status");
	drain();
	*flag = bcs_trace_test(r->done ? 1 : 0, "MPI_Request_get_status");
	if (*flag && !r->done)
		wait_for(req_done, &rq); /* replay: it completed in the recorded run */
	if (!*flag) {
		declare_idle(); /* polling counts as waiting */
		return MPI_SUCCESS;
	}
	if (r->kind == R_GREQ)
		greq_status(r);
	if (st != MPI_STATUS_IGNORE)
		*st = r->st;
	return MPI_SUCCESS;
}

bool bcs_test(bool (*cond)(void *), void *arg, const char *fn)
{
	drain();
	progress();
	bool flag = bcs_trace_test(cond(arg) ? 1 : 0, fn);
	if (flag && !cond(arg))
		wait_for(cond, arg); /* replay: it held in the recorded run */
	if (!flag)
		declare_idle();
	return flag;
}

struct any_arg {
	int n;
	MPI_Request *v;
};

/* a request to wait for: an inactive persistent one counts as none */
static struct req *req_active(int id)
{
	struct req *r = req_of(id);
	return r && !r->inactive ? r : NULL;
}

static bool any_done(void *arg)
{
	struct any_arg *a = arg;
	for (int i = 0; i < a->n; i++) {
		struct req *r = req_active(a->v[i]);
		if (r && r->done)
			return true;
	}
	return false;
}

static bool all_done(void *arg)
{
	struct any_arg *a = arg;
	for (int i = 0; i < a->n; i++) {
		struct req *r = req_of(a->v[i]);
		if (r && !r->done)
			return false;
	}
	return true;
}

static int check_reqs(int n, MPI_Request *v, const char *fn, int *active)
{
	*active = 0;
	if (n < 0)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COUNT, fn);
	for (int i = 0; i < n; i++) {
		if (v[i] == MPI_REQUEST_NULL)
			continue;
		if (!req_of(v[i]))
			return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn);
		if (req_active(v[i]))
			(*active)++;
	}
	return MPI_SUCCESS;
}

static int all_finish(int n, MPI_Request *v, MPI_Status *sts, const char *fn)
{
	int err = MPI_SUCCESS;
	MPI_Comm comm = MPI_COMM_WORLD;
	for (int i = 0; i < n; i++) {
		MPI_Status tmp, *st = sts == MPI_STATUSES_IGNORE ? &tmp : &sts[i];
		if (v[i] == MPI_REQUEST_NULL) {
			empty_status(st);
			continue;
		}
		comm = req_of(v[i])->comm;
		int e = finish(&v[i], st);
		st->MPI_ERROR = e;
		if (e)
			err = MPI_ERR_IN_STATUS;
	}
	return err ? bcs_err(comm, err, fn) : MPI_SUCCESS;
}

int MPI_Waitall(int n, MPI_Request v[], MPI_Status sts[])
{
	bcs_need_init("MPI_Waitall");
	trace_reqs(BCS_C_WAITALL, n, v);
	int active, rc = check_reqs(n, v, "MPI_Waitall", &active);
	if (rc)
		return rc;
	struct any_arg a = {n, v};
	wait_for(all_done, &a);
	return all_finish(n, v, sts, "MPI_Waitall");
}

int MPI_Testall(int n, MPI_Request v[], int *flag, MPI_Status sts[])
{
	bcs_need_init("MPI_Testall");
	trace_reqs(BCS_C_TESTALL, n, v);
	int active, rc = check_reqs(n, v, "MPI_Testall", &active);
	if (rc)
		return rc;
	drain();
	struct any_arg a = {n, v};
	*flag = bcs_trace_test(all_done(&a) ? 1 : 0, "MPI_Testall");
	if (!*flag) {
		declare_idle();
		return MPI_SUCCESS;
	}
	wait_for(all_done, &a);
	return all_finish(n, v, sts, "MPI_Testall");
}

static int first_done(int n, MPI_Request *v)
{
	for (int i = 0; i < n; i++) {
		struct req *r = req_active(v[i]);
		if (r && r->done)
			return i;
	}
	return -1;
}

static int one_finish(MPI_Request *v, int i, MPI_Status *st, const char *fn)
{
	MPI_Comm comm = req_of(v[i])->comm;
	return bcs_err(comm, finish(&v[i], st), fn);
}

int MPI_Waitany(int n, MPI_Request v[], int *indx, MPI_Status *st)
{
	bcs_need_init("MPI_Waitany");
	trace_reqs(BCS_C_WAITANY, n, v);
	int active, rc = check_reqs(n, v, "MPI_Waitany", &active);
	if (rc)
		return rc;
	if (!active) {
		*indx = MPI_UNDEFINED;
		empty_status(st);
		return MPI_SUCCESS;
	}
	struct any_arg a = {n, v};
	wait_for(any_done, &a);
	int i = bcs_trace_index(first_done(n, v), "MPI_Waitany");
	struct req *r = i >= 0 && i < n ? req_of(v[i]) : NULL;
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Waitany (replay diverged)");
	wait_for(req_done, &v[i]);
	*indx = i;
	return one_finish(v, i, st, "MPI_Waitany");
}

int MPI_Testany(int n, MPI_Request v[], int *indx, int *flag, MPI_Status *st)
{
	bcs_need_init("MPI_Testany");
	trace_reqs(BCS_C_TESTANY, n, v);
	int active, rc = check_reqs(n, v, "MPI_Testany", &active);
	if (rc)
		return rc;
	if (!active) {
		*flag = 1;
		*indx = MPI_UNDEFINED;
		empty_status(st);
		return MPI_SUCCESS;
	}
	drain();
	int i = bcs_trace_index(first_done(n, v), "MPI_Testany");
	if (i < 0 || i >= n) {
		*flag = 0;
		*indx = MPI_UNDEFINED;
		declare_idle();
		return MPI_SUCCESS;
	}
	if (!req_of(v[i]))
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Testany (replay diverged)");
	wait_for(req_done, &v[i]);
	*flag = 1;
	*indx = i;
	return one_finish(v, i, st, "MPI_Testany");
}

/* the requests of v done now, one bit each (past 64: read at the finish) */
static uint64_t done_mask(int n, MPI_Request *v)
{
	uint64_t mask = 0;
	for (int i = 0; i < n && i < 64; i++) {
		struct req *r = req_active(v[i]);
		if (r && r->done)
			mask |= 1ull << i;
	}
	return mask;
}

/* Waitsome's and Testsome's finish: the requests of the mask (the recorded
 * one in a replay, waited for if they have not completed yet) */
static int some_finish(int n, MPI_Request *v, uint64_t mask, int *outcount, int idx[],
		       MPI_Status sts[], const char *fn)
{
	int k = 0, err = MPI_SUCCESS;
	MPI_Comm comm = MPI_COMM_WORLD;
	for (int i = 0; i < n; i++) {
		struct req *r = req_active(v[i]);
		if (!r || !(i < 64 ? (int)((mask >> i) & 1) : r->done))
			continue;
		comm = r->comm;
		wait_for(req_done, &v[i]);
		MPI_Status tmp, *st = sts == MPI_STATUSES_IGNORE ? &tmp : &sts[k];
		int e = finish(&v[i], st);
		st->MPI_ERROR = e;
		if (e)
			err = MPI_ERR_IN_STATUS;
		idx[k++] = i;
	}
	*outcount = k;
	return err ? bcs_err(comm, err, fn) : MPI_SUCCESS;
}

/* Waitsome's and Testsome's start: initialised, traced, the requests
 * checked; 1 when the call is answered already (an error in *rc, or no
 * active request: outcount MPI_UNDEFINED) */
static int some_start(int call, int n, MPI_Request *v, int *outcount, int *rc, const char *fn)
{
	bcs_need_init(fn);
	trace_reqs(call, n, v);
	int active;
	*rc = check_reqs(n, v, fn, &active);
	if (*rc)
		return 1;
	if (!active)
		*outcount = MPI_UNDEFINED;
	return !active;
}

int MPI_Waitsome(int n, MPI_Request v[], int *outcount, int idx[], MPI_Status sts[])
{
	int rc;
	if (some_start(BCS_C_WAITSOME, n, v, outcount, &rc, "MPI_Waitsome"))
		return rc;
	struct any_arg a = {n, v};
	wait_for(any_done, &a);
	uint64_t mask = bcs_trace_mask(done_mask(n, v), "MPI_Waitsome");
	return some_finish(n, v, mask, outcount, idx, sts, "MPI_Waitsome");
}

/* As Testany, what has completed is what the daemon has answered once the
 * channel is drained, and a replay takes the recorded set */
int MPI_Testsome(int n, MPI_Request v[], int *outcount, int idx[], MPI_Status sts[])
{
	int rc;
	if (some_start(BCS_C_TESTSOME, n, v, outcount, &rc, "MPI_Testsome"))
		return rc;
	drain();
	uint64_t mask = bcs_trace_mask(done_mask(n, v), "MPI_Testsome");
	rc = some_finish(n, v, mask, outcount, idx, sts, "MPI_Testsome");
	if (*outcount == 0)
		declare_idle(); /* polling counts as waiting */
	return rc;
}

int MPI_Request_free(MPI_Request *rq)
{
	bcs_need_init("MPI_Request_free");
	struct req *r = req_of(*rq);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Request_free");
	if (r->done && r->kind == R_GREQ) {
		struct greq *q = r->tmp;
		q->free(q->extra);
		req_release(*rq);
	} else if (r->done) {
		req_release(*rq);
	} else {
		/* a generalized request's free callback runs at its completion:
		 * MPI calls it at Request_free or Grequest_complete, whichever
		 * comes last (MPICH at once) */
		r->freed = 1;
	}
	*rq = MPI_REQUEST_NULL;
	return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *rq)
{
	bcs_need_init("MPI_Cancel");
	struct req *r = req_of(*rq);
	if (!r)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Cancel");
	if (r->kind == R_GREQ) {
		struct greq *q = r->tmp;
		int e = q->cancel ? q->cancel(q->extra, r->done) : MPI_SUCCESS;
		return bcs_err(r->comm, e, "MPI_Cancel");
	}
	if ((r->kind != R_RECV && r->kind != R_SEND) || r->done)
		return MPI_SUCCESS;
	/* the node daemons decide it when the job is next quiescent: a send
	 * or receive still unmatched then completes cancelled, a matched one
	 * completes as usual */
	struct bcs_desc d = {.op = BCS_OP_CANCEL, .req = (uint32_t)*rq,
			     .flags = r->kind == R_SEND ? BCS_CANCEL_SEND : 0};
	post(&d);
	return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *st, int *flag)
{
	*flag = st->bcs_cancelled;
	return MPI_SUCCESS;
}

int MPI_Status_set_cancelled(MPI_Status *st, int flag)
{
	st->bcs_cancelled = flag != 0;
	return MPI_SUCCESS;
}

/* ---- generalized requests */

/* the status the query callback gives (an empty one to start from); its
 * error */
static int greq_status(struct req *r)
{
	struct greq *q = r->tmp;
	empty_status(&r->st);
	int e = q->query ? q->query(q->extra, &r->st) : MPI_SUCCESS;
	r->st.MPI_ERROR = e;
	return e;
}

static int greq_none(void *extra)
{
	(void)extra;
	return MPI_SUCCESS;
}

int MPI_Grequest_start(MPI_Grequest_query_function *query, MPI_Grequest_free_function *free_fn,
		       MPI_Grequest_cancel_function *cancel, void *extra, MPI_Request *req)
{
	bcs_need_init("MPI_Grequest_start");
	struct greq *q = malloc(sizeof(*q));
	if (!q)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_NO_MEM, "MPI_Grequest_start");
	*q = (struct greq){query, free_fn ? free_fn : greq_none, cancel, extra};
	int id = req_new(R_GREQ, MPI_COMM_WORLD);
	req_of(id)->tmp = q;
	*req = id;
	return MPI_SUCCESS;
}

int MPI_Grequest_complete(MPI_Request rq)
{
	bcs_need_init("MPI_Grequest_complete");
	struct req *r = req_of(rq);
	if (!r || r->kind != R_GREQ || r->done)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, "MPI_Grequest_complete");
	r->done = 1;
	if (r->freed) {
		struct greq *q = r->tmp;
		q->free(q->extra);
		req_release(rq);
	}
	return MPI_SUCCESS;
}

/* The last MPI_Iprobe the daemon answered with nothing, and the slice of
 * the collection it was answered after. Until the daemon collects again
 * (bcs_area.phase), an iprobe posted now would be answered after that
 * collection at the earliest, so the same iprobe is answered nothing here,
 * a loop of them costing no slice each; one that comes after a completion
 * goes to the daemon. What an iprobe finds is timing's either way, and
 * recorded (bcs_trace_test). */
static struct {
	uint32_t phase, ctx;
	int src, tag;
} empty_iprobe;

static void iprobe_empty(uint32_t ctx, int src, int tag)
{
	struct bcs_area *a = g.area;
	empty_iprobe.ctx = ctx;
	empty_iprobe.src = src;
	empty_iprobe.tag = tag;
	empty_iprobe.phase = a->comp_tail == __atomic_load_n(&a->comp_head, __ATOMIC_ACQUIRE)
				     ? __atomic_load_n(&a->phase, __ATOMIC_ACQUIRE)
				     : 0;
}

static bool iprobe_again(uint32_t ctx, int src, int tag)
{
	struct bcs_area *a = g.area;
	uint32_t ph = empty_iprobe.phase;
	if (!ph || ph != __atomic_load_n(&a->phase, __ATOMIC_ACQUIRE) ||
	    a->comp_tail != __atomic_load_n(&a->comp_head, __ATOMIC_ACQUIRE) ||
	    empty_iprobe.ctx != ctx || empty_iprobe.src != src || empty_iprobe.tag != tag) {
		empty_iprobe.phase = 0;
		return false;
	}
	return true;
}

static int probe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st, bool block,
		 const char *fn)
{
	CHECK_COMM(comm, fn);
	bcs_trace_call(block ? BCS_C_PROBE : BCS_C_IPROBE, src, tag, 0);
	if (src == MPI_PROC_NULL) {
		if (flag)
			*flag = 1;
		procnull_status(st);
		return MPI_SUCCESS;
	}
	if (src != MPI_ANY_SOURCE && (src < 0 || src >= bcs_peer_size(c)))
		return bcs_err(comm, MPI_ERR_RANK, fn);
	if (tag != MPI_ANY_TAG && (tag < 0 || tag > MPI_TAG_UB))
		return bcs_err(comm, MPI_ERR_TAG, fn);
	int wsrc = src == MPI_ANY_SOURCE ? BCS_ANY_SOURCE : bcs_peer_world(c)[src], wtag = tag;
	bool wild = src == MPI_ANY_SOURCE || tag == MPI_ANY_TAG;
	bool blocking = block;
	if (!block && bcs_trace_replaying()) {
		/* replay: the recorded flag decides; found means wait for it */
		*flag = bcs_trace_test(0, "MPI_Iprobe");
		if (!*flag) {
			if (wild) /* the recorded run spent an ordinal on it too */
				bcs_trace_wild_post(&wsrc, &wtag);
			return MPI_SUCCESS;
		}
		blocking = true;
	}
	/* not when a replay decided this one found a message (blocking) */
	if (!blocking && iprobe_again(c->ctx, wsrc, wtag)) {
		/* nothing since the daemon said nothing: the same answer, the
		 * same records (a flag, a wildcard's ordinal), without a slice */
		int k = wild ? bcs_trace_wild_post(&wsrc, &wtag) : -1;
		*flag = bcs_trace_test(0, "MPI_Iprobe");
		declare_idle();
		if (wild)
			bcs_trace_wild_done(k, -1, -1);
		return MPI_SUCCESS;
	}
	int k = wild ? bcs_trace_wild_post(&wsrc, &wtag) : -1;
	int id = req_new(R_PROBE, comm);
	struct bcs_desc d = {.op = blocking ? BCS_OP_PROBE : BCS_OP_IPROBE, .req = (uint32_t)id,
			     .peer = wsrc, .tag = wtag, .ctx = c->ctx};
	post(&d);
	wait_for(req_done, &id);
	struct req *r = req_of(id);
	bool found = !r->st.bcs_cancelled;
	if (!block && !bcs_trace_replaying()) {
		*flag = bcs_trace_test(found ? 1 : 0, "MPI_Iprobe");
		if (*flag && !found) {
			/* restored within this call to replay from a checkpoint
			 * (storm replay --from): the recorded run found a message
			 * here; wait for it, as a replay of the whole run does */
			req_release(id);
			id = req_new(R_PROBE, comm);
			d.op = BCS_OP_PROBE;
			d.req = (uint32_t)id;
			post(&d);
			wait_for(req_done, &id);
			r = req_of(id);
			found = !r->st.bcs_cancelled;
		}
	}
	if (!block && !found) {
		declare_idle();
		iprobe_empty(c->ctx, wsrc, wtag);
	}
	if (wild)
		bcs_trace_wild_done(k, found ? bcs_peer_world(c)[r->st.MPI_SOURCE] : -1,
				    found ? r->st.MPI_TAG : -1);
	if (found && st != MPI_STATUS_IGNORE) {
		int keep = st->MPI_ERROR;
		*st = r->st;
		st->MPI_ERROR = keep;
		st->bcs_cancelled = 0;
	}
	req_release(id);
	return MPI_SUCCESS;
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
	return probe(src, tag, comm, NULL, st, true, "MPI_Probe");
}

int MPI_Iprobe(int src, int tag, MPI_Comm comm, int *flag, MPI_Status *st)
{
	return probe(src, tag, comm, flag, st, false, "MPI_Iprobe");
}

/* ---- matched probes: the probed message is received at once, by a
 * receive naming its source and tag, into a buffer of its own; MPI_Mrecv
 * copies it out. The probe is the first message that matches; no earlier
 * one from that source with that tag can exist, or it would have matched
 * first, so the exact receive takes that very message, and no receive the
 * program posts later can. Record and replay see a probe and a receive. */
#define MAX_MSGS 1024
static struct msg {
	bool used;
	MPI_Comm comm;
	MPI_Status st;
	void *data;
	long bytes;
} msgs[MAX_MSGS]; /* handles from 2: MPI_MESSAGE_NULL and _NO_PROC below */


static int take_probed(MPI_Comm comm, const MPI_Status *pst, MPI_Message *out, const char *fn)
{
	int h = 2;
	while (h < MAX_MSGS && msgs[h].used)
		h++;
	if (h == MAX_MSGS)
		return bcs_err(comm, MPI_ERR_INTERN, fn);
	long bytes = (long)pst->bcs_count;
	void *data = malloc(bytes ? (size_t)bytes : 1);
	if (!data)
		return bcs_err(comm, MPI_ERR_NO_MEM, fn);
	MPI_Status rst;
	int rc = MPI_Recv(data, (int)bytes, MPI_BYTE, pst->MPI_SOURCE, pst->MPI_TAG, comm, &rst);
	if (rc != MPI_SUCCESS) {
		free(data);
		return rc;
	}
	msgs[h] = (struct msg){
		.used = true, .comm = comm, .st = rst, .data = data, .bytes = bytes};
	*out = h;
	return MPI_SUCCESS;
}

static void give_status(MPI_Status *st, const MPI_Status *from)
{
	if (st == MPI_STATUS_IGNORE)
		return;
	int keep = st->MPI_ERROR;
	*st = *from;
	st->MPI_ERROR = keep;
}

int MPI_Mprobe(int src, int tag, MPI_Comm comm, MPI_Message *msg, MPI_Status *st)
{
	CHECK_COMM(comm, "MPI_Mprobe");
	(void)c;
	if (src == MPI_PROC_NULL) {
		*msg = MPI_MESSAGE_NO_PROC;
		procnull_status(st);
		return MPI_SUCCESS;
	}
	MPI_Status pst;
	int rc = MPI_Probe(src, tag, comm, &pst);
	if (!rc)
		rc = take_probed(comm, &pst, msg, "MPI_Mprobe");
	if (!rc)
		give_status(st, &msgs[*msg].st);
	return rc;
}

int MPI_Improbe(int src, int tag, MPI_Comm comm, int *flag, MPI_Message *msg,
		MPI_Status *st)
{
	CHECK_COMM(comm, "MPI_Improbe");
	(void)c;
	if (src == MPI_PROC_NULL) {
		*flag = 1;
		*msg = MPI_MESSAGE_NO_PROC;
		procnull_status(st);
		return MPI_SUCCESS;
	}
	MPI_Status pst;
	int rc = MPI_Iprobe(src, tag, comm, flag, &pst);
	if (rc || !*flag)
		return rc;
	rc = take_probed(comm, &pst, msg, "MPI_Improbe");
	if (!rc)
		give_status(st, &msgs[*msg].st);
	return rc;
}

/* The message's bytes into buf: MPI_ERR_TRUNCATE if they do not fit. */
static int msg_deliver(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *out,
		       const char *fn)
{
	bcs_need_init(fn);
	if (!msg)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_ARG, fn);
	if (*msg == MPI_MESSAGE_NO_PROC) {
		*msg = MPI_MESSAGE_NULL;
		procnull_status(out);
		return MPI_SUCCESS;
	}
	if (*msg < 2 || *msg >= MAX_MSGS || !msgs[*msg].used)
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn);
	struct msg *m = &msgs[*msg];
	MPI_Comm comm = bcs_comm_get(m->comm) ? m->comm : MPI_COMM_WORLD;
	struct bcs_type *t;
	int rc = check_buf(buf, count, dt, &t);
	if (rc)
		return bcs_err(comm, rc, fn);
	long room = (long)count * t->size, n = m->bytes < room ? m->bytes : room;
	if (bcs_type_is_contig(t))
		memcpy(buf, m->data, (size_t)n);
	else
		bcs_unpack(t, m->data, n, buf);
	give_status(out, &m->st);
	if (out != MPI_STATUS_IGNORE)
		out->bcs_count = n;
	bool cut = m->bytes > room;
	free(m->data);
	*m = (struct msg){0};
	*msg = MPI_MESSAGE_NULL;
	return cut ? bcs_err(comm, MPI_ERR_TRUNCATE, fn) : MPI_SUCCESS;
}

int MPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Status *st)
{
	return msg_deliver(buf, count, dt, msg, st, "MPI_Mrecv");
}

/* Fortran's handles are these integers. Made by a macro, so their
 * profiling names and weak aliases are made here (scripts/pmpi.sh finds
 * only definitions written out) */
#define HANDLE_PRAGMA(x) _Pragma(#x)
#define HANDLE_F(T, name)                                                              \
	HANDLE_PRAGMA(weak MPI_##name##_c2f = PMPI_##name##_c2f)                       \
	HANDLE_PRAGMA(weak MPI_##name##_f2c = PMPI_##name##_f2c)                       \
	MPI_Fint PMPI_##name##_c2f(T h)                                                \
	{                                                                              \
		return (MPI_Fint)h;                                                    \
	}                                                                              \
	T PMPI_##name##_f2c(MPI_Fint h)                                                \
	{                                                                              \
		return (T)h;                                                           \
	}
HANDLE_F(MPI_Comm, Comm)
HANDLE_F(MPI_Datatype, Type)
HANDLE_F(MPI_Group, Group)
HANDLE_F(MPI_Request, Request)
HANDLE_F(MPI_Op, Op)
HANDLE_F(MPI_Win, Win)
HANDLE_F(MPI_Errhandler, Errhandler)
HANDLE_F(MPI_Message, Message)

/* complete at once: the message is here already */
int MPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *msg, MPI_Request *req)
{
	MPI_Status st;
	int rc = msg_deliver(buf, count, dt, msg, &st, "MPI_Imrecv");
	if (rc)
		return rc;
	int id = req_new(R_NULLDONE, MPI_COMM_WORLD);
	struct req *r = req_at(id - 1);
	r->done = 1;
	r->st = st;
	r->st.MPI_ERROR = MPI_SUCCESS;
	*req = id;
	return MPI_SUCCESS;
}

/* ---- reduction operators */

int MPI_Op_create(MPI_User_function *fn, int commute, MPI_Op *op)
{
	for (int i = 32; i < 256; i++)
		if (!g.ops[i]) {
			g.ops[i] = fn;
			g.op_commute[i] = commute;
			*op = i;
			return MPI_SUCCESS;
		}
	return bcs_err(MPI_COMM_WORLD, MPI_ERR_INTERN, "MPI_Op_create");
}

/* a user op a program may still name (created, not freed) */
static bool user_op(MPI_Op op)
{
	return op >= 32 && op < 256 && g.ops[op] && !g.op_freed[op];
}

int MPI_Op_free(MPI_Op *op)
{
	if (!user_op(*op))
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Op_free");
	if (g.op_holds[*op])
		g.op_freed[*op] = true;
	else
		g.ops[*op] = NULL;
	*op = MPI_OP_NULL;
	return MPI_SUCCESS;
}

void bcs_op_hold(MPI_Op op)
{
	if (op >= 32 && op < 256 && g.ops[op])
		g.op_holds[op]++;
}

void bcs_op_release(MPI_Op op)
{
	if (op < 32 || op >= 256 || !g.ops[op] || g.op_holds[op] <= 0)
		return;
	if (--g.op_holds[op] == 0 && g.op_freed[op]) {
		g.ops[op] = NULL;
		g.op_freed[op] = false;
	}
}

int MPI_Op_commutative(MPI_Op op, int *commute)
{
	if (user_op(op))
		*commute = g.op_commute[op] != 0;
	else if (op >= MPI_MAX && op <= MPI_NO_OP)
		*commute = 1;
	else
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_OP, "MPI_Op_commutative");
	return MPI_SUCCESS;
}

int MPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype dt, MPI_Op op)
{
	bcs_need_init("MPI_Reduce_local");
	int rc = count < 0 ? MPI_ERR_COUNT : bcs_op_check(op, dt);
	if (!rc)
		rc = bcs_reduce_local(op, dt, count, inbuf, inoutbuf);
	return bcs_err(MPI_COMM_WORLD, rc, "MPI_Reduce_local");
}

int bcs_op_check(MPI_Op op, MPI_Datatype dt)
{
	struct bcs_type *t = bcs_type_get(dt);
	if (!t || !t->committed)
		return MPI_ERR_TYPE;
	if (user_op(op))
		return MPI_SUCCESS;
	if (op < MPI_MAX || op > MPI_MINLOC)
		return MPI_ERR_OP;
	return bcs_op_valid(op, t->basic) ? MPI_SUCCESS : MPI_ERR_OP;
}

int bcs_reduce_local(MPI_Op op, MPI_Datatype dt, int count, const void *in, void *inout)
{
	struct bcs_type *t = bcs_type_held(dt); /* as copy_typed (coll.c) */
	if (!t)
		return MPI_ERR_TYPE;
	if (op >= 32 && op < 256 && g.ops[op]) {
		MPI_Datatype d = dt;
		int n = count;
		g.ops[op]((void *)in, inout, &n, &d);
		return MPI_SUCCESS;
	}
	if (bcs_type_is_contig(t))
		return bcs_op_apply(op, t->basic, in, inout, (long)count * t->nelem);
	long bytes = (long)count * t->size;
	char *a = malloc((size_t)bytes + 1), *b = malloc((size_t)bytes + 1);
	if (!a || !b) {
		free(a);
		free(b);
		return MPI_ERR_INTERN;
	}
	bcs_pack(t, in, count, a);
	bcs_pack(t, inout, count, b);
	int rc = bcs_op_apply(op, t->basic, a, b, (long)count * t->nelem);
	bcs_unpack(t, b, bytes, inout);
	free(a);
	free(b);
	return rc;
}
