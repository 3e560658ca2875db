/* Which MPI a program is linked with (mpidetect.h), through libelf. */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mpidetect.h"
#include "mpikind.h"

/* By soname: Open MPI's libmpi is .so.40 since 3.0; MPICH's ABI (MPICH,
 * Intel MPI, MVAPICH) is libmpi.so.12, and Debian's MPICH is libmpich. */
static enum mpi_found classify(const char *soname)
{
	if (!strncmp(soname, "libbcsmpi.so", 12))
		return MPI_FOUND_BCS;
	if (!strncmp(soname, "libmpich.so", 11) || !strncmp(soname, "libmpi.so.12", 12))
		return MPI_FOUND_MPICH;
	if (!strncmp(soname, "libmpi.so.4", 11))
		return MPI_FOUND_OPENMPI;
	return MPI_FOUND_NONE;
}

enum mpi_found mpi_detect(const char *path, char *lib, size_t len)
{
	enum mpi_found found = MPI_FOUND_NONE;
	if (len)
		lib[0] = '\0';
	if (elf_version(EV_CURRENT) == EV_NONE)
		return found;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return found;
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	while (e && found == MPI_FOUND_NONE && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag != DT_NEEDED)
				continue;
			const char *name = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (name && (found = classify(name)) != MPI_FOUND_NONE) {
				snprintf(lib, len, "%s", name);
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

const char *mpi_found_name(enum mpi_found f)
{
	switch (f) {
	case MPI_FOUND_BCS: return "BCS-MPI";
	case MPI_FOUND_MPICH: return "MPICH";
	case MPI_FOUND_OPENMPI: return "Open MPI";
	default: return "no MPI";
	}
}

int mpi_found_kind(enum mpi_found f)
{
	switch (f) {
	case MPI_FOUND_MPICH: return MPI_KIND_PMI1;
	case MPI_FOUND_OPENMPI: return MPI_KIND_PMIX;
	case MPI_FOUND_NONE: return MPI_KIND_NONE;
	default: return MPI_KIND_BCS;
	}
}
