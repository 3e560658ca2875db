/* The network layer's small object (sn_ep.h) between two processes over
 * tcp;ofi_rxm, the provider BCS-MPI ranks write on: a 4 MiB write with immediate data lands intact in the
 * peer's pool and its arrival names the immediate data; and an endpoint
 * closed leaves nothing behind (no descriptor, no thread), which is what
 * lets a BCS-MPI rank that closed its endpoint be checkpointed; and
 * libfabric's scans of /proc/kallsyms are refused. The two
 * processes meet through pipes, never by sleeping. */
#include <CUnit/Basic.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sn.h"
#include "sn_ep.h"

#define POOL (8u << 20)
#define LEN (4u << 20)
#define OFF (1u << 20)
#define IMM 0x5eed0102ull /* 32 bits: what verbs carries */

/* not sockets: its progress threads deadlocked a process driving its
 * completion queue from the main thread (libfabric 1.17) */
static const char *prov = "tcp;ofi_rxm";
/* both ends at one address, as a node's daemon and ranks are: the
 * provider's own choice may be an interface that goes away meanwhile
 * (another test's namespace bridge) */
#define SRC "127.0.0.1"

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	int n = 0;
	if (!d)
		return -1;
	for (struct dirent *e; (e = readdir(d));)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

static uint8_t pattern(size_t i)
{
	return (uint8_t)(i * 2654435761u >> 13);
}

static int full_read(int fd, void *buf, size_t len)
{
	for (size_t got = 0; got < len;) {
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	return 0;
}

/* The receiver: publishes its blob, drives its endpoint until the write
 * arrived, checks it, closes, and reports what is left; exit status 0 when
 * every check held. */
static int receiver(int out, int in)
{
	int fds0 = count_dir("/proc/self/fd"), th0 = count_dir("/proc/self/task");
	struct sn_ep *ep;
	char why[200];
	if (sn_ep_open(prov, SRC, POOL, &ep, why, sizeof(why))) {
		fprintf(stderr, "receiver: %s\n", why);
		return 2;
	}
	uint8_t blob[SN_EP_BLOB_MAX];
	uint32_t blen = (uint32_t)sn_ep_addr(ep, blob);
	if (write(out, &blen, 4) != 4 || write(out, blob, blen) != (ssize_t)blen)
		return 3;
	struct sn_ep_event ev[8];
	int got = 0;
	uint64_t imm = 0;
	time_t give_up = time(NULL) + 40; /* the sender's 30 s, and then some */
	while (!got && time(NULL) < give_up) {
		int n = sn_ep_poll(ep, ev, 8);
		for (int i = 0; i < n; i++)
			if (ev[i].kind == SN_EP_ARRIVED) {
				got = 1;
				imm = ev[i].imm;
			}
	}
	if (!got) {
		fprintf(stderr, "receiver: no write arrived\n");
		return 8;
	}
	const uint8_t *p = (const uint8_t *)sn_ep_pool(ep) + OFF;
	int bad = imm != IMM;
	for (size_t i = 0; i < LEN && !bad; i++)
		bad = p[i] != pattern(i);
	char c;
	if (full_read(in, &c, 1)) /* the sender saw its write end */
		return 4;
	sn_ep_close(ep);
	int fds1 = count_dir("/proc/self/fd"), th1 = count_dir("/proc/self/task");
	if (fds1 != fds0 || th1 != th0)
		fprintf(stderr, "receiver: %d descriptors and %d threads before, %d and %d after "
			"closing\n", fds0, th0, fds1, th1);
	return bad ? 5 : fds1 != fds0 ? 6 : th1 != th0 ? 7 : 0;
}

/* The writer: opens its endpoint, writes LEN bytes at OFF with IMM into
 * the peer named by blob, and waits for the write's end; 0 when it ended
 * well. A peer that refuses every connection (rxm answers -EAGAIN for as
 * long as it does) fails it after 30 s instead of hanging the suite. */
static int sender(const uint8_t *blob, uint32_t blen)
{
	struct sn_ep *ep = NULL;
	char why[200];
	uint8_t *src = malloc(LEN);
	if (!src)
		return -1;
	for (size_t i = 0; i < LEN; i++)
		src[i] = pattern(i);
	if (sn_ep_open(prov, SRC, POOL, &ep, why, sizeof(why))) {
		fprintf(stderr, "sender: %s\n", why);
		free(src);
		return -1;
	}
	int ended = 0, err = 0, w;
	/* more immediate data than every provider carries is refused */
	bool wide = sn_ep_write(ep, blob, blen, src, LEN, OFF, (uint64_t)SN_EP_IMM_MAX + 1,
				&ended) != -EINVAL;
	if (wide)
		fprintf(stderr, "sender: a 33-bit immediate was not refused\n");
	time_t give_up = time(NULL) + 30;
	while ((w = sn_ep_write(ep, blob, blen, src, LEN, OFF, IMM, &ended)) == -EAGAIN &&
	       time(NULL) < give_up) {
		struct sn_ep_event ev[8];
		sn_ep_poll(ep, ev, 8);
	}
	if (w)
		fprintf(stderr, "sender: the write was not taken: %s\n", strerror(-w));
	while (w == 0 && !ended) {
		struct sn_ep_event ev[8];
		int n = sn_ep_poll(ep, ev, 8);
		for (int i = 0; i < n; i++)
			if (ev[i].kind == SN_EP_SENT && ev[i].ctx == &ended) {
				ended = 1;
				err = ev[i].err;
			}
	}
	sn_ep_close(ep);
	free(src);
	return w ? w : err ? err : wide ? -EINVAL : 0;
}

/* A node daemon's own endpoint: its rails (sn_open) set rxm up first, in
 * a process of their own, as in stormnd. */
static int daemon_sender(const uint8_t *blob, uint32_t blen)
{
	struct sn_config c;
	sn_config_defaults(&c);
	c.provider = prov;
	c.node_id = 0;
	c.node_count = 1;
	c.gmem_size = 1u << 20;
	c.bootstrap = "external";
	struct sn_ctx *ctx;
	if (sn_open(&c, &ctx)) {
		fprintf(stderr, "daemon: sn_open: %s\n", sn_open_error());
		return 9;
	}
	int rc = sender(blob, blen);
	sn_close(ctx);
	return rc ? 10 : 0;
}

static void run_write(bool from_daemon)
{
	int to_parent[2], to_child[2];
	CU_ASSERT_FATAL(pipe(to_parent) == 0 && pipe(to_child) == 0);
	pid_t pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(receiver(to_parent[1], to_child[0]));
	uint32_t blen = 0;
	uint8_t blob[SN_EP_BLOB_MAX];
	int ok = !full_read(to_parent[0], &blen, 4) && blen <= sizeof(blob) &&
		 !full_read(to_parent[0], blob, blen);
	CU_ASSERT(ok);
	int sent = -1;
	if (ok && !from_daemon) {
		sent = sender(blob, blen);
	} else if (ok) {
		pid_t d = fork();
		if (d == 0)
			_exit(daemon_sender(blob, blen));
		int dst = 0;
		waitpid(d, &dst, 0);
		sent = WIFEXITED(dst) ? WEXITSTATUS(dst) : 128;
	}
	CU_ASSERT(sent == 0);
	CU_ASSERT(write(to_child[1], "k", 1) == 1);
	int st = 0;
	waitpid(pid, &st, 0);
	CU_ASSERT(WIFEXITED(st));
	if (WIFEXITED(st) && WEXITSTATUS(st))
		fprintf(stderr, "%s: receiver's check %d failed\n", prov, WEXITSTATUS(st));
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(to_parent[0]);
	close(to_parent[1]);
	close(to_child[0]);
	close(to_child[1]);
}

static void test_write(void) { run_write(false); }
static void test_daemon_write(void) { run_write(true); }

/* After test_write opened an endpoint here: libfabric's verbs provider
 * began its scans of /proc/kallsyms and was refused each (75 ms of CPU a
 * process otherwise), while the program's own fopen of the file is
 * libc's, untouched */
static void test_kallsyms(void)
{
	CU_ASSERT(sn_kallsyms_refused >= 1);
	if (!sn_kallsyms_refused)
		fprintf(stderr, "libfabric opened /proc/kallsyms through libc's fopen, or no "
			"longer opens it (then net_abstraction/kallsyms.c can go)\n");
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256];
	CU_ASSERT(f && fgets(line, sizeof(line), f));
	if (f)
		fclose(f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	alarm(120); /* a hang fails the suite rather than stalling it */
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	CU_pSuite s = CU_add_suite("sn_ep", NULL, NULL);
	/* first: this process has not loaded libfabric yet, so the two forked
	 * processes set rxm up each its own way, as a daemon and a rank do */
	CU_add_test(s, "a node daemon's own endpoint, its rails open, writes into another process's",
		    test_daemon_write);
	CU_add_test(s, "a 4 MiB write with immediate data, tcp;ofi_rxm; nothing left", test_write);
	CU_add_test(s, "libfabric's scans of /proc/kallsyms refused, the program's own served",
		    test_kallsyms);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	unsigned failed = CU_get_number_of_failures();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
