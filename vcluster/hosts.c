/* Hosts that share only the network, for storm cluster up --hosts (hosts.h). */
#include "hosts.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "munged.h"
#include "netns.h"

/* "/hosts/" + a node name (node000 past 100 nodes) + "/munge/munge.socket" */
#define HOST_SUFFIX_MAX (7 + 7 + 19)

int hosts_root(const char *dir, const char *name, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/hosts/%s", dir, name);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int hosts_dir_max(void)
{
	return 107 - HOST_SUFFIX_MAX;
}

/* Copies from to to with mode: a host's own copy, as a site installs it. */
static int copy_file(const char *from, const char *to, mode_t mode)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (out < 0) {
		int e = errno;
		close(in);
		return -e;
	}
	char buf[8192];
	ssize_t n;
	int e = 0;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			e = errno ? errno : EIO;
			break;
		}
	if (n < 0)
		e = errno;
	close(in);
	if (close(out) != 0 && !e)
		e = errno;
	return -e;
}

/* mkdir -p, each new level with mode. */
static int mkdir_p(const char *path, mode_t mode)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s)
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, mode) != 0 && errno != EEXIST)
			return -errno;
		if (!c)
			return 0;
		*s = c;
	}
}

/* The host's private directories: what it sees at /tmp, /run and /dev/shm. */
static const struct private_dir {
	const char *name, *at;
	mode_t mode;
} private_dirs[] = {
	{ "tmp", "/tmp", 01777 },
	{ "run", "/run", 0755 },
	{ "shm", "/dev/shm", 01777 },
};
#define NPRIVATE (sizeof(private_dirs) / sizeof(private_dirs[0]))

/* 1 if path lies under a directory each host has of its own, 2 if it is
 * one, else 0. */
static int private_at(const char *path)
{
	for (size_t i = 0; i < NPRIVATE; i++) {
		size_t n = strlen(private_dirs[i].at);
		if (!strncmp(path, private_dirs[i].at, n) && (!path[n] || path[n] == '/'))
			return path[n] ? 1 : 2;
	}
	return 0;
}

int hosts_tree(const char *prog, char *out, size_t len)
{
	char d[PATH_MAX];
	out[0] = '\0';
	if (snprintf(d, sizeof(d), "%s", prog) >= (int)sizeof(d) || d[0] != '/')
		return -1;
	*strrchr(d, '/') = '\0';
	int where = private_at(d);
	if (where != 1)
		return where ? -1 : 0;
	/* never the private directory itself: that would show the host
	 * this machine's /tmp */
	char *up = strrchr(d, '/');
	if (!strcmp(up, "/bin")) {
		*up = '\0';
		if (private_at(d) == 2)
			*up = '/';
	}
	return snprintf(out, len, "%s", d) >= (int)len ? -1 : 0;
}

struct host {
	const char *dir, *root, *name;
	int node;
	const struct hosts_view *view;
};

/* What enter_new mounts, in order: the private directories first (over
 * /tmp, which may hold all the rest), then storm's trees read-only, the
 * host's root over DIR (which may lie in a tree), the shared directories. */
#define MOUNTS_MAX (NPRIVATE + HOSTS_MAX_TREES + 1 + HOSTS_MAX_SHARES)
struct mount_at {
	char from[PATH_MAX];
	const char *at;
	int ro, fd;
};

static size_t host_mounts(const struct host *h, struct mount_at *m)
{
	size_t n = 0;
	for (size_t i = 0; i < NPRIVATE; i++, n++) {
		snprintf(m[n].from, sizeof(m[n].from), "%s/%s", h->root, private_dirs[i].name);
		m[n].at = private_dirs[i].at;
	}
	for (int i = 0; i < h->view->ntrees && i < HOSTS_MAX_TREES; i++, n++) {
		snprintf(m[n].from, sizeof(m[n].from), "%s", h->view->trees[i]);
		m[n].at = h->view->trees[i];
		m[n].ro = 1;
	}
	snprintf(m[n].from, sizeof(m[n].from), "%s", h->root);
	m[n++].at = h->dir;
	for (int i = 0; i < h->view->nshares && i < HOSTS_MAX_SHARES; i++, n++) {
		snprintf(m[n].from, sizeof(m[n].from), "%s", h->view->shares[i]);
		m[n].at = h->view->shares[i];
	}
	return n;
}

/* The flags of the mount under fd that a read-only remount of its bind
 * must repeat: where they are locked (a container), leaving one out fails. */
static unsigned long kept_flags(int fd)
{
	static const struct {
		unsigned long st, ms;
	} map[] = {
		{ ST_NOSUID, MS_NOSUID },   { ST_NODEV, MS_NODEV },
		{ ST_NOEXEC, MS_NOEXEC },   { ST_NOATIME, MS_NOATIME },
		{ ST_NODIRATIME, MS_NODIRATIME }, { ST_RELATIME, MS_RELATIME },
	};
	struct statvfs sv;
	unsigned long f = 0;
	if (fstatvfs(fd, &sv) != 0)
		return 0;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (sv.f_flag & map[i].st)
			f |= map[i].ms;
	return f;
}

/* munged's child before exec: the host's network namespace, then mount,
 * UTS and IPC namespaces of its own: its private directories over /tmp,
 * /run and /dev/shm, storm's programs where they are here, its root over
 * DIR, the shared directories, its name. Every later process of the host
 * joins these (hosts_join). */
static int enter_new(void *arg)
{
	const struct host *h = arg;
	int e = netns_enter(h->dir, h->node, 0);
	if (e < 0)
		return e;
	if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC) < 0)
		return -errno;
	/* what this machine unmounts (a deleted namespace's file under
	 * /run/netns) goes away here too; nothing mounted here goes back */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -errno;
	static struct mount_at m[MOUNTS_MAX]; /* some 45 KiB: not on the stack */
	memset(m, 0, sizeof(m));
	size_t n = host_mounts(h, m);
	/* opened first: mounting over /tmp may hide all the others */
	for (size_t i = 0; i < n; i++)
		if ((m[i].fd = open(m[i].from, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			return -errno;
	char p[64];
	for (size_t i = 0; i < n; i++) {
		if (i >= NPRIVATE && (e = mkdir_p(m[i].at, 0755)) < 0)
			return e;
		snprintf(p, sizeof(p), "/proc/self/fd/%d", m[i].fd);
		if (mount(p, m[i].at, NULL, MS_BIND, NULL) < 0)
			return -errno;
		/* a bind mount takes read-only only from a remount */
		if (m[i].ro && mount(NULL, m[i].at, NULL,
				     MS_REMOUNT | MS_BIND | MS_RDONLY | kept_flags(m[i].fd), NULL) < 0)
			return -errno;
		close(m[i].fd);
	}
	if (sethostname(h->name, strlen(h->name)) < 0)
		return -errno;
	return 0;
}

int hosts_start(const char *dir, const char *name, int node, const struct hosts_view *view,
		char *err, size_t errlen)
{
	char root[PATH_MAX], p[PATH_MAX + 64], q[PATH_MAX + 64];
	if (hosts_root(dir, name, root, sizeof(root)) != 0) {
		snprintf(err, errlen, "%s/hosts/%s: too long a path", dir, name);
		return -1;
	}
	static const char *dirs[] = { "log", "state", "munge" };
	int e = mkdir_p(root, 0755);
	for (size_t i = 0; !e && i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		e = mkdir(p, 0755) != 0 && errno != EEXIST ? -errno : 0;
	}
	for (size_t i = 0; !e && i < NPRIVATE; i++) {
		snprintf(p, sizeof(p), "%s/%s", root, private_dirs[i].name);
		if (mkdir(p, private_dirs[i].mode) != 0 && errno != EEXIST)
			e = -errno;
		else
			e = chmod(p, private_dirs[i].mode) != 0 ? -errno : 0;
	}
	if (e) {
		snprintf(err, errlen, "cannot create %s: %s", p, strerror(-e));
		return -1;
	}
	/* what a site installs on every host: one storm.conf, one cluster key,
	 * one MUNGE key */
	static const struct {
		const char *file;
		mode_t mode;
	} copies[] = { { "storm.conf", 0644 }, { "cluster.key", 0600 }, { "munge/munge.key", 0600 } };
	for (size_t i = 0; i < sizeof(copies) / sizeof(copies[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, copies[i].file);
		snprintf(q, sizeof(q), "%s/%s", root, copies[i].file);
		if ((e = copy_file(p, q, copies[i].mode)) < 0) {
			snprintf(err, errlen, "cannot copy %s to %s: %s", p, q, strerror(-e));
			return -1;
		}
	}
	/* the harness's window on the host's log, where --netns keeps it */
	snprintf(p, sizeof(p), "%s/log/%s.log", dir, name);
	snprintf(q, sizeof(q), "../hosts/%s/log/%s.log", name, name);
	unlink(p);
	if (symlink(q, p) != 0) {
		snprintf(err, errlen, "cannot link %s: %s", p, strerror(errno));
		return -1;
	}
	struct host h = { .dir = dir, .root = root, .name = name, .node = node, .view = view };
	struct munged_at at = { .dir = dir, .seen = root, .have_key = 1, .enter = enter_new,
				.arg = &h };
	return munged_start(&at, err, errlen);
}

pid_t hosts_anchor(const char *dir, const char *name)
{
	char root[PATH_MAX];
	if (hosts_root(dir, name, root, sizeof(root)) != 0)
		return 0;
	struct munged_at at = { .dir = dir, .seen = root };
	return munged_pid(&at);
}

int hosts_join(pid_t anchor)
{
	int fd = pidfd_open(anchor, 0);
	if (fd < 0)
		return -errno;
	int rc = setns(fd, CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC);
	int e = errno;
	close(fd);
	return rc < 0 ? -e : 0;
}

int hosts_stop(const char *dir)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/hosts", dir);
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char root[PATH_MAX];
		if (e->d_name[0] == '.' || hosts_root(dir, e->d_name, root, sizeof(root)) != 0)
			continue;
		struct munged_at at = { .dir = dir, .seen = root };
		n += munged_stop(&at);
	}
	closedir(d);
	return n;
}
