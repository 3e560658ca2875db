/* Which MPI a program is linked with, read from its ELF dynamic section
 * (DT_NEEDED), so storm run can wire it up without being told. */
#ifndef STORM_MPIDETECT_H
#define STORM_MPIDETECT_H

#include <stddef.h>

enum mpi_found { MPI_FOUND_NONE, MPI_FOUND_BCS, MPI_FOUND_MPICH, MPI_FOUND_OPENMPI };

/* The MPI whose library the program at path needs directly; lib receives
 * that library's name ("libmpich.so.12"). MPI_FOUND_NONE also for what is
 * not a dynamic ELF file (a script, a static program): nothing to tell. */
enum mpi_found mpi_detect(const char *path, char *lib, size_t len);
/* "BCS-MPI", "MPICH", "Open MPI" */
const char *mpi_found_name(enum mpi_found f);
/* the storm.job.Mpi value that wires it up (mpikind.h) */
int mpi_found_kind(enum mpi_found f);

#endif
