/* BCS-MPI library internals shared by its files. The files call down only:
 * mpi.c (environment, the communicator table, requests, point to point,
 * errors) is the bottom, which every other calls and which calls none of
 * them but rankep.c (the rank's endpoint, which calls none) (a persistent
 * buffered send is handed bsend.c's function); init.c
 * (MPI_Init, MPI_Finalize) is the top. In between, coll.c and intercomm.c
 * call each other (collectives on an intercommunicator); comm.c (dup,
 * split, free) calls them, attr.c and topo.c's data; group.c, topo.c and
 * win.c make communicators through comm.c. */
#ifndef BCS_INTERNAL_H
#define BCS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "mpi.h"

/* rankep.c, below mpi.c: the rank's own endpoint for messages between
 * nodes (chan.h, "Across nodes, rank to rank"). bcs_ep_drain takes the
 * daemon's orders and drives the endpoint; while bcs_ep_busy, a waiting
 * rank naps on the endpoint (bcs_ep_nap) instead of its futex. */
struct bcs_chan_hdr;
struct bcs_area;
void bcs_ep_init(const struct bcs_chan_hdr *h, struct bcs_area *a, int rank);
/* A send or receive of BCS_RANK_MIN bytes or more is about to be posted:
 * the endpoint opens, once (a job of small messages never loads libfabric) */
void bcs_ep_want(void);
void bcs_ep_drain(void);
void bcs_ep_fini(void); /* MPI_Finalize: closed for good */
bool bcs_ep_busy(void);
void bcs_ep_nap(void);

struct bcs_comm {
	int used;
	int size, rank;
	int *world;        /* comm rank -> world rank */
	uint32_t ctx;      /* point to point; collectives use ctx + 1 */
	int errh;
	int win;           /* the window it serves (win.c), or MPI_WIN_NULL */
	struct bcs_topo *topo; /* a Cartesian communicator's grid (topo.c) */
	char *name;        /* MPI_Comm_set_name's, or NULL */
	/* an intercommunicator's remote group (NULL: an intracommunicator);
	 * point-to-point ranks name it (intercomm.c) */
	int rsize;
	int *rworld;
	uint32_t pcolls;   /* persistent collectives made on it (pcoll.c) */
	/* the context ids its members agreed on for its next duplicates
	 * (comm.c): dup_next up to dup_end */
	uint32_t dup_next, dup_end;
};

/* MPI_*_set_name: a copy of name cut to MPI_MAX_OBJECT_NAME - 1 bytes
 * into *slot; MPI_*_get_name: *slot, or dflt when none */
int bcs_name_set(char **slot, const char *name);
void bcs_name_get(const char *slot, const char *dflt, char *out, int *len);

/* a communicator's topology (topo.c): kind is MPI_CART, MPI_GRAPH or
 * MPI_DIST_GRAPH; dims[] holds len ints */
struct bcs_topo {
	int kind;
	int ndims;    /* Cartesian: dimensions; graph: nodes; dist graph: in-degree */
	int nedges;   /* graph: edges; dist graph: out-degree */
	int weighted; /* dist graph: weights were given */
	int len;
	/* Cartesian: ndims sizes, then ndims periodic flags; graph: the nodes'
	 * index, then the edges; dist graph: sources, their weights,
	 * destinations, their weights (this rank's only) */
	int dims[];
};

struct bcs_comm *bcs_comm_get(MPI_Comm c);
/* may error handler h be set on a communicator (win 0) or a window? (mpi.c) */
bool bcs_errh_fits(int h, int win);
/* a communicator taking ownership of world (MPI_COMM_NULL when full) */
MPI_Comm bcs_comm_new(int size, int rank, int *world, uint32_t ctx, int errh);
/* bcs_comm_new's two steps: a free handle (MPI_COMM_NULL when full), and
 * filling it; bcs_comm_slot: a handle's entry, in use or not (mpi.c) */
MPI_Comm bcs_comm_alloc(void);
void bcs_comm_set(MPI_Comm h, int size, int rank, int *world, uint32_t ctx, int errh);
struct bcs_comm *bcs_comm_slot(MPI_Comm h);
/* MPI_Comm_dup without the attributes' copy callbacks; an MPI error class
 * (comm.c) */
int bcs_comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
/* a copy of a topology (NULL for none) (comm.c) */
struct bcs_topo *bcs_topo_dup(const struct bcs_topo *t);
/* this rank's neighbours on c's topology in MPI's order (Cartesian: each
 * dimension's source then destination of a shift by 1, MPI_PROC_NULL off
 * an edge; graph: its edges, in and out alike; dist graph: its sources in,
 * its destinations out), in malloc'd *in and *out; MPI_ERR_TOPOLOGY for
 * none */
int bcs_topo_neighbors(const struct bcs_comm *c, int **in, int *nin, int **out, int *nout);
/* the node this rank runs on, as the world rank of its first local rank */
int bcs_node_id(void);
/* Calls the communicator's error handler on a failure; returns code. */
int bcs_err(MPI_Comm comm, int code, const char *fn);
/* Checks that MPI is initialised; aborts with a message otherwise. */
void bcs_need_init(const char *fn);
/* MPI_Init and MPI_Finalize (init.c) are these steps of mpi.c around a
 * barrier: the set-up up to it (aborts on failure), MPI_Init_thread's
 * level, the wait for buffered sends to leave, and the end */
void bcs_init_common(int *argc, char ***argv);
void bcs_init_thread(int required, int *provided);
void bcs_finalize_drain(void);
void bcs_finalize_done(void);

/* Point to point on a communicator's collective context (coll = true) or its
 * point-to-point one, without error handlers: return an MPI error class. */
int bcs_isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
	      struct bcs_comm *c, bool coll, MPI_Request *req);
int bcs_irecv(void *buf, int count, MPI_Datatype dt, int src, int tag, struct bcs_comm *c,
	      bool coll, MPI_Request *req);
int bcs_waitall(int n, MPI_Request *reqs);
/* MPI_Barrier(MPI_COMM_WORLD) by the node daemons (one descriptor exchange) */
int bcs_world_barrier(void);
/* MPI_Allreduce(MPI_COMM_WORLD) of at most BCS_RED_MAX bytes by the daemons */
int bcs_world_allreduce(const void *sbuf, void *rbuf, int count, struct bcs_type *t, MPI_Op op);

/* A non-blocking collective's request: bcs_coll_part hands it each posted
 * point-to-point request (coll = true), bcs_coll_arm ends the posting (err:
 * a posting failure). Once every part is done, fin(state) runs (its error
 * becomes the request's) and the request completes; state is freed with it. */
int bcs_coll_start(MPI_Comm comm, int (*fin)(void *state), void *state);
/* the tag the parts of the collectives posted from now on carry in place of
 * TAG_COLL (0: TAG_COLL); returns the one before. Persistent collectives
 * take TAG_COLL + 1 up to 2^24 + 1; a group-collective Comm_create_group,
 * TAG_GROUP_BASE + its tag */
int bcs_coll_tag_set(int tag);
#define TAG_GROUP_BASE (1 << 25)
void bcs_coll_part(int coll, MPI_Request part);
void bcs_coll_arm(int coll, int err);
/* n typed scratch slots of count items of dt each: slot i is at
 * *first + i * *stride; free the returned block */
void *bcs_slots(int n, int count, MPI_Datatype dt, long *stride, char **first);
/* dst = copy of count items of dt (typed buffers, same layout) */
int bcs_copy_typed(const void *s, int scount, MPI_Datatype stype, void *r, int rcount,
		   MPI_Datatype rtype);

/* Folds slots lo..hi-1 (bcs_slots) into slot hi-1 in rank order. */
int bcs_fold(MPI_Op op, MPI_Datatype dt, int count, char *all, long span, int lo, int hi);

/* Combines count items: inout = in op inout (user ops see the user layout). */
int bcs_reduce_local(MPI_Op op, MPI_Datatype dt, int count, const void *in, void *inout);
int bcs_op_check(MPI_Op op, MPI_Datatype dt);
/* a pending reduction's hold on a user op: MPI_Op_free before it folds
 * leaves the op to it (predefined ops: nothing) */
void bcs_op_hold(MPI_Op op);
void bcs_op_release(MPI_Op op);
/* A datatype's extent in bytes, 0 for an unknown one. */
long bcs_extent(MPI_Datatype dt);
/* Reduce_scatter's blocks (counts[i], or bcount each when counts is NULL):
 * rank me's count, its block's offset in elements in *myoff; MPI_ERR_COUNT
 * (negated) for a negative count. */
int bcs_rs_block(const int *counts, int bcount, int n, int me, long *myoff);

/* a new context id agreed by every member of c (collective over c; comm.c) */
int bcs_new_ctx(struct bcs_comm *c, uint32_t *ctx);
int bcs_allgather_ints(struct bcs_comm *c, const int *mine, int n, int *all);

/* One-sided communication (win.c): the hook runs while this rank waits or
 * polls; bcs_wait waits until cond holds; bcs_req_done and bcs_req_take
 * look at and finish a request without touching the trace. */
extern void (*bcs_progress_hook)(void);
void bcs_wait(bool (*cond)(void *), void *arg);
bool bcs_req_done(MPI_Request id);
int bcs_req_take(MPI_Request *id, MPI_Status *st);
/* a test of cond (MPI_Win_test): true when it holds, the outcome recorded
 * and replayed as MPI_Test's */
bool bcs_test(bool (*cond)(void *), void *arg, const char *fn);
/* a group's members as world ranks (group.c); NULL for a bad handle */
const int *bcs_group_world(MPI_Group g, int *n);

/* ---- intercommunicators (intercomm.c) */
/* the ranks point to point names on c: the remote group's on an
 * intercommunicator, else c's own */
static inline int bcs_peer_size(const struct bcs_comm *c)
{
	return c->rworld ? c->rsize : c->size;
}

static inline const int *bcs_peer_world(const struct bcs_comm *c)
{
	return c->rworld ? c->rworld : c->world;
}

/* the context ids after the last this rank has handed out, and a claim of
 * every id below end (ids only grow, so a maximum over the members is
 * free for all of them) */
uint32_t bcs_ctx_next(void);
void bcs_ctx_claim(uint32_t end);
/* MPI_ERR_COMM for fn, not supported on an intercommunicator (mpi.c) */
int bcs_inter_refuse(MPI_Comm comm, const char *fn);
int bcs_inter_dup(struct bcs_comm *c, MPI_Comm comm, MPI_Comm *newcomm);
/* Both groups of c as one intracommunicator, the group of the lower world
 * rank first whichever side calls, its collective steps on c's (ctx + 1);
 * *off: where c's own group starts in it. Free u->world. */
int bcs_inter_union(const struct bcs_comm *c, struct bcs_comm *u, int *off);
/* MPI_Comm_split on an intercommunicator (MPI_Comm_create: by membership) */
int bcs_inter_split(struct bcs_comm *c, MPI_Comm comm, int color, int key, MPI_Comm *newcomm,
		    const char *fn);
int bcs_inter_compare(const struct bcs_comm *x, const struct bcs_comm *y, int *result);
int bcs_inter_barrier(struct bcs_comm *c, MPI_Comm comm);
int bcs_inter_bcast(void *buf, int count, MPI_Datatype dt, int root, struct bcs_comm *c,
		    MPI_Comm comm);
int bcs_inter_allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
			struct bcs_comm *c, MPI_Comm comm);
int bcs_inter_reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype dt, MPI_Op op,
		     int root, struct bcs_comm *c, MPI_Comm comm);
/* Reduce_scatter (counts) and Reduce_scatter_block (bcount) */
int bcs_inter_reduce_scatter(const void *sbuf, void *rbuf, const int *counts, int bcount,
			     MPI_Datatype dt, MPI_Op op, struct bcs_comm *c, MPI_Comm comm,
			     const char *fn);
/* Gather(v), Scatter(v), Allgather(v), Alltoall(v) between the groups (NULL
 * counts: count each; NULL displs: blocks back to back) */
enum { BCS_INTER_GATHER, BCS_INTER_SCATTER, BCS_INTER_ALLGATHER, BCS_INTER_ALLTOALL };
int bcs_inter_flat(int kind, const void *sbuf, int scount, const int *scounts,
		   const int *sdispls, MPI_Datatype stype, void *rbuf, int rcount,
		   const int *rcounts, const int *rdispls, MPI_Datatype rtype, int root,
		   struct bcs_comm *c, MPI_Comm comm, const char *fn);

/* Attribute caching (attr.c): values by (kind, object handle, keyval);
 * bcs_attr_copy runs the copy callbacks of old's attributes onto new (dup),
 * bcs_attr_free_all the delete callbacks of all of obj's (its free) */
enum { BCS_ATTR_COMM = 1, BCS_ATTR_TYPE, BCS_ATTR_WIN };
int bcs_attr_set(int kind, int obj, int keyval, void *val);
int bcs_attr_get(int kind, int obj, int keyval, void *val, int *flag);
int bcs_attr_delete(int kind, int obj, int keyval);
int bcs_attr_copy(int kind, int old, int new);
int bcs_attr_free_all(int kind, int obj);

/* Buffered sends: bcs_bsend (bsend.c) checks the message against the
 * attached buffer, bcs_bsend_post (mpi.c) sends it from a copy of its own,
 * which MPI_Finalize waits to see taken; an MPI error class.
 * bcs_req_complete: a request complete from the start (mpi.c). */
int bcs_bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm);
int bcs_bsend_post(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
		   MPI_Comm comm);
int bcs_req_complete(MPI_Comm comm, MPI_Request *req);
/* MPI_Bsend_init's request (mpi.c): each MPI_Start sends by bsend, which
 * bsend.c passes down so that mpi.c need not call it */
typedef int bcs_bsend_fn(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			 MPI_Comm comm);
int bcs_persist_bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
			   MPI_Comm comm, MPI_Request *req, bcs_bsend_fn *bsend);

/* A persistent collective (MPI-4, pcoll.c): each MPI_Start runs start(args),
 * a non-blocking collective whose request takes the persistent request's
 * handle (mpi.c); drop(args) when the request is freed (also on failure). */
typedef int bcs_pcoll_fn(void *args, MPI_Request *req);
int bcs_persist_coll_init(MPI_Comm comm, bcs_pcoll_fn *start, void (*drop)(void *), void *args,
			  MPI_Request *req);

/* collectives' point-to-point tag, in a communicator's collective context */
#define TAG_COLL 1

/* an MPI call on comm: c is its communicator, or the call fails */
#define ANY_COMM(comm, fn)                                                             \
	bcs_need_init(fn);                                                             \
	struct bcs_comm *c = bcs_comm_get(comm);                                       \
	if (!c)                                                                        \
		return bcs_err(MPI_COMM_WORLD, MPI_ERR_COMM, fn)
/* the same, for a call that takes intracommunicators only */
#define COMM(comm, fn)                                                                 \
	ANY_COMM(comm, fn);                                                            \
	if (c->rworld)                                                                 \
		return bcs_inter_refuse(comm, fn)

/* the same, for a call that takes intercommunicators only */
#define INTER(comm, fn)                                                                 \
	ANY_COMM(comm, fn);                                                             \
	if (!c->rworld)                                                                 \
		return bcs_err(comm, MPI_ERR_COMM, fn " (not an intercommunicator)")

#endif
