/* libfabric's scan of /proc/kallsyms, refused: it costs every process that
 * opens the fabric tens of milliseconds of CPU for an answer storm never
 * uses.
 *
 * The verbs provider, which Debian builds into libfabric itself, reads the
 * whole of /proc/kallsyms twice when a process first calls fi_getinfo,
 * whatever provider it asks for and on a host without an RDMA device: it
 * looks for the kernel's peer-memory and dma-buf symbols, which only
 * registering a GPU's memory needs. The kernel formats 120,000 lines for
 * each read: 75 ms of CPU per process here, paid by every daemon, every
 * BCS-MPI rank that opens its endpoint and every process of the network
 * tests (an 8-process scenario took 1.0 s of CPU with the scans and 0.4 s
 * without). FI_PROVIDER does not stop it: the provider's initialisation
 * runs before the filter applies.
 *
 * Defined in a program (or in libbcsmpi, which a BCS-MPI program links
 * ahead of libc), this fopen takes the place of libc's for every library
 * the process loads; it refuses /proc/kallsyms to a caller inside
 * libfabric only, as a kernel that hides the file would (the provider then
 * assumes neither kind of GPU registration, which storm never asks for),
 * and hands every other call to libc's fopen untouched. */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sn_ep.h"

unsigned sn_kallsyms_refused;

static bool from_libfabric(const void *caller)
{
	Dl_info info;
	return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "/libfabric.so");
}

FILE *fopen(const char *path, const char *mode)
{
	static FILE *(*libc_fopen)(const char *, const char *);
	if (path && !strcmp(path, "/proc/kallsyms") && from_libfabric(__builtin_return_address(0))) {
		__atomic_add_fetch(&sn_kallsyms_refused, 1, __ATOMIC_RELAXED);
		errno = ENOENT;
		return NULL;
	}
	FILE *(*f)(const char *, const char *) = __atomic_load_n(&libc_fopen, __ATOMIC_RELAXED);
	if (!f) {
		*(void **)&f = dlsym(RTLD_NEXT, "fopen");
		__atomic_store_n(&libc_fopen, f, __ATOMIC_RELAXED);
	}
	return f(path, mode);
}
