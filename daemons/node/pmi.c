/* The process manager a job's ranks see, by its spec's mpi: BCS-MPI's
 * channel is bcs.c's; PMI-1 (pmi1.c) and PMIx (pmix.c) are chosen here,
 * so ranks.c knows one entry for both. */
#include <errno.h>

#include "pmi.h"

int nd_pmi_init(struct nd *nd)
{
	int rc = xchg_init(nd);
	return rc < 0 ? rc : pmix_init(nd);
}

void nd_pmi_close(struct nd *nd)
{
	pmix_close(nd);
	xchg_close(nd);
}

int nd_pmi_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k)
{
	switch (job->mpi) {
	case STORM__JOB__MPI__MPI_PMI1:
		return pmi1_job_start(nd, job, cmd, k);
	case STORM__JOB__MPI__MPI_PMIX:
		return pmix_job_start(nd, job, cmd, k);
	default:
		return 0;
	}
}

int nd_pmi_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		    int *fd)
{
	*fd = -1;
	switch (job->mpi) {
	case STORM__JOB__MPI__MPI_PMI1:
		return pmi1_rank_env(nd, job, lr, env, max, fd);
	case STORM__JOB__MPI__MPI_PMIX:
		return pmix_rank_env(nd, job, lr, env, max, fd);
	default:
		return 0;
	}
}

void nd_pmi_dump(const struct nd *nd)
{
	xchg_dump(nd);
	pmix_dump(nd);
}

void nd_pmi_rank_forked(struct nd *nd, struct nd_job *job, uint32_t lr)
{
	if (job->mpi == STORM__JOB__MPI__MPI_PMI1)
		pmi1_rank_forked(nd, job, lr);
}

void nd_pmi_job_signalled(struct nd *nd, struct nd_job *job)
{
	if (job->mpi == STORM__JOB__MPI__MPI_PMIX)
		pmix_test_hold(nd, job);
}

void nd_pmi_job_end(struct nd *nd, struct nd_job *job)
{
	if (job->mpi == STORM__JOB__MPI__MPI_PMI1)
		pmi1_job_end(nd, job);
	else if (job->mpi == STORM__JOB__MPI__MPI_PMIX)
		pmix_job_end(nd, job);
}
