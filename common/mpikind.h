/* How a job's ranks wire up as an MPI job (its spec's mpi): the names
 * storm run --mpi takes and prints, and whether such a job can be
 * checkpointed. Shared by the CLI and the machine manager so both refuse
 * with the same words. */
#ifndef STORM_MPIKIND_H
#define STORM_MPIKIND_H

/* values of storm.job.Mpi */
enum mpi_kind { MPI_KIND_BCS = 0, MPI_KIND_NONE = 1, MPI_KIND_PMI1 = 2, MPI_KIND_PMIX = 3 };

/* "bcs", "none", "pmi1", "pmix"; "?" for anything else */
const char *mpi_kind_name(int kind);
/* the kind named, or -1 */
int mpi_kind_parse(const char *name);
/* Why a job of this kind cannot be checkpointed, or NULL when it can. */
const char *mpi_kind_no_checkpoint(int kind);

#endif
