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

/* Makes host NAME (netns node index node, NETNS_MM for the MM): its
 * directory with the files a site puts on each host (storm.conf, the
 * cluster key and the MUNGE key, copied), starts its munged in fresh
 * namespaces and links DIR/log/NAME.log to its daemon's log for those who
 * look in from this machine. shares: absolute directories of this machine
 * seen at the same paths on the host, as a site's network file system (a
 * shared /home) is. The munged's pid, or -1 with err set. */
int hosts_start(const char *dir, const char *name, int node, const char *const *shares,
		int nshares, char *err, size_t errlen);
/* The pid whose namespaces host NAME's processes join (its munged), or 0. */
pid_t hosts_anchor(const char *dir, const char *name);
/* In a forked child before exec: join the mount, UTS and IPC namespaces of
 * anchor (the network namespace is netns_enter's). 0 or -errno. */
int hosts_join(pid_t anchor);
/* Stops every host's munged. Returns how many hosts there were. */
int hosts_stop(const char *dir);

#endif
