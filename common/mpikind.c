/* MPI wire-up kinds (mpikind.h). */
#include <string.h>

#include "mpikind.h"

static const char *const names[] = {"bcs", "none", "pmi1", "pmix"};

const char *mpi_kind_name(int kind)
{
	return kind >= 0 && kind < 4 ? names[kind] : "?";
}

int mpi_kind_parse(const char *name)
{
	for (int k = 0; k < 4; k++)
		if (!strcmp(name, names[k]))
			return k;
	return -1;
}

const char *mpi_kind_no_checkpoint(int kind)
{
	/* the checkpointer saves a rank's memory and its BCS-MPI channel; an
	 * MPI of its own keeps live sockets to its peers and shared memory
	 * segments with them, which a restored rank would not have */
	if (kind == MPI_KIND_PMI1)
		return "an MPICH job (--mpi=pmi1) holds sockets and shared memory the "
		       "checkpointer does not save; relink it with bcs-mpicc to checkpoint it";
	if (kind == MPI_KIND_PMIX)
		return "an Open MPI job (--mpi=pmix) holds sockets and shared memory the "
		       "checkpointer does not save; relink it with bcs-mpicc to checkpoint it";
	return NULL;
}
