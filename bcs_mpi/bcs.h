/* BCS-MPI library internals shared by mpi.c (environment, point to point,
 * requests, communicators, errors) and coll.c (collectives). */
#ifndef BCS_INTERNAL_H
#define BCS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "dtype.h"
#include "mpi.h"

struct bcs_comm {
	int used;
	int size, rank;
	int *world;        /* comm rank -> world rank */
	uint32_t ctx;      /* point to point; collectives use ctx + 1 */
	int errh;
};

struct bcs_comm *bcs_comm_get(MPI_Comm c);
/* Calls the communicator's error handler on a failure; returns code. */
int bcs_err(MPI_Comm comm, int code, const char *fn);
/* Checks that MPI is initialised; aborts with a message otherwise. */
void bcs_need_init(const char *fn);

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

/* Combines count items: inout = in op inout (user ops see the user layout). */
int bcs_reduce_local(MPI_Op op, MPI_Datatype dt, int count, const void *in, void *inout);
int bcs_op_check(MPI_Op op, MPI_Datatype dt);

/* a new context id agreed by every member of c (collective over c) */
int bcs_new_ctx(struct bcs_comm *c, uint32_t *ctx);
int bcs_allgather_ints(struct bcs_comm *c, const int *mine, int n, int *all);

/* One-sided communication (win.c): the hook runs while this rank waits or
 * polls; bcs_wait waits until cond holds; bcs_req_done and bcs_req_take
 * look at and finish a request without touching the trace. */
extern void (*bcs_progress_hook)(void);
void bcs_wait(bool (*cond)(void *), void *arg);
bool bcs_req_done(MPI_Request id);
int bcs_req_take(MPI_Request *id, MPI_Status *st);
/* a group's members as world ranks (group_min.c); NULL for a bad handle */
const int *bcs_group_world(MPI_Group g, int *n);

#endif