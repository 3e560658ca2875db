/* storm cluster up's directory and configuration: DIR made or cleared,
 * DIR/storm.conf written from the options, the cluster key and munged. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "cluster.h"
#include "gm_auth.h"
#include "munged.h"
#include "netns.h"
#include "fmt.h"

int vc_prepare_dir(const char *dir)
{
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "storm: error: cannot create %s: %s\n", dir, strerror(errno));
		return -1;
	}
	struct stat st;
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "storm: error: %s is not a directory\n", dir);
		return -1;
	}
	/* a predictable name in /tmp: someone else may have made it first */
	if (st.st_uid != getuid() || (st.st_mode & 022)) {
		fprintf(stderr,
			"storm: error: %s belongs to uid %u or others may write it; use a "
			"directory of your own (--dir)\n",
			dir, (unsigned)st.st_uid);
		return -1;
	}
	static const char *subdirs[] = { "log", "state", "fabric" };
	for (size_t i = 0; i < 3; i++) {
		char p[PATH_MAX];
		if (vc_path_join(p, sizeof(p), dir, subdirs[i]) != 0 ||
		    (mkdir(p, 0755) != 0 && errno != EEXIST)) {
			fprintf(stderr, "storm: error: cannot create %s/%s: %s\n", dir, subdirs[i],
				strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* The cluster's directory, absolute: --dir, else def, else /tmp/storm-$UID;
 * -1 (printed). */
int vc_resolve_dir(const struct up_opts *o, const char *def, char *dir)
{
	char cwd[PATH_MAX], abs[PATH_MAX];
	if (o->dir) {
		if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, o->dir, abs, sizeof(abs))) {
			fprintf(stderr, "storm: error: cannot make %s absolute\n", o->dir);
			return -1;
		}
	} else if (def) {
		snprintf(abs, sizeof(abs), "%s", def);
	} else {
		snprintf(abs, sizeof(abs), "/tmp/storm-%u", (unsigned)getuid());
	}
	if (strlen(abs) >= DIR_MAX) {
		fprintf(stderr,
			"storm: error: %s: too long a path for the control socket in it (at most "
			"%d characters)\n",
			abs, DIR_MAX - 1);
		return -1;
	}
	if (o->hosts && (int)strlen(abs) > hosts_dir_max()) {
		fprintf(stderr,
			"storm: error: %s: too long a path for the hosts' munge sockets in it (at "
			"most %d characters with --hosts)\n",
			abs, hosts_dir_max());
		return -1;
	}
	memcpy(dir, abs, strlen(abs) + 1);
	return 0;
}

/* A cluster that answers in dir is left alone (-1, printed); a dead one is
 * cleaned up. */
int vc_clear_dir(const struct up_opts *o, const char *dir, const char *conf_path,
		 const char *sock, const char *pids)
{
	int err;
	struct storm_conf old;
	char cerr[512];
	const char *old_sock = sock;
	bool have_old = conf_load(conf_path, &old, cerr, sizeof(cerr)) == 0;
	if (have_old) {
		old_sock = vc_mm_where(&old);
		ctl_set_munge_socket(old.munge_socket);
	}
	/* Over TCP (--hosts, Slurm) with DIR/pids gone, no cluster of this
	 * directory is up: every up records its daemons there before they
	 * start, and down removes it last. Its old address is not asked: once
	 * the cluster's bridge is gone it routes wherever this machine's
	 * default route goes, where anything may answer, or nothing. */
	bool tcp = old_sock[0] != '/';
	Storm__Ctl__Reply *rep = NULL;
	if (tcp && access(pids, F_OK) != 0 && errno == ENOENT)
		err = -ENOENT;
	else
		rep = vc_ask_status(old_sock, 0, &err);
	int rc = 0;
	/* over TCP, a dead cluster's address may have no route left */
	int dead = err == -ECONNREFUSED || err == -ENOENT ||
		   (tcp && (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -ETIMEDOUT));
	if (rep || !dead) {
		if (rep && rep->body_case == STORM__CTL__REPLY__BODY_STATUS)
			fprintf(stderr,
				"storm: error: a cluster is already up in %s (cluster '%s', %u of %u "
				"nodes up); take it down first with 'storm cluster down%s%s'\n",
				dir, rep->status->cluster, rep->status->nodes_up,
				rep->status->nodes_total, o->dir ? " --dir " : "", o->dir ? dir : "");
		else
			fprintf(stderr,
				"storm: error: something answers on %s (%s); is a cluster up in %s? "
				"('storm cluster down%s%s' takes it down)\n",
				old_sock, rep ? "not a status" : strerror(-err), dir,
				o->dir ? " --dir " : "", o->dir ? dir : "");
		ctl_reply_free(rep);
		rc = -1;
	}
	if (have_old)
		conf_free(&old);
	if (rc == 0 && (vc_stop_daemons(pids, conf_path, 0.0, 1) > 0 || vc_remove_runtime(dir) > 0)) {
		vc_remove_runtime(dir);
		fprintf(stderr, "storm: cleaned up a stale cluster in %s\n", dir);
	}
	if (rc == 0 && !o->hosts)
		vc_forget_hosts(dir);
	return rc;
}

/* Binds port (0: the kernel's pick) on every address and lets it go: the
 * port, or -errno. */
static int try_port(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	socklen_t len = sizeof(sa);
	if (fd < 0)
		return -errno;
	int rc = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
			 getsockname(fd, (struct sockaddr *)&sa, &len) == 0
		 ? ntohs(sa.sin_port) : -errno;
	close(fd);
	return rc;
}

/* The first port of the kernel's ephemeral range, or 0 if unreadable. */
static int ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
	int lo = 0, hi = 0;
	if (f) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 0;
		fclose(f);
	}
	return lo;
}

/* A TCP port no one listens on now, for a daemon that binds it later: below
 * the ephemeral range, where only explicit binds land. The kernel's pick
 * (bind to 0) is in that range, and by the time the daemon binds, an
 * outgoing connection of any process may have taken it as its local port
 * (seen: a machine manager started inside a Slurm allocation, "Address
 * already in use"). bound_here false: a port another network namespace
 * binds, which no connection here can take: the kernel's pick. The port,
 * or -errno. */
int vc_free_tcp_port(bool bound_here)
{
	if (!bound_here)
		return try_port(0);
	int lo = ephemeral_low();
	unsigned seed;
	if (lo > 2048 && getrandom(&seed, sizeof(seed), 0) == sizeof(seed)) {
		for (int i = 0; i < 64; i++) {
			int p = try_port(1024 + (int)(seed % (unsigned)(lo - 1024)));
			if (p > 0)
				return p;
			seed = seed * 1103515245u + 12345u;
		}
	}
	return try_port(0);
}

/* storm.conf for the options, a fresh cluster key and the cluster's own
 * munged (docs/design/security.md): the daemons and this CLI read their
 * paths from storm.conf. 0 with *conf filled, or -1 (printed). */
/* The defaults with the options' values over them; paths, addresses and
 * nodes are the caller's. 0, or -1 (printed). */
int vc_conf_from_opts(const struct up_opts *o, const char *conf_path, struct storm_conf *conf)
{
	char cerr[512];
	if (conf_load_string("[nodes]\nnames = node0\n", conf_path, conf, cerr, sizeof(cerr))) {
		fprintf(stderr, "storm: error: %s\n", cerr);
		return -1;
	}
	if (o->provider)
		snprintf(conf->provider, sizeof(conf->provider), "%s", o->provider);
	if (o->timeslice_us)
		conf->timeslice_us = o->timeslice_us;
	if (o->cpus)
		conf->cpus = o->cpus;
	if (o->policy >= 0)
		conf->policy = o->policy;
	conf->metrics_port = o->metrics_port;
	if (o->mpl)
		conf->mpl = o->mpl;
	else if (conf->policy == POLICY_FCFS)
		conf->mpl = 1;
	if (o->quantum)
		conf->quantum = o->quantum;
	if (o->switch_mode >= 0)
		conf->switch_mode = o->switch_mode;
	if (o->copies >= 0)
		conf->checkpoint_copies = (unsigned)o->copies;
	if (o->data_tags >= 0)
		conf->bcs_data_tags = (unsigned)o->data_tags;
	if (o->rank_writes >= 0)
		conf->bcs_rank_writes = (unsigned)o->rank_writes;
	if (o->job_end >= 0)
		conf->job_end_combined = (unsigned)o->job_end;
	if (o->ahead >= 0)
		conf->ahead = (unsigned)o->ahead;
	if (o->switch_wait_pct >= 0)
		conf->switch_wait_pct = (unsigned)o->switch_wait_pct;
	/* the deprecated slice count means what it meant at this timeslice */
	if (o->down_after)
		conf->down_after_ms = conf_slices_to_ms(o->down_after, conf->timeslice_us);
	if (o->down_after_ms)
		conf->down_after_ms = o->down_after_ms;
	unsigned down_slices = conf_down_slices(conf);
	if (conf->report_every * 2 > down_slices) /* the config requires it */
		conf->report_every = down_slices / 2 ? down_slices / 2 : 1;
	return 0;
}

/* --hosts: the trees of storm's programs each host must be shown at their
 * paths (hosts_tree): this one's (storm on a host) and the daemons'. A
 * build or an install under /tmp is hidden by every host's own /tmp. The
 * count, or -1 with err set. */
static int storm_trees(char trees[][PATH_MAX], char *err, size_t errlen)
{
	static const char *const names[] = { NULL, "stormmm", "stormnd" };
	char bin[PATH_MAX + 16], real[PATH_MAX], t[PATH_MAX];
	int n = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ssize_t k = 0;
		if (!names[i] && (k = readlink("/proc/self/exe", bin, sizeof(bin) - 1)) > 0)
			bin[k] = '\0';
		if (k < 0 || (names[i] && vc_find_daemon(names[i], bin, sizeof(bin))) ||
		    !realpath(bin, real)) {
			snprintf(err, errlen, "cannot find %s: %s", names[i] ? names[i] : "storm-cluster",
				 strerror(errno));
			return -1;
		}
		if (hosts_tree(real, t, sizeof(t)) < 0) {
			snprintf(err, errlen, "%s lies directly in a directory each host has of its "
					      "own; put them in a directory of their own",
				 real);
			return -1;
		}
		int seen = !t[0];
		for (int j = 0; j < n && !seen; j++)
			seen = !strcmp(trees[j], t);
		if (!seen)
			memcpy(trees[n++], t, strlen(t) + 1);
	}
	return n;
}

int vc_configure(const struct up_opts *o, const char *dir, const char *conf_path,
		 const char *sock, struct storm_conf *conf)
{
	if (vc_conf_from_opts(o, conf_path, conf) < 0)
		return -1;
	snprintf(conf->state_dir, sizeof(conf->state_dir), "%s/state", dir);
	snprintf(conf->socket, sizeof(conf->socket), "%s", sock);
	/* the daemons register their fabric addresses with the MM, as on
	 * hosts without a shared file system */
	int port = vc_free_tcp_port(true);
	if (port < 0) {
		fprintf(stderr, "storm: error: no free TCP port for the MM's registrations: %s\n",
			strerror(-port));
		conf_free(conf);
		return -1;
	}
	char mm_addr[32] = "127.0.0.1";
	if (o->hosts || o->netns)
		netns_addr(dir, o->hosts ? NETNS_MM : NETNS_BRIDGE, mm_addr, sizeof(mm_addr));
	if (o->hosts) /* where a scraper on this machine reaches it */
		snprintf(conf->metrics_address, sizeof(conf->metrics_address), "%s", mm_addr);
	snprintf(conf->bootstrap, sizeof(conf->bootstrap), "mm");
	snprintf(conf->mm_address, sizeof(conf->mm_address), "%s:%d", mm_addr, port);
	/* --hosts: storm here has no other way to the MM; the MM's host has
	 * every port free, so one that is free here does. Not a low one: once
	 * that host is gone, a gateway's proxy may answer a low port of its
	 * address (seen here), and the next up would take it for a live MM */
	int ctl_port = o->ctl_port ? (int)o->ctl_port : o->hosts ? vc_free_tcp_port(false) : 0;
	if (ctl_port < 0) {
		fprintf(stderr, "storm: error: no free TCP port for the MM's control connections: %s\n",
			strerror(-ctl_port));
		conf_free(conf);
		return -1;
	}
	if (ctl_port)
		snprintf(conf->ctl_address, sizeof(conf->ctl_address), "%s:%d", mm_addr, ctl_port);
	snprintf(conf->key_file, sizeof(conf->key_file), "%s/cluster.key", dir);
	munged_socket_path(dir, conf->munge_socket, sizeof(conf->munge_socket));
	conf->nnodes = (int)o->nodes;
	virtual_node_names(conf->nnodes, conf->nodes);
	char emsg[2 * PATH_MAX + 128];
	struct munged_at here = { .dir = dir };
	int rc = conf_write(conf, conf_path);
	if (rc == 0 && (rc = gm_key_create(conf->key_file)) != 0)
		snprintf(emsg, sizeof(emsg), "cannot create the cluster key %s: %s", conf->key_file,
			 strerror(-rc));
	else if (rc != 0)
		snprintf(emsg, sizeof(emsg), "cannot write %s: %s", conf_path, strerror(-rc));
	else if (munged_start(&here, emsg, sizeof(emsg)) < 0)
		rc = -1;
	/* --hosts: each host with its copies of the files and its own munged */
	char trees[HOSTS_MAX_TREES][PATH_MAX];
	const char *tree_list[HOSTS_MAX_TREES];
	struct hosts_view view = { .shares = (const char *const *)o->shares,
				   .nshares = o->nshares, .trees = tree_list };
	if (rc == 0 && o->hosts && (view.ntrees = storm_trees(trees, emsg, sizeof(emsg))) < 0)
		rc = -1;
	for (int i = 0; i < view.ntrees; i++)
		tree_list[i] = trees[i];
	for (int i = o->hosts ? -1 : conf->nnodes; rc == 0 && i < conf->nnodes; i++)
		if (hosts_start(dir, i < 0 ? HOSTS_MM : conf->nodes[i], i < 0 ? NETNS_MM : i, &view,
				emsg, sizeof(emsg)) < 0)
			rc = -1;
	if (rc != 0) {
		fprintf(stderr, "storm: error: %s\n", emsg);
		vc_remove_runtime(dir);
		conf_free(conf);
		return -1;
	}
	ctl_set_munge_socket(conf->munge_socket);
	return 0;
}
