/* The virtual cluster's own munged (MUNGE credentials for control requests,
 * common/ctl_auth.h): its key, socket, pid and seed live in DIR/munge, its
 * log in DIR/log/munged.log. With --hosts each host runs one more, inside
 * its namespaces, where its private directory is seen at DIR. */
#ifndef STORM_CLI_MUNGED_H
#define STORM_CLI_MUNGED_H

#include <stddef.h>

/* Where a munged runs. */
struct munged_at {
	const char *dir;  /* the cluster's directory as munged sees it */
	const char *seen; /* the same directory from here; NULL: dir */
	/* DIR/munge/munge.key is there already (a copy of the cluster's, as a
	 * site distributes its one key); 0: make a new one */
	int have_key;
	/* in the child before exec, e.g. entering a host's namespaces;
	 * 0 or -errno */
	int (*enter)(void *arg);
	void *arg;
};

/* DIR/munge/munge.socket */
int munged_socket_path(const char *dir, char *out, size_t len);
/* Makes DIR/munge and its key (unless have_key), starts munged and waits until it issues
 * credentials. Its pid, or -1 with the reason in err (then nothing is left
 * running). */
int munged_start(const struct munged_at *at, char *err, size_t errlen);
/* The pid of the munged at `at` (from its pid file, if that process serves
 * its socket), or 0. */
int munged_pid(const struct munged_at *at);
/* Stops the munged at `at` and removes its DIR/munge. Returns 1 if
 * something was there. */
int munged_stop(const struct munged_at *at);

#endif
