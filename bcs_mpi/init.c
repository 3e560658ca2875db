/* BCS-MPI's start and end: MPI_Init and MPI_Finalize, the top of the
 * library. mpi.c does the work of each (bcs_init_common, bcs_finalize_*);
 * the barriers they end or wait on are the collectives' (coll.c), and
 * MPI_COMM_SELF's attributes are attr.c's: kept here so that mpi.c, which
 * every other file calls, calls none of them back. */
#include "bcs.h"
#include "trace.h"

static int init(int *argc, char ***argv)
{
	bcs_init_common(argc, argv);
	/* everyone starts from the same strobe */
	bcs_trace_mute(1);
	int rc = MPI_Barrier(MPI_COMM_WORLD);
	bcs_trace_mute(0);
	return rc;
}

int MPI_Init(int *argc, char ***argv)
{
	return init(argc, argv);
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	bcs_init_thread(required, provided);
	return init(argc, argv);
}

int MPI_Finalize(void)
{
	bcs_need_init("MPI_Finalize");
	bcs_trace_call(BCS_C_FINALIZE, BCS_PEER_NONE, -1, 0);
	/* MPI_COMM_SELF's attributes are deleted first (MPI-3.1 §8.7.1) */
	bcs_attr_free_all(BCS_ATTR_COMM, MPI_COMM_SELF);
	bcs_trace_mute(1);
	bcs_finalize_drain();
	int rc = MPI_Barrier(MPI_COMM_WORLD);
	bcs_trace_finish();
	bcs_finalize_done();
	return rc;
}
