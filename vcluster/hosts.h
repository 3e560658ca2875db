/* `storm cluster up --hosts`: the MM and each node daemon on a "host" of its
 * own that shares only the network with the others: its network namespace
 * (netns.h), and mount, UTS and IPC namespaces where DIR/hosts/NAME is seen
 * at DIR (its storm.conf, cluster key, state, log and munged), with private
 * /tmp, /run and /dev/shm, and host name NAME. Each host's munged is the
 * first process in its namespaces; its daemon joins them. Root only. */
#ifndef STORM_CLI_HOSTS_H
#define STORM_CLI_HOSTS_H

#include <stddef.h>
#include <sys/types.h>

/* The MM's host's name (and its daemon's in DIR/pids). */
#define HOSTS_MM "mm"

/* DIR/hosts/NAME: the host's own directory as this machine sees it. */
int hosts_root(const char *dir, const char *name, char *out, size_t len);
/* The longest DIR whose hosts' munge sockets fit a socket address. */
int hosts_dir_max(void);
/* At most this many directories shared by every host (--share). */
#define HOSTS_MAX_SHARES 8
/* At most this many trees of storm's own programs (hosts_tree). */
#define HOSTS_MAX_TREES 3

/* What a host sees of this machine besides its own directory. */
struct hosts_view {
	/* absolute directories seen read-write at the same paths on every
	 * host, as a site's network file system (a shared /home) is */
	const char *const *shares;
	int nshares;
	/* storm's own programs, the library and the compiler wrappers' files
	 * beside them (hosts_tree), seen read-only at the same paths, as a
	 * site installs them on every host */
	const char *const *trees;
	int ntrees;
};

/* The directory a host must be shown to run program prog (absolute, no
 * symbolic links): prog's directory, or the one above it when that is a
 * bin (a build tree or an install, with lib and include beside bin), in
 * out; "" when every host sees it anyway (it is not under /tmp, /run or
 * /dev/shm, which each host has of its own). 0, or -1 when prog lies
 * directly in one of those. */
int hosts_tree(const char *prog, char *out, size_t len);

/* Makes host NAME (netns node index node, NETNS_MM for the MM): its
 * directory with the files a site puts on each host (storm.conf, the
 * cluster key and the MUNGE key, copied), starts its munged in fresh
 * namespaces that show it view, and links DIR/log/NAME.log to its
 * daemon's log for those who look in from this machine. The munged's pid,
 * or -1 with err set. */
int hosts_start(const char *dir, const char *name, int node, const struct hosts_view *view,
		char *err, size_t errlen);
/* The pid whose namespaces host NAME's processes join (its munged), or 0. */
pid_t hosts_anchor(const char *dir, const char *name);
/* In a forked child before exec: join the mount, UTS and IPC namespaces of
 * anchor (the network namespace is netns_enter's). 0 or -errno. */
int hosts_join(pid_t anchor);
/* Stops every host's munged. Returns how many hosts had one or its files. */
int hosts_stop(const char *dir);

#endif
