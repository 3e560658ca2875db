/* Slurm-style host lists: "node[00-07],login,gpu[1,3-4],r[1-2]n[01-04]". */
#ifndef STORM_HOSTLIST_H
#define STORM_HOSTLIST_H

#include <stddef.h>

#define HOSTNAME_MAX 64

/* Expands spec into at most max names (each < HOSTNAME_MAX). Returns the
 * number of names, or -1 with a one-line reason in err. */
int hostlist_expand(const char *spec, char (*names)[HOSTNAME_MAX], int max,
		    char *err, size_t errlen);

/* Compresses names (in the given order) into the shortest bracket form it
 * finds, e.g. node00 node01 node02 node05 -> "node[00-02,05]". Returns the
 * length written (truncated to outlen - 1 like snprintf). */
size_t hostlist_compress(const char *const *names, int n, char *out, size_t outlen);

#endif
