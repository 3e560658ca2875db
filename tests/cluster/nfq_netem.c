/* nfq_netem: packet loss and delay for the fault tests, where the kernel has
 * no sch_netem (tc qdisc ... netem: "Specified qdisc kind is unknown"). The
 * packets iptables hands to NFQUEUE queue Q are dropped with probability
 * LOSS% and the others let go DELAY_MS after they came, in order: what
 * `tc qdisc add dev eth0 root netem loss LOSS% delay DELAY_MS` does to a
 * node's egress. Runs in the node's network namespace until SIGTERM; says
 * "nfq_netem: ready" on stdout once bound.
 * Usage: nfq_netem QUEUE LOSS_PERCENT DELAY_MS */
#include <arpa/inet.h>
#include <errno.h>
#include <libnetfilter_queue/libnetfilter_queue.h>
#include <linux/netfilter.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define HELD_MAX 65536

struct held {
	uint32_t id;
	uint64_t release_ns;
};

static struct held ring[HELD_MAX];
static size_t head, count;
static unsigned loss_pct;
static uint64_t delay_ns;
static uint64_t seen, dropped;
static volatile sig_atomic_t stop;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg, struct nfq_data *nfa,
		     void *data)
{
	(void)msg;
	(void)data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	if (!ph)
		return 0;
	uint32_t id = ntohl(ph->packet_id);
	seen++;
	uint32_t r;
	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		r = (uint32_t)rand();
	if (r % 100 < loss_pct) {
		dropped++;
		return nfq_set_verdict(qh, id, NF_DROP, 0, NULL);
	}
	if (count == HELD_MAX) /* full: no delay rather than a stall */
		return nfq_set_verdict(qh, id, NF_ACCEPT, 0, NULL);
	ring[(head + count) % HELD_MAX] = (struct held){ id, now_ns() + delay_ns };
	count++;
	return 0;
}

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: nfq_netem QUEUE LOSS_PERCENT DELAY_MS\n");
		return 2;
	}
	unsigned qnum = (unsigned)atoi(argv[1]);
	loss_pct = (unsigned)atoi(argv[2]);
	delay_ns = (uint64_t)atoi(argv[3]) * 1000000u;
	struct nfq_handle *h = nfq_open();
	if (!h) {
		fprintf(stderr, "nfq_netem: nfq_open: %s\n", strerror(errno));
		return 1;
	}
	struct nfq_q_handle *qh = nfq_create_queue(h, (uint16_t)qnum, on_packet, NULL);
	if (!qh || nfq_set_mode(qh, NFQNL_COPY_META, 0) < 0) {
		fprintf(stderr, "nfq_netem: cannot bind queue %u: %s\n", qnum, strerror(errno));
		return 1;
	}
	nfq_set_queue_maxlen(qh, HELD_MAX);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	int fd = nfq_fd(h);
	printf("nfq_netem: ready (queue %u, loss %u%%, delay %s ms)\n", qnum, loss_pct, argv[3]);
	fflush(stdout);
	char buf[65536] __attribute__((aligned));
	while (!stop) {
		int timeout = -1;
		if (count) {
			uint64_t t = now_ns(), rel = ring[head].release_ns;
			timeout = rel <= t ? 0 : (int)((rel - t) / 1000000u) + 1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int n = poll(&p, 1, timeout);
		if (n > 0) {
			ssize_t len;
			while ((len = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
				nfq_handle_packet(h, buf, (int)len);
		}
		uint64_t t = now_ns();
		while (count && ring[head].release_ns <= t) {
			nfq_set_verdict(qh, ring[head].id, NF_ACCEPT, 0, NULL);
			head = (head + 1) % HELD_MAX;
			count--;
		}
	}
	/* let what is held go, so the node is not cut off when we stop */
	while (count) {
		nfq_set_verdict(qh, ring[head].id, NF_ACCEPT, 0, NULL);
		head = (head + 1) % HELD_MAX;
		count--;
	}
	fprintf(stderr, "nfq_netem: %llu packets, %llu dropped\n", (unsigned long long)seen,
		(unsigned long long)dropped);
	nfq_destroy_queue(qh);
	nfq_close(h);
	return 0;
}
