/* Node daemons in their own network namespaces for storm cluster up --netns (netns.h). */
#include "netns.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sched.h>
#include <dirent.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Interface names are at most 15 characters: a short prefix derived from
 * the cluster directory keeps two clusters' names apart. */
static void prefix(const char *dir, char out[8])
{
	uint32_t h = 2166136261u;
	for (const char *p = dir; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, 8, "s%05x", h & 0xfffff);
}

void netns_name(const char *dir, int node, char *out, size_t len)
{
	char p[8];
	prefix(dir, p);
	if (node == NETNS_MM)
		snprintf(out, len, "%s-mm", p);
	else
		snprintf(out, len, "%s-n%d", p, node);
}

/* The second byte of the networks a cluster may take, 10.X.0.0/16: the
 * first of these in which this machine has no address yet (another
 * cluster's bridge, or a real network). 213 first, as before there was a
 * choice. */
#define NET_FIRST 213
#define NET_LAST 254
#define NET_WRAP 16

static int net_in_use(int x)
{
	struct ifaddrs *ifs, *i;
	if (getifaddrs(&ifs) < 0)
		return 0;
	int used = 0;
	for (i = ifs; i && !used; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		uint32_t a = ntohl(((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		used = (a >> 24) == 10 && (int)((a >> 16) & 0xff) == x;
	}
	freeifaddrs(ifs);
	return used;
}

static int pick_net(void)
{
	for (int x = NET_FIRST; x <= NET_LAST; x++)
		if (!net_in_use(x))
			return x;
	for (int x = NET_WRAP; x < NET_FIRST; x++)
		if (!net_in_use(x))
			return x;
	return -1;
}

/* DIR/netns: "PREFIX NODES MM_NS NET" (a record without NET is 213's) */
static int read_record(const char *dir, char p[16], int *n, int *mm_ns, int *net)
{
	char rec[4200];
	snprintf(rec, sizeof(rec), "%s/netns", dir);
	FILE *r = fopen(rec, "r");
	if (!r)
		return -1;
	*n = 0;
	*mm_ns = 0;
	*net = NET_FIRST;
	int got = fscanf(r, "%7s %d %d %d", p, n, mm_ns, net);
	fclose(r);
	if (got == EOF)
		got = 0;
	if (got < 3)
		*mm_ns = 0;
	if (got < 4 || *net <= 0 || *net > 254)
		*net = NET_FIRST;
	return got;
}

void netns_addr(const char *dir, int node, char *out, size_t len)
{
	char p[16];
	int n, mm_ns, net;
	read_record(dir, p, &n, &mm_ns, &net);
	if (node == NETNS_BRIDGE)
		snprintf(out, len, "10.%d.255.254", net);
	else if (node == NETNS_MM)
		snprintf(out, len, "10.%d.255.253", net);
	else
		snprintf(out, len, "10.%d.%d.%d", net, node / 250, node % 250 + 1);
}
static int run_ip_batch(const char *netns, const char *batch_path)
{
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		if (netns)
			execlp("ip", "ip", "-n", netns, "-batch", batch_path, (char *)NULL);
		else
			execlp("ip", "ip", "-batch", batch_path, (char *)NULL);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* Runs `ip -force -batch` (going on past what is already gone) on the
 * lines that delete prefix p's links: the host ends of its veth pairs, at
 * once (deleting a namespace deletes its end, and so the pair, only when
 * the kernel's asynchronous cleanup of that namespace runs, which a new
 * cluster in the same directory can beat: "File exists"), and the bridge;
 * and its namespaces when with_ns. */
static void links_del(const char *dir, const char *p, int n, int mm_ns, bool with_ns)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/netns.batch", dir);
	FILE *b = fopen(path, "w");
	if (!b)
		return;
	if (mm_ns)
		fprintf(b, "link del %shm\n", p);
	for (int i = 0; i < n; i++)
		fprintf(b, "link del %sh%d\n", p, i);
	if (with_ns) {
		if (mm_ns)
			fprintf(b, "netns del %s-mm\n", p);
		for (int i = 0; i < n; i++)
			fprintf(b, "netns del %s-n%d\n", p, i);
	}
	fprintf(b, "link del %sbr\n", p);
	fclose(b);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		execlp("ip", "ip", "-force", "-batch", path, (char *)NULL);
		_exit(127);
	}
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	unlink(path);
}

int netns_up(const char *dir, int nnodes, int mm_ns, char *err, size_t errlen)
{
	if (geteuid() != 0) {
		snprintf(err, errlen, "%s needs root (network namespaces and a bridge)",
			 mm_ns ? "--hosts" : "--netns");
		return -1;
	}
	if (nnodes > 250 * 255) {
		snprintf(err, errlen, "--netns supports at most %d nodes", 250 * 255);
		return -1;
	}
	char p[8], path[4200], rec[4200];
	prefix(dir, p);
	/* what an earlier cluster in this directory left (killed, or its
	 * namespaces not yet cleaned up by the kernel), before its bridge's
	 * address is taken for another cluster's */
	links_del(dir, p, nnodes, mm_ns, false);
	int net = pick_net();
	if (net < 0) {
		snprintf(err, errlen, "every network 10.X.0.0/16 has an address of this machine's "
				      "in it: none is left for the cluster's bridge");
		return -1;
	}
	snprintf(rec, sizeof(rec), "%s/netns", dir);
	FILE *r = fopen(rec, "w");
	if (!r) {
		snprintf(err, errlen, "cannot write %s: %s", rec, strerror(errno));
		return -1;
	}
	fprintf(r, "%s %d %d %d\n", p, nnodes, mm_ns ? 1 : 0, net);
	fclose(r);
	snprintf(path, sizeof(path), "%s/netns.batch", dir);
	FILE *b = fopen(path, "w");
	if (!b) {
		snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(b, "link add %sbr type bridge\naddr add 10.%d.255.254/16 dev %sbr\n"
		   "link set %sbr up\n", p, net, p, p);
	for (int i = 0; i < nnodes; i++)
		fprintf(b, "netns add %s-n%d\nlink add %sh%d type veth peer name eth0 netns %s-n%d\n"
			   "link set %sh%d master %sbr up\n", p, i, p, i, p, i, p, i, p);
	if (mm_ns)
		fprintf(b, "netns add %s-mm\nlink add %shm type veth peer name eth0 netns %s-mm\n"
			   "link set %shm master %sbr up\n", p, p, p, p, p);
	fclose(b);
	if (run_ip_batch(NULL, path) != 0) {
		snprintf(err, errlen, "setting up the bridge and namespaces failed ('ip -batch %s')",
			 path);
		netns_down(dir);
		return -1;
	}
	for (int i = mm_ns ? -1 : 0; i < nnodes; i++) {
		char ns[32];
		netns_name(dir, i, ns, sizeof(ns));
		b = fopen(path, "w");
		if (!b)
			break;
		char addr[32];
		netns_addr(dir, i, addr, sizeof(addr));
		fprintf(b, "addr add %s/16 dev eth0\n", addr);
		fprintf(b, "link set eth0 up\nlink set lo up\n");
		fclose(b);
		if (run_ip_batch(ns, path) != 0) {
			snprintf(err, errlen, "configuring namespace %s failed", ns);
			netns_down(dir);
			return -1;
		}
	}
	unlink(path);
	return 0;
}

/* SIGKILLs every process in namespace ns (a rank or daemon that outlived
 * `cluster down`'s requests): anything in it is the cluster's, and a
 * process left there would keep its mounts and namespaces alive. Waits
 * until they are gone (up to 5 s). */
static void kill_in(const char *ns)
{
	char path[64];
	struct stat want;
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	if (stat(path, &want) != 0)
		return;
	for (int round = 0; round < 500; round++) {
		int seen = 0;
		DIR *proc = opendir("/proc");
		if (!proc)
			return;
		struct dirent *e;
		while ((e = readdir(proc))) {
			char *end;
			long pid = strtol(e->d_name, &end, 10);
			if (*end || pid <= 1 || pid == getpid())
				continue;
			char nsp[64];
			struct stat st;
			snprintf(nsp, sizeof(nsp), "/proc/%ld/ns/net", pid);
			if (stat(nsp, &st) != 0 || st.st_ino != want.st_ino || st.st_dev != want.st_dev)
				continue;
			seen++;
			kill((pid_t)pid, SIGKILL);
			waitpid((pid_t)pid, NULL, WNOHANG); /* reap if it is our child */
		}
		closedir(proc);
		if (!seen)
			return;
		usleep(10000);
	}
}

int netns_down(const char *dir)
{
	char rec[4200], p[16];
	int n = 0, mm_ns = 0, net;
	snprintf(rec, sizeof(rec), "%s/netns", dir);
	int got = read_record(dir, p, &n, &mm_ns, &net);
	if (got < 0)
		return 0;
	if (got < 2) {
		unlink(rec);
		return 0;
	}
	for (int i = mm_ns ? -1 : 0; i < n; i++) {
		char ns[32];
		netns_name(dir, i, ns, sizeof(ns));
		kill_in(ns);
	}
	links_del(dir, p, n, mm_ns, true);
	unlink(rec);
	return 1;
}

int netns_of_hosts(const char *dir)
{
	char p[16];
	int n, mm_ns = 0, net;
	if (read_record(dir, p, &n, &mm_ns, &net) < 0)
		return 0;
	return mm_ns;
}

int netns_enter(const char *dir, int node, int own_uts)
{
	char p[8];
	prefix(dir, p);
	char ifname[16];
	if (node >= 0 || netns_of_hosts(dir)) {
		char path[64], ns[32];
		netns_name(dir, node, ns, sizeof(ns));
		snprintf(path, sizeof(path), "/run/netns/%s", ns);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		int rc = setns(fd, CLONE_NEWNET);
		int e = errno;
		close(fd);
		if (rc < 0)
			return -e;
		/* its own host name and System V IPC too, as a separate machine
		 * has: MPI libraries tell the ranks that share a host by them
		 * (UCX's shared-memory transports reach only within one IPC
		 * namespace), and would otherwise take the nodes for one host */
		char host[32];
		snprintf(host, sizeof(host), "%s-node%02d", p, node);
		if (own_uts && (unshare(CLONE_NEWUTS) < 0 || sethostname(host, strlen(host)) < 0))
			return -errno;
		snprintf(ifname, sizeof(ifname), "eth0");
	} else {
		snprintf(ifname, sizeof(ifname), "%sbr", p);
	}
	/* each provider's own knob for the interface to bind */
	setenv("FI_TCP_IFACE", ifname, 1);
	setenv("FI_SOCKETS_IFACE", ifname, 1);
	setenv("FI_UDP_IFACE", ifname, 1);
	return 0;
}
