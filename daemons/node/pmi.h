/* The process-management interfaces the node daemon serves to MPI
 * libraries other than BCS-MPI, shared by their files: pmi_xchg.c (the
 * bottom: a job's allgather across its nodes on the mailboxes), pmi1.c
 * (PMI-1's wire protocol, MPICH), pmix.c (a PMIx server, Open MPI), and
 * pmi.c, the one entry for ranks.c, choosing by the job's spec. */
#ifndef STORM_ND_PMI_H
#define STORM_ND_PMI_H

#include <stddef.h>
#include <stdint.h>

#include "nd.h"
#include "pmi_wire.h"

/* mailbox types (the mailbox's arg carries the exchange's number) */
enum { M_XCHG_UP = 20, M_XCHG_DOWN = 21, M_PMI_ABORT = 22 };

/* An exchange's end: recs holds every node's contribution as pmi_xrec
 * records in node order (pmi_xrec_next); err is -errno when it failed
 * (the job ended first), recs then NULL. */
typedef void (*xchg_done_fn)(struct nd *nd, uint64_t job, int err, const uint8_t *recs,
			     size_t len, void *arg);
int xchg_init(struct nd *nd);
void xchg_close(struct nd *nd);
/* The job's nodes (cluster indices, in the Launch's order) and this
 * node's place among them; messages that came earlier wait for it. */
int xchg_job(struct nd *nd, uint64_t job, const uint32_t *nodes, uint32_t n);
/* xchg_job for a launch: the tree spans the nodes that run ranks (one with
 * none starts no process manager and would never answer) */
int xchg_job_launch(struct nd *nd, uint64_t job, const Storm__Cl__Command *cmd);
/* Starts the job's next exchange with this node's bytes (copied); done is
 * called once every node's bytes are here, in every node the same. The
 * exchanges of a job are numbered in start order, so every node's k-th
 * call is the same exchange. 0 or -errno. */
int xchg_start(struct nd *nd, uint64_t job, const void *mine, size_t len, xchg_done_fn done,
	       void *arg);
/* Every node of the job ends its ranks (one of them aborted). */
/* the exchanges under way, in the log (SIGUSR1) */
void xchg_dump(const struct nd *nd);
void xchg_abort(struct nd *nd, uint64_t job, uint32_t rank, int code);
void xchg_job_end(struct nd *nd, uint64_t job);

/* pmi1.c */
int pmi1_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k);
int pmi1_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		  int *fd);
void pmi1_rank_forked(struct nd *nd, struct nd_job *job, uint32_t lr);
void pmi1_job_end(struct nd *nd, struct nd_job *job);

/* pmix.c */
int pmix_init(struct nd *nd);
void pmix_close(struct nd *nd);
void pmix_dump(const struct nd *nd); /* its jobs' ranks as the library told */
int pmix_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k);
int pmix_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		  int *fd);
void pmix_job_end(struct nd *nd, struct nd_job *job);
void pmix_test_hold(struct nd *nd, struct nd_job *job); /* test hook pmix_late_eof */

#endif
